//! Building a fetch's request body: the operation, its variables and the representations
//! of the objects it extends (deduplicated), one request or one per batched part.

use super::paths::objects_at;
use super::representations::write_rep;
use crate::response::store::ObjId;
use crate::response::writer::write_str;
use crate::response::{KeyTable, Store};
use apollo_compiler::response::JsonMap;
use bytes::Bytes;
use graphfleet_planner::query_planner::{EntityPart, Fetch, QueryPlan, RepSpec};
use rustc_hash::FxHashMap;
use std::io::Write as _;

pub(crate) struct PreparedFetch {
    pub body: Bytes,
    /// For entity fetches: the store objects each representation extends.
    pub targets: Vec<Vec<ObjId>>,
    /// A batched context request: where each aliased `_entities` field's (`_<i>`)
    /// representations start in `targets`. Empty: one `_entities` field.
    pub aliases: Vec<usize>,
}

pub(crate) fn prepare(
    fetch: &Fetch,
    plan: &QueryPlan,
    store: &Store,
    variables: &JsonMap,
) -> Option<PreparedFetch> {
    if let Some(entity) = fetch.entity.as_ref().filter(|e| !e.parts.is_empty()) {
        return batched_parts_body(fetch, plan, store, variables, &entity.parts);
    }
    let objects = fetch
        .entity
        .as_ref()
        .map(|_| objects_at(store, &plan.keys, &fetch.merge_paths));
    request_body(fetch, plan, store, variables, objects.as_deref(), &[])
}

/// `{"query":<operation>,"variables":{`, the start of every request body, with room for
/// `more` bytes after it.
pub(super) fn body_start(operation: &str, more: usize) -> Vec<u8> {
    let mut body = Vec::with_capacity(operation.len() + 32 + more);
    body.extend_from_slice(b"{\"query\":");
    write_str(&mut body, operation);
    body.extend_from_slice(b",\"variables\":{");
    body
}

/// The request of a batched entity fetch: part `i`'s representations as
/// `representations_<i>` (an empty list when it has none; `None` when no part has any).
fn batched_parts_body(
    fetch: &Fetch,
    plan: &QueryPlan,
    store: &Store,
    variables: &JsonMap,
    parts: &[EntityPart],
) -> Option<PreparedFetch> {
    let mut body = body_start(&fetch.operation, 256);
    let mut targets = Vec::new();
    let mut aliases = Vec::with_capacity(parts.len());
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        let _ = write!(body, "\"representations_{i}\":");
        aliases.push(targets.len());
        let objects = objects_at(store, &plan.keys, &part.merge_paths);
        write_representations(
            store,
            &plan.keys,
            &part.reps,
            &objects,
            &mut body,
            &mut targets,
        );
    }
    if targets.is_empty() {
        return None;
    }
    write_client_variables(fetch, variables, &mut body, false);
    Some(PreparedFetch {
        body: Bytes::from(body),
        targets,
        aliases,
    })
}

/// The request body of `fetch`: for an entity fetch, the representations of `objects`
/// (deduplicated; `None` when none has its key fields), then `extra` (`,"name":value`
/// variables) and the client variables it uses.
pub(super) fn request_body(
    fetch: &Fetch,
    plan: &QueryPlan,
    store: &Store,
    variables: &JsonMap,
    objects: Option<&[ObjId]>,
    extra: &[u8],
) -> Option<PreparedFetch> {
    let mut body = body_start(&fetch.operation, 256);
    let mut targets: Vec<Vec<ObjId>> = Vec::new();
    let mut first = true;
    if let (Some(entity), Some(objects)) = (&fetch.entity, objects) {
        body.extend_from_slice(b"\"representations\":");
        write_representations(
            store,
            &plan.keys,
            &entity.reps,
            objects,
            &mut body,
            &mut targets,
        );
        if targets.is_empty() {
            return None;
        }
        body.extend_from_slice(extra);
        first = false;
    }
    write_client_variables(fetch, variables, &mut body, first);
    Some(PreparedFetch {
        body: Bytes::from(body),
        targets,
        aliases: Vec::new(),
    })
}

/// The representations of `objects` as a JSON list (deduplicated), and the objects each
/// one extends into `targets` (nothing when none has its key fields).
pub(super) fn write_representations(
    store: &Store,
    keys: &KeyTable,
    reps: &[RepSpec],
    objects: &[ObjId],
    body: &mut Vec<u8>,
    targets: &mut Vec<Vec<ObjId>>,
) {
    let first_target = targets.len();
    let typename = keys.get("__typename");
    let mut seen: FxHashMap<Vec<u8>, usize> = FxHashMap::default();
    body.push(b'[');
    let mut rep = Vec::with_capacity(64);
    for &obj in objects {
        let Some(tn) = typename
            .and_then(|k| store.object(obj).get(k))
            .and_then(|v| store.as_str(v))
        else {
            continue;
        };
        let Some(spec) = reps.iter().find(|r| r.matches.iter().any(|m| m == tn)) else {
            continue;
        };
        rep.clear();
        if !write_rep(store, keys, obj, tn, spec, &mut rep) {
            continue; // missing key fields (e.g. an earlier fetch failed)
        }
        match seen.get(&rep) {
            Some(i) => targets[*i].push(obj),
            None => {
                if targets.len() > first_target {
                    body.push(b',');
                }
                body.extend_from_slice(&rep);
                seen.insert(rep.clone(), targets.len());
                targets.push(vec![obj]);
            }
        }
    }
    body.push(b']');
}

/// `,"name":value` for each client variable the fetch uses, then the closing braces.
pub(super) fn write_client_variables(
    fetch: &Fetch,
    variables: &JsonMap,
    body: &mut Vec<u8>,
    mut first: bool,
) {
    for name in &fetch.variables {
        if let Some(value) = variables.get(name.as_str()) {
            if !first {
                body.push(b',');
            }
            first = false;
            write_str(body, name);
            body.push(b':');
            serde_json::to_writer(&mut *body, value).expect("JSON values always serialize");
        }
    }
    body.extend_from_slice(b"}}");
}
