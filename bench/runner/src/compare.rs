//! Compares a gateway's answer with the monolith's, up to JSON formatting: numbers by value
//! (`1` equals `1.0`). Key order is not compared here (serde_json maps are sorted in this
//! workspace); byte-identical answers, the common case, are compared in full by k6.

use serde_json::Value;

/// The path and values of the first difference, or None when the two are the same answer.
pub fn first_difference(expected: &Value, got: &Value) -> Option<String> {
    diff(expected, got, &mut String::from("$"))
}

fn diff(expected: &Value, got: &Value, path: &mut String) -> Option<String> {
    let here = |e: &Value, g: &Value| {
        let short = |v: &Value| {
            let s = v.to_string();
            if s.len() > 80 {
                format!("{}…", &s[..s.floor_char_boundary(80)])
            } else {
                s
            }
        };
        Some(format!(
            "at {path}: expected {}, got {}",
            short(e),
            short(g)
        ))
    };
    match (expected, got) {
        (Value::Number(a), Value::Number(b)) => {
            let same = match (a.as_f64(), b.as_f64()) {
                (Some(x), Some(y)) => {
                    x == y || (x - y).abs() <= f64::EPSILON * x.abs().max(y.abs())
                }
                _ => a == b,
            };
            if same { None } else { here(expected, got) }
        }
        (Value::Array(a), Value::Array(b)) => {
            if a.len() != b.len() {
                return Some(format!(
                    "at {path}: expected {} items, got {}",
                    a.len(),
                    b.len()
                ));
            }
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                let d = diff(x, y, path);
                path.truncate(len);
                if d.is_some() {
                    return d;
                }
            }
            None
        }
        (Value::Object(a), Value::Object(b)) => {
            let keys_a: Vec<&String> = a.keys().collect();
            let keys_b: Vec<&String> = b.keys().collect();
            if keys_a != keys_b {
                return Some(format!(
                    "at {path}: expected keys {keys_a:?}, got {keys_b:?}"
                ));
            }
            for (k, x) in a {
                let len = path.len();
                path.push('.');
                path.push_str(k);
                let d = diff(x, &b[k], path);
                path.truncate(len);
                if d.is_some() {
                    return d;
                }
            }
            None
        }
        _ if expected == got => None,
        _ => here(expected, got),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_compare_by_value() {
        assert_eq!(
            first_difference(&json!({"a": [1.0, 2.5]}), &json!({"a": [1, 2.5]})),
            None
        );
    }

    #[test]
    fn reports_the_first_difference_with_its_path() {
        let d = first_difference(
            &json!({"a": [{"b": "x"}, {"b": "y"}]}),
            &json!({"a": [{"b": "x"}, {"b": "z"}]}),
        );
        assert_eq!(d.as_deref(), Some(r#"at $.a[1].b: expected "y", got "z""#));
        let d = first_difference(&json!({"a": 1, "b": 2}), &json!({"a": 1}));
        assert!(
            d.is_some_and(|d| d.contains("expected keys")),
            "missing field"
        );
        let d = first_difference(&json!([1, 2]), &json!([1]));
        assert_eq!(d.as_deref(), Some("at $: expected 2 items, got 1"));
    }
}
