//! One fetch: build the request body (representations deduplicated), then merge the
//! subgraph's response into the store and remap its errors to client paths.

use crate::response::store::{ObjId, Span};
use crate::response::writer::{PathSeg, ResponseError, write_scalar, write_str};
use crate::response::{KeyId, KeyTable, Store, Value};
use apollo_compiler::response::JsonMap;
use bytes::Bytes;
use graphfleet_federation::meta::{SelTree, SelTreeItem};
use graphfleet_planner::query_planner::{
    CONTEXT_BATCH, ContextBatch, ContextVariable, EntityFetch, EntityPart, Fetch, PathElem,
    QueryPlan, RepSpec, context_alias,
};
use rustc_hash::FxHashMap;
use std::fmt::Write as _;
use std::io::Write as _;

pub(super) struct PreparedFetch {
    pub body: Bytes,
    /// For entity fetches: the store objects each representation extends.
    pub targets: Vec<Vec<ObjId>>,
    /// A batched context request: where each aliased `_entities` field's (`_<i>`)
    /// representations start in `targets`. Empty: one `_entities` field.
    pub aliases: Vec<usize>,
}

pub(super) fn prepare(
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
fn body_start(operation: &str, more: usize) -> Vec<u8> {
    let mut body = Vec::with_capacity(operation.len() + 32 + more);
    body.extend_from_slice(b"{\"query\":");
    write_str(&mut body, operation);
    body.extend_from_slice(b",\"variables\":{");
    body
}

/// The store objects at `paths` (lists flattened), in response order.
fn objects_at(store: &Store, keys: &KeyTable, paths: &[Vec<PathElem>]) -> Vec<ObjId> {
    let mut objects = Vec::new();
    for path in paths {
        collect_objects(store, keys, Store::ROOT, path, &mut objects);
    }
    objects
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
fn request_body(
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
fn write_representations(
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
fn write_client_variables(fetch: &Fetch, variables: &JsonMap, body: &mut Vec<u8>, mut first: bool) {
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

/// An entity fetch with contextual arguments: its entities grouped by the values their
/// ancestors give the arguments, one request per group (in first-seen order).
pub(super) fn prepare_contextual(
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

/// Objects at `path` below `obj` (lists flattened), in response order.
pub(super) fn collect_objects(
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
fn has_typename(store: &Store, keys: &KeyTable, obj: ObjId, ty: &str) -> bool {
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
fn object_paths(store: &Store, keys: &KeyTable, path: &[PathElem]) -> Vec<(ObjId, Vec<PathSeg>)> {
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

fn write_rep(
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

pub(super) fn merge(
    fetch: &Fetch,
    plan: &QueryPlan,
    prepared: &PreparedFetch,
    bytes: &Bytes,
    store: &mut Store,
    errors: &mut Vec<ResponseError>,
) {
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
            return;
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
    match (&fetch.entity, parsed.data) {
        (None, Some(Value::Object(data))) => store.merge_object(Store::ROOT, data),
        (Some(_), Some(Value::Object(data))) => {
            // Taken, not copied: the response object is not read again.
            let entities = plan.keys.get("_entities").and_then(|k| {
                let fields = &mut store.object_mut(data).fields;
                let (_, v) = fields.iter_mut().find(|(key, _)| *key == k)?;
                Some(std::mem::replace(v, Value::Null))
            });
            if let Some(Value::List(items)) = entities {
                merge_entities(store, items, &prepared.targets);
            }
            for (i, start) in prepared.aliases.iter().enumerate() {
                let end = prepared.aliases.get(i + 1).copied();
                let targets = &prepared.targets[*start..end.unwrap_or(prepared.targets.len())];
                let items = plan.keys.get(&context_alias(i)).and_then(|k| {
                    let fields = &mut store.object_mut(data).fields;
                    let (_, v) = fields.iter_mut().find(|(key, _)| *key == k)?;
                    Some(std::mem::replace(v, Value::Null))
                });
                if let Some(Value::List(items)) = items {
                    merge_entities(store, items, targets);
                }
            }
        }
        _ => {}
    }
    if !parsed.errors.is_empty() {
        remap_errors(fetch, plan, prepared, parsed.errors, store, errors);
    }
}

/// Each `_entities` result into the objects its representation came from.
fn merge_entities(store: &mut Store, items: Span, targets: &[Vec<ObjId>]) {
    for (i, targets) in targets.iter().enumerate().take(items.len()) {
        if let Value::Object(src) = store.list(items)[i] {
            for target in targets {
                store.merge_object(*target, src);
            }
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
pub(crate) fn failed_fetch_path(fetch: &Fetch) -> Option<Vec<PathSeg>> {
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
