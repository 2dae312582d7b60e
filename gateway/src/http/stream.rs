//! Subscriptions over HTTP: GraphQL over SSE (distinct connections mode:
//! `Accept: text/event-stream`) and Apollo's multipart subscriptions
//! (`Accept: multipart/mixed;subscriptionSpec=1.0`). Each client's events are written
//! by a task of its own into the response body, with a heartbeat so proxies keep idle
//! streams open; a client that goes away drops the body and so ends its subscription.

use super::multipart::HandlerBody;
use crate::pipeline::respond::Outcome;
use crate::subscription::{Next, Subscription, Undelivered};
use bytes::Bytes;
use hyper::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue};
use hyper::{Response, StatusCode};
use std::time::Duration;
use tokio::sync::mpsc;

/// How a client takes a stream of results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StreamKind {
    Sse,
    Multipart,
}

/// The streaming transport `Accept` asks for: `text/event-stream`, or `multipart/mixed`
/// with a `subscriptionSpec` (Apollo Client's subscriptions), weighted above zero.
pub(super) fn stream_kind(accept: Option<&HeaderValue>) -> Option<StreamKind> {
    let accept = accept.and_then(|a| a.to_str().ok())?;
    let mut found = None;
    for range in accept.split(',') {
        let mut params = range.split(';');
        let media = params.next().map(str::trim).unwrap_or("");
        let mut spec = false;
        let mut refused = false;
        for p in params {
            let Some((name, value)) = p.split_once('=') else {
                continue;
            };
            let (name, value) = (name.trim(), value.trim().trim_matches('"'));
            if name.eq_ignore_ascii_case("subscriptionSpec") {
                spec = value.starts_with("1.");
            } else if name.eq_ignore_ascii_case("q") {
                refused = !value.parse::<f32>().is_ok_and(|q| q > 0.0);
            }
        }
        if refused {
            continue;
        }
        if media.eq_ignore_ascii_case("text/event-stream") {
            return Some(StreamKind::Sse);
        }
        if media.eq_ignore_ascii_case("multipart/mixed") && spec {
            found = Some(StreamKind::Multipart);
        }
    }
    found
}

/// Frames of one transport.
trait Framing: Send + 'static {
    fn next(&self, payload: &[u8]) -> Bytes;
    /// The last message of a subscription that failed: `errors` is a JSON array.
    fn failed(&self, errors: &[u8]) -> Bytes;
    fn complete(&self) -> Bytes;
    fn heartbeat(&self) -> Bytes;
}

struct Sse;

impl Framing for Sse {
    fn next(&self, payload: &[u8]) -> Bytes {
        // Compact JSON holds no line breaks, so one `data:` line carries it.
        let mut out = Vec::with_capacity(payload.len() + 20);
        out.extend_from_slice(b"event: next\ndata: ");
        out.extend_from_slice(payload);
        out.extend_from_slice(b"\n\n");
        Bytes::from(out)
    }

    fn failed(&self, errors: &[u8]) -> Bytes {
        self.next(&errors_payload(errors))
    }

    fn complete(&self) -> Bytes {
        Bytes::from_static(b"event: complete\ndata:\n\n")
    }

    fn heartbeat(&self) -> Bytes {
        Bytes::from_static(b":\n\n")
    }
}

/// Apollo's multipart subscription format: each part is `{"payload":…}`; `{}` is a
/// heartbeat. Every part ends with the next delimiter, so it is whole once sent.
struct Multipart;

const PART_HEAD: &[u8] = b"\r\ncontent-type: application/json\r\n\r\n";
const DELIMITER: &[u8] = b"\r\n--graphql";

impl Multipart {
    fn part(json: &[u8]) -> Bytes {
        let mut out = Vec::with_capacity(json.len() + 64);
        out.extend_from_slice(PART_HEAD);
        out.extend_from_slice(json);
        out.extend_from_slice(DELIMITER);
        Bytes::from(out)
    }
}

impl Framing for Multipart {
    fn next(&self, payload: &[u8]) -> Bytes {
        let mut json = Vec::with_capacity(payload.len() + 12);
        json.extend_from_slice(b"{\"payload\":");
        json.extend_from_slice(payload);
        json.push(b'}');
        Self::part(&json)
    }

    fn failed(&self, errors: &[u8]) -> Bytes {
        self.next(&errors_payload(errors))
    }

    fn complete(&self) -> Bytes {
        Bytes::from_static(b"--\r\n")
    }

    fn heartbeat(&self) -> Bytes {
        Self::part(b"{}")
    }
}

/// `{"errors":…}` for a JSON array of errors.
pub(super) fn errors_payload(errors: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(errors.len() + 12);
    out.extend_from_slice(b"{\"errors\":");
    out.extend_from_slice(errors);
    out.push(b'}');
    out
}

/// Frames written ahead of a slow client; the subscription's own queue is the real bound.
const BODY_QUEUE: usize = 16;

/// The streamed answer to a request that asked for `kind`: a subscription's events, or
/// the one result of any other operation (and, over SSE, its request errors: the SSE
/// protocol carries them as a `next` event).
pub(super) fn response(
    kind: StreamKind,
    outcome: Outcome,
    heartbeat: Duration,
) -> Response<HandlerBody> {
    let (tx, rx) = mpsc::channel(BODY_QUEUE);
    let content_type = match kind {
        StreamKind::Sse => "text/event-stream",
        StreamKind::Multipart => "multipart/mixed;boundary=\"graphql\";subscriptionSpec=1.0",
    };
    match kind {
        StreamKind::Sse => {
            tokio::spawn(forward(Sse, outcome, tx, heartbeat));
        }
        StreamKind::Multipart => {
            // The body opens with the first delimiter; each part ends with the next.
            let _ = tx.try_send(Bytes::from_static(b"--graphql"));
            tokio::spawn(forward(Multipart, outcome, tx, heartbeat));
        }
    }
    let mut r = Response::new(HandlerBody::stream(rx));
    *r.status_mut() = StatusCode::OK;
    let headers = r.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

async fn forward(
    framing: impl Framing,
    outcome: Outcome,
    tx: mpsc::Sender<Bytes>,
    heartbeat: Duration,
) {
    let subscription = match outcome {
        Outcome::Subscribed(s) => s,
        other => {
            let _ = tx.send(framing.next(other.body())).await;
            let _ = tx.send(framing.complete()).await;
            return;
        }
    };
    pump(&framing, subscription, &tx, heartbeat).await;
}

/// Write `subscription`'s events until it ends or the client is gone.
async fn pump(
    framing: &impl Framing,
    mut subscription: Subscription,
    tx: &mpsc::Sender<Bytes>,
    heartbeat: Duration,
) {
    let mut beat = tokio::time::interval(heartbeat);
    beat.tick().await;
    loop {
        let next = tokio::select! {
            next = subscription.next() => next,
            _ = beat.tick() => {
                if tx.send(framing.heartbeat()).await.is_err() {
                    return;
                }
                continue;
            }
            () = tx.closed() => return,
        };
        let next = match next {
            Some(Next::Event(body)) => match subscription.deliver(tx, framing.next(&body)).await {
                Ok(()) => continue,
                Err(Undelivered::Gone) => return,
                Err(Undelivered::Cut(errors)) => Some(Next::Failed(errors)),
            },
            other => other,
        };
        // Ended: its place in the limits is freed before the last frames wait for a
        // slow client.
        drop(subscription);
        if let Some(Next::Failed(errors)) = next
            && tx.send(framing.failed(&errors)).await.is_err()
        {
            return;
        }
        let _ = tx.send(framing.complete()).await;
        return;
    }
}

#[cfg(test)]
mod tests {
    use super::{StreamKind, stream_kind};
    use hyper::header::HeaderValue;

    fn kind(accept: &str) -> Option<StreamKind> {
        stream_kind(Some(&HeaderValue::from_str(accept).expect("header value")))
    }

    #[test]
    fn accept_picks_the_streaming_transport() {
        assert_eq!(kind("text/event-stream"), Some(StreamKind::Sse));
        // What Apollo Client sends for a subscription.
        assert_eq!(
            kind("multipart/mixed;boundary=\"graphql\";subscriptionSpec=1.0,application/json"),
            Some(StreamKind::Multipart)
        );
        // @defer's multipart is not a subscription transport.
        assert_eq!(kind("multipart/mixed;deferSpec=20220824"), None);
        assert_eq!(kind("text/event-stream;q=0, application/json"), None);
        assert_eq!(kind("application/json"), None);
        assert_eq!(stream_kind(None), None);
    }
}
