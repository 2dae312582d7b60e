//! JSON text carried as written, and the little JSON writing frames need.

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use std::fmt::Write as _;

/// One JSON value as text: a payload borrowed from a decoded frame, or a caller's
/// pre-serialized result on its way into one. Never parsed or re-serialized here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RawJson<'a>(&'a str);

impl<'a> RawJson<'a> {
    /// Text the caller already serialized as one JSON value (a response body, a
    /// request): not checked, so the hot path pays nothing; what is not JSON makes a
    /// frame the peer refuses.
    pub const fn trusted(json: &'a str) -> Self {
        Self(json)
    }

    /// `text` checked to be one JSON value.
    pub fn parse(text: &'a str) -> Result<Self, serde_json::Error> {
        let raw: &'a RawValue = serde_json::from_str(text)?;
        Ok(Self(raw.get()))
    }

    pub const fn get(self) -> &'a str {
        self.0
    }

    /// Whether the value is an object (`RawValue` holds no surrounding whitespace).
    pub(crate) fn is_object(self) -> bool {
        self.0.starts_with('{')
    }

    pub(crate) fn is_array(self) -> bool {
        self.0.starts_with('[')
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for RawJson<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        <&'a RawValue>::deserialize(deserializer).map(|raw| Self(raw.get()))
    }
}

/// Append `s` as a JSON string. Ids are short and plain, so the common case is a
/// single copy.
pub(crate) fn push_string(out: &mut String, s: &str) {
    out.push('"');
    let needs_escape = |c: char| c == '"' || c == '\\' || c < ' ';
    if !s.contains(needs_escape) {
        out.push_str(s);
    } else {
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if c < ' ' => {
                    let _ = write!(out, "\\u{:04x}", u32::from(c));
                }
                c => out.push(c),
            }
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::{RawJson, push_string};

    #[test]
    fn strings_round_trip_through_serde_json() {
        for s in [
            "1",
            "",
            "a\"b",
            "back\\slash",
            "line\nfeed\t\r",
            "\u{1}\u{1f}",
            "é✓🦀",
        ] {
            let mut out = String::new();
            push_string(&mut out, s);
            let back: String = serde_json::from_str(&out).expect("a JSON string");
            assert_eq!(back, s, "{out}");
        }
    }

    #[test]
    fn parse_checks_and_keeps_the_text() {
        let raw = RawJson::parse(r#"{"a": 1.50}"#).expect("JSON");
        assert_eq!(raw.get(), r#"{"a": 1.50}"#);
        assert!(raw.is_object());
        assert!(RawJson::parse("{").is_err());
        assert!(RawJson::parse("1 2").is_err());
    }
}
