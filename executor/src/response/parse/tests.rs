use super::tokens::leading_digits;
use super::*;
use bytes::Bytes;
use serde_json::{Map, Value as Json, json};

/// The store's value as serde_json's (numbers read from their text).
fn to_json(store: &Store, keys: &KeyTable, v: &Value) -> Json {
    match v {
        Value::Null => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::String(s) => Json::String(store.string(*s).to_string()),
        Value::RawStr(r) => Json::String(
            std::str::from_utf8(store.raw(*r))
                .expect("raw strings are UTF-8")
                .to_string(),
        ),
        Value::RawNum(r) => serde_json::from_slice(store.raw(*r)).expect("raw numbers are JSON"),
        Value::List(items) => Json::Array(
            store
                .list(*items)
                .iter()
                .map(|i| to_json(store, keys, i))
                .collect(),
        ),
        Value::Object(id) => {
            let object = store.object(*id);
            let known = object
                .fields
                .iter()
                .map(|(k, v)| (keys.name(*k).to_string(), v));
            let extra = object.extra.iter().map(|(k, v)| (k.to_string(), v));
            let map: Map<String, Json> = known
                .chain(extra)
                .map(|(k, v)| (k, to_json(store, keys, v)))
                .collect();
            Json::Object(map)
        }
        Value::Int(_) | Value::UInt(_) | Value::Float(_) => unreachable!("never parsed"),
    }
}

fn keys() -> KeyTable {
    let mut keys = KeyTable::default();
    for k in ["a", "b", "id", "name"] {
        keys.intern(&apollo_compiler::Name::new(k).expect("a name"));
    }
    keys
}

fn parse(text: &str) -> Result<(Option<Json>, Option<String>), ParseError> {
    let keys = keys();
    let mut store = Store::with_root();
    let body = Bytes::copy_from_slice(text.as_bytes());
    let source = store.keep(&body);
    let text = std::str::from_utf8(&body).expect("UTF-8");
    let response = response(text, source, &mut store, &keys)?;
    Ok((
        response.data.map(|d| to_json(&store, &keys, &d)),
        response.errors.map(str::to_string),
    ))
}

const VALID: &[&str] = &[
    r#"{"a":1}"#,
    r#" { "a" : [ 1 , -0 , 0.5 , -1.25e-3 , 1E+2 , 2e5 , 12345678901234567890 ] } "#,
    r#"{"a":"plain","b":"tab\tnew\nline \"quoted\" back\\slash \/ \b\f\r","name":"\u00e9\u4e2d\ud83d\ude00"}"#,
    r#"{"a":{"b":{"unknown":[{"x":null}],"id":true}},"name":false}"#,
    r#"{"a":[],"b":{},"id":"","name":[[[]]]}"#,
    "{\"a\":\"caf\u{e9} \u{1F600} long enough to take the eight-byte path\"}",
    r#"{"a":"0123456789abcdef0123456789\"x"}"#,
];

#[test]
fn reads_what_serde_json_reads() {
    for text in VALID {
        let expected: Json = serde_json::from_str(text).expect("valid JSON");
        let (data, errors) = parse(&format!(r#"{{"data":{text},"extensions":{{"k":[1]}}}}"#))
            .unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(data, Some(expected), "{text}");
        assert_eq!(errors, None);
    }
}

/// The store `body` parses into, and the items of its `data.a` list.
fn parse_list_a(body: &[u8]) -> (Store, Vec<Value>) {
    let keys = keys();
    let mut store = Store::with_root();
    let body = Bytes::copy_from_slice(body);
    let source = store.keep(&body);
    let text = std::str::from_utf8(&body).expect("UTF-8");
    let data = response(text, source, &mut store, &keys)
        .expect("valid")
        .data
        .expect("data");
    let Value::Object(id) = data else {
        panic!("an object")
    };
    let Some(Value::List(items)) = store.object(id).get(keys.get("a").expect("a")) else {
        panic!("a list")
    };
    let items = store.list(*items).to_vec();
    (store, items)
}

#[test]
fn numbers_keep_their_text() {
    let (store, items) = parse_list_a(br#"{"data":{"a":[-0,1.50,1E+2,12345678901234567890123]}}"#);
    let texts: Vec<&[u8]> = items
        .iter()
        .map(|v| match v {
            Value::RawNum(r) => store.raw(*r),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        texts,
        [&b"-0"[..], b"1.50", b"1E+2", b"12345678901234567890123"]
    );
}

#[test]
fn errors_are_handed_over_as_text() {
    let (data, errors) =
        parse(r#"{"errors":[{"message":"no","path":["a",0]}],"data":null}"#).expect("valid");
    assert_eq!(data, Some(Json::Null));
    let errors: Json = serde_json::from_str(&errors.expect("errors")).expect("JSON");
    assert_eq!(errors, json!([{"message": "no", "path": ["a", 0]}]));
}

#[test]
fn refuses_what_json_refuses() {
    let cases: &[(&str, &str)] = &[
        ("01", "expected `,` or `}` at byte 9"),
        ("1.", "invalid number at byte 10"),
        (".5", "expected a JSON value at byte 8"),
        ("-", "invalid number at byte 9"),
        ("1e", "invalid number at byte 10"),
        ("1e+", "invalid number at byte 11"),
        ("[1,]", "expected a JSON value at byte 11"),
        (r#"{"a":1,}"#, "expected a string key at byte 15"),
        (r#"{"a" 1}"#, "expected `:` at byte 13"),
        ("tru", "expected a JSON value at byte 8"),
        (r#""\x""#, "invalid escape at byte 9"),
        (r#""\ud800""#, "lone surrogate in a \\u escape at byte 9"),
        (
            r#""\udc00\ud800""#,
            "lone surrogate in a \\u escape at byte 9",
        ),
        (r#""\u12""#, "invalid \\u escape at byte 11"),
        ("\"a\u{1}b\"", "control character in a string at byte 10"),
        (r#""abc"#, "unterminated string at byte 13"),
        ("[1 2]", "expected `,` or `]` at byte 11"),
        ("", "expected a JSON value at byte 8"),
    ];
    let mut wrong = Vec::new();
    for (value, message) in cases {
        let text = format!(r#"{{"data":{value}}}"#);
        assert!(
            serde_json::from_str::<Json>(&text).is_err(),
            "{text} is invalid JSON"
        );
        let error = parse(&text).expect_err(&text).to_string();
        if error != *message {
            wrong.push(format!("{text}: {error}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    for (text, message) in [
        (r#"{"data":1} x"#, "trailing characters at byte 11"),
        ("[]", "expected a JSON object at byte 0"),
        (r#"{"data":1"#, "unexpected end of input at byte 9"),
        (r#"{"data":[1"#, "unexpected end of input at byte 10"),
        (r#"{"data":{"#, "unexpected end of input at byte 9"),
        (r#"{"data":"#, "unexpected end of input at byte 8"),
    ] {
        assert_eq!(parse(text).expect_err(text).to_string(), message);
    }
}

#[test]
fn nesting_is_bounded() {
    let deep = |n: usize| format!(r#"{{"data":{}{}}}"#, "[".repeat(n), "]".repeat(n));
    assert!(parse(&deep(500)).is_ok());
    assert_eq!(
        parse(&deep(600)).expect_err("too deep").to_string(),
        "nested deeper than 512 levels at byte 520"
    );
}

#[test]
fn raw_values_are_written_as_sent_near_and_far_from_the_end() {
    for len in [0, 1, 5, 29, 30, 31, 32, 33, 70] {
        let s = "s".repeat(len);
        let n = "9".repeat(len.max(1));
        // Strings and numbers last in the body (no full window after them) and not.
        for text in [
            format!(r#"{{"data":{{"a":["{s}",{n}],"b":["{s}",{n}]}}}}"#),
            format!(r#"{{"data":{{"b":1,"a":["{s}",{n}]}}}}"#),
        ] {
            let (store, items) = parse_list_a(text.as_bytes());
            let mut out = b"x".to_vec();
            for item in &items {
                match item {
                    Value::RawStr(r) => store.write_raw(&mut out, *r, true),
                    Value::RawNum(r) => store.write_raw(&mut out, *r, false),
                    other => panic!("{other:?}"),
                }
            }
            assert_eq!(
                String::from_utf8(out).expect("UTF-8"),
                format!("x\"{s}\"{n}")
            );
        }
    }
}

#[test]
fn digit_runs_are_counted_eight_bytes_at_a_time() {
    for byte in 0..=255u8 {
        for at in 0..8 {
            let mut word = *b"01234567";
            word[at] = byte;
            let expected = if byte.is_ascii_digit() { 8 } else { at };
            assert_eq!(
                leading_digits(u64::from_le_bytes(word)),
                expected,
                "{byte:#x} at {at}"
            );
        }
    }
    for number in [
        "1234567890123456789.25e+10",
        "-0.000000001",
        "98765432101234567",
    ] {
        let text = format!(r#"{{"data":{{"a":{number}}}}}"#);
        let expected: Json = serde_json::from_str(&text).expect("valid");
        assert_eq!(
            parse(&text).expect("valid").0,
            Some(expected["data"].clone())
        );
    }
}

#[test]
fn every_byte_position_of_the_fast_path() {
    // A quote, backslash or control character at each offset of an eight-byte word.
    for at in 0..24 {
        for special in ["\\\"", "\\\\", "\\n"] {
            let s = format!("{}{special}{}", "x".repeat(at), "y".repeat(9));
            let text = format!(r#"{{"data":{{"a":"{s}"}}}}"#);
            let expected: Json = serde_json::from_str(&text).expect("valid");
            assert_eq!(
                parse(&text).expect("valid").0,
                Some(expected["data"].clone())
            );
        }
        let text = format!("{{\"data\":\"{}\u{1f}\"}}", "x".repeat(at));
        assert!(parse(&text).is_err(), "control character at {at}");
    }
}

#[test]
fn parsed_values_weigh_a_few_times_their_text() {
    // Lists of small objects, the shape of entity answers: the store's values take
    // several times the text they came from, which is why the budget charges them.
    let item = r#"{"id":"1234","name":"a product name","a":12,"b":{"id":"u1"}}"#;
    let text = format!(r#"{{"data":{{"a":[{}]}}}}"#, vec![item; 10_000].join(","));
    let keys = keys();
    let mut store = Store::with_root();
    let body = Bytes::copy_from_slice(text.as_bytes());
    let source = store.keep(&body);
    let text = std::str::from_utf8(&body).expect("UTF-8");
    response(text, source, &mut store, &keys).expect("valid");
    let ratio = store.heap_bytes() as f64 / body.len() as f64;
    assert!(
        (1.5..8.0).contains(&ratio),
        "parsed values weigh {ratio:.2}× their text"
    );
}
