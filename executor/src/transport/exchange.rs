//! One HTTP exchange with a subgraph: the request sent, the status judged and the body
//! read under its size cap and memory charge, all within the fetch's timeout.

use super::{FetchError, Fetched, Http2, HttpClient};
use crate::memory::{Charge, MEMORY_BUDGET_EXCEEDED};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use std::future::Future;
use std::time::Duration;

/// What a subgraph body may take: at most `bytes`, charged to `charge` as it arrives;
/// and whether the response's headers are kept beside it.
pub(super) struct Cap {
    pub(super) bytes: usize,
    pub(super) charge: Charge,
    pub(super) keep_headers: bool,
}

/// The whole body, at most `cap.bytes` (else `SUBREQUEST_RESPONSE_TOO_LARGE`, unread
/// past the limit), in one buffer: sized by `Content-Length` up front when there is
/// one, so a large body is not gathered chunk by chunk and then copied again into one
/// piece. Without it the frames are kept as they come and joined once at the end:
/// growing one buffer would leave each smaller one it outgrew with the allocator.
///
/// The body is charged to the memory budget as it is read: all of an announced
/// `Content-Length` at once, else frame by frame. Without room, the read stops with
/// `MEMORY_BUDGET_EXCEEDED`; the body that is read carries its charge until dropped.
///
/// For a compressed response `body` is the decoding body: the cap counts decoded
/// bytes (a small gzip bomb stops at `max`), and its size hint is unknown, so the
/// compressed `Content-Length` neither rejects nor sizes the buffer.
async fn read_body<B>(body: B, cap: Cap) -> Result<Bytes, FetchError>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<tower_http::BoxError>,
{
    use crate::response::buffers;
    use hyper::body::Body as _;
    let max = cap.bytes;
    let mut body = std::pin::pin!(body);
    let too_large = || FetchError {
        code: FetchError::RESPONSE_TOO_LARGE,
        message: format!("subgraph response larger than {max} bytes"),
    };
    let over_memory = |e: crate::memory::OverBudget| FetchError {
        code: MEMORY_BUDGET_EXCEEDED,
        message: e.to_string(),
    };
    let announced = body.size_hint().exact().map(|n| n as usize);
    if announced.is_some_and(|n| n > max) {
        return Err(too_large());
    }
    let charge = cap.charge;
    if let Some(n) = announced {
        charge.try_add(n).map_err(over_memory)?;
    }
    // A big body goes into a buffer an earlier one left (see `response::buffers`).
    let mut sized = announced.map(|n| buffers::BYTES.take(n));
    let mut frames = Vec::new();
    let mut len = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| {
            let e: tower_http::BoxError = e.into();
            FetchError::http(format!("reading response body: {}", error_chain(&*e)))
        })?;
        if let Ok(data) = frame.into_data() {
            len += data.len();
            if len > max {
                return Err(too_large());
            }
            if len > charge.bytes() {
                charge.try_add(len - charge.bytes()).map_err(over_memory)?;
            }
            match &mut sized {
                Some(buf) => buf.extend_from_slice(&data),
                None => frames.push(data),
            }
        }
    }
    charge.release_to(len);
    let buf = match sized {
        Some(buf) => buf,
        None if frames.len() == 1 => {
            let only = frames.pop().expect("one frame");
            return Ok(buffers::charged(only, charge));
        }
        None => {
            // Each frame is dropped once copied, so the join needs no charge of its own.
            let mut joined = buffers::BYTES.take(len);
            for frame in frames {
                joined.extend_from_slice(&frame);
            }
            joined
        }
    };
    Ok(buffers::into_charged_bytes(buf, charge))
}

/// One HTTP exchange bounded by `timeout`; owns everything so followers can share it.
pub(super) fn call(
    client: HttpClient,
    request: hyper::Request<Full<Bytes>>,
    timeout: Duration,
    cap: Cap,
    http2: Http2,
) -> impl Future<Output = Result<Fetched, FetchError>> + Send + 'static {
    use tower_service::Service as _;
    let mut client = client;
    let exchange = async move {
        // Always ready (the pool waits for a connection inside the call).
        std::future::poll_fn(|cx| client.poll_ready(cx))
            .await
            .map_err(|e| FetchError::http(error_chain(&e)))?;
        let response = client.call(request).await.map_err(|e| {
            let mut message = error_chain(&e);
            // What an HTTP/1.1 client reads from an h2c-only server is not a
            // response; hyper's "invalid HTTP version" alone does not say why.
            // When the server's SETTINGS frame arrives before the request is
            // written, the connection closes first and hyper reports it as
            // "connection was not ready" instead.
            if http2 == Http2::Off && is_h2_server_symptom(&e) {
                message
                    .push_str(" (if the subgraph speaks only HTTP/2, set http2: prior_knowledge)");
            }
            FetchError::http(message)
        })?;
        let status = response.status();
        crate::propagation::record_status(status.as_u16());
        let (head, body) = response.into_parts();
        let headers = cap.keep_headers.then(|| std::sync::Arc::new(head.headers));
        let body = read_body(body, cap).await?;
        // A failed status with a GraphQL body still carries errors worth merging.
        if !status.is_success() && serde_json::from_slice::<serde::de::IgnoredAny>(&body).is_err() {
            return Err(FetchError::http(format!(
                "subgraph responded with status {status}"
            )));
        }
        Ok(Fetched { body, headers })
    };
    async move {
        tokio::time::timeout(timeout, exchange)
            .await
            .unwrap_or_else(|_| {
                Err(FetchError {
                    code: FetchError::TIMEOUT,
                    message: format!("timed out after {timeout:?}"),
                })
            })
    }
}

/// Another request like `request`, for a retry (hyper requests are not `Clone`).
pub(super) fn copy_request(request: &hyper::Request<Full<Bytes>>) -> hyper::Request<Full<Bytes>> {
    let mut copy = hyper::Request::new(request.body().clone());
    *copy.method_mut() = request.method().clone();
    *copy.uri_mut() = request.uri().clone();
    *copy.version_mut() = request.version();
    *copy.headers_mut() = request.headers().clone();
    copy
}

/// Whether the server sent something other than an HTTP/1.1 response: bytes hyper
/// could not parse, bytes on an idle connection (reported without a predicate,
/// hence the message test), or a connection closed by them before the request was
/// written (canceled).
fn is_h2_server_symptom(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut source = Some(e);
    while let Some(e) = source {
        let unparsable = e.downcast_ref::<hyper::Error>().is_some_and(|e| {
            e.is_parse() || e.is_canceled() || e.to_string().contains("unexpected message")
        });
        if unparsable {
            return true;
        }
        source = e.source();
    }
    false
}

/// `error: cause: cause`, so "connection reset" is not hidden behind "client error".
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}
