//! Supergraph hot reload with the real binary and real subgraphs: swaps by atomic rename
//! and by a Kubernetes ConfigMap `..data` symlink swap under load, an invalid file during
//! load, and a start before the file exists.

mod support;

use bytes::Bytes;
use graphfleet_bench_model::Set;
use graphfleet_bench_subgraphs::Handle;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use support::fed;
use support::process::{GatewayProcess, test_dir};

/// Three subgraph fetches in a row: products → reviews → accounts.
const QUERY: &str = "{ topProducts { upc name price reviews { body author { name } } } }";
const CLIENTS: usize = 8;
/// Bounds of one load run.
const MAX_REQUESTS_PER_CLIENT: usize = 5_000;
const MAX_LOAD_TIME: Duration = Duration::from_secs(90);

fn short_hash(text: &str) -> String {
    let hash = Sha256::digest(text.as_bytes());
    hash.iter().map(|b| format!("{b:02x}")).collect::<String>()[..12].to_owned()
}

/// Replace `path` atomically (write a temporary file, then rename over it).
fn write_atomic(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).expect("write the temporary supergraph");
    std::fs::rename(&tmp, path).expect("rename over the supergraph");
}

/// A directory laid out like a mounted ConfigMap: `supergraph.graphql` ->
/// `..data/supergraph.graphql`, `..data` -> a timestamped directory.
struct ConfigMapDir {
    dir: PathBuf,
    generation: u32,
}

impl ConfigMapDir {
    fn new(dir: PathBuf, text: &str) -> Self {
        std::fs::create_dir_all(&dir).expect("create the ConfigMap directory");
        let mut cm = Self { dir, generation: 0 };
        cm.update(text);
        std::os::unix::fs::symlink("..data/supergraph.graphql", cm.file())
            .expect("link supergraph.graphql");
        cm
    }

    fn file(&self) -> PathBuf {
        self.dir.join("supergraph.graphql")
    }

    /// What the kubelet does: a new timestamped directory, a `..data_tmp` link to it
    /// renamed over `..data`, then the old directory removed.
    fn update(&mut self, text: &str) {
        let old = format!("..2026_11_21_12_00_00.{}", self.generation);
        self.generation += 1;
        let new = format!("..2026_11_21_12_00_00.{}", self.generation);
        std::fs::create_dir(self.dir.join(&new)).expect("create the data directory");
        std::fs::write(self.dir.join(&new).join("supergraph.graphql"), text)
            .expect("write the supergraph");
        let tmp = self.dir.join("..data_tmp");
        std::os::unix::fs::symlink(&new, &tmp).expect("link ..data_tmp");
        std::fs::rename(&tmp, self.dir.join("..data")).expect("swap ..data");
        let _ = std::fs::remove_dir_all(self.dir.join(old));
    }
}

/// Wait until the gateway log contains `needle`.
async fn wait_for_log(gateway: &GatewayProcess, needle: &str, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    while !gateway.log().contains(needle) {
        assert!(
            Instant::now() < deadline,
            "no {needle:?} in the gateway log within {timeout:?}:\n{}",
            gateway.log()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `CLIENTS` loops posting `QUERY` until `stop`; returns (requests, failures).
struct Load {
    stop: Arc<AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<(usize, Vec<String>)>>,
}

impl Load {
    fn start(url: String, expected: Bytes) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let tasks = (0..CLIENTS)
            .map(|_| {
                let (url, expected, stop) = (url.clone(), expected.clone(), stop.clone());
                tokio::spawn(async move {
                    let client = support::client();
                    let started = Instant::now();
                    let mut failures = Vec::new();
                    let mut sent = 0;
                    while !stop.load(Ordering::SeqCst)
                        && sent < MAX_REQUESTS_PER_CLIENT
                        && started.elapsed() < MAX_LOAD_TIME
                    {
                        sent += 1;
                        match fed::try_post(&client, &url, QUERY).await {
                            Ok((200, body)) if body == expected => {}
                            Ok((status, body)) => failures
                                .push(format!("{status}: {}", String::from_utf8_lossy(&body))),
                            Err(e) => failures.push(e),
                        }
                    }
                    (sent, failures)
                })
            })
            .collect();
        Self { stop, tasks }
    }

    async fn finish(self) -> (usize, Vec<String>) {
        self.stop.store(true, Ordering::SeqCst);
        let mut total = 0;
        let mut failures = Vec::new();
        for task in self.tasks {
            let (sent, f) = task.await.expect("load client task");
            total += sent;
            failures.extend(f);
        }
        (total, failures)
    }
}

struct Env {
    a: Handle,
    b: Handle,
    gateway: GatewayProcess,
    client: support::HttpClient,
    expected: Bytes,
}

/// Two identical subgraph servers (A and B) and the gateway on a supergraph routing to A.
/// `poll_interval` is long, so a reload within seconds proves the filesystem watch works.
async fn env(name: &str, layout: impl FnOnce(&Path, &str) -> PathBuf) -> Env {
    let (a, b) = (fed::subgraphs(&[]).await, fed::subgraphs(&[]).await);
    let dir = test_dir(name);
    let file = layout(&dir, &Set::Fed.supergraph_at(&a.base_url()));
    let gateway = fed::start_gateway(&dir, &file, &["supergraph.poll_interval=60s"]).await;
    let client = support::client();
    let (status, expected) = fed::try_post(&client, &gateway.url("/graphql"), QUERY)
        .await
        .expect("first request");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&expected));
    let text = String::from_utf8_lossy(&expected).to_string();
    assert!(
        text.starts_with("{\"data\":{\"topProducts\":[") && !text.contains("errors"),
        "{text}"
    );
    Env {
        a,
        b,
        gateway,
        client,
        expected,
    }
}

impl Env {
    /// After the reload to `text` is logged, only `to` receives subgraph requests.
    async fn assert_served_by(&self, text: &str, to: &Handle, from: &Handle) {
        wait_for_log(
            &self.gateway,
            &format!("supergraph reloaded hash={}", short_hash(text)),
            Duration::from_secs(10),
        )
        .await;
        // Requests that started on the old supergraph may still be finishing.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let (to_before, from_before) = (
            fed::subgraph_requests(&self.client, to).await,
            fed::subgraph_requests(&self.client, from).await,
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
        let (to_after, from_after) = (
            fed::subgraph_requests(&self.client, to).await,
            fed::subgraph_requests(&self.client, from).await,
        );
        assert!(
            to_after > to_before,
            "the new subgraph URLs get no requests"
        );
        assert_eq!(
            from_after, from_before,
            "the old subgraph URLs still get requests"
        );
    }
}

fn assert_no_failures(total: usize, failures: &[String]) {
    eprintln!("load: {total} requests, {} failed", failures.len());
    assert!(total > 0, "the load sent nothing");
    assert!(
        failures.is_empty(),
        "{} of {total} requests failed, e.g. {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
}

/// `supergraph.graphql` directly in `dir`.
fn plain_file(dir: &Path, text: &str) -> PathBuf {
    let file = dir.join("supergraph.graphql");
    std::fs::write(&file, text).expect("write the supergraph");
    file
}

/// Under load, four reloads alternating between B and A, each supergraph handed to
/// `write`; every reload moves the traffic and no request fails.
async fn alternate_under_load(env: &Env, mut write: impl FnMut(&str)) {
    let load = Load::start(env.gateway.url("/graphql"), env.expected.clone());
    for round in 0..4 {
        let (to, from) = if round % 2 == 0 {
            (&env.b, &env.a)
        } else {
            (&env.a, &env.b)
        };
        // A comment makes every round's hash new, even when the URLs repeat.
        let text = format!(
            "# round {round}\n{}",
            Set::Fed.supergraph_at(&to.base_url())
        );
        write(&text);
        env.assert_served_by(&text, to, from).await;
    }
    let (total, failures) = load.finish().await;
    assert_no_failures(total, &failures);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn atomic_renames_under_load_fail_no_request() {
    let env = env("reload-rename", plain_file).await;
    let file = env.gateway.dir.join("supergraph.graphql");
    alternate_under_load(&env, |text| write_atomic(&file, text)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn configmap_symlink_swaps_under_load_fail_no_request() {
    let mut configmap = None;
    let env = env("reload-configmap", |dir, text| {
        let cm = ConfigMapDir::new(dir.join("configmap"), text);
        let file = cm.file();
        configmap = Some(cm);
        file
    })
    .await;
    let mut configmap = configmap.expect("ConfigMap directory");
    alternate_under_load(&env, |text| configmap.update(text)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_invalid_supergraph_is_logged_and_the_last_good_one_keeps_serving() {
    let env = env("reload-invalid", plain_file).await;
    let file = env.gateway.dir.join("supergraph.graphql");
    let load = Load::start(env.gateway.url("/graphql"), env.expected.clone());
    let broken = Set::Fed
        .supergraph_at(&env.b.base_url())
        .replace("type Query", "type Query {");
    write_atomic(&file, &broken);
    wait_for_log(
        &env.gateway,
        "supergraph reload failed, keeping the previous one",
        Duration::from_secs(10),
    )
    .await;
    // Still on A: B got nothing from the broken file.
    let a_before = fed::subgraph_requests(&env.client, &env.a).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(fed::subgraph_requests(&env.client, &env.a).await > a_before);
    assert_eq!(fed::subgraph_requests(&env.client, &env.b).await, 0);
    let log = env.gateway.log();
    assert!(
        log.contains("supergraph is not a valid GraphQL schema"),
        "the parse error is not logged:\n{log}"
    );
    // Still ready (A serves), and readiness and metrics say the reload failed.
    let ready = get(&env.client, &env.gateway, "/health/ready").await;
    assert_eq!(ready.status, 200);
    let detail: serde_json::Value = serde_json::from_slice(&ready.body).expect("JSON");
    assert!(detail["failed_reloads"].as_u64() >= Some(1), "{detail}");
    let why = detail["reload_error"].as_str().unwrap_or_default();
    assert!(why.contains("not a valid GraphQL schema"), "{detail}");
    let metrics = get(&env.client, &env.gateway, "/metrics").await;
    let metrics = String::from_utf8_lossy(&metrics.body);
    let failures = metrics
        .lines()
        .find_map(|l| l.strip_prefix("graphfleet_supergraph_reloads_total{result=\"failure\"} "))
        .and_then(|v| v.trim().parse::<u64>().ok());
    assert!(failures >= Some(1), "{metrics}");
    let fixed = format!("# fixed\n{}", Set::Fed.supergraph_at(&env.b.base_url()));
    write_atomic(&file, &fixed);
    env.assert_served_by(&fixed, &env.b, &env.a).await;
    let ready = get(&env.client, &env.gateway, "/health/ready").await;
    let detail: serde_json::Value = serde_json::from_slice(&ready.body).expect("JSON");
    assert_eq!(detail["reload_error"], serde_json::Value::Null, "{detail}");
    let (total, failures) = load.finish().await;
    assert_no_failures(total, &failures);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_started_before_its_supergraph_becomes_ready_when_it_appears() {
    let subgraphs = fed::subgraphs(&[]).await;
    let dir = test_dir("reload-late-file");
    let file = dir.join("supergraph.graphql");
    let gateway = fed::start_gateway(&dir, &file, &["supergraph.poll_interval=200ms"]).await;
    let client = support::client();
    assert_eq!(get(&client, &gateway, "/health/live").await.status, 200);
    assert_eq!(get(&client, &gateway, "/health/ready").await.status, 503);
    let reply = support::post_graphql(
        &client,
        &gateway.url("/graphql"),
        QUERY,
        serde_json::json!({}),
    )
    .await;
    assert_eq!(reply.status, 503);
    let body: serde_json::Value = serde_json::from_slice(&reply.body).expect("a JSON body");
    assert_eq!(
        body["errors"][0]["message"], "no supergraph loaded yet",
        "{body}"
    );

    // An invalid file is reported and changes nothing.
    write_atomic(&file, "type Query {");
    wait_for_log(
        &gateway,
        "supergraph load failed, waiting for a valid file",
        Duration::from_secs(10),
    )
    .await;
    assert_eq!(get(&client, &gateway, "/health/ready").await.status, 503);

    write_atomic(&file, &Set::Fed.supergraph_at(&subgraphs.base_url()));
    let deadline = Instant::now() + Duration::from_secs(10);
    while get(&client, &gateway, "/health/ready").await.status != 200 {
        assert!(
            Instant::now() < deadline,
            "not ready within 10 s:\n{}",
            gateway.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (status, body) = fed::try_post(&client, &gateway.url("/graphql"), QUERY)
        .await
        .expect("query after the file appeared");
    let text = String::from_utf8_lossy(&body);
    assert_eq!(status, 200, "{text}");
    assert!(
        text.starts_with("{\"data\":{\"topProducts\":[{\"upc\":"),
        "{text}"
    );
    assert!(gateway.log().contains("supergraph loaded hash="));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn polling_finds_the_file_when_its_directory_cannot_be_watched() {
    let subgraphs = fed::subgraphs(&[]).await;
    let dir = test_dir("reload-poll-only");
    // The directory does not exist yet, so there is nothing to watch: only polling can see it.
    let file = dir.join("later").join("supergraph.graphql");
    let gateway = fed::start_gateway(&dir, &file, &["supergraph.poll_interval=200ms"]).await;
    assert!(gateway.log().contains("polling every"), "{}", gateway.log());
    let client = support::client();
    assert_eq!(get(&client, &gateway, "/health/ready").await.status, 503);
    std::fs::create_dir(dir.join("later")).expect("create the directory");
    let text = Set::Fed.supergraph_at(&subgraphs.base_url());
    write_atomic(&file, &text);
    wait_for_log(
        &gateway,
        &format!("supergraph loaded hash={}", short_hash(&text)),
        Duration::from_secs(10),
    )
    .await;
    assert_eq!(get(&client, &gateway, "/health/ready").await.status, 200);
    let (status, _) = fed::try_post(&client, &gateway.url("/graphql"), QUERY)
        .await
        .expect("query after the file appeared");
    assert_eq!(status, 200);
}

async fn get(client: &support::HttpClient, gateway: &GatewayProcess, path: &str) -> support::Reply {
    support::request(client, "GET", &gateway.url(path), &[], Vec::new()).await
}

#[tokio::test]
async fn without_watch_a_missing_supergraph_fails_at_start() {
    let dir = test_dir("reload-no-watch");
    let file = dir.join("missing.graphql");
    let output = tokio::time::timeout(
        Duration::from_secs(20),
        tokio::process::Command::new(env!("CARGO_BIN_EXE_graphfleet-gateway"))
            .args([
                "--listen",
                "127.0.0.1:0",
                "--supergraph",
                file.to_str().expect("UTF-8 path"),
                "--set",
                "supergraph.watch=false",
            ])
            .env_remove("GRAPHFLEET_CONFIG")
            .output(),
    )
    .await
    .expect("exits within 20 s")
    .expect("run graphfleet-gateway");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("missing.graphql"), "{stderr}");
    assert!(!stderr.contains("listening on"), "{stderr}");
}
