//! Byte sizes written as a number of bytes or with a unit: `65536`, `512KiB`, `2MiB`, `1MB`.

use serde::Deserializer;
use serde::de::{self, Visitor};
use std::fmt;

/// Units by suffix (case-sensitive except for the trailing `b`/`B`).
const UNITS: &[(&str, u64)] = &[
    ("KiB", 1 << 10),
    ("MiB", 1 << 20),
    ("GiB", 1 << 30),
    ("kB", 1_000),
    ("KB", 1_000),
    ("MB", 1_000_000),
    ("GB", 1_000_000_000),
    ("B", 1),
];

/// Parses `text` as a size in bytes.
pub fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().ok()?;
    let unit = unit.trim();
    if unit.is_empty() {
        return Some(number);
    }
    let (_, factor) = UNITS.iter().find(|(u, _)| *u == unit)?;
    number.checked_mul(*factor)
}

pub(crate) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<usize, D::Error> {
    deserializer.deserialize_any(SizeVisitor)
}

struct SizeVisitor;

impl Visitor<'_> for SizeVisitor {
    type Value = usize;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a size in bytes, e.g. 65536, 512KiB or 2MiB")
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<usize, E> {
        usize::try_from(v).map_err(|_| E::invalid_value(de::Unexpected::Unsigned(v), &self))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<usize, E> {
        u64::try_from(v)
            .map_err(|_| E::invalid_value(de::Unexpected::Signed(v), &self))
            .and_then(|v| self.visit_u64(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<usize, E> {
        parse_size(v)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| E::invalid_value(de::Unexpected::Str(v), &self))
    }
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes_parse_with_and_without_units() {
        assert_eq!(parse_size("65536"), Some(65536));
        assert_eq!(parse_size("512KiB"), Some(512 * 1024));
        assert_eq!(parse_size("2 MiB"), Some(2 * 1024 * 1024));
        assert_eq!(parse_size("1MB"), Some(1_000_000));
        assert_eq!(parse_size("10B"), Some(10));
        assert_eq!(parse_size("2mib"), None);
        assert_eq!(parse_size("MiB"), None);
        assert_eq!(parse_size("1.5MiB"), None);
        assert_eq!(parse_size("99999999999999GiB"), None);
    }
}
