//! Rate limiting (`rate_limit`) over real HTTP: the gateway's own buckets (global, per
//! client header, per operation), and fleet-wide buckets in a real Redis
//! (`redis-server`, started here on a loopback port) shared by two gateways; with Redis
//! unreachable, requests pass (`fail_open`) or get 503.

mod support;

use graphfleet_gateway::config::{BucketConfig, ClientBucketConfig, Config, RedisConfig};
use graphfleet_gateway::supergraph::Supergraph;
use serde_json::{Value, json};
use std::time::Duration;

const QUERY: &str = "{ users { id } }";
const MINUTE: Duration = Duration::from_secs(60);

async fn gateway(config: Config) -> (String, support::json_subgraph::JsonSubgraphs) {
    let (subgraphs, text) = support::fixture_subgraphs("keys").await;
    let supergraph = Supergraph::parse(&text).expect("supergraph loads");
    (
        support::start_gateway_with_config(config, supergraph).await,
        subgraphs,
    )
}

/// (status, Retry-After, error code) of one request with `headers`.
async fn ask(url: &str, query: &str, headers: &[(&str, &str)]) -> (u16, Option<String>, String) {
    let body = serde_json::to_vec(&json!({ "query": query })).expect("JSON");
    let mut all = vec![("content-type", "application/json")];
    all.extend_from_slice(headers);
    let reply = support::request(&support::client(), "POST", url, &all, body).await;
    let value: Value = serde_json::from_slice(&reply.body).expect("a JSON answer");
    let code = value["errors"][0]["extensions"]["code"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    let retry = reply
        .headers
        .get("retry-after")
        .map(|v| v.to_str().expect("ASCII").to_owned());
    (reply.status, retry, code)
}

async fn counter(url: &str, name: &str) -> f64 {
    let metrics = url.replace("/graphql", "/metrics");
    let reply = support::request(&support::client(), "GET", &metrics, &[], Vec::new()).await;
    let text = String::from_utf8(reply.body.to_vec()).expect("UTF-8");
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} "))?.parse().ok())
        .unwrap_or(0.0)
}

fn global(capacity: u64) -> Config {
    let mut config = Config::default();
    config.rate_limit.global = Some(BucketConfig {
        capacity,
        interval: MINUTE,
    });
    config
}

#[tokio::test]
async fn the_global_bucket_turns_requests_away_with_429_and_retry_after() {
    let (url, _subgraphs) = gateway(global(3)).await;
    for _ in 0..3 {
        assert_eq!(ask(&url, QUERY, &[]).await.0, 200);
    }
    let (status, retry, code) = ask(&url, QUERY, &[]).await;
    assert_eq!((status, code.as_str()), (429, "REQUEST_RATE_LIMITED"));
    // One token per 20 s.
    let seconds: u64 = retry.expect("Retry-After").parse().expect("seconds");
    assert!((1..=20).contains(&seconds), "{seconds}");
    assert_eq!(
        counter(&url, "graphfleet_rate_limited_requests_total").await,
        1.0
    );
    // Health and metrics take no token.
    let health = url.replace("/graphql", "/health");
    let reply = support::request(&support::client(), "GET", &health, &[], Vec::new()).await;
    assert_eq!(reply.status, 200);
}

#[tokio::test]
async fn clients_told_apart_by_a_header_and_operations_each_have_a_bucket() {
    let mut config = Config::default();
    config.rate_limit.per_client = Some(ClientBucketConfig {
        capacity: 2,
        interval: MINUTE,
        key: "header:x-api-key".to_owned(),
        per_operation: false,
    });
    let (url, _subgraphs) = gateway(config).await;
    let a = [("x-api-key", "a")];
    assert_eq!(ask(&url, QUERY, &a).await.0, 200);
    assert_eq!(ask(&url, QUERY, &a).await.0, 200);
    assert_eq!(ask(&url, QUERY, &a).await.0, 429);
    assert_eq!(ask(&url, QUERY, &[("x-api-key", "b")]).await.0, 200);
    // Without the header: one shared bucket, "(none)".
    assert_eq!(ask(&url, QUERY, &[]).await.0, 200);
    assert_eq!(ask(&url, QUERY, &[]).await.0, 200);
    assert_eq!(ask(&url, QUERY, &[]).await.0, 429);

    let mut config = Config::default();
    config.rate_limit.per_client = Some(ClientBucketConfig {
        capacity: 1,
        interval: MINUTE,
        key: "ip".to_owned(),
        per_operation: true,
    });
    let (url, _subgraphs) = gateway(config).await;
    assert_eq!(ask(&url, "query A { users { id } }", &[]).await.0, 200);
    assert_eq!(ask(&url, "query A { users { id } }", &[]).await.0, 429);
    assert_eq!(ask(&url, "query B { users { id } }", &[]).await.0, 200);
}

/// A real Redis on a free loopback port, stopped when dropped.
struct Redis {
    child: std::process::Child,
    url: String,
}

impl Redis {
    async fn start() -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = std::process::Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("redis-server is installed (scripts/test.sh installs it: scripts/host-packages.sh redis-server)");
        // Owned at once, so it is stopped however this ends.
        let redis = Self {
            child,
            url: format!("redis://127.0.0.1:{port}"),
        };
        for _ in 0..100 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
            {
                return redis;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("redis-server did not listen on port {port} within 5 s");
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn through_redis(capacity: u64, url: &str, fail_open: bool) -> Config {
    let mut config = global(capacity);
    config.rate_limit.redis = Some(RedisConfig {
        url: url.to_owned(),
        timeout: Duration::from_millis(500),
        fail_open,
        key_prefix: format!("test-{}:", std::process::id()),
    });
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_gateways_share_their_buckets_through_redis() {
    let redis = Redis::start().await;
    let (one, _s1) = gateway(through_redis(4, &redis.url, true)).await;
    let (two, _s2) = gateway(through_redis(4, &redis.url, true)).await;
    for url in [&one, &two, &one, &two] {
        assert_eq!(ask(url, QUERY, &[]).await.0, 200);
    }
    // The fleet's four are spent, whichever gateway is asked.
    assert_eq!(ask(&one, QUERY, &[]).await.0, 429);
    assert_eq!(ask(&two, QUERY, &[]).await.0, 429);
    assert_eq!(
        counter(&one, "graphfleet_rate_limit_store_errors_total").await,
        0.0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn while_redis_is_down_requests_pass_or_get_503_as_configured() {
    let redis = Redis::start().await;
    let url = redis.url.clone();
    drop(redis);
    let (open, _s1) = gateway(through_redis(1, &url, true)).await;
    for _ in 0..3 {
        assert_eq!(ask(&open, QUERY, &[]).await.0, 200, "fail open");
    }
    assert!(counter(&open, "graphfleet_rate_limit_store_errors_total").await >= 3.0);
    let (closed, _s2) = gateway(through_redis(1, &url, false)).await;
    let (status, retry, code) = ask(&closed, QUERY, &[]).await;
    assert_eq!(
        (status, code.as_str()),
        (503, "RATE_LIMIT_STORE_UNAVAILABLE")
    );
    assert_eq!(retry.as_deref(), Some("1"));
}
