//! LoadTests with real k6 pods on client-0, the operator running as a pod (`helm install`):
//! four segments started together (each k6 paused until all are ready, then resumed at
//! once) against four started on their own, with the start skew each k6 measured; and a
//! test that `thresholds.abortOnFail` stops early, over two targets in turn: each target is
//! stopped on its own and the next one still runs. The targets are addresses nothing listens
//! on, so every request fails fast: these tests are about starting and stopping the load,
//! not about what it measures (real_fleet.rs compares two real targets).

use std::time::{Duration, Instant};

use graphfleet_deploy_tests::real::{
    install_operator, kubectl, passed_condition, report_md, time_of, uninstall_operator,
};
use graphfleet_deploy_tests::run_ok;
use graphfleet_testkit::{RealCluster, TestNamespace, pool_placement, real_cluster};
use serde_json::Value;

const DONE: Duration = Duration::from_secs(240);

/// One target nothing listens on.
const NOWHERE: &str = "  target: {url: \"http://127.0.0.1:9/graphql\"}\n";

/// Applies a LoadTest of `parallelism` small k6 pods (a quarter CPU each, so four fit on
/// client-0 beside the operator) with `extra` spec fields (the target among them).
fn apply_loadtest(cluster: &RealCluster, ns: &str, name: &str, parallelism: u32, extra: &str) {
    let yaml = format!(
        "apiVersion: graphfleet.dev/v1alpha1\nkind: LoadTest\nmetadata: {{name: {name}}}\n\
         spec:\n  scenario: query\n\
         \x20 rate: 40\n  vus: 4\n  maxVus: 20\n  parallelism: {parallelism}\n\
         \x20 resources: {{requests: {{cpu: 250m, memory: 64Mi}}, limits: {{cpu: 500m, memory: 256Mi}}}}\n\
         \x20 placement: {}\n{extra}",
        pool_placement("client")
    );
    run_ok(kubectl(cluster, ns).args(["apply", "-f", "-"]), Some(&yaml));
}

async fn finished(cluster: &RealCluster, ns: &str, name: &str) -> Value {
    graphfleet_deploy_tests::real::loadtest_finished(cluster, ns, name, DONE).await
}

fn skew_ms(lt: &Value) -> f64 {
    lt["status"]["startSkewMs"]
        .as_f64()
        .unwrap_or_else(|| panic!("startSkewMs in {}", lt["status"]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn segments_start_together_and_an_abort_threshold_stops_the_test() {
    let cluster = real_cluster();
    let client = cluster.client().await;
    let namespace = TestNamespace::create(&client, "lt-sync").await;
    let ns = namespace.name().to_owned();
    install_operator(cluster, &ns);

    // Four segments on their own (as before synchronized starts), then four together.
    apply_loadtest(
        cluster,
        &ns,
        "apart",
        4,
        &format!("{NOWHERE}  duration: 10s\n  synchronizedStart: false\n"),
    );
    let apart = finished(cluster, &ns, "apart").await;
    assert_eq!(apart["status"]["phase"], "Succeeded", "{}", apart["status"]);
    apply_loadtest(
        cluster,
        &ns,
        "together",
        4,
        &format!("{NOWHERE}  duration: 10s\n"),
    );
    let together = finished(cluster, &ns, "together").await;
    assert_eq!(
        together["status"]["phase"], "Succeeded",
        "{}",
        together["status"]
    );
    let segments = together["status"]["segments"].as_array().expect("segments");
    assert_eq!(segments.len(), 4);
    for s in segments {
        assert!(s["resumedAt"].is_string(), "resumed: {s}");
        assert!(s["startedAt"].is_string(), "k6 reported its start: {s}");
        assert_eq!(
            s["summarySource"], "PodLog",
            "summary read from the log: {s}"
        );
    }
    assert_eq!(
        together["status"]["results"]["latencyAggregation"], "Histogram",
        "{}",
        together["status"]
    );
    // The full report, as kubectl users read it.
    let report_cm = together["status"]["reportConfigMap"]
        .as_str()
        .expect("reportConfigMap");
    assert_eq!(report_cm, "together-report");
    let report = report_md(cluster, &ns, report_cm);
    println!("{report}");
    for part in [
        "## Whole test",
        "## Latency distribution",
        "## Segments",
        "| pod log ",
    ] {
        assert!(
            report.contains(part),
            "{part:?} missing from the report:\n{report}"
        );
    }
    // Every segment sent its share: 40 req/s × 10 s.
    let requests = together["status"]["results"]["requests"]
        .as_u64()
        .expect("requests");
    assert!((380..=420).contains(&requests), "{requests} requests");
    let (before, after) = (skew_ms(&apart), skew_ms(&together));
    println!(
        "MEASURED start skew of 4 segments: {before:.1} ms on their own, {after:.1} ms together"
    );
    // Pods of one node created at once may also start close together on their own, so only
    // the synchronized figure is bounded.
    assert!(after <= 50.0, "segments started {after} ms apart");

    setup_and_teardown_run_once(cluster, &ns).await;

    // Every request fails, so the error-rate bound breaks as soon as it may be judged: the
    // first target is stopped, then the second runs and is stopped too.
    let started = Instant::now();
    apply_loadtest(
        cluster,
        &ns,
        "abort",
        2,
        "  targets:\n  - {name: first, url: \"http://127.0.0.1:9/graphql\"}\n\
         \x20 - {name: second, url: \"http://127.0.0.1:10/graphql\"}\n\
         \x20 duration: 3m\n  thresholds: {maxErrorPercent: 1, abortOnFail: true}\n",
    );
    let abort = finished(cluster, &ns, "abort").await;
    let took = started.elapsed();
    let status = &abort["status"];
    assert_eq!(status["phase"], "Aborted", "{status}");
    let targets = status["targets"].as_array().expect("status.targets");
    assert_eq!(targets.len(), 2, "{status}");
    for t in targets {
        assert_eq!(t["phase"], "Aborted", "each target stopped on its own: {t}");
        assert_eq!(t["passed"], false, "{t}");
        assert_eq!(t["passedReason"], "AbortedOnThreshold", "{t}");
    }
    let (first_done, second_start) = (
        time_of(&targets[0]["completionTime"]),
        time_of(&targets[1]["startTime"]),
    );
    assert!(
        second_start >= first_done,
        "the second target started before the first ended: {first_done} > {second_start}"
    );
    println!(
        "MEASURED abortOnFail over 2 targets: first {} → {}, second {} → {}",
        targets[0]["startTime"], first_done, second_start, targets[1]["completionTime"]
    );
    let passed = passed_condition(status);
    assert_eq!(passed["status"], "False");
    assert_eq!(passed["reason"], "AbortedOnThreshold");
    assert!(
        passed["message"]
            .as_str()
            .is_some_and(|m| m.contains("gf_error_rate rate<0.01")),
        "{passed}"
    );
    println!(
        "MEASURED abortOnFail: a LoadTest of two 3m targets Aborted after {took:?}: {}",
        passed["message"]
    );
    assert!(
        took < Duration::from_secs(150),
        "both targets aborted early, not after 3m each"
    );

    uninstall_operator(cluster, &ns);
    namespace.delete(&client).await;
}

/// A script with `setup()` and `teardown()` over three synchronized segments: each runs once
/// in the whole test (the operator runs `setup()` in segment 0 through k6's REST API and
/// hands its data to the others; only segment 0 runs `teardown()`), and every iteration of
/// every segment sees the data.
async fn setup_and_teardown_run_once(cluster: &RealCluster, ns: &str) {
    let script = r#"
import { Counter } from "k6/metrics";
const withData = new Counter("with_data");
export const options = { scenarios: { main: {
  executor: "constant-arrival-rate", rate: 30, timeUnit: "1s", duration: "5s", preAllocatedVUs: 3,
}}};
export function setup() { console.log("GF-SETUP-RAN"); return { token: `t-${Date.now()}` }; }
export default function (data) { if (data && data.token) withData.add(1); }
export function teardown(data) { console.log(`GF-TEARDOWN-RAN ${data.token}`); }
export function handleSummary(d) {
  const requests = d.metrics.iterations ? d.metrics.iterations.values.count : 0;
  const seen = d.metrics.with_data ? d.metrics.with_data.values.count : 0;
  const s = JSON.stringify({ requests, failures: requests - seen, run_duration_s: 5 });
  return { stdout: `graphfleet-summary ${s}
`, "/dev/termination-log": s };
}
"#;
    let lt = serde_json::json!({
        "apiVersion": "graphfleet.dev/v1alpha1", "kind": "LoadTest",
        "metadata": { "name": "setup-once" },
        "spec": {
            "target": { "url": "http://127.0.0.1:9/graphql" },
            "script": { "inline": script },
            "rate": 30, "duration": "5s", "parallelism": 3,
            "resources": { "requests": { "cpu": "250m", "memory": "64Mi" },
                           "limits": { "cpu": "500m", "memory": "256Mi" } },
            "placement": pool_placement("client"),
        },
    });
    run_ok(
        kubectl(cluster, ns).args(["apply", "-f", "-"]),
        Some(&lt.to_string()),
    );
    let done = finished(cluster, ns, "setup-once").await;
    let status = &done["status"];
    assert_eq!(status["phase"], "Succeeded", "{status}");
    let requests = status["results"]["requests"].as_u64().expect("requests");
    assert!((140..=160).contains(&requests), "{requests} iterations");
    assert_eq!(
        status["results"]["failures"], 0,
        "every iteration of every segment saw setup()'s data: {status}"
    );
    let logs = run_ok(
        kubectl(cluster, ns).args([
            "logs",
            "-l",
            "graphfleet.dev/loadtest=setup-once",
            "--tail=-1",
            "--prefix",
        ]),
        None,
    );
    assert_eq!(logs.matches("GF-SETUP-RAN").count(), 1, "{logs}");
    assert_eq!(logs.matches("GF-TEARDOWN-RAN t-").count(), 1, "{logs}");
    println!(
        "MEASURED setup()/teardown() over 3 segments: once each; {requests} iterations all saw setup data; start skew {} ms",
        status["startSkewMs"]
    );
}
