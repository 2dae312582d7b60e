//! A generic JSON-backed subgraph server for fixtures: it resolves any selection against
//! a per-fixture `data.json`, one entry per subgraph:
//!
//! ```json
//! { "<subgraph>": {
//!     "Query": { "field": <value>, "withArgs": { "__byArgs": [ { "args": {..}, "value": <value> } ] } },
//!     "Mutation": { ... },
//!     "entities": { "Product": [ { "__typename": "Product", "upc": "1", ... } ] } } }
//! ```
//!
//! Entities are found by `__typename` and every representation field they also hold
//! (so `@requires` fields sent along do not need to be stored); a value
//! `{"__rep": "field.sub"}` echoes a representation field (to observe `@requires`), and
//! `{"__error": "message"}` resolves to null with a GraphQL error at that path, and
//! `{"__needsRep": "field", "value": <value>}` resolves to `value` only when the
//! representation carries `field` (non-null), else to null with an error (a resolver
//! that reads a `@requires` field and fails without it). An entity entry holding
//! `"__error": "message"` answers its representation with null and that error (a
//! failing reference resolver); `__rep` paths index lists by number (`items.2.id`).
//! A subgraph entry `"__validateWith": "<SDL>"` rejects, as a real subgraph would, a
//! request that is not valid against that (plain, federation-free) schema. An error value
//! with `"__nonNull": true` also nulls its enclosing object (one level of non-null
//! propagation, as for a non-null field under a nullable one).
//! A root field `{"__counter": {"op": "add"|"multiply"|"take", "arg": "num", "key": "requestId"}}`
//! keeps an integer per value of argument `key`, shared by all subgraphs of one server:
//! `add`/`multiply` apply argument `arg` and return the new value, `take` returns it and
//! resets it to 0 (stateful mutations whose results show the order they ran in).

use apollo_compiler::ast::{self, Definition, Selection};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

pub struct JsonSubgraphs {
    pub base_url: String,
    counts: Arc<BTreeMap<String, AtomicU64>>,
    /// Every request body per subgraph, in arrival order.
    pub log: Arc<Mutex<Vec<(String, Value)>>>,
    /// Every request's headers per subgraph, in arrival order.
    pub headers: Arc<Mutex<Vec<(String, hyper::HeaderMap)>>>,
}

impl JsonSubgraphs {
    /// Requests received so far, per subgraph.
    pub fn counts(&self) -> BTreeMap<String, u64> {
        self.counts
            .iter()
            .map(|(k, v)| (k.clone(), v.load(Ordering::Relaxed)))
            .collect()
    }
}

pub async fn start(data: Value) -> JsonSubgraphs {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind an ephemeral loopback port");
    let addr = listener.local_addr().expect("bound address");
    let data = Arc::new(data);
    let state: Counters = Arc::new(Mutex::new(BTreeMap::new()));
    let counts: Arc<BTreeMap<String, AtomicU64>> = Arc::new(
        data.as_object()
            .expect("data.json is an object of subgraphs")
            .keys()
            .map(|k| (k.clone(), AtomicU64::new(0)))
            .collect(),
    );
    let log = Arc::new(Mutex::new(Vec::new()));
    let headers = Arc::new(Mutex::new(Vec::new()));
    let (c, l, h) = (counts.clone(), log.clone(), headers.clone());
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let (data, counts, log, h) = (data.clone(), c.clone(), l.clone(), h.clone());
            let state = state.clone();
            tokio::spawn(async move {
                let service = service_fn(move |req: Request<hyper::body::Incoming>| {
                    let (data, counts, log) = (data.clone(), counts.clone(), log.clone());
                    let headers = h.clone();
                    let state = state.clone();
                    async move {
                        let name = req.uri().path().trim_start_matches('/').to_string();
                        headers
                            .lock()
                            .expect("headers lock")
                            .push((name.clone(), req.headers().clone()));
                        let body = req
                            .into_body()
                            .collect()
                            .await
                            .map(|b| b.to_bytes())
                            .unwrap_or_default();
                        let reply = match (data.get(&name), counts.get(&name)) {
                            (Some(sg), Some(count)) => {
                                count.fetch_add(1, Ordering::Relaxed);
                                let request: Value =
                                    serde_json::from_slice(&body).unwrap_or(Value::Null);
                                log.lock()
                                    .expect("log lock")
                                    .push((name.clone(), request.clone()));
                                execute(sg, &request, &state)
                            }
                            _ => {
                                json!({ "errors": [{ "message": format!("no subgraph {name}") }] })
                            }
                        };
                        let bytes = serde_json::to_vec(&reply).expect("JSON serializes");
                        let mut response = Response::new(Full::new(Bytes::from(bytes)));
                        response.headers_mut().insert(
                            "content-type",
                            hyper::header::HeaderValue::from_static("application/json"),
                        );
                        Ok::<_, std::convert::Infallible>(response)
                    }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    JsonSubgraphs {
        base_url: format!("http://{addr}"),
        counts,
        log,
        headers,
    }
}

type Counters = Arc<Mutex<BTreeMap<String, i64>>>;

struct Ctx<'a> {
    doc: &'a ast::Document,
    counters: &'a Counters,
    variables: &'a Map<String, Value>,
    errors: Vec<Value>,
    /// Set by a failing non-null field (`"__nonNull": true`): its object becomes null.
    null_parent: bool,
}

fn execute(sg: &Value, request: &Value, counters: &Counters) -> Value {
    let query = request["query"].as_str().unwrap_or("");
    let empty = Map::new();
    let variables = request["variables"].as_object().unwrap_or(&empty);
    let doc = match ast::Document::parse(query, "subgraph_query.graphql") {
        Ok(doc) => doc,
        Err(e) => return json!({ "errors": [{ "message": e.errors.to_string() }] }),
    };
    if let Some(sdl) = sg.get("__validateWith").and_then(Value::as_str)
        && let Some(errors) = invalid(sdl, query)
    {
        return json!({ "errors": [{ "message": errors }] });
    }
    let Some(op) = doc.definitions.iter().find_map(|d| match d {
        Definition::OperationDefinition(op) => Some(op.clone()),
        _ => None,
    }) else {
        return json!({ "errors": [{ "message": "no operation" }] });
    };
    let root_name = match op.operation_type {
        ast::OperationType::Query => "Query",
        ast::OperationType::Mutation => "Mutation",
        ast::OperationType::Subscription => "Subscription",
    };
    let mut ctx = Ctx {
        doc: &doc,
        counters,
        variables,
        errors: Vec::new(),
        null_parent: false,
    };
    let mut data = Map::new();
    let root = sg.get(root_name).cloned().unwrap_or(json!({}));
    for sel in &op.selection_set {
        let Selection::Field(f) = sel else { continue };
        let key = f.alias.as_ref().unwrap_or(&f.name).to_string();
        let value = if f.name == "_entities" {
            let reps = argument(&ctx, f, "representations")
                .and_then(|v| v.as_array().cloned())
                .unwrap_or_default();
            let list = reps
                .iter()
                .enumerate()
                .map(|(i, rep)| {
                    let path = vec![json!("_entities"), json!(i)];
                    match find_entity(sg, rep) {
                        // An entry holding `"__error"` is a failing reference resolver.
                        Some(entity) if entity.get("__error").is_some() => {
                            let message = entity["__error"].as_str().unwrap_or("error");
                            ctx.errors.push(json!({ "message": message, "path": path }));
                            Value::Null
                        }
                        Some(entity) => {
                            resolve_object(&mut ctx, &entity, rep, &f.selection_set, &path)
                        }
                        None => Value::Null,
                    }
                })
                .collect();
            Value::Array(list)
        } else if f.name == "__typename" {
            json!(root_name)
        } else {
            let raw = by_args(
                &ctx,
                f,
                root.get(f.name.as_str()).cloned().unwrap_or(Value::Null),
            );
            let raw = counter(&ctx, f, raw);
            resolve(
                &mut ctx,
                &raw,
                &Value::Null,
                &f.selection_set,
                &[json!(key)],
            )
        };
        data.insert(key, value);
    }
    let mut out = Map::new();
    out.insert("data".into(), Value::Object(data));
    if !ctx.errors.is_empty() {
        out.insert("errors".into(), Value::Array(ctx.errors));
    }
    Value::Object(out)
}

/// Why `query` is not valid against the subgraph schema `sdl` (plain GraphQL, no
/// federation additions), if it is not.
fn invalid(sdl: &str, query: &str) -> Option<String> {
    let schema = match apollo_compiler::Schema::parse_and_validate(sdl, "subgraph.graphql") {
        Ok(schema) => schema,
        Err(e) => return Some(format!("__validateWith schema: {}", e.errors)),
    };
    apollo_compiler::ExecutableDocument::parse_and_validate(&schema, query, "query.graphql")
        .err()
        .map(|e| e.errors.to_string())
}

fn find_entity(sg: &Value, rep: &Value) -> Option<Value> {
    let typename = rep["__typename"].as_str()?;
    let candidates = sg["entities"][typename].as_array()?;
    let rep = rep.as_object()?;
    candidates
        .iter()
        .find(|e| {
            rep.iter().all(|(k, v)| match e.get(k) {
                Some(ev) if k != "__typename" => rep_matches(ev, v),
                _ => true,
            })
        })
        .cloned()
}

/// Whether a stored entity value agrees with a representation value: computed values
/// (`__rep`, `__byArgs`, `__needsRep`) agree with anything, nested objects agree on the
/// keys both hold, lists element by element, other values by equality.
fn rep_matches(stored: &Value, rep: &Value) -> bool {
    if ["__rep", "__byArgs", "__needsRep"]
        .iter()
        .any(|k| stored.get(k).is_some())
    {
        return true;
    }
    match (stored, rep) {
        (Value::Object(s), Value::Object(r)) => r
            .iter()
            .all(|(k, rv)| s.get(k).is_none_or(|sv| rep_matches(sv, rv))),
        (Value::Array(s), Value::Array(r)) if s.len() == r.len() => {
            s.iter().zip(r).all(|(sv, rv)| rep_matches(sv, rv))
        }
        _ => stored == rep,
    }
}

fn argument(ctx: &Ctx, f: &ast::Field, name: &str) -> Option<Value> {
    f.arguments
        .iter()
        .find(|a| a.name == name)
        .map(|a| to_json(ctx, &a.value))
}

fn to_json(ctx: &Ctx, v: &ast::Value) -> Value {
    match v {
        ast::Value::Null => Value::Null,
        ast::Value::Variable(n) => ctx
            .variables
            .get(n.as_str())
            .cloned()
            .unwrap_or(Value::Null),
        ast::Value::Enum(e) => json!(e.as_str()),
        ast::Value::String(s) => json!(s),
        ast::Value::Float(f) => serde_json::from_str(f.as_str()).unwrap_or(Value::Null),
        ast::Value::Int(i) => serde_json::from_str(i.as_str()).unwrap_or(Value::Null),
        ast::Value::Boolean(b) => json!(b),
        ast::Value::List(items) => Value::Array(items.iter().map(|i| to_json(ctx, i)).collect()),
        ast::Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(k, v)| (k.to_string(), to_json(ctx, v)))
                .collect(),
        ),
    }
}

/// `{"__counter": {...}}` applies its operation to the shared integer and yields the result.
fn counter(ctx: &Ctx, f: &ast::Field, raw: Value) -> Value {
    let Some(spec) = raw.get("__counter") else {
        return raw;
    };
    let arg = |name: &str| {
        spec.get(name)
            .and_then(Value::as_str)
            .and_then(|a| argument(ctx, f, a))
    };
    let key = arg("key").map(|k| k.to_string()).unwrap_or_default();
    let operand = arg("arg").and_then(|v| v.as_i64()).unwrap_or(0);
    let mut counters = ctx.counters.lock().expect("counters lock");
    let current = counters.get(&key).copied().unwrap_or(0);
    let (result, next) = match spec.get("op").and_then(Value::as_str) {
        Some("add") => (current + operand, current + operand),
        Some("multiply") => (current * operand, current * operand),
        _ => (current, 0),
    };
    counters.insert(key, next);
    json!(result)
}

/// `{"__byArgs": [...]}` picks the entry whose args equal the field's arguments.
fn by_args(ctx: &Ctx, f: &ast::Field, raw: Value) -> Value {
    let Some(entries) = raw.get("__byArgs").and_then(|e| e.as_array()) else {
        return raw;
    };
    let args: Map<String, Value> = f
        .arguments
        .iter()
        .map(|a| (a.name.to_string(), to_json(ctx, &a.value)))
        .collect();
    entries
        .iter()
        .find(|e| e["args"].as_object().is_some_and(|a| *a == args))
        .map(|e| e["value"].clone())
        .unwrap_or(Value::Null)
}

fn resolve(ctx: &mut Ctx, v: &Value, rep: &Value, sel: &[Selection], path: &[Value]) -> Value {
    if let Some(message) = v.get("__error").and_then(|m| m.as_str()) {
        ctx.errors.push(json!({ "message": message, "path": path }));
        ctx.null_parent |= v.get("__nonNull") == Some(&Value::Bool(true));
        return Value::Null;
    }
    if let Some(field) = v.get("__needsRep").and_then(|f| f.as_str()) {
        if rep.get(field).is_none_or(Value::is_null) {
            ctx.errors.push(json!({
                "message": format!("required field '{field}' not provided"),
                "path": path
            }));
            return Value::Null;
        }
        let value = v.get("value").cloned().unwrap_or(Value::Null);
        return resolve(ctx, &value, rep, sel, path);
    }
    if let Some(field) = v.get("__rep").and_then(|f| f.as_str()) {
        // A dotted path reaches into nested @requires selections.
        return field
            .split('.')
            .try_fold(rep, |v, k| match k.parse::<usize>() {
                Ok(i) if v.is_array() => v.get(i),
                _ => v.get(k),
            })
            .cloned()
            .unwrap_or(Value::Null);
    }
    match v {
        Value::Array(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    let mut p = path.to_vec();
                    p.push(json!(i));
                    resolve(ctx, item, rep, sel, &p)
                })
                .collect(),
        ),
        Value::Object(_) if !sel.is_empty() => resolve_object(ctx, v, rep, sel, path),
        other => other.clone(),
    }
}

fn resolve_object(
    ctx: &mut Ctx,
    obj: &Value,
    rep: &Value,
    sel: &[Selection],
    path: &[Value],
) -> Value {
    let mut out = Map::new();
    let outer = std::mem::replace(&mut ctx.null_parent, false);
    collect_into(ctx, obj, rep, sel, path, &mut out);
    if std::mem::replace(&mut ctx.null_parent, outer) {
        return Value::Null;
    }
    Value::Object(out)
}

fn applies(obj: &Value, type_condition: &str) -> bool {
    match obj.get("__typename").and_then(|t| t.as_str()) {
        None => true,
        Some(t) if t == type_condition => true,
        Some(_) => obj["__implements"]
            .as_array()
            .is_some_and(|i| i.iter().any(|n| n == type_condition)),
    }
}

fn collect_into(
    ctx: &mut Ctx,
    obj: &Value,
    rep: &Value,
    sel: &[Selection],
    path: &[Value],
    out: &mut Map<String, Value>,
) {
    for s in sel {
        match s {
            Selection::Field(f) => {
                let key = f.alias.as_ref().unwrap_or(&f.name).to_string();
                let mut p = path.to_vec();
                p.push(json!(key));
                let raw = by_args(
                    ctx,
                    f,
                    obj.get(f.name.as_str()).cloned().unwrap_or(Value::Null),
                );
                let value = resolve(ctx, &raw, rep, &f.selection_set, &p);
                match out.get_mut(&key) {
                    Some(Value::Object(existing)) => {
                        if let Value::Object(more) = value {
                            existing.extend(more);
                        }
                    }
                    _ => {
                        out.insert(key, value);
                    }
                }
            }
            Selection::InlineFragment(frag) => {
                if frag
                    .type_condition
                    .as_ref()
                    .is_none_or(|tc| applies(obj, tc))
                {
                    collect_into(ctx, obj, rep, &frag.selection_set, path, out);
                }
            }
            Selection::FragmentSpread(spread) => {
                let doc = ctx.doc;
                let fragment = doc.definitions.iter().find_map(|d| match d {
                    Definition::FragmentDefinition(fd) if fd.name == spread.fragment_name => {
                        Some(fd.clone())
                    }
                    _ => None,
                });
                if let Some(fd) = fragment
                    && applies(obj, &fd.type_condition)
                {
                    collect_into(ctx, obj, rep, &fd.selection_set, path, out);
                }
            }
        }
    }
}
