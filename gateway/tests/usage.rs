//! Recorded operations and readiness on the admin listener: the real binary in front of
//! the real `fed` subgraphs, asked over HTTP the way the operator asks each pod.

mod support;

use graphfleet_admin_api::{Readiness, UsageReport};
use graphfleet_bench_model::Set;
use sha2::{Digest, Sha256};
use std::net::SocketAddr;
use support::fed;
use support::process::{GatewayProcess, test_dir};

const TOP: &str = "query Top { topProducts { upc name } }";
const ME: &str = "query Me { me { id username } }";

/// The admin address the gateway prints just after its GraphQL one.
async fn admin_addr(gateway: &GatewayProcess) -> SocketAddr {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let log = gateway.log();
        let line = log
            .lines()
            .find_map(|l| l.strip_prefix("graphfleet-gateway admin listener on "));
        if let Some(addr) = line {
            return addr.trim().parse().expect("a socket address");
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no admin listener in the log:\n{log}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

async fn get(url: &str) -> support::Reply {
    support::request(&support::client(), "GET", url, &[], Vec::new()).await
}

async fn post(gateway: &GatewayProcess, query: &str, headers: &[(&str, &str)]) -> u16 {
    let body = serde_json::to_vec(&serde_json::json!({ "query": query })).expect("JSON");
    let mut all = vec![("content-type", "application/json")];
    all.extend_from_slice(headers);
    let reply = support::request(
        &support::client(),
        "POST",
        &gateway.url("/graphql"),
        &all,
        body,
    )
    .await;
    reply.status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn served_operations_and_the_served_supergraph_are_on_the_admin_listener_only() {
    let subgraphs = fed::subgraphs(&[]).await;
    let dir = test_dir("usage");
    let file = dir.join("supergraph.graphql");
    let sdl = Set::Fed.supergraph_at(&subgraphs.base_url());
    std::fs::write(&file, &sdl).expect("write the supergraph");
    let gateway = fed::start_gateway(
        &dir,
        &file,
        &[
            "admin.listen=127.0.0.1:0",
            "usage.max_clients_per_operation=2",
        ],
    )
    .await;
    let admin = admin_addr(&gateway).await;

    let web = [
        ("graphql-client-name", "web"),
        ("graphql-client-version", "1.2"),
    ];
    let ios = [("apollographql-client-name", "ios")];
    for _ in 0..3 {
        assert_eq!(post(&gateway, TOP, &web).await, 200);
    }
    assert_eq!(post(&gateway, TOP, &ios).await, 200);
    assert_eq!(post(&gateway, ME, &[]).await, 200);
    // Not valid against the supergraph: never served, so never recorded.
    post(&gateway, "{ nope }", &web).await;

    let reply = get(&format!("http://{admin}/usage/operations")).await;
    assert_eq!(reply.status, 200);
    let report: UsageReport = serde_json::from_slice(&reply.body).expect("a usage report");
    let hash = hex(&Sha256::digest(sdl.as_bytes()));
    assert_eq!(report.supergraph_sha256.as_deref(), Some(hash.as_str()));
    assert_eq!((report.requests, report.skipped), (5, 0));
    let served: Vec<_> = report
        .operations
        .iter()
        .map(|op| (op.name.as_deref(), op.document.as_str(), op.count))
        .collect();
    assert_eq!(served, [(Some("Top"), TOP, 4), (Some("Me"), ME, 1)]);
    let clients: Vec<_> = report.operations[0]
        .clients
        .iter()
        .map(|c| (c.name.as_str(), c.version.as_deref(), c.count))
        .collect();
    assert_eq!(clients, [("ios", None, 1), ("web", Some("1.2"), 3)]);
    assert!(
        report
            .operations
            .iter()
            .all(|op| op.last_seen <= report.now)
    );

    let reply = get(&format!("http://{admin}/health/ready")).await;
    assert_eq!(reply.status, 200);
    let ready: Readiness = serde_json::from_slice(&reply.body).expect("a readiness body");
    assert!(ready.serves(&hash[..16]), "{ready:?}");
    assert_eq!(ready.supergraph, hash[..12]);

    // The GraphQL listener answers none of it: health, metrics and operations are the
    // admin listener's.
    for path in ["/health/ready", "/health/live", "/metrics"] {
        assert_eq!(get(&gateway.url(path)).await.status, 404, "{path}");
    }
    let metrics = get(&format!("http://{admin}/metrics")).await;
    assert_eq!(metrics.status, 200);
    assert_eq!(get(&gateway.url("/usage/operations")).await.status, 404);
    let refused = support::request(
        &support::client(),
        "POST",
        &format!("http://{admin}/usage/operations"),
        &[],
        Vec::new(),
    )
    .await;
    assert_eq!(refused.status, 405);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_recording_off_nothing_is_recorded() {
    let subgraphs = fed::subgraphs(&[]).await;
    let dir = test_dir("usage-off");
    let file = dir.join("supergraph.graphql");
    std::fs::write(&file, Set::Fed.supergraph_at(&subgraphs.base_url()))
        .expect("write the supergraph");
    let gateway = fed::start_gateway(
        &dir,
        &file,
        &["admin.listen=127.0.0.1:0", "usage.record=false"],
    )
    .await;
    assert_eq!(post(&gateway, TOP, &[]).await, 200);
    let reply = get(&format!(
        "http://{}/usage/operations",
        admin_addr(&gateway).await
    ))
    .await;
    assert_eq!(reply.status, 404);
    assert_eq!(
        String::from_utf8_lossy(&reply.body),
        "usage.record is off\n"
    );
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A counter's value in the Prometheus text (0 when absent).
fn counter(metrics: &str, name: &str) -> f64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_up_file_plans_its_operations_before_the_listener_opens() {
    let subgraphs = fed::subgraphs(&[]).await;
    let dir = test_dir("usage-warm-up");
    let file = dir.join("supergraph.graphql");
    std::fs::write(&file, Set::Fed.supergraph_at(&subgraphs.base_url()))
        .expect("write the supergraph");
    let op = |name: &str, document: &str| graphfleet_admin_api::OperationUsage {
        id: name.to_owned(),
        name: Some(name.to_owned()),
        document: document.to_owned(),
        count: 1,
        first_seen: 0,
        last_seen: 0,
        clients: Vec::new(),
    };
    let report = UsageReport {
        operations: vec![
            op("Top", TOP),
            op("Me", ME),
            // No longer valid: skipped, not fatal.
            op("Gone", "query Gone { nope }"),
        ],
        ..UsageReport::default()
    };
    let warm = dir.join("operations.json");
    std::fs::write(&warm, serde_json::to_vec(&report).expect("JSON")).expect("write the report");
    let setting = format!("usage.warm_up_file={}", warm.display());
    let gateway = fed::start_gateway(&dir, &file, &[setting.as_str()]).await;
    assert!(
        gateway
            .log()
            .contains("graphfleet-gateway warmed 4 plans for 3 operations"),
        "{}",
        gateway.log()
    );
    // The first requests, with and without an operation name, find their plans.
    assert_eq!(post(&gateway, TOP, &[]).await, 200);
    let body = serde_json::to_vec(&serde_json::json!({ "query": ME, "operationName": "Me" }))
        .expect("JSON");
    let named = support::request(
        &support::client(),
        "POST",
        &gateway.url("/graphql"),
        &[("content-type", "application/json")],
        body,
    )
    .await;
    assert_eq!(named.status, 200);
    let metrics = get(&gateway.url("/metrics")).await;
    let text = String::from_utf8_lossy(&metrics.body);
    // Every miss is the warm-up's own: 4 planned, `Gone` refused twice.
    assert_eq!(
        counter(&text, "graphfleet_plan_cache_misses_total"),
        6.0,
        "{text}"
    );
    assert_eq!(
        counter(&text, "graphfleet_plan_cache_hits_total"),
        2.0,
        "{text}"
    );
}

/// What a pod sees when the operator has not written the fleet's usage yet (its optional
/// ConfigMap volume is an empty directory), or wrote something unusable: the gateway
/// says so and serves, cold, never fails to start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_empty_or_unreadable_warm_up_file_is_logged_and_the_gateway_serves() {
    let subgraphs = fed::subgraphs(&[]).await;
    let dir = test_dir("usage-warm-up-missing");
    let file = dir.join("supergraph.graphql");
    std::fs::write(&file, Set::Fed.supergraph_at(&subgraphs.base_url()))
        .expect("write the supergraph");
    let empty = dir.join("empty.json");
    std::fs::write(&empty, "").expect("write an empty file");
    let garbled = dir.join("garbled.json");
    std::fs::write(&garbled, "{\"operations\": [").expect("write a cut report");
    let cases = [
        ("missing", dir.join("no-such-dir/operations.json")),
        ("empty", empty),
        ("garbled", garbled),
        ("a directory", dir.clone()),
    ];
    for (what, warm) in cases {
        let setting = format!("usage.warm_up_file={}", warm.display());
        let gateway = fed::start_gateway(&dir, &file, &[setting.as_str()]).await;
        let log = gateway.log();
        assert!(
            log.contains("usage.warm_up_file not read; no warm-up"),
            "{what}: {log}"
        );
        assert!(!log.contains("graphfleet-gateway warmed"), "{what}: {log}");
        assert_eq!(post(&gateway, TOP, &[]).await, 200, "{what}");
    }
}
