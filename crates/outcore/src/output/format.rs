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
