//! Where a fetch's objects are in the store: the objects at a plan path (lists flattened)
//! and their response paths.

use crate::response::store::ObjId;
use crate::response::writer::PathSeg;
use crate::response::{KeyTable, Store, Value};
use graphfleet_planner::query_planner::PathElem;

/// The store objects at `paths` (lists flattened), in response order.
pub(super) fn objects_at(store: &Store, keys: &KeyTable, paths: &[Vec<PathElem>]) -> Vec<ObjId> {
    let mut objects = Vec::new();
    for path in paths {
        collect_objects(store, keys, Store::ROOT, path, &mut objects);
    }
    objects
}

/// Objects at `path` below `obj` (lists flattened), in response order.
fn collect_objects(
    store: &Store,
    keys: &KeyTable,
    obj: ObjId,
    path: &[PathElem],
    out: &mut Vec<ObjId>,
) {
    match path.first() {
        None => out.push(obj),
        Some(PathElem::Key(k)) => {
            if let Some(v) = keys.get(k).and_then(|k| store.object(obj).get(k)) {
                collect_value(store, keys, v, &path[1..], out);
            }
        }
        Some(PathElem::TypeCond(t)) => {
            if has_typename(store, keys, obj, t) {
                collect_objects(store, keys, obj, &path[1..], out);
            }
        }
        Some(PathElem::List) => {}
    }
}

/// Whether the store object's `__typename` is `ty` (type-condition path steps).
pub(super) fn has_typename(store: &Store, keys: &KeyTable, obj: ObjId, ty: &str) -> bool {
    keys.get("__typename")
        .and_then(|k| store.object(obj).get(k))
        .is_some_and(|v| store.as_str(v) == Some(ty))
}

fn collect_value(
    store: &Store,
    keys: &KeyTable,
    v: &Value,
    path: &[PathElem],
    out: &mut Vec<ObjId>,
) {
    match (v, path.first()) {
        (Value::Object(id), _) => collect_objects(store, keys, *id, path, out),
        (Value::List(items), Some(PathElem::List)) => {
            for item in store.list(*items) {
                collect_value(store, keys, item, &path[1..], out);
            }
        }
        _ => {}
    }
}

/// The response path of every object at `path`, same order as [`collect_objects`].
pub(super) fn object_paths(
    store: &Store,
    keys: &KeyTable,
    path: &[PathElem],
) -> Vec<(ObjId, Vec<PathSeg>)> {
    fn walk(
        store: &Store,
        keys: &KeyTable,
        v: &Value,
        path: &[PathElem],
        cur: &mut Vec<PathSeg>,
        out: &mut Vec<(ObjId, Vec<PathSeg>)>,
    ) {
        match (v, path.first()) {
            (Value::Object(id), None) => out.push((*id, cur.clone())),
            (Value::Object(id), Some(PathElem::TypeCond(t)))
                if has_typename(store, keys, *id, t) =>
            {
                walk(store, keys, v, &path[1..], cur, out);
            }
            (Value::Object(id), Some(PathElem::Key(k))) => {
                if let Some(v) = keys.get(k).and_then(|kid| store.object(*id).get(kid)) {
                    cur.push(PathSeg::Key(k.to_string()));
                    walk(store, keys, v, &path[1..], cur, out);
                    cur.pop();
                }
            }
            (Value::List(items), Some(PathElem::List)) => {
                for (i, item) in store.list(*items).iter().enumerate() {
                    cur.push(PathSeg::Index(i));
                    walk(store, keys, item, &path[1..], cur, out);
                    cur.pop();
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(
        store,
        keys,
        &Value::Object(Store::ROOT),
        path,
        &mut Vec::new(),
        &mut out,
    );
    out
}
