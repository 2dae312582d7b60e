//! Leaf values: the built-in scalar a field returns and whether a value fits it (checked on
//! the number's text where the subgraph sent one), and a value's JSON as written.

use super::super::keys::KeyTable;
use super::super::store::{Store, Value};
use graphfleet_planner::operation::shape::ShapeSetId;

/// composite field, the API schema's values of an enum field.
#[derive(Clone, Copy)]
pub(super) struct Leaf<'s> {
    pub(super) child: Option<ShapeSetId>,
    pub(super) enum_values: Option<&'s [apollo_compiler::Name]>,
    /// Resolved once per field, not per list item.
    pub(super) scalar: Scalar,
}

/// The built-in scalar a leaf field returns, if any.
#[derive(Clone, Copy)]
pub(super) enum Scalar {
    Int,
    Float,
    String,
    Boolean,
    Id,
    /// Enums and custom scalars: passed on as the subgraph sent them.
    Other,
}

impl Scalar {
    pub(super) fn of(type_name: &str) -> Self {
        match type_name {
            "Int" => Self::Int,
            "Float" => Self::Float,
            "String" => Self::String,
            "Boolean" => Self::Boolean,
            "ID" => Self::Id,
            _ => Self::Other,
        }
    }

    /// Whether `v` is a valid result of this scalar.
    pub(super) fn fits(self, v: &Value, store: &Store) -> bool {
        match self {
            Self::Int => match v {
                Value::Int(i) => i32::try_from(*i).is_ok(),
                Value::UInt(u) => i32::try_from(*u).is_ok(),
                Value::RawNum(r) => raw_fits_i32(store.raw(*r)),
                _ => false,
            },
            Self::Float => matches!(
                v,
                Value::Int(_) | Value::UInt(_) | Value::Float(_) | Value::RawNum(_)
            ),
            Self::String => matches!(v, Value::String(_) | Value::RawStr(_)),
            Self::Boolean => matches!(v, Value::Bool(_)),
            Self::Id => match v {
                Value::String(_) | Value::RawStr(_) | Value::Int(_) | Value::UInt(_) => true,
                Value::RawNum(r) => raw_integer(store.raw(*r)).is_some(),
                _ => false,
            },
            Self::Other => true,
        }
    }
}

/// Whether JSON number text is an integer within `i32` (a GraphQL `Int`), without
/// working out its value when it has at most nine digits.
fn raw_fits_i32(text: &[u8]) -> bool {
    let (negative, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    if digits.is_empty() || digits.len() > 10 || !digits.iter().all(u8::is_ascii_digit) {
        // JSON has no leading zeros: eleven digits are past `i32` for sure.
        return false;
    }
    if digits.len() < 10 {
        return true;
    }
    let n = digits
        .iter()
        .fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
    n <= if negative { 1 << 31 } else { (1 << 31) - 1 }
}

/// The value of JSON number text without a fraction or exponent, within `i64::MIN ..=
/// u64::MAX` (what serde_json reads as an integer); `None` for other numbers.
fn raw_integer(text: &[u8]) -> Option<i128> {
    // The parser checked the grammar: an optional minus, then digits up to any `.`/`e`.
    let (negative, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    if digits.len() > 20 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let magnitude = digits
        .iter()
        .fold(0i128, |n, d| n * 10 + i128::from(d - b'0'));
    let n = if negative { -magnitude } else { magnitude };
    (i128::from(i64::MIN)..=i128::from(u64::MAX))
        .contains(&n)
        .then_some(n)
}

pub fn write_str(out: &mut Vec<u8>, s: &str) {
    serde_json::to_writer(out, s).expect("writing a string into a Vec cannot fail");
}

/// A leaf value; objects and lists inside custom scalars are written verbatim.
pub fn write_scalar(out: &mut Vec<u8>, v: &Value, store: &Store, keys: &KeyTable) {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Int(i) => serde_json::to_writer(out, i).expect("writing into a Vec cannot fail"),
        Value::UInt(u) => serde_json::to_writer(out, u).expect("writing into a Vec cannot fail"),
        Value::Float(f) => serde_json::to_writer(out, f).expect("writing into a Vec cannot fail"),
        Value::String(s) => write_str(out, store.string(*s)),
        // Number text as the subgraph sent it (checked against JSON's grammar).
        Value::RawNum(r) => store.write_raw(out, *r, false),
        // Escape-free JSON string content as the subgraph sent it: copied as it is.
        Value::RawStr(r) => store.write_raw(out, *r, true),
        // Custom scalars may be lists; objects are written without a shape.
        Value::List(items) => {
            out.push(b'[');
            for (i, item) in store.list(*items).iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_scalar(out, item, store, keys);
            }
            out.push(b']');
        }
        Value::Object(id) => {
            let object = store.object(*id);
            out.push(b'{');
            let known = object.fields.iter().map(|(k, v)| (keys.name(*k), v));
            let extra = object.extra.iter().map(|(k, v)| (&**k, v));
            for (i, (k, v)) in known.chain(extra).enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(out, k);
                out.push(b':');
                write_scalar(out, v, store, keys);
            }
            out.push(b'}');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{raw_fits_i32, raw_integer};

    #[test]
    fn int_range_is_checked_on_number_text() {
        let cases: &[(&str, bool)] = &[
            ("0", true),
            ("-0", true),
            ("7", true),
            ("999999999", true),
            ("-999999999", true),
            ("2147483647", true),
            ("2147483648", false),
            ("-2147483648", true),
            ("-2147483649", false),
            ("9999999999", false),
            ("12345678901", false),
            ("1.0", false),
            ("1e2", false),
        ];
        assert!(!raw_fits_i32(b"-"));
        for (text, fits) in cases {
            assert_eq!(raw_fits_i32(text.as_bytes()), *fits, "{text}");
            let by_value = raw_integer(text.as_bytes()).is_some_and(|i| i32::try_from(i).is_ok());
            assert_eq!(by_value, *fits, "{text} as a value");
        }
    }

    #[test]
    fn integers_are_read_from_number_text() {
        let cases: &[(&str, Option<i128>)] = &[
            ("0", Some(0)),
            ("-0", Some(0)),
            ("2147483647", Some(2_147_483_647)),
            ("-9223372036854775808", Some(i128::from(i64::MIN))),
            ("-9223372036854775809", None),
            ("18446744073709551615", Some(i128::from(u64::MAX))),
            ("18446744073709551616", None),
            ("123456789012345678901234", None),
            ("1.0", None),
            ("1e2", None),
            ("-1E2", None),
        ];
        for (text, expected) in cases {
            assert_eq!(raw_integer(text.as_bytes()), *expected, "{text}");
        }
    }
}
