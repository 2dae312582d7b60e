//! The admin listener (`admin.listen`): readiness with the served supergraph's hash, the
//! Prometheus metrics (whatever `telemetry.metrics_path` says) and the recorded operations, for the operator and probes. HTTP/1.1, GET only, on a port
//! of its own so GraphQL clients never reach what other clients sent.

use super::{readiness, response};
use crate::gateway::Gateway;
use crate::pipeline::request::Media;
use graphfleet_admin_api::{LIVE_PATH, METRICS_PATH, READY_PATH, USAGE_PATH};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

use super::HandlerBody;

/// Connections the admin listener serves at once; more wait in the backlog.
const MAX_CONNECTIONS: usize = 16;
/// An admin request's head must arrive within this.
const HEADER_TIMEOUT: Duration = Duration::from_secs(5);

/// Serve the admin endpoints on `listener` until the runtime ends.
pub async fn serve_admin(listener: TcpListener, gateway: Arc<Gateway>) {
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok(permit) = slots.clone().acquire_owned().await else {
            return;
        };
        let (stream, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!(error = %e, "admin listener: accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let gateway = gateway.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req| {
                let gateway = gateway.clone();
                async move { Ok::<_, Infallible>(answer(&gateway, &req)) }
            });
            let connection = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service);
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "admin connection ended with an error");
            }
            drop(permit);
        });
    }
}

fn answer(gateway: &Gateway, req: &Request<Incoming>) -> Response<HandlerBody> {
    if req.method() != Method::GET {
        return text(StatusCode::METHOD_NOT_ALLOWED, "only GET is served here\n");
    }
    match req.uri().path() {
        LIVE_PATH => response(
            StatusCode::OK,
            Media::Json.as_str(),
            &b"{\"status\":\"UP\"}"[..],
        ),
        READY_PATH => readiness(gateway),
        METRICS_PATH => response(
            StatusCode::OK,
            prometheus::TEXT_FORMAT,
            gateway.render_metrics(),
        ),
        USAGE_PATH => match gateway.usage_report() {
            Some(report) => {
                let body = serde_json::to_vec(&report).expect("a usage report serializes");
                response(StatusCode::OK, Media::Json.as_str(), body)
            }
            None => text(StatusCode::NOT_FOUND, "usage.record is off\n"),
        },
        _ => text(StatusCode::NOT_FOUND, "not found\n"),
    }
}

fn text(status: StatusCode, body: &'static str) -> Response<HandlerBody> {
    response(status, "text/plain; charset=utf-8", body.as_bytes())
}
