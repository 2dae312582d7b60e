//! LoadTest builders (snapshots per fixture in `fixtures/loadtests/`) and the aggregation of
//! k6 summaries (fixtures in `fixtures/k6-summaries/`). No cluster needed.

use std::path::PathBuf;

use graphfleet_operator::crd::{LoadTest, LoadTestPhase};
use graphfleet_operator::k6_summary;
use graphfleet_operator::resources::loadtest::{self, DEFAULT_K6_IMAGE, SpecError};
use graphfleet_operator::status;
use k8s_openapi::api::core::v1::Pod;

use graphfleet_loadtest::K6_SCENARIO_JS as SCENARIO_JS;

fn fixture_dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn read(dir: &str, file: &str) -> String {
    std::fs::read_to_string(fixture_dir(dir).join(file)).expect("readable fixture")
}

fn loadtests() -> Vec<(String, LoadTest)> {
    let mut out: Vec<_> = std::fs::read_dir(fixture_dir("loadtests"))
        .expect("fixture dir exists")
        .map(|entry| entry.expect("readable dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("readable fixture");
            let lt: LoadTest = serde_yaml_ng::from_str(&text).expect("fixture is a LoadTest");
            let stem = path
                .file_stem()
                .expect("stem")
                .to_string_lossy()
                .into_owned();
            (stem, lt)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(out.len() >= 3, "expected the LoadTest fixtures");
    out
}

fn loadtest(name: &str) -> LoadTest {
    loadtests()
        .into_iter()
        .find(|(n, _)| n == name)
        .expect("fixture exists")
        .1
}

#[test]
fn built_objects_match_snapshots() {
    for (name, lt) in loadtests() {
        let mut config_map = loadtest::config_map(&lt).expect("fixture builds");
        // The built-in script is loadtest/k6/scenario.js verbatim; keep it out of the snapshot.
        if let Some(data) = config_map.as_mut().and_then(|cm| cm.data.as_mut())
            && let Some(script) = data.get_mut("script.js")
            && script == SCENARIO_JS
        {
            *script = "<loadtest/k6/scenario.js>".to_owned();
        }
        let objects = serde_json::json!({
            "configMap": config_map,
            "jobs": loadtest::jobs(&lt, DEFAULT_K6_IMAGE).expect("fixture builds"),
        });
        insta::assert_yaml_snapshot!(name, objects);
    }
}

#[test]
fn segments_split_the_whole_range() {
    assert_eq!(loadtest::execution_segment(0, 1), "0:1");
    assert_eq!(loadtest::execution_segment_sequence(1), "0,1");
    let n = 4;
    let segments: Vec<_> = (0..n).map(|i| loadtest::execution_segment(i, n)).collect();
    assert_eq!(segments, ["0:1/4", "1/4:2/4", "2/4:3/4", "3/4:1"]);
    assert_eq!(loadtest::execution_segment_sequence(n), "0,1/4,2/4,3/4,1");
}

#[test]
fn gateway_ref_resolves_to_its_service() {
    let lt = loadtest("scenario-gateway");
    assert_eq!(
        loadtest::target_url(&lt).expect("gateway target"),
        "http://fed.shop.svc:80/graphql"
    );
    // Without a namespace the gateway is the LoadTest's neighbour.
    let lt = loadtest("configmap-script");
    assert_eq!(
        loadtest::target_url(&lt).expect("gateway target"),
        "http://fed.bench.svc:80/graphql"
    );
}

#[test]
fn unknown_scenario_is_a_clear_error() {
    let mut lt = loadtest("scenario-gateway");
    lt.spec.scenario = Some("nope".to_owned());
    let err = loadtest::config_map(&lt).expect_err("unknown scenario");
    assert!(matches!(err, SpecError::UnknownScenario(ref s, _) if s == "nope"));
    let text = err.to_string();
    assert!(
        text.contains("\"nope\"") && text.contains("many-plans"),
        "{text}"
    );
}

#[test]
fn every_built_in_scenario_builds_a_payload() {
    let mut lt = loadtest("scenario-gateway");
    for name in loadtest::scenario_names() {
        lt.spec.scenario = Some(name.to_owned());
        let cm = loadtest::config_map(&lt)
            .expect("built-in scenario")
            .expect("a ConfigMap");
        let payload = &cm.data.as_ref().expect("data")["payload.json"];
        let body: serde_json::Value = serde_json::from_str(payload).expect("payload is JSON");
        let query = body["query"].as_str().expect("a query string");
        assert!(query.contains('{'), "{name}: {query}");
    }
}

fn summary(file: &str) -> graphfleet_operator::crd::LoadTestResults {
    k6_summary::parse_summary(&read("k6-summaries", file)).expect("fixture parses")
}

#[test]
fn summaries_parse_with_scheduled_latency_preferred() {
    let s = summary("segment-0.json");
    assert_eq!((s.requests, s.failures), (3000, 2));
    assert_eq!(s.latency_ms.p99, 8.0, "scheduled latency, not send latency");
    let s = summary("no-scheduled-latency.json");
    assert_eq!(s.latency_ms.p99, 5.0, "falls back to http_req_duration");
    assert_eq!(s.achieved_rate, 50.0, "requests / run duration");
}

#[test]
fn aggregate_of_segments_matches_snapshot() {
    let segments = [summary("segment-0.json"), summary("segment-1.json")];
    let total = k6_summary::aggregate(&segments).expect("two segments");
    assert_eq!(total.requests, 5970);
    assert_eq!(total.failures, 2);
    assert_eq!(total.dropped_iterations, 30, "dropped arrivals add up");
    assert_eq!(total.achieved_rate, 199.0);
    insta::assert_yaml_snapshot!("aggregate_two_segments", total);
    assert_eq!(k6_summary::aggregate(&[]), None);
}

#[test]
fn bad_summary_is_an_error_not_a_panic() {
    for bad in ["", "k6: 10 requests", "{\"requests\": -1}", "[]"] {
        assert!(k6_summary::parse_summary(bad).is_err(), "{bad:?}");
    }
}

fn now() -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Time {
    k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now())
}

fn pod(index: i32, status: serde_json::Value) -> Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": { "name": format!("p{index}"), "labels": { "graphfleet.dev/segment": index.to_string() } },
        "status": status,
    }))
    .expect("valid pod")
}

fn terminated(exit_code: i32, message: &str) -> serde_json::Value {
    serde_json::json!({
        "phase": if exit_code == 0 { "Succeeded" } else { "Failed" },
        "containerStatuses": [{
            "name": "k6", "image": "k6", "imageID": "", "ready": false, "restartCount": 0,
            "state": { "terminated": { "exitCode": exit_code, "message": message } },
        }],
    })
}

#[test]
fn segment_phases_follow_the_pods() {
    let lt = loadtest("scenario-gateway");
    let now = now();
    let status = |p: &Pod| status::loadtest::segment_status(&lt, 1, &[p], None, &now);
    let none = status::loadtest::segment_status(&lt, 1, &[], None, &now);
    assert_eq!(
        (none.phase, none.segment.as_str(), none.job.as_str()),
        (LoadTestPhase::Pending, "1/3:2/3", "fed-query-1")
    );
    let running = pod(1, serde_json::json!({ "phase": "Running" }));
    assert_eq!(status(&running).phase, LoadTestPhase::Running);
    let done = pod(1, terminated(0, &read("k6-summaries", "segment-1.json")));
    let done = status(&done);
    assert_eq!(done.phase, LoadTestPhase::Succeeded);
    assert_eq!(done.results.expect("results").requests, 2970);
    let crashed = pod(1, terminated(107, "script error"));
    let crashed = status(&crashed);
    assert_eq!(crashed.phase, LoadTestPhase::Failed);
    assert!(
        crashed
            .message
            .as_deref()
            .is_some_and(|m| m.contains("107")),
        "{crashed:?}"
    );
    let silent = status(&pod(1, terminated(0, "")));
    assert_eq!(silent.phase, LoadTestPhase::Failed);
    assert!(
        silent
            .message
            .as_deref()
            .is_some_and(|m| m.contains("ended without a k6 summary")),
        "{silent:?}"
    );
}

#[test]
fn a_job_the_job_controller_failed_fails_its_segment() {
    let lt = loadtest("scenario-gateway");
    let job: k8s_openapi::api::batch::v1::Job = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "fed-query-0" },
        "status": { "conditions": [{
            "type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
            "message": "Job has reached the specified backoff limit",
        }]},
    }))
    .expect("valid Job");
    let status = status::loadtest::segment_status(&lt, 0, &[], Some(&job), &now());
    assert_eq!(status.phase, LoadTestPhase::Failed);
    let message = status.message.expect("a message");
    assert!(
        message.contains(
            "Job fed-query-0 failed (BackoffLimitExceeded: Job has reached the specified backoff limit)"
        ),
        "{message}"
    );
    // A summary already collected wins over the Job's later verdict.
    let done = pod(0, terminated(0, &read("k6-summaries", "segment-0.json")));
    let status = status::loadtest::segment_status(&lt, 0, &[&done], Some(&job), &now());
    assert_eq!(status.phase, LoadTestPhase::Succeeded);
}

#[test]
fn overall_phase_waits_for_every_segment() {
    let lt = loadtest("scenario-gateway");
    let seg = |phase| {
        let mut s = status::loadtest::segment_status(&lt, 0, &[], None, &now());
        s.phase = phase;
        s
    };
    use LoadTestPhase::*;
    assert_eq!(
        status::loadtest::overall_phase(&[seg(Pending), seg(Pending)]),
        Pending
    );
    assert_eq!(
        status::loadtest::overall_phase(&[seg(Succeeded), seg(Pending)]),
        Running
    );
    assert_eq!(
        status::loadtest::overall_phase(&[seg(Succeeded), seg(Succeeded)]),
        Succeeded
    );
    assert_eq!(
        status::loadtest::overall_phase(&[seg(Running), seg(Failed)]),
        Failed
    );
}
