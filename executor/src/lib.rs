//! Plan execution: independent fetches run concurrently, each `_entities` step sends
//! one request with deduplicated representations, and responses are deserialized
//! straight into the response store.

pub mod dedup;
pub mod error;
mod fetch;
pub mod headers;
pub mod hook;
mod incremental;
pub mod memory;
pub mod metrics;
pub mod offload;
mod propagation;
pub mod resilience;
pub mod response;
pub mod subscription;
pub mod transport;

use crate::response::writer::{ResponseError, Writer};
use crate::response::{Store, Value};
use apollo_compiler::response::JsonMap;
use bytes::Bytes;
use fetch::PreparedFetch;
use graphfleet_federation::Supergraph;
use graphfleet_planner::operation::PreparedOperation;
use graphfleet_planner::query_planner::{PlanNode, QueryPlan};
use transport::{SubgraphRequest, Transport};

pub use incremental::{Part, execute_incremental};

/// Everything one request needs besides the store.
pub struct ExecutionContext<'a, T: Transport> {
    pub supergraph: &'a Supergraph,
    pub prepared: &'a PreparedOperation,
    /// The response shapes for this request's condition values.
    pub shapes: &'a graphfleet_planner::operation::shape::Shapes,
    pub plan: &'a QueryPlan,
    pub variables: &'a JsonMap,
    pub transport: &'a T,
    /// Headers for subgraph requests, per the header rules.
    pub headers: &'a headers::SubgraphHeaders,
    /// Per-subgraph fetch count, latency and error metrics.
    pub fetch_metrics: &'a crate::metrics::FetchMetrics,
    /// Cap on the subgraph response bodies of this request together, and on the
    /// response written: past it fetches fail and the response is cut with an error.
    pub max_response_bytes: usize,
    /// This request's charge against the gateway-wide memory budget: entity copies and
    /// the response as it is written (subgraph bodies carry charges of their own).
    pub memory: &'a memory::Charge,
    /// Keep each subgraph response's headers ([`Executed::subgraph_headers`]).
    pub keep_response_headers: bool,
    /// Called around every fetch (the gateway's subgraph coprocessor stages); `None`
    /// costs nothing.
    pub fetch_hook: Option<&'a dyn hook::FetchHook>,
}

/// `extensions.code` of the error a response over `max_response_bytes` gets.
pub const RESPONSE_TOO_LARGE: &str = crate::error::FetchError::REQUEST_RESPONSE_TOO_LARGE;

/// The final response body, and whether it carries errors.
pub struct Executed {
    pub body: Vec<u8>,
    pub field_errors: bool,
    /// Subgraph bytes read, entity copies charged and the parsed values' heap: with the
    /// body, what the request took (the next request of its operation reserves that).
    pub received: usize,
    /// With [`ExecutionContext::keep_response_headers`]: each subgraph response's
    /// headers, in the order the plan lists its fetches.
    pub subgraph_headers: Vec<SubgraphResponseHeaders>,
}

/// The headers one subgraph response came with.
#[derive(Debug, Clone)]
pub struct SubgraphResponseHeaders {
    pub subgraph: String,
    pub headers: std::sync::Arc<http::HeaderMap>,
}

/// What the fetches of one execution brought in besides their data.
#[derive(Default)]
struct Tally {
    /// Subgraph bytes read and entity copies charged (see [`Executed::received`]).
    received: usize,
    /// (fetch, headers) as the answers came.
    headers: Vec<(usize, std::sync::Arc<http::HeaderMap>)>,
}

impl Tally {
    /// The kept headers in plan order.
    fn into_headers(mut self, plan: &QueryPlan) -> Vec<SubgraphResponseHeaders> {
        if self.headers.is_empty() {
            return Vec::new();
        }
        let mut order = Vec::with_capacity(plan.fetches.len());
        if let Some(root) = &plan.root {
            plan_order(root, &mut order);
        }
        let rank = |i: usize| order.iter().position(|o| *o == i).unwrap_or(usize::MAX);
        // Stable: the parts of one fetch keep the order they came in.
        self.headers.sort_by_key(|(i, _)| rank(*i));
        self.headers
            .into_iter()
            .map(|(i, headers)| SubgraphResponseHeaders {
                subgraph: plan.fetches[i].subgraph_name.clone(),
                headers,
            })
            .collect()
    }
}

/// Execute the plan and write the final response body.
pub async fn execute<T: Transport>(ctx: &ExecutionContext<'_, T>) -> Executed {
    let mut store = Store::with_root();
    let mut tally = Tally::default();
    let mut fetch_errors = vec![Vec::new(); ctx.plan.fetches.len()];
    run_as_ready(
        ctx,
        &mut store,
        &mut fetch_errors,
        &mut tally,
        None,
        |_, _, _| true,
    )
    .await;
    let mut errors = in_plan_order(ctx.plan, &mut fetch_errors, |_| true);
    introspection(ctx, &mut store, &mut errors);
    let mut executed = write_final(ctx, &store, errors);
    executed.received = tally.received.saturating_add(store.heap_bytes());
    executed.subgraph_headers = tally.into_headers(ctx.plan);
    // The store and the subgraph bodies it kept are freed: only the answer is held.
    drop(store);
    ctx.memory.release_to(executed.body.len());
    executed
}

/// Complete one subscription event: `event` (the subgraph's `{"data":…,"errors":…}`
/// for the plan's subscription fetch) is merged as that fetch's answer, then the other
/// fetches run as for a query, and the event's response is written.
pub async fn execute_event<T: Transport>(ctx: &ExecutionContext<'_, T>, event: Bytes) -> Executed {
    let mut store = Store::with_root();
    let mut tally = Tally::default();
    let mut fetch_errors = vec![Vec::new(); ctx.plan.fetches.len()];
    let supplied = ctx.plan.subscription_fetch().map(|i| (i, event));
    run_as_ready(
        ctx,
        &mut store,
        &mut fetch_errors,
        &mut tally,
        supplied,
        |_, _, _| true,
    )
    .await;
    let errors = in_plan_order(ctx.plan, &mut fetch_errors, |_| true);
    let mut executed = write_final(ctx, &store, errors);
    executed.received = tally.received.saturating_add(store.heap_bytes());
    drop(store);
    ctx.memory.release_to(executed.body.len());
    executed
}

/// The request body subscribing to the plan's subscription fetch (its operation and
/// the client variables it uses), or `None` for a plan that is not a subscription's.
pub fn subscription_request(plan: &QueryPlan, variables: &JsonMap) -> Option<Bytes> {
    let i = plan.subscription_fetch()?;
    let store = Store::with_root();
    fetch::prepare(&plan.fetches[i], plan, &store, variables).map(|p| p.body)
}

/// The whole response of `store`, with `errors` and those the writer adds.
fn write_final<T: Transport>(
    ctx: &ExecutionContext<'_, T>,
    store: &Store,
    mut errors: Vec<ResponseError>,
) -> Executed {
    let size = store.buffers.iter().map(Bytes::len).sum::<usize>();
    let body = offload::run(size, || {
        Writer::new(
            store,
            &ctx.plan.keys,
            ctx.shapes,
            ctx.variables,
            &mut errors,
        )
        .max_bytes(ctx.max_response_bytes)
        .memory(ctx.memory)
        .write_response(Some(Store::ROOT))
    });
    Executed {
        body,
        // The writer adds errors of its own (null propagation), so ask afterwards.
        field_errors: !errors.is_empty(),
        received: 0,
        subgraph_headers: Vec::new(),
    }
}

/// The plan's fetches, each sent as soon as the fetches it depends on are merged (not
/// level by level: a fetch waits only for its own inputs; a mutation's root fields wait
/// for the ones before them). Results merge in the order they arrive, their errors go
/// to `fetch_errors` (by fetch: callers report them in plan order, so the answer does
/// not depend on which subgraph was quicker). `on_done` hears of each fetch once all
/// of it is merged; when it answers false, the rest is abandoned. A `supplied` fetch
/// is not sent: the bytes given are its answer (a subscription's event).
async fn run_as_ready<T: Transport>(
    ctx: &ExecutionContext<'_, T>,
    store: &mut Store,
    fetch_errors: &mut [Vec<ResponseError>],
    tally: &mut Tally,
    mut supplied: Option<(usize, Bytes)>,
    mut on_done: impl FnMut(usize, &mut Store, &mut [Vec<ResponseError>]) -> bool,
) {
    let fetches = &ctx.plan.fetches;
    let mut waiting: Vec<usize> = fetches.iter().map(|f| f.depends_on.len()).collect();
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); fetches.len()];
    for (i, f) in fetches.iter().enumerate() {
        for d in &f.depends_on {
            dependents[*d].push(i);
        }
    }
    let mut ready: Vec<usize> = (0..fetches.len()).filter(|i| waiting[*i] == 0).collect();
    // Requests of each fetch still in flight (several for contextual arguments).
    let mut parts_left: Vec<usize> = vec![0; fetches.len()];
    let mut in_flight = futures::stream::FuturesUnordered::new();
    let done = |i: usize, waiting: &mut Vec<usize>, ready: &mut Vec<usize>| {
        for d in &dependents[i] {
            waiting[*d] -= 1;
            if waiting[*d] == 0 {
                ready.push(*d);
            }
        }
    };
    loop {
        while let Some(i) = ready.pop() {
            // Over the response budget nothing more is sent: the response is cut.
            let prepared = if tally.received > ctx.max_response_bytes {
                Vec::new()
            } else if fetches[i]
                .entity
                .as_ref()
                .is_some_and(|e| !e.contexts.is_empty())
            {
                fetch::prepare_contextual(&fetches[i], ctx.plan, store, ctx.variables)
            } else {
                fetch::prepare(&fetches[i], ctx.plan, store, ctx.variables)
                    .into_iter()
                    .collect()
            };
            if let Some((_, event)) = supplied.take_if(|(s, _)| *s == i) {
                for p in &prepared {
                    absorb(
                        ctx,
                        i,
                        p,
                        Ok(event.clone().into()),
                        store,
                        &mut fetch_errors[i],
                        tally,
                    );
                }
                done(i, &mut waiting, &mut ready);
                if !on_done(i, store, fetch_errors) {
                    return;
                }
                continue;
            }
            // Nothing to fetch (no representations): its dependents have nothing to
            // wait for either.
            if prepared.is_empty() {
                done(i, &mut waiting, &mut ready);
                if !on_done(i, store, fetch_errors) {
                    return;
                }
            }
            parts_left[i] = prepared.len();
            for p in prepared {
                let budget_bytes = ctx.max_response_bytes.saturating_sub(tally.received);
                in_flight.push(async move {
                    let response = send(ctx, i, &p, budget_bytes).await;
                    (i, p, response)
                });
            }
        }
        let Some((i, p, response)) = futures::StreamExt::next(&mut in_flight).await else {
            break;
        };
        absorb(ctx, i, &p, response, store, &mut fetch_errors[i], tally);
        parts_left[i] -= 1;
        if parts_left[i] == 0 {
            done(i, &mut waiting, &mut ready);
            if !on_done(i, store, fetch_errors) {
                return;
            }
        }
    }
}

/// The errors of the fetches `wanted` picks, taken in the order the plan lists them.
fn in_plan_order(
    plan: &QueryPlan,
    fetch_errors: &mut [Vec<ResponseError>],
    wanted: impl Fn(usize) -> bool,
) -> Vec<ResponseError> {
    let mut order = Vec::with_capacity(plan.fetches.len());
    if let Some(root) = &plan.root {
        plan_order(root, &mut order);
    }
    let mut errors = Vec::new();
    for i in order.into_iter().filter(|i| wanted(*i)) {
        errors.append(&mut fetch_errors[i]);
    }
    errors
}

/// The fetches of `node` in the order the plan lists them.
fn plan_order(node: &PlanNode, out: &mut Vec<usize>) {
    match node {
        PlanNode::Sequence(nodes) | PlanNode::Parallel(nodes) => {
            nodes.iter().for_each(|n| plan_order(n, out));
        }
        PlanNode::Fetch(i) | PlanNode::Flatten { fetch: i, .. } => out.push(*i),
    }
}

/// Send fetch `i` (its prepared body `p`), reading at most `budget_bytes` of answer.
async fn send<T: Transport>(
    ctx: &ExecutionContext<'_, T>,
    i: usize,
    p: &PreparedFetch,
    budget_bytes: usize,
) -> Result<transport::Fetched, transport::FetchError> {
    let fetch = &ctx.plan.fetches[i];
    let url = &ctx.supergraph.meta.subgraph(fetch.subgraph).url;
    let headers = ctx.headers.for_subgraph(&fetch.subgraph_name);
    let request = SubgraphRequest {
        subgraph: fetch.subgraph,
        name: &fetch.subgraph_name,
        url,
        body: p.body.clone(),
        headers,
        is_query: ctx.prepared.operation.operation_type.is_query(),
        budget_bytes,
        memory: ctx.memory.budget(),
        keep_headers: ctx.keep_response_headers,
        shareable: true,
    };
    let span = graphfleet_planner::otel_span!(
        "subgraph_fetch",
        subgraph.name = %fetch.subgraph_name,
        http.response.status_code = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
        otel.status_message = tracing::field::Empty,
    );
    let record = crate::metrics::FetchRecord::start(ctx.fetch_metrics, fetch.subgraph.index());
    let response = match ctx.fetch_hook {
        None => {
            let fetched = ctx.transport.fetch(request);
            tracing::Instrument::instrument(fetched, span.clone()).await
        }
        Some(hook) => {
            let fetched = hooked(ctx, hook, request);
            tracing::Instrument::instrument(fetched, span.clone()).await
        }
    };
    record.finish(response.is_ok());
    if let Err(e) = &response {
        span.record("otel.status_code", "ERROR");
        span.record("otel.status_message", e.message.as_str());
    }
    response
}

/// `request` through `hook`, which may rewrite it, answer it, or change its answer.
async fn hooked<T: Transport>(
    ctx: &ExecutionContext<'_, T>,
    hook: &dyn hook::FetchHook,
    request: SubgraphRequest<'_>,
) -> Result<transport::Fetched, transport::FetchError> {
    let keep_headers = request.keep_headers;
    let template = SubgraphRequest {
        keep_headers: keep_headers || hook.wants_response_headers(),
        shareable: false,
        ..request
    };
    let (subgraph, is_query, budget_bytes, memory, keep) = (
        template.subgraph,
        template.is_query,
        template.budget_bytes,
        template.memory,
        template.keep_headers,
    );
    let send = move |changed: hook::HookedRequest| -> futures::future::BoxFuture<'_, _> {
        Box::pin(async move {
            let request = SubgraphRequest {
                subgraph,
                name: &changed.name,
                url: &changed.url,
                body: changed.body.clone(),
                headers: &changed.headers,
                is_query,
                budget_bytes,
                memory,
                keep_headers: keep,
                shareable: false,
            };
            ctx.transport.fetch(request).await
        })
    };
    let start = hook::HookedRequest {
        name: template.name.to_owned(),
        url: template.url.to_owned(),
        body: template.body.clone(),
        headers: template.headers.clone(),
    };
    let mut fetched = hook.around(start, &send).await?;
    if !keep_headers {
        fetched.headers = None;
    }
    Ok(fetched)
}

/// Merge fetch `i`'s response into the store, or its failure into `errors`; a response
/// that takes the request past its response budget is not merged.
fn absorb<T: Transport>(
    ctx: &ExecutionContext<'_, T>,
    i: usize,
    p: &PreparedFetch,
    response: Result<transport::Fetched, transport::FetchError>,
    store: &mut Store,
    errors: &mut Vec<ResponseError>,
    tally: &mut Tally,
) {
    let fetch = &ctx.plan.fetches[i];
    // One error per part of a batched fetch, as when they were sent apart.
    let failed = |errors: &mut Vec<ResponseError>, code: &str, message: String| {
        for path in fetch::failed_fetch_paths(fetch) {
            errors.push(ResponseError {
                path,
                extensions: Some(serde_json::json!({
                    "code": code,
                    "service": fetch.subgraph_name,
                })),
                ..ResponseError::new(message.clone())
            });
        }
    };
    match response {
        Ok(transport::Fetched {
            body: bytes,
            headers,
        }) => {
            if let Some(headers) = headers {
                tally.headers.push((i, headers));
            }
            tally.received = tally.received.saturating_add(bytes.len());
            if tally.received > ctx.max_response_bytes {
                failed(
                    errors,
                    RESPONSE_TOO_LARGE,
                    format!(
                        "the subgraph responses of this request exceed {} bytes (limits.max_response_bytes)",
                        ctx.max_response_bytes
                    ),
                );
                return;
            }
            let budget = fetch::Budget {
                bytes: ctx.max_response_bytes - tally.received,
                memory: ctx.memory,
            };
            // One answer may be copied into thousands of objects: count them too.
            let copies = p.targets.iter().map(Vec::len).sum::<usize>();
            let work = bytes.len().saturating_add(copies.saturating_mul(64));
            let parsed_before = store.heap_bytes();
            let merged = offload::run(work, || {
                fetch::merge(fetch, ctx.plan, p, &bytes, store, errors, budget)
            });
            // The values parsed from it weigh several times its text: charged too.
            let parsed = store.heap_bytes().saturating_sub(parsed_before);
            if let Err(e) = ctx.memory.try_add(parsed) {
                tally.received = ctx.max_response_bytes.saturating_add(1);
                ctx.memory.cut();
                let message = format!("storing the answer of '{}': {e}", fetch.subgraph_name);
                return failed(errors, memory::MEMORY_BUDGET_EXCEEDED, message);
            }
            match merged {
                Ok(charged) => tally.received += charged,
                Err(fetch::NotMerged::TooLarge(needed)) => {
                    // Nothing more is sent: the response is cut.
                    tally.received = ctx.max_response_bytes.saturating_add(1);
                    failed(
                        errors,
                        RESPONSE_TOO_LARGE,
                        format!(
                            "copying the answer of '{}' into every object that asked for it would add {needed} bytes, past limits.max_response_bytes ({})",
                            fetch.subgraph_name, ctx.max_response_bytes
                        ),
                    );
                }
                Err(fetch::NotMerged::OverMemory(e)) => {
                    tally.received = ctx.max_response_bytes.saturating_add(1);
                    ctx.memory.cut();
                    failed(
                        errors,
                        memory::MEMORY_BUDGET_EXCEEDED,
                        format!(
                            "copying the answer of '{}' into every object that asked for it: {e}",
                            fetch.subgraph_name
                        ),
                    );
                }
            }
        }
        Err(e) if e.code == memory::MEMORY_BUDGET_EXCEEDED => {
            // As over the response cap: nothing more is sent.
            tally.received = ctx.max_response_bytes.saturating_add(1);
            ctx.memory.cut();
            failed(
                errors,
                e.code,
                format!("reading the answer of '{}': {e}", fetch.subgraph_name),
            );
        }
        Err(e) => failed(
            errors,
            e.code,
            format!("HTTP fetch failed from '{}': {e}", fetch.subgraph_name),
        ),
    }
}

/// `__schema` / `__type` root fields are answered from the API schema.
fn introspection<T: Transport>(
    ctx: &ExecutionContext<'_, T>,
    store: &mut Store,
    errors: &mut Vec<ResponseError>,
) {
    let prepared = ctx.prepared;
    let wants = prepared
        .operation
        .root_fields(&prepared.document)
        .any(|f| f.name == "__schema" || f.name == "__type");
    if !wants || !prepared.operation.operation_type.is_query() {
        return;
    }
    let schema = &ctx.supergraph.api_schema;
    let variables = apollo_compiler::validation::Valid::assume_valid(ctx.variables.clone());
    let response = apollo_compiler::introspection::partial_execute(
        schema,
        &ctx.supergraph.implementers,
        &prepared.document,
        &prepared.operation,
        &variables,
    );
    match response {
        Ok(response) => {
            for e in response.errors {
                errors.push(ResponseError::new(e.message));
            }
            let Some(data) = response.data else { return };
            let data = apollo_compiler::response::JsonValue::Object(data);
            match store.add_json(&data, &ctx.plan.keys) {
                Ok(stored) => {
                    if let Value::Object(id) = stored {
                        store.merge_object(Store::ROOT, id);
                    }
                }
                // Never dropped: without it the client sees only a null root field.
                Err(_) => errors.push(ResponseError {
                    extensions: Some(serde_json::json!({"code": RESPONSE_TOO_LARGE})),
                    ..ResponseError::new(
                        "the introspection answer is too large to store (more than 2^32 list items or bytes of text)",
                    )
                }),
            }
        }
        Err(e) => errors.push(ResponseError::new(e.message().to_string())),
    }
}
