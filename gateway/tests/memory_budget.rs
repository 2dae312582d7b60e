//! The gateway-wide memory budget (`limits.max_inflight_bytes`) against the attack it is
//! for: many clients at once, each asking for a response just under the response cap.
//! Without it every request may hold `limits.max_response_bytes` twice over (the
//! subgraph body and the response written from it), so 32 of them reach gigabytes; with
//! it, requests past the budget are refused (503 + `Retry-After`) or cut
//! (`MEMORY_BUDGET_EXCEEDED`), the process stays bounded, health keeps answering, and
//! once the burst is over the budget is all given back.
//!
//! The gateway is the real binary as a child process (so its peak RSS, `VmHWM`, is its
//! own), in front of a subgraph on loopback that answers every query with the same
//! ~8 MiB body, in one piece with `Content-Length` (`/fixed`) or in 64 KiB chunks
//! without it (`/chunked`).

mod support;

use bytes::Bytes;
use futures::StreamExt;
use graphfleet_bench_model::hostile::BIG_SUPERGRAPH;
use graphfleet_gateway::config::Config;
use graphfleet_gateway::gateway::Gateway;
use graphfleet_gateway::supergraph::Supergraph;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use prometheus_parse::{Scrape, Value};
use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::process::GatewayProcess;
use tokio::io::AsyncWriteExt;

const MIB: usize = 1024 * 1024;
/// Strings in the subgraph's answer, each of [`STRING_BYTES`]: ~8 MiB in all.
const STRINGS: usize = 8;
const STRING_BYTES: usize = MIB;
const QUERY: &str = "{ blob }";

/// The big subgraph's answer: `{"data":{"blob":["xxx…",…]}}`.
fn big_body() -> Bytes {
    let string = "x".repeat(STRING_BYTES);
    let blob = vec![string; STRINGS];
    Bytes::from(serde_json::to_vec(&serde_json::json!({ "data": { "blob": blob } })).expect("JSON"))
}

/// `{"data":{"items":[{"id":"…","name":"…"},…]}}`: ~2 MiB of small objects, whose
/// parsed values weigh several times their text.
fn objects_body() -> Bytes {
    let items: Vec<_> = (0..50_000)
        .map(|i| serde_json::json!({ "id": i.to_string(), "name": "n" }))
        .collect();
    Bytes::from(
        serde_json::to_vec(&serde_json::json!({ "data": { "items": items } })).expect("JSON"),
    )
}

/// A subgraph on loopback answering every request with [`big_body`] (at `/objects`,
/// [`objects_body`]); its base URL.
async fn big_subgraph() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind an ephemeral loopback port");
    let base = format!("http://{}", listener.local_addr().expect("bound address"));
    let (body, objects) = (big_body(), objects_body());
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let (body, objects) = (body.clone(), objects.clone());
            tokio::spawn(async move {
                let service = service_fn(move |req: Request<hyper::body::Incoming>| {
                    let body = match req.uri().path() {
                        "/objects" => objects.clone(),
                        _ => body.clone(),
                    };
                    async move {
                        let chunked = req.uri().path() == "/chunked";
                        let _ = req.into_body().collect().await;
                        Ok::<_, Infallible>(answer(body, chunked))
                    }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    base
}

type AnswerBody = http_body_util::Either<
    Full<Bytes>,
    StreamBody<futures::stream::Iter<std::vec::IntoIter<Result<Frame<Bytes>, Infallible>>>>,
>;

/// `body` in one piece, or in 64 KiB frames with no `Content-Length`.
fn answer(body: Bytes, chunked: bool) -> Response<AnswerBody> {
    let payload = if chunked {
        let frames: Vec<_> = (0..body.len())
            .step_by(64 * 1024)
            .map(|at| {
                Ok(Frame::data(
                    body.slice(at..(at + 64 * 1024).min(body.len())),
                ))
            })
            .collect();
        http_body_util::Either::Right(StreamBody::new(futures::stream::iter(frames)))
    } else {
        http_body_util::Either::Left(Full::new(body))
    };
    let mut response = Response::new(payload);
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

/// The gateway binary in front of the big subgraph at `path`, with `settings`.
async fn gateway(test: &str, path: &str, settings: &[&str]) -> GatewayProcess {
    let base = big_subgraph().await;
    let dir = support::process::test_dir(test);
    let file: PathBuf = dir.join("supergraph.graphql");
    let text = BIG_SUPERGRAPH.replace("SUBGRAPH_URL", &format!("{base}{path}"));
    std::fs::write(&file, text).expect("write the supergraph");
    support::fed::start_gateway(&dir, &file, settings).await
}

/// How the gateway answered one request of the burst.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Answer {
    /// 200 with the whole blob and no error.
    Whole,
    /// 503 with `Retry-After` and `MEMORY_BUDGET_EXCEEDED`: refused before it started.
    Refused,
    /// 200 with a `MEMORY_BUDGET_EXCEEDED` error: cut while running.
    Cut,
    /// Anything else (a failure of the test).
    Other(String),
}

/// One POST of [`QUERY`], its body read but only its ends kept (the whole responses
/// of a burst would weigh on the test process, not the gateway).
async fn ask(client: &support::HttpClient, url: &str) -> Answer {
    let body = serde_json::to_vec(&serde_json::json!({ "query": QUERY })).expect("JSON");
    let req = Request::post(url)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .expect("a valid request");
    let response = match tokio::time::timeout(Duration::from_secs(60), client.request(req)).await {
        Ok(Ok(response)) => response,
        Ok(Err(e)) => return Answer::Other(format!("request failed: {e}")),
        Err(_) => return Answer::Other("no answer within 60 s".to_owned()),
    };
    let status = response.status().as_u16();
    let retry_after = response.headers().get("retry-after").cloned();
    let mut stream = response.into_body().into_data_stream();
    let (mut head, mut tail, mut len) = (Vec::new(), Vec::new(), 0usize);
    while let Some(chunk) = stream.next().await {
        let Ok(chunk) = chunk else {
            return Answer::Other(format!("status {status}: the body broke off"));
        };
        len += chunk.len();
        if head.len() < 4096 {
            head.extend_from_slice(&chunk[..chunk.len().min(4096 - head.len())]);
        }
        tail.extend_from_slice(&chunk);
        if tail.len() > 8192 {
            tail.drain(..tail.len() - 4096);
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let tail = String::from_utf8_lossy(&tail).into_owned();
    let budget_error = head.contains("\"MEMORY_BUDGET_EXCEEDED\"");
    match status {
        503 if budget_error && retry_after.is_some_and(|v| v == "1") => Answer::Refused,
        200 if budget_error => Answer::Cut,
        200 if len > STRINGS * STRING_BYTES && !tail.contains("\"errors\"") => Answer::Whole,
        _ => Answer::Other(format!(
            "status {status}, {len} bytes: {head:.300} … {tail:.300}"
        )),
    }
}

/// The gateway's peak resident memory (`VmHWM`), in bytes.
fn peak_rss(gateway: &GatewayProcess) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{}/status", gateway.pid()))
        .expect("read the gateway's /proc status");
    let kib: usize = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc status");
    kib * 1024
}

/// One sample of the gateway's metrics, by name and optional `when` label.
async fn metric(
    client: &support::HttpClient,
    gateway: &GatewayProcess,
    name: &str,
    when: Option<&str>,
) -> f64 {
    let reply = support::request(client, "GET", &gateway.url("/metrics"), &[], Vec::new()).await;
    assert_eq!(reply.status, 200);
    let text = String::from_utf8(reply.body.to_vec()).expect("metrics are UTF-8");
    let scrape = Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).expect("Prometheus text");
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == name && when.is_none_or(|w| s.labels.get("when") == Some(w)))
        .map(|s| match s.value {
            Value::Gauge(v) | Value::Counter(v) | Value::Untyped(v) => v,
            _ => panic!("{name} is a gauge or counter"),
        })
        .sum()
}

/// Sends `clients` requests at once, each on its own connection, while polling
/// `/health`; the answers, and the slowest health answer seen.
async fn burst(gateway: &GatewayProcess, clients: usize) -> (Vec<Answer>, Duration) {
    let url = gateway.url("/graphql");
    let health = gateway.url("/health");
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let probe = {
        let done = done.clone();
        tokio::spawn(async move {
            let client = support::client();
            let mut slowest = Duration::ZERO;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let started = Instant::now();
                let reply = support::request(&client, "GET", &health, &[], Vec::new()).await;
                assert_eq!(reply.status, 200, "/health during the burst");
                slowest = slowest.max(started.elapsed());
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            slowest
        })
    };
    let asks = (0..clients).map(|_| {
        let url = url.clone();
        tokio::spawn(async move { ask(&support::client(), &url).await })
    });
    let answers = futures::future::join_all(asks)
        .await
        .into_iter()
        .map(|a| a.expect("the client task"))
        .collect();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    (answers, probe.await.expect("the health probe"))
}

/// Waits until the gateway holds nothing against its budget (responses are released
/// once written, which may trail the client's last byte a little).
async fn held_drops_to_zero(client: &support::HttpClient, gateway: &GatewayProcess) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let held = metric(client, gateway, "graphfleet_memory_inflight_bytes", None).await;
        if held == 0.0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "still {held} bytes held after the burst"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The gateway the bursts hit: ~16 MiB per request (body and response) against a
/// 64 MiB budget, deduplication off so each request reads its own body.
async fn burst_gateway(test: &str) -> GatewayProcess {
    let settings = [
        "limits.max_response_bytes=16MiB",
        "limits.max_inflight_bytes=64MiB",
        "traffic.deduplicate=false",
    ];
    gateway(test, "/chunked", &settings).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_big_responses_is_refused_or_cut_within_the_budget() {
    // Each request needs ~8 MiB of subgraph body and ~8 MiB of response: 32 at once
    // want ~512 MiB; the budget is 64 MiB. Deduplication off, so each reads its own body.
    let gateway = burst_gateway("memory-burst").await;
    let client = support::client();
    let (answers, slowest_health) = burst(&gateway, 32).await;
    let count = |kind: &Answer| answers.iter().filter(|a| *a == kind).count();
    let (whole, refused, cut) = (
        count(&Answer::Whole),
        count(&Answer::Refused),
        count(&Answer::Cut),
    );
    let others: Vec<_> = answers
        .iter()
        .filter(|a| matches!(a, Answer::Other(_)))
        .collect();
    let peak = peak_rss(&gateway);
    println!(
        "32 clients: {whole} whole, {refused} refused (503), {cut} cut; gateway peak RSS {} MiB; slowest /health {slowest_health:?}",
        peak / MIB
    );
    assert!(others.is_empty(), "unexpected answers: {others:?}");
    assert!(refused + cut > 0, "the budget refused nothing: {answers:?}");
    // Without the budget this attack took the debug-built gateway to 300-410 MiB; the
    // budget's 64 MiB, the process itself and what the budget does not count (parsed
    // values, allocator slack, kept buffers) stay far below.
    assert!(peak < 256 * MIB, "gateway peak RSS {} MiB", peak / MIB);
    assert!(
        slowest_health < Duration::from_secs(5),
        "/health took {slowest_health:?}"
    );

    held_drops_to_zero(&client, &gateway).await;
    let refusals = metric(
        &client,
        &gateway,
        "graphfleet_memory_refused_requests_total",
        None,
    )
    .await;
    assert_eq!(
        refusals as usize,
        refused + cut,
        "every refusal counted once"
    );
    assert_eq!(
        metric(
            &client,
            &gateway,
            "graphfleet_memory_inflight_limit_bytes",
            None
        )
        .await as usize,
        64 * MIB
    );
    // The budget is free again: a request is answered whole, and gives it all back.
    assert_eq!(ask(&client, &gateway.url("/graphql")).await, Answer::Whole);
    held_drops_to_zero(&client, &gateway).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_an_operation_known_to_be_big_is_refused_at_the_door_not_cut() {
    // As above, but the gateway has answered the operation once, so it knows each
    // request takes ~16 MiB: of 32 arriving together, those the budget has room for
    // reserve it and run, the rest get 503 at once, and none is cut halfway.
    let gateway = burst_gateway("memory-burst-known").await;
    let client = support::client();
    assert_eq!(ask(&client, &gateway.url("/graphql")).await, Answer::Whole);
    held_drops_to_zero(&client, &gateway).await;
    let (answers, slowest_health) = burst(&gateway, 32).await;
    let count = |kind: &Answer| answers.iter().filter(|a| *a == kind).count();
    let (whole, refused) = (count(&Answer::Whole), count(&Answer::Refused));
    println!(
        "32 clients, operation known: {whole} whole, {refused} refused (503); slowest /health {slowest_health:?}"
    );
    assert_eq!(whole + refused, 32, "cut or failed: {answers:?}");
    assert!(
        whole >= 1 && refused >= 24,
        "{whole} whole, {refused} refused"
    );
    let cut = metric(
        &client,
        &gateway,
        "graphfleet_memory_refused_requests_total",
        Some("running"),
    )
    .await;
    assert_eq!(cut, 0.0, "no request was cut while running");
    held_drops_to_zero(&client, &gateway).await;
    let reserved = metric(&client, &gateway, "graphfleet_memory_reserved_bytes", None).await;
    assert_eq!(reserved, 0.0, "reservations are given back");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parsed_values_count_against_the_budget() {
    // ~1.4 MiB of small objects: body and response fit a 6 MiB budget many times over,
    // the values parsed from them (~5× their text) do not.
    let settings = [
        "limits.max_response_bytes=3MiB",
        "limits.max_inflight_bytes=6MiB",
    ];
    let gateway = gateway("memory-parsed", "/objects", &settings).await;
    let client = support::client();
    let url = gateway.url("/graphql");
    let query = "{ items { id name } }";
    let reply = support::post_graphql(&client, &url, query, serde_json::json!({})).await;
    assert_eq!(reply.status, 200);
    let body: serde_json::Value = serde_json::from_slice(&reply.body).expect("JSON");
    let error = &body["errors"][0];
    assert_eq!(
        error["extensions"]["code"], "MEMORY_BUDGET_EXCEEDED",
        "{error}"
    );
    let message = error["message"].as_str().expect("a message");
    assert!(
        message.starts_with("storing the answer of 'big'"),
        "{message}"
    );
    held_drops_to_zero(&client, &gateway).await;
    // With room for them, the same operation is answered whole.
    let roomy = [
        "limits.max_response_bytes=3MiB",
        "limits.max_inflight_bytes=64MiB",
    ];
    let gateway = self::gateway("memory-parsed-roomy", "/objects", &roomy).await;
    let reply = support::post_graphql(
        &client,
        &gateway.url("/graphql"),
        query,
        serde_json::json!({}),
    )
    .await;
    let body: serde_json::Value = serde_json::from_slice(&reply.body).expect("JSON");
    assert!(body.get("errors").is_none(), "{:.300}", body.to_string());
    assert_eq!(body["data"]["items"].as_array().map(Vec::len), Some(50_000));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_request_alone_under_the_response_cap_always_fits() {
    // The smallest budget allowed: twice the response cap. One request of ~8 MiB holds
    // its body and its response at once, and is never refused on an idle gateway.
    let gateway = gateway(
        "memory-alone",
        "/fixed",
        &[
            "limits.max_response_bytes=9MiB",
            "limits.max_inflight_bytes=18MiB",
        ],
    )
    .await;
    let client = support::client();
    for _ in 0..3 {
        assert_eq!(ask(&client, &gateway.url("/graphql")).await, Answer::Whole);
        held_drops_to_zero(&client, &gateway).await;
    }
    let refusals = metric(
        &client,
        &gateway,
        "graphfleet_memory_refused_requests_total",
        None,
    )
    .await;
    assert_eq!(refusals, 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_held_by_slow_readers_turn_new_requests_away_with_503() {
    // Two clients that never read their ~8 MiB answers: each answer holds its charge
    // until it is sent. The second still fits beside the first's answer (it reserves
    // what the first took, ~16 MiB and an eighth: ~26.4 MiB of 27), and then a third
    // request, which would take as much again, is refused at once.
    let gateway = gateway(
        "memory-slow-readers",
        "/fixed",
        &[
            "limits.max_response_bytes=9MiB",
            "limits.max_inflight_bytes=27MiB",
        ],
    )
    .await;
    let client = support::client();
    let body = serde_json::to_string(&serde_json::json!({ "query": QUERY })).expect("JSON");
    let request = format!(
        "POST /graphql HTTP/1.1\r\nhost: gateway\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    // One after the other: run at once, the two would not fit, and one would be cut.
    let mut readers = Vec::new();
    for n in 1..=2 {
        let mut stream = tokio::net::TcpStream::connect(gateway.addr)
            .await
            .expect("connect");
        stream
            .write_all(request.as_bytes())
            .await
            .expect("send the request");
        readers.push(stream);
        // Held: `n` answers of a bit over 8 MiB each, their bodies and the rest freed.
        let (low, high) = ((n * 8 * MIB) as f64, (n * 9 * MIB) as f64);
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let held = metric(&client, &gateway, "graphfleet_memory_inflight_bytes", None).await;
            if (low..high).contains(&held) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "slow reader {n}'s answer is not what is held: {held} bytes"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let refused = support::post_graphql(
        &client,
        &gateway.url("/graphql"),
        QUERY,
        serde_json::json!({}),
    )
    .await;
    assert_eq!(refused.status, 503);
    assert_eq!(
        refused.headers.get("retry-after").map(|v| v.as_bytes()),
        Some(&b"1"[..])
    );
    let error: serde_json::Value = serde_json::from_slice(&refused.body).expect("JSON");
    assert_eq!(
        error["errors"][0]["extensions"]["code"], "MEMORY_BUDGET_EXCEEDED",
        "{error}"
    );
    let health = support::request(&client, "GET", &gateway.url("/health"), &[], Vec::new()).await;
    assert_eq!(health.status, 200);
    assert_eq!(
        metric(
            &client,
            &gateway,
            "graphfleet_memory_refused_requests_total",
            Some("new")
        )
        .await,
        1.0
    );
    // The readers leave: their answers, and the budget, are freed.
    drop(readers);
    held_drops_to_zero(&client, &gateway).await;
    assert_eq!(ask(&client, &gateway.url("/graphql")).await, Answer::Whole);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_the_budget_has_no_room_for_is_cut_before_it_is_written() {
    // In process, so the test can take part of the budget itself: 9 of 18 MiB leaves
    // just the headroom a new request needs, then the ~8 MiB body fits and the ~8 MiB
    // response it would become does not.
    let base = big_subgraph().await;
    let text = BIG_SUPERGRAPH.replace("SUBGRAPH_URL", &format!("{base}/fixed"));
    let mut config = Config::default();
    config.limits.max_response_bytes = 9 * MIB;
    config.limits.max_inflight_bytes = 18 * MIB;
    let supergraph = Supergraph::parse(&text).expect("the supergraph loads");
    let gateway = Arc::new(Gateway::with_config(Arc::new(config), supergraph));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind an ephemeral loopback port");
    let url = format!("http://{}/graphql", listener.local_addr().expect("bound"));
    tokio::spawn(graphfleet_gateway::http::serve(listener, gateway.clone()));
    let client = support::client();

    let squatter = gateway.memory().charge();
    squatter.try_add(9 * MIB).expect("an idle budget has room");
    let reply = support::post_graphql(&client, &url, QUERY, serde_json::json!({})).await;
    assert_eq!(reply.status, 200);
    let body: serde_json::Value = serde_json::from_slice(&reply.body).expect("JSON");
    assert_eq!(
        body,
        serde_json::json!({
            "data": null,
            "errors": [{
                "message": "writing the response: the gateway's in-flight requests would hold more than 18874368 bytes (limits.max_inflight_bytes); retry shortly",
                "extensions": { "code": "MEMORY_BUDGET_EXCEEDED" },
            }],
        })
    );
    assert_eq!(
        gateway.memory().refusals(),
        (0, 1),
        "one running request cut"
    );
    // The error body's charge goes once the server has written it, which may trail
    // the client's last byte.
    let deadline = Instant::now() + Duration::from_secs(5);
    while gateway.memory().held() != 9 * MIB && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        gateway.memory().held(),
        9 * MIB,
        "all but the squatter's given back"
    );
    drop(squatter);
    assert_eq!(ask(&client, &url).await, Answer::Whole);
}

/// The same burst with a budget too large to bind: the figure the budget is compared
/// with (run with `--ignored --nocapture`; it takes the gateway to several hundred MiB).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: the attack without a binding budget"]
async fn without_a_binding_budget_the_burst_grows_the_gateway() {
    let gateway = gateway(
        "memory-unbound",
        "/chunked",
        &[
            "limits.max_response_bytes=16MiB",
            "limits.max_inflight_bytes=64GiB",
            "traffic.deduplicate=false",
        ],
    )
    .await;
    let (answers, slowest_health) = burst(&gateway, 32).await;
    let whole = answers.iter().filter(|a| **a == Answer::Whole).count();
    println!(
        "32 clients, no binding budget: {whole} whole; gateway peak RSS {} MiB; slowest /health {slowest_health:?}",
        peak_rss(&gateway) / MIB
    );
}
