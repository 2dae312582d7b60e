//! The fed fleet on the real nodes, as the real-node tests drive it: the fed subgraphs by
//! introspection, GraphQL requests from inside the cluster's network namespace, LoadTests
//! against a GraphGateway and their verdicts, and what each gateway pod serves.

use std::time::{Duration, Instant};

use graphfleet_testkit::{RealCluster, pool_placement};
use serde_json::{Value, json};

use crate::real::{apply, json_of, kubectl, loadtest_finished};
use crate::{eventually, manifests_dir, read, run_ok};

/// The monolith's answer to the fed TestQuery is this many bytes (bench/README.md).
pub const TEST_QUERY_BYTES: usize = 87_599;
/// How long a fleet may take to become Ready, or a LoadTest to start.
pub const READY: Duration = Duration::from_secs(180);

/// The fed subgraphs as users apply them, minus the ConfigMap schema source, so the
/// operator (another namespace) introspects `_service { sdl }` through cluster DNS.
pub fn fed_subgraphs_by_introspection() -> String {
    let manifest = read(&manifests_dir().join("fed-subgraphs.yaml"));
    let mut out = String::new();
    let mut skip = 0;
    for line in manifest.lines() {
        if line == "  configMapRef:" {
            skip = 2;
            continue;
        }
        if skip > 0 {
            skip -= 1;
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    assert!(!out.contains("configMapRef"), "every configMapRef removed");
    out
}

/// The fed subgraphs applied in `ns` (schemas by introspection) and their Deployments
/// rolled out.
pub fn fed_subgraphs_running(cluster: &RealCluster, ns: &str) {
    apply(cluster, ns, &fed_subgraphs_by_introspection());
    run_ok(
        kubectl(cluster, ns).args([
            "rollout",
            "status",
            "deployment/accounts",
            "deployment/inventory",
            "deployment/products",
            "deployment/reviews",
            "--timeout=180s",
        ]),
        None,
    );
}

/// The fed TestQuery (the `query` scenario's document).
pub fn test_query() -> String {
    read(&graphfleet_testkit::workspace_root().join("bench/sets/fed/queries/query.graphql"))
}

/// The SDL of a fed subgraph as the repository holds it (`bench/sets/fed/<name>.graphql`).
pub fn fed_sdl(name: &str) -> String {
    read(
        &graphfleet_testkit::workspace_root()
            .join("bench/sets/fed")
            .join(format!("{name}.graphql")),
    )
}

/// POST a GraphQL query from inside the cluster's network namespace.
pub fn post(cluster: &RealCluster, url: &str, query: &str) -> Result<String, String> {
    let body = json!({ "query": query }).to_string();
    let out = cluster
        .in_netns("curl")
        .args(["-sS", "--fail-with-body", "--max-time", "10", url])
        .args([
            "-H",
            "content-type: application/json",
            "--data-binary",
            &body,
        ])
        .output()
        .expect("run curl in the cluster's network namespace");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() {
        Ok(text)
    } else {
        Err(format!("{text}{}", String::from_utf8_lossy(&out.stderr)))
    }
}

/// The GraphQL URL of Service `service` by its ClusterIP.
pub fn service_url(cluster: &RealCluster, ns: &str, service: &str) -> String {
    let svc = json_of(cluster, ns, &["service", service]);
    let ip = svc["spec"]["clusterIP"]
        .as_str()
        .expect("ClusterIP")
        .to_owned();
    format!("http://{ip}:80/graphql")
}

/// A LoadTest `name` of the query scenario against GraphGateway `gateway`.
pub fn loadtest(
    cluster: &RealCluster,
    ns: &str,
    gateway: &str,
    name: &str,
    rate: u32,
    seconds: u32,
) {
    apply(
        cluster,
        ns,
        &format!(
            "apiVersion: graphfleet.dev/v1alpha1\nkind: LoadTest\nmetadata: {{name: {name}}}\n\
             spec: {{target: {{gatewayRef: {{name: {gateway}}}}}, scenario: query, rate: {rate}, \
             duration: {seconds}s, vus: 20, maxVus: 200, parallelism: 1, placement: {}}}\n",
            pool_placement("client")
        ),
    );
}

/// The phase of LoadTest `name` (empty before it has one) and the whole object.
pub fn loadtest_phase(cluster: &RealCluster, ns: &str, name: &str) -> (String, Value) {
    let lt = json_of(cluster, ns, &["loadtest", name]);
    let phase = lt["status"]["phase"].as_str().unwrap_or("").to_owned();
    (phase, lt)
}

/// Waits until LoadTest `name` is Running.
pub async fn loadtest_running(cluster: &RealCluster, ns: &str, name: &str) {
    eventually(&format!("LoadTest {name} Running"), READY, || async {
        match loadtest_phase(cluster, ns, name) {
            (phase, _) if phase == "Running" => Ok(()),
            (_, lt) => Err(lt["status"].to_string()),
        }
    })
    .await;
}

/// Waits (at most 240 s) for LoadTest `name` to finish, prints its results as `what`, and
/// returns its status.
pub async fn finished(
    cluster: &RealCluster,
    ns: &str,
    name: &str,
    what: &str,
    started: Instant,
) -> Value {
    let lt = loadtest_finished(cluster, ns, name, Duration::from_secs(240)).await;
    let status = lt["status"].clone();
    println!(
        "MEASURED {what} done in {:?}: {}",
        started.elapsed(),
        status["results"]
    );
    status
}

/// [`finished`], and checks that the LoadTest Succeeded without a failed request.
pub async fn succeeded_without_failures(
    cluster: &RealCluster,
    ns: &str,
    name: &str,
    what: &str,
    started: Instant,
) -> Value {
    let status = finished(cluster, ns, name, what, started).await;
    assert_eq!(status["phase"], "Succeeded", "{status}");
    assert_eq!(status["results"]["failures"], 0, "{what}: {status}");
    status
}

/// `Ok` once every pod of gateway `instance` (ready or not) answers the description of
/// type `Review` with `marker` in it.
pub fn every_pod_serves(
    cluster: &RealCluster,
    ns: &str,
    instance: &str,
    marker: &str,
) -> Result<(), String> {
    let selector = format!("app.kubernetes.io/instance={instance}");
    let pods = json_of(cluster, ns, &["pods", "-l", &selector]);
    let items = pods["items"].as_array().expect("items");
    if items.is_empty() {
        return Err("no gateway pods".into());
    }
    for pod in items {
        let ip = pod["status"]["podIP"].as_str().ok_or("pod without IP")?;
        let answer = post(
            cluster,
            &format!("http://{ip}:4000/graphql"),
            r#"{ __type(name: "Review") { description } }"#,
        )?;
        if !answer.contains(marker) {
            return Err(format!("pod {ip} answers {answer}"));
        }
    }
    Ok(())
}

/// The condition `kind` of a status, if set.
pub fn condition<'a>(status: &'a Value, kind: &str) -> Option<&'a Value> {
    status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == kind)
}

/// Waits until GraphGateway `name` is Ready counted from its pods' own reports; how long
/// that took from `start`, and the condition's message.
pub async fn gateway_ready_from_pods(
    cluster: &RealCluster,
    ns: &str,
    name: &str,
    start: Instant,
) -> (Duration, String) {
    let message = eventually(&format!("GraphGateway {name} Ready"), READY, || async {
        let gw = json_of(cluster, ns, &["graphgateway", name]);
        match condition(&gw["status"], "Ready").filter(|c| c["status"] == "True") {
            Some(ready) => Ok(ready["message"].as_str().unwrap_or_default().to_owned()),
            None => Err(gw["status"].to_string()),
        }
    })
    .await;
    // Counted from what each pod says on its admin port, across the pod network.
    assert!(
        message.contains("pods serve supergraph") && !message.contains("by their template"),
        "{message}"
    );
    (start.elapsed(), message)
}
