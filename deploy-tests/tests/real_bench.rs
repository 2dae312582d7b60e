//! `graphfleet-bench --in-cluster` on the real nodes: the benchmark made of the project's
//! own objects. The operator (installed by helm) composes the set's `Subgraph`s for the
//! bench's `GraphGateway` and rolls its pod out on router-0; each scenario is one `LoadTest`
//! whose k6 pods on client-0 check every answer against the monolith's (the target's
//! `expect`); the report is read from the LoadTests' status, with the gateway pod's CPU and
//! memory sampled from its cgroup and the subgraph requests it made, and a capacity search
//! of LoadTests at rising rates (gateway and k6 pods' CPU sampled). Two scenarios of one
//! set share the deployed gateways; at the end the bench leaves none of its objects behind.

use std::process::Command;

use graphfleet_deploy_tests::real::{install_operator, json_of, uninstall_operator};
use graphfleet_deploy_tests::{run_ok, workspace_binary};
use graphfleet_testkit::{TestNamespace, real_cluster};
use serde_json::Value;

const SCENARIOS: [&str; 2] = ["query", "deduplication"];
const RATE: u64 = 20;
const SECONDS: u64 = 6;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_in_cluster_benchmark_runs_a_graph_gateway_under_load_tests() {
    let cluster = real_cluster();
    let client = cluster.client().await;
    let ns = TestNamespace::create(&client, "real-bench").await;
    let ns = ns.name().to_owned();
    install_operator(cluster, &ns);

    let bench = workspace_binary(
        "graphfleet-bench",
        "graphfleet-bench",
        "GRAPHFLEET_BENCH_BIN",
    );
    let subgraphs = workspace_binary(
        "graphfleet-bench-subgraphs",
        "graphfleet-subgraphs",
        "GRAPHFLEET_SUBGRAPHS_BIN",
    );
    let out = tempfile::tempdir().expect("a temporary directory");
    let mut cmd = Command::new(&bench);
    cmd.arg("--in-cluster")
        .arg("--kubeconfig")
        .arg(cluster.kubeconfig_path())
        .args(["--namespace", &ns, "--gateway", "graphfleet"])
        .args(SCENARIOS.iter().flat_map(|s| ["--scenario", s]))
        .args([
            "--rate",
            &RATE.to_string(),
            "--duration",
            &SECONDS.to_string(),
        ])
        // Debug-build images: half a CPU would measure the build, not the path.
        .args(["--warmup", "2", "--cpus", "1", "--memory", "512Mi"])
        // A capacity search of two short steps per scenario: LoadTests of one target.
        .args([
            "--capacity",
            "--capacity-steps",
            "2",
            "--capacity-duration",
            "3",
        ])
        .arg("--subgraphs-bin")
        .arg(&subgraphs)
        .arg("--out")
        .arg(out.path());
    let printed = run_ok(&mut cmd, None);
    println!("{printed}");

    let results: Value = serde_json::from_str(
        &std::fs::read_to_string(out.path().join("results.json")).expect("results.json"),
    )
    .expect("results.json is JSON");
    let report = std::fs::read_to_string(out.path().join("REPORT.md")).expect("REPORT.md");
    println!("{report}");
    for scenario in SCENARIOS {
        let run = results["scenarios"]
            .as_array()
            .expect("scenarios")
            .iter()
            .find(|s| s["name"] == scenario)
            .unwrap_or_else(|| panic!("{scenario} in {results}"));
        assert!(run["error"].is_null(), "{scenario}: {}", run["error"]);
        let gw = &run["gateways"][0];
        assert_eq!(gw["gateway"], "graphfleet");
        let outcome = &gw["outcome"];
        assert_eq!(outcome["status"], "measured", "{scenario}: {outcome}");
        let summary = &outcome["summary"];
        let requests = summary["requests"].as_u64().expect("requests");
        assert!(
            requests >= RATE * SECONDS * 9 / 10,
            "{scenario}: {requests} requests of {}",
            RATE * SECONDS
        );
        // Every answer checked against the monolith's: none failed.
        assert_eq!(summary["failures"], 0, "{scenario}: {summary}");
        let usage = &outcome["usage"];
        assert!(
            usage["cpu_seconds"].as_f64().is_some_and(|s| s > 0.0),
            "{scenario}: the gateway pod's CPU was sampled: {usage}"
        );
        assert!(
            outcome["subgraph_requests"].as_u64().is_some_and(|n| n > 0),
            "{scenario}: subgraph requests counted: {outcome}"
        );
        let steps = outcome["capacity"]["steps"]
            .as_array()
            .expect("capacity steps");
        assert_eq!(steps.len(), 2, "{scenario}: {}", outcome["capacity"]);
        for step in steps {
            assert!(step["achieved"].as_f64().is_some_and(|r| r > 0.0), "{step}");
            assert!(
                step["gateway_cpu"].as_f64().is_some_and(|c| c > 0.0),
                "{step}"
            );
            assert!(
                step["load_busy"].as_f64().is_some_and(|b| b > 0.0),
                "k6's pod sampled: {step}"
            );
        }
        assert!(
            steps[1]["target"].as_u64() > steps[0]["target"].as_u64(),
            "the rate rises: {steps:?}"
        );
    }
    assert!(report.contains("GraphGateway"), "{report}");

    // The run removed what it made; what the operator made went with its owners.
    for kind in ["graphgateways", "subgraphs", "loadtests", "deployments"] {
        let left = json_of(
            cluster,
            &ns,
            &[kind, "-l", "app.kubernetes.io/managed-by=graphfleet-bench"],
        );
        assert_eq!(
            left["items"].as_array().map(Vec::len),
            Some(0),
            "{kind}: {left}"
        );
    }
    uninstall_operator(cluster, &ns);
}
