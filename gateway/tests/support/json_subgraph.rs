//! A JSON-backed subgraph server for the gateway tests, as strict as a real subgraph
//! (graphql-js with `@apollo/subgraph`). Each subgraph has its federation SDL and a
//! `data.json` entry; [`start_suite`] reads both from a folder (`data.json` and every
//! `<subgraph>.graphql` but `supergraph.graphql`).
//!
//! Strictness:
//! - every request is validated against the schema the subgraph serves (its SDL plus
//!   `_Any`, `_Entity`, `_entities`, `_service`, built by the loadtest crate's
//!   `subgraph_schema`), variables are coerced to their declared types; an invalid
//!   request gets `{"errors": [...]}` and no data, as graphql-js answers;
//! - execution is typed (apollo-compiler's executor): `@skip`/`@include`, fragments on
//!   abstract types, leaf coercion and non-null propagation as the spec says;
//! - an `_entities` representation must carry `__typename` and exactly the fields of one
//!   resolvable `@key` of that type, plus at most the `@requires` fields of the fields the
//!   request selects on it; anything else is an error for that representation (null item).
//!   A `__typename` that is no object or interface type fails the whole field, as
//!   `@apollo/subgraph` does.
//!
//! Data format, one entry per subgraph:
//!
//! ```json
//! { "<subgraph>": {
//!     "Query": { "field": <value>, ... },
//!     "Mutation": { ... },
//!     "entities": { "Product": [ { "__typename": "Product", "upc": "1", ... } ] } } }
//! ```
//!
//! A field a nested object's value lacks is taken from the entity entry of that object
//! (same type, matched by a key its value holds), as a per-type resolver would give it.
//! An entity is found by the key fields of its representation (an interface's entities
//! may be listed under the interface or under their object types); none found resolves
//! to null, as a reference resolver returning null. An entity entry may hold
//! `"__error": "message"` (its reference resolver throws; with no key fields beside it, for
//! every representation) or `"__reference": <expr>` (a
//! computed value, below, judged on the representation: a thrown error fails it, a falsy
//! value resolves it to null).
//!
//! Values are plain JSON (objects carry `__typename` where the field type is abstract), or:
//! - `{"__error": "message"}`: the resolver throws (null and an error at that path);
//! - `{"__byArgs": [{"args": {..}, "value": <value>}, ...]}`: the first entry whose `args`
//!   all equal the field's coerced arguments (arguments not listed match anything);
//! - `{"__compute": <expr>}`: a value computed as the audit's resolvers compute it, from the
//!   representation the gateway sent (see [`eval`]); the result may be an object too;
//! - `{"__counter": {"op": "add"|"multiply"|"take", "arg": "num", "key": "requestId"}}`
//!   (root fields): an integer per value of argument `key`, shared by all subgraphs of one
//!   server: `add`/`multiply` apply argument `arg` and return the new value, `take`
//!   returns it and resets it to 0 (stateful mutations whose results show their order).
//!
//! Computed expressions (`<expr>`), with JavaScript semantics (`undefined`, `NaN`):
//! a JSON scalar is itself, an array is the list of its evaluated items; objects are
//! operations:
//! - `{"rep": "a.b.0"}`: member access into the representation (a missing last step is
//!   `undefined`; a step through `undefined`/`null` throws the TypeError JavaScript
//!   throws); `{"rep?": "a.b"}` is optional chaining (`undefined` instead of throwing);
//! - `{"arg": "name"}`: a field argument; `{"const": <json>}`: a literal value;
//! - `{"object": {"field": e, ...}}`: an object of evaluated fields;
//! - `{"has": "path"}`: `"field" in representation` at that path;
//! - `{"typeof": e}`, `{"not": e}`, `{"isNull": e}` (`e == null`), `{"isArray": e}`;
//! - `{"mul": [e, ...]}`, `{"gt"|"ge"|"lt"|"le": [a, b]}`, `{"eq": [a, b]}` (`===`),
//!   `{"and": [e, ...]}`, `{"or": [e, ...]}` (returning the deciding operand);
//! - `{"concat": [e, ...]}`: a template string (`NaN`, `undefined` written as JavaScript does);
//! - `{"if": c, "then": e, "else": e}`: on JavaScript truthiness (`else` defaults to undefined);
//! - `{"lookup": e, "in": {"<key>": <json>, ...}}`: a table lookup (`undefined` if absent);
//! - `{"slice": [list, end]}`: `list.slice(0, end)`; `{"rep": "list.length"}` is its length;
//! - `{"throw": "message"}`: the resolver throws.
//!
//! `undefined` and `null` results are null; `NaN` for an `Int`/`Float`/`Boolean`/`String`
//! field is the serialization error graphql-js reports.

use apollo_compiler::ast;
use apollo_compiler::executable::{FieldSet, Selection, SelectionSet};
use apollo_compiler::resolvers::{Execution, FieldError, ObjectValue, ResolveInfo, ResolvedValue};
use apollo_compiler::schema::ExtendedType;
use apollo_compiler::validation::Valid;
use apollo_compiler::{ExecutableDocument, Schema};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Per subgraph name, the (name, value) headers its answers carry.
pub type ResponseHeaders = BTreeMap<String, Vec<(String, String)>>;

pub struct JsonSubgraphs {
    pub base_url: String,
    counts: Arc<BTreeMap<String, AtomicU64>>,
    /// Every request body per subgraph, in arrival order.
    pub log: Arc<Mutex<Vec<(String, Value)>>>,
    /// Every request's headers per subgraph, in arrival order.
    pub headers: Arc<Mutex<Vec<(String, hyper::HeaderMap)>>>,
    /// Every request with its answer per subgraph, in the order they were answered.
    pub replies: Arc<Mutex<Vec<(String, Value, Value)>>>,
    /// Headers each subgraph's answers carry besides `content-type` (name, value), set
    /// by the test.
    pub respond_with: Arc<Mutex<ResponseHeaders>>,
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

/// Serve the subgraphs of a folder: `data.json` and each `<subgraph>.graphql` SDL.
pub async fn start_suite(dir: &Path) -> JsonSubgraphs {
    let (data, sdls) = read_suite(dir);
    start(data, sdls).await
}

/// `data.json` and the SDL of every subgraph in `dir`.
pub fn read_suite(dir: &Path) -> (Value, BTreeMap<String, String>) {
    let read = |p: &Path| {
        std::fs::read_to_string(p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()))
    };
    let data = serde_json::from_str(&read(&dir.join("data.json"))).expect("data.json is JSON");
    let mut sdls = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("dir entry").path();
        let Some(name) = path.file_stem().map(|s| s.to_string_lossy().to_string()) else {
            continue;
        };
        if path.extension().is_some_and(|e| e == "graphql") && name != "supergraph" {
            sdls.insert(name, read(&path));
        }
    }
    (data, sdls)
}

/// Serve `data` (an object of subgraphs) with each subgraph's federation SDL; every
/// subgraph in `data` must have one, a subgraph with an SDL and no data serves nulls.
pub async fn start(data: Value, sdls: BTreeMap<String, String>) -> JsonSubgraphs {
    let data = data
        .as_object()
        .expect("data.json is an object of subgraphs");
    for name in data.keys() {
        assert!(
            sdls.contains_key(name),
            "subgraph {name} has data but no SDL"
        );
    }
    let subgraphs: Arc<BTreeMap<String, Subgraph>> = Arc::new(
        sdls.iter()
            .map(|(name, sdl)| {
                let d = data.get(name).cloned().unwrap_or(json!({}));
                (name.clone(), Subgraph::new(name, sdl, d))
            })
            .collect(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind an ephemeral loopback port");
    let addr = listener.local_addr().expect("bound address");
    let state = Counters::default();
    let counts: Arc<BTreeMap<String, AtomicU64>> = Arc::new(
        subgraphs
            .keys()
            .map(|k| (k.clone(), AtomicU64::new(0)))
            .collect(),
    );
    let log = Arc::new(Mutex::new(Vec::new()));
    let headers = Arc::new(Mutex::new(Vec::new()));
    let replies = Arc::new(Mutex::new(Vec::new()));
    let respond_with: Arc<Mutex<ResponseHeaders>> = Arc::default();
    let (c, l, h, r, w) = (
        counts.clone(),
        log.clone(),
        headers.clone(),
        replies.clone(),
        respond_with.clone(),
    );
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let (subgraphs, counts, log, h, r, w) = (
                subgraphs.clone(),
                c.clone(),
                l.clone(),
                h.clone(),
                r.clone(),
                w.clone(),
            );
            let state = state.clone();
            tokio::spawn(async move {
                let service = service_fn(move |req: Request<hyper::body::Incoming>| {
                    let (subgraphs, counts, log) = (subgraphs.clone(), counts.clone(), log.clone());
                    let (headers, replies, respond_with) = (h.clone(), r.clone(), w.clone());
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
                        let reply = match (subgraphs.get(&name), counts.get(&name)) {
                            (Some(sg), Some(count)) => {
                                count.fetch_add(1, Ordering::Relaxed);
                                let request: Value =
                                    serde_json::from_slice(&body).unwrap_or(Value::Null);
                                log.lock()
                                    .expect("log lock")
                                    .push((name.clone(), request.clone()));
                                let reply = sg.execute(&request, &state);
                                replies.lock().expect("replies lock").push((
                                    name.clone(),
                                    request,
                                    reply.clone(),
                                ));
                                reply
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
                        let extra = respond_with.lock().expect("respond_with lock");
                        for (k, v) in extra.get(&name).into_iter().flatten() {
                            response.headers_mut().append(
                                hyper::header::HeaderName::from_bytes(k.as_bytes())
                                    .expect("a header name the test set"),
                                hyper::header::HeaderValue::from_str(v)
                                    .expect("a header value the test set"),
                            );
                        }
                        drop(extra);
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
        replies,
        respond_with,
    }
}

/// State of `__counter` fields, shared by the subgraphs of one server.
pub type Counters = Arc<Mutex<BTreeMap<String, i64>>>;

/// One subgraph: the schema it serves, its federation metadata and its data.
pub struct Subgraph {
    name: String,
    schema: Valid<Schema>,
    /// Resolvable `@key` field sets per object, interface or interface-object type.
    keys: HashMap<String, Vec<Shape>>,
    /// The `@requires` field set of each `(type, field)`.
    requires: HashMap<(String, String), Shape>,
    data: Value,
}

impl Subgraph {
    /// Panics on an SDL that does not build (a bug in a committed file).
    pub fn new(name: &str, sdl: &str, data: Value) -> Self {
        let schema = graphfleet_bench_subgraphs::engine::subgraph_schema(name, sdl)
            .unwrap_or_else(|e| panic!("subgraph {name}: {e}"));
        let doc = ast::Document::parse(sdl, format!("{name}.graphql"))
            .unwrap_or_else(|e| panic!("subgraph {name}: {e}"));
        let field_set = |type_name: &apollo_compiler::Name, fields: &str, what: &str| {
            FieldSet::parse_and_validate(&schema, type_name.clone(), fields, what)
                .map(|fs| Shape::of(&fs.selection_set))
                .unwrap_or_else(|e| {
                    panic!("subgraph {name}: {what} {fields:?} on {type_name}: {e}")
                })
        };
        let mut keys: HashMap<String, Vec<Shape>> = HashMap::new();
        let mut requires = HashMap::new();
        for def in &doc.definitions {
            let (type_name, directives, fields) = match def {
                ast::Definition::ObjectTypeDefinition(d) => (&d.name, &d.directives, &d.fields),
                ast::Definition::ObjectTypeExtension(d) => (&d.name, &d.directives, &d.fields),
                ast::Definition::InterfaceTypeDefinition(d) => (&d.name, &d.directives, &d.fields),
                ast::Definition::InterfaceTypeExtension(d) => (&d.name, &d.directives, &d.fields),
                _ => continue,
            };
            for key in directives.get_all("key") {
                let resolvable = key
                    .specified_argument_by_name("resolvable")
                    .is_none_or(|v| v.to_bool() != Some(false));
                let fields = key
                    .specified_argument_by_name("fields")
                    .and_then(|v| v.as_str())
                    .expect("@key has fields");
                if resolvable {
                    let shape = field_set(type_name, fields, "@key");
                    keys.entry(type_name.to_string()).or_default().push(shape);
                }
            }
            for field in fields {
                if let Some(fields) = field
                    .directives
                    .get("requires")
                    .and_then(|r| r.specified_argument_by_name("fields"))
                    .and_then(|v| v.as_str())
                {
                    let shape = field_set(type_name, fields, "@requires");
                    requires.insert((type_name.to_string(), field.name.to_string()), shape);
                }
            }
        }
        Subgraph {
            name: name.to_owned(),
            schema,
            keys,
            requires,
            data,
        }
    }

    /// The JSON answer to a GraphQL request body, as a real subgraph gives it.
    pub fn execute(&self, request: &Value, counters: &Counters) -> Value {
        let request_error = |messages: Vec<String>| json!({ "errors": messages.into_iter().map(|m| json!({ "message": m })).collect::<Vec<_>>() });
        let Some(query) = request["query"].as_str() else {
            return request_error(vec!["Must provide query string.".into()]);
        };
        let doc =
            match ExecutableDocument::parse_and_validate(&self.schema, query, "request.graphql") {
                Ok(doc) => doc,
                Err(e) => {
                    return request_error(e.errors.iter().map(|d| d.error.to_string()).collect());
                }
            };
        let operation_name = request["operationName"].as_str();
        let variables: apollo_compiler::response::JsonMap =
            match serde_json::from_value(match &request["variables"] {
                Value::Null => json!({}),
                v => v.clone(),
            }) {
                Ok(v) => v,
                Err(e) => return request_error(vec![format!("variables: {e}")]),
            };
        let execution = match Execution::new(&self.schema, &doc).operation_name(operation_name) {
            Ok(execution) => execution.raw_variable_values(&variables),
            Err(e) => return request_error(vec![e.message().to_string()]),
        };
        let root_type = match doc.operations.get(operation_name) {
            Ok(op) => op.object_type().to_string(),
            Err(e) => return request_error(vec![e.message().to_string()]),
        };
        let ctx = Ctx {
            sg: self,
            counters,
            item_errors: Default::default(),
        };
        let root = Obj {
            ctx: &ctx,
            type_name: root_type.clone(),
            value: self.data.get(&root_type).cloned().unwrap_or(json!({})),
            rep: Rc::new(Value::Null),
            root: true,
        };
        match execution.execute_sync(&root) {
            Ok(response) => {
                let mut answer =
                    js_numbers(serde_json::to_value(&response).expect("a response serializes"));
                let mut item_errors = ctx.item_errors.borrow_mut();
                let errors = answer.get_mut("errors").and_then(Value::as_array_mut);
                for error in errors.into_iter().flatten() {
                    let message = error["message"].as_str().unwrap_or_default();
                    let failed_item = message.contains(ITEM_ERROR)
                        || message
                            .starts_with("resolver returned a leaf value but expected an object");
                    if failed_item && let Some(real) = item_errors.pop_front() {
                        error["message"] = json!(real);
                    } else if let Some(bare) = message.strip_prefix("resolver error: ") {
                        // graphql-js reports a thrown message as it is.
                        error["message"] = json!(bare.to_owned());
                    }
                }
                answer
            }
            Err(e) => request_error(vec![e.message().to_string()]),
        }
    }

    fn is_subtype(&self, abstract_type: &str, object: &str) -> bool {
        abstract_type == object
            || match self.schema.types.get(abstract_type) {
                Some(ExtendedType::Union(u)) => u.members.contains(object),
                Some(ExtendedType::Interface(_)) => self
                    .schema
                    .get_object(object)
                    .is_some_and(|o| o.implements_interfaces.contains(abstract_type)),
                _ => false,
            }
    }

    /// The fields a representation of `type_name` may carry besides a key: the
    /// `@requires` of every field of that type the `_entities` selection selects.
    fn requested_requires(&self, type_name: &str, selection: &SelectionSet) -> Shape {
        let mut shape = Shape::default();
        let mut stack = vec![selection];
        while let Some(set) = stack.pop() {
            for sel in &set.selections {
                match sel {
                    Selection::Field(f) => {
                        if self.is_subtype(set.ty.as_str(), type_name)
                            || self.is_subtype(type_name, set.ty.as_str())
                        {
                            for owner in [type_name, set.ty.as_str()] {
                                if let Some(r) =
                                    self.requires.get(&(owner.to_owned(), f.name.to_string()))
                                {
                                    shape.merge(r);
                                }
                            }
                        }
                    }
                    Selection::InlineFragment(i) => stack.push(&i.selection_set),
                    Selection::FragmentSpread(_) => {}
                }
            }
        }
        shape
    }
}

/// Whole numbers written as JavaScript's `JSON.stringify` writes them (`100`, not `100.0`).
fn js_numbers(value: Value) -> Value {
    match value {
        Value::Number(n) if n.is_f64() => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9e15 => json!(f as i64),
            _ => Value::Number(n),
        },
        Value::Array(items) => Value::Array(items.into_iter().map(js_numbers).collect()),
        Value::Object(o) => Value::Object(o.into_iter().map(|(k, v)| (k, js_numbers(v))).collect()),
        other => other,
    }
}

/// Spreads are inlined by the caller's document: [`entities`] resolves them first.
fn inline_spreads(doc: &ExecutableDocument, set: &SelectionSet) -> SelectionSet {
    let mut out = set.clone();
    out.selections = set
        .selections
        .iter()
        .map(|sel| match sel {
            Selection::FragmentSpread(s) => match doc.fragments.get(&s.fragment_name) {
                Some(f) => {
                    let mut inline =
                        apollo_compiler::executable::InlineFragment::with_type_condition(
                            f.type_condition().clone(),
                        );
                    inline.selection_set = inline_spreads(doc, &f.selection_set);
                    Selection::InlineFragment(apollo_compiler::Node::new(inline))
                }
                None => sel.clone(),
            },
            Selection::InlineFragment(i) => {
                let mut i = (**i).clone();
                i.selection_set = inline_spreads(doc, &i.selection_set);
                Selection::InlineFragment(apollo_compiler::Node::new(i))
            }
            Selection::Field(_) => sel.clone(),
        })
        .collect();
    out
}

/// The fields of a field set, as a tree of response keys (fragments merged in).
#[derive(Default, Clone, Debug)]
pub struct Shape(BTreeMap<String, Shape>);

impl Shape {
    fn of(set: &SelectionSet) -> Shape {
        let mut shape = Shape::default();
        for sel in &set.selections {
            match sel {
                Selection::Field(f) => shape
                    .0
                    .entry(f.response_key().to_string())
                    .or_default()
                    .merge(&Shape::of(&f.selection_set)),
                Selection::InlineFragment(i) => shape.merge(&Shape::of(&i.selection_set)),
                Selection::FragmentSpread(_) => {}
            }
        }
        shape
    }

    fn merge(&mut self, other: &Shape) {
        for (k, v) in &other.0 {
            self.0.entry(k.clone()).or_default().merge(v);
        }
    }

    /// Whether `value` holds every field of this shape (nested objects and lists too).
    fn covered_by(&self, value: &Value) -> bool {
        match value {
            Value::Array(items) => items.iter().all(|i| self.covered_by(i)),
            Value::Object(o) => self
                .0
                .iter()
                .all(|(k, sub)| o.get(k).is_some_and(|v| sub.covered_by(v))),
            _ => true,
        }
    }

    /// Whether `value` holds nothing but this shape's fields (and `__typename`).
    fn covers(&self, value: &Value) -> bool {
        match value {
            Value::Array(items) => items.iter().all(|i| self.covers(i)),
            Value::Object(o) => o
                .iter()
                .all(|(k, v)| k == "__typename" || self.0.get(k).is_some_and(|sub| sub.covers(v))),
            _ => true,
        }
    }

    /// Whether a stored entity and a representation agree on this shape's fields.
    fn same(&self, stored: &Value, rep: &Value) -> bool {
        match (stored, rep) {
            (Value::Array(s), Value::Array(r)) => {
                s.len() == r.len() && s.iter().zip(r).all(|(s, r)| self.same(s, r))
            }
            (Value::Object(s), Value::Object(r)) if !self.0.is_empty() => {
                self.0.iter().all(|(k, sub)| {
                    sub.same(
                        s.get(k).unwrap_or(&Value::Null),
                        r.get(k).unwrap_or(&Value::Null),
                    )
                })
            }
            _ => stored == rep,
        }
    }
}

struct Ctx<'a> {
    sg: &'a Subgraph,
    counters: &'a Counters,
    /// Messages of failed list items, in the order the executor reports them.
    item_errors: std::cell::RefCell<std::collections::VecDeque<String>>,
}

/// Marks a failed list item of a leaf type (see [`Obj::item`]).
const ITEM_ERROR: &str = "__json_subgraph_item_error";

/// An object being resolved: its stored value and the representation of the entity
/// it belongs to (null outside `_entities`), which computed values read.
struct Obj<'a> {
    ctx: &'a Ctx<'a>,
    type_name: String,
    value: Value,
    rep: Rc<Value>,
    root: bool,
}

fn field_error(message: impl Into<String>) -> FieldError {
    FieldError {
        message: message.into(),
    }
}

impl ObjectValue for Obj<'_> {
    fn type_name(&self) -> &str {
        &self.type_name
    }

    fn resolve_field<'a>(
        &'a self,
        info: &'a ResolveInfo<'a>,
    ) -> Result<ResolvedValue<'a>, FieldError> {
        let args: Value = serde_json::to_value(info.arguments()).expect("arguments are JSON");
        let ty = &info.field_definition().ty;
        if self.root && info.field_name() == "_entities" {
            return self.entities(info, &args);
        }
        if self.root && info.field_name() == "_service" {
            let service = json!({ "__typename": "_Service", "sdl": null });
            return self.complete(service, ty, &args);
        }
        let raw = match self.value.get(info.field_name()) {
            Some(v) => v.clone(),
            None if !self.root => self.field_of_own_entity(info.field_name()),
            None => Value::Null,
        };
        let raw = if self.root {
            self.counter(raw, &args)
        } else {
            raw
        };
        self.complete(raw, ty, &args)
    }
}

impl<'a> Obj<'a> {
    /// A field a nested object's value does not hold, from this subgraph's entity entry
    /// of the same object (found by a key its value holds): the audit's subgraphs resolve
    /// such fields per type (e.g. `Comment.sameCommentOnOtherPosts` by the comment's id),
    /// for nested objects as for references. Null when there is none.
    fn field_of_own_entity(&self, field: &str) -> Value {
        let sg = self.ctx.sg;
        let entity = sg
            .keys
            .get(&self.type_name)
            .into_iter()
            .flatten()
            .filter(|key| key.covered_by(&self.value))
            .find_map(|key| find_entity(sg, &self.type_name, key, &self.value));
        entity
            .and_then(|e| e.get(field).cloned())
            .unwrap_or(Value::Null)
    }

    fn child(&self, type_name: String, value: Value, rep: Rc<Value>) -> Obj<'a> {
        Obj {
            ctx: self.ctx,
            type_name,
            value,
            rep,
            root: false,
        }
    }

    /// A stored value turned into what the executor completes for type `ty`.
    fn complete<'b>(
        &self,
        raw: Value,
        ty: &apollo_compiler::ast::Type,
        args: &Value,
    ) -> Result<ResolvedValue<'b>, FieldError>
    where
        'a: 'b,
    {
        let value = self.evaluate(raw, args, ty)?;
        if value.is_null() {
            return Ok(ResolvedValue::null());
        }
        if ty.is_list() {
            let Value::Array(items) = value else {
                return Err(field_error(format!(
                    "Expected Iterable, but did not find one for a field of type {ty}."
                )));
            };
            let inner = ty.item_type().clone();
            let me = self.child(self.type_name.clone(), Value::Null, self.rep.clone());
            let args = args.clone();
            return Ok(ResolvedValue::List(Box::new(items.into_iter().map(
                move |item| me.item(me.complete(item, &inner, &args), &inner),
            ))));
        }
        let named = ty.inner_named_type();
        match self.ctx.sg.schema.types.get(named) {
            Some(ExtendedType::Object(_))
            | Some(ExtendedType::Interface(_))
            | Some(ExtendedType::Union(_)) => {
                let concrete = match value.get("__typename").and_then(Value::as_str) {
                    Some(t) => t.to_owned(),
                    None if self.ctx.sg.schema.get_object(named).is_some() => named.to_string(),
                    None => {
                        return Err(field_error(format!(
                            "Abstract type \"{named}\" must resolve to an Object type at runtime. Either the \"{named}\" type should provide a \"resolveType\" function or each possible type should provide an \"isTypeOf\" function."
                        )));
                    }
                };
                Ok(ResolvedValue::object(self.child(
                    concrete,
                    value,
                    self.rep.clone(),
                )))
            }
            // graphql-js serializes an integer as a Float; the executor here wants an f64
            // (written back as JavaScript writes whole numbers, in `js_numbers`).
            _ if named == "Float" && (value.is_i64() || value.is_u64()) => Ok(ResolvedValue::leaf(
                value.as_f64().expect("an integer is an f64"),
            )),
            _ => Ok(ResolvedValue::Leaf(
                serde_json::from_value(value).expect("JSON converts"),
            )),
        }
    }

    /// Applies the stored value's directives (`__error`, `__byArgs`, `__compute`).
    fn evaluate(&self, raw: Value, args: &Value, ty: &ast::Type) -> Result<Value, FieldError> {
        if let Some(message) = raw.get("__error") {
            return Err(field_error(message.as_str().unwrap_or("error")));
        }
        if let Some(entries) = raw.get("__byArgs").and_then(Value::as_array) {
            let chosen = entries
                .iter()
                .find(|e| {
                    e["args"]
                        .as_object()
                        .is_some_and(|a| a.iter().all(|(k, v)| args.get(k) == Some(v)))
                })
                .map(|e| e["value"].clone())
                .unwrap_or(Value::Null);
            return self.evaluate(chosen, args, ty);
        }
        if let Some(expr) = raw.get("__compute") {
            let value = eval(expr, &self.rep, args).map_err(field_error)?;
            return value.into_json(ty.inner_named_type()).map_err(field_error);
        }
        Ok(raw)
    }

    /// `{"__counter": {...}}` applies its operation to the shared integer.
    fn counter(&self, raw: Value, args: &Value) -> Value {
        let Some(spec) = raw.get("__counter") else {
            return raw;
        };
        let arg = |name: &str| {
            spec.get(name)
                .and_then(Value::as_str)
                .and_then(|a| args.get(a))
        };
        let key = arg("key").map(|k| k.to_string()).unwrap_or_default();
        let operand = arg("arg").and_then(Value::as_i64).unwrap_or(0);
        let mut counters = self.ctx.counters.lock().expect("counters lock");
        let current = counters.get(&key).copied().unwrap_or(0);
        let (result, next) = match spec.get("op").and_then(Value::as_str) {
            Some("add") => (current + operand, current + operand),
            Some("multiply") => (current * operand, current * operand),
            _ => (current, 0),
        };
        counters.insert(key, next);
        json!(result)
    }

    fn entities<'b>(
        &self,
        info: &'b ResolveInfo<'b>,
        args: &Value,
    ) -> Result<ResolvedValue<'b>, FieldError>
    where
        'a: 'b,
    {
        let sg = self.ctx.sg;
        let reps = args["representations"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        // As `@apollo/subgraph`: an unknown `__typename` fails the whole field.
        for rep in &reps {
            let t = rep["__typename"].as_str().unwrap_or("");
            if !matches!(
                sg.schema.types.get(t),
                Some(ExtendedType::Object(_)) | Some(ExtendedType::Interface(_))
            ) {
                return Err(field_error(format!(
                    "The _entities resolver tried to load an entity for type \"{t}\", but no object or interface type of that name was found in the schema"
                )));
            }
        }
        let selection = info
            .field_selections()
            .iter()
            .fold(None::<SelectionSet>, |acc, f| {
                let set = inline_spreads(info.document(), &f.selection_set);
                Some(match acc {
                    Some(mut a) => {
                        a.selections.extend(set.selections);
                        a
                    }
                    None => set,
                })
            })
            .expect("a field has a selection");
        let me = self.child(self.type_name.clone(), Value::Null, self.rep.clone());
        let item_type = info.field_definition().ty.item_type().clone();
        Ok(ResolvedValue::List(Box::new(reps.into_iter().map(
            move |rep| me.item(me.entity(rep, &selection), &item_type),
        ))))
    }

    /// Resolves one `_entities` representation, as a strict reference resolver.
    fn entity<'b>(
        &self,
        rep: Value,
        selection: &SelectionSet,
    ) -> Result<ResolvedValue<'b>, FieldError>
    where
        'a: 'b,
    {
        let sg = self.ctx.sg;
        let t = rep["__typename"].as_str().unwrap_or("").to_owned();
        let allowed = sg.requested_requires(&t, selection);
        let key = sg
            .keys
            .get(&t)
            .into_iter()
            .flatten()
            .find(|key| {
                let mut all = (*key).clone();
                all.merge(&allowed);
                key.covered_by(&rep) && all.covers(&rep)
            })
            .ok_or_else(|| {
                field_error(format!(
                    "subgraph {}: representation {rep} is not a @key of {t} (plus the @requires of the selected fields)",
                    sg.name
                ))
            })?;
        let Some(entity) = find_entity(sg, &t, key, &rep) else {
            return Ok(ResolvedValue::null());
        };
        if let Some(message) = entity.get("__error") {
            return Err(field_error(message.as_str().unwrap_or("error")));
        }
        let rep = Rc::new(rep);
        if let Some(expr) = entity.get("__reference") {
            let ok = eval(expr, &rep, &Value::Null).map_err(field_error)?;
            if !ok.truthy() {
                return Ok(ResolvedValue::null());
            }
        }
        let concrete = match entity.get("__typename").and_then(Value::as_str) {
            Some(c) => c.to_owned(),
            None if sg.schema.get_object(&t).is_some() => t.clone(),
            None => {
                return Err(field_error(format!(
                    "Abstract type \"{t}\" `__resolveReference` method must resolve to an Object type at runtime."
                )));
            }
        };
        Ok(ResolvedValue::object(self.child(concrete, entity, rep)))
    }

    /// A list item that failed: the executor here would null the whole list, graphql-js
    /// nulls the item (when nullable). So the item becomes a value the executor rejects
    /// at the item's path, and [`Subgraph::execute`] puts the real message back.
    fn item<'b>(
        &self,
        result: Result<ResolvedValue<'b>, FieldError>,
        item_type: &ast::Type,
    ) -> Result<ResolvedValue<'b>, FieldError> {
        result.or_else(|e| {
            self.ctx.item_errors.borrow_mut().push_back(e.message);
            let composite = matches!(
                self.ctx.sg.schema.types.get(item_type.inner_named_type()),
                Some(ExtendedType::Object(_) | ExtendedType::Interface(_) | ExtendedType::Union(_))
            );
            Ok(ResolvedValue::Leaf(if composite {
                serde_json_bytes::Value::Bool(false)
            } else {
                serde_json_bytes::json!({ ITEM_ERROR: true })
            }))
        })
    }
}

/// The stored entity of type `t` whose `key` fields equal the representation's: first
/// from the list of `t` itself, then from the lists of its subtypes or supertypes.
fn find_entity(sg: &Subgraph, t: &str, key: &Shape, rep: &Value) -> Option<Value> {
    let entities = sg.data.get("entities")?.as_object()?;
    let own = entities.get(t).into_iter().map(|list| (t, list));
    let related = entities
        .iter()
        .filter(|(listed, _)| {
            *listed != t && (sg.is_subtype(t, listed) || sg.is_subtype(listed, t))
        })
        .map(|(listed, list)| (listed.as_str(), list));
    own.chain(related)
        .flat_map(|(listed, list)| {
            list.as_array()
                .into_iter()
                .flatten()
                .map(move |e| (listed, e))
        })
        .find(|(listed, e)| {
            let typename = e
                .get("__typename")
                .and_then(Value::as_str)
                .unwrap_or(listed);
            // An entry with an error and no key fields is a reference resolver that
            // throws whatever it is given (the audit's "You should be using ...").
            let throws_for_any = e.get("__error").is_some()
                && e.as_object()
                    .is_some_and(|o| o.keys().all(|k| k.starts_with("__")));
            sg.is_subtype(t, typename) && (throws_for_any || key.same(e, rep))
        })
        .map(|(_, e)| e.clone())
}

/// A JavaScript value, as the audit's resolvers see it.
#[derive(Clone, Debug, PartialEq)]
enum Js {
    Undefined,
    Num(f64),
    Json(Value),
}

impl Js {
    fn from_json(v: Value) -> Js {
        match v {
            Value::Number(n) => Js::Num(n.as_f64().expect("a JSON number is an f64")),
            other => Js::Json(other),
        }
    }

    fn truthy(&self) -> bool {
        match self {
            Js::Undefined => false,
            Js::Num(n) => *n != 0.0 && !n.is_nan(),
            Js::Json(Value::Null) => false,
            Js::Json(Value::Bool(b)) => *b,
            Js::Json(Value::String(s)) => !s.is_empty(),
            Js::Json(_) => true,
        }
    }

    fn is_nullish(&self) -> bool {
        matches!(self, Js::Undefined | Js::Json(Value::Null))
    }

    /// JavaScript's ToNumber, for arithmetic.
    fn number(&self) -> f64 {
        match self {
            Js::Undefined => f64::NAN,
            Js::Num(n) => *n,
            Js::Json(Value::Null) => 0.0,
            Js::Json(Value::Bool(b)) => f64::from(u8::from(*b)),
            Js::Json(Value::String(s)) => s.trim().parse().unwrap_or(f64::NAN),
            Js::Json(_) => f64::NAN,
        }
    }

    /// JavaScript's ToString, for template strings.
    fn string(&self) -> String {
        match self {
            Js::Undefined => "undefined".into(),
            Js::Num(n) if n.is_nan() => "NaN".into(),
            Js::Num(n) if n.fract() == 0.0 && n.abs() < 1e21 => format!("{}", *n as i64),
            Js::Num(n) => n.to_string(),
            Js::Json(Value::String(s)) => s.clone(),
            Js::Json(Value::Null) => "null".into(),
            Js::Json(Value::Array(items)) => items
                .iter()
                .map(|i| match i {
                    Value::Null => String::new(),
                    v => Js::from_json(v.clone()).string(),
                })
                .collect::<Vec<_>>()
                .join(","),
            Js::Json(Value::Object(_)) => "[object Object]".into(),
            Js::Json(v) => v.to_string(),
        }
    }

    fn type_of(&self) -> &'static str {
        match self {
            Js::Undefined => "undefined",
            Js::Num(_) => "number",
            Js::Json(Value::Bool(_)) => "boolean",
            Js::Json(Value::String(_)) => "string",
            Js::Json(_) => "object",
        }
    }

    /// The field's result, with graphql-js's serialization error for `NaN`.
    fn into_json(self, leaf_type: &str) -> Result<Value, String> {
        match self {
            Js::Undefined => Ok(Value::Null),
            Js::Num(n) if !n.is_finite() => Err(match leaf_type {
                "Int" => format!("Int cannot represent non-integer value: {}", self.string()),
                "Float" => format!(
                    "Float cannot represent non numeric value: {}",
                    self.string()
                ),
                "Boolean" => format!(
                    "Boolean cannot represent a non boolean value: {}",
                    self.string()
                ),
                _ => format!("{leaf_type} cannot represent value: {}", self.string()),
            }),
            Js::Num(n) if n.fract() == 0.0 && n.abs() < 9e15 => Ok(json!(n as i64)),
            Js::Num(n) => Ok(json!(n)),
            Js::Json(v) => Ok(v),
        }
    }
}

/// JavaScript member access along a dotted path; `optional` is `?.` at every step.
fn member(root: &Value, path: &str, optional: bool) -> Result<Js, String> {
    let mut current = Js::Json(root.clone());
    for step in path.split('.').filter(|s| !s.is_empty()) {
        current = match current {
            Js::Json(Value::Object(o)) => o.get(step).cloned().map_or(Js::Undefined, Js::from_json),
            Js::Json(Value::Array(items)) if step == "length" => Js::Num(items.len() as f64),
            Js::Json(Value::Array(items)) => step
                .parse::<usize>()
                .ok()
                .and_then(|i| items.get(i).cloned())
                .map_or(Js::Undefined, Js::from_json),
            Js::Undefined | Js::Json(Value::Null) if optional => return Ok(Js::Undefined),
            Js::Undefined => {
                return Err(format!(
                    "Cannot read properties of undefined (reading '{step}')"
                ));
            }
            Js::Json(Value::Null) => {
                return Err(format!("Cannot read properties of null (reading '{step}')"));
            }
            _ => Js::Undefined,
        };
    }
    Ok(current)
}

/// Evaluates a computed expression (see the module documentation).
fn eval(expr: &Value, rep: &Value, args: &Value) -> Result<Js, String> {
    let op = match expr {
        Value::Object(op) => op,
        Value::Array(items) => {
            let items = items
                .iter()
                .map(|e| eval(e, rep, args)?.into_json("list item"))
                .collect::<Result<_, _>>()?;
            return Ok(Js::Json(Value::Array(items)));
        }
        other => return Ok(Js::from_json(other.clone())),
    };
    let list = |key: &str| -> Result<Vec<Js>, String> {
        op[key]
            .as_array()
            .ok_or_else(|| format!("{key} takes a list"))?
            .iter()
            .map(|e| eval(e, rep, args))
            .collect()
    };
    let pair = |key: &str| -> Result<(Js, Js), String> {
        let l = list(key)?;
        match <[Js; 2]>::try_from(l) {
            Ok([a, b]) => Ok((a, b)),
            Err(_) => Err(format!("{key} takes two operands")),
        }
    };
    let compare = |key: &str, f: fn(f64, f64) -> bool| -> Result<Js, String> {
        let (a, b) = pair(key)?;
        Ok(Js::Json(Value::Bool(f(a.number(), b.number()))))
    };
    const OPERATIONS: &[&str] = &[
        "rep", "rep?", "has", "arg", "const", "object", "isArray", "typeof", "not", "isNull",
        "mul", "gt", "ge", "lt", "le", "eq", "and", "or", "concat", "if", "lookup", "slice",
        "throw",
    ];
    let name = OPERATIONS
        .iter()
        .find(|o| op.contains_key(**o))
        .ok_or_else(|| format!("no known operation in {expr}"))?;
    match *name {
        "rep" | "rep?" => member(
            rep,
            op[*name].as_str().ok_or("rep takes a path")?,
            *name == "rep?",
        ),
        "has" => {
            let path = op["has"].as_str().ok_or("has takes a path")?;
            let (parent, last) = path.rsplit_once('.').unwrap_or(("", path));
            Ok(Js::Json(Value::Bool(matches!(
                member(rep, parent, false)?,
                Js::Json(Value::Object(o)) if o.contains_key(last)
            ))))
        }
        "arg" => Ok(args
            .get(op["arg"].as_str().ok_or("arg takes a name")?)
            .cloned()
            .map_or(Js::Undefined, Js::from_json)),
        "const" => Ok(Js::from_json(op["const"].clone())),
        "object" => {
            let fields = op["object"].as_object().ok_or("object takes an object")?;
            let mut out = serde_json::Map::new();
            for (k, e) in fields {
                out.insert(k.clone(), eval(e, rep, args)?.into_json(k)?);
            }
            Ok(Js::Json(Value::Object(out)))
        }
        "isArray" => Ok(Js::Json(json!(matches!(
            eval(&op["isArray"], rep, args)?,
            Js::Json(Value::Array(_))
        )))),
        "typeof" => Ok(Js::Json(json!(eval(&op["typeof"], rep, args)?.type_of()))),
        "not" => Ok(Js::Json(json!(!eval(&op["not"], rep, args)?.truthy()))),
        "isNull" => Ok(Js::Json(json!(
            eval(&op["isNull"], rep, args)?.is_nullish()
        ))),
        "mul" => Ok(Js::Num(list("mul")?.iter().map(Js::number).product())),
        "gt" => compare("gt", |a, b| a > b),
        "ge" => compare("ge", |a, b| a >= b),
        "lt" => compare("lt", |a, b| a < b),
        "le" => compare("le", |a, b| a <= b),
        "eq" => {
            let (a, b) = pair("eq")?;
            Ok(Js::Json(json!(a == b)))
        }
        "and" => {
            let mut last = Js::Json(json!(true));
            for e in op["and"].as_array().ok_or("and takes a list")? {
                last = eval(e, rep, args)?;
                if !last.truthy() {
                    break;
                }
            }
            Ok(last)
        }
        "or" => {
            let mut last = Js::Json(json!(false));
            for e in op["or"].as_array().ok_or("or takes a list")? {
                last = eval(e, rep, args)?;
                if last.truthy() {
                    break;
                }
            }
            Ok(last)
        }
        "concat" => Ok(Js::Json(Value::String(
            list("concat")?.iter().map(Js::string).collect(),
        ))),
        "if" => {
            if eval(&op["if"], rep, args)?.truthy() {
                eval(&op["then"], rep, args)
            } else {
                op.get("else")
                    .map_or(Ok(Js::Undefined), |e| eval(e, rep, args))
            }
        }
        "lookup" => {
            let key = eval(&op["lookup"], rep, args)?;
            Ok(op["in"]
                .get(key.string())
                .cloned()
                .filter(|_| !key.is_nullish())
                .map_or(Js::Undefined, Js::from_json))
        }
        "slice" => {
            let (items, end) = pair("slice")?;
            let Js::Json(Value::Array(items)) = items else {
                return Err("slice takes a list".into());
            };
            let end = end.number();
            let end = if end.is_nan() {
                0
            } else {
                end.max(0.0) as usize
            };
            Ok(Js::Json(Value::Array(
                items.into_iter().take(end).collect(),
            )))
        }
        "throw" => Err(op["throw"].as_str().unwrap_or("error").to_owned()),
        other => Err(format!("unknown computed operation {other}")),
    }
}
