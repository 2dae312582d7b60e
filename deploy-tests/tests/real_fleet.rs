//! The fleet on real nodes: `helm install` starts the operator as a pod, the fed subgraphs
//! run as pods on subgraph-0 (their schemas introspected over cluster DNS), the
//! GraphGateway's pods run on router-0 and answer the benchmark TestQuery through their
//! Service, a LoadTest's k6 pods run on client-0 and leave real numbers in its status (and
//! so do a Gatling LoadTest's two segments, merged and judged as k6's, and a subscriptions LoadTest's fan-out), a supergraph change and a rolling restart under in-cluster load fail no request, and a
//! gateway pod cannot use more CPU than its limit. The operator's web view shows that fleet
//! and the LoadTest's report in headless Chromium (real_fleet/web_view.rs).
//!
//! One test walks the steps in order (each builds on the last; a failure names its step),
//! on the real-node cluster of this run (`graphfleet_testkit::real_cluster()`).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use graphfleet_deploy_tests::fleet::{
    READY, TEST_QUERY_BYTES, every_pod_serves, fed_subgraphs_running, gateway_ready_from_pods,
    loadtest, loadtest_running, post, service_url, succeeded_without_failures, test_query,
};
use graphfleet_deploy_tests::real::{
    apply, install_operator, json_of, kubectl, loadtest_finished, passed_condition, report_md,
    time_of, uninstall_operator,
};
use graphfleet_deploy_tests::{POOL_LABEL, eventually, manifests_dir, read, run_ok};
use graphfleet_testkit::{RealCluster, TestNamespace, pool_placement, real_cluster};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};
use serde_json::{Value, json};

#[path = "real_fleet/web_view.rs"]
mod web_view;

/// Every pod of the namespace runs on the node of the pool it selects.
async fn pods_on_their_pools(client: &kube::Client, ns: &str) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let list = pods.list(&ListParams::default()).await.expect("list pods");
    assert!(!list.items.is_empty());
    for pod in list.items {
        let name = pod.metadata.name.clone().unwrap_or_default();
        let spec = pod.spec.expect("pod spec");
        let pool = spec
            .node_selector
            .as_ref()
            .and_then(|s| s.get(POOL_LABEL))
            .unwrap_or_else(|| panic!("pod {name} selects no pool"));
        if let Some(node) = spec.node_name {
            assert_eq!(node, format!("{pool}-0"), "pod {name} of pool {pool}");
        }
    }
}

async fn gateway_ready(cluster: &RealCluster, ns: &str) -> Duration {
    let start = Instant::now();
    // Half a CPU: a rolling update's surge pod must fit router-0 (2 CPUs) beside the
    // old one even when another test's gateway is still being deleted there.
    let manifest = read(&manifests_dir().join("graphgateway.yaml"));
    let half = manifest.replace("cpu: \"1\"", "cpu: 500m");
    assert_eq!(half.matches("cpu: 500m").count(), 2, "requests and limits");
    apply(cluster, ns, &half);
    gateway_ready_from_pods(cluster, ns, "fed", start).await.0
}

/// One LoadTest over two targets in turn, the GraphGateway (by reference: its Service's DNS
/// name) and the same gateway by its Service's ClusterIP: each gets the whole load, one after
/// the other (never overlapping), with results and a verdict per target and a comparison
/// table in the report.
async fn two_targets_side_by_side(cluster: &RealCluster, ns: &str, url: &str) {
    apply(
        cluster,
        ns,
        &json!({
            "apiVersion": "graphfleet.dev/v1alpha1", "kind": "LoadTest",
            "metadata": { "name": "smoke" },
            "spec": {
                "targets": [
                    { "name": "graphgateway", "gatewayRef": { "name": "fed" } },
                    { "name": "cluster-ip", "url": url },
                ],
                "scenario": "query", "rate": 20, "duration": "10s", "vus": 20, "maxVus": 200,
                "thresholds": { "maxErrorPercent": 0.1 },
                "placement": pool_placement("client"),
            },
        })
        .to_string(),
    );
    let lt = loadtest_finished(cluster, ns, "smoke", Duration::from_secs(240)).await;
    let status = &lt["status"];
    assert_eq!(status["phase"], "Succeeded", "{status}");
    let targets = status["targets"].as_array().expect("status.targets");
    let names: Vec<&str> = targets.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["graphgateway", "cluster-ip"]);
    for t in targets {
        let results = &t["results"];
        println!(
            "MEASURED LoadTest smoke target {}: {} requests, {} failures, {} req/s, p50 {} ms, p99 {} ms, max {} ms ({})",
            t["name"],
            results["requests"],
            results["failures"],
            results["achievedRate"],
            results["latencyMs"]["med"],
            results["latencyMs"]["p99"],
            results["latencyMs"]["max"],
            results["latencyAggregation"]
        );
        assert_eq!(t["phase"], "Succeeded", "{t}");
        assert_eq!(t["passed"], true, "{t}");
        let requests = results["requests"].as_u64().expect("requests");
        assert!(
            (180..=220).contains(&requests),
            "20 req/s for 10 s sent {requests}: {t}"
        );
        assert_eq!(results["failures"], 0, "{t}");
        let p99 = results["latencyMs"]["p99"].as_f64().expect("p99");
        assert!(p99 > 0.0 && p99 < 10_000.0, "p99 {p99} ms");
        let rate = results["achievedRate"].as_f64().expect("achievedRate");
        assert!((15.0..=25.0).contains(&rate), "achieved {rate} req/s");
    }
    // The second target started only after the first had finished.
    let first_done = time_of(&targets[0]["completionTime"]);
    let second_start = time_of(&targets[1]["startTime"]);
    assert!(
        second_start >= first_done,
        "targets overlapped: {first_done} > {second_start}"
    );
    // Efficiency: the GraphGateway target's pods read their own CPU before and after the
    // load; the URL target (the same pods by ClusterIP) is not one the operator can name.
    let cpu = &targets[0]["gatewayCpu"];
    println!("MEASURED LoadTest smoke target graphgateway CPU: {cpu}");
    assert_eq!(cpu["pods"], 1, "{}", targets[0]);
    let per_core = cpu["requestsPerCoreSecond"]
        .as_f64()
        .expect("requestsPerCoreSecond");
    let core_seconds = cpu["coreSeconds"].as_f64().expect("coreSeconds");
    // 200 requests over 10 s on a debug build: well above 0, well below what a 1-CPU limit
    // over the run's seconds allows.
    assert!(core_seconds > 0.0 && core_seconds < 30.0, "{cpu}");
    assert!(per_core > 1.0, "{cpu}");
    assert!(targets[1].get("gatewayCpu").is_none(), "{}", targets[1]);
    let passed = passed_condition(status);
    assert_eq!(passed["status"], "True", "{passed}");
    let report = report_md(cluster, ns, "smoke-report");
    println!("{report}");
    for part in [
        "## Comparison",
        "| Target ",
        "Req/CPU s",
        "## Target `graphgateway`",
        "## Target `cluster-ip`",
        "### Latency distribution",
    ] {
        assert!(report.contains(part), "{part:?} missing from\n{report}");
    }
    let rows = report
        .lines()
        .filter(|l| l.starts_with("| graphgateway ") || l.starts_with("| cluster-ip "))
        .count();
    assert_eq!(rows, 2, "a comparison row per target:\n{report}");
}

/// The pod's cgroup directory in `controller` (cgroup v1, cgroupfs driver).
fn pod_cgroup(cluster: &RealCluster, controller: &str, uid: &str) -> PathBuf {
    let ids = read(&cluster.state().join("ids.env"));
    let id = ids
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix("ID="))
        .expect("ids.env has ID");
    let root = PathBuf::from(format!(
        "/sys/fs/cgroup/{controller}/gf-{id}-router/kubepods"
    ));
    let want = format!("pod{uid}");
    [
        root.clone(),
        root.join("burstable"),
        root.join("besteffort"),
    ]
    .into_iter()
    .map(|dir| dir.join(&want))
    .find(|p| p.is_dir())
    .unwrap_or_else(|| panic!("no cgroup {want} under {}", root.display()))
}

fn cpu_usage_ns(dir: &std::path::Path) -> u64 {
    read(&dir.join("cpuacct.usage"))
        .trim()
        .parse()
        .expect("cpuacct.usage is a number")
}

/// A gateway limited to 300m, loaded far beyond what 300m can serve: its pod's measured
/// CPU stays at the limit (CFS quota), not above.
async fn cpu_limit_holds(cluster: &RealCluster, ns: &str) {
    run_ok(
        kubectl(cluster, ns).args([
            "patch",
            "graphgateway",
            "fed",
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"resources":{"requests":{"cpu":"300m","memory":"256Mi"},"limits":{"cpu":"300m","memory":"512Mi"}}}}"#,
        ]),
        None,
    );
    run_ok(
        kubectl(cluster, ns).args(["rollout", "status", "deployment/fed", "--timeout=180s"]),
        None,
    );
    // `rollout status` returns once the new pod is available; the old one's deletion
    // may follow a moment later.
    let pod = eventually("one gateway pod, limited to 300m", READY, || async {
        let pods = json_of(
            cluster,
            ns,
            &["pods", "-l", "app.kubernetes.io/instance=fed"],
        );
        let live: Vec<Value> = pods["items"]
            .as_array()
            .expect("items")
            .iter()
            .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
            .cloned()
            .collect();
        match live.as_slice() {
            [one] if one["spec"]["containers"][0]["resources"]["limits"]["cpu"] == "300m" => {
                Ok(one.clone())
            }
            _ => Err(format!("{} live pods", live.len())),
        }
    })
    .await;
    let uid = pod["metadata"]["uid"].as_str().expect("uid");
    let cpu = pod_cgroup(cluster, "cpu", uid);
    assert_eq!(read(&cpu.join("cpu.cfs_quota_us")).trim(), "30000");
    assert_eq!(read(&cpu.join("cpu.cfs_period_us")).trim(), "100000");
    let acct = pod_cgroup(cluster, "cpuacct", uid);

    loadtest(cluster, ns, "fed", "overload", 400, 25);
    loadtest_running(cluster, ns, "overload").await;
    tokio::time::sleep(Duration::from_secs(8)).await;
    let (t0, u0) = (Instant::now(), cpu_usage_ns(&acct));
    tokio::time::sleep(Duration::from_secs(8)).await;
    let cores = (cpu_usage_ns(&acct) - u0) as f64 / t0.elapsed().as_nanos() as f64;
    println!("gateway pod limited to 300m used {cores:.3} cores under overload");
    assert!(cores <= 0.33, "CPU limit exceeded: {cores:.3} cores > 0.3");
    assert!(
        cores >= 0.2,
        "the overload did not saturate the limit ({cores:.3} cores): the check proves nothing"
    );
    loadtest_finished(cluster, ns, "overload", Duration::from_secs(180)).await;
}

/// `executor: gatling`: two Gatling segments (a JVM each) load the gateway through its
/// Service; their summaries merge bucket by bucket, the thresholds are judged on the whole
/// test and the report ConfigMap is written, as for k6.
async fn gatling_smoke(cluster: &RealCluster, ns: &str) {
    let started = Instant::now();
    apply(
        cluster,
        ns,
        &format!(
            "apiVersion: graphfleet.dev/v1alpha1\nkind: LoadTest\nmetadata: {{name: gatling-smoke}}\n\
             spec:\n  target: {{gatewayRef: {{name: fed}}}}\n  scenario: query\n  executor: gatling\n\
             \x20 rate: 20\n  duration: 15s\n  parallelism: 2\n\
             \x20 resources: {{requests: {{cpu: 250m, memory: 256Mi}}, limits: {{cpu: \"1\", memory: 512Mi}}}}\n\
             \x20 thresholds: {{latency: {{p99: 10s}}, maxErrorPercent: 1, minAchievedRatePercent: 90}}\n\
             \x20 placement: {}\n",
            pool_placement("client")
        ),
    );
    let status = &succeeded_without_failures(
        cluster,
        ns,
        "gatling-smoke",
        "Gatling LoadTest (2 segments, 20 req/s, 15 s): every answer had data and no errors",
        started,
    )
    .await;
    let results = &status["results"];
    let requests = results["requests"].as_u64().expect("requests");
    assert_eq!(
        requests, 300,
        "20 req/s for 15 s over two segments: {status}"
    );
    assert_eq!(results["latencyAggregation"], "Histogram", "{status}");
    let rate = results["achievedRate"].as_f64().expect("achievedRate");
    assert!((19.0..=21.0).contains(&rate), "achieved {rate} req/s");
    let passed = passed_condition(status);
    assert_eq!(passed["status"], "True", "{passed}");
    let segments = status["segments"].as_array().expect("segments");
    assert_eq!(segments.len(), 2);
    for s in segments {
        assert_eq!(s["summarySource"], "PodLog", "{s}");
        assert!(s["startedAt"].is_string(), "{s}");
        assert_eq!(s["results"]["requests"], 150, "each segment half: {s}");
    }
    let pods = json_of(
        cluster,
        ns,
        &["pods", "-l", "graphfleet.dev/loadtest=gatling-smoke"],
    );
    for pod in pods["items"].as_array().expect("items") {
        assert_eq!(pod["spec"]["nodeName"], "client-0");
        assert!(
            pod["spec"]["containers"][0]["image"]
                .as_str()
                .is_some_and(|i| i.contains("graphfleet-gatling")),
            "{}",
            pod["spec"]["containers"][0]["image"]
        );
    }
    let report_cm = status["reportConfigMap"].as_str().expect("reportConfigMap");
    let report = report_md(cluster, ns, report_cm);
    // Table cells are padded to their column: the segment rows end with "pod log" then spaces.
    for part in ["scenario `query` (Gatling)", "## Whole test", "| pod log "] {
        assert!(report.contains(part), "{part:?} missing from:\n{report}");
    }
}

/// `scenario: subscriptions`: k6 pods hold 20 graphql-transport-ws subscriptions to the
/// gateway's Service for 15 s; the reviews subgraph pod emits an event every 100 ms, and
/// each is completed across the other three subgraph pods. Every event is checked (data,
/// no errors) and timed from its emission to its receipt.
async fn subscriptions_smoke(cluster: &RealCluster, ns: &str) {
    let started = Instant::now();
    apply(
        cluster,
        ns,
        &format!(
            "apiVersion: graphfleet.dev/v1alpha1\nkind: LoadTest\nmetadata: {{name: fan-out}}\n\
             spec:\n  target: {{gatewayRef: {{name: fed}}}}\n  scenario: subscriptions\n\
             \x20 rate: 20\n  duration: 15s\n\
             \x20 thresholds: {{latency: {{p99: 10s}}, maxErrorPercent: 1}}\n\
             \x20 placement: {}\n",
            pool_placement("client")
        ),
    );
    let status = &succeeded_without_failures(
        cluster,
        ns,
        "fan-out",
        "subscriptions LoadTest (20 subscribers, 15 s): every event had data",
        started,
    )
    .await;
    let results = &status["results"];
    // 20 subscribers × 10 events/s × 15 s, less the time subscribing takes.
    let events = results["requests"].as_u64().expect("events");
    assert!(
        (2_000..=3_100).contains(&events),
        "{events} events: {status}"
    );
    let passed = passed_condition(status);
    assert_eq!(passed["status"], "True", "{passed}");
}

async fn changes_under_load(cluster: &RealCluster, ns: &str) {
    let loaded = Instant::now();
    loadtest(cluster, ns, "fed", "rollout", 20, 60);
    loadtest_running(cluster, ns, "rollout").await;
    tokio::time::sleep(Duration::from_secs(5)).await;

    let sdl = read(&graphfleet_testkit::workspace_root().join("bench/sets/fed/reviews.graphql"));
    let marker = "Reviews, changed under load";
    let changed = sdl.replacen(
        "type Review @key",
        &format!("\"{marker}\"\ntype Review @key"),
        1,
    );
    assert_ne!(changed, sdl, "the reviews SDL declares type Review");
    let patch = json!({ "spec": { "sdl": changed } }).to_string();
    let start = Instant::now();
    run_ok(
        kubectl(cluster, ns).args([
            "patch", "subgraph", "reviews", "--type", "merge", "-p", &patch,
        ]),
        None,
    );
    eventually(
        "every gateway pod serves the new supergraph",
        READY,
        || async { every_pod_serves(cluster, ns, "fed", marker) },
    )
    .await;
    println!(
        "SDL change → served by every gateway pod in {:?}",
        start.elapsed()
    );
    // The operator checked the change against what the pods had served under this load
    // (read from their admin ports): the load's operation at least.
    let gw = json_of(cluster, ns, &["graphgateway", "fed"]);
    let newest = &gw["status"]["revisions"][0];
    assert!(
        newest["operationsChecked"].as_u64().unwrap_or(0) >= 1,
        "the operations check saw the served traffic: {newest}"
    );
    assert!(newest["invalidOperations"].is_null(), "{newest}");
    run_ok(
        kubectl(cluster, ns).args(["rollout", "restart", "deployment/fed"]),
        None,
    );
    run_ok(
        kubectl(cluster, ns).args(["rollout", "status", "deployment/fed", "--timeout=180s"]),
        None,
    );

    let status = &succeeded_without_failures(
        cluster,
        ns,
        "rollout",
        "LoadTest rollout: no request failed during the change and the rollout",
        loaded,
    )
    .await;
    let results = &status["results"];
    let requests = results["requests"].as_u64().expect("requests");
    assert!(
        requests >= 20 * 60 * 9 / 10,
        "k6 sent {requests} of 1,200 requests"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fleet_runs_on_real_nodes() {
    let cluster = real_cluster();
    let client = cluster.client().await;
    let ns = TestNamespace::create(&client, "real-fleet").await;
    let ns = ns.name().to_owned();

    install_operator(cluster, &ns);

    fed_subgraphs_running(cluster, &ns);

    let ready_in = gateway_ready(cluster, &ns).await;
    println!("GraphGateway apply → Ready in {ready_in:?}");
    pods_on_their_pools(&client, &ns).await;

    let url = service_url(cluster, &ns, "fed");
    let answer = eventually("TestQuery through the Service", READY, || async {
        post(cluster, &url, &test_query())
    })
    .await;
    assert_eq!(
        answer.len(),
        TEST_QUERY_BYTES,
        "TestQuery answer: {}",
        &answer[..answer.len().min(300)]
    );
    assert!(!answer.contains("\"errors\""));

    two_targets_side_by_side(cluster, &ns, &url).await;
    web_view::shows_the_fleet(cluster, &ns).await;
    let jobs = json_of(cluster, &ns, &["pods", "-l", "job-name"]);
    for pod in jobs["items"].as_array().expect("items") {
        assert_eq!(
            pod["spec"]["nodeName"], "client-0",
            "k6 pods on the client pool"
        );
    }

    gatling_smoke(cluster, &ns).await;
    subscriptions_smoke(cluster, &ns).await;
    changes_under_load(cluster, &ns).await;
    cpu_limit_holds(cluster, &ns).await;
    pods_on_their_pools(&client, &ns).await;

    uninstall_operator(cluster, &ns);
}
