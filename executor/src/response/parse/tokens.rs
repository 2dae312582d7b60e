//! The reader's tokens: strings (escape-free ones left in the body, escaped ones decoded
//! into scratch text), numbers checked against JSON's grammar and kept as text, literals;
//! eight bytes at a time where the body allows.

use super::{Parsed, Reader, Str};
use crate::response::store::RawStr;

impl<'de> Reader<'_, 'de> {
    /// A string at `pos` (its opening quote).
    pub(super) fn string(&mut self) -> Parsed<Str> {
        let start = self.pos + 1;
        let mut i = start;
        // Eight bytes at a time past plain text; most strings have no escapes.
        while let Some(chunk) = self.bytes.get(i..i + 8) {
            let word = u64::from_le_bytes(chunk.try_into().expect("a slice of eight bytes"));
            if needs_care(word) {
                break;
            }
            i += 8;
        }
        loop {
            match self.bytes.get(i) {
                Some(b'"') => {
                    self.pos = i + 1;
                    return Ok(Str::Raw(start, i));
                }
                Some(b'\\') => return self.escaped(start, i),
                Some(&c) if c < 0x20 => {
                    return Err(self.error_at("control character in a string", i));
                }
                Some(_) => i += 1,
                None => return Err(self.error_at("unterminated string", i)),
            }
        }
    }

    /// The rest of a string from its first escape at `i`, decoded.
    fn escaped(&mut self, start: usize, mut i: usize) -> Parsed<Str> {
        // Cuts fall on ASCII bytes, so every slice below is whole characters.
        let mut out = std::mem::take(&mut self.scratch);
        out.clear();
        out.push_str(&self.text[start..i]);
        loop {
            match self.bytes.get(i) {
                Some(b'"') => {
                    self.pos = i + 1;
                    self.scratch = out;
                    return Ok(Str::Scratch);
                }
                Some(b'\\') => {
                    let c = match self.bytes.get(i + 1) {
                        Some(b'"') => '"',
                        Some(b'\\') => '\\',
                        Some(b'/') => '/',
                        Some(b'b') => '\u{8}',
                        Some(b'f') => '\u{c}',
                        Some(b'n') => '\n',
                        Some(b'r') => '\r',
                        Some(b't') => '\t',
                        Some(b'u') => {
                            let (c, len) = self.unicode_escape(i)?;
                            out.push(c);
                            i += len;
                            continue;
                        }
                        _ => return Err(self.error_at("invalid escape", i)),
                    };
                    out.push(c);
                    i += 2;
                }
                Some(&c) if c < 0x20 => {
                    return Err(self.error_at("control character in a string", i));
                }
                Some(_) => {
                    let run = i;
                    while self
                        .bytes
                        .get(i)
                        .is_some_and(|&c| c != b'"' && c != b'\\' && c >= 0x20)
                    {
                        i += 1;
                    }
                    out.push_str(&self.text[run..i]);
                }
                None => return Err(self.error_at("unterminated string", i)),
            }
        }
    }

    /// `\uXXXX` at `i`, or a surrogate pair of two: the character and the escape's length.
    fn unicode_escape(&self, i: usize) -> Parsed<(char, usize)> {
        let high = self.hex4(i + 2)?;
        if !(0xD800..0xE000).contains(&high) {
            let c = char::from_u32(high).expect("not a surrogate, so a character");
            return Ok((c, 6));
        }
        if high >= 0xDC00 || self.bytes.get(i + 6..i + 8) != Some(b"\\u") {
            return Err(self.error_at("lone surrogate in a \\u escape", i));
        }
        let low = self.hex4(i + 8)?;
        if !(0xDC00..0xE000).contains(&low) {
            return Err(self.error_at("lone surrogate in a \\u escape", i));
        }
        let c = char::from_u32(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
            .expect("a surrogate pair is a character");
        Ok((c, 12))
    }

    fn hex4(&self, at: usize) -> Parsed<u32> {
        let digits = self
            .bytes
            .get(at..at + 4)
            .ok_or_else(|| self.error_at("unterminated \\u escape", at))?;
        digits.iter().try_fold(0u32, |n, &d| {
            let v = (d as char)
                .to_digit(16)
                .ok_or_else(|| self.error_at("invalid \\u escape", at))?;
            Ok(n * 16 + v)
        })
    }

    /// A number at `pos`, checked against JSON's grammar and passed over.
    pub(super) fn number(&mut self) -> Parsed<()> {
        let mut i = self.pos;
        if self.bytes.get(i) == Some(&b'-') {
            i += 1;
        }
        match self.bytes.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => i = self.digits(i + 1),
            _ => return Err(self.error_at("invalid number", i)),
        }
        if self.bytes.get(i) == Some(&b'.') {
            i = self.some_digits(i + 1)?;
        }
        if matches!(self.bytes.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(self.bytes.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            i = self.some_digits(i)?;
        }
        self.pos = i;
        Ok(())
    }

    fn digits(&self, mut i: usize) -> usize {
        // Eight bytes at a time: numbers are a good part of a big response.
        while let Some(chunk) = self.bytes.get(i..i + 8) {
            let word = u64::from_le_bytes(chunk.try_into().expect("a slice of eight bytes"));
            let run = leading_digits(word);
            i += run;
            if run < 8 {
                return i;
            }
        }
        while self.bytes.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        i
    }

    fn some_digits(&self, i: usize) -> Parsed<usize> {
        let end = self.digits(i);
        if end == i {
            return Err(self.error_at("invalid number", i));
        }
        Ok(end)
    }

    pub(super) fn literal(&mut self, word: &[u8]) -> Parsed<()> {
        if !self.bytes[self.pos..].starts_with(word) {
            return Err(self.error("expected a JSON value"));
        }
        self.pos += word.len();
        Ok(())
    }

    pub(super) fn raw(&self, start: usize, end: usize) -> Parsed<RawStr> {
        self.source
            .at(start, end - start)
            .ok_or_else(|| self.error_at("value beyond 4 GiB", start))
    }

    pub(super) fn str_text<'s>(&'s self, s: &'s Str) -> &'s str {
        match s {
            Str::Raw(start, end) => &self.text[*start..*end],
            Str::Scratch => &self.scratch,
        }
    }
}

/// How many of the eight bytes, from the first, are ASCII digits.
pub(super) fn leading_digits(word: u64) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // A digit becomes 0..=9; adding 0x76 sets the high bit of anything above 9. A carry
    // out of a byte only comes from one that is not a digit, so it can only mark bytes
    // after the first non-digit, which are not counted anyway.
    let x = word ^ (ONES * u64::from(b'0'));
    let not_digit = (x | x.wrapping_add(ONES * 0x76)) & HIGH;
    (not_digit.trailing_zeros() / 8) as usize
}

/// Whether any of the eight bytes is a quote, a backslash or a control character.
fn needs_care(word: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let has_zero = |w: u64| w.wrapping_sub(ONES) & !w & HIGH;
    let quote = has_zero(word ^ (ONES * u64::from(b'"')));
    let backslash = has_zero(word ^ (ONES * u64::from(b'\\')));
    // A byte below 0x20 borrows out of its high bit; bytes at or above 0x80 are masked.
    let control = word.wrapping_sub(ONES * 0x20) & !word & HIGH;
    quote | backslash | control != 0
}
