//! GraphQL over HTTP (hyper 1): POST and GET on /graphql with
//! `application/graphql-response+json` / `application/json` negotiation, and health.
//!
//! A GraphQL request goes through one module per job: [`negotiate`] (what the client
//! accepts), [`csrf`] and the concurrency limit, authentication, [`body`] (the payload
//! read within the limits), [`decode`] (the GraphQL request), [`dispatch`] (the pipeline
//! run and the answer written as the client takes it).

use crate::auth::AuthError;
use crate::executor::transport::Transport;
use crate::gateway::Gateway;
use crate::lifecycle::Readiness;
use crate::pipeline::error::RequestError;
use crate::pipeline::request::{Media, RequestMeta};
use bytes::Bytes;
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderValue, RETRY_AFTER};
use hyper::{Method, Request, Response, StatusCode};
use std::sync::Arc;

mod admin;
mod admission;
mod batch;
mod body;
mod cache_control;
pub(crate) mod client_addr;
mod coprocessed;
mod csrf;
mod decode;
mod dispatch;
mod graphiql;
mod head_errors;
mod header_names;
pub mod headers;
mod idle;
mod layers;
mod meta;
mod multipart;
mod negotiate;
pub mod response_headers;
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
fn refuse(mut error: RequestError, media: Media) -> Response<HandlerBody> {
    let status = error.status(media);
    let header = error.header().cloned();
    let headers = std::mem::take(error.headers_mut());
    let mut r = response(status, media.as_str(), error.into_body());
    r.headers_mut().extend(headers);
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
            Ok(accepts) => {
                // Only with a coprocessor: what its stages share for this request.
                let ctx = gateway
                    .coprocessor
                    .as_ref()
                    .map(|c| c.start(req.headers().clone(), req.method().clone(), None));
                let answer = graphql(gateway, req, accepts, ctx.as_ref())
                    .await
                    .unwrap_or_else(|e| refuse(e, accepts.media));
                match &ctx {
                    Some(ctx) => coprocessed::router_response(gateway, ctx, answer).await,
                    None => answer,
                }
            }
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
        _ if graphiql::wants_page(config, req) => Route::Answered(graphiql::page(config)),
        _ if path == config.graphql_path => Route::GraphQL,
        _ if graphiql::is_asset(config, path) => Route::Answered(graphiql::asset(config, req)),
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
    ctx: Option<&Arc<crate::coprocessor::context::RequestContext>>,
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
    let how = meta::Delivery {
        allow_mutation: req.method() == Method::POST,
        incremental: accepts.incremental,
        stream: accepts.stream.is_some(),
    };
    let claims = meta::authenticate(gateway, req.headers())
        .await
        .map_err(|e| meta::unauthorized(&e))?;
    let mut meta = meta::build(gateway, req.headers(), peer(&req), claims, how);
    meta.deadline = Some(deadline.into_std());
    let path = ctx.map(|_| {
        let uri = req.uri();
        uri.path_and_query()
            .map_or(uri.path(), |p| p.as_str())
            .to_owned()
    });
    let client = peer(&req);
    let mut payload = body::read(&gateway.config, req, deadline).await?;
    if let Some(ctx) = ctx {
        if let Some(claims) = &meta.claims {
            let claims = serde_json::Value::Object((**claims).clone());
            let key = crate::coprocessor::context::JWT_CLAIMS.to_owned();
            ctx.entries.lock().insert(key, claims);
        }
        meta.coprocessor = Some(ctx.clone());
        let coprocessor = gateway
            .coprocessor
            .as_ref()
            .filter(|c| c.router_request_on());
        if let (Some(coprocessor), Some(path)) = (coprocessor, &path) {
            let rebuild = |headers: &hyper::HeaderMap, meta: &mut RequestMeta| {
                let claims = meta.claims.take();
                let mut again = meta::build(gateway, headers, client, claims, how);
                again.deadline = meta.deadline;
                again.coprocessor = meta.coprocessor.take();
                *meta = again;
            };
            let routed = coprocessed::router_request(
                gateway,
                coprocessor,
                ctx,
                path,
                payload,
                &mut meta,
                rebuild,
            );
            payload = match routed.await? {
                Ok(payload) => payload,
                Err(answer) => return Ok(answer),
            };
        }
    }
    if let Some(batch) = batch::requests(&gateway.config.batching, &payload)? {
        return batch::answer(gateway, &batch, &meta, accepts.media, deadline).await;
    }
    let request = decode::decode(&payload)?;
    dispatch::answer(gateway, &request, &meta, accepts, deadline).await
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
    let how = meta::Delivery {
        allow_mutation: true,
        incremental: false,
        stream: true,
    };
    let claims = match meta::authenticate(gateway, req.headers()).await {
        Ok(claims) => claims,
        // Browsers cannot set headers on a WebSocket: where `connection_init` may carry
        // the token, a missing header waits for it (the socket checks it there).
        Err(AuthError::Missing(_)) if gateway.config.subscriptions.init_token_key.is_some() => None,
        Err(e) => return Err(meta::unauthorized(&e)),
    };
    let meta = meta::build(gateway, req.headers(), peer(&req), claims, how);
    Ok(ws::upgrade(gateway, req, meta, how))
}

/// The TCP peer the listener put in the request's extensions.
fn peer<B>(req: &Request<B>) -> Option<std::net::IpAddr> {
    req.extensions().get::<ClientAddr>().map(|a| a.0)
}
