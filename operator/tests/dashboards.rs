//! The chart's Grafana dashboards against a real Prometheus (Debian's `prometheus`
//! package): it scrapes a real gateway (in-process, real HTTP, over the `fed` subgraphs,
//! with traffic: queries, a failing one, a subscription) and the operator's real ops
//! endpoint while the operator composes and rolls out a GraphGateway on the API-only
//! cluster; then every panel's PromQL is evaluated through Prometheus's HTTP API and
//! must parse, run and return at least one finite value.

mod common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use common::stand_in::inline_shop;
use common::{Operator, cluster_client, wait_for};
use graphfleet_bench_model::Set;
use graphfleet_bench_subgraphs::{Mode, Options, StreamOptions};
use graphfleet_gateway::config::Config;
use graphfleet_gateway::gateway::Gateway;
use graphfleet_gateway::supergraph::Supergraph;
use graphfleet_operator::admin_server::{self, OpsState};
use graphfleet_testkit::TestNamespace;
use serde_json::{Value, json};

/// How the test reads `$__rate_interval` and `$job`: a window that spans the whole run.
const RATE_INTERVAL: &str = "5m";

struct Prometheus {
    child: Child,
    url: String,
    dir: PathBuf,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A free loopback port (Prometheus cannot report one it picked itself).
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    listener.local_addr().expect("bound").port()
}

/// Prometheus scraping `targets` (job name, address) every second.
async fn prometheus(targets: &[(&str, SocketAddr)]) -> Prometheus {
    let binary = which("prometheus").expect(
        "prometheus is not installed: run scripts/test.sh, or scripts/host-packages.sh prometheus",
    );
    let dir = std::env::temp_dir().join(format!("graphfleet-prometheus-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a Prometheus folder");
    let jobs: Vec<Value> = targets
        .iter()
        .map(|(job, addr)| json!({ "job_name": job, "static_configs": [{ "targets": [addr.to_string()] }] }))
        .collect();
    let config = json!({
        "global": { "scrape_interval": "1s", "evaluation_interval": "1s" },
        "scrape_configs": jobs,
    });
    // YAML is a superset of JSON.
    let file = dir.join("prometheus.yml");
    std::fs::write(&file, config.to_string()).expect("write the config");
    let port = free_port();
    let child = Command::new(binary)
        .arg(format!("--config.file={}", file.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("log")).expect("a log file"))
        .spawn()
        .expect("start prometheus");
    let prometheus = Prometheus {
        child,
        url: format!("http://127.0.0.1:{port}"),
        dir,
    };
    let ready = format!("{}/-/ready", prometheus.url);
    wait_for("Prometheus ready", Duration::from_secs(30), || async {
        let (status, _) = get(&ready).await?;
        (status == 200).then_some(())
    })
    .await;
    prometheus
}

fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

async fn get(url: &str) -> Option<(u16, Vec<u8>)> {
    use http_body_util::{BodyExt, Empty};
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<Empty<bytes::Bytes>>();
    let response = client.get(url.parse().ok()?).await.ok()?;
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.ok()?.to_bytes();
    Some((status, body.to_vec()))
}

async fn post(url: &str, body: Value) -> (u16, Value) {
    use http_body_util::{BodyExt, Full};
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<Full<bytes::Bytes>>();
    let request = hyper::Request::post(url)
        .header("content-type", "application/json")
        .body(Full::new(bytes::Bytes::from(body.to_string())))
        .expect("a request");
    let response = client.request(request).await.expect("the gateway answers");
    let status = response.status().as_u16();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("a body")
        .to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).expect("a JSON answer"),
    )
}

/// A gateway over the `fed` subgraphs: its address (GraphQL and metrics on one port).
async fn gateway() -> (SocketAddr, graphfleet_bench_subgraphs::Handle) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let stream = StreamOptions {
        event_interval: Duration::from_millis(50),
        ..StreamOptions::default()
    };
    let subgraphs = graphfleet_bench_subgraphs::spawn_with(
        Set::Fed,
        Mode::Subgraphs,
        listener,
        Options::default(),
        stream,
    )
    .expect("the fed servers start");
    let sdl = Set::Fed.supergraph_at(&subgraphs.base_url());
    let supergraph = Supergraph::parse(&sdl).expect("the fed supergraph loads");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let addr = listener.local_addr().expect("bound");
    let gateway = Arc::new(Gateway::with_config(
        Arc::new(Config::default()),
        supergraph,
    ));
    tokio::spawn(graphfleet_gateway::http::serve(listener, gateway));
    (addr, subgraphs)
}

/// Traffic for `for_`: good queries, one that fails, and subscriptions over SSE
/// (bounded: one request each 50 ms at most).
async fn traffic(gateway: SocketAddr, for_: Duration) {
    let url = format!("http://{gateway}/graphql");
    let until = Instant::now() + for_;
    let mut sent = 0u32;
    while Instant::now() < until && sent < 1_000 {
        let query = match sent % 10 {
            9 => "{ nosuchfield }",
            n if n % 2 == 0 => "query Top { topProducts(first: 2) { upc name reviews { body } } }",
            _ => "query Me { me { id username } }",
        };
        let (status, _) = post(&url, json!({ "query": query })).await;
        assert!(status == 200 || status == 400, "status {status}");
        if sent.is_multiple_of(20) {
            subscribe(&url).await;
        }
        sent += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// One subscription of two events over SSE, read to its end.
async fn subscribe(url: &str) {
    use http_body_util::{BodyExt, Full};
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<Full<bytes::Bytes>>();
    let body = json!({ "query": "subscription { reviewAdded(limit: 2) { id } }" });
    let request = hyper::Request::post(url)
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .body(Full::new(bytes::Bytes::from(body.to_string())))
        .expect("a request");
    let response = client.request(request).await.expect("the gateway answers");
    let text = response
        .into_body()
        .collect()
        .await
        .expect("the stream")
        .to_bytes();
    let text = String::from_utf8_lossy(&text);
    assert_eq!(text.matches("event: next").count(), 2, "{text}");
}

/// Every PromQL expression of the dashboard in `file`, with its panel's title.
fn expressions(file: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(file).expect("the dashboard");
    let dashboard: Value = serde_json::from_str(&text).expect("the dashboard is JSON");
    let mut out = Vec::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"].as_str().expect("a PromQL target");
            let expr = expr
                .replace("$__rate_interval", RATE_INTERVAL)
                .replace("$job", ".+");
            let title = panel["title"].as_str().expect("a title").to_owned();
            out.push((title, expr));
        }
    }
    out
}

/// Why `expr` shows nothing, or `None` when it returns at least one finite value.
async fn check(prometheus: &Prometheus, expr: &str) -> Option<String> {
    let query: String = form_urlencoded::byte_serialize(expr.as_bytes()).collect();
    let Some((status, body)) = get(&format!("{}/api/v1/query?query={query}", prometheus.url)).await
    else {
        return Some("Prometheus did not answer".to_owned());
    };
    let answer: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if status != 200 || answer["status"] != "success" {
        return Some(format!("{status}: {}", answer["error"]));
    }
    let result = answer["data"]["result"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let finite = result.iter().any(|series| {
        series["value"][1]
            .as_str()
            .and_then(|v| v.parse::<f64>().ok())
            .is_some_and(f64::is_finite)
    });
    (!finite).then(|| format!("no finite value: {result:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_panel_shows_data_from_a_real_prometheus() {
    let client = cluster_client().await;
    let ns = TestNamespace::create(&client, "dashboards").await;
    let operator = Operator::start(&client, ns.name());
    let ops = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let ops_addr = ops.local_addr().expect("bound");
    let state = Arc::new(OpsState {
        metrics: operator.metrics.clone(),
        ready: AtomicBool::new(true),
        leader: AtomicBool::new(true),
    });
    tokio::spawn(admin_server::serve(ops, state, std::future::pending()));
    let (gateway, _subgraphs) = gateway().await;
    let prometheus = prometheus(&[("gateway", gateway), ("operator", ops_addr)]).await;
    // Both scraped before anything happens, so what follows shows as increases.
    wait_for("both targets scraped", Duration::from_secs(30), || async {
        check(&prometheus, "count(up == 1) == 2")
            .await
            .is_none()
            .then_some(())
    })
    .await;

    // The operator composes the shop and rolls its first revision out.
    let (_subgraphs, gateways) = inline_shop(
        &client,
        ns.name(),
        json!({
            "subgraphSelector": { "matchLabels": { "graph": "shop" } },
        }),
    )
    .await;
    wait_for("the shop composed", Duration::from_secs(60), || async {
        let gw = gateways.get("shop").await.ok()?;
        gw.status?.supergraph_hash.map(|_| ())
    })
    .await;
    traffic(gateway, Duration::from_secs(8)).await;
    // Two more scrapes after the last request.
    tokio::time::sleep(Duration::from_secs(3)).await;

    let dashboards = Path::new(env!("CARGO_MANIFEST_DIR")).join("../charts/graphfleet/dashboards");
    let mut failures = Vec::new();
    let mut checked = 0;
    for name in ["gateway", "operator"] {
        for (title, expr) in expressions(&dashboards.join(format!("{name}.json"))) {
            checked += 1;
            if let Some(why) = check(&prometheus, &expr).await {
                failures.push(format!("{name} / {title}: {expr}\n    {why}"));
            }
        }
    }
    assert!(checked >= 25, "only {checked} expressions found");
    assert!(
        failures.is_empty(),
        "panels without data:\n{}",
        failures.join("\n")
    );
    operator.stop().await;
}
