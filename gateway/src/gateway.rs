//! The orchestrator: a gateway's long-lived parts (configuration, the served supergraph
//! and its plan cache, transport, limits, metrics) and one request run through the
//! pipeline's stages in order (see [`crate::pipeline`]).

use crate::coprocessor::Coprocessor;
use crate::coprocessor::supergraph::SupergraphChanges;
use crate::executor::ExecutionContext;
use crate::executor::memory::{MEMORY_BUDGET_EXCEEDED, MemoryBudget};
use crate::executor::transport::{HttpTransport, Transport};
use crate::lifecycle::{Lifecycle, Readiness};
use crate::persisted::Persisted;
use crate::pipeline::error::RequestError;
use crate::pipeline::operation::Started;
use crate::pipeline::plan::Planning;
use crate::pipeline::plan_cache::{State, plan_error};
use crate::pipeline::request::{GraphQLRequest, RequestMeta};
use crate::pipeline::respond::Outcome;
use crate::pipeline::{authorize, demand, execute, limit, persisted, reserve, validate};
use crate::reload::ReloadTarget;
use crate::subscription::{ShutdownSignal, SocketSlot, Subscriptions};
use crate::supergraph::Supergraph;
use crate::telemetry::{Metrics, RequestRecorder};
use crate::usage::UsageRecorder;
use arc_swap::ArcSwapOption;
use graphfleet_config::Config;
use std::sync::Arc;
use std::time::Instant;
use tracing::Instrument;

pub struct Gateway<T: Transport = HttpTransport> {
    pub config: Arc<Config>,
    /// `None` until a supergraph is loaded (start with `supergraph.watch` and no valid file).
    state: ArcSwapOption<State>,
    /// Shared with the tasks that answer after the request returns (`@defer`,
    /// subscriptions).
    transport: Arc<T>,
    /// Readiness, draining and reload bookkeeping.
    pub lifecycle: Lifecycle,
    metrics: Metrics,
    /// Slots for preparing and planning operations off the async workers.
    planning: Planning,
    /// GraphQL requests being worked on (`traffic.max_concurrent_requests`).
    pub(crate) request_slots: tokio::sync::Semaphore,
    /// What in-flight requests hold (`limits.max_inflight_bytes`).
    memory: MemoryBudget,
    /// Header rules for subgraph requests, compiled from `headers` and `subgraphs`.
    pub(crate) header_rules: crate::http::headers::HeaderRules,
    /// `traffic.trusted_proxies` and `client_address_header`: who names the client, where.
    pub(crate) client_addressing: crate::http::client_addr::ClientAddressing,
    /// Persisted documents and APQ; `None` when both are off.
    pub persisted: Option<Arc<Persisted>>,
    /// JWT validation (`authentication`).
    pub auth: crate::auth::Auth,
    /// Open subscriptions and their limits.
    pub(crate) subscriptions: Arc<Subscriptions>,
    /// The operations served, for the operator's checks; `None` when `usage.record` is off.
    pub usage: Option<UsageRecorder>,
    /// Token buckets (`rate_limit`); `None` when no bucket is set.
    pub rate_limiter: Option<crate::rate_limit::RateLimiter>,
    /// The external coprocessor (`coprocessor`); `None` when not configured.
    pub coprocessor: Option<Arc<Coprocessor>>,
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
        let persisted = Persisted::from_config(&config).map(Arc::new);
        Self {
            persisted,
            transport: Arc::new(crate::config::transport(&config)),
            planning: planning(&config),
            request_slots: tokio::sync::Semaphore::new(config.traffic.max_concurrent_requests),
            memory: crate::memory::budget(&config),
            header_rules: crate::http::headers::HeaderRules::compile(
                &config.headers,
                &config.subgraphs,
            ),
            client_addressing: client_addressing(&config),
            auth: crate::auth::Auth::new(&config),
            state: ArcSwapOption::empty(),
            lifecycle: Lifecycle::default(),
            subscriptions: subscriptions(&config, &metrics),
            usage: UsageRecorder::new(&config.usage),
            rate_limiter: crate::rate_limit::RateLimiter::new(&config),
            coprocessor: Coprocessor::new(&config, metrics.registry()).map(Arc::new),
            config,
            metrics,
        }
    }
}

fn client_addressing(config: &Config) -> crate::http::client_addr::ClientAddressing {
    let traffic = &config.traffic;
    crate::http::client_addr::ClientAddressing::new(
        &traffic.trusted_proxies,
        &traffic.client_address_header,
    )
}

impl<T: Transport> Gateway<T> {
    pub fn with_transport(config: Arc<Config>, supergraph: Supergraph, transport: T) -> Self {
        let metrics = Metrics::new();
        let state = State::configured(supergraph, &config).with_metrics(&metrics);
        let persisted = Persisted::from_config(&config).map(Arc::new);
        Self {
            persisted,
            state: ArcSwapOption::from_pointee(state),
            planning: planning(&config),
            request_slots: tokio::sync::Semaphore::new(config.traffic.max_concurrent_requests),
            memory: crate::memory::budget(&config),
            header_rules: crate::http::headers::HeaderRules::compile(
                &config.headers,
                &config.subgraphs,
            ),
            client_addressing: client_addressing(&config),
            auth: crate::auth::Auth::new(&config),
            subscriptions: subscriptions(&config, &metrics),
            usage: UsageRecorder::new(&config.usage),
            rate_limiter: crate::rate_limit::RateLimiter::new(&config),
            coprocessor: Coprocessor::new(&config, metrics.registry()).map(Arc::new),
            config,
            transport: Arc::new(transport),
            lifecycle: Lifecycle::default(),
            metrics,
        }
    }

    /// This gateway's Prometheus metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// What in-flight requests hold against `limits.max_inflight_bytes`.
    pub fn memory(&self) -> &MemoryBudget {
        &self.memory
    }

    /// Whether a new request may start: refused (the message says why) while less than
    /// `limits.max_response_bytes` of the memory budget is free, the most one request
    /// may need to read its subgraph responses. An idle gateway always has it (the
    /// budget is at least twice that).
    pub(crate) fn admit_memory(&self) -> Result<(), (&'static str, String)> {
        let headroom = self.config.limits.max_response_bytes;
        if self.memory.admit(headroom) {
            return Ok(());
        }
        let message = format!(
            "the gateway's in-flight requests hold {} of its {} bytes of memory (limits.max_inflight_bytes); retry shortly",
            self.memory.held(),
            self.memory.limit()
        );
        Err((MEMORY_BUDGET_EXCEEDED, message))
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
    pub fn admit_socket(&self, client: Option<std::net::IpAddr>) -> Result<SocketSlot, String> {
        self.subscriptions.admit_socket(client)
    }

    /// Resolves once subscriptions are ended for shutdown.
    pub fn subscriptions_shutdown(&self) -> ShutdownSignal {
        self.subscriptions.shutdown_signal()
    }

    pub fn readiness(&self) -> Readiness {
        self.lifecycle.readiness(self.state.load().is_some())
    }

    /// SHA-256 of the supergraph served now.
    pub fn supergraph_hash(&self) -> Option<[u8; 32]> {
        self.state.load().as_ref().map(|s| s.supergraph.hash)
    }

    /// What the usage recorder holds, with the served supergraph's hash.
    pub fn usage_report(&self) -> Option<graphfleet_admin_api::UsageReport> {
        let hash = self.supergraph_hash();
        Some(self.usage.as_ref()?.report(hash.as_ref()))
    }

    /// Plan the operations of `report` (most requested first) into the plan cache of
    /// the served supergraph, until `deadline`; the number planned. Each is warmed as
    /// clients send it: without an operation name (when its document allows) and with.
    pub async fn warm_up(
        &self,
        report: &graphfleet_admin_api::UsageReport,
        deadline: Instant,
    ) -> usize {
        let Some(state) = self.state() else { return 0 };
        let mut planned = 0;
        for op in &report.operations {
            if Instant::now() >= deadline {
                break;
            }
            let mut names = vec![None];
            names.extend(op.name.as_deref().map(Some));
            for name in names {
                let prepared = self.planning.prepare(&state, &op.document, name, deadline);
                if prepared.await.is_ok() {
                    planned += 1;
                }
            }
        }
        planned
    }

    /// The Prometheus text, with the served supergraph and reload counts as of now.
    pub fn render_metrics(&self) -> String {
        let state = self.state();
        let served = state.as_ref().map(|s| &s.supergraph.hash);
        let status = self.lifecycle.reload_status();
        let resilience = self.transport.resilience_stats();
        let limited = self.rate_limiter.as_ref().map(|l| l.counts());
        crate::telemetry::render_metrics(
            &self.metrics,
            served,
            &status,
            &self.memory,
            &resilience,
            limited,
        )
    }

    /// Run one request (`@defer` and subscriptions are not honoured: see
    /// [`Self::execute_shared`]).
    pub async fn execute(&self, request: &GraphQLRequest, meta: &RequestMeta) -> Outcome {
        self.execute_with(request, meta, false).await
    }

    /// Run one request, whose answer may go on after this returns: one that takes
    /// incremental delivery (`meta.incremental`) and defers fragments gets
    /// [`Outcome::Incremental`] once its initial payload is written, and a subscription
    /// over a streaming transport (`meta.stream`) gets [`Outcome::Subscribed`]; the rest
    /// follows from a task of its own.
    pub async fn execute_shared(&self, request: &GraphQLRequest, meta: &RequestMeta) -> Outcome {
        self.execute_with(request, meta, true).await
    }

    async fn execute_with(
        &self,
        request: &GraphQLRequest,
        meta: &RequestMeta,
        streams: bool,
    ) -> Outcome {
        let deadline = meta
            .deadline
            .unwrap_or_else(|| Instant::now() + self.config.traffic.request_timeout);
        let mut recorder = RequestRecorder::start(&self.metrics, deadline);
        let span = crate::otel_span!("request", graphql.operation.name = tracing::field::Empty);
        crate::telemetry::tracing::set_remote_parent(&span, &meta.trace_context);
        let outcome = self
            .run(request, meta, &mut recorder, streams)
            .instrument(span)
            .await
            .unwrap_or_else(Outcome::Refused);
        recorder.finish(outcome.classify());
        outcome
    }

    /// The stages, in order (see [`crate::pipeline`]); `streams`: the answer may go on
    /// from a task after this returns.
    async fn run(
        &self,
        request: &GraphQLRequest,
        meta: &RequestMeta,
        recorder: &mut RequestRecorder<'_>,
        streams: bool,
    ) -> Result<Outcome, RequestError> {
        // Before any work, unless buckets are per operation: those need its name.
        let limiter = self.rate_limiter.as_ref();
        if let Some(limiter) = limiter.filter(|l| !l.per_operation()) {
            limit::check(limiter, meta, None).await?;
        }
        let query = persisted::query_of(self.persisted.as_deref(), request)?;
        let state = self.state().ok_or_else(RequestError::not_ready)?;
        let deadline = Instant::now() + self.config.traffic.request_timeout;
        let name = request.operation_name.as_deref();
        // Draws the override labels (stage 2) for the cache key.
        let cached = self
            .planning
            .prepare(&state, &query, name, deadline)
            .await?;
        let mut changes = self
            .supergraph_stage(request, meta, &state, &cached)
            .await?;
        // The coprocessor's request instead: its operation prepared in turn.
        let replaced;
        let (request, query, cached) = match changes.request.take() {
            None => (request, query, cached),
            Some(other) => {
                replaced = other;
                let query = persisted::query_of(self.persisted.as_deref(), &replaced)?;
                let name = replaced.operation_name.as_deref();
                let cached = self
                    .planning
                    .prepare(&state, &query, name, deadline)
                    .await?;
                (&replaced, query, cached)
            }
        };
        let name = request.operation_name.as_deref();
        let operation = cached.prepared.operation.name.as_deref();
        if let Some(limiter) = limiter.filter(|l| l.per_operation()) {
            limit::check(limiter, meta, operation).await?;
        }
        if let Some(usage) = &self.usage {
            usage.record(&cached.usage, operation, &query, meta.app.as_ref());
        }
        let metrics = cached.metrics.get_or_init(|| {
            let listed = self.persisted.as_deref().is_some_and(|p| p.lists(&query));
            self.metrics.operation(operation, listed)
        });
        recorder.operation(metrics);
        crate::telemetry::tracing::record_operation(operation);
        let kind = validate::kind(&self.config.subscriptions, &cached, meta, streams)?;
        let defer = meta.incremental && streams;
        let (variables, values) = validate::variables(&state, &cached, request, defer)?;
        let dc = &self.config.demand_control;
        let cost = demand::check(dc, &state, &cached, &variables, values, Some(&**metrics))?
            .filter(|_| dc.expose_in_extensions);
        let claims = changes.claims.take().map(Arc::new);
        let claims = claims.as_ref().or(meta.claims.as_ref());
        let grants = changes.grants.as_ref();
        let mask = authorize::authorize(&self.config, &state, &cached, claims, grants, values)?;
        // Headers a coprocessor returned are the client's now: the rules run again.
        let forward = changes
            .headers
            .as_ref()
            .map(|h| self.header_rules.apply(h, claims.map(|c| &**c)));
        let forward_headers = forward.as_ref().unwrap_or(&meta.forward_headers);
        let fetch_hook = match (&self.coprocessor, &meta.coprocessor) {
            (Some(c), Some(ctx)) => c.subgraph_hook(ctx),
            _ => None,
        };
        if kind.is_subscription() {
            authorize::subscription_root(&cached, mask, values)?;
        }
        let planned = self
            .planning
            .variant(&state, &cached, values, mask, deadline);
        let variant = planned.await?;
        let plan = match &variant.plan {
            Ok(plan) => plan,
            Err(e) => return Err(plan_error(e).into()),
        };
        if streams && (values.incremental() || kind.is_subscription()) {
            let operation = execute::variant_key(&state, &query, name, cached.labels, values, mask);
            let started = Started {
                supergraph: state.supergraph.clone(),
                fetch_metrics: state.fetch_metrics.clone(),
                cached: cached.clone(),
                variant: variant.clone(),
                variables,
                headers: forward_headers.clone(),
                init_payload: meta.init_payload.clone(),
                deadline,
                operation,
                memory: self.memory.clone(),
                // Subscription events' fetches skip the subgraph stages.
                fetch_hook: fetch_hook.clone().filter(|_| !kind.is_subscription()),
            };
            let transport = self.transport.clone();
            if kind.is_subscription() {
                let (subscriptions, client) = (&self.subscriptions, meta.client);
                return execute::subscribe(subscriptions, started, client, transport, &self.config)
                    .map(Outcome::Subscribed);
            }
            let incremental = execute::incremental(started, cost, transport, &self.config);
            return incremental.await.map(Outcome::Incremental);
        }
        let max_response_bytes = self.config.limits.max_response_bytes;
        let reservation = reserve::reserve(&self.memory, &cached.footprint, max_response_bytes)?;
        // This request's share of the memory budget, held until its answer is sent.
        let memory = self.memory.charge();
        let ctx = ExecutionContext {
            supergraph: &state.supergraph,
            prepared: &cached.prepared,
            shapes: variant.shapes(&cached.prepared),
            plan,
            variables: &variables,
            transport: &*self.transport,
            headers: forward_headers,
            fetch_metrics: &state.fetch_metrics,
            max_response_bytes: self.config.limits.max_response_bytes,
            memory: &memory,
            keep_response_headers: self.header_rules.response.is_active(),
            fetch_hook: fetch_hook.as_deref(),
        };
        let response_rules = &self.header_rules.response;
        let outcome = execute::whole(&ctx, cost, &cached.footprint, response_rules).await;
        // Its charges now hold what it took; the answer's stays until it is sent.
        drop(reservation);
        Ok(outcome.holding(memory))
    }
}

impl<T: Transport> Gateway<T> {
    /// The `SupergraphRequest` coprocessor stage for `cached`, when configured; what
    /// its answer changes.
    async fn supergraph_stage(
        &self,
        request: &GraphQLRequest,
        meta: &RequestMeta,
        state: &Arc<State>,
        cached: &crate::pipeline::operation::CachedOperation,
    ) -> Result<SupergraphChanges, RequestError> {
        let coprocessor = self
            .coprocessor
            .as_ref()
            .filter(|c| c.supergraph_request_on());
        let (Some(coprocessor), Some(ctx)) = (coprocessor, &meta.coprocessor) else {
            return Ok(SupergraphChanges::default());
        };
        let op = &cached.prepared.operation;
        let kind = match op.operation_type {
            t if t.is_query() => "query",
            t if t.is_mutation() => "mutation",
            _ => "subscription",
        };
        let operation = crate::coprocessor::supergraph::Operation {
            name: op.name.as_deref(),
            kind,
            policies: match coprocessor.decides_policies() {
                true => authorize::policies(&self.config, state, cached),
                false => Vec::new(),
            },
        };
        let sdl = &state.supergraph.sdl;
        coprocessor
            .supergraph_request(ctx, request, operation, sdl)
            .await
    }
}

impl<T: Transport> ReloadTarget for Gateway<T> {
    fn served_hash(&self) -> Option<[u8; 32]> {
        self.supergraph_hash()
    }

    fn serve(&self, supergraph: Supergraph) {
        self.swap_supergraph(supergraph);
    }

    fn lifecycle(&self) -> &Lifecycle {
        &self.lifecycle
    }
}

fn subscriptions(config: &Config, metrics: &Metrics) -> Arc<Subscriptions> {
    Arc::new(Subscriptions::new(
        &config.subscriptions,
        config.traffic.max_connections,
        metrics.subscriptions.clone(),
    ))
}

fn planning(config: &Config) -> Planning {
    Planning::new(crate::runtime::worker_threads(config))
}
