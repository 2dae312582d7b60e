//! Byte sizes written as a number of bytes or with a unit: `65536`, `512KiB`, `2MiB`, `1MB`.
//! The `bytesize` crate parses the text (units case-insensitive, fractions allowed); the
//! visitor here accepts YAML numbers too and words its error for the config reader.

use bytesize::ByteSize;
use serde::Deserializer;
use serde::de::{self, Visitor};
use std::fmt;

/// Parses `text` as a size in bytes; `None` if it is not one or does not fit in a `u64`.
pub fn parse_size(text: &str) -> Option<u64> {
    let size: ByteSize = text.trim().parse().ok()?;
    // bytesize saturates on overflow: a size that large is a typo, not a limit.
    Some(size.as_u64()).filter(|&n| n != u64::MAX)
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
        assert_eq!(parse_size("2mib"), Some(2 * 1024 * 1024));
        assert_eq!(parse_size("1.5MiB"), Some(3 * 512 * 1024));
        assert_eq!(parse_size("MiB"), None);
        assert_eq!(parse_size("2 megabytes"), None);
        assert_eq!(parse_size("-1KiB"), None);
        assert_eq!(parse_size("99999999999999GiB"), None);
    }
}
