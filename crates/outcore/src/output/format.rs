//! How single values are spelled in text outputs, following LDBC Graphalytics' output files
//! (the validator compares against them, so they must match byte for byte where exact).
//!
//! * Floats: C's `%.15e` — sixteen significant digits, an exponent with a sign and at least
//!   two digits (`1.477629166666667e-01`). Rust's `{:.15e}` has the same digits (both round
//!   the exact binary value correctly) but writes the exponent as `e-1`, so it is rewritten.
//!   Infinity is `infinity` (Graphalytics SSSP), NaN is `nan`.
//! * Unreachable hops (`u64::MAX`) are `9223372036854775807` (i64::MAX), as Graphalytics BFS
//!   prints them.

use std::io::Write as _;

/// Text of an unreachable hop count.
pub const UNREACHABLE_HOPS: &str = "9223372036854775807";

/// Appends `x` as C's `%.15e` would print it (with `infinity`/`nan`).
pub fn push_float(out: &mut Vec<u8>, x: f64) {
    if x.is_nan() {
        out.extend_from_slice(b"nan");
        return;
    }
    if x.is_infinite() {
        out.extend_from_slice(if x > 0.0 { b"infinity" } else { b"-infinity" });
        return;
    }
    match sixteen_digits(x.abs()) {
        Some((digits, exponent)) => {
            if x.is_sign_negative() {
                out.push(b'-');
            }
            push_scientific(out, digits, exponent);
        }
        None => push_float_with_std(out, x),
    }
}

/// `10^16`: the 16-digit significands are in `[10^15, 10^16)`.
const TEN_16: u64 = 10_000_000_000_000_000;

/// The 16 significant digits of a positive finite `x` rounded as `%.15e` rounds them (the
/// exact binary value, to nearest, ties to even) and its decimal exponent: `x ≈ digits ×
/// 10^(exponent − 15)`. Exact integer arithmetic on 192 bits, for the values results hold
/// (PageRank, distances, coefficients: 10^-26 ≤ x < 2^53 with a fraction); `None` for the
/// rest (zero, subnormals, integers ≥ 2^53, tiny values), which std formats.
///
/// Why by hand: std's `{:.15e}` (Grisu with a Dragon fallback, behind `fmt`'s machinery) was
/// a third of the time of writing 2.4 M PageRank values; this is one multiply and one shift.
fn sixteen_digits(x: f64) -> Option<(u64, i32)> {
    let bits = x.to_bits();
    let biased = (bits >> 52) as i32;
    if biased == 0 || x < 1e-26 {
        return None;
    }
    // x = m × 2^-shift, with shift > 0 (x has a binary fraction).
    let m = (bits & ((1 << 52) - 1)) | (1 << 52);
    let shift = 1075 - biased;
    if shift <= 0 {
        return None;
    }
    let mut exponent = x.log10().floor() as i32;
    for _ in 0..3 {
        // digits = round(m × 10^(15 − exponent) / 2^shift); 15 − exponent ≤ 41 here.
        let scale = 15 - exponent;
        if !(0..=41).contains(&scale) {
            return None;
        }
        let product = mul_pow10(m, scale as u32);
        let (quotient, remainder_vs_half) = shift_right_rounding(product, shift as u32)?;
        if quotient < TEN_16 / 10 {
            exponent -= 1;
            continue;
        }
        if quotient >= TEN_16 {
            exponent += 1;
            continue;
        }
        let up = match remainder_vs_half {
            std::cmp::Ordering::Greater => true,
            std::cmp::Ordering::Equal => quotient % 2 == 1,
            std::cmp::Ordering::Less => false,
        };
        let digits = quotient + up as u64;
        return Some(if digits == TEN_16 { (TEN_16 / 10, exponent + 1) } else { (digits, exponent) });
    }
    None
}

/// `m × 10^power` in three 64-bit limbs, least significant first (power ≤ 41, m < 2^53, so
/// the product is below 2^190).
fn mul_pow10(m: u64, mut power: u32) -> [u64; 3] {
    let mut limbs = [m, 0, 0];
    while power > 0 {
        let step = power.min(19);
        let factor = 10u64.pow(step) as u128;
        let mut carry = 0u128;
        for limb in &mut limbs {
            let wide = *limb as u128 * factor + carry;
            *limb = wide as u64;
            carry = wide >> 64;
        }
        power -= step;
    }
    limbs
}

/// `⌊value / 2^shift⌋` (when it fits a u64) and how the remainder compares with half of
/// `2^shift`.
fn shift_right_rounding(value: [u64; 3], shift: u32) -> Option<(u64, std::cmp::Ordering)> {
    if shift == 0 || shift >= 192 {
        return None;
    }
    let bit = |i: u32| value[(i / 64) as usize] >> (i % 64) & 1;
    // The quotient: bits [shift, shift + 64) must hold all of it.
    let (word, offset) = ((shift / 64) as usize, shift % 64);
    let mut quotient = value[word] >> offset;
    if offset > 0 && word + 1 < 3 {
        quotient |= value[word + 1] << (64 - offset);
    }
    let high_words_clear = (word + 1..3).all(|w| {
        let reach = if w == word + 1 && offset > 0 { value[w] >> offset } else { value[w] };
        reach == 0
    });
    if !high_words_clear {
        return None;
    }
    // The remainder against half: its top bit, then whether any bit below it is set.
    let half_bit = bit(shift - 1);
    let below = shift - 1;
    let (full, rest) = ((below / 64) as usize, below % 64);
    let lower_set = value[..full].iter().any(|&w| w != 0) || (rest > 0 && value[full] & ((1u64 << rest) - 1) != 0);
    let ordering = match (half_bit, lower_set) {
        (0, _) => std::cmp::Ordering::Less,
        (_, true) => std::cmp::Ordering::Greater,
        _ => std::cmp::Ordering::Equal,
    };
    Some((quotient, ordering))
}

/// Appends `d.ddddddddddddddde±XX` for 16 digits `digits` and a decimal exponent.
fn push_scientific(out: &mut Vec<u8>, digits: u64, exponent: i32) {
    let mut text = [0u8; 16];
    let mut rest = digits;
    for slot in text.iter_mut().rev() {
        *slot = b'0' + (rest % 10) as u8;
        rest /= 10;
    }
    out.push(text[0]);
    out.push(b'.');
    out.extend_from_slice(&text[1..]);
    out.push(b'e');
    out.push(if exponent < 0 { b'-' } else { b'+' });
    let magnitude = exponent.unsigned_abs();
    if magnitude >= 100 {
        out.push(b'0' + (magnitude / 100) as u8);
    }
    out.push(b'0' + (magnitude / 10 % 10) as u8);
    out.push(b'0' + (magnitude % 10) as u8);
}

/// [`push_float`] through std's `{:.15e}`, its exponent rewritten the C way.
fn push_float_with_std(out: &mut Vec<u8>, x: f64) {
    // "-d.ddddddddddddddde-ddd" is at most 24 bytes.
    let mut scratch = [0u8; 40];
    let len = {
        let mut cursor = &mut scratch[..];
        let before = cursor.len();
        // 40 bytes always suffice for a finite f64 in this format.
        let _ = write!(cursor, "{x:.15e}");
        before - cursor.len()
    };
    let text = &scratch[..len];
    let e = text.iter().position(|&b| b == b'e').unwrap_or(text.len());
    out.extend_from_slice(&text[..e]);
    out.push(b'e');
    let exponent = &text[(e + 1).min(text.len())..];
    let (sign, digits) = match exponent.first() {
        Some(b'-') => (b'-', &exponent[1..]),
        _ => (b'+', exponent),
    };
    out.push(sign);
    if digits.len() < 2 {
        out.push(b'0');
    }
    out.extend_from_slice(digits);
}

/// `x` as C's `%.15e` would print it, e.g. `1.477629166666667e-01`; `infinity`, `nan`.
pub fn format_float(x: f64) -> String {
    let mut out = Vec::with_capacity(24);
    push_float(&mut out, x);
    // Only ASCII was written.
    String::from_utf8_lossy(&out).into_owned()
}

/// Appends a hop count (`u64::MAX` → [`UNREACHABLE_HOPS`]).
pub fn push_hops(out: &mut Vec<u8>, hops: u64) {
    if hops == u64::MAX {
        out.extend_from_slice(UNREACHABLE_HOPS.as_bytes());
    } else {
        out.extend_from_slice(itoa::Buffer::new().format(hops).as_bytes());
    }
}

/// A hop count as text (`u64::MAX` → [`UNREACHABLE_HOPS`]).
pub fn format_hops(hops: u64) -> String {
    if hops == u64::MAX {
        UNREACHABLE_HOPS.to_string()
    } else {
        hops.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn fast(x: f64) -> String {
        let mut out = Vec::new();
        push_float(&mut out, x);
        String::from_utf8(out).unwrap()
    }

    fn with_std(x: f64) -> String {
        let mut out = Vec::new();
        push_float_with_std(&mut out, x);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn spells_floats_as_c_does_ties_to_even() {
        // Expected texts from C's printf("%.15e") (Python's '%.15e' % x).
        for (x, text) in [
            (1000000000000000.5, "1.000000000000000e+15"),
            (1000000000000001.5, "1.000000000000002e+15"),
            (0.5, "5.000000000000000e-01"),
            (7.532626489373939e-08, "7.532626489373939e-08"),
            (9.999999999999999e-27, "9.999999999999999e-27"),
            (1e-26, "1.000000000000000e-26"),
            (123.456, "1.234560000000000e+02"),
            (0.1, "1.000000000000000e-01"),
            (-0.1, "-1.000000000000000e-01"),
            (0.0, "0.000000000000000e+00"),
            (1e300, "1.000000000000000e+300"),
            (5e-324, "4.940656458412465e-324"),
        ] {
            assert_eq!(fast(x), text, "{x:e}");
        }
        assert!(sixteen_digits(0.1).is_some() && sixteen_digits(7.5e-8).is_some() && sixteen_digits(1e300).is_none());
    }

    #[test]
    fn agrees_with_std_on_a_million_values_across_the_fast_range() {
        let mut state = 0x9e3779b97f4a7c15u64;
        for _ in 0..1_000_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            // Exponents from 2^-100 to 2^60, any mantissa.
            let x = f64::from_bits((state & ((1 << 52) - 1)) | (((state >> 52) % 160 + 923) << 52));
            assert_eq!(fast(x), with_std(x), "{x:e}");
        }
    }

    proptest! {
        #[test]
        fn agrees_with_std_on_any_finite_value(bits in any::<u64>()) {
            let x = f64::from_bits(bits);
            if x.is_finite() {
                prop_assert_eq!(fast(x), with_std(x));
            }
        }
    }
}
