//! Running a decoded request through the pipeline by the request deadline, and answering
//! it the way the client takes it: one JSON body, `@defer` parts, or a stream of
//! subscription events (SSE, multipart).

use super::negotiate::Accepts;
use super::{HandlerBody, multipart, response, stream};
use crate::executor::transport::Transport;
use crate::gateway::Gateway;
use crate::pipeline::error::RequestError;
use crate::pipeline::request::{GraphQLRequest, RequestMeta};
use crate::pipeline::respond::Outcome;
use hyper::{Response, StatusCode};

/// The answer to `request`, or the error refusing it (the pipeline's, or 504 past
/// `deadline`).
pub(super) async fn answer<T: Transport>(
    gateway: &Gateway<T>,
    request: &GraphQLRequest,
    meta: &RequestMeta,
    accepts: Accepts,
    deadline: tokio::time::Instant,
) -> Result<Response<HandlerBody>, RequestError> {
    let executed = gateway.execute_shared(request, meta);
    let Ok(outcome) = tokio::time::timeout_at(deadline, executed).await else {
        return Err(timed_out(gateway));
    };
    if let Some(kind) = accepts.stream {
        let subscribed = matches!(outcome, Outcome::Subscribed(_));
        // Multipart clients (Apollo Client) read request errors as plain JSON; the SSE
        // protocol carries them as a `next` event.
        if subscribed || kind == stream::StreamKind::Sse {
            let heartbeat = gateway.config.subscriptions.heartbeat_interval;
            return Ok(stream::response(kind, outcome, heartbeat));
        }
    }
    if gateway.coprocessor.is_some() && !matches!(outcome, Outcome::Incremental(_)) {
        return coprocessed(gateway, outcome, meta, accepts).await;
    }
    match outcome {
        Outcome::Refused(error) => Err(error),
        Outcome::Incremental(incremental) => Ok(multipart::response(incremental)),
        whole => {
            // A big body's buffer goes back to the executor's pool once sent, and its
            // charge against the memory budget is released then.
            use crate::executor::response::buffers;
            let (body, memory, headers) = whole.into_parts();
            let body = match memory {
                Some(memory) => buffers::into_charged_bytes(body, memory),
                None => buffers::into_bytes(body),
            };
            let mut answer = response(StatusCode::OK, accepts.media.as_str(), body);
            // From the subgraphs' headers (response rules, Cache-Control merge).
            answer.headers_mut().extend(headers);
            Ok(answer)
        }
    }
}

/// A single response through the `SupergraphResponse` stage (when configured).
async fn coprocessed<T: Transport>(
    gateway: &Gateway<T>,
    outcome: Outcome,
    meta: &RequestMeta,
    accepts: Accepts,
) -> Result<Response<HandlerBody>, RequestError> {
    let (status, mut headers, body, memory) = match outcome {
        Outcome::Refused(mut error) => {
            let status = error.status(accepts.media);
            let mut headers = std::mem::take(error.headers_mut());
            if let Some((name, value)) = error.header().cloned() {
                headers.insert(name, value);
            }
            (status, headers, error.into_body(), None)
        }
        whole => {
            let (body, memory, headers) = whole.into_parts();
            (StatusCode::OK, headers, body, memory)
        }
    };
    let (status, body) =
        super::coprocessed::supergraph_response(gateway, meta, status, &mut headers, body).await?;
    use crate::executor::response::buffers;
    let body = match memory {
        Some(memory) => buffers::into_charged_bytes(body, memory),
        None => buffers::into_bytes(body),
    };
    let mut answer = response(status, accepts.media.as_str(), body);
    answer.headers_mut().extend(headers);
    Ok(answer)
}

/// 504: the request was not done within `traffic.request_timeout`.
pub(super) fn timed_out<T: Transport>(gateway: &Gateway<T>) -> RequestError {
    let timeout = gateway.config.traffic.request_timeout;
    RequestError::http(
        StatusCode::GATEWAY_TIMEOUT,
        Some("GATEWAY_TIMEOUT"),
        &format!("the request did not complete within {timeout:?}"),
    )
}
