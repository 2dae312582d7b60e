//! Stage 4, what the cached document cannot tell about one request: whether its kind may
//! run here, and its variables. (The document itself is parsed, validated and held to
//! the limits once per plan-cache entry, stage 3.)

use super::error::RequestError;
use super::operation::CachedOperation;
use super::plan_cache::State;
use super::request::{GraphQLRequest, RequestMeta};
use crate::operation::{self, ConditionValues};
use apollo_compiler::executable::OperationType;
use apollo_compiler::response::JsonMap;
use apollo_compiler::validation::Valid;
use graphfleet_config::SubscriptionsConfig;

/// The kind of `cached`'s operation, if this request may run it: a subscription needs
/// subscriptions on and a transport that streams (`streams`: the client's carries
/// events and the caller answers from a task), a mutation needs POST.
pub fn kind(
    subscriptions: &SubscriptionsConfig,
    cached: &CachedOperation,
    meta: &RequestMeta,
    streams: bool,
) -> Result<OperationType, RequestError> {
    let kind = cached.prepared.operation.operation_type;
    if kind.is_subscription() {
        if !subscriptions.enabled {
            return Err(RequestError::message(
                "subscriptions are disabled on this gateway (subscriptions.enabled)",
            ));
        }
        if !meta.stream || !streams {
            return Err(RequestError::message(
                "a subscription needs a streaming transport: WebSocket (graphql-transport-ws), \
                 SSE (Accept: text/event-stream) or multipart HTTP \
                 (Accept: multipart/mixed;subscriptionSpec=1.0)",
            ));
        }
    }
    if !meta.allow_mutation && kind.is_mutation() {
        return Err(RequestError::mutation_over_get());
    }
    Ok(kind)
}

/// The request's variables coerced to the operation's, and the values of its condition
/// variables they give; incremental ones when `defer` (the client takes `@defer`
/// payloads) and the operation defers anything.
pub fn variables(
    state: &State,
    cached: &CachedOperation,
    request: &GraphQLRequest,
    defer: bool,
) -> Result<(Valid<JsonMap>, ConditionValues), RequestError> {
    let empty = JsonMap::new();
    let variables = request.variables.as_ref().unwrap_or(&empty);
    let prepared = &cached.prepared;
    let variables = operation::coerce_variables(&state.supergraph.api_schema, prepared, variables)?;
    let mut values = ConditionValues::of(&prepared.ir, &variables);
    if defer && prepared.ir.can_defer() {
        values = values.with_incremental();
    }
    Ok((variables, values))
}
