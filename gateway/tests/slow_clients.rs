//! Slow and numerous clients cannot hold the gateway: a client that does not finish its
//! headers in `traffic.header_read_timeout` is disconnected, a kept-alive connection
//! idle for `traffic.idle_timeout` is closed (one waiting on a subgraph is not idle), and
//! beyond `traffic.max_connections` open connections further clients wait to be accepted;
//! beyond `traffic.max_concurrent_requests` a request gets 503 at once.

mod support;

use graphfleet_gateway::config::Config;
use graphfleet_gateway::supergraph::Supergraph;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const QUERY: &str = r#"{"query":"{ users { id } }"}"#;

/// A gateway with `settings` in front of the `keys` fixture: its `host:port`, and the
/// subgraphs (kept alive by the caller).
async fn gateway(
    settings: impl FnOnce(&mut Config),
) -> (String, support::json_subgraph::JsonSubgraphs) {
    let (subgraphs, text) = support::fixture_subgraphs("keys").await;
    let mut config = Config::default();
    settings(&mut config);
    let url = support::start_gateway_with_config(
        config,
        Supergraph::parse(&text).expect("supergraph loads"),
    )
    .await;
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/graphql")
        .to_owned();
    (addr, subgraphs)
}

/// A complete POST on `stream`; the status line of the answer.
async fn exchange(stream: &mut TcpStream) -> String {
    let request = format!(
        "POST /graphql HTTP/1.1\r\nhost: gateway\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{QUERY}",
        QUERY.len()
    );
    stream
        .write_all(request.as_bytes())
        .await
        .expect("send the request");
    let mut buf = vec![0u8; 4096];
    let n = stream.read(&mut buf).await.expect("read the answer");
    String::from_utf8_lossy(&buf[..n])
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// How long until the gateway closes `stream` (an answer, if any, then end of stream);
/// fails the test after 5 s.
async fn closed_within_5s(stream: &mut TcpStream) -> Duration {
    let started = Instant::now();
    let mut buf = vec![0u8; 1024];
    let closed = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "the connection was not closed within 5 s");
    started.elapsed()
}

/// A gateway with `settings` in front of the fault subgraph answering in 400 ms: its
/// GraphQL URL, and the subgraph (kept alive by the caller).
async fn slow_subgraph_gateway(
    settings: impl FnOnce(&mut Config),
) -> (String, support::fault_subgraph::FaultSubgraph) {
    let fault = support::fault_subgraph::start().await;
    let mut config = Config::default();
    settings(&mut config);
    config.subgraphs.insert(
        "faulty".into(),
        graphfleet_gateway::config::SubgraphConfig {
            url: Some(fault.url("slow")),
            ..Default::default()
        },
    );
    let supergraph =
        Supergraph::parse(support::fault_subgraph::SUPERGRAPH).expect("supergraph loads");
    (
        support::start_gateway_with_config(config, supergraph).await,
        fault,
    )
}

#[tokio::test]
async fn a_client_slow_to_send_headers_is_disconnected() {
    let (addr, _subgraphs) = gateway(|c| {
        c.traffic.header_read_timeout = Duration::from_millis(300);
    })
    .await;
    let mut slow = TcpStream::connect(&addr).await.expect("connect");
    slow.write_all(b"POST /graphql HTTP/1.1\r\nhost: gateway\r\n")
        .await
        .expect("send half the headers");
    let waited = closed_within_5s(&mut slow).await;
    assert!(
        waited >= Duration::from_millis(250),
        "closed after {waited:?}, before the header timeout"
    );

    // A client that sends its request in time is served.
    let mut quick = TcpStream::connect(&addr).await.expect("connect");
    assert_eq!(exchange(&mut quick).await, "HTTP/1.1 200 OK");
}

#[tokio::test]
async fn clients_beyond_max_connections_wait_for_a_free_slot() {
    let (addr, _subgraphs) = gateway(|c| c.traffic.max_connections = 1).await;
    let mut first = TcpStream::connect(&addr).await.expect("connect");
    assert_eq!(exchange(&mut first).await, "HTTP/1.1 200 OK");

    // The first connection stays open (keep-alive): the second is not accepted yet.
    let mut second = TcpStream::connect(&addr)
        .await
        .expect("connect (kernel backlog)");
    let waiting = tokio::time::timeout(Duration::from_millis(500), exchange(&mut second)).await;
    assert!(
        waiting.is_err(),
        "a second connection was served while the only slot was taken"
    );

    // Once the first closes, the second is accepted and answered.
    drop(first);
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(5), second.read(&mut buf))
        .await
        .expect("the second connection is served once a slot is free")
        .expect("read the answer");
    let status = String::from_utf8_lossy(&buf[..n]);
    assert!(status.starts_with("HTTP/1.1 200 OK"), "{status}");
}

#[tokio::test]
async fn an_idle_kept_alive_connection_is_closed_and_others_are_served() {
    let (addr, _subgraphs) = gateway(|c| {
        c.traffic.idle_timeout = Duration::from_millis(400);
    })
    .await;
    let mut idle = TcpStream::connect(&addr).await.expect("connect");
    assert_eq!(exchange(&mut idle).await, "HTTP/1.1 200 OK");
    // Kept alive: a second request within the limit is answered on the same connection.
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert_eq!(exchange(&mut idle).await, "HTTP/1.1 200 OK");
    let waited = closed_within_5s(&mut idle).await;
    assert!(
        waited >= Duration::from_millis(300),
        "closed after {waited:?}, before the idle limit"
    );
    // The gateway keeps serving new clients.
    let mut fresh = TcpStream::connect(&addr).await.expect("connect again");
    assert_eq!(exchange(&mut fresh).await, "HTTP/1.1 200 OK");
}

#[tokio::test]
async fn a_request_waiting_on_a_slow_subgraph_is_not_idle() {
    // The subgraph answers after 400 ms, the idle limit is 150 ms: the connection
    // carries a request all along, so the answer still arrives on it.
    let (url, _fault) =
        slow_subgraph_gateway(|c| c.traffic.idle_timeout = Duration::from_millis(150)).await;
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/graphql")
        .to_owned();
    let mut stream = TcpStream::connect(&addr).await.expect("connect");
    let query = r#"{"query":"{ top { id price } }"}"#;
    let request = format!(
        "POST /graphql HTTP/1.1\r\nhost: gateway\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{query}",
        query.len()
    );
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut answer = Vec::new();
    let mut buf = vec![0u8; 4096];
    while !String::from_utf8_lossy(&answer).contains("\"price\":10") {
        let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf))
            .await
            .expect("an answer within 5 s")
            .expect("read");
        assert!(
            n > 0,
            "closed before answering: {}",
            String::from_utf8_lossy(&answer)
        );
        answer.extend_from_slice(&buf[..n]);
    }
    assert!(String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 200 OK"));
}

#[tokio::test]
async fn requests_beyond_max_concurrent_requests_get_503_and_health_still_answers() {
    // One slot; the subgraph takes 400 ms, so the first request holds it meanwhile.
    let (url, fault) = slow_subgraph_gateway(|c| c.traffic.max_concurrent_requests = 1).await;
    let client = support::client();
    let query =
        serde_json::to_vec(&serde_json::json!({"query": "{ top { id price } }"})).expect("JSON");
    let post = |client: support::HttpClient, url: String, body: Vec<u8>| async move {
        support::request(
            &client,
            "POST",
            &url,
            &[("content-type", "application/json")],
            body,
        )
        .await
    };
    let first = tokio::spawn(post(client.clone(), url.clone(), query.clone()));
    while fault.requests() == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let refused = post(client.clone(), url.clone(), query.clone()).await;
    assert_eq!(refused.status, 503);
    assert_eq!(
        refused.headers.get("retry-after").map(|v| v.as_bytes()),
        Some(&b"1"[..])
    );
    let body: serde_json::Value = serde_json::from_slice(&refused.body).expect("JSON");
    assert_eq!(
        body["errors"][0]["extensions"]["code"], "TOO_MANY_CONCURRENT_REQUESTS",
        "{body}"
    );
    let health = url.replace("/graphql", "/health/ready");
    let ready = support::request(&client, "GET", &health, &[], Vec::new()).await;
    assert_eq!(ready.status, 200);
    assert_eq!(first.await.expect("first request").status, 200);
    // The slot is free again.
    assert_eq!(post(client, url, query).await.status, 200);
}

/// The head of the answer to a complete POST on `stream`, lowercased.
async fn answer_head(stream: &mut TcpStream) -> String {
    let request = format!(
        "POST /graphql HTTP/1.1\r\nhost: gateway\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{QUERY}",
        QUERY.len()
    );
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut answer = Vec::new();
    let mut buf = vec![0u8; 4096];
    while !answer.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf))
            .await
            .expect("an answer within 5 s")
            .expect("read");
        assert!(n > 0, "closed before answering");
        answer.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&answer).to_lowercase();
    text.split("\r\n\r\n").next().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn a_connection_past_its_age_is_told_to_reconnect() {
    let (addr, _subgraphs) = gateway(|c| {
        c.traffic.max_connection_age = Some(Duration::from_millis(300));
    })
    .await;
    let mut stream = TcpStream::connect(&addr).await.expect("connect");
    let young = answer_head(&mut stream).await;
    assert!(young.starts_with("http/1.1 200 ok"), "{young}");
    assert!(!young.contains("connection: close"), "{young}");
    tokio::time::sleep(Duration::from_millis(350)).await;
    let aged = answer_head(&mut stream).await;
    assert!(aged.starts_with("http/1.1 200 ok"), "{aged}");
    assert!(aged.contains("connection: close"), "{aged}");
    closed_within_5s(&mut stream).await;
    // A new connection is young again.
    let mut fresh = TcpStream::connect(&addr).await.expect("connect again");
    let head = answer_head(&mut fresh).await;
    assert!(!head.contains("connection: close"), "{head}");
}

#[tokio::test]
async fn silent_connections_are_closed_and_free_their_slots() {
    // Every slot taken by connections that never send a byte (not even enough for
    // HTTP/1 or HTTP/2 to be chosen): they are closed after the header timeout, and the
    // client waiting behind them is served.
    let (addr, _subgraphs) = gateway(|c| {
        c.traffic.max_connections = 4;
        c.traffic.header_read_timeout = Duration::from_millis(300);
    })
    .await;
    let mut silent = Vec::new();
    for _ in 0..4 {
        silent.push(TcpStream::connect(&addr).await.expect("connect"));
    }
    let started = Instant::now();
    let mut waiting = TcpStream::connect(&addr)
        .await
        .expect("connect (kernel backlog)");
    assert_eq!(exchange(&mut waiting).await, "HTTP/1.1 200 OK");
    let waited = started.elapsed();
    assert!(
        waited < Duration::from_secs(3),
        "served after {waited:?}, not once the silent ones were closed"
    );
    for stream in &mut silent {
        closed_within_5s(stream).await;
    }
}

#[tokio::test]
async fn one_client_cannot_take_every_connection_slot() {
    let (addr, _subgraphs) = gateway(|c| {
        c.traffic.max_connections = 8;
        c.traffic.max_connections_per_client = 2;
    })
    .await;
    let mut first = TcpStream::connect(&addr).await.expect("connect");
    let mut second = TcpStream::connect(&addr).await.expect("connect");
    assert_eq!(exchange(&mut first).await, "HTTP/1.1 200 OK");
    assert_eq!(exchange(&mut second).await, "HTTP/1.1 200 OK");
    // A third from the same address is closed as it is accepted.
    let mut third = TcpStream::connect(&addr).await.expect("connect");
    closed_within_5s(&mut third).await;
    // Once one closes, the client may open another.
    drop(first);
    let mut again = None;
    for _ in 0..50 {
        let mut stream = TcpStream::connect(&addr).await.expect("connect");
        let request = format!(
            "POST /graphql HTTP/1.1\r\nhost: gateway\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{QUERY}",
            QUERY.len()
        );
        stream.write_all(request.as_bytes()).await.expect("send");
        let mut buf = vec![0u8; 4096];
        if let Ok(n @ 1..) = stream.read(&mut buf).await {
            again = Some(
                String::from_utf8_lossy(&buf[..n])
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .to_owned(),
            );
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(again.as_deref(), Some("HTTP/1.1 200 OK"));
}
