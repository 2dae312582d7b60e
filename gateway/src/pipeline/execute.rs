//! Stage 8, execute: the planned request run against the subgraphs. Its whole response
//! at once; or, when the transport lets the answer go on after the request returns, an
//! incremental response (`@defer`) or a subscription, from a task of their own.

use super::demand;
use super::error::RequestError;
use super::operation::Started;
use super::plan_cache::State;
use super::progressive_override::LabelMask;
use super::reserve::Footprint;
use super::respond::{Incremental, Outcome};
use crate::auth::authz::AuthMask;
use crate::executor::transport::Transport;
use crate::executor::{ExecutionContext, Part, execute, execute_incremental};
use crate::http::response_headers::{Answer, ResponseHeaderRules};
use crate::operation::ConditionValues;
use crate::subscription::{Subscription, Subscriptions};
use graphfleet_config::Config;
use sha2::{Digest, Sha256};
use std::net::IpAddr;
use std::sync::Arc;
use tracing::Instrument;

/// Runs `ctx`'s request and answers with its whole response, the cost estimate in its
/// extensions when `cost` is set, and the headers `response_rules` make of the
/// subgraphs'; what it took goes to `footprint`.
pub async fn whole<T: Transport>(
    ctx: &ExecutionContext<'_, T>,
    cost: Option<f64>,
    footprint: &Footprint,
    response_rules: &ResponseHeaderRules,
) -> Outcome {
    let executed = execute(ctx).instrument(crate::otel_span!("execute")).await;
    footprint.observe(executed.received.saturating_add(executed.body.len()));
    let headers = match ctx.keep_response_headers {
        false => http::HeaderMap::new(),
        true => {
            let answer = Answer {
                errors: executed.field_errors,
                mutation: ctx.prepared.operation.operation_type.is_mutation(),
            };
            response_rules.apply(&executed.subgraph_headers, answer)
        }
    };
    Outcome::Executed {
        body: match cost {
            Some(cost) => demand::expose(executed.body, cost),
            None => executed.body,
        },
        field_errors: executed.field_errors,
        memory: None,
        headers,
    }
}

/// What tells a request's plan variant from every other one: the state it is planned
/// in, the operation's cache key (text, name, labels), its condition values and its
/// authorization mask.
pub fn variant_key(
    state: &Arc<State>,
    query: &str,
    operation_name: Option<&str>,
    labels: LabelMask,
    values: ConditionValues,
    mask: AuthMask,
) -> [u8; 32] {
    let mut operation = Sha256::new();
    operation.update((Arc::as_ptr(state) as usize).to_le_bytes());
    operation.update(State::cache_key_with(query, operation_name, labels));
    operation.update(values.0.to_le_bytes());
    operation.update(mask.0.to_le_bytes());
    operation.finalize().into()
}

/// Executes `started` in a task of its own, which sends its payloads as they are
/// written; answers once the initial payload is. The task stops when the client is
/// gone (the receiver dropped) or at the request deadline, ending the response with a
/// last payload saying so.
pub(crate) async fn incremental<T: Transport>(
    started: Started,
    cost: Option<f64>,
    transport: Arc<T>,
    config: &Config,
) -> Result<Incremental, RequestError> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Part>();
    let max_response_bytes = config.limits.max_response_bytes;
    let timeout = config.traffic.request_timeout;
    let task = async move {
        let Ok(plan) = &started.variant.plan else {
            return;
        };
        let memory = started.memory.charge();
        let ctx = started.context(plan, &*transport, max_response_bytes, &memory);
        let mut first = true;
        let mut sink = |mut part: Part| {
            if std::mem::take(&mut first)
                && let Some(cost) = cost
            {
                part.body = demand::expose(part.body, cost);
            }
            tx.send(part).is_ok()
        };
        let until = tokio::time::Instant::from_std(started.deadline);
        let run = execute_incremental(&ctx, &mut sink);
        if tokio::time::timeout_at(until, run).await.is_err() {
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
                memory: None,
            });
        }
    };
    tokio::spawn(task.instrument(tracing::Span::current()));
    match rx.recv().await {
        Some(first) => Ok(Incremental { first, rest: rx }),
        None => Err(RequestError::message(
            "the gateway failed to execute this operation",
        )),
    }
}

/// Starts `started`, a subscription, for `client` (see [`Subscriptions::subscribe`]);
/// refused when a subscription limit is reached.
pub(crate) fn subscribe<T: Transport>(
    subscriptions: &Arc<Subscriptions>,
    started: Started,
    client: Option<IpAddr>,
    transport: Arc<T>,
    config: &Config,
) -> Result<Subscription, RequestError> {
    subscriptions
        .subscribe(started, client, transport, config)
        .map_err(|message| RequestError::coded(crate::subscription::LIMIT, message))
}
