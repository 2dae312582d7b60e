//! GraphQL over HTTP (hyper 1): POST and GET on /graphql with
//! `application/graphql-response+json` / `application/json` negotiation, and health.

use crate::executor::transport::Transport;
use crate::gateway::{Gateway, GraphQLRequest, Outcome, RequestMeta};
use crate::lifecycle::Readiness;
use bytes::Bytes;
use graphfleet_config::CsrfConfig;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::{ACCEPT, ALLOW, CONTENT_TYPE, HeaderValue, RETRY_AFTER, WWW_AUTHENTICATE};
use hyper::{Method, Request, Response, StatusCode};
use std::sync::Arc;

pub mod headers;
mod idle;
mod layers;
mod multipart;
mod server;
mod stream;
mod ws;

pub use ws::serve_socket;

/// The client's address, put in each request's extensions by the listener.
#[derive(Debug, Clone, Copy)]
pub struct ClientAddr(pub std::net::IpAddr);

pub use layers::{HttpLayers, ResponseBody};
pub use multipart::HandlerBody;
pub use server::{serve, serve_blocking};

const GRAPHQL_RESPONSE: &str = "application/graphql-response+json";
const JSON: &str = "application/json";

fn response(
    status: StatusCode,
    content_type: &str,
    body: impl Into<Bytes>,
) -> Response<HandlerBody> {
    let mut r = Response::new(HandlerBody::full(body));
    *r.status_mut() = status;
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_str(content_type).expect("static content type"),
    );
    r
}

fn error_body(message: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({ "errors": [{ "message": message }] }))
        .expect("static JSON serializes")
}

fn coded_error_body(code: &str, message: &str) -> Vec<u8> {
    let body =
        serde_json::json!({ "errors": [{ "message": message, "extensions": { "code": code } }] });
    serde_json::to_vec(&body).expect("static JSON serializes")
}

/// 200 once a supergraph is loaded, 503 before that and from a shutdown signal on. The
/// body says which supergraph serves and why the file on disk does not, when a reload
/// failed (still ready: the last good supergraph keeps serving).
fn readiness<T: Transport>(gateway: &Gateway<T>) -> Response<HandlerBody> {
    let readiness = gateway.readiness();
    let (status, word) = match readiness {
        Readiness::Ready => (StatusCode::OK, "UP"),
        _ => (StatusCode::SERVICE_UNAVAILABLE, "DOWN"),
    };
    let reload = gateway.lifecycle.reload_status();
    let body = serde_json::json!({
        "status": word,
        "reason": readiness.as_str(),
        "supergraph": reload.short_hash(),
        "failed_reloads": reload.failed_reloads,
        "reload_error": reload.last_error,
    });
    let body = serde_json::to_vec(&body).expect("static JSON serializes");
    response(status, JSON, body)
}

/// Which media type to answer with, per the Accept header (None: 406): of the two we
/// offer, the one the client weighs highest (`q`, taken from the most specific range
/// naming it; `q=0` refuses it). On a tie, the one named more specifically; when both
/// are named outright, `application/graphql-response+json`; when only wildcards match,
/// `application/json` (what clients predating the GraphQL media type expect).
fn negotiate(accept: Option<&HeaderValue>) -> Option<&'static str> {
    let Some(accept) = accept.and_then(|a| a.to_str().ok()) else {
        return Some(JSON);
    };
    let ranges: Vec<(&str, f32)> = accept.split(',').filter_map(media_range).collect();
    let weight = |offer: &str| -> (f32, u8) {
        let (kind, _) = offer.split_once('/').unwrap_or((offer, ""));
        let specificity = |range: &str| {
            if range.eq_ignore_ascii_case(offer) {
                Some(3)
            } else if range
                .strip_suffix("/*")
                .is_some_and(|k| k.eq_ignore_ascii_case(kind))
            {
                Some(2)
            } else if range == "*/*" {
                Some(1)
            } else {
                None
            }
        };
        ranges
            .iter()
            .filter_map(|(range, q)| specificity(range).map(|s| (s, *q)))
            .max_by_key(|(s, _)| *s)
            .map_or((0.0, 0), |(s, q)| (q, s))
    };
    let ((gq, gs), (jq, js)) = (weight(GRAPHQL_RESPONSE), weight(JSON));
    let graphql_wins = gq > jq || (gq == jq && (gs > js || (gs == 3 && js == 3)));
    if gq > 0.0 && graphql_wins {
        Some(GRAPHQL_RESPONSE)
    } else if jq > 0.0 {
        Some(JSON)
    } else {
        None
    }
}

/// One `type/subtype;params` range of an Accept header and its weight (`q`, default
/// 1); a range with a malformed weight is ignored.
fn media_range(part: &str) -> Option<(&str, f32)> {
    let mut params = part.split(';');
    let media = params.next()?.trim();
    if media.is_empty() {
        return None;
    }
    let mut q = 1.0;
    for param in params {
        if let Some((name, value)) = param.split_once('=')
            && name.trim().eq_ignore_ascii_case("q")
        {
            q = value
                .trim()
                .parse::<f32>()
                .ok()
                .filter(|q| (0.0..=1.0).contains(q))?;
        }
    }
    Some((media, q))
}

/// Answer one request; generic over the transport so fuzzing can run without network.
pub async fn handle<T: Transport>(
    gateway: &Arc<Gateway<T>>,
    req: Request<Incoming>,
) -> Response<HandlerBody> {
    let telemetry = &gateway.config.telemetry;
    if telemetry.metrics && req.uri().path() == telemetry.metrics_path {
        let text = gateway.render_metrics();
        return response(StatusCode::OK, prometheus::TEXT_FORMAT, text);
    }
    let upgrade = ws::is_upgrade(&req);
    match req.uri().path() {
        "/health" | "/health/live" => {
            return response(StatusCode::OK, JSON, &b"{\"status\":\"UP\"}"[..]);
        }
        "/health/ready" => return readiness(gateway),
        path if path == gateway.config.graphql_path => {}
        path if upgrade && gateway.config.subscriptions.websocket_path.as_deref() == Some(path) => {
        }
        _ => return response(StatusCode::NOT_FOUND, JSON, error_body("not found")),
    }
    let subscriptions = &gateway.config.subscriptions;
    let ws_path = subscriptions
        .websocket_path
        .as_deref()
        .unwrap_or(&gateway.config.graphql_path);
    if upgrade && req.uri().path() == ws_path {
        return websocket(gateway, req).await;
    }
    let streaming = stream::stream_kind(req.headers().get(ACCEPT));
    let negotiated = match streaming {
        // Errors before the stream starts are JSON.
        Some(_) => Some(JSON),
        None => negotiate(req.headers().get(ACCEPT)),
    };
    let Some(media) = negotiated else {
        return response(
            StatusCode::NOT_ACCEPTABLE,
            JSON,
            error_body("Accept must allow application/graphql-response+json or application/json"),
        );
    };
    if matches!(*req.method(), Method::GET | Method::POST)
        && csrf_blocked(&gateway.config.csrf, req.headers())
    {
        return response(
            StatusCode::BAD_REQUEST,
            media,
            coded_error_body("CSRF_PREVENTED", &csrf_message(&gateway.config.csrf)),
        );
    }
    let Ok(_slot) = gateway.request_slots.try_acquire() else {
        let max = gateway.config.traffic.max_concurrent_requests;
        let mut r = response(
            StatusCode::SERVICE_UNAVAILABLE,
            media,
            coded_error_body(
                "TOO_MANY_CONCURRENT_REQUESTS",
                &format!("the gateway is working on {max} requests, its limit; retry shortly"),
            ),
        );
        r.headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from_static("1"));
        return r;
    };
    // One deadline for reading the body and executing: a slow upload cannot hold a
    // connection and a worker longer than `request_timeout`.
    let timeout = gateway.config.traffic.request_timeout;
    let deadline = tokio::time::Instant::now() + timeout;
    let is_post = req.method() == Method::POST;
    let claims = match gateway.auth.authenticate(req.headers()).await {
        Ok(claims) => claims,
        Err(e) => {
            let body = coded_error_body(e.code(), &e.to_string());
            let mut r = response(StatusCode::UNAUTHORIZED, media, body);
            r.headers_mut()
                .insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return r;
        }
    };
    // Only what subgraphs and tracing need, taken before the body consumes the request.
    let mut meta = RequestMeta {
        allow_mutation: is_post,
        forward_headers: Default::default(),
        trace_context: crate::telemetry::tracing::trace_headers(req.headers()),
        claims,
        incremental: streaming.is_none() && multipart::accepts_defer(req.headers().get(ACCEPT)),
        stream: streaming.is_some(),
        client: req.extensions().get::<ClientAddr>().map(|a| a.0),
    };
    meta.forward_headers = gateway
        .header_rules
        .apply(req.headers(), meta.claims.as_deref());
    let request = match *req.method() {
        Method::POST => {
            let content_type = req
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            if content_type.split(';').next().map(str::trim) != Some(JSON) {
                return response(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    media,
                    error_body("Content-Type must be application/json"),
                );
            }
            let limited = Limited::new(req.into_body(), gateway.config.limits.max_body_bytes);
            let Ok(read) = tokio::time::timeout_at(deadline, limited.collect()).await else {
                let message = format!("the request body was not received within {timeout:?}");
                return response(
                    StatusCode::REQUEST_TIMEOUT,
                    media,
                    coded_error_body("REQUEST_TIMEOUT", &message),
                );
            };
            let body = match read {
                Ok(b) => b.to_bytes(),
                Err(e) if e.is::<http_body_util::LengthLimitError>() => {
                    let limit = gateway.config.limits.max_body_bytes;
                    return response(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        media,
                        coded_error_body(
                            "PAYLOAD_TOO_LARGE",
                            &format!("the request body is larger than {limit} bytes"),
                        ),
                    );
                }
                Err(e) => {
                    return response(
                        StatusCode::BAD_REQUEST,
                        media,
                        error_body(&format!("cannot read body: {e}")),
                    );
                }
            };
            match serde_json::from_slice::<GraphQLRequest>(&body) {
                Ok(r) => r,
                Err(e) => {
                    return response(
                        StatusCode::BAD_REQUEST,
                        media,
                        error_body(&format!("request body is not a GraphQL request: {e}")),
                    );
                }
            }
        }
        Method::GET if query_len(&req) > gateway.config.limits.max_body_bytes => {
            let limit = gateway.config.limits.max_body_bytes;
            return response(
                StatusCode::URI_TOO_LONG,
                media,
                coded_error_body(
                    "PAYLOAD_TOO_LARGE",
                    &format!("the query string is longer than {limit} bytes"),
                ),
            );
        }
        Method::GET => match parse_get(req.uri().query().unwrap_or("")) {
            Ok(r) => r,
            Err(message) => return response(StatusCode::BAD_REQUEST, media, error_body(&message)),
        },
        _ => {
            let mut r = response(
                StatusCode::METHOD_NOT_ALLOWED,
                media,
                error_body("use GET or POST"),
            );
            r.headers_mut()
                .insert(ALLOW, HeaderValue::from_static("GET, POST"));
            return r;
        }
    };
    let executed = gateway.execute_shared(&request, &meta);
    let Ok(outcome) = tokio::time::timeout_at(deadline, executed).await else {
        let message = format!("the request did not complete within {timeout:?}");
        return response(
            StatusCode::GATEWAY_TIMEOUT,
            media,
            coded_error_body("GATEWAY_TIMEOUT", &message),
        );
    };
    if let Some(kind) = streaming {
        let subscribed = matches!(outcome, Outcome::Subscribed(_));
        // Multipart clients (Apollo Client) read request errors as plain JSON; the SSE
        // protocol carries them as a `next` event.
        if subscribed || kind == stream::StreamKind::Sse {
            let heartbeat = gateway.config.subscriptions.heartbeat_interval;
            return stream::response(kind, outcome, heartbeat);
        }
    }
    if let Outcome::NotReady(body) = outcome {
        return response(StatusCode::SERVICE_UNAVAILABLE, media, body);
    }
    if let Outcome::MutationNotAllowed(body) = outcome {
        let mut r = response(StatusCode::METHOD_NOT_ALLOWED, media, body);
        r.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("POST"));
        return r;
    }
    if let Outcome::Incremental(incremental) = outcome {
        return multipart::response(incremental);
    }
    let status = match (&outcome, media) {
        (Outcome::RequestError(_), GRAPHQL_RESPONSE) => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    };
    // A big body's buffer goes back to the executor's pool once sent.
    let body = crate::executor::response::buffers::into_bytes(outcome.into_body());
    response(status, media, body)
}

/// A WebSocket upgrade: authenticated like any request, then served by [`ws`].
async fn websocket<T: Transport>(
    gateway: &Arc<Gateway<T>>,
    req: Request<Incoming>,
) -> Response<HandlerBody> {
    if !gateway.config.subscriptions.enabled {
        return response(
            StatusCode::NOT_FOUND,
            JSON,
            error_body("subscriptions are disabled on this gateway (subscriptions.enabled)"),
        );
    }
    // Browsers open WebSockets cross-origin without a preflight (and with cookies):
    // with CORS configured, only its origins may.
    let cors = &gateway.config.cors;
    if let Some(origin) = req.headers().get(hyper::header::ORIGIN)
        && cors.enabled()
        && !layers::Origins::new(cors).allow(origin)
    {
        return response(
            StatusCode::FORBIDDEN,
            JSON,
            error_body("this origin may not open WebSockets here (cors.allow_origins)"),
        );
    }
    let claims = match gateway.auth.authenticate(req.headers()).await {
        Ok(claims) => claims,
        Err(e) => {
            let body = coded_error_body(e.code(), &e.to_string());
            let mut r = response(StatusCode::UNAUTHORIZED, JSON, body);
            r.headers_mut()
                .insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return r;
        }
    };
    let mut meta = RequestMeta {
        allow_mutation: true,
        forward_headers: Default::default(),
        trace_context: crate::telemetry::tracing::trace_headers(req.headers()),
        claims,
        incremental: false,
        stream: true,
        client: req.extensions().get::<ClientAddr>().map(|a| a.0),
    };
    meta.forward_headers = gateway
        .header_rules
        .apply(req.headers(), meta.claims.as_deref());
    ws::upgrade(gateway, req, meta)
}

/// Content types a browser sends cross-origin without a CORS preflight.
const SIMPLE_CONTENT_TYPES: [&str; 3] = [
    "text/plain",
    "application/x-www-form-urlencoded",
    "multipart/form-data",
];

/// Whether CSRF prevention refuses a request: a browser could have sent it from any page
/// without a preflight (its `Content-Type` is missing or one a form can send) and it
/// carries none of the headers that only a preflighted request can have.
pub fn csrf_blocked(csrf: &CsrfConfig, headers: &hyper::HeaderMap) -> bool {
    if !csrf.enabled {
        return false;
    }
    if let Some(content_type) = headers.get(CONTENT_TYPE) {
        // Not text, or no media type a form can send: a browser would have preflighted it.
        let Ok(content_type) = content_type.to_str() else {
            return false;
        };
        let essence = content_type.split(';').next().unwrap_or("").trim();
        if !SIMPLE_CONTENT_TYPES
            .iter()
            .any(|simple| essence.eq_ignore_ascii_case(simple))
        {
            return false;
        }
    }
    !csrf
        .required_headers
        .iter()
        .any(|name| headers.contains_key(name.as_str()))
}

/// What a client refused by CSRF prevention must change.
fn csrf_message(csrf: &CsrfConfig) -> String {
    let headers = if csrf.required_headers.is_empty() {
        "(csrf.required_headers is empty, so a GET request cannot pass)".to_owned()
    } else {
        format!(
            "or send one of these headers: {}",
            csrf.required_headers.join(", ")
        )
    };
    format!(
        "this request was blocked as a possible cross-site request forgery (CSRF): send a \
         Content-Type other than {} (e.g. application/json), {headers}",
        SIMPLE_CONTENT_TYPES.join(", ")
    )
}

/// The client headers subgraphs receive: `Authorization` unless disabled, plus the allowlist.
/// A GET request's operation travels in the query string; it is held to the body limit.
fn query_len<B>(req: &Request<B>) -> usize {
    req.uri().query().map_or(0, str::len)
}

/// The GET parameters, decoded as `application/x-www-form-urlencoded` (keys too): `+` is a
/// space, `%XX` a byte, and a `%` not followed by two hex digits stays as written (as
/// browsers and the `url` crate do). Unknown parameters are ignored.
fn parse_get(query: &str) -> Result<GraphQLRequest, String> {
    let mut request = GraphQLRequest::default();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let k = form_decode(k)?;
        let v = form_decode(v)?;
        match k.as_str() {
            "query" => request.query = Some(v),
            "operationName" => request.operation_name = Some(v).filter(|v| !v.is_empty()),
            "variables" if !v.is_empty() => {
                request.variables = Some(
                    serde_json::from_str(&v)
                        .map_err(|e| format!("variables is not a JSON object: {e}"))?,
                );
            }
            "extensions" if !v.is_empty() => {
                request.extensions = Some(
                    serde_json::from_str(&v)
                        .map_err(|e| format!("extensions is not a JSON object: {e}"))?,
                );
            }
            "documentId" | "doc_id" => request.document_id = Some(v).filter(|v| !v.is_empty()),
            _ => {}
        }
    }
    Ok(request)
}

/// One form-encoded key or value; invalid UTF-8 is an error rather than replaced, so a
/// query is never run with characters the client did not send.
fn form_decode(text: &str) -> Result<String, String> {
    let spaced = text.replace('+', " ");
    percent_encoding::percent_decode_str(&spaced)
        .decode_utf8()
        .map(std::borrow::Cow::into_owned)
        .map_err(|e| format!("the query string is not valid UTF-8 once percent-decoded: {e}"))
}

#[cfg(test)]
mod tests {
    use super::{GRAPHQL_RESPONSE, JSON, negotiate, parse_get};
    use http::HeaderValue;

    fn chosen(accept: &str) -> Option<&'static str> {
        negotiate(Some(&HeaderValue::from_str(accept).expect("header value")))
    }

    #[test]
    fn accept_weights_choose_the_media_type() {
        assert_eq!(negotiate(None), Some(JSON));
        assert_eq!(chosen("application/json"), Some(JSON));
        assert_eq!(
            chosen("application/graphql-response+json"),
            Some(GRAPHQL_RESPONSE)
        );
        // Both acceptable with equal weight: the GraphQL media type.
        assert_eq!(
            chosen("application/json, application/graphql-response+json"),
            Some(GRAPHQL_RESPONSE)
        );
        // The client prefers JSON.
        assert_eq!(
            chosen("application/graphql-response+json;q=0.5, application/json"),
            Some(JSON)
        );
        // q=0 refuses a type even where a wildcard allows others.
        assert_eq!(
            chosen("application/graphql-response+json;q=0, */*;q=0.1"),
            Some(JSON)
        );
        assert_eq!(
            chosen("application/json;q=0, application/*;q=0.8"),
            Some(GRAPHQL_RESPONSE)
        );
        assert_eq!(chosen("text/html, application/json;q=0"), None);
        assert_eq!(chosen("*/*"), Some(JSON));
        assert_eq!(chosen("application/*"), Some(JSON));
        // A malformed weight drops that range only.
        assert_eq!(
            chosen("application/graphql-response+json;q=x, application/json"),
            Some(JSON)
        );
        assert_eq!(chosen("text/plain"), None);
    }

    #[test]
    fn plus_is_a_space_and_escapes_are_bytes() {
        let r = parse_get("query=%7B+me+%7B+name+%7D+%7D&operationName=Me").expect("valid");
        assert_eq!(r.query.as_deref(), Some("{ me { name } }"));
        assert_eq!(r.operation_name.as_deref(), Some("Me"));
        let r = parse_get("query=%C3%A9t%C3%A9").expect("UTF-8 escapes");
        assert_eq!(r.query.as_deref(), Some("été"));
    }

    #[test]
    fn keys_are_decoded_too() {
        let r = parse_get("%71uery=%7Ba%7D&operation%4Eame=A&variables=%7B%22x%22%3A1%7D")
            .expect("valid");
        assert_eq!(r.query.as_deref(), Some("{a}"));
        assert_eq!(r.operation_name.as_deref(), Some("A"));
        let variables = r.variables.expect("variables");
        assert_eq!(variables.get("x"), Some(&serde_json_bytes::json!(1)));
    }

    #[test]
    fn a_percent_without_two_hex_digits_stays_as_written() {
        // `%+f` used to decode as 0x0F; a form decoder keeps it (and `+` is a space).
        let r = parse_get("query=a%+f&operationName=%4").expect("kept, not rejected");
        assert_eq!(r.query.as_deref(), Some("a% f"));
        assert_eq!(r.operation_name.as_deref(), Some("%4"));
        let r = parse_get("query=100%").expect("trailing percent");
        assert_eq!(r.query.as_deref(), Some("100%"));
    }

    #[test]
    fn invalid_utf8_is_a_clear_error() {
        let error = parse_get("query=%FF%FE").expect_err("not UTF-8");
        assert!(error.contains("not valid UTF-8"), "{error}");
        let error = parse_get("%FF=1").expect_err("key not UTF-8");
        assert!(error.contains("not valid UTF-8"), "{error}");
    }
}
