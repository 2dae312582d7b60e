//! JSON schemas of the settings read from text by their own parsers (durations, sizes)
//! or holding any JSON value, in the forms a Kubernetes structural schema allows.

use schemars::{Schema, SchemaGenerator, json_schema};

/// A duration as the gateway reads it (humantime): `250ms`, `30s`, `1m 30s`.
pub(crate) fn duration(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "pattern": r"^\s*([0-9]+(\.[0-9]+)?\s*[a-zA-Zµ]+\s*)+$",
    })
}

/// A [`duration`] or `null`, for a setting whose default is on and `null` turns off.
pub(crate) fn nullable_duration(generator: &mut SchemaGenerator) -> Schema {
    let mut schema = duration(generator);
    schema.insert("nullable".to_owned(), true.into());
    schema
}

/// A byte size: a number of bytes, or text with a unit (`512KiB`, `64MiB`).
pub(crate) fn size(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "x-kubernetes-int-or-string": true })
}

/// Any JSON value (a claim's value compared as it is).
pub(crate) fn any_value(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "x-kubernetes-preserve-unknown-fields": true })
}
