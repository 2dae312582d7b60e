//! A small GraphQL executor for the fixed benchmark schemas: operations are parsed
//! and validated with apollo-compiler once per query text, then walked against
//! hand-written resolvers that write JSON directly.

mod exec;
mod plan;
mod schema;

use std::borrow::Cow;
use std::sync::Arc;

use apollo_compiler::ast::OperationType;
use apollo_compiler::executable::ExecutableDocument;
use apollo_compiler::validation::Valid;
use apollo_compiler::{Schema, response::GraphQLError};
use parking_lot::RwLock;
use rustc_hash::FxHashMap;
use serde::Deserialize;
use serde_json::{Map, Value};

pub use exec::{Args, Object, Val};
pub use schema::{SchemaError, api_schema, subgraph_schema};

use exec::{Executor, Vars};
use plan::Compiled;

/// Distinct query texts kept compiled; the gateway sends a handful, so this only
/// bounds memory against clients that send endless different queries.
const CACHE_CAPACITY: usize = 1024;
/// Responses are cut off beyond this size by default (the biggest scenario is
/// ~8 MiB), so a query multiplying list sizes cannot exhaust memory.
const DEFAULT_MAX_RESPONSE: usize = 256 << 20;

/// The resolvers of one endpoint (a subgraph or a monolith).
pub trait Service: Send + Sync {
    /// The root `Query` object.
    fn query(&self) -> Box<dyn Object<'_> + '_>;

    /// Resolves one `_entities` representation (subgraphs only).
    fn entity(&self, representation: &Value) -> Val<'_> {
        let _ = representation;
        Val::Err("This subgraph has no entities.".into())
    }

    /// Creates the source stream of the subscription root field `field`: how many events
    /// it sends before completing (`None`: endless), or a field error (bad arguments).
    fn subscribe(&self, field: &str, args: &Args<'_>) -> Result<Option<u64>, String> {
        let _ = args;
        Err(format!("No subscription field \"{field}\" here."))
    }

    /// The root `Subscription` object of event `index` (0-based, counted per subscription),
    /// which the subscription's selection set is executed against.
    fn event(&self, index: u64) -> Box<dyn Object<'_> + '_> {
        let _ = index;
        Box::new(NoEvent)
    }
}

struct NoEvent;

impl<'a> Object<'a> for NoEvent {
    fn typename(&self) -> &'a str {
        "Subscription"
    }

    fn field(&self, _name: &str, _args: &Args<'_>) -> Val<'a> {
        Val::Err("This endpoint has no subscription events.".into())
    }
}

/// What [`Endpoint::start`] made of a request.
pub enum Execution {
    /// A single result (query or mutation, or a subscription whose source stream failed):
    /// the complete `{"data":…}` body.
    Response(Vec<u8>),
    /// Refused before execution (unparsable, invalid, unknown operation): the errors
    /// (`{"errors":[…]}` with status 400 over plain HTTP).
    Refused(Vec<GraphQLError>),
    /// A subscription: its events are produced by [`EventStream::next_event`].
    Stream(EventStream),
}

/// A running subscription of one endpoint: the compiled operation, the request's
/// variables and how many events were produced so far.
pub struct EventStream {
    compiled: Arc<Compiled>,
    operation: usize,
    variables: Option<Map<String, Value>>,
    limit: Option<u64>,
    sent: u64,
}

impl EventStream {
    /// True once `limit` events were produced (never for an endless stream).
    pub fn is_done(&self) -> bool {
        self.limit.is_some_and(|limit| self.sent >= limit)
    }

    /// Events produced so far.
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// The next event's payload, `{"data":{"<field>":…}}` (the selection set executed
    /// against the event's root value), or `None` when the stream is complete.
    /// `endpoint` must be the one that started the stream.
    pub fn next_event(&mut self, endpoint: &Endpoint) -> Option<Vec<u8>> {
        if self.is_done() {
            return None;
        }
        let plan = &self.compiled.operations[self.operation];
        let vars = Vars {
            given: self.variables.as_ref(),
            defaults: &plan.variable_defaults,
        };
        let root = endpoint.service.event(self.sent);
        self.sent += 1;
        Some(Executor::run(
            plan,
            root.as_ref(),
            &vars,
            endpoint.max_response,
        ))
    }
}

/// Refusal for a subscription sent as a plain (single-response) HTTP request.
const SUBSCRIPTION_OVER_HTTP: &str = "Subscription operations need a streaming transport: \
     a WebSocket with the graphql-transport-ws subprotocol, or a POST with \
     `Accept: text/event-stream` (GraphQL over SSE) or \
     `Accept: multipart/mixed;subscriptionSpec=\"1.0\"`.";

/// One GraphQL endpoint: schema, resolvers and the operation cache.
pub struct Endpoint {
    name: String,
    sdl: Option<String>,
    schema: Valid<Schema>,
    service: Box<dyn Service>,
    cache: RwLock<FxHashMap<String, Arc<Compiled>>>,
    max_response: usize,
}

/// An HTTP status and a JSON body.
pub struct Reply {
    pub status: u16,
    pub body: Vec<u8>,
}

#[derive(Deserialize)]
struct Request<'a> {
    #[serde(borrow)]
    query: Option<Cow<'a, str>>,
    #[serde(default, rename = "operationName")]
    operation_name: Option<Cow<'a, str>>,
    #[serde(default)]
    variables: Option<Map<String, Value>>,
}

fn request_error(messages: impl IntoIterator<Item = GraphQLError>) -> Reply {
    let errors: Vec<GraphQLError> = messages.into_iter().collect();
    let body = serde_json::to_vec(&serde_json::json!({ "errors": errors }))
        .unwrap_or_else(|_| br#"{"errors":[{"message":"internal error"}]}"#.to_vec());
    Reply { status: 400, body }
}

fn message(text: impl Into<String>) -> GraphQLError {
    GraphQLError::new(text.into(), None, &Default::default())
}

impl Endpoint {
    /// A subgraph endpoint: serves `_service { sdl }` with `sdl` and `_entities` via `service`.
    pub fn subgraph(name: &str, sdl: &str, service: Box<dyn Service>) -> Result<Self, SchemaError> {
        Ok(Self {
            name: name.to_owned(),
            sdl: Some(sdl.to_owned()),
            schema: subgraph_schema(name, sdl)?,
            service,
            cache: RwLock::default(),
            max_response: DEFAULT_MAX_RESPONSE,
        })
    }

    /// A monolith endpoint serving the API schema of `supergraph`.
    pub fn monolith(
        name: &str,
        supergraph: &str,
        service: Box<dyn Service>,
    ) -> Result<Self, SchemaError> {
        Ok(Self {
            name: name.to_owned(),
            sdl: None,
            schema: api_schema(name, supergraph)?,
            service,
            cache: RwLock::default(),
            max_response: DEFAULT_MAX_RESPONSE,
        })
    }

    /// Sets the response size beyond which execution stops with an error.
    pub fn with_max_response(mut self, bytes: usize) -> Self {
        self.max_response = bytes;
        self
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// True when the schema has a `Subscription` root type.
    pub fn has_subscriptions(&self) -> bool {
        self.schema.schema_definition.subscription.is_some()
    }

    /// Handles one GraphQL-over-HTTP JSON request body. Never panics on bad input:
    /// malformed requests get a 400 with `errors`, field errors a 200 with `errors`.
    /// Subscriptions are refused (400) with [`SUBSCRIPTION_OVER_HTTP`].
    pub fn handle(&self, body: &[u8]) -> Reply {
        let request: Request<'_> = match serde_json::from_slice(body) {
            Ok(r) => r,
            Err(e) => return request_error([message(format!("Invalid JSON request body: {e}"))]),
        };
        let Some(query) = request.query else {
            return request_error([message("Missing \"query\" in the request body.")]);
        };
        let compiled = match self.compiled(&query) {
            Ok(c) => c,
            Err(errors) => return request_error(errors),
        };
        let plan = match compiled.operation(request.operation_name.as_deref()) {
            Ok(p) => p,
            Err(e) => return request_error([message(e)]),
        };
        match plan.kind {
            OperationType::Query => {}
            OperationType::Subscription => {
                return request_error([message(SUBSCRIPTION_OVER_HTTP)]);
            }
            OperationType::Mutation => {
                return request_error([message("Only query operations are supported.")]);
            }
        }
        let body = self.run_query(plan, request.variables.as_ref());
        Reply { status: 200, body }
    }

    fn run_query(&self, plan: &plan::Plan, variables: Option<&Map<String, Value>>) -> Vec<u8> {
        let vars = Vars {
            given: variables,
            defaults: &plan.variable_defaults,
        };
        let root = Root {
            endpoint: self,
            inner: self.service.query(),
        };
        Executor::run(plan, &root, &vars, self.max_response)
    }

    /// Starts any operation from a GraphQL request JSON object (a POST body, or the
    /// `payload` of a graphql-transport-ws `subscribe` message) for a streaming transport.
    pub fn start(&self, request: &[u8]) -> Execution {
        let request: Request<'_> = match serde_json::from_slice(request) {
            Ok(r) => r,
            Err(e) => {
                return Execution::Refused(vec![message(format!("Invalid GraphQL request: {e}"))]);
            }
        };
        let Some(query) = request.query else {
            return Execution::Refused(vec![message("Missing \"query\" in the request.")]);
        };
        let compiled = match self.compiled(&query) {
            Ok(c) => c,
            Err(errors) => return Execution::Refused(errors),
        };
        let operation = match request.operation_name.as_deref() {
            Some(name) => compiled
                .operations
                .iter()
                .position(|op| op.name.as_deref() == Some(name)),
            None => (compiled.operations.len() == 1).then_some(0),
        };
        let Some(operation) = operation else {
            let error = compiled
                .operation(request.operation_name.as_deref())
                .err()
                .unwrap_or_default();
            return Execution::Refused(vec![message(error)]);
        };
        let plan = &compiled.operations[operation];
        match plan.kind {
            OperationType::Query => {
                return Execution::Response(self.run_query(plan, request.variables.as_ref()));
            }
            OperationType::Mutation => {
                return Execution::Refused(vec![message("Only query operations are supported.")]);
            }
            OperationType::Subscription => {}
        }
        let vars = Vars {
            given: request.variables.as_ref(),
            defaults: &plan.variable_defaults,
        };
        // Validation leaves exactly one root field; a skipped one leaves nothing to stream.
        let Some(field) = plan.fields.iter().find(|f| {
            f.conditions.iter().all(|c| {
                vars.get(&c.variable)
                    .and_then(Value::as_bool)
                    .unwrap_or(false)
                    == c.include_when
            })
        }) else {
            return Execution::Refused(vec![message(
                "The subscription's root field is skipped: nothing to subscribe to.",
            )]);
        };
        let args = Args::new(&field.args, &vars);
        let limit = match self.service.subscribe(&field.name, &args) {
            Ok(limit) => limit,
            Err(error) => {
                // A source stream that cannot be created is an execution error of the
                // root field: one response with `data: null`.
                let body = serde_json::json!({
                    "data": null,
                    "errors": [{ "message": error, "path": [&*field.key] }],
                });
                return Execution::Response(body.to_string().into_bytes());
            }
        };
        let variables = request.variables;
        Execution::Stream(EventStream {
            compiled: compiled.clone(),
            operation,
            variables,
            limit,
            sent: 0,
        })
    }

    fn compiled(&self, query: &str) -> Result<Arc<Compiled>, Vec<GraphQLError>> {
        if let Some(c) = self.cache.read().get(query) {
            return Ok(c.clone());
        }
        let doc = ExecutableDocument::parse_and_validate(&self.schema, query, "request.graphql")
            .map_err(|e| e.errors.iter().map(|d| d.to_json()).collect::<Vec<_>>())?;
        let compiled = Arc::new(plan::compile(&self.schema, &doc).map_err(|e| vec![message(e)])?);
        self.remember(query, compiled.clone());
        Ok(compiled)
    }

    fn remember(&self, query: &str, compiled: Arc<Compiled>) {
        let mut cache = self.cache.write();
        if cache.len() >= CACHE_CAPACITY {
            cache.clear();
        }
        cache.insert(query.to_owned(), compiled);
    }

    /// Compiles `query` (for tests and benchmarks that want validation errors directly).
    pub fn validate(&self, query: &str) -> Result<(), Vec<String>> {
        self.compiled(query)
            .map(|_| ())
            .map_err(|errors| errors.into_iter().map(|e| e.message).collect())
    }
}

/// The root `Query`: federation fields first, then the service's own fields.
struct Root<'a> {
    endpoint: &'a Endpoint,
    inner: Box<dyn Object<'a> + 'a>,
}

struct ServiceObject<'a>(&'a str);

impl<'a> Object<'a> for ServiceObject<'a> {
    fn typename(&self) -> &'a str {
        "_Service"
    }

    fn field(&self, _name: &str, _args: &Args<'_>) -> Val<'a> {
        Val::Str(self.0)
    }
}

impl<'a> Object<'a> for Root<'a> {
    fn typename(&self) -> &'a str {
        "Query"
    }

    fn field(&self, name: &str, args: &Args<'_>) -> Val<'a> {
        match (name, &self.endpoint.sdl) {
            ("_service", Some(sdl)) => Val::obj(ServiceObject(sdl)),
            ("_entities", Some(_)) => match args.get("representations").as_deref() {
                Some(Value::Array(reps)) => Val::List(
                    reps.iter()
                        .map(|r| self.endpoint.service.entity(r))
                        .collect(),
                ),
                _ => Val::Err("\"representations\" must be a list of objects.".into()),
            },
            _ => self.inner.field(name, args),
        }
    }
}

/// Reads `__typename` and one key field of a representation.
pub fn representation<'v>(rep: &'v Value, key: &str) -> Result<(&'v str, &'v Value), String> {
    let typename = rep
        .get("__typename")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("Representation without a \"__typename\" string: {rep}"))?;
    let value = rep
        .get(key)
        .ok_or_else(|| format!("Representation of {typename} without the key field \"{key}\"."))?;
    Ok((typename, value))
}

/// A scalar key as a string (IDs may arrive as numbers).
pub fn key_string(value: &Value) -> Option<Cow<'_, str>> {
    match value {
        Value::String(s) => Some(Cow::Borrowed(s)),
        Value::Number(n) => Some(Cow::Owned(n.to_string())),
        _ => None,
    }
}
