//! Entity fetches with contextual arguments (`@fromContext`): entities grouped by the values
//! their ancestors give the arguments, one request per group or one batched request.

use super::paths::has_typename;
use super::request::{
    PreparedFetch, body_start, request_body, write_client_variables, write_representations,
};
use crate::response::store::ObjId;
use crate::response::writer::{write_scalar, write_str};
use crate::response::{KeyTable, Store, Value};
use apollo_compiler::response::JsonMap;
use bytes::Bytes;
use graphfleet_federation::meta::{SelTree, SelTreeItem};
use graphfleet_planner::query_planner::{
    CONTEXT_BATCH, ContextBatch, ContextVariable, EntityFetch, Fetch, PathElem, QueryPlan,
};
use rustc_hash::FxHashMap;
use std::fmt::Write as _;
use std::io::Write as _;

/// An entity fetch with contextual arguments: its entities grouped by the values their
/// ancestors give the arguments, one request per group (in first-seen order).
pub(crate) fn prepare_contextual(
    fetch: &Fetch,
    plan: &QueryPlan,
    store: &Store,
    variables: &JsonMap,
) -> Vec<PreparedFetch> {
    let Some(entity) = &fetch.entity else {
        return Vec::new();
    };
    let Some(path) = fetch.merge_paths.first() else {
        return Vec::new();
    };
    // Per distinct set of values (each variable's JSON), its objects. The values are
    // read while walking, from the ancestors on the walk's stack.
    let mut sets: Vec<(Vec<Vec<u8>>, Vec<ObjId>)> = Vec::new();
    let mut index: FxHashMap<Vec<u8>, usize> = FxHashMap::default();
    let mut key = Vec::with_capacity(64);
    // Siblings share their ancestors: the values are read again only when the
    // ancestors the sources look at change.
    let depth = entity
        .contexts
        .iter()
        .flat_map(|v| v.sources.iter().map(|s| s.depth + 1))
        .max()
        .unwrap_or(0);
    let mut last: Option<Vec<Option<ObjId>>> = None;
    let mut visit = |obj: ObjId, ancestors: &[Option<ObjId>]| {
        let relevant = &ancestors[..depth.min(ancestors.len())];
        if last.as_deref() != Some(relevant) {
            key.clear();
            for variable in &entity.contexts {
                write_context_value(store, &plan.keys, variable, ancestors, &mut key);
                // Never in JSON text: control characters in strings are escaped.
                key.push(0);
            }
            last = Some(relevant.to_vec());
        }
        match index.get(key.as_slice()) {
            Some(i) => sets[*i].1.push(obj),
            None => {
                index.insert(key.clone(), sets.len());
                let values = key
                    .split(|b| *b == 0)
                    .take(entity.contexts.len())
                    .map(<[u8]>::to_vec)
                    .collect();
                sets.push((values, vec![obj]));
            }
        }
    };
    let mut at = vec![None; path.len() + 1];
    collect_with_ancestors(store, &plan.keys, Store::ROOT, path, 0, &mut at, &mut visit);
    let one_set = |(values, objects): &(Vec<Vec<u8>>, Vec<ObjId>)| {
        let mut extra = Vec::new();
        for (variable, value) in entity.contexts.iter().zip(values) {
            extra.push(b',');
            write_str(&mut extra, &variable.name);
            extra.push(b':');
            extra.extend_from_slice(value);
        }
        request_body(fetch, plan, store, variables, Some(objects), &extra)
    };
    match (sets.as_slice(), &entity.batch) {
        // One set: the planned operation as it is.
        ([set], _) => one_set(set).into_iter().collect(),
        (_, Some(batch)) => sets
            .chunks(CONTEXT_BATCH)
            .filter_map(|chunk| batched_body(fetch, plan, store, variables, entity, batch, chunk))
            .collect(),
        (_, None) => sets.iter().filter_map(one_set).collect(),
    }
}

/// One request for several sets of context values: an aliased `_entities` field per
/// set, with its own representations and context variables.
fn batched_body(
    fetch: &Fetch,
    plan: &QueryPlan,
    store: &Store,
    variables: &JsonMap,
    entity: &EntityFetch,
    batch: &ContextBatch,
    sets: &[(Vec<Vec<u8>>, Vec<ObjId>)],
) -> Option<PreparedFetch> {
    const PREFIX: &str = "__contextArgument_";
    let mut defs = String::new();
    let mut fields = String::new();
    let mut vars = Vec::with_capacity(256);
    let mut targets = Vec::new();
    let mut aliases = Vec::new();
    for (values, objects) in sets {
        let i = aliases.len();
        let start = targets.len();
        let mut reps = Vec::with_capacity(128);
        write_representations(
            store,
            &plan.keys,
            &entity.reps,
            objects,
            &mut reps,
            &mut targets,
        );
        if targets.len() == start {
            continue;
        }
        aliases.push(start);
        if i > 0 {
            defs.push_str(", ");
            vars.push(b',');
        }
        let _ = write!(defs, "$representations_{i}: [_Any!]!");
        let _ = write!(vars, "\"representations_{i}\":");
        vars.extend_from_slice(&reps);
        for (variable, value) in entity.contexts.iter().zip(values) {
            let number = variable.name.strip_prefix(PREFIX).unwrap_or(&variable.name);
            let _ = write!(defs, ", ${PREFIX}{i}_{number}: {}", variable.ty);
            let _ = write!(vars, ",\"{PREFIX}{i}_{number}\":");
            vars.extend_from_slice(value);
        }
        let selection = batch
            .selection
            .replace(&format!("${PREFIX}"), &format!("${PREFIX}{i}_"));
        let _ = write!(
            fields,
            " _{i}: _entities(representations: $representations_{i}) {selection}"
        );
    }
    if aliases.is_empty() {
        return None;
    }
    let operation = format!("{}({defs}{}) {{{fields} }}", batch.kind, batch.client_defs);
    let mut body = body_start(&operation, vars.len() + 64);
    body.extend_from_slice(&vars);
    write_client_variables(fetch, variables, &mut body, false);
    Some(PreparedFetch {
        body: Bytes::from(body),
        targets,
        aliases,
    })
}

/// Like [`collect_objects`], calling `visit` with each object and its ancestors: `at[d]`
/// is the object reached after `d` elements of the path (None where that is no object).
fn collect_with_ancestors(
    store: &Store,
    keys: &KeyTable,
    obj: ObjId,
    path: &[PathElem],
    consumed: usize,
    at: &mut [Option<ObjId>],
    visit: &mut impl FnMut(ObjId, &[Option<ObjId>]),
) {
    at[consumed] = Some(obj);
    match path.get(consumed) {
        None => visit(obj, at),
        Some(PathElem::Key(k)) => {
            if let Some(v) = keys.get(k).and_then(|k| store.object(obj).get(k)) {
                collect_value_with_ancestors(store, keys, v, path, consumed + 1, at, visit);
            }
        }
        Some(PathElem::TypeCond(t)) => {
            if has_typename(store, keys, obj, t) {
                collect_with_ancestors(store, keys, obj, path, consumed + 1, at, visit);
            }
        }
        Some(PathElem::List) => {}
    }
}

fn collect_value_with_ancestors(
    store: &Store,
    keys: &KeyTable,
    v: &Value,
    path: &[PathElem],
    consumed: usize,
    at: &mut [Option<ObjId>],
    visit: &mut impl FnMut(ObjId, &[Option<ObjId>]),
) {
    match (v, path.get(consumed)) {
        (Value::Object(id), _) => {
            collect_with_ancestors(store, keys, *id, path, consumed, at, visit)
        }
        (Value::List(items), Some(PathElem::List)) => {
            at[consumed] = None;
            for item in store.list(*items) {
                collect_value_with_ancestors(store, keys, item, path, consumed + 1, at, visit);
            }
        }
        _ => {}
    }
}

/// The value of a contextual argument for an entity with `ancestors`: the selection
/// read from the innermost source whose object carries the context; null otherwise.
fn write_context_value(
    store: &Store,
    keys: &KeyTable,
    variable: &ContextVariable,
    ancestors: &[Option<ObjId>],
    out: &mut Vec<u8>,
) {
    for source in &variable.sources {
        let Some(obj) = ancestors.get(source.depth).copied().flatten() else {
            continue;
        };
        let typename = keys
            .get("__typename")
            .and_then(|k| store.object(obj).get(k))
            .and_then(|v| store.as_str(v));
        let Some(tn) = typename.filter(|tn| source.matches.iter().any(|m| m == tn)) else {
            continue;
        };
        if !write_selected(store, keys, obj, tn, &source.selection, out) {
            out.extend_from_slice(b"null");
        }
        return;
    }
    out.extend_from_slice(b"null");
}

/// Writes the value of the one field `tree` selects on `obj` (of type `typename`);
/// false when it selects none there.
fn write_selected(
    store: &Store,
    keys: &KeyTable,
    obj: ObjId,
    typename: &str,
    tree: &SelTree,
    out: &mut Vec<u8>,
) -> bool {
    for item in &tree.items {
        match item {
            SelTreeItem::Field { name, sub, .. } => {
                match keys.get(name).and_then(|k| store.object(obj).get(k)) {
                    Some(v) => write_input_value(store, keys, v, sub, out),
                    None => out.extend_from_slice(b"null"),
                }
                return true;
            }
            SelTreeItem::Fragment {
                type_condition,
                sub,
            } if type_condition == typename => {
                if write_selected(store, keys, obj, typename, sub, out) {
                    return true;
                }
            }
            SelTreeItem::Fragment { .. } => {}
        }
    }
    false
}

/// `v` as an argument value: objects (input objects) with the fields of `sub` only.
fn write_input_value(store: &Store, keys: &KeyTable, v: &Value, sub: &SelTree, out: &mut Vec<u8>) {
    match v {
        Value::Object(id) => {
            out.push(b'{');
            let mut first = true;
            for item in &sub.items {
                let SelTreeItem::Field { name, sub, .. } = item else {
                    continue;
                };
                let Some(v) = keys.get(name).and_then(|k| store.object(*id).get(k)) else {
                    continue;
                };
                if !first {
                    out.push(b',');
                }
                first = false;
                write_str(out, name);
                out.push(b':');
                write_input_value(store, keys, v, sub, out);
            }
            out.push(b'}');
        }
        Value::List(items) => {
            out.push(b'[');
            for (i, item) in store.list(*items).iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_input_value(store, keys, item, sub, out);
            }
            out.push(b']');
        }
        scalar => write_scalar(out, scalar, store, keys),
    }
}
