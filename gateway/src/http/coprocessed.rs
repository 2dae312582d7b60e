//! The coprocessor's stages at the HTTP layer: `RouterRequest` once the body is read
//! (before it is decoded), `RouterResponse` on the response written, and
//! `SupergraphResponse` on a single GraphQL response. Streams (`@defer` parts,
//! subscription events) go out untouched.

use super::body::Payload;
use super::{HandlerBody, response};
use crate::coprocessor::Coprocessor;
use crate::coprocessor::context::RequestContext;
use crate::coprocessor::router::RouterNext;
use crate::executor::transport::Transport;
use crate::gateway::Gateway;
use crate::pipeline::error::RequestError;
use crate::pipeline::request::{Media, RequestMeta};
use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Response, StatusCode};

/// Marks a response a `RouterRequest` break answered: no response stage runs on it.
#[derive(Clone, Copy)]
struct Answered;

/// `RouterRequest` on `payload`, the body read: the payload to decode (the answer's
/// body instead, for a POST), or the break's response. Returned headers are the
/// client's from here on, so `meta` is built from them again.
pub(super) async fn router_request<T: Transport>(
    gateway: &Gateway<T>,
    coprocessor: &Coprocessor,
    ctx: &std::sync::Arc<RequestContext>,
    path: &str,
    payload: Payload,
    meta: &mut RequestMeta,
    rebuild: impl FnOnce(&hyper::HeaderMap, &mut RequestMeta),
) -> Result<Result<Payload, Response<HandlerBody>>, RequestError> {
    let text = match &payload {
        Payload::Body(body) => String::from_utf8_lossy(body).into_owned(),
        Payload::Query(_) => String::new(),
    };
    let sdl = gateway.state().map(|s| s.supergraph.sdl.clone());
    let next = coprocessor
        .router_request(ctx, path, &text, sdl.as_deref())
        .await
        .map_err(|_| RequestError::internal())?;
    match next {
        RouterNext::Answer {
            status,
            headers,
            body,
        } => {
            let mut answer = response(status, Media::Json.as_str(), body);
            answer.headers_mut().extend(headers);
            answer.extensions_mut().insert(Answered);
            Ok(Err(answer))
        }
        RouterNext::Go {
            body,
            headers_changed,
        } => {
            if headers_changed {
                let headers = ctx.headers.lock().clone();
                rebuild(&headers, meta);
            }
            Ok(Ok(match (payload, body) {
                (Payload::Body(_), Some(body)) => Payload::Body(Bytes::from(body)),
                (payload, _) => payload,
            }))
        }
    }
}

/// `RouterResponse` on `answer` (a whole body only).
pub(super) async fn router_response<T: Transport>(
    gateway: &Gateway<T>,
    ctx: &RequestContext,
    answer: Response<HandlerBody>,
) -> Response<HandlerBody> {
    let Some(coprocessor) = gateway
        .coprocessor
        .as_ref()
        .filter(|c| c.router_response_on())
    else {
        return answer;
    };
    if answer.extensions().get::<Answered>().is_some() || !answer.body().is_full() {
        return answer;
    }
    let (mut parts, body) = answer.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let sdl = gateway.state().map(|s| s.supergraph.sdl.clone());
    let called = coprocessor
        .router_response(ctx, parts.status, &mut parts.headers, body, sdl.as_deref())
        .await;
    match called {
        Ok((status, body)) => {
            parts.status = status;
            parts.headers.remove(hyper::header::CONTENT_LENGTH);
            Response::from_parts(parts, HandlerBody::full(body))
        }
        Err(_) => internal_error(),
    }
}

/// `SupergraphResponse` on a single response's status, headers and body.
pub(super) async fn supergraph_response<T: Transport>(
    gateway: &Gateway<T>,
    meta: &RequestMeta,
    status: StatusCode,
    headers: &mut hyper::HeaderMap,
    body: Vec<u8>,
) -> Result<(StatusCode, Vec<u8>), RequestError> {
    let on = gateway
        .coprocessor
        .as_ref()
        .filter(|c| c.supergraph_response_on());
    let (Some(coprocessor), Some(ctx)) = (on, &meta.coprocessor) else {
        return Ok((status, body));
    };
    let sdl = gateway.state().map(|s| s.supergraph.sdl.clone());
    coprocessor
        .supergraph_response(ctx, status, headers, body, sdl.as_deref())
        .await
        .map_err(|_| RequestError::internal())
}

/// 500 for a failed stage (the reason is logged, not sent).
fn internal_error() -> Response<HandlerBody> {
    let error = RequestError::internal();
    let mut r = response(
        StatusCode::INTERNAL_SERVER_ERROR,
        Media::Json.as_str(),
        error.into_body(),
    );
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}
