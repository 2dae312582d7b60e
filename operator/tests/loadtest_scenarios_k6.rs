//! Every scenario graphfleet-bench knows (`graphfleet_bench_model::scenarios`, the list the bench
//! discovers: see the runner's `the_discovered_scenarios_are_the_librarys_list`) is accepted
//! in `LoadTest.spec.scenario`, and what the operator builds for it (the ConfigMap's script
//! and payload, the Job's k6 arguments and environment) runs under the pinned k6, the k6 of
//! the k6 image, against the scenario set's monolith: every answer equals the monolith's own.

use std::collections::BTreeMap;
use std::process::Command;

use graphfleet_api::LoadTest;
use graphfleet_bench_model::scenarios::{self, TOKEN_ZERO};
use graphfleet_bench_subgraphs::sets::monolith_endpoint;
use graphfleet_bench_subgraphs::{Mode, Options};
use graphfleet_operator::resources::loadtest::{self, DEFAULT_K6_IMAGE};

fn loadtest(scenario: &str) -> LoadTest {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "graphfleet.dev/v1alpha1", "kind": "LoadTest",
        "metadata": { "name": "every", "namespace": "bench", "uid": "7c1f7d5e-0000-4000-8000-00000000aa09" },
        "spec": {
            "target": { "url": "http://gateway.example/graphql" },
            "scenario": scenario, "rate": 4, "duration": "1s", "vus": 2, "maxVus": 10,
            "synchronizedStart": false,
        },
    }))
    .expect("a LoadTest")
}

#[test]
fn every_bench_scenario_is_a_loadtest_scenario() {
    assert_eq!(loadtest::scenario_names(), scenarios::names());
    for s in scenarios::all() {
        let lt = loadtest(s.name);
        let cm = loadtest::config_map(&lt)
            .unwrap_or_else(|e| panic!("{}: {e}", s.name))
            .expect("a ConfigMap");
        let data = cm.data.expect("data");
        let body: serde_json::Value =
            serde_json::from_str(&data["payload.json"]).expect("payload is JSON");
        assert_eq!(
            body["query"].as_str(),
            Some(s.query().expect("query").as_str())
        );
        let jobs = loadtest::jobs(&lt, DEFAULT_K6_IMAGE).expect("Jobs build");
        let env = container_env(&jobs[0]);
        assert_eq!(
            env.contains_key("GF_UNIQUE"),
            s.unique,
            "{}: a nonce exactly for no-cache scenarios",
            s.name
        );
    }
    // The CRD documents the whole list.
    let crd = serde_json::to_value(<LoadTest as kube::CustomResourceExt>::crd()).expect("CRD");
    let doc =
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
            ["scenario"]["description"]
            .as_str()
            .expect("a description")
            .to_owned();
    for name in scenarios::names() {
        assert!(
            doc.contains(&format!("`{name}`")),
            "{name} missing from {doc}"
        );
    }
}

fn container_env(job: &k8s_openapi::api::batch::v1::Job) -> BTreeMap<String, String> {
    let pod = job
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .expect("pod spec");
    pod.containers[0]
        .env
        .iter()
        .flatten()
        .map(|e| (e.name.clone(), e.value.clone().unwrap_or_default()))
        .collect()
}

/// k6 from `GRAPHFLEET_K6_BIN` or the pinned tool cache (`scripts/tools.sh k6`).
fn k6() -> std::path::PathBuf {
    match std::env::var_os("GRAPHFLEET_K6_BIN") {
        Some(path) => path.into(),
        None => graphfleet_testkit::tool_path("k6"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_scenario_runs_under_k6_as_the_operator_builds_it() {
    let k6 = k6();
    let dir = tempfile_dir();
    for s in scenarios::all() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let monolith =
            graphfleet_bench_subgraphs::spawn(s.set, Mode::Monolith, listener, Options::default())
                .expect("monolith starts");
        let lt = loadtest(s.name);
        let data = loadtest::config_map(&lt)
            .expect("builds")
            .and_then(|cm| cm.data)
            .expect("data");
        let job = loadtest::jobs(&lt, DEFAULT_K6_IMAGE)
            .expect("builds")
            .remove(0);
        let pod = job
            .spec
            .as_ref()
            .and_then(|s| s.template.spec.as_ref())
            .expect("pod spec");
        let container = &pod.containers[0];
        let mount = container
            .volume_mounts
            .iter()
            .flatten()
            .find(|m| m.name == "script")
            .expect("the script's mount");
        let here = dir.join(s.name);
        std::fs::create_dir_all(&here).expect("dir");
        for (key, text) in &data {
            std::fs::write(here.join(key), text).expect("write ConfigMap key");
        }
        if s.name == scenarios::SUBSCRIPTIONS {
            assert_eq!(
                data["script.js"],
                graphfleet_bench_model::K6_SUBSCRIPTIONS_JS,
                "the fan-out runs its own script"
            );
            subscriptions_run(&k6, container, &mount.mount_path, &here, &monolith).await;
            monolith.shutdown().await;
            continue;
        }
        // The answer a request must get: the monolith's to the zero-token payload (each
        // no-cache request's own token is put back before comparing, as in the bench).
        let expected = monolith_endpoint(s.set)
            .expect("monolith")
            .handle(data["payload.json"].as_bytes());
        assert_eq!(expected.status, 200, "{}", s.name);
        let expected = String::from_utf8(expected.body).expect("UTF-8 answer");
        assert!(!expected.contains("\"errors\""), "{}: {expected}", s.name);
        assert_eq!(expected.contains(TOKEN_ZERO), s.unique, "{}", s.name);
        let summary = here.join("summary.json");
        let mut cmd = Command::new(&k6);
        let mount_dir = mount.mount_path.as_str();
        for arg in container.args.iter().flatten() {
            cmd.arg(arg.replace(mount_dir, here.to_str().expect("UTF-8 path")));
        }
        for e in container.env.iter().flatten() {
            let value = e.value.clone().unwrap_or_default();
            cmd.env(
                &e.name,
                value.replace(mount_dir, here.to_str().expect("UTF-8 path")),
            );
        }
        cmd.env("GF_URL", format!("{}/graphql", monolith.base_url()))
            .env("GF_SUMMARY", &summary)
            .env("GF_SUMMARY_STDOUT", "0")
            // The operator has no monolith in the cluster; here each answer is checked.
            .env("GF_CHECK", "length")
            .env(
                "GF_EXPECTED_LEN",
                expected.encode_utf16().count().to_string(),
            )
            .env("K6_NO_USAGE_REPORT", "true");
        let out = tokio::task::spawn_blocking(move || cmd.output())
            .await
            .expect("join")
            .expect("k6 runs");
        let log = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{}: k6 failed: {log}", s.name);
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&summary).expect("summary written"))
                .expect("summary JSON");
        let requests = summary["requests"].as_u64().expect("requests");
        println!(
            "{}: {requests} requests, {} failures, p99 {} ms",
            s.name, summary["failures"], summary["latency_ms"]["p99"]
        );
        assert!(requests >= 2, "{}: {requests} requests: {log}", s.name);
        assert_eq!(summary["failures"], 0, "{}: {log}", s.name);
        monolith.shutdown().await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The `subscriptions` scenario as the operator builds it, against the monolith's
/// subscription (an event every 100 ms): every subscriber is acknowledged, gets events,
/// and every event is good (a `next` with data and no errors, its `publishedAt` set).
async fn subscriptions_run(
    k6: &std::path::Path,
    container: &k8s_openapi::api::core::v1::Container,
    mount_dir: &str,
    here: &std::path::Path,
    monolith: &graphfleet_bench_subgraphs::Handle,
) {
    let here_str = here.to_str().expect("UTF-8 path");
    let summary = here.join("summary.json");
    let mut cmd = Command::new(k6);
    for arg in container.args.iter().flatten() {
        cmd.arg(arg.replace(mount_dir, here_str));
    }
    let mut rate = 0;
    for e in container.env.iter().flatten() {
        let value = e.value.clone().unwrap_or_default();
        if e.name == "GF_RATE" {
            rate = value.parse().expect("GF_RATE is a number");
        }
        cmd.env(&e.name, value.replace(mount_dir, here_str));
    }
    cmd.env("GF_URL", format!("{}/graphql", monolith.base_url()))
        .env("GF_SUMMARY", &summary)
        .env("GF_SUMMARY_STDOUT", "0")
        .env("GF_EVENT_INTERVAL_MS", "100")
        .env("K6_NO_USAGE_REPORT", "true");
    let out = tokio::task::spawn_blocking(move || cmd.output())
        .await
        .expect("join")
        .expect("k6 runs");
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "subscriptions: k6 failed: {log}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary).expect("summary written"))
            .expect("summary JSON");
    println!("subscriptions: {summary}");
    assert_eq!(summary["subscriptions_opened"], rate, "{log}");
    let events = summary["requests"].as_u64().expect("events");
    // `duration` 1 s at an event per 100 ms: about 10 per subscriber.
    assert!(
        events >= 5 * rate,
        "{events} events for {rate} subscribers: {log}"
    );
    assert_eq!(summary["failures"], 0, "{log}");
    assert_eq!(summary["ok"], events, "{log}");
    assert!(summary["latency_ms"]["p99"].is_number(), "{log}");
}

fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("gf-scenarios-k6-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}
