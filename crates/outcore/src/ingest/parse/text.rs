//! The shared machinery of the text formats: a line reader, field splitting, and the id and
//! weight parsers.
//!
//! Inputs may hold billions of lines, so the hot path allocates nothing per line: the
//! [`LineReader`] hands out lines as slices of its own 1 MiB buffer (only the partial line at
//! the end of a buffer is moved), newlines are found eight bytes at a time, and numeric ids are
//! parsed from bytes by [`parse_u64`] without going through `str`. Strings are built only for
//! `--ids string` and for error messages.

use std::path::Path;

use super::compress::InputStream;
use crate::error::{Error, Result};
use crate::ingest::RawId;
use crate::store::IdType;

/// Size of the line buffer; lines are slices of it.
const LINE_BUFFER_BYTES: usize = 1 << 20;
/// A "line" longer than this is not text we can parse (and must not grow memory without bound).
const MAX_LINE_BYTES: usize = 64 << 20;
/// How much of the start of a text input is checked for NUL bytes.
const BINARY_SNIFF_BYTES: usize = 64 * 1024;
/// Error messages quote at most this many bytes of the offending line.
const MAX_QUOTED_LINE_BYTES: usize = 200;

/// Reads a text input line by line, without allocating per line.
pub struct LineReader {
    input: InputStream,
    buf: Vec<u8>,
    /// Start of the bytes not yet handed out.
    start: usize,
    /// End of the valid bytes in `buf`.
    end: usize,
    eof: bool,
    line_number: u64,
}

impl LineReader {
    /// Wraps an input stream; fails if the start of the input is binary data, because reading
    /// such a file as text would only give a confusing error about its first "line".
    pub fn new(input: InputStream, format_name: &str) -> Result<LineReader> {
        let mut reader =
            LineReader { input, buf: vec![0u8; LINE_BUFFER_BYTES], start: 0, end: 0, eof: false, line_number: 0 };
        while !reader.eof && reader.end < BINARY_SNIFF_BYTES {
            reader.refill()?;
        }
        let head = &reader.buf[..reader.end];
        if looks_binary(head) {
            return Err(Error::input(
                reader.input.path(),
                None,
                format!(
                    "contains binary data (NUL bytes) but is read as text ({format_name}); \
                     for raw little-endian id pairs use --format bin32 or --format bin64"
                ),
            ));
        }
        if head.starts_with(b"\xEF\xBB\xBF") {
            reader.start = 3; // UTF-8 byte order mark
        }
        Ok(reader)
    }

    /// The 1-based number of the line last returned by [`next_line`](Self::next_line).
    pub fn line_number(&self) -> u64 {
        self.line_number
    }

    /// The next line with its 1-based number, without its `\n` (a trailing `\r` is left to
    /// the field splitters), or `None` at the end of the input.
    #[inline]
    pub fn next_line(&mut self) -> Result<Option<(u64, &[u8])>> {
        loop {
            if let Some(offset) = find_newline(&self.buf[self.start..self.end]) {
                let line_start = self.start;
                self.start += offset + 1;
                self.line_number += 1;
                return Ok(Some((self.line_number, &self.buf[line_start..line_start + offset])));
            }
            if self.eof {
                if self.start < self.end {
                    let line_start = self.start;
                    self.start = self.end;
                    self.line_number += 1;
                    return Ok(Some((self.line_number, &self.buf[line_start..self.end])));
                }
                return Ok(None);
            }
            self.refill()?;
        }
    }

    /// A run of whole lines of at most `max_bytes` (more only for a single longer line), as
    /// `(number of its first line, bytes)`: lines separated by `\n`, the last one possibly
    /// without it (end of input), or `None` at the end of the input. The caller parses the
    /// block (possibly in parallel chunks) and reports how many lines it held through
    /// [`lines_consumed`](Self::lines_consumed), which keeps line numbers exact.
    pub fn next_block(&mut self, max_bytes: usize) -> Result<Option<(u64, &[u8])>> {
        let max_bytes = max_bytes.max(1);
        while !self.eof && self.end - self.start < max_bytes && self.end - self.start < self.buf.len() / 2 {
            self.refill()?;
        }
        loop {
            let available = &self.buf[self.start..self.end];
            let window = &available[..available.len().min(max_bytes)];
            let take = match window.iter().rposition(|&b| b == b'\n') {
                Some(last_newline) => Some(last_newline + 1),
                // One line longer than `max_bytes`, or the last line of the input.
                None => match find_newline(available) {
                    Some(offset) => Some(offset + 1),
                    None if self.eof && !available.is_empty() => Some(available.len()),
                    None => None,
                },
            };
            match take {
                Some(len) => {
                    let block_start = self.start;
                    self.start += len;
                    return Ok(Some((self.line_number + 1, &self.buf[block_start..block_start + len])));
                }
                None if self.eof => return Ok(None),
                // A line longer than `max_bytes` (or than what is buffered): read on.
                None => self.refill()?,
            }
        }
    }

    /// Counts the lines of the block last returned by [`next_block`](Self::next_block).
    pub fn lines_consumed(&mut self, lines: u64) {
        self.line_number += lines;
    }

    /// Moves the unconsumed tail to the front of the buffer and reads more after it.
    fn refill(&mut self) -> Result<()> {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            if self.buf.len() >= MAX_LINE_BYTES {
                return Err(Error::input(
                    self.input.path(),
                    Some(self.line_number + 1),
                    format!("line longer than {} MiB (is this really a text file?)", MAX_LINE_BYTES >> 20),
                ));
            }
            self.buf.resize(self.buf.len() * 2, 0);
        }
        let n = self.input.read(&mut self.buf[self.end..])?;
        if n == 0 {
            self.eof = true;
        } else {
            self.end += n;
        }
        Ok(())
    }
}

/// Text files do not contain NUL bytes; binary files (and UTF-16 text) almost always do.
pub fn looks_binary(head: &[u8]) -> bool {
    head.iter().take(BINARY_SNIFF_BYTES).any(|&b| b == 0)
}

/// Position of the first `\n`, eight bytes at a time (lines are short, files are long).
#[inline]
pub fn find_newline(haystack: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    const NEWLINES: u64 = ONES * b'\n' as u64;
    let mut chunks = haystack.chunks_exact(8);
    let mut offset = 0;
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_le_bytes(word) ^ NEWLINES;
        // Classic "has a zero byte": exact for the lowest matching byte, which is all we need.
        let found = x.wrapping_sub(ONES) & !x & HIGHS;
        if found != 0 {
            return Some(offset + (found.trailing_zeros() / 8) as usize);
        }
        offset += 8;
    }
    chunks.remainder().iter().position(|&b| b == b'\n').map(|p| offset + p)
}

/// The bytes that separate fields of an edge list: whitespace, commas (and the `\r` of CRLF
/// files), as a table because this test runs for every byte of the input.
static SEPARATORS: [bool; 256] = {
    let mut table = [false; 256];
    let mut i = 0;
    let separators = [b' ', b'\t', b',', b'\r', b'\x0b', b'\x0c'];
    while i < separators.len() {
        table[separators[i] as usize] = true;
        i += 1;
    }
    table
};

/// True for the bytes that separate fields of an edge list.
#[inline(always)]
pub fn is_separator(b: u8) -> bool {
    SEPARATORS[b as usize]
}

/// Parses the decimal digits at `line[start..]` up to the first non-digit: `(value, end)`.
/// Gives up (`None`) on no digits and on numbers of 20 or more digits, which may overflow:
/// callers fall back to [`parse_u64`] and its exact checks.
#[inline(always)]
pub fn leading_digits(line: &[u8], start: usize) -> Option<(u64, usize)> {
    let mut pos = start;
    let mut value: u64 = 0;
    while pos < line.len() {
        let digit = line[pos].wrapping_sub(b'0');
        if digit > 9 {
            break;
        }
        value = value.wrapping_mul(10).wrapping_add(digit as u64);
        pos += 1;
    }
    let len = pos - start;
    if len == 0 || len > 19 {
        None
    } else {
        Some((value, pos))
    }
}

/// Splits an edge-list line on runs of whitespace and commas.
pub struct Fields<'a> {
    line: &'a [u8],
    pos: usize,
}

impl<'a> Fields<'a> {
    #[inline]
    pub fn new(line: &'a [u8]) -> Fields<'a> {
        Fields { line, pos: 0 }
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = &'a [u8];

    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        let line = self.line;
        let mut pos = self.pos;
        while pos < line.len() && is_separator(line[pos]) {
            pos += 1;
        }
        if pos == line.len() {
            self.pos = pos;
            return None;
        }
        let start = pos;
        while pos < line.len() && !is_separator(line[pos]) {
            pos += 1;
        }
        self.pos = pos;
        Some(&line[start..pos])
    }
}

/// Parses a decimal unsigned 64-bit integer: digits only (no sign, no spaces), no overflow.
#[inline]
pub fn parse_u64(token: &[u8]) -> Option<u64> {
    // Leading zeros do not count towards the length ("000…0042" is 42, as str::parse says).
    let mut token = token;
    while token.len() > 1 && token[0] == b'0' {
        token = &token[1..];
    }
    // 19 digits always fit in a u64; only 20-digit numbers need overflow checks.
    if token.is_empty() || token.len() > 20 {
        return None;
    }
    if token.len() < 20 {
        let mut value: u64 = 0;
        for &b in token {
            let digit = b.wrapping_sub(b'0');
            if digit > 9 {
                return None;
            }
            value = value * 10 + digit as u64;
        }
        Some(value)
    } else {
        let mut value: u64 = 0;
        for &b in token {
            let digit = b.wrapping_sub(b'0');
            if digit > 9 {
                return None;
            }
            value = value.checked_mul(10)?.checked_add(digit as u64)?;
        }
        Some(value)
    }
}

/// Why a field could not be used.
pub enum FieldError {
    /// The vertex id field is not valid for the id type (message ready to show).
    Id(String),
    /// The weight field is not a number (message ready to show).
    Weight(String),
}

/// Parses a vertex id for the chosen id type.
#[inline(always)]
pub fn parse_id(token: &[u8], ids: IdType) -> Result<RawId, FieldError> {
    match ids {
        IdType::U64 => match parse_u64(token) {
            Some(v) => Ok(RawId::U64(v)),
            None => Err(FieldError::Id(format!(
                "invalid vertex id '{}' (expected an unsigned 64-bit integer; \
                 use --ids string for non-numeric ids)",
                quote(token)
            ))),
        },
        IdType::String => match std::str::from_utf8(token) {
            Ok(text) => Ok(RawId::Str(text.to_string())),
            Err(_) => Err(FieldError::Id(format!("vertex id '{}' is not valid UTF-8", quote(token)))),
        },
    }
}

/// Parses an edge weight: any finite or infinite decimal number; NaN is refused.
#[inline]
pub fn parse_weight(token: &[u8]) -> Result<f64, FieldError> {
    let parsed = std::str::from_utf8(token).ok().and_then(|text| text.parse::<f64>().ok());
    match parsed {
        Some(w) if w.is_nan() => {
            Err(FieldError::Weight(format!("invalid weight '{}' (NaN is not a usable edge weight)", quote(token))))
        }
        Some(w) => Ok(w),
        None => Err(FieldError::Weight(format!("invalid weight '{}' (expected a number)", quote(token)))),
    }
}

impl FieldError {
    pub fn into_message(self) -> String {
        match self {
            FieldError::Id(m) | FieldError::Weight(m) => m,
        }
    }
}

/// Lossy, length-limited text of a field or line for error messages.
pub fn quote(bytes: &[u8]) -> String {
    let trimmed = trim_line_end(bytes);
    if trimmed.len() <= MAX_QUOTED_LINE_BYTES {
        String::from_utf8_lossy(trimmed).into_owned()
    } else {
        format!("{}…", String::from_utf8_lossy(&trimmed[..MAX_QUOTED_LINE_BYTES]))
    }
}

/// The line without its trailing `\r` (CRLF files).
#[inline]
pub fn trim_line_end(line: &[u8]) -> &[u8] {
    match line.last() {
        Some(b'\r') => &line[..line.len() - 1],
        _ => line,
    }
}

/// An error about one line: "FILE:LINE: message: <line text>".
pub fn line_error(path: &Path, line_number: u64, message: &str, line: &[u8]) -> Error {
    Error::input(path, Some(line_number), format!("{message}: {}", quote(line)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn find_newline_agrees_with_a_plain_search(bytes in proptest::collection::vec(
            prop_oneof![Just(b'\n'), Just(b'\n' ^ 0x80), Just(0u8), Just(0xffu8), any::<u8>()], 0..64)) {
            prop_assert_eq!(find_newline(&bytes), bytes.iter().position(|&b| b == b'\n'));
        }

        #[test]
        fn parse_u64_agrees_with_std(text in "[0-9]{1,21}|[+-]?[0-9a-f ]{0,5}") {
            prop_assert_eq!(parse_u64(text.as_bytes()), if text.starts_with('+') { None } else { text.parse::<u64>().ok() });
        }

        #[test]
        fn leading_digits_agrees_with_parse_u64(value in any::<u64>(), tail in "[ ,\t#a]?") {
            let text = format!("{value}{tail}");
            let expected = if value.to_string().len() < 20 { Some((value, value.to_string().len())) } else { None };
            prop_assert_eq!(leading_digits(text.as_bytes(), 0), expected);
        }
    }

    #[test]
    fn u64_limits() {
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(parse_u64(b"99999999999999999999"), None);
        assert_eq!(parse_u64(b"00000000000000000001"), Some(1));
        assert_eq!(parse_u64(b""), None);
        assert_eq!(parse_u64(b"-1"), None);
    }

    #[test]
    fn fields_split_on_runs_of_whitespace_and_commas() {
        let fields: Vec<&[u8]> = Fields::new(b" 1,\t2 ,, 3.5\r").collect();
        assert_eq!(fields, vec![&b"1"[..], b"2", b"3.5"]);
        assert_eq!(Fields::new(b" \t,\r").next(), None);
    }

    #[test]
    fn weights() {
        assert!(matches!(parse_weight(b"-2.5e-3"), Ok(w) if w == -2.5e-3));
        assert!(matches!(parse_weight(b"NaN"), Err(FieldError::Weight(m)) if m.contains("NaN")));
        assert!(matches!(parse_weight(b"1,5"), Err(FieldError::Weight(m)) if m.contains("expected a number")));
    }

    #[test]
    fn quoted_lines_are_cut_and_lossy() {
        let long = vec![b'x'; 500];
        assert_eq!(quote(&long).chars().count(), MAX_QUOTED_LINE_BYTES + 1);
        assert_eq!(quote(b"a\xffb\r"), "a\u{fffd}b");
    }
}
