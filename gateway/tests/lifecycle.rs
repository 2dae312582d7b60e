//! Health and graceful shutdown of the real binary in front of slow real subgraphs:
//! SIGTERM drains in-flight requests without failing one, and a request slower than
//! the grace period is cut without holding the exit up.

mod support;

use bytes::Bytes;
use graphfleet_bench_model::Set;
use graphfleet_bench_subgraphs::Handle;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use support::fed;
use support::process::{GatewayProcess, test_dir};

/// Three subgraph fetches in a row: products → reviews → accounts.
const QUERY: &str = "{ topProducts { upc name price reviews { body author { name } } } }";
const IN_FLIGHT: usize = 16;

async fn start_gateway(name: &str, subgraphs: &Handle, settings: &[&str]) -> GatewayProcess {
    let dir = test_dir(name);
    let file = dir.join("supergraph.graphql");
    std::fs::write(&file, Set::Fed.supergraph_at(&subgraphs.base_url()))
        .expect("write the supergraph");
    fed::start_gateway(&dir, &file, settings).await
}

/// One POST on its own connection; an error string unless the exchange completes.
async fn post(url: String, query: &str) -> Result<(u16, Bytes), String> {
    fed::try_post(&support::client(), &url, query).await
}

/// GET `path` on a fresh connection; the status code.
async fn get_status(gateway: &GatewayProcess, path: &str) -> u16 {
    support::request(
        &support::client(),
        "GET",
        &gateway.url(path),
        &[],
        Vec::new(),
    )
    .await
    .status
}

async fn wait_for_subgraph_requests(subgraphs: &Handle, at_least: u64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while fed::subgraph_requests(&support::client(), subgraphs).await < at_least {
        assert!(
            Instant::now() < deadline,
            "{at_least} requests did not reach the subgraphs within 10 s"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Wait until connecting to `addr` is refused (the listener closed).
async fn wait_refused(addr: SocketAddr, timeout: Duration) -> Instant {
    let deadline = Instant::now() + timeout;
    loop {
        match tokio::net::TcpStream::connect(addr).await {
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => return Instant::now(),
            _ => {}
        }
        assert!(
            Instant::now() < deadline,
            "still accepting connections {timeout:?} after SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn health_reports_live_and_ready() {
    let subgraphs = fed::subgraphs(&[]).await;
    let gateway = start_gateway("lifecycle-health", &subgraphs, &[]).await;
    assert_eq!(get_status(&gateway, "/health/live").await, 200);
    assert_eq!(get_status(&gateway, "/health/ready").await, 200);
    assert_eq!(get_status(&gateway, "/health").await, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigterm_drains_in_flight_requests_without_failing_one() {
    let delay = Duration::from_millis(400);
    let subgraphs =
        fed::subgraphs(&[("products", delay), ("reviews", delay), ("accounts", delay)]).await;
    let mut gateway = start_gateway(
        "lifecycle-drain",
        &subgraphs,
        &[
            "shutdown.readiness_delay=500ms",
            "shutdown.grace_period=20s",
            // Each request reaches the subgraphs itself, so their count shows all in flight.
            "traffic.deduplicate=false",
        ],
    )
    .await;
    let url = gateway.url("/graphql");
    let (status, expected) = post(url.clone(), QUERY).await.expect("warm-up request");
    assert_eq!(status, 200);
    let text = String::from_utf8_lossy(&expected).to_string();
    assert!(
        text.contains("\"author\":{\"name\":") && !text.contains("errors"),
        "{text}"
    );

    // Idle connections must not hold the drain up: a raw one that never speaks and a
    // keep-alive one after a request.
    let _silent = tokio::net::TcpStream::connect(gateway.addr)
        .await
        .expect("connect");
    let keep_alive = support::client();
    let reply = support::request(
        &keep_alive,
        "GET",
        &gateway.url("/health/live"),
        &[],
        Vec::new(),
    )
    .await;
    assert_eq!(reply.status, 200);

    let before = fed::subgraph_requests(&support::client(), &subgraphs).await;
    let requests: Vec<_> = (0..IN_FLIGHT)
        .map(|_| tokio::spawn(post(url.clone(), QUERY)))
        .collect();
    // Every request has reached its first (slow) subgraph: all are in flight.
    wait_for_subgraph_requests(&subgraphs, before + IN_FLIGHT as u64).await;
    let signalled = Instant::now();
    gateway.signal("TERM");
    // Readiness fails as soon as the signal is handled, long before the listener closes.
    let deadline = signalled + Duration::from_millis(400);
    while get_status(&gateway, "/health/ready").await != 503 {
        assert!(
            Instant::now() < deadline,
            "readiness still 200 after SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(get_status(&gateway, "/health/live").await, 200);
    let refused_at = wait_refused(gateway.addr, Duration::from_secs(5)).await;
    assert!(
        refused_at.duration_since(signalled) >= Duration::from_millis(450),
        "the listener closed before the readiness delay was over"
    );
    let unfinished = requests.iter().filter(|r| !r.is_finished()).count();
    assert!(
        unfinished > 0,
        "every request finished before the listener closed: nothing was drained"
    );
    for request in requests {
        let (status, body) = request
            .await
            .expect("request task")
            .expect("an in-flight request completes");
        assert_eq!(status, 200);
        assert_eq!(body, expected, "an in-flight request got a different body");
    }
    let exit = gateway.wait_exit(Duration::from_secs(20)).await;
    assert!(exit.success(), "exit status {exit}:\n{}", gateway.log());
    assert!(
        signalled.elapsed() < Duration::from_secs(10),
        "draining took {:?} (grace period 20 s): idle connections held it up",
        signalled.elapsed()
    );
    assert!(
        gateway.log().contains("drained, exiting"),
        "{}",
        gateway.log()
    );
}

type PostTask = tokio::task::JoinHandle<Result<(u16, Bytes), String>>;

/// A gateway with no readiness delay and `grace_period`, and one request in flight that
/// has reached a `products` subgraph taking 20 s.
async fn stuck_request(name: &str, grace_period: &str) -> (Handle, GatewayProcess, PostTask) {
    let subgraphs = fed::subgraphs(&[("products", Duration::from_secs(20))]).await;
    let grace = format!("shutdown.grace_period={grace_period}");
    let gateway = start_gateway(name, &subgraphs, &["shutdown.readiness_delay=0s", &grace]).await;
    let request = tokio::spawn(post(gateway.url("/graphql"), "{ topProducts { upc } }"));
    wait_for_subgraph_requests(&subgraphs, 1).await;
    (subgraphs, gateway, request)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_request_slower_than_the_grace_period_is_cut() {
    let (_subgraphs, mut gateway, request) = stuck_request("lifecycle-grace", "1s").await;
    let signalled = Instant::now();
    gateway.signal("TERM");
    let exit = gateway.wait_exit(Duration::from_secs(10)).await;
    let took = signalled.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(5),
        "exited {took:?} after SIGTERM with a 1 s grace period"
    );
    assert!(!exit.success(), "a cut shutdown should not report success");
    let log = gateway.log();
    assert!(log.contains("1 request(s) cut"), "{log}");
    let outcome = request.await.expect("request task");
    assert!(outcome.is_err(), "the cut request completed: {outcome:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_second_signal_ends_the_drain_at_once() {
    let (_subgraphs, mut gateway, request) = stuck_request("lifecycle-second-signal", "30s").await;
    gateway.signal("TERM");
    // Signals sent before the first is handled would merge into one.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !gateway.log().contains("listener closed, draining") {
        assert!(Instant::now() < deadline, "no drain:\n{}", gateway.log());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let second = Instant::now();
    gateway.signal("INT");
    let exit = gateway.wait_exit(Duration::from_secs(10)).await;
    assert!(
        second.elapsed() < Duration::from_secs(5),
        "took {:?} after the second signal",
        second.elapsed()
    );
    assert!(!exit.success());
    assert!(gateway.log().contains("second SIGINT"), "{}", gateway.log());
    assert!(request.await.expect("request task").is_err());
}

/// One HTTP/1.1 POST on `stream` (kept alive); the response head, lower-cased.
async fn exchange(stream: &mut tokio::net::TcpStream, query: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let body = serde_json::json!({ "query": query }).to_string();
    let request = format!(
        "POST /graphql HTTP/1.1\r\nhost: gateway\r\ncontent-type: application/json\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    );
    stream
        .write_all(request.as_bytes())
        .await
        .expect("send request");
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut chunk))
            .await
            .expect("response within 10 s")
            .expect("read response");
        assert!(n > 0, "connection closed before a whole response");
        buf.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buf).to_ascii_lowercase();
        let Some(end) = text.find("\r\n\r\n") else {
            continue;
        };
        let length: usize = text[..end]
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .map(|v| v.trim().parse().expect("content-length is a number"))
            .expect("a content-length");
        if buf.len() >= end + 4 + length {
            return text[..end].to_owned();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn draining_answers_tell_kept_alive_clients_to_reconnect() {
    use tokio::io::AsyncReadExt;
    let subgraphs = fed::subgraphs(&[]).await;
    let gateway = start_gateway(
        "lifecycle-connection-close",
        &subgraphs,
        &["shutdown.readiness_delay=5s"],
    )
    .await;
    let mut stream = tokio::net::TcpStream::connect(gateway.addr)
        .await
        .expect("connect to the gateway");
    let before = exchange(&mut stream, QUERY).await;
    assert!(before.starts_with("http/1.1 200"), "{before}");
    assert!(!before.contains("connection: close"), "{before}");

    gateway.signal("TERM");
    let deadline = Instant::now() + Duration::from_secs(5);
    while get_status(&gateway, "/health/ready").await != 503 {
        assert!(
            Instant::now() < deadline,
            "readiness did not fail after SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The same kept-alive connection, during the readiness delay: still answered, and
    // told to close, so the client's next request goes to a pod that stays.
    let during = exchange(&mut stream, QUERY).await;
    assert!(during.starts_with("http/1.1 200"), "{during}");
    assert!(during.contains("connection: close"), "{during}");
    let mut rest = [0u8; 16];
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut rest))
        .await
        .expect("the gateway closes the connection after that answer");
    assert_eq!(read.expect("read after close"), 0, "connection closed");
}

/// Reads frames of `body` until `needle` has arrived; the text so far.
async fn read_until(body: &mut hyper::body::Incoming, needle: &str) -> String {
    use http_body_util::BodyExt;
    let mut text = String::new();
    while !text.contains(needle) {
        let frame = tokio::time::timeout(Duration::from_secs(10), body.frame())
            .await
            .expect("a frame within 10 s")
            .expect("the stream is open")
            .expect("the body streams");
        if let Some(data) = frame.data_ref() {
            text.push_str(&String::from_utf8_lossy(data));
        }
    }
    text
}

#[tokio::test]
async fn sigterm_ends_subscriptions_with_a_last_message_and_exits() {
    use futures::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;

    let subgraphs = fed::subgraphs(&[]).await;
    let mut gateway = start_gateway(
        "lifecycle-subscriptions",
        &subgraphs,
        &["shutdown.grace_period=20s"],
    )
    .await;
    let subscription = r#"{"query":"subscription { reviewAdded { id product { name } } }"}"#;

    // One client over SSE...
    let req = hyper::Request::post(gateway.url("/graphql"))
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .body(http_body_util::Full::new(Bytes::from(subscription)))
        .expect("a valid request");
    let response = support::client().request(req).await.expect("SSE response");
    assert_eq!(response.status(), 200);
    let mut sse = response.into_body();
    read_until(&mut sse, "event: next").await;

    // ...and one over WebSocket.
    let url = gateway.url("/graphql").replacen("http://", "ws://", 1);
    let mut request = url.into_client_request().expect("a WebSocket URL");
    request.headers_mut().insert(
        "sec-websocket-protocol",
        "graphql-transport-ws".parse().expect("header value"),
    );
    let (mut ws, _) = tokio_tungstenite::connect_async(request)
        .await
        .expect("upgrade");
    ws.send(Message::text(r#"{"type":"connection_init"}"#))
        .await
        .expect("send");
    let subscribe = format!(r#"{{"id":"1","type":"subscribe","payload":{subscription}}}"#);
    ws.send(Message::text(subscribe)).await.expect("send");
    let mut texts = Vec::new();
    let mut closed = None;
    let mut signalled = None;
    while closed.is_none() {
        let message = tokio::time::timeout(Duration::from_secs(10), ws.next())
            .await
            .expect("a message within 10 s");
        match message {
            Some(Ok(Message::Text(t))) => {
                texts.push(t.to_string());
                // Events are flowing: now the signal.
                if signalled.is_none() && t.contains("\"next\"") {
                    gateway.signal("TERM");
                    signalled = Some(Instant::now());
                }
            }
            Some(Ok(Message::Close(frame))) => closed = Some(frame.map(|f| u16::from(f.code))),
            Some(Ok(_)) => {}
            other => panic!("the socket ended without a close frame: {other:?}"),
        }
    }
    assert_eq!(closed, Some(Some(1001)), "{texts:?}");
    let n = texts.len();
    assert!(n >= 3, "{texts:?}");
    assert!(
        texts[n - 2].contains("SUBSCRIPTION_SHUTDOWN"),
        "the last event says why: {texts:?}"
    );
    assert_eq!(texts[n - 1], r#"{"id":"1","type":"complete"}"#);

    let rest = read_until(&mut sse, "event: complete").await;
    assert!(rest.contains("SUBSCRIPTION_SHUTDOWN"), "{rest}");

    let exit = gateway.wait_exit(Duration::from_secs(20)).await;
    assert!(exit.success(), "exit status {exit}:\n{}", gateway.log());
    let took = signalled.expect("signalled").elapsed();
    assert!(
        took < Duration::from_secs(5),
        "open subscriptions held the exit up for {took:?}"
    );
}
