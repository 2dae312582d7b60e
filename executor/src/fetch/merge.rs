//! Merging a subgraph's response: `data` parsed into the store (entities extended in place),
//! `errors` remapped to client paths; and where a failed fetch's error goes.

use super::paths::object_paths;
use super::request::PreparedFetch;
use crate::memory::{Charge, OverBudget};
use crate::response::store::{FIELD_ENTRY_BYTES, ObjId, Span};
use crate::response::writer::{PathSeg, ResponseError};
use crate::response::{KeyId, KeyTable, Store, Value};
use bytes::Bytes;
use graphfleet_planner::query_planner::{Fetch, PathElem, QueryPlan, context_alias};

#[derive(serde::Deserialize)]
struct SubgraphError {
    message: Option<String>,
    path: Option<Vec<serde_json::Value>>,
    extensions: Option<serde_json::Value>,
}

struct Parsed {
    data: Option<Value>,
    errors: Vec<SubgraphError>,
}

/// `data` into the store (strings and numbers left in the kept body), `errors` decoded.
fn parse_response(
    text: &str,
    body: &Bytes,
    store: &mut Store,
    keys: &KeyTable,
) -> Result<Parsed, String> {
    let source = store.keep(body);
    let response =
        crate::response::parse::response(text, source, store, keys).map_err(|e| e.to_string())?;
    let errors = match response.errors {
        Some(errors) => serde_json::from_str::<Option<Vec<SubgraphError>>>(errors)
            .map_err(|e| format!("errors: {e}"))?
            .unwrap_or_default(),
        None => Vec::new(),
    };
    Ok(Parsed {
        data: response.data,
        errors,
    })
}

/// Why an entity answer was not merged: its copies into further objects than the first
/// would have passed a budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NotMerged {
    /// These many bytes, beyond what is left of `limits.max_response_bytes`.
    TooLarge(usize),
    /// The gateway-wide memory budget had no room for them.
    OverMemory(OverBudget),
}

/// What a merge may add: what is left of the request's response budget, and the
/// request's charge against the gateway-wide memory budget.
pub(crate) struct Budget<'a> {
    pub bytes: usize,
    pub memory: &'a Charge,
}

/// Merge a subgraph's answer into the store. An entity answer goes into every object
/// its representation came from: the copies beyond the first (one deduplicated answer
/// extending thousands of objects) are charged to the request's response budget and to
/// the gateway's memory budget before they are made. Returns the bytes charged.
pub(crate) fn merge(
    fetch: &Fetch,
    plan: &QueryPlan,
    prepared: &PreparedFetch,
    bytes: &Bytes,
    store: &mut Store,
    errors: &mut Vec<ResponseError>,
    budget: Budget<'_>,
) -> Result<usize, NotMerged> {
    // One UTF-8 check of the whole body (SIMD; the standard library's check again
    // only to say where a bad body goes wrong) instead of one per string in the parser.
    let parsed = match simdutf8::basic::from_utf8(bytes) {
        Ok(text) => parse_response(text, bytes, store, &plan.keys),
        Err(_) => Err(match std::str::from_utf8(bytes) {
            Err(e) => format!("the body is not UTF-8: {e}"),
            Ok(_) => "the body is not UTF-8".to_owned(),
        }),
    };
    let parsed = match parsed {
        Ok(p) => p,
        Err(e) => {
            for path in failed_fetch_paths(fetch) {
                errors.push(ResponseError {
                    path,
                    extensions: Some(serde_json::json!({
                        "code": "SUBREQUEST_MALFORMED_RESPONSE",
                        "service": fetch.subgraph_name,
                    })),
                    ..ResponseError::new(format!(
                        "subgraph '{}' returned an invalid GraphQL response: {e}",
                        fetch.subgraph_name
                    ))
                });
            }
            return Ok(0);
        }
    };
    if let (false, Some(Value::Object(data))) = (fetch.renames.is_empty(), &parsed.data) {
        let renames: Vec<(KeyId, KeyId)> = fetch
            .renames
            .iter()
            .filter_map(|(alias, key)| Some((plan.keys.get(alias)?, plan.keys.get(key)?)))
            .collect();
        unalias(store, *data, &renames);
    }
    let mut charged = 0;
    match (&fetch.entity, parsed.data) {
        (None, Some(Value::Object(data))) => store.merge_object(Store::ROOT, data),
        (Some(_), Some(Value::Object(data))) => {
            // Each list of answers with the objects it goes into: `_entities`, then one
            // per batched part.
            let mut lists = Vec::with_capacity(1 + prepared.aliases.len());
            // Taken, not copied: the response object is not read again.
            let take = |store: &mut Store, key: Option<KeyId>| {
                let fields = &mut store.object_mut(data).fields;
                let (_, v) = fields.iter_mut().find(|(k, _)| Some(*k) == key)?;
                match std::mem::replace(v, Value::Null) {
                    Value::List(items) => Some(items),
                    _ => None,
                }
            };
            if let Some(items) = take(store, plan.keys.get("_entities")) {
                lists.push((items, &prepared.targets[..]));
            }
            for (i, start) in prepared.aliases.iter().enumerate() {
                let end = prepared.aliases.get(i + 1).copied();
                let targets = &prepared.targets[*start..end.unwrap_or(prepared.targets.len())];
                if let Some(items) = take(store, plan.keys.get(&context_alias(i))) {
                    lists.push((items, targets));
                }
            }
            charged = lists
                .iter()
                .map(|(items, targets)| copies_bytes(store, *items, targets))
                .fold(0usize, usize::saturating_add);
            if charged > budget.bytes {
                return Err(NotMerged::TooLarge(charged));
            }
            if charged > 0 {
                budget
                    .memory
                    .try_add(charged)
                    .map_err(NotMerged::OverMemory)?;
            }
            for (items, targets) in lists {
                merge_entities(store, items, targets);
            }
        }
        // `data: null` (or none): the subgraph nulled all it was asked for (a non-null
        // field's error propagated to its root).
        (None, None | Some(Value::Null)) => store.mark_answered_null(Store::ROOT),
        (Some(_), None | Some(Value::Null)) => {
            for target in prepared.targets.iter().flatten() {
                store.mark_answered_null(*target);
            }
        }
        _ => {}
    }
    if !parsed.errors.is_empty() {
        remap_errors(fetch, plan, prepared, parsed.errors, store, errors);
    }
    Ok(charged)
}

/// The bytes of field entries that merging `items` into `targets` adds beyond one copy
/// of each answer (at most: fields already there are overwritten, not added).
fn copies_bytes(store: &Store, items: Span, targets: &[Vec<ObjId>]) -> usize {
    targets
        .iter()
        .zip(store.list(items))
        .filter(|(targets, _)| targets.len() > 1)
        .map(|(targets, item)| {
            let entries = store.merge_cost(*item).saturating_mul(targets.len() - 1);
            entries.saturating_mul(FIELD_ENTRY_BYTES)
        })
        .fold(0usize, usize::saturating_add)
}

/// Each `_entities` result into the objects its representation came from.
fn merge_entities(store: &mut Store, items: Span, targets: &[Vec<ObjId>]) {
    for (i, targets) in targets.iter().enumerate().take(items.len()) {
        match store.list(items)[i] {
            Value::Object(src) => {
                for target in targets {
                    store.merge_object(*target, src);
                }
            }
            Value::Null => {
                for target in targets {
                    store.mark_answered_null(*target);
                }
            }
            _ => {}
        }
    }
}

/// Store the fields the request aliased under their response keys again (the parsed
/// response is a fresh tree: no object is shared).
fn unalias(store: &mut Store, obj: ObjId, renames: &[(KeyId, KeyId)]) {
    let fields = std::mem::take(&mut store.object_mut(obj).fields);
    let mut kept: Vec<(KeyId, Value)> = Vec::with_capacity(fields.len());
    let mut nested = Vec::new();
    for (key, value) in fields {
        collect_nested(store, &value, &mut nested);
        let key = renames
            .iter()
            .find(|(alias, _)| *alias == key)
            .map_or(key, |(_, k)| *k);
        match kept.iter().position(|(k, _)| *k == key) {
            // Both spellings present: the same field, keep the first.
            Some(_) => {}
            None => kept.push((key, value)),
        }
    }
    store.object_mut(obj).fields = kept;
    for id in nested {
        unalias(store, id, renames);
    }
}

fn collect_nested(store: &Store, v: &Value, out: &mut Vec<ObjId>) {
    match v {
        Value::Object(id) => out.push(*id),
        Value::List(items) => store
            .list(*items)
            .iter()
            .for_each(|i| collect_nested(store, i, out)),
        _ => {}
    }
}

fn remap_errors(
    fetch: &Fetch,
    plan: &QueryPlan,
    prepared: &PreparedFetch,
    subgraph_errors: Vec<SubgraphError>,
    store: &Store,
    errors: &mut Vec<ResponseError>,
) {
    let paths = if fetch.entity.is_some() {
        fetch
            .merge_paths
            .iter()
            .flat_map(|p| object_paths(store, &plan.keys, p))
            .collect()
    } else {
        Vec::new()
    };
    for e in subgraph_errors {
        let raw: Vec<PathSeg> = e
            .path
            .unwrap_or_default()
            .into_iter()
            .filter_map(|p| match p {
                serde_json::Value::String(s) => {
                    // Aliased by the plan: the client knows the field by its own key.
                    let unaliased = fetch.renames.iter().find(|(a, _)| *a == s.as_str());
                    Some(PathSeg::Key(unaliased.map_or(s, |(_, k)| k.to_string())))
                }
                serde_json::Value::Number(n) => n.as_u64().map(|n| PathSeg::Index(n as usize)),
                _ => None,
            })
            .collect();
        let path = match (&fetch.entity, raw.as_slice()) {
            (Some(_), [PathSeg::Key(k), PathSeg::Index(i), rest @ ..])
                if k == "_entities" || alias_start(prepared, k).is_some() =>
            {
                let i = alias_start(prepared, k).unwrap_or(0) + i;
                let target = prepared.targets.get(i).and_then(|t| t.first());
                let base = target.and_then(|t| paths.iter().find(|(o, _)| o == t));
                base.map(|(_, p)| {
                    let mut p = p.clone();
                    p.extend_from_slice(rest);
                    p
                })
            }
            // A batched part's field as a whole (`["_1"]`): that part's objects.
            (Some(entity), [PathSeg::Key(k)]) if !entity.parts.is_empty() => k
                .strip_prefix('_')
                .and_then(|i| i.parse::<usize>().ok())
                .and_then(|i| failed_fetch_paths(fetch).into_iter().nth(i))
                .unwrap_or_else(|| failed_fetch_path(fetch)),
            // Not tied to one entity: the error belongs to the whole fetch.
            (Some(_), _) => failed_fetch_path(fetch),
            (None, []) => None,
            (None, p) => Some(p.to_vec()),
        };
        let mut extensions = e.extensions.unwrap_or_else(|| serde_json::json!({}));
        if let Some(map) = extensions.as_object_mut() {
            map.entry("service")
                .or_insert_with(|| serde_json::Value::String(fetch.subgraph_name.clone()));
        }
        errors.push(ResponseError {
            path,
            extensions: Some(extensions),
            ..ResponseError::new(e.message.unwrap_or_else(|| "subgraph error".to_string()))
        });
    }
}

/// Where the representations of a batched request's `_entities` field `key` (`_<i>`)
/// start in its targets.
fn alias_start(prepared: &PreparedFetch, key: &str) -> Option<usize> {
    let i: usize = key.strip_prefix('_')?.parse().ok()?;
    prepared.aliases.get(i).copied()
}

/// Where a fetch that returned nothing would have merged, down to its first list: a
/// path names only positions the response has (no `@` placeholder for "every item"),
/// so the deepest one covering all the fetch's objects. None for root fetches.
fn failed_fetch_path(fetch: &Fetch) -> Option<Vec<PathSeg>> {
    fetch.entity.as_ref()?;
    fetch.merge_paths.first().map(|p| up_to_list(p))
}

/// [`failed_fetch_path`] of each part of a batched fetch (one error each, as when they
/// were sent apart), or of the fetch.
pub(crate) fn failed_fetch_paths(fetch: &Fetch) -> Vec<Option<Vec<PathSeg>>> {
    match &fetch.entity {
        Some(entity) if !entity.parts.is_empty() => entity
            .parts
            .iter()
            .map(|part| part.merge_paths.first().map(|p| up_to_list(p)))
            .collect(),
        _ => vec![failed_fetch_path(fetch)],
    }
}

fn up_to_list(path: &[PathElem]) -> Vec<PathSeg> {
    path.iter()
        .take_while(|p| !matches!(p, PathElem::List))
        .filter_map(|p| match p {
            PathElem::Key(k) => Some(PathSeg::Key(k.to_string())),
            PathElem::List | PathElem::TypeCond(_) => None,
        })
        .collect()
}
