//! External coprocessors (`coprocessor`): an HTTP service called at the router,
//! supergraph and subgraph stages of a request, speaking Apollo Router's coprocessor
//! protocol v1 ([`protocol`]), so an existing coprocessor works unchanged. Each stage
//! module builds its payload and applies the answer; this one holds what they share:
//! the client, the metrics, and the failure mode (`on_error`). Nothing here runs, and
//! nothing is allocated per request, while the section is absent.

mod client;
pub mod context;
pub mod protocol;
pub mod router;
pub mod subgraph;
pub mod supergraph;

use crate::telemetry::coprocessor::CoprocessorMetrics;
use client::{CallError, Client};
use context::RequestContext;
use graphfleet_config::{Config, ContextConf, CoprocessorConfig, OnError};
use protocol::{Context, Control, Payload, Stage};
use std::time::Instant;

pub struct Coprocessor {
    pub config: CoprocessorConfig,
    client: Client,
    metrics: CoprocessorMetrics,
}

/// A stage failed and `on_error: fail` stops the request (the reason is logged).
#[derive(Debug)]
pub struct Failed;

/// What a stage's call came to.
pub(crate) enum Called {
    /// The answer, to apply.
    Answer(Box<Payload>),
    /// The call failed and `on_error: continue` goes on without it.
    Skipped,
}

impl Coprocessor {
    /// The coprocessor of `config`, its metrics in `registry`; `None` when not set.
    pub fn new(config: &Config, registry: &prometheus::Registry) -> Option<Self> {
        let section = config.coprocessor.as_ref()?;
        Some(Self {
            client: Client::new(section.timeout, config.limits.max_response_bytes),
            metrics: CoprocessorMetrics::new(registry),
            config: section.clone(),
        })
    }

    /// `payload` sent to `url`. A failure is logged and counted; with `on_error:
    /// continue` it becomes [`Called::Skipped`], else [`Failed`].
    pub(crate) async fn call(&self, url: &str, payload: Payload) -> Result<Called, Failed> {
        let stage = payload.stage;
        let started = Instant::now();
        let result = self.client.call(url, &payload).await;
        match result {
            Ok(answer) => {
                let outcome = match answer.control {
                    Some(Control::Break(_)) if stage.is_request() => "break",
                    _ => "continue",
                };
                self.metrics
                    .record(stage.as_str(), outcome, started.elapsed());
                Ok(Called::Answer(Box::new(answer)))
            }
            Err(e) => self.failed(stage, &e, started),
        }
    }

    /// An answer that could not be applied: a failure like a failed call.
    pub(crate) fn refused(
        &self,
        stage: Stage,
        error: protocol::ProtocolError,
    ) -> Result<Called, Failed> {
        self.failed(stage, &CallError::Protocol(error), Instant::now())
    }

    fn failed(&self, stage: Stage, error: &CallError, started: Instant) -> Result<Called, Failed> {
        let open = self.config.on_error == OnError::Continue;
        let outcome = if open { "failed_open" } else { "failed" };
        self.metrics
            .record(stage.as_str(), outcome, started.elapsed());
        tracing::warn!(stage = stage.as_str(), %error, fail_open = open, "coprocessor call failed");
        if open {
            Ok(Called::Skipped)
        } else {
            Err(Failed)
        }
    }

    /// A new request's context, when any stage uses one.
    pub fn start(
        &self,
        headers: http::HeaderMap,
        method: http::Method,
        claims: Option<&serde_json::Map<String, serde_json::Value>>,
    ) -> std::sync::Arc<RequestContext> {
        std::sync::Arc::new(RequestContext::new(headers, method, claims))
    }
}

/// The context entries `conf` sends, and their keys (a response stage deletes those
/// its answer leaves out); `None` when it sends none.
pub(crate) fn context_out(
    conf: &ContextConf,
    ctx: &RequestContext,
) -> Option<(Context, Vec<String>)> {
    if !conf.is_on() {
        return None;
    }
    let entries = ctx.entries.lock();
    let sent: serde_json::Map<_, _> = entries
        .iter()
        .filter(|(k, _)| conf.includes(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let keys = sent.keys().cloned().collect();
    Some((Context { entries: sent }, keys))
}

/// The answer's context merged into the request's, by the rules of its stage.
pub(crate) fn context_in(
    ctx: &RequestContext,
    stage: Stage,
    sent: &[String],
    answer: &mut Payload,
) {
    let Some(returned) = answer.context.take() else {
        return;
    };
    let mut entries = ctx.entries.lock();
    if stage.is_request() {
        protocol::merge_at_request(&mut entries, returned);
    } else {
        protocol::merge_at_response(&mut entries, sent, returned);
    }
}
