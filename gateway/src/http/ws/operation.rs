//! One operation on a WebSocket, whichever protocol: executed like an HTTP request (a
//! request slot while it starts, the memory budget), then its result, or its events
//! until it ends, written in the connection's protocol.

use super::wire::Protocol;
use crate::executor::transport::Transport;
use crate::gateway::Gateway;
use crate::http::stream::errors_payload;
use crate::pipeline::request::{GraphQLRequest, RequestMeta};
use crate::pipeline::respond::Outcome;
use crate::subscription::{Next, Undelivered};
use bytes::Bytes;
use serde::Deserialize;
use std::sync::Arc;
use tokio::sync::{mpsc, watch};
use tokio_tungstenite::tungstenite::Message;

/// Where an operation writes, and in which protocol.
pub(super) struct Out {
    pub(super) protocol: Protocol,
    pub(super) outbox: mpsc::Sender<Message>,
    /// Set (to the errors ending every operation) when the connection's credentials are
    /// revoked: its token expired.
    pub(super) revoked: watch::Receiver<Option<Bytes>>,
}

/// Run operation `id`; ended early by a revocation, with the revocation's errors as its
/// last message.
pub(super) async fn run<T: Transport>(
    gateway: &Arc<Gateway<T>>,
    meta: &RequestMeta,
    id: &str,
    request: GraphQLRequest,
    out: Out,
) {
    let mut watch = out.revoked.clone();
    let revoked = async move {
        let errors = watch.wait_for(Option::is_some).await.map(|e| e.clone());
        match errors {
            Ok(errors) => errors,
            // The connection is gone: nothing left to tell.
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        () = execute(gateway, meta, id, request, &out) => {}
        errors = revoked => {
            // The operation (and its subscription) is dropped first, so this is its last
            // message.
            let errors = errors.unwrap_or_default();
            let _ = out.outbox.send(out.protocol.error(id, &errors)).await;
        }
    }
}

/// Execute one operation and send its results.
async fn execute<T: Transport>(
    gateway: &Arc<Gateway<T>>,
    meta: &RequestMeta,
    id: &str,
    request: GraphQLRequest,
    out: &Out,
) {
    let (protocol, outbox) = (out.protocol, &out.outbox);
    let refuse =
        |code: &str, message: &str| protocol.error(id, &crate::subscription::errors(code, message));
    // Held to `traffic.max_concurrent_requests` like HTTP requests (a subscription only
    // while it starts).
    let Ok(slot) = gateway.request_slots.try_acquire() else {
        let max = gateway.config.traffic.max_concurrent_requests;
        let message = format!("the gateway is working on {max} requests, its limit; retry shortly");
        let _ = outbox
            .send(refuse("TOO_MANY_CONCURRENT_REQUESTS", &message))
            .await;
        return;
    };
    if let Err((code, message)) = gateway.admit_memory() {
        let _ = outbox.send(refuse(code, &message)).await;
        return;
    }
    let timeout = gateway.config.traffic.request_timeout;
    let executed = tokio::time::timeout(timeout, gateway.execute_shared(&request, meta)).await;
    drop(slot);
    let Ok(outcome) = executed else {
        let message = format!("the request did not complete within {timeout:?}");
        let _ = outbox.send(refuse("GATEWAY_TIMEOUT", &message)).await;
        return;
    };
    let subscription = match outcome {
        Outcome::Subscribed(s) => s,
        Outcome::Refused(error) => {
            let errors = errors_of(error.body());
            let _ = outbox.send(protocol.error(id, &errors)).await;
            return;
        }
        other => {
            let body = other.into_body();
            let _ = outbox.send(protocol.next(id, &body)).await;
            let _ = outbox.send(protocol.complete(id)).await;
            return;
        }
    };
    events(subscription, id, out).await;
}

/// Deliver a subscription's events until it ends.
async fn events(mut subscription: crate::subscription::Subscription, id: &str, out: &Out) {
    let (protocol, outbox) = (out.protocol, &out.outbox);
    loop {
        let next = match subscription.next().await {
            Some(Next::Event(body)) => {
                match subscription.deliver(outbox, protocol.next(id, &body)).await {
                    Ok(()) => continue,
                    Err(Undelivered::Gone) => return,
                    Err(Undelivered::Cut(errors)) => Some(Next::Failed(errors)),
                }
            }
            other => other,
        };
        // Ended: its place in the limits is freed before the last messages wait for a
        // slow client.
        drop(subscription);
        if let Some(Next::Failed(errors)) = next {
            let _ = outbox
                .send(protocol.next(id, &errors_payload(&errors)))
                .await;
        }
        let _ = outbox.send(protocol.complete(id)).await;
        return;
    }
}

/// The `errors` array of a request error body.
fn errors_of(body: &[u8]) -> Bytes {
    #[derive(Deserialize)]
    struct Body<'a> {
        #[serde(borrow)]
        errors: &'a serde_json::value::RawValue,
    }
    match serde_json::from_slice::<Body<'_>>(body) {
        Ok(b) => Bytes::copy_from_slice(b.errors.get().as_bytes()),
        Err(_) => crate::subscription::errors("INTERNAL_SERVER_ERROR", "the request failed"),
    }
}
