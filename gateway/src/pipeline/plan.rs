//! Planning off the async workers: an operation the plan cache does not hold (stage 3),
//! and a plan variant for condition values or denied fields not planned before (stage
//! 7). Parsing and planning are CPU work a large operation makes long, so they run on
//! the blocking pool, one per worker thread at a time, and are given up at the request
//! deadline.

use super::error::RequestError;
use super::operation::{CachedOperation, Variant};
use super::plan_cache::{State, plan_error};
use crate::auth::authz::{AuthMask, plan_denied};
use crate::operation::ConditionValues;
use crate::operation::shape::Shapes;
use crate::query_planner::{PlanBudget, PlanError, build_plan_within};
use std::sync::Arc;
use std::time::Instant;

/// Slots for operations being prepared or planned at once (one per worker thread), so
/// a burst of new operations cannot take every CPU from the requests already planned.
pub struct Planning(Arc<tokio::sync::Semaphore>);

impl Planning {
    pub fn new(slots: usize) -> Self {
        Self(Arc::new(tokio::sync::Semaphore::new(slots.max(1))))
    }

    /// The cached operation for `query`, or one prepared and planned now, given up at
    /// `deadline`.
    pub async fn prepare(
        &self,
        state: &Arc<State>,
        query: &str,
        operation_name: Option<&str>,
        deadline: Instant,
    ) -> Result<Arc<CachedOperation>, RequestError> {
        let labels = state.draw_labels();
        let key = State::cache_key_with(query, operation_name, labels);
        if let Some(hit) = state.cached(&key) {
            return Ok(hit);
        }
        let (state, query) = (state.clone(), query.to_owned());
        let name = operation_name.map(str::to_owned);
        let prepared = self.off_workers(deadline, move || {
            state.prepare_new(key, &query, name.as_deref(), labels, Some(deadline))
        });
        Ok(prepared.await??)
    }

    /// The plan and shapes of `cached` for a request whose condition variables take
    /// `values` and that may not read the fields `mask` denies: made already, or
    /// planned now and given up at `deadline`.
    pub async fn variant(
        &self,
        state: &Arc<State>,
        cached: &Arc<CachedOperation>,
        values: ConditionValues,
        mask: AuthMask,
        deadline: Instant,
    ) -> Result<Arc<Variant>, RequestError> {
        let made = match cached.auth.get().filter(|_| !mask.is_empty()) {
            None => cached.made_variant(values),
            Some(auth) => auth.made(values, mask),
        };
        if let Some(variant) = made {
            return Ok(variant);
        }
        let (state, cached) = (state.clone(), cached.clone());
        self.off_workers(deadline, move || {
            let budget = state.budget(Some(deadline));
            authorized_variant(&state, &cached, values, mask, &budget)
        })
        .await
    }

    /// Run `work` on the blocking pool, at most one per planning slot at a time; an
    /// error once `deadline` passes (the work itself stops at the same deadline).
    async fn off_workers<R: Send + 'static>(
        &self,
        deadline: Instant,
        work: impl FnOnce() -> R + Send + 'static,
    ) -> Result<R, RequestError> {
        let timed_out = || RequestError::from(plan_error(&PlanError::Timeout));
        let until = tokio::time::Instant::from_std(deadline);
        let slot = tokio::time::timeout_at(until, self.0.clone().acquire_owned())
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
                Err(RequestError::coded(
                    "INTERNAL_SERVER_ERROR",
                    "the gateway failed to plan this operation",
                ))
            }
            Err(_) => Err(timed_out()),
        }
    }
}

/// The plan and shapes of `cached` for a request whose condition variables take
/// `values`, made within `budget` if they are new (a plan that ran out of time is not
/// kept).
fn variant(
    state: &State,
    cached: &CachedOperation,
    values: ConditionValues,
    budget: &PlanBudget,
) -> Arc<Variant> {
    if let Some(made) = cached.made_variant(values) {
        return made;
    }
    let ir = &cached.prepared.ir;
    let meta = state.meta(cached.labels);
    let plan =
        crate::otel_span!("plan").in_scope(|| build_plan_within(&meta, ir, Some(values), budget));
    let shapes = Shapes::build(&state.supergraph.api_schema, ir, Some(values));
    let keep = !matches!(plan, Err(PlanError::Timeout));
    let variant = Arc::new(Variant::new(plan, shapes));
    if keep {
        cached.keep_variant(values, variant.clone());
    }
    variant
}

/// [`variant`] for a request that authorization denies some fields (`mask`).
fn authorized_variant(
    state: &State,
    cached: &CachedOperation,
    values: ConditionValues,
    mask: AuthMask,
    budget: &PlanBudget,
) -> Arc<Variant> {
    let Some(auth) = cached.auth.get().filter(|_| !mask.is_empty()) else {
        return variant(state, cached, values, budget);
    };
    if let Some(made) = auth.made(values, mask) {
        return made;
    }
    let meta = state.meta(cached.labels);
    let api = &state.supergraph.api_schema;
    let (plan, shapes) = plan_denied(auth, &meta, api, &cached.prepared, values, mask, budget);
    let keep = !matches!(plan, Err(PlanError::Timeout));
    let variant = Arc::new(Variant::new(plan, shapes));
    if keep {
        auth.keep(values, mask, variant.clone());
    }
    variant
}
