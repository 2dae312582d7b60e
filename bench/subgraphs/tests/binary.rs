//! The `graphfleet-subgraphs` binary as a real process.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

/// Kills the child (by its own handle) when the test ends, pass or fail.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start(args: &[&str]) -> (Running, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_graphfleet-subgraphs"))
        .args(args)
        .args(["--listen", "127.0.0.1:0", "--threads", "1"])
        .stderr(Stdio::piped())
        .spawn()
        .expect("start graphfleet-subgraphs");
    let stderr = child.stderr.take().expect("piped stderr");
    let running = Running(child);
    let mut line = String::new();
    BufReader::new(stderr)
        .read_line(&mut line)
        .expect("startup line");
    let base = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned();
    (running, base)
}

#[tokio::test]
async fn serves_subgraphs_and_the_monolith() {
    let client = common::client();
    let (_subgraphs, base) = start(&["--set", "fed", "--delay", "products=5"]);
    let (status, body) = common::graphql(
        &client,
        &format!("{base}/products"),
        "{ topProducts(first: 1) { name } }",
        Value::Null,
    )
    .await;
    assert_eq!(
        (
            status,
            common::parse(&body)["data"]["topProducts"][0]["name"].clone()
        ),
        (200, "Table".into())
    );
    let (_, stats) = common::send(&client, "GET", &format!("{base}/stats"), Vec::new()).await;
    assert_eq!(common::parse(&stats)["requests"]["products"], 1);

    let (_monolith, base) = start(&["--set", "fed", "--monolith"]);
    let query = common::query_file("fed", "query");
    let (status, body) =
        common::graphql(&client, &format!("{base}/graphql"), &query, Value::Null).await;
    assert_eq!((status, body.len()), (200, 87_599));
}

/// `--event-interval ROUTE=…` sets that route's clock: SSE events arrive that far apart.
#[tokio::test]
async fn event_intervals_pace_subscriptions() {
    let (_monolith, base) = start(&[
        "--set",
        "fed",
        "--monolith",
        "--event-interval",
        "5s",
        "--event-interval",
        "graphql=150ms",
        "--ws-init-timeout",
        "1s",
    ]);
    let request = hyper::Request::builder()
        .method("POST")
        .uri(format!("{base}/graphql"))
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .body(http_body_util::Full::new(bytes::Bytes::from(
            r#"{"query":"subscription { reviewAdded(limit: 3) { id } }"}"#,
        )))
        .expect("request");
    let started = std::time::Instant::now();
    let response = common::client().request(request).await.expect("response");
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let body = http_body_util::BodyExt::collect(response.into_body())
        .await
        .expect("body")
        .to_bytes();
    let elapsed = started.elapsed();
    let events = String::from_utf8_lossy(&body)
        .matches("event: next")
        .count();
    assert_eq!(events, 3, "{body:?}");
    // Three ticks of 150 ms: more than 300 ms, far less than the 5 s default given.
    assert!(
        elapsed > std::time::Duration::from_millis(300)
            && elapsed < std::time::Duration::from_secs(3),
        "{elapsed:?}"
    );
}

#[test]
fn bad_arguments_fail_with_a_message() {
    for args in [
        vec!["--set", "nope", "--listen", "127.0.0.1:0"],
        vec![
            "--set",
            "fed",
            "--listen",
            "127.0.0.1:0",
            "--delay",
            "accounts",
        ],
        vec![
            "--set",
            "fed",
            "--listen",
            "127.0.0.1:0",
            "--delay",
            "ghost=5",
        ],
        // accounts has no Subscription type, so no event clock.
        vec![
            "--set",
            "fed",
            "--listen",
            "127.0.0.1:0",
            "--event-interval",
            "accounts=5",
        ],
        vec![
            "--set",
            "fed",
            "--listen",
            "127.0.0.1:0",
            "--event-interval",
            "0",
        ],
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_graphfleet-subgraphs"))
            .args(&args)
            .output()
            .expect("run graphfleet-subgraphs");
        assert!(!output.status.success(), "{args:?}");
        assert!(!output.stderr.is_empty(), "{args:?}");
    }
}
