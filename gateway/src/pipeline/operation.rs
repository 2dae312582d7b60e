//! The prepared operation: what the plan cache keeps per (operation text, name, override
//! labels), and a request of it ready to execute. Shared by the stages; uses none of them.

use super::progressive_override::LabelMask;
use crate::auth::authz::OperationAuth;
use crate::executor::ExecutionContext;
use crate::executor::metrics::FetchMetrics;
use crate::executor::transport::Transport;
use crate::operation::shape::Shapes;
use crate::operation::{ConditionValues, PreparedOperation};
use crate::query_planner::{PlanError, QueryPlan};
use crate::supergraph::Supergraph;
use crate::telemetry::metrics::OperationMetrics;
use apollo_compiler::response::JsonMap;
use apollo_compiler::validation::Valid;
use graphfleet_planner::operation::demand::CostPlan;
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

pub type PlanResult = Result<QueryPlan, PlanError>;

/// What one plan holds, in bytes: per fetch its printed subgraph query twice over (the
/// text, and the merge paths, renames, keys and shapes that follow its selections) and
/// a fixed part.
pub(crate) fn plan_weight(plan: &PlanResult) -> u64 {
    const PER_FETCH: u64 = 1024;
    let Ok(plan) = plan else {
        return 0;
    };
    plan.fetches
        .iter()
        .map(|f| PER_FETCH + 2 * f.operation.len() as u64)
        .sum::<u64>()
}

/// How to answer requests whose condition variables take one set of values.
pub struct Variant {
    pub plan: PlanResult,
    /// `None`: the operation's own shapes (made for all condition variables false).
    shapes: Option<Shapes>,
}

impl Variant {
    /// A variant with shapes of its own.
    pub(crate) fn new(plan: PlanResult, shapes: Shapes) -> Self {
        Self {
            plan,
            shapes: Some(shapes),
        }
    }

    pub fn shapes<'s>(&'s self, prepared: &'s PreparedOperation) -> &'s Shapes {
        self.shapes.as_ref().unwrap_or(&prepared.shapes)
    }
}

/// Variants kept per operation besides the first; cleared when full. A plain map, not
/// a cache: few operations have more than a couple, and the plan cache bounds the rest.
const VARIANTS_CAPACITY: usize = 64;

/// The variants made for other condition values, and what their plans weigh.
#[derive(Default)]
struct Variants {
    plans: FxHashMap<ConditionValues, Arc<Variant>>,
    weight: u64,
}

pub struct CachedOperation {
    pub prepared: PreparedOperation,
    /// For requests whose condition variables are all false: the only variant of an
    /// operation without `@skip`/`@include` on variables.
    first: Arc<Variant>,
    /// Variants for other values of the condition variables, made on first use.
    variants: Mutex<Variants>,
    /// Its request metrics handles, resolved on first use.
    pub(crate) metrics: OnceLock<Arc<OperationMetrics>>,
    /// Its estimated size in the plan cache, fixed when it is made.
    pub(crate) weight: u64,
    /// The progressive-override labels it is planned with.
    pub(crate) labels: LabelMask,
    /// The authorization requirements it touches and its plans per denied set, made
    /// on the first request when the supergraph has authorization directives.
    pub(crate) auth: OnceLock<OperationAuth<Variant>>,
    /// Its demand-control cost estimate, compiled on the first request that needs it.
    pub(crate) demand: OnceLock<CostPlan>,
    /// Its record in the usage recorder, found on the first request.
    pub(crate) usage: OnceLock<crate::usage::Recorded>,
    /// The memory its requests took, which the next one reserves.
    pub(crate) footprint: super::reserve::Footprint,
}

impl CachedOperation {
    /// `prepared`, planned with `labels` for all condition variables false (`plan`).
    pub(crate) fn new(
        prepared: PreparedOperation,
        plan: PlanResult,
        labels: LabelMask,
        weight: u64,
    ) -> Self {
        Self {
            prepared,
            first: Arc::new(Variant { plan, shapes: None }),
            variants: Mutex::default(),
            metrics: OnceLock::new(),
            weight,
            labels,
            auth: OnceLock::new(),
            demand: OnceLock::new(),
            usage: OnceLock::new(),
            footprint: Default::default(),
        }
    }

    /// The plan and shapes for a request whose condition variables take `values`, if
    /// they are made already.
    pub fn made_variant(&self, values: ConditionValues) -> Option<Arc<Variant>> {
        if values == ConditionValues::default() {
            return Some(self.first.clone());
        }
        self.variants.lock().plans.get(&values).cloned()
    }

    /// Keep `variant` for requests whose condition variables take `values`. The
    /// variants together hold at most what the entry is weighed at (so the cache holds
    /// at most twice its budget) and at most [`VARIANTS_CAPACITY`]; past either bound
    /// they are cleared.
    pub(crate) fn keep_variant(&self, values: ConditionValues, variant: Arc<Variant>) {
        let added = plan_weight(&variant.plan);
        let mut variants = self.variants.lock();
        let full = variants.plans.len() >= VARIANTS_CAPACITY
            || variants.weight.saturating_add(added) > self.weight;
        if full {
            *variants = Variants::default();
        }
        variants.weight += added;
        variants.plans.insert(values, variant);
    }
}

/// A request planned and ready to execute, owned by the task that answers it after the
/// request itself returns (an incremental response, a subscription).
pub(crate) struct Started {
    pub(crate) supergraph: Arc<Supergraph>,
    pub(crate) fetch_metrics: Arc<FetchMetrics>,
    pub(crate) cached: Arc<CachedOperation>,
    pub(crate) variant: Arc<Variant>,
    pub(crate) variables: Valid<JsonMap>,
    pub(crate) headers: crate::executor::headers::SubgraphHeaders,
    /// The `connection_init` payload for subgraph WebSockets (see `RequestMeta`).
    pub(crate) init_payload: Option<Arc<str>>,
    pub(crate) deadline: Instant,
    /// The operation and its plan variant: supergraph, text, name, labels, condition
    /// values and authorization (identical subscriptions share a subgraph subscription).
    pub(crate) operation: [u8; 32],
    /// The gateway's memory budget, which executing it is charged to.
    pub(crate) memory: crate::executor::memory::MemoryBudget,
    /// The subgraph coprocessor stages of an incremental response's fetches.
    pub(crate) fetch_hook: Option<Arc<dyn crate::executor::hook::FetchHook>>,
}

impl Started {
    /// What the executor reads to run `plan` (this request's own) over `transport`,
    /// charging `memory` (from [`Self::memory`]).
    pub(crate) fn context<'a, T: Transport>(
        &'a self,
        plan: &'a QueryPlan,
        transport: &'a T,
        max_response_bytes: usize,
        memory: &'a crate::executor::memory::Charge,
    ) -> ExecutionContext<'a, T> {
        ExecutionContext {
            supergraph: &self.supergraph,
            prepared: &self.cached.prepared,
            shapes: self.variant.shapes(&self.cached.prepared),
            plan,
            variables: &self.variables,
            transport,
            headers: &self.headers,
            fetch_metrics: &self.fetch_metrics,
            max_response_bytes,
            memory,
            // Streams (`@defer`, subscriptions) take no subgraph response headers.
            keep_response_headers: false,
            fetch_hook: self.fetch_hook.as_deref(),
        }
    }
}
