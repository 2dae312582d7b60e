//! Whether a request body has the fields a case expects: objects need the expected keys (and
//! may have more, such as timestamps), arrays as many elements as expected, each matching in
//! turn, and anything else equality.

use serde_json::Value;

/// The first place where `actual` lacks what `expected` has, or `None`.
pub(super) fn mismatch(actual: &Value, expected: &Value) -> Option<String> {
    mismatch_at(actual, expected, "")
}

fn mismatch_at(actual: &Value, expected: &Value, at: &str) -> Option<String> {
    match (actual, expected) {
        (Value::Object(actual), Value::Object(expected)) => expected.iter().find_map(|(k, e)| {
            let here = format!("{at}/{k}");
            match actual.get(k) {
                Some(a) => mismatch_at(a, e, &here),
                None => Some(format!("has no {here}")),
            }
        }),
        (Value::Array(actual), Value::Array(expected)) if actual.len() == expected.len() => actual
            .iter()
            .zip(expected)
            .enumerate()
            .find_map(|(i, (a, e))| mismatch_at(a, e, &format!("{at}/{i}"))),
        _ if actual == expected => None,
        _ => Some(format!("has {actual} at {at:?}, expected {expected}")),
    }
}

#[cfg(test)]
mod tests {
    use super::mismatch;
    use serde_json::json;

    #[test]
    fn extra_fields_are_allowed_missing_or_different_ones_are_not() {
        let actual = json!({ "a": { "b": 1, "c": [{ "d": "x", "e": 2 }] }, "f": true });
        assert_eq!(
            mismatch(&actual, &json!({ "a": { "c": [{ "d": "x" }] } })),
            None
        );
        assert_eq!(
            mismatch(&actual, &json!({ "a": { "g": 1 } })).as_deref(),
            Some("has no /a/g")
        );
        assert_eq!(
            mismatch(&actual, &json!({ "a": { "c": [{ "d": "y" }] } })).as_deref(),
            Some(r#"has "x" at "/a/c/0/d", expected "y""#)
        );
        assert!(mismatch(&actual, &json!({ "a": { "c": [] } })).is_some());
    }
}
