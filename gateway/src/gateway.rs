//! The request pipeline: cached parse + validate + plan, then execute.

use crate::auth::authz::AuthMask;
use crate::executor::metrics::FetchMetrics;
use crate::executor::transport::{HttpTransport, Transport};
use crate::executor::{ExecutionContext, Part, execute, execute_incremental};
use crate::lifecycle::{Lifecycle, NOT_LOADED, Readiness};
use crate::operation::shape::Shapes;
use crate::operation::{self, ConditionValues, PreparedOperation, RequestErrors};
use crate::progressive_override::{LabelMask, OverrideLabels};
use crate::query_planner::{PlanBudget, PlanError, QueryPlan, build_plan_within};
use crate::reload::ReloadTarget;
use crate::supergraph::Supergraph;
use crate::telemetry::metrics::{CacheMetrics, OperationMetrics};
use crate::telemetry::{Metrics, RequestOutcome, RequestRecorder};
use apollo_compiler::response::{GraphQLError, JsonMap};
use arc_swap::ArcSwapOption;
use graphfleet_config::{Config, LimitsConfig};
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use sha2::{Digest, Sha256};
use std::sync::{Arc, OnceLock};
use std::time::Instant;
use tracing::Instrument;

/// Bound on the plan cache per supergraph, in estimated bytes (see [`entry_weight`]);
/// the least recently useful entries are evicted when it is full.
const CACHE_WEIGHT: u64 = 16 << 20;
/// Operations the cache sizes its tables for up front.
const CACHE_ITEMS: usize = 4096;

#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GraphQLRequest {
    pub query: Option<String>,
    pub operation_name: Option<String>,
    #[serde(default)]
    pub variables: Option<JsonMap>,
    /// Only `persistedQuery` is read (APQ and Apollo persisted queries).
    #[serde(default)]
    pub extensions: Option<crate::persisted::RequestExtensions>,
    /// A persisted document's id (`documentId`; Relay's `doc_id` too).
    #[serde(default, alias = "doc_id")]
    pub document_id: Option<String>,
}

/// What the HTTP layer needs to pick a status code.
#[derive(Debug)]
pub enum Outcome {
    /// Execution happened; the body carries field errors when `field_errors`.
    Executed { body: Vec<u8>, field_errors: bool },
    /// A request error (parse, validation, variables): no `data` in the body.
    RequestError(Vec<u8>),
    /// A mutation sent with GET.
    MutationNotAllowed(Vec<u8>),
    /// No supergraph has been loaded yet (the gateway waits for its file).
    NotReady(Vec<u8>),
    /// `@defer` honoured: the initial payload, and the later ones as they are written.
    Incremental(Incremental),
    /// A subscription started: its events follow.
    Subscribed(crate::subscription::Subscription),
}

/// An incremental response under way (see [`crate::executor::execute_incremental`]).
#[derive(Debug)]
pub struct Incremental {
    pub first: Part,
    /// The later payloads; closed after the last one (or when execution ends early).
    pub rest: tokio::sync::mpsc::UnboundedReceiver<Part>,
}

impl Outcome {
    pub fn body(&self) -> &[u8] {
        match self {
            Outcome::Executed { body, .. }
            | Outcome::RequestError(body)
            | Outcome::MutationNotAllowed(body)
            | Outcome::NotReady(body) => body,
            Outcome::Incremental(i) => &i.first.body,
            Outcome::Subscribed(_) => &[],
        }
    }

    /// The body; of an incremental response, only its initial payload.
    pub fn into_body(self) -> Vec<u8> {
        match self {
            Outcome::Executed { body, .. }
            | Outcome::RequestError(body)
            | Outcome::MutationNotAllowed(body)
            | Outcome::NotReady(body) => body,
            Outcome::Incremental(i) => i.first.body,
            Outcome::Subscribed(_) => Vec::new(),
        }
    }

    /// How the request metrics count this outcome.
    fn classify(&self) -> RequestOutcome {
        match self {
            Outcome::Executed {
                field_errors: true, ..
            } => RequestOutcome::FieldErrors,
            Outcome::Executed { .. } => RequestOutcome::Ok,
            Outcome::Incremental(i) if i.first.field_errors => RequestOutcome::FieldErrors,
            Outcome::Incremental(_) | Outcome::Subscribed(_) => RequestOutcome::Ok,
            Outcome::RequestError(_) | Outcome::MutationNotAllowed(_) => {
                RequestOutcome::RequestError
            }
            Outcome::NotReady(_) => RequestOutcome::NotReady,
        }
    }
}

/// What the HTTP layer knows about a request besides its GraphQL body.
#[derive(Debug, Default)]
pub struct RequestMeta {
    /// False for GET requests.
    pub allow_mutation: bool,
    /// Headers for subgraph requests (the header rules applied to the client's).
    pub forward_headers: crate::executor::headers::SubgraphHeaders,
    /// The client's W3C trace context headers (only kept while traces are exported).
    pub trace_context: http::HeaderMap,
    /// The claims of the request's validated JWT, when it carried one (`authentication`).
    pub claims: Option<Arc<serde_json::Map<String, serde_json::Value>>>,
    /// The client takes incremental delivery (`multipart/mixed`): `@defer` is honoured
    /// by [`Gateway::execute_shared`].
    pub incremental: bool,
    /// The client's transport carries subscriptions (WebSocket, SSE, multipart with
    /// `subscriptionSpec`): a subscription gets [`Outcome::Subscribed`].
    pub stream: bool,
    /// The client's address (the per-client subscription limit).
    pub client: Option<std::net::IpAddr>,
}

pub type PlanResult = Result<QueryPlan, PlanError>;

/// How to answer requests whose condition variables take one set of values.
pub struct Variant {
    pub plan: PlanResult,
    /// `None`: the operation's own shapes (made for all condition variables false).
    shapes: Option<Shapes>,
}

impl Variant {
    pub fn shapes<'s>(&'s self, prepared: &'s PreparedOperation) -> &'s Shapes {
        self.shapes.as_ref().unwrap_or(&prepared.shapes)
    }
}

pub struct CachedOperation {
    pub prepared: PreparedOperation,
    /// For requests whose condition variables are all false: the only variant of an
    /// operation without `@skip`/`@include` on variables.
    first: Arc<Variant>,
    /// Variants for other values of the condition variables, made on first use.
    variants: Mutex<FxHashMap<ConditionValues, Arc<Variant>>>,
    /// Its request metrics handles, resolved on first use.
    metrics: OnceLock<Arc<OperationMetrics>>,
    /// Its estimated size in the plan cache, fixed when it is made.
    weight: u64,
    /// The progressive-override labels it is planned with.
    labels: LabelMask,
    /// The authorization requirements it touches and its plans per denied set, made
    /// on the first request when the supergraph has authorization directives.
    pub(crate) auth: OnceLock<crate::auth::authz::OperationAuth<Variant>>,
    /// Its demand-control cost estimate, compiled on the first request that needs it.
    pub(crate) demand: OnceLock<graphfleet_planner::operation::demand::CostPlan>,
}

/// An estimate of what a cached operation holds, in bytes: its document and IR grow
/// with the query text, its plan with the fetches (each with its own subgraph query).
fn entry_weight(query: &str, plan: &PlanResult) -> u64 {
    const BASE: u64 = 1024;
    const PER_FETCH: u64 = 1024;
    let fetches = plan.as_ref().map_or(0, |p| p.fetches.len()) as u64;
    BASE + 4 * query.len() as u64 + PER_FETCH * fetches
}

/// Weighs plan cache entries by [`CachedOperation::weight`].
#[derive(Clone)]
struct ByWeight;

impl quick_cache::Weighter<[u8; 32], Arc<CachedOperation>> for ByWeight {
    fn weight(&self, _key: &[u8; 32], op: &Arc<CachedOperation>) -> u64 {
        op.weight
    }
}

type PlanCache = quick_cache::sync::Cache<[u8; 32], Arc<CachedOperation>, ByWeight>;

/// Variants kept per operation besides the first; cleared when full. A plain map, not
/// a cache: few operations have more than a couple, and the plan cache bounds the rest.
const VARIANTS_CAPACITY: usize = 64;

impl CachedOperation {
    /// The plan and shapes for a request whose condition variables take `values`, if
    /// they are made already.
    pub fn made_variant(&self, values: ConditionValues) -> Option<Arc<Variant>> {
        if values == ConditionValues::default() {
            return Some(self.first.clone());
        }
        self.variants.lock().get(&values).cloned()
    }

    /// The plan and shapes for a request whose condition variables take `values`,
    /// made within `budget` if they are new (a plan that ran out of time is not kept).
    pub fn variant(
        &self,
        state: &State,
        values: ConditionValues,
        budget: &PlanBudget,
    ) -> Arc<Variant> {
        if let Some(made) = self.made_variant(values) {
            return made;
        }
        let ir = &self.prepared.ir;
        let meta = state.labels.meta(&state.supergraph.meta, self.labels);
        let plan = crate::otel_span!("plan")
            .in_scope(|| build_plan_within(&meta, ir, Some(values), budget));
        let shapes = Shapes::build(&state.supergraph.api_schema, ir, Some(values));
        let keep = !matches!(plan, Err(PlanError::Timeout));
        let variant = Arc::new(Variant {
            plan,
            shapes: Some(shapes),
        });
        if keep {
            let mut variants = self.variants.lock();
            if variants.len() >= VARIANTS_CAPACITY {
                variants.clear();
            }
            variants.insert(values, variant.clone());
        }
        variant
    }

    /// [`Self::variant`] for a request that authorization denies some fields (`mask`).
    fn authorized_variant(
        &self,
        state: &State,
        values: ConditionValues,
        mask: AuthMask,
        budget: &PlanBudget,
    ) -> Arc<Variant> {
        let Some(auth) = self.auth.get().filter(|_| !mask.is_empty()) else {
            return self.variant(state, values, budget);
        };
        if let Some(made) = auth.made(values, mask) {
            return made;
        }
        let meta = state.labels.meta(&state.supergraph.meta, self.labels);
        let api = &state.supergraph.api_schema;
        let (plan, shapes) =
            crate::auth::authz::plan_denied(auth, &meta, api, &self.prepared, values, mask, budget);
        let keep = !matches!(plan, Err(PlanError::Timeout));
        let shapes = Some(shapes);
        let variant = Arc::new(Variant { plan, shapes });
        if keep {
            auth.keep(values, mask, variant.clone());
        }
        variant
    }
}

/// One loaded supergraph and the operations planned against it. Swapped whole on
/// reload, so a cached plan can never meet another supergraph.
pub struct State {
    pub supergraph: Arc<Supergraph>,
    cache: PlanCache,
    /// Checked when an operation is prepared, so cache hits pay nothing.
    limits: graphfleet_planner::OperationLimits,
    cache_metrics: CacheMetrics,
    /// Per-subgraph fetch metrics handles, by `SubgraphId`.
    pub(crate) fetch_metrics: FetchMetrics,
    /// Progressive-override labels drawn per request.
    labels: OverrideLabels,
}

impl State {
    /// A state with no limits and the supergraph's own routing URLs.
    pub fn new(supergraph: Supergraph) -> Self {
        Self::with_limits(supergraph, LimitsConfig::default())
    }

    pub fn with_limits(supergraph: Supergraph, limits: LimitsConfig) -> Self {
        let config = Config {
            limits,
            ..Config::default()
        };
        Self::configured(supergraph, &config)
    }

    /// Count plan cache use and subgraph fetches of this state into `metrics`.
    pub fn with_metrics(mut self, metrics: &Metrics) -> Self {
        self.cache_metrics = metrics.cache();
        let names = self
            .supergraph
            .meta
            .subgraphs
            .iter()
            .map(|s| s.name.as_str());
        self.fetch_metrics = metrics.fetch_metrics(names);
        self
    }

    /// A state for `config`: its limits, and `subgraphs.<name>.url` overriding the
    /// supergraph's routing URLs (on every load, so hot reloads keep them).
    pub fn configured(mut supergraph: Supergraph, config: &Config) -> Self {
        for (name, sg) in &config.subgraphs {
            let Some(url) = &sg.url else { continue };
            match supergraph
                .meta
                .subgraphs
                .iter_mut()
                .find(|s| &s.name == name)
            {
                Some(s) => s.url.clone_from(url),
                None => tracing::warn!(
                    subgraph = %name,
                    "subgraphs.{name}.url is configured but the supergraph has no subgraph named {name}"
                ),
            }
        }
        let labels = OverrideLabels::configure(&mut supergraph.meta, &config.progressive_override);
        Self {
            supergraph: Arc::new(supergraph),
            cache: PlanCache::with_weighter(CACHE_ITEMS, CACHE_WEIGHT, ByWeight),
            limits: crate::config::operation_limits(&config.limits),
            cache_metrics: CacheMetrics::default(),
            fetch_metrics: FetchMetrics::default(),
            labels,
        }
    }

    /// The progressive-override labels of one request (none unless the supergraph has
    /// `percent(N)` labels).
    pub fn draw_labels(&self) -> LabelMask {
        if self.labels.draws() {
            self.labels.draw()
        } else {
            LabelMask::default()
        }
    }

    /// The plan-cache key of (operation name, text).
    pub fn cache_key(query: &str, operation_name: Option<&str>) -> [u8; 32] {
        Self::cache_key_with(query, operation_name, LabelMask::default())
    }

    /// The plan-cache key of (operation name, text) planned with `labels`.
    pub fn cache_key_with(
        query: &str,
        operation_name: Option<&str>,
        labels: LabelMask,
    ) -> [u8; 32] {
        let mut hasher = Sha256::new();
        hasher.update(operation_name.unwrap_or("").as_bytes());
        hasher.update([0]);
        hasher.update(query.as_bytes());
        if labels != LabelMask::default() {
            hasher.update([0]);
            hasher.update(labels.0.to_le_bytes());
        }
        hasher.finalize().into()
    }

    /// The cached operation under `key`, counting the hit or miss.
    pub fn cached(&self, key: &[u8; 32]) -> Option<Arc<CachedOperation>> {
        let hit = self.cache.get(key);
        match &hit {
            Some(_) => self.cache_metrics.hits.inc(),
            None => self.cache_metrics.misses.inc(),
        }
        hit
    }

    /// The planning budget of an operation prepared now that must be done by `deadline`.
    pub fn budget(&self, deadline: Option<Instant>) -> PlanBudget {
        PlanBudget {
            max_height: self.limits.max_height,
            deadline,
        }
    }

    /// Parse, validate and plan `query` once per (text, operation name).
    pub fn prepare(
        &self,
        query: &str,
        operation_name: Option<&str>,
    ) -> Result<Arc<CachedOperation>, RequestErrors> {
        let labels = self.draw_labels();
        let key = Self::cache_key_with(query, operation_name, labels);
        if let Some(hit) = self.cached(&key) {
            return Ok(hit);
        }
        self.prepare_new(key, query, operation_name, labels, None)
    }

    /// Parse, validate and plan `query` (not in the cache under `key`), giving up at
    /// `deadline`; cached unless planning ran out of time.
    pub fn prepare_new(
        &self,
        key: [u8; 32],
        query: &str,
        operation_name: Option<&str>,
        labels: LabelMask,
        deadline: Option<Instant>,
    ) -> Result<Arc<CachedOperation>, RequestErrors> {
        let prepared = operation::prepare_with_limits(
            &self.supergraph.api_schema,
            query,
            operation_name,
            &self.limits,
        )?;
        let budget = self.budget(deadline);
        let meta = self.labels.meta(&self.supergraph.meta, labels);
        let plan = crate::otel_span!("plan").in_scope(|| {
            build_plan_within(
                &meta,
                &prepared.ir,
                Some(ConditionValues::default()),
                &budget,
            )
        });
        if let Err(e @ PlanError::Timeout) = &plan {
            return Err(plan_error(e));
        }
        let cached = Arc::new(CachedOperation {
            prepared,
            weight: entry_weight(query, &plan),
            first: Arc::new(Variant { plan, shapes: None }),
            variants: Mutex::default(),
            metrics: OnceLock::new(),
            labels,
            auth: OnceLock::new(),
            demand: OnceLock::new(),
        });
        self.cache.insert(key, cached.clone());
        Ok(cached)
    }
}

/// A plan error as the request error the client gets.
fn plan_error(e: &PlanError) -> RequestErrors {
    let message = format!("cannot plan this operation: {e}");
    match e.code() {
        Some(code) => RequestErrors(vec![operation::limits::error(code, message)]),
        None => RequestErrors::message(message),
    }
}

pub struct Gateway<T: Transport = HttpTransport> {
    pub config: Arc<Config>,
    /// `None` until a supergraph is loaded (start with `supergraph.watch` and no valid file).
    state: ArcSwapOption<State>,
    pub(crate) transport: T,
    /// Readiness, draining and reload bookkeeping.
    pub lifecycle: Lifecycle,
    metrics: Metrics,
    /// Operations being prepared or planned at once (one per worker thread), so a burst
    /// of new operations cannot take every CPU from the requests already planned.
    planning: Arc<tokio::sync::Semaphore>,
    /// GraphQL requests being worked on (`traffic.max_concurrent_requests`).
    pub(crate) request_slots: tokio::sync::Semaphore,
    /// Header rules for subgraph requests, compiled from `headers` and `subgraphs`.
    pub(crate) header_rules: crate::http::headers::HeaderRules,
    /// Persisted documents and APQ; `None` when both are off.
    pub persisted: Option<Arc<crate::persisted::Persisted>>,
    /// JWT validation (`authentication`).
    pub auth: crate::auth::Auth,
    /// Open subscriptions and their limits.
    pub(crate) subscriptions: Arc<crate::subscription::Subscriptions>,
}

impl Gateway<HttpTransport> {
    /// A gateway with the default configuration.
    pub fn new(supergraph: Supergraph) -> Self {
        Self::with_config(Arc::new(Config::default()), supergraph)
    }

    pub fn with_config(config: Arc<Config>, supergraph: Supergraph) -> Self {
        let transport = crate::config::transport(&config);
        Self::with_transport(config, supergraph, transport)
    }

    /// A gateway that answers 503 until `swap_supergraph` gives it a supergraph.
    pub fn without_supergraph(config: Arc<Config>) -> Self {
        let metrics = Metrics::new();
        let persisted = crate::persisted::Persisted::from_config(&config).map(Arc::new);
        Self {
            persisted,
            transport: crate::config::transport(&config),
            planning: planning_slots(&config),
            request_slots: tokio::sync::Semaphore::new(config.traffic.max_concurrent_requests),
            header_rules: crate::http::headers::HeaderRules::compile(
                &config.headers,
                &config.subgraphs,
            ),
            auth: crate::auth::Auth::new(&config),
            state: ArcSwapOption::empty(),
            lifecycle: Lifecycle::default(),
            subscriptions: subscriptions(&config, &metrics),
            config,
            metrics,
        }
    }
}

impl<T: Transport> Gateway<T> {
    pub fn with_transport(config: Arc<Config>, supergraph: Supergraph, transport: T) -> Self {
        let metrics = Metrics::new();
        let state = State::configured(supergraph, &config).with_metrics(&metrics);
        let persisted = crate::persisted::Persisted::from_config(&config).map(Arc::new);
        Self {
            persisted,
            state: ArcSwapOption::from_pointee(state),
            planning: planning_slots(&config),
            request_slots: tokio::sync::Semaphore::new(config.traffic.max_concurrent_requests),
            header_rules: crate::http::headers::HeaderRules::compile(
                &config.headers,
                &config.subgraphs,
            ),
            auth: crate::auth::Auth::new(&config),
            subscriptions: subscriptions(&config, &metrics),
            config,
            transport,
            lifecycle: Lifecycle::default(),
            metrics,
        }
    }

    /// This gateway's Prometheus metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The state requests start with from now on; in-flight requests keep theirs.
    pub fn state(&self) -> Option<Arc<State>> {
        self.state.load_full()
    }

    /// Serve `supergraph` from the next request on (already validated by parsing).
    pub fn swap_supergraph(&self, supergraph: Supergraph) {
        let state = State::configured(supergraph, &self.config).with_metrics(&self.metrics);
        self.state.store(Some(Arc::new(state)));
        self.subscriptions.reloaded();
    }

    /// End every subscription with a last error and refuse new ones (shutdown).
    pub fn end_subscriptions(&self) {
        self.subscriptions.shut_down();
    }

    /// Client subscriptions open now.
    pub fn open_subscriptions(&self) -> usize {
        self.subscriptions.open()
    }

    /// A place for one more WebSocket connection from `client`, or why not.
    pub fn admit_socket(
        &self,
        client: Option<std::net::IpAddr>,
    ) -> Result<crate::subscription::SocketSlot, String> {
        self.subscriptions.admit_socket(client)
    }

    /// Resolves once subscriptions are ended for shutdown.
    pub fn subscriptions_shutdown(&self) -> crate::subscription::ShutdownSignal {
        self.subscriptions.shutdown_signal()
    }

    pub fn readiness(&self) -> Readiness {
        self.lifecycle.readiness(self.state.load().is_some())
    }

    /// The Prometheus text, with the served supergraph and reload counts as of now.
    pub fn render_metrics(&self) -> String {
        let state = self.state();
        let served = state.as_ref().map(|s| &s.supergraph.hash);
        crate::telemetry::render_metrics(&self.metrics, served, &self.lifecycle.reload_status())
    }

    /// The cached operation for `query`, or one prepared and planned now: off the
    /// async workers (parsing and planning are CPU work a large operation makes long)
    /// and given up at `deadline`.
    async fn prepare(
        &self,
        state: &Arc<State>,
        query: &str,
        operation_name: Option<&str>,
        deadline: Instant,
    ) -> Result<Arc<CachedOperation>, RequestErrors> {
        let labels = state.draw_labels();
        let key = State::cache_key_with(query, operation_name, labels);
        if let Some(hit) = state.cached(&key) {
            return Ok(hit);
        }
        let (state, query) = (state.clone(), query.to_owned());
        let name = operation_name.map(str::to_owned);
        self.off_workers(deadline, move || {
            state.prepare_new(key, &query, name.as_deref(), labels, Some(deadline))
        })
        .await?
    }

    /// Run `work` on the blocking pool, at most one per planning slot at a time; an
    /// error once `deadline` passes (the work itself stops at the same deadline).
    async fn off_workers<R: Send + 'static>(
        &self,
        deadline: Instant,
        work: impl FnOnce() -> R + Send + 'static,
    ) -> Result<R, RequestErrors> {
        let timed_out = || plan_error(&PlanError::Timeout);
        let until = tokio::time::Instant::from_std(deadline);
        let slot = tokio::time::timeout_at(until, self.planning.clone().acquire_owned())
            .await
            .map_err(|_| timed_out())?
            .expect("the planning semaphore is never closed");
        // The request's span goes along, so parse/validate/plan spans stay its children.
        let span = tracing::Span::current();
        let task = tokio::task::spawn_blocking(move || {
            let _slot = slot;
            span.in_scope(work)
        });
        match tokio::time::timeout_at(until, task).await {
            Ok(Ok(done)) => Ok(done),
            Ok(Err(panicked)) => {
                tracing::error!(error = %panicked, "planning an operation panicked");
                Err(RequestErrors(vec![operation::limits::error(
                    "INTERNAL_SERVER_ERROR",
                    "the gateway failed to plan this operation",
                )]))
            }
            Err(_) => Err(timed_out()),
        }
    }

    /// Run one request (`@defer` is not honoured: see [`Self::execute_shared`]).
    pub async fn execute(&self, request: &GraphQLRequest, meta: &RequestMeta) -> Outcome {
        self.execute_with(request, meta, None).await
    }

    /// Run one request; one that takes incremental delivery (`meta.incremental`) and
    /// defers fragments gets [`Outcome::Incremental`] once its initial payload is
    /// written, the rest following from a task of its own.
    pub async fn execute_shared(
        self: &Arc<Self>,
        request: &GraphQLRequest,
        meta: &RequestMeta,
    ) -> Outcome {
        self.execute_with(request, meta, Some(self)).await
    }

    async fn execute_with(
        &self,
        request: &GraphQLRequest,
        meta: &RequestMeta,
        shared: Option<&Arc<Self>>,
    ) -> Outcome {
        let timeout = self.config.traffic.request_timeout;
        let mut recorder = RequestRecorder::start(&self.metrics, timeout);
        let span = crate::otel_span!("request", graphql.operation.name = tracing::field::Empty);
        crate::telemetry::tracing::set_remote_parent(&span, &meta.trace_context);
        let outcome = self
            .run(request, meta, &mut recorder, shared)
            .instrument(span)
            .await;
        recorder.finish(outcome.classify());
        outcome
    }

    async fn run(
        &self,
        request: &GraphQLRequest,
        meta: &RequestMeta,
        recorder: &mut RequestRecorder<'_>,
        shared: Option<&Arc<Self>>,
    ) -> Outcome {
        let allow_mutation = meta.allow_mutation;
        let query = match crate::persisted::query_of(self.persisted.as_deref(), request) {
            Ok(q) => q,
            Err(e) => return request_error(e),
        };
        let Some(state) = self.state() else {
            return Outcome::NotReady(error_body(RequestErrors::message(NOT_LOADED)));
        };
        let query = &*query;
        let deadline = Instant::now() + self.config.traffic.request_timeout;
        let cached = match self
            .prepare(&state, query, request.operation_name.as_deref(), deadline)
            .await
        {
            Ok(c) => c,
            Err(e) => return request_error(e),
        };
        let name = cached.prepared.operation.name.as_deref();
        recorder.operation(cached.metrics.get_or_init(|| self.metrics.operation(name)));
        crate::telemetry::tracing::record_operation(name);
        let kind = cached.prepared.operation.operation_type;
        if kind.is_subscription() {
            if !self.config.subscriptions.enabled {
                return request_error(RequestErrors::message(
                    "subscriptions are disabled on this gateway (subscriptions.enabled)",
                ));
            }
            if !meta.stream || shared.is_none() {
                return request_error(RequestErrors::message(
                    "a subscription needs a streaming transport: WebSocket (graphql-transport-ws), \
                     SSE (Accept: text/event-stream) or multipart HTTP \
                     (Accept: multipart/mixed;subscriptionSpec=1.0)",
                ));
            }
        }
        if !allow_mutation && kind.is_mutation() {
            let body = error_body(RequestErrors::message("mutations must be sent with POST"));
            return Outcome::MutationNotAllowed(body);
        }
        let empty = JsonMap::new();
        let variables = request.variables.as_ref().unwrap_or(&empty);
        let variables = match operation::coerce_variables(
            &state.supergraph.api_schema,
            &cached.prepared,
            variables,
        ) {
            Ok(v) => v,
            Err(e) => return request_error(e),
        };
        let mut values = ConditionValues::of(&cached.prepared.ir, &variables);
        if meta.incremental && shared.is_some() && cached.prepared.ir.can_defer() {
            values = values.with_incremental();
        }
        let dc = &self.config.demand_control;
        let ops = cached.metrics.get().map(|m| &**m);
        let cost = match crate::demand::check(dc, &state, &cached, &variables, values, ops) {
            Ok(cost) => cost.filter(|_| dc.expose_in_extensions),
            Err(e) => return request_error(e),
        };
        let authorized = crate::auth::authz::authorize(&self.config, &state, &cached, meta, values);
        let mask = match authorized {
            Ok(mask) => mask,
            Err(e) => return request_error(e),
        };
        let made = match cached.auth.get().filter(|_| !mask.is_empty()) {
            None => cached.made_variant(values),
            Some(auth) => auth.made(values, mask),
        };
        let variant = match made {
            Some(v) => v,
            None => {
                let (state, cached) = (state.clone(), cached.clone());
                let planned = self
                    .off_workers(deadline, move || {
                        let budget = state.budget(Some(deadline));
                        cached.authorized_variant(&state, values, mask, &budget)
                    })
                    .await;
                match planned {
                    Ok(v) => v,
                    Err(e) => return request_error(e),
                }
            }
        };
        let plan = match &variant.plan {
            Ok(plan) => plan,
            Err(e) => return request_error(plan_error(e)),
        };
        if let Some(shared) = shared.filter(|_| values.incremental() || kind.is_subscription()) {
            // What tells this operation's plan variant from every other one.
            let mut operation = Sha256::new();
            operation.update((Arc::as_ptr(&state) as usize).to_le_bytes());
            operation.update(State::cache_key_with(
                query,
                request.operation_name.as_deref(),
                cached.labels,
            ));
            operation.update(values.0.to_le_bytes());
            operation.update(mask.0.to_le_bytes());
            let started = Started {
                state: state.clone(),
                cached: cached.clone(),
                variant: variant.clone(),
                variables,
                headers: meta.forward_headers.clone(),
                deadline,
                operation: operation.finalize().into(),
            };
            if kind.is_subscription() {
                return match shared.subscribe(started, meta.client) {
                    Ok(subscription) => Outcome::Subscribed(subscription),
                    Err(message) => request_error(RequestErrors(vec![operation::limits::error(
                        crate::subscription::LIMIT,
                        message,
                    )])),
                };
            }
            return shared.incremental(started, cost).await;
        }
        let ctx = ExecutionContext {
            supergraph: &state.supergraph,
            prepared: &cached.prepared,
            shapes: variant.shapes(&cached.prepared),
            plan,
            variables: &variables,
            transport: &self.transport,
            headers: &meta.forward_headers,
            fetch_metrics: &state.fetch_metrics,
            max_response_bytes: self.config.limits.max_response_bytes,
        };
        let executed = execute(&ctx).instrument(crate::otel_span!("execute")).await;
        Outcome::Executed {
            body: match cost {
                Some(cost) => crate::demand::expose(executed.body, cost),
                None => executed.body,
            },
            field_errors: executed.field_errors,
        }
    }
}

/// What an incremental response's or a subscription's task owns: the request ready
/// to execute.
pub(crate) struct Started {
    pub(crate) state: Arc<State>,
    pub(crate) cached: Arc<CachedOperation>,
    pub(crate) variant: Arc<Variant>,
    pub(crate) variables: apollo_compiler::validation::Valid<JsonMap>,
    pub(crate) headers: crate::executor::headers::SubgraphHeaders,
    pub(crate) deadline: Instant,
    /// The operation and its plan variant: state, text, name, labels, condition values
    /// and authorization (identical subscriptions share a subgraph subscription).
    pub(crate) operation: [u8; 32],
}

impl<T: Transport> Gateway<T> {
    /// Executes `started` in a task of its own, which sends its payloads as they are
    /// written; answers once the initial payload is. The task stops when the client
    /// is gone (the receiver dropped) or at the request deadline, ending the response
    /// with a last payload saying so.
    async fn incremental(self: &Arc<Self>, started: Started, cost: Option<f64>) -> Outcome {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Part>();
        let gateway = self.clone();
        let task = async move {
            let Started {
                state,
                cached,
                variant,
                variables,
                headers,
                deadline,
                ..
            } = started;
            let Ok(plan) = &variant.plan else { return };
            let ctx = ExecutionContext {
                supergraph: &state.supergraph,
                prepared: &cached.prepared,
                shapes: variant.shapes(&cached.prepared),
                plan,
                variables: &variables,
                transport: &gateway.transport,
                headers: &headers,
                fetch_metrics: &state.fetch_metrics,
                max_response_bytes: gateway.config.limits.max_response_bytes,
            };
            let mut first = true;
            let mut sink = |mut part: Part| {
                if std::mem::take(&mut first)
                    && let Some(cost) = cost
                {
                    part.body = crate::demand::expose(part.body, cost);
                }
                tx.send(part).is_ok()
            };
            let until = tokio::time::Instant::from_std(deadline);
            let run = execute_incremental(&ctx, &mut sink);
            if tokio::time::timeout_at(until, run).await.is_err() {
                let timeout = gateway.config.traffic.request_timeout;
                let error = serde_json::json!({
                    "incremental": [],
                    "errors": [{
                        "message": format!("the request did not complete within {timeout:?}"),
                        "extensions": { "code": "GATEWAY_TIMEOUT" },
                    }],
                    "hasNext": false,
                });
                let body = serde_json::to_vec(&error).expect("static JSON serializes");
                let _ = tx.send(Part {
                    body,
                    field_errors: true,
                    last: true,
                });
            }
        };
        tokio::spawn(task.instrument(tracing::Span::current()));
        match rx.recv().await {
            Some(first) => Outcome::Incremental(Incremental { first, rest: rx }),
            None => request_error(RequestErrors::message(
                "the gateway failed to execute this operation",
            )),
        }
    }
}

impl<T: Transport> ReloadTarget for Gateway<T> {
    fn served_hash(&self) -> Option<[u8; 32]> {
        self.state.load().as_ref().map(|s| s.supergraph.hash)
    }

    fn serve(&self, supergraph: Supergraph) {
        self.swap_supergraph(supergraph);
    }

    fn lifecycle(&self) -> &Lifecycle {
        &self.lifecycle
    }
}

fn subscriptions(config: &Config, metrics: &Metrics) -> Arc<crate::subscription::Subscriptions> {
    Arc::new(crate::subscription::Subscriptions::new(
        &config.subscriptions,
        config.traffic.max_connections,
        metrics.subscriptions.clone(),
    ))
}

fn planning_slots(config: &Config) -> Arc<tokio::sync::Semaphore> {
    Arc::new(tokio::sync::Semaphore::new(
        crate::runtime::worker_threads(config).max(1),
    ))
}

fn request_error(errors: RequestErrors) -> Outcome {
    Outcome::RequestError(error_body(errors))
}

fn error_body(errors: RequestErrors) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct Body<'a> {
        errors: &'a [GraphQLError],
    }
    serde_json::to_vec(&Body { errors: &errors.0 }).expect("errors serialize")
}
