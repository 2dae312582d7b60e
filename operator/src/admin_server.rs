//! The admin server (the "ops" port): `/metrics` (Prometheus), `/healthz` (process alive)
//! and `/readyz` (connected to the API server).

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Request, Response, StatusCode};
use tokio::net::TcpListener;

use crate::metrics::Metrics;

/// State the endpoint reports.
pub struct OpsState {
    pub metrics: Arc<Metrics>,
    pub ready: AtomicBool,
    /// Whether this replica currently holds the leader lease.
    pub leader: AtomicBool,
}

fn text(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header(
            hyper::header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )
        .body(Full::new(Bytes::from(body)))
        .expect("static response parts are valid")
}

/// Routes one request.
pub fn respond<B>(state: &OpsState, req: &Request<B>) -> Response<Full<Bytes>> {
    match req.uri().path() {
        "/metrics" => {
            let leader = u8::from(state.leader.load(Ordering::Relaxed));
            let mut body = state.metrics.render();
            body.push_str(&format!(
                "# HELP graphfleet_operator_leader Whether this replica holds the leader lease.\n# TYPE graphfleet_operator_leader gauge\ngraphfleet_operator_leader {leader}\n"
            ));
            text(StatusCode::OK, body)
        }
        "/healthz" => text(StatusCode::OK, "ok\n".to_owned()),
        "/readyz" if state.ready.load(Ordering::Relaxed) => {
            text(StatusCode::OK, "ready\n".to_owned())
        }
        "/readyz" => text(StatusCode::SERVICE_UNAVAILABLE, "not ready\n".to_owned()),
        _ => text(StatusCode::NOT_FOUND, "not found\n".to_owned()),
    }
}

/// Serves the endpoint on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: TcpListener,
    state: Arc<OpsState>,
    shutdown: impl Future<Output = ()>,
) {
    let handle = move |req: Request<hyper::body::Incoming>| {
        let response = respond(&state, &req);
        async move { response }
    };
    crate::http_server::serve(listener, "ops", handle, shutdown).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper_util::rt::TokioIo;

    fn state() -> OpsState {
        OpsState {
            metrics: Arc::new(Metrics::new()),
            ready: AtomicBool::new(false),
            leader: AtomicBool::new(true),
        }
    }

    fn get(state: &OpsState, path: &str) -> Response<Full<Bytes>> {
        respond(state, &Request::get(path).body(()).expect("request"))
    }

    #[test]
    fn readyz_follows_the_ready_flag() {
        let s = state();
        assert_eq!(get(&s, "/readyz").status(), StatusCode::SERVICE_UNAVAILABLE);
        s.ready.store(true, Ordering::Relaxed);
        assert_eq!(get(&s, "/readyz").status(), StatusCode::OK);
        assert_eq!(get(&s, "/healthz").status(), StatusCode::OK);
        assert_eq!(get(&s, "/nope").status(), StatusCode::NOT_FOUND);
    }

    #[tokio::test]
    async fn metrics_are_served_over_http() {
        use http_body_util::BodyExt;
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let state = Arc::new(state());
        state
            .metrics
            .reconciled("graphgateway", std::time::Duration::from_millis(1));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(listener, state, async {
            let _ = stopped.await;
        }));
        let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .expect("handshake");
        tokio::spawn(conn);
        let req = Request::get("/metrics")
            .header("host", "localhost")
            .body(Full::new(Bytes::new()))
            .expect("request");
        let res = sender.send_request(req).await.expect("response");
        assert_eq!(res.status(), StatusCode::OK);
        let body = res.into_body().collect().await.expect("body").to_bytes();
        let body = String::from_utf8(body.to_vec()).expect("utf-8");
        assert!(
            body.contains("graphfleet_operator_reconciles_total{controller=\"graphgateway\"} 1"),
            "{body}"
        );
        assert!(body.contains("graphfleet_operator_leader 1"), "{body}");
        let _ = stop.send(());
        server.await.expect("server task");
    }
}
