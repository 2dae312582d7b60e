//! An entity's representation as its `@key` (or `@requires`) selection of store values.

use crate::response::store::ObjId;
use crate::response::writer::{write_scalar, write_str};
use crate::response::{KeyTable, Store, Value};
use graphfleet_federation::meta::{SelTree, SelTreeItem};
use graphfleet_planner::query_planner::RepSpec;

pub(super) fn write_rep(
    store: &Store,
    keys: &KeyTable,
    obj: ObjId,
    typename: &str,
    spec: &RepSpec,
    out: &mut Vec<u8>,
) -> bool {
    out.extend_from_slice(b"{\"__typename\":");
    write_str(out, spec.send_typename.as_deref().unwrap_or(typename));
    if !write_fields(store, keys, obj, &spec.fields, out, &mut true) {
        return false;
    }
    out.push(b'}');
    true
}

/// Writes `,"field":value` for each field of `tree` on `obj`.
fn write_fields(
    store: &Store,
    keys: &KeyTable,
    obj: ObjId,
    tree: &SelTree,
    out: &mut Vec<u8>,
    after_first: &mut bool,
) -> bool {
    let object = store.object(obj);
    for item in &tree.items {
        match item {
            SelTreeItem::Field {
                name, alias, sub, ..
            } => {
                // Fetched under its alias (a `@requires` field with arguments), sent
                // under its name.
                let stored = alias.as_ref().unwrap_or(name);
                let Some(v) = keys.get(stored).and_then(|k| object.get(k)) else {
                    return false;
                };
                if *after_first {
                    out.push(b',');
                }
                *after_first = true;
                write_str(out, name);
                out.push(b':');
                if !write_rep_value(store, keys, v, sub, out) {
                    return false;
                }
            }
            SelTreeItem::Fragment {
                type_condition,
                sub,
            } => {
                // Only for objects of that type (conditions are on object types, see
                // the planner's `concrete_fragments`): another type's fields fetched
                // for the client must not feed a `@requires`. Include what it has.
                let typename = keys.get("__typename").and_then(|k| object.get(k));
                let applies = match typename.and_then(|v| store.as_str(v)) {
                    Some(tn) => tn == type_condition.as_str(),
                    None => true,
                };
                if applies {
                    let _ = write_fields(store, keys, obj, sub, out, after_first);
                }
            }
        }
    }
    true
}

fn write_rep_value(
    store: &Store,
    keys: &KeyTable,
    v: &Value,
    sub: &SelTree,
    out: &mut Vec<u8>,
) -> bool {
    match v {
        Value::Object(id) => {
            out.push(b'{');
            let tn = keys
                .get("__typename")
                .and_then(|k| store.object(*id).get(k));
            let mut first = false;
            if let Some(tn) = tn.and_then(|v| store.as_str(v)) {
                out.extend_from_slice(b"\"__typename\":");
                write_str(out, tn);
                first = true;
            }
            if !write_fields(store, keys, *id, sub, out, &mut first) {
                return false;
            }
            out.push(b'}');
            true
        }
        Value::List(items) => {
            out.push(b'[');
            for (i, item) in store.list(*items).iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                if !write_rep_value(store, keys, item, sub, out) {
                    return false;
                }
            }
            out.push(b']');
            true
        }
        scalar => {
            write_scalar(out, scalar, store, keys);
            true
        }
    }
}
