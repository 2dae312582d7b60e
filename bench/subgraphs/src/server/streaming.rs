//! Operations over streaming HTTP responses: GraphQL over SSE (distinct connections
//! mode: `event: next` per result, then `event: complete`) and Apollo multipart
//! subscriptions (`multipart/mixed;subscriptionSpec="1.0"`, `{"payload":…}` parts and
//! `{}` heartbeats); plus [`Feed`], one subscription's events on its route's clock,
//! which the WebSocket transport uses too.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use futures::SinkExt;
use futures::stream::StreamExt;
use http_body_util::{Either, StreamBody};
use hyper::body::Frame;
use hyper::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue};
use hyper::{Response, StatusCode};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::{broadcast, watch};

use super::{App, Body};
use crate::engine::{EventStream, Execution};

/// A streaming HTTP response format, chosen by the `Accept` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Transport {
    Sse,
    Multipart,
}

const BOUNDARY_CONTENT_TYPE: &str = "multipart/mixed;boundary=\"graphql\";subscriptionSpec=\"1.0\"";

impl Transport {
    /// The first media range of `Accept` this server can answer decides: a streaming
    /// one gives its transport, a JSON one (or anything else understood) plain JSON.
    pub(super) fn accepted(accept: Option<&HeaderValue>) -> Option<Self> {
        let accept = accept?.to_str().ok()?;
        for range in accept.split(',') {
            let mut params = range.split(';').map(str::trim);
            let media = params.next().unwrap_or("").to_ascii_lowercase();
            match media.as_str() {
                "text/event-stream" => return Some(Transport::Sse),
                "multipart/mixed" => {
                    let subscription = params.any(|p| {
                        let p = p.replace(' ', "").to_ascii_lowercase();
                        p == "subscriptionspec=\"1.0\"" || p == "subscriptionspec=1.0"
                    });
                    if subscription {
                        return Some(Transport::Multipart);
                    }
                }
                "application/json"
                | "application/graphql-response+json"
                | "*/*"
                | "application/*" => return None,
                _ => {}
            }
        }
        None
    }

    fn content_type(self) -> &'static str {
        match self {
            Transport::Sse => "text/event-stream",
            Transport::Multipart => BOUNDARY_CONTENT_TYPE,
        }
    }

    /// Bytes before the first result.
    fn start(self) -> &'static [u8] {
        match self {
            Transport::Sse => b"",
            Transport::Multipart => b"\r\n--graphql",
        }
    }

    /// One result (`{"data":…}` / `{"errors":…}`).
    fn next(self, result: &[u8]) -> Bytes {
        let mut out = Vec::with_capacity(result.len() + 64);
        match self {
            Transport::Sse => {
                out.extend_from_slice(b"event: next\ndata: ");
                out.extend_from_slice(result);
                out.extend_from_slice(b"\n\n");
            }
            Transport::Multipart => {
                out.extend_from_slice(b"\r\ncontent-type: application/json\r\n\r\n{\"payload\":");
                out.extend_from_slice(result);
                out.extend_from_slice(b"}\r\n--graphql");
            }
        }
        Bytes::from(out)
    }

    /// The end of the stream.
    fn complete(self) -> Bytes {
        match self {
            // `data:` keeps EventSource listeners firing (graphql-sse's protocol note).
            Transport::Sse => Bytes::from_static(b"event: complete\ndata: \n\n"),
            Transport::Multipart => Bytes::from_static(b"--\r\n"),
        }
    }
}

const HEARTBEAT: &[u8] = b"\r\ncontent-type: application/json\r\n\r\n{}\r\n--graphql";

/// One subscription's events, produced on the ticks of its route's clock.
pub(super) struct Feed {
    app: Arc<App>,
    route: usize,
    events: EventStream,
    ticks: broadcast::Receiver<()>,
    stopping: watch::Receiver<bool>,
}

impl Feed {
    /// The next event's payload; `None` when the stream is complete (its `limit` was
    /// reached, or the server is stopping).
    pub(super) async fn next(&mut self) -> Option<Vec<u8>> {
        if self.events.is_done() {
            return None;
        }
        tokio::select! {
            tick = self.ticks.recv() => match tick {
                // A lagging subscriber skips ticks, never events.
                Ok(()) | Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => return None,
            },
            () = stopped(&mut self.stopping) => return None,
        }
        let route = &self.app.routes[self.route];
        let event = self.events.next_event(&route.endpoint)?;
        route.events.fetch_add(1, Ordering::Relaxed);
        Some(event)
    }
}

/// Resolves once the server is stopping (the guard `wait_for` returns is not `Send`).
pub(super) async fn stopped(stopping: &mut watch::Receiver<bool>) {
    let _ = stopping.wait_for(|stopping| *stopping).await;
}

/// An operation started for a streaming transport.
pub(super) enum Started {
    /// One result, then completion.
    Single(Vec<u8>),
    /// Refused before execution: the errors as a JSON array.
    Refused(String),
    Stream(Feed),
}

impl Started {
    /// The single result of a refusal: `{"errors":[…]}`.
    fn refusal(errors: &str) -> Vec<u8> {
        format!("{{\"errors\":{errors}}}").into_bytes()
    }
}

/// Starts an operation (counted as a request; the route's delay applies first).
pub(super) async fn start(app: &Arc<App>, index: usize, request: &[u8]) -> Started {
    let route = &app.routes[index];
    route.requests.fetch_add(1, Ordering::Relaxed);
    if let Some(delay) = route.delay {
        tokio::time::sleep(delay).await;
    }
    match route.endpoint.start(request) {
        Execution::Response(body) => Started::Single(body),
        Execution::Refused(errors) => Started::Refused(
            serde_json::to_string(&errors)
                .unwrap_or_else(|_| r#"[{"message":"internal error"}]"#.to_owned()),
        ),
        Execution::Stream(events) => {
            // Endpoints with a Subscription type always have a clock (App::new).
            let Some(clock) = &route.clock else {
                return Started::Refused(r#"[{"message":"No event clock here."}]"#.to_owned());
            };
            route.subscriptions.fetch_add(1, Ordering::Relaxed);
            Started::Stream(Feed {
                app: app.clone(),
                route: index,
                events,
                ticks: clock.ticks.subscribe(),
                stopping: app.stopping.subscribe(),
            })
        }
    }
}

type Chunk = Result<Frame<Bytes>, std::convert::Infallible>;

/// Answers one operation over SSE or multipart. Results are written as they come; a
/// client that disconnects ends its subscription at the next event or heartbeat.
pub(super) async fn respond(
    app: Arc<App>,
    index: usize,
    transport: Transport,
    request: Bytes,
) -> Response<Body> {
    let heartbeat_every = app.stream.multipart_heartbeat;
    let first = Frame::data(Bytes::from_static(transport.start()));
    let body: futures::stream::BoxStream<'static, Chunk> = match start(&app, index, &request).await
    {
        Started::Single(result) => {
            let frames = [
                first,
                Frame::data(transport.next(&result)),
                Frame::data(transport.complete()),
            ];
            futures::stream::iter(frames.into_iter().map(Ok)).boxed()
        }
        Started::Refused(errors) => {
            let result = Started::refusal(&errors);
            let frames = [
                first,
                Frame::data(transport.next(&result)),
                Frame::data(transport.complete()),
            ];
            futures::stream::iter(frames.into_iter().map(Ok)).boxed()
        }
        Started::Stream(mut feed) => {
            let (mut tx, rx) = futures::channel::mpsc::channel::<Chunk>(8);
            tokio::spawn(async move {
                if tx.send(Ok(first)).await.is_err() {
                    return;
                }
                let mut heartbeat = tokio::time::interval_at(
                    tokio::time::Instant::now() + heartbeat_every,
                    heartbeat_every,
                );
                loop {
                    let chunk = tokio::select! {
                        event = feed.next() => match event {
                            Some(event) => transport.next(&event),
                            None => break,
                        },
                        _ = heartbeat.tick(), if transport == Transport::Multipart => {
                            Bytes::from_static(HEARTBEAT)
                        }
                    };
                    if tx.send(Ok(Frame::data(chunk))).await.is_err() {
                        return;
                    }
                }
                let _ = tx.send(Ok(Frame::data(transport.complete()))).await;
            });
            rx.boxed()
        }
    };
    let mut response = Response::new(Either::Right(StreamBody::new(body)));
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static(transport.content_type()),
    );
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// A GraphQL-over-HTTP GET query string (`query`, `operationName`, `variables` and
/// `extensions` as JSON) as a request JSON object.
pub(super) fn request_from_query(query: &str) -> Result<Vec<u8>, String> {
    let mut request = serde_json::Map::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let key = percent_decode(key)?;
        let value = percent_decode(value)?;
        let value = match key.as_str() {
            "query" | "operationName" => serde_json::Value::String(value),
            "variables" | "extensions" => serde_json::from_str(&value)
                .map_err(|e| format!("The \"{key}\" parameter is not JSON: {e}"))?,
            _ => continue,
        };
        request.insert(key, value);
    }
    Ok(serde_json::Value::Object(request).to_string().into_bytes())
}

/// `application/x-www-form-urlencoded` decoding: `+` is a space, `%XX` a byte.
fn percent_decode(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| format!("Invalid percent-encoding in {text:?}."))?;
                out.push(hex);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).map_err(|_| format!("The query string {text:?} is not UTF-8."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_picks_the_first_understood_range() {
        let pick = |s: &'static str| Transport::accepted(Some(&HeaderValue::from_static(s)));
        assert_eq!(pick("text/event-stream"), Some(Transport::Sse));
        assert_eq!(
            pick("multipart/mixed;subscriptionSpec=\"1.0\", application/json"),
            Some(Transport::Multipart)
        );
        assert_eq!(pick("application/json, text/event-stream"), None);
        assert_eq!(
            pick("multipart/mixed;deferSpec=20220824, application/json"),
            None
        );
        assert_eq!(Transport::accepted(None), None);
    }

    #[test]
    fn get_query_strings_decode() {
        let body =
            request_from_query("query=subscription+%7B+a+%7D&variables=%7B%22x%22%3A1%7D&x=y")
                .expect("valid");
        let value: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
        assert_eq!(
            value,
            serde_json::json!({"query": "subscription { a }", "variables": {"x": 1}})
        );
        assert!(request_from_query("query=%zz").is_err());
        assert!(request_from_query("variables=%7B").is_err());
    }
}
