//! Stage 3, the plan cache: one loaded supergraph ([`State`]) and the operations prepared
//! against it, keyed by (operation name, text, drawn override labels). A miss parses,
//! validates and holds the document to the configured limits (`operation`), then plans
//! it for all condition variables false; everything later stages compile per operation
//! (variants, authorization, cost) hangs off the cached entry.

use super::operation::{CachedOperation, PlanResult, plan_weight};
use super::progressive_override::{LabelMask, MetaRef, OverrideLabels};
use crate::executor::metrics::FetchMetrics;
use crate::operation::{self, ConditionValues, RequestErrors};
use crate::query_planner::{PlanBudget, PlanError, build_plan_within};
use crate::supergraph::Supergraph;
use crate::telemetry::Metrics;
use crate::telemetry::metrics::CacheMetrics;
use graphfleet_config::{Config, LimitsConfig};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use std::time::Instant;

/// Operations the cache sizes its tables for up front.
const CACHE_ITEMS: usize = 4096;

/// An estimate of what a cached operation holds, in bytes: its document and IR grow
/// with the query text, its plan with the subgraph queries it prints (an operation whose
/// fragments expand prints far more than its own text).
fn entry_weight(query: &str, plan: &PlanResult) -> u64 {
    const BASE: u64 = 1024;
    BASE + 4 * query.len() as u64 + plan_weight(plan)
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

/// One loaded supergraph and the operations planned against it. Swapped whole on
/// reload, so a cached plan can never meet another supergraph.
pub struct State {
    pub supergraph: Arc<Supergraph>,
    cache: PlanCache,
    /// Checked when an operation is prepared, so cache hits pay nothing.
    limits: graphfleet_planner::OperationLimits,
    cache_metrics: CacheMetrics,
    /// Per-subgraph fetch metrics handles, by `SubgraphId`.
    pub(crate) fetch_metrics: Arc<FetchMetrics>,
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
        self.fetch_metrics = Arc::new(metrics.fetch_metrics(names));
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
            // Bounded in estimated bytes (see [`entry_weight`]): the least recently useful
            // entries are evicted when it is full.
            cache: PlanCache::with_weighter(
                CACHE_ITEMS,
                config.limits.plan_cache_bytes as u64,
                ByWeight,
            ),
            limits: crate::config::operation_limits(&config.limits),
            cache_metrics: CacheMetrics::default(),
            fetch_metrics: Arc::default(),
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

    /// The federation metadata operations drawn with `labels` are planned against.
    pub fn meta(&self, labels: LabelMask) -> MetaRef<'_> {
        self.labels.meta(&self.supergraph.meta, labels)
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
        let meta = self.meta(labels);
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
        let weight = entry_weight(query, &plan);
        let cached = Arc::new(CachedOperation::new(prepared, plan, labels, weight));
        self.cache.insert(key, cached.clone());
        Ok(cached)
    }
}

/// A plan error as the request error the client gets.
pub fn plan_error(e: &PlanError) -> RequestErrors {
    let message = format!("cannot plan this operation: {e}");
    match e.code() {
        Some(code) => RequestErrors(vec![operation::limits::error(code, message)]),
        None => RequestErrors::message(message),
    }
}
