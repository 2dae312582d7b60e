//! The `graphfleet-operator` binary on the test cluster: two replicas elect one leader
//! through a Lease, serve /metrics /healthz /readyz, log JSON, and on SIGTERM the leader
//! stops gracefully and hands the Lease over.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::{cluster_client, wait_for};
use graphfleet_testkit::TestNamespace;
use graphfleet_testkit::otlp::OtlpCollector;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;

struct Replica {
    child: Child,
    ops: String,
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the binary and reads its JSON log until it reports the ops address.
fn start(namespace: &str, identity: &str) -> Replica {
    start_with(namespace, identity, &[])
}

fn start_with(namespace: &str, identity: &str, extra: &[&str]) -> Replica {
    let kubeconfig = graphfleet_testkit::cluster().kubeconfig_path().to_owned();
    let mut child = Command::new(env!("CARGO_BIN_EXE_graphfleet-operator"))
        .args([
            "--namespace",
            namespace,
            "--lease-namespace",
            namespace,
            "--identity",
            identity,
        ])
        .args(["--ops-addr", "127.0.0.1:0", "--lease-duration-seconds", "6"])
        // Two replicas run at once: each its own web view port.
        .args(["--web-addr", "127.0.0.1:0"])
        .args(extra)
        .env("KUBECONFIG", kubeconfig)
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn graphfleet-operator");
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let log: serde_json::Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("log line is not JSON ({e}): {line}"));
            if let Some(addr) = log.get("ops_addr").and_then(|a| a.as_str()) {
                let _ = tx.send(addr.to_owned());
            }
        }
    });
    let ops = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("ops endpoint address logged");
    Replica { child, ops }
}

async fn get(addr: &str, path: &str) -> Option<(u16, String)> {
    use http_body_util::{BodyExt, Empty};
    let stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .ok()?;
    tokio::spawn(conn);
    let req = hyper::Request::get(path)
        .header("host", "localhost")
        .body(Empty::<bytes::Bytes>::new())
        .ok()?;
    let res = sender.send_request(req).await.ok()?;
    let status = res.status().as_u16();
    let body = res.into_body().collect().await.ok()?.to_bytes();
    Some((status, String::from_utf8_lossy(&body).into_owned()))
}

async fn is_leader(replica: &Replica) -> Option<bool> {
    let (_, body) = get(&replica.ops, "/metrics").await?;
    Some(body.contains("graphfleet_operator_leader 1"))
}

async fn holder(client: &kube::Client, ns: &str) -> Option<String> {
    let lease = Api::<Lease>::namespaced(client.clone(), ns)
        .get_opt("graphfleet-operator")
        .await
        .ok()??;
    lease.spec?.holder_identity
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_leader_and_graceful_handover_on_sigterm() {
    let client = cluster_client().await;
    let ns = TestNamespace::create(&client, "op-binary").await;
    let first = start(ns.name(), "first");
    wait_for("first is leader", Duration::from_secs(30), || async {
        (holder(&client, ns.name()).await.as_deref() == Some("first")).then_some(())
    })
    .await;
    let second = start(ns.name(), "second");
    assert_eq!(get(&second.ops, "/healthz").await.map(|r| r.0), Some(200));
    wait_for("second ready", Duration::from_secs(30), || async {
        (get(&second.ops, "/readyz").await?.0 == 200).then_some(())
    })
    .await;
    assert_eq!(is_leader(&first).await, Some(true));
    // A standby keeps waiting while the leader renews.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(is_leader(&second).await, Some(false));
    assert_eq!(holder(&client, ns.name()).await.as_deref(), Some("first"));

    // SIGTERM: the leader stops cleanly (exit 0) and releases the Lease at once.
    let mut first = first;
    let pid = first.child.id().to_string();
    let status = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("run kill");
    assert!(status.success());
    let exit = tokio::task::spawn_blocking(move || {
        let exit = first.child.wait();
        (exit, first)
    })
    .await
    .expect("wait task");
    assert!(exit.0.expect("wait for first").success(), "graceful exit");
    // Released, so the standby takes over in about one retry period (2 s), well before
    // the 6 s lease would have expired.
    wait_for("second takes over", Duration::from_secs(5), || async {
        (holder(&client, ns.name()).await.as_deref() == Some("second")).then_some(())
    })
    .await;
    wait_for(
        "second reports leadership",
        Duration::from_secs(5),
        || async { is_leader(&second).await?.then_some(()) },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_traces_are_exported_over_otlp() {
    let client = cluster_client().await;
    let ns = TestNamespace::create(&client, "op-otlp").await;
    let collector = OtlpCollector::start().await;
    let mut replica = start_with(
        ns.name(),
        "traced",
        &["--otlp-endpoint", &collector.endpoint],
    );
    let subgraphs: Api<graphfleet_api::Subgraph> = Api::namespaced(client.clone(), ns.name());
    let sg = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "accounts" },
        "spec": { "url": "http://accounts:4001/graphql", "sdl": common::fixture_sdl("accounts") },
    }))
    .expect("valid Subgraph");
    subgraphs
        .create(&Default::default(), &sg)
        .await
        .expect("create subgraph");
    wait_for("subgraph reconciled", Duration::from_secs(30), || async {
        subgraphs.get("accounts").await.ok()?.status?.schema_hash
    })
    .await;
    // SIGTERM flushes the batch exporter on the way out.
    let pid = replica.child.id().to_string();
    Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("run kill");
    let status = tokio::task::spawn_blocking(move || {
        let status = replica.child.wait();
        (status, replica)
    })
    .await
    .expect("wait task");
    assert!(status.0.expect("wait").success());
    let spans = wait_for(
        "reconcile span exported",
        Duration::from_secs(10),
        || async {
            let spans: Vec<String> = collector.spans().into_iter().map(|s| s.name).collect();
            spans
                .iter()
                .any(|s| s == "reconcile_subgraph")
                .then_some(spans)
        },
    )
    .await;
    assert!(!spans.is_empty());
}
