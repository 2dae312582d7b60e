//! GraphQL over HTTP (hyper 1): POST and GET on /graphql with
//! `application/graphql-response+json` / `application/json` negotiation, and health.
//!
//! A GraphQL request goes through one module per job: [`negotiate`] (what the client
//! accepts), [`csrf`] and the concurrency limit, authentication, [`body`] (the payload
//! read within the limits), [`decode`] (the GraphQL request), [`dispatch`] (the pipeline
//! run and the answer written as the client takes it).

use crate::executor::transport::Transport;
use crate::gateway::Gateway;
use crate::lifecycle::Readiness;
use crate::pipeline::error::RequestError;
use crate::pipeline::request::{Media, RequestMeta};
use bytes::Bytes;
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderValue, RETRY_AFTER, WWW_AUTHENTICATE};
use hyper::{Method, Request, Response, StatusCode};
use std::sync::Arc;

mod admin;
mod admission;
mod batch;
mod body;
pub(crate) mod client_addr;
mod csrf;
mod decode;
mod dispatch;
mod head_errors;
pub mod headers;
mod idle;
mod layers;
mod multipart;
mod negotiate;
mod server;
mod stream;
mod ws;

pub use admin::serve_admin;
pub use csrf::csrf_blocked;
pub use layers::{HttpLayers, ResponseBody};
pub use multipart::HandlerBody;
pub use server::{serve, serve_blocking};
pub use ws::serve_socket;

/// The client's address, put in each request's extensions by the listener.
#[derive(Debug, Clone, Copy)]
pub struct ClientAddr(pub std::net::IpAddr);

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

/// `error` as the response to a client reading `media`.
fn refuse(error: RequestError, media: Media) -> Response<HandlerBody> {
    let status = error.status(media);
    let header = error.header().cloned();
    let mut r = response(status, media.as_str(), error.into_body());
    if let Some((name, value)) = header {
        r.headers_mut().insert(name, value);
    }
    r
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
    let body = graphfleet_admin_api::Readiness {
        status: word.to_owned(),
        reason: readiness.as_str().to_owned(),
        supergraph: reload.short_hash().to_owned(),
        supergraph_sha256: gateway.supergraph_hash().map(|h| crate::usage::hex(&h)),
        failed_reloads: reload.failed_reloads,
        reload_error: reload.last_error.clone(),
    };
    let body = serde_json::to_vec(&body).expect("readiness serializes");
    response(status, Media::Json.as_str(), body)
}

/// Answer one request; generic over the transport so fuzzing can run without network.
pub async fn handle<T: Transport>(
    gateway: &Arc<Gateway<T>>,
    req: Request<Incoming>,
) -> Response<HandlerBody> {
    match route(gateway, &req) {
        Route::Answered(response) => response,
        Route::WebSocket => websocket(gateway, req)
            .await
            .unwrap_or_else(|e| refuse(e, Media::Json)),
        Route::GraphQL => match negotiate::accepts(req.headers()) {
            Ok(accepts) => graphql(gateway, req, accepts)
                .await
                .unwrap_or_else(|e| refuse(e, accepts.media)),
            Err(e) => refuse(e, Media::Json),
        },
    }
}

/// Where a request goes by its path.
enum Route {
    /// Metrics, health, or 404: answered already.
    Answered(Response<HandlerBody>),
    WebSocket,
    GraphQL,
}

fn route<T: Transport>(gateway: &Gateway<T>, req: &Request<Incoming>) -> Route {
    let config = &gateway.config;
    let path = req.uri().path();
    // With an admin listener, health and metrics are answered there only: probes never
    // queue behind client connections, and clients never read the metrics.
    let here = config.admin.listen.is_none();
    if here && config.telemetry.metrics && path == config.telemetry.metrics_path {
        let text = gateway.render_metrics();
        return Route::Answered(response(StatusCode::OK, prometheus::TEXT_FORMAT, text));
    }
    let upgrade = ws::is_upgrade(req);
    let ws_path = config.subscriptions.websocket_path.as_deref();
    match path {
        "/health" | "/health/live" if here => Route::Answered(response(
            StatusCode::OK,
            Media::Json.as_str(),
            &b"{\"status\":\"UP\"}"[..],
        )),
        "/health/ready" if here => Route::Answered(readiness(gateway)),
        _ if upgrade && path == ws_path.unwrap_or(&config.graphql_path) => Route::WebSocket,
        _ if path == config.graphql_path => Route::GraphQL,
        _ => {
            let not_found = RequestError::http(StatusCode::NOT_FOUND, None, "not found");
            Route::Answered(refuse(not_found, Media::Json))
        }
    }
}

/// A GraphQL request over HTTP: admitted, authenticated, read and decoded, then run.
async fn graphql<T: Transport>(
    gateway: &Arc<Gateway<T>>,
    req: Request<Incoming>,
    accepts: negotiate::Accepts,
) -> Result<Response<HandlerBody>, RequestError> {
    csrf::check(&gateway.config.csrf, req.method(), req.headers())?;
    let Ok(_slot) = gateway.request_slots.try_acquire() else {
        let max = gateway.config.traffic.max_concurrent_requests;
        let message = format!("the gateway is working on {max} requests, its limit; retry shortly");
        let busy = RequestError::http(
            StatusCode::SERVICE_UNAVAILABLE,
            Some("TOO_MANY_CONCURRENT_REQUESTS"),
            &message,
        );
        return Err(busy.with_header(RETRY_AFTER, "1"));
    };
    // Refused at once like the concurrency cap, so a load balancer retries elsewhere.
    if let Err((code, message)) = gateway.admit_memory() {
        let full = RequestError::http(StatusCode::SERVICE_UNAVAILABLE, Some(code), &message);
        return Err(full.with_header(RETRY_AFTER, "1"));
    }
    // One deadline for reading the body and executing.
    let deadline = tokio::time::Instant::now() + gateway.config.traffic.request_timeout;
    let how = Delivery {
        allow_mutation: req.method() == Method::POST,
        incremental: accepts.incremental,
        stream: accepts.stream.is_some(),
    };
    let mut meta = request_meta(gateway, &req, how).await?;
    meta.deadline = Some(deadline.into_std());
    let payload = body::read(&gateway.config, req, deadline).await?;
    if let Some(batch) = batch::requests(&gateway.config.batching, &payload)? {
        return batch::answer(gateway, &batch, &meta, accepts.media, deadline).await;
    }
    let request = decode::decode(&payload)?;
    dispatch::answer(gateway, &request, &meta, accepts, deadline).await
}

/// How a request may be answered, as its transport allows.
struct Delivery {
    allow_mutation: bool,
    incremental: bool,
    stream: bool,
}

/// What the pipeline needs from the request's head: the claims of its valid token (401
/// for an invalid one), the headers subgraphs get, the trace context and the client.
/// Taken before the body consumes the request.
async fn request_meta<T: Transport>(
    gateway: &Gateway<T>,
    req: &Request<Incoming>,
    how: Delivery,
) -> Result<RequestMeta, RequestError> {
    let claims = gateway
        .auth
        .authenticate(req.headers())
        .await
        .map_err(|e| {
            RequestError::http(StatusCode::UNAUTHORIZED, Some(e.code()), &e.to_string())
                .with_header(WWW_AUTHENTICATE, "Bearer")
        })?;
    let forward_headers = gateway.header_rules.apply(req.headers(), claims.as_deref());
    let client = req
        .extensions()
        .get::<ClientAddr>()
        .map(|a| gateway.client_addressing.client_of(a.0, req.headers()));
    let rate_key = gateway
        .rate_limiter
        .as_ref()
        .and_then(|l| l.client_key())
        .and_then(|key| rate_key(key, client, req.headers(), claims.as_deref()));
    let app = gateway
        .usage
        .as_ref()
        .and_then(|_| crate::usage::ClientApp::from_headers(req.headers()));
    Ok(RequestMeta {
        app,
        allow_mutation: how.allow_mutation,
        forward_headers,
        trace_context: crate::telemetry::tracing::trace_headers(req.headers()),
        claims,
        incremental: how.incremental,
        stream: how.stream,
        // Behind a trusted proxy, the client it names (the quotas are per client).
        client,
        rate_key,
        // An HTTP request's is set by its caller; a WebSocket's operations time their own.
        deadline: None,
    })
}

/// The client as `key` tells them apart: its address, a header's value or a claim
/// (a string claim as it is, another as its JSON text).
fn rate_key(
    key: &graphfleet_config::ClientKey,
    client: Option<std::net::IpAddr>,
    headers: &hyper::HeaderMap,
    claims: Option<&serde_json::Map<String, serde_json::Value>>,
) -> Option<Box<str>> {
    use graphfleet_config::ClientKey;
    match key {
        ClientKey::Ip => client.map(|ip| ip.to_string().into()),
        ClientKey::Header(name) => headers
            .get(name.as_str())
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into()),
        ClientKey::Claim(name) => claims?.get(name).map(|v| match v {
            serde_json::Value::String(s) => s.as_str().into(),
            other => other.to_string().into(),
        }),
    }
}

/// A WebSocket upgrade: authenticated like any request, then served by [`ws`].
async fn websocket<T: Transport>(
    gateway: &Arc<Gateway<T>>,
    req: Request<Incoming>,
) -> Result<Response<HandlerBody>, RequestError> {
    if !gateway.config.subscriptions.enabled {
        return Err(RequestError::http(
            StatusCode::NOT_FOUND,
            None,
            "subscriptions are disabled on this gateway (subscriptions.enabled)",
        ));
    }
    // Browsers open WebSockets cross-origin without a preflight (and with cookies):
    // with CORS configured, only its origins may.
    let cors = &gateway.config.cors;
    if let Some(origin) = req.headers().get(hyper::header::ORIGIN)
        && cors.enabled()
        && !layers::Origins::new(cors).allow(origin)
    {
        return Err(RequestError::http(
            StatusCode::FORBIDDEN,
            None,
            "this origin may not open WebSockets here (cors.allow_origins)",
        ));
    }
    let how = Delivery {
        allow_mutation: true,
        incremental: false,
        stream: true,
    };
    let meta = request_meta(gateway, &req, how).await?;
    Ok(ws::upgrade(gateway, req, meta))
}

#[cfg(test)]
mod tests {
    use super::rate_key;
    use graphfleet_config::ClientKey;

    #[test]
    fn rate_keys_come_from_the_address_a_header_or_a_claim() {
        let ip = Some("10.1.2.3".parse().expect("an address"));
        let mut headers = hyper::HeaderMap::new();
        headers.insert("x-api-key", "k1".parse().expect("a value"));
        let claims = serde_json::json!({ "sub": "user-7", "tenant": 42 });
        let claims = claims.as_object();
        let key = |k: &ClientKey| rate_key(k, ip, &headers, claims).map(String::from);
        assert_eq!(key(&ClientKey::Ip).as_deref(), Some("10.1.2.3"));
        assert_eq!(
            key(&ClientKey::Header("x-api-key".into())).as_deref(),
            Some("k1")
        );
        assert_eq!(
            key(&ClientKey::Claim("sub".into())).as_deref(),
            Some("user-7")
        );
        assert_eq!(
            key(&ClientKey::Claim("tenant".into())).as_deref(),
            Some("42")
        );
        assert_eq!(key(&ClientKey::Claim("missing".into())), None);
        assert_eq!(
            rate_key(&ClientKey::Claim("sub".into()), ip, &headers, None),
            None
        );
    }
}
