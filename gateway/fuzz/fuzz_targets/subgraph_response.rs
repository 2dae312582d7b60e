//! The subgraph response reader against serde_json: it accepts exactly the GraphQL
//! response objects serde_json accepts (up to the documented differences: nesting
//! beyond serde_json's 128 levels, and numbers outside f64's range, which are passed
//! on as written), reads the same values, and never panics.

#![no_main]

use bytes::Bytes;
use graphfleet_executor::response::parse;
use graphfleet_executor::response::store::{Store, Value};
use graphfleet_planner::keys::KeyTable;
use libfuzzer_sys::fuzz_target;
use serde_json::Value as Json;

fn to_json(store: &Store, keys: &KeyTable, v: &Value) -> Json {
    match v {
        Value::Null => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::String(s) => Json::String(store.string(*s).to_string()),
        Value::RawStr(r) => Json::String(String::from_utf8(store.raw(*r).to_vec()).expect("raw strings are UTF-8")),
        Value::RawNum(r) => serde_json::from_slice(store.raw(*r)).unwrap_or(Json::Null),
        Value::List(items) => Json::Array(store.list(*items).iter().map(|i| to_json(store, keys, i)).collect()),
        Value::Object(id) => {
            let object = store.object(*id);
            let known = object.fields.iter().map(|(k, v)| (keys.name(*k).to_string(), v));
            let extra = object.extra.iter().map(|(k, v)| (k.to_string(), v));
            Json::Object(known.chain(extra).map(|(k, v)| (k, to_json(store, keys, v))).collect())
        }
        Value::Int(_) | Value::UInt(_) | Value::Float(_) => unreachable!("never parsed"),
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let mut keys = KeyTable::default();
    for k in ["data", "a", "id"] {
        keys.intern(&apollo_compiler::Name::new(k).expect("a name"));
    }
    let mut store = Store::with_root();
    let body = Bytes::copy_from_slice(data);
    let source = store.keep(&body);
    let ours = parse::response(text, source, &mut store, &keys);
    let theirs = serde_json::from_str::<Json>(text);
    match (ours, theirs) {
        (Ok(response), Ok(Json::Object(map))) => {
            if let Some(data) = response.data {
                // Both keep the last of repeated keys.
                assert_eq!(&to_json(&store, &keys, &data), &map["data"], "{text}");
            }
        }
        (Ok(_), Ok(other)) => panic!("accepted a non-object: {other}"),
        (Ok(_), Err(e)) => {
            let documented = e.to_string().contains("recursion limit")
                || e.to_string().contains("number out of range");
            assert!(documented, "accepted what serde_json refuses ({e}): {text:?}");
        }
        (Err(e), Ok(Json::Object(_))) => panic!("refused a valid response ({e}): {text:?}"),
        (Err(_), _) => {}
    }
});
