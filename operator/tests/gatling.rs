//! `executor: gatling`: the Jobs built for Gatling segments, what Gatling refuses (in the
//! builders and, on the local control plane, in the CRD's rules), and real Gatling summaries
//! (fixtures printed by bench/gatling's simulation, two segments of 40 req/s for 3 s)
//! merged, judged and reported as k6's are.

mod common;

use std::path::PathBuf;

use graphfleet_api::{LatencyAggregation, LoadTest, LoadTestExecutor, LoadTestPhase};
use graphfleet_operator::resources::loadtest::{
    self, DEFAULT_GATLING_IMAGE, DEFAULT_K6_IMAGE, GATLING_MAIN, SpecError,
};
use graphfleet_operator::{k6_summary, report, status};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Container, Pod};
use kube::CustomResourceExt;
use kube::api::{Api, PostParams};
use serde_json::json;

fn fixture(dir: &str, file: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(dir)
        .join(file);
    std::fs::read_to_string(path).expect("readable fixture")
}

fn gatling_loadtest() -> LoadTest {
    serde_yaml_ng::from_str(&fixture("loadtests", "gatling-gateway.yaml")).expect("a LoadTest")
}

fn container(job: &Job) -> &Container {
    &job.spec
        .as_ref()
        .expect("spec")
        .template
        .spec
        .as_ref()
        .expect("pod spec")
        .containers[0]
}

fn env_of<'a>(c: &'a Container, name: &str) -> Option<&'a str> {
    c.env
        .as_ref()?
        .iter()
        .find(|e| e.name == name)?
        .value
        .as_deref()
}

#[test]
fn gatling_segments_run_the_simulation_with_their_share_of_the_rate() {
    let lt = gatling_loadtest();
    assert_eq!(lt.spec.executor, LoadTestExecutor::Gatling);
    assert!(!lt.spec.synchronized(), "no synchronized start for Gatling");
    let image = loadtest::executor_image(&lt, DEFAULT_K6_IMAGE, DEFAULT_GATLING_IMAGE);
    assert_eq!(image, DEFAULT_GATLING_IMAGE);
    let jobs = loadtest::jobs(&lt, image).expect("builds");
    assert_eq!(jobs.len(), 2);
    for (i, job) in jobs.iter().enumerate() {
        let c = container(job);
        assert_eq!(c.image.as_deref(), Some(DEFAULT_GATLING_IMAGE));
        assert_eq!(c.args.as_deref(), Some(&[GATLING_MAIN.to_owned()][..]));
        assert_eq!(c.ports, None, "no k6 REST API");
        assert_eq!(env_of(c, "GF_URL"), Some("http://fed.bench.svc:80/graphql"));
        // The whole test's rate: the simulation takes every second arrival from the i-th.
        assert_eq!(env_of(c, "GF_RATE"), Some("300"));
        assert_eq!(env_of(c, "GF_SEGMENT_INDEX"), Some(i.to_string().as_str()));
        assert_eq!(env_of(c, "GF_SEGMENT_COUNT"), Some("2"));
        assert_eq!(env_of(c, "GF_DURATION"), Some("30s"));
        assert_eq!(env_of(c, "GF_SUMMARY_STDOUT"), Some("1"));
        assert_eq!(env_of(c, "GF_SUMMARY"), Some(loadtest::TERMINATION_LOG));
        // k6-only variables the simulation would refuse.
        for k6_only in ["GF_CHECK", "GF_EXECUTOR", "GF_THRESHOLDS", "GF_VUS"] {
            assert_eq!(env_of(c, k6_only), None, "{k6_only}");
        }
        let labels = job.metadata.labels.as_ref().expect("labels");
        assert_eq!(labels["app.kubernetes.io/name"], "graphfleet-gatling");
        assert_eq!(labels["graphfleet.dev/segment"], i.to_string());
    }
    // The payload alone: the simulation is in the image.
    let cm = loadtest::config_map(&lt)
        .expect("builds")
        .expect("owned ConfigMap");
    let data = cm.data.expect("data");
    assert_eq!(data.keys().collect::<Vec<_>>(), ["payload.json"]);
    let body: serde_json::Value = serde_json::from_str(&data["payload.json"]).expect("JSON");
    assert!(
        body["query"].as_str().is_some_and(|q| q.contains('{')),
        "{body}"
    );

    // The same LoadTest under k6 keeps k6's Jobs.
    let mut k6 = lt.clone();
    k6.spec.executor = LoadTestExecutor::K6;
    assert!(k6.spec.synchronized());
    let job = loadtest::job(&k6, 0, DEFAULT_K6_IMAGE).expect("builds");
    assert_eq!(container(&job).args.as_ref().expect("args")[0], "run");
    assert_eq!(env_of(container(&job), "GF_SEGMENT_INDEX"), None);
}

#[test]
fn the_executor_is_k6_unless_set_and_left_out_of_the_spec_hash() {
    let mut lt = gatling_loadtest();
    let spec = serde_json::to_value(&lt.spec).expect("serializes");
    assert_eq!(spec["executor"], "gatling");
    lt.spec.executor = LoadTestExecutor::default();
    assert_eq!(lt.spec.executor, LoadTestExecutor::K6);
    // Specs written before the field existed serialize (and hash) as they did.
    let spec = serde_json::to_value(&lt.spec).expect("serializes");
    assert!(spec.get("executor").is_none(), "{spec}");
}

/// A change to the Gatling fixture, named.
type Change = (&'static str, fn(&mut LoadTest), &'static str);

#[test]
fn gatling_refuses_what_only_k6_does() {
    let cases: [Change; 6] = [
        (
            "script",
            |lt| {
                lt.spec.scenario = None;
                lt.spec.script = Some(
                    serde_json::from_value(
                        serde_json::json!({"inline": "export default function () {}"}),
                    )
                    .expect("script"),
                );
            },
            "script",
        ),
        (
            "synchronizedStart",
            |lt| lt.spec.synchronized_start = Some(true),
            "synchronizedStart",
        ),
        (
            "abortOnFail",
            |lt| {
                lt.spec
                    .thresholds
                    .as_mut()
                    .expect("fixture thresholds")
                    .abort_on_fail = true;
            },
            "thresholds.abortOnFail",
        ),
        (
            "many-plans-no-cache",
            |lt| lt.spec.scenario = Some("many-plans-no-cache".to_owned()),
            "scenario many-plans-no-cache (a new document per request)",
        ),
        (
            "subscriptions",
            |lt| lt.spec.scenario = Some("subscriptions".to_owned()),
            "scenario subscriptions (WebSocket subscriptions)",
        ),
        (
            "expect",
            |lt| {
                lt.spec.expect = Some(
                    serde_json::from_value(serde_json::json!({ "sha256": "0".repeat(64) }))
                        .expect("expect"),
                );
            },
            "expect",
        ),
    ];
    for (name, change, field) in cases {
        let mut lt = gatling_loadtest();
        change(&mut lt);
        let err = loadtest::jobs(&lt, DEFAULT_GATLING_IMAGE).expect_err(name);
        assert_eq!(err, SpecError::NotForGatling(field), "{name}");
        assert_eq!(err.reason(), "UnsupportedByExecutor");
        assert_eq!(
            err.to_string(),
            format!("spec.{field} is k6-only; executor gatling does not support it")
        );
        assert!(loadtest::config_map(&lt).is_err(), "{name}");
        let rejected = status::loadtest::rejected_status(&err, Some(1), &now());
        assert_eq!(rejected.phase, Some(LoadTestPhase::Failed), "{name}");
    }
    // synchronizedStart: false is what Gatling does anyway.
    let mut lt = gatling_loadtest();
    lt.spec.synchronized_start = Some(false);
    assert!(loadtest::jobs(&lt, DEFAULT_GATLING_IMAGE).is_ok());
}

#[test]
fn the_crd_admits_gatling_only_with_a_scenario_and_without_k6_features() {
    let crd = serde_json::to_value(LoadTest::crd()).expect("CRD serializes");
    let spec = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    assert_eq!(
        spec["properties"]["executor"]["enum"],
        serde_json::json!(["k6", "gatling"])
    );
    let rules: Vec<&str> = spec["x-kubernetes-validations"]
        .as_array()
        .expect("rules")
        .iter()
        .filter_map(|r| r["rule"].as_str())
        .filter(|r| r.contains("gatling"))
        .collect();
    assert_eq!(rules.len(), 4, "{rules:?}");
    for field in [
        "has(self.scenario)",
        "self.synchronizedStart",
        "self.thresholds.abortOnFail",
        "has(self.expect)",
    ] {
        assert!(
            rules.iter().any(|r| r.contains(field)),
            "{field}: {rules:?}"
        );
    }
}

fn now() -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Time {
    k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now())
}

fn finished_pod(index: i32, message: &str) -> Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": { "name": format!("p{index}"), "labels": { "graphfleet.dev/segment": index.to_string() } },
        "status": {
            "phase": "Succeeded",
            "containerStatuses": [{
                "name": "k6", "image": DEFAULT_GATLING_IMAGE, "imageID": "", "ready": false, "restartCount": 0,
                "state": { "terminated": { "exitCode": 0, "message": message } },
            }],
        },
    }))
    .expect("valid pod")
}

/// The simulation's summaries parse as k6's, with a histogram counting every request, and two
/// segments merge bucket by bucket into a Succeeded test whose thresholds are judged.
#[test]
fn real_gatling_summaries_merge_and_are_judged_like_k6s() {
    let summaries: Vec<String> = (0..2)
        .map(|i| fixture("k6-summaries", &format!("gatling-segment-{i}.json")))
        .collect();
    for text in &summaries {
        let segment = k6_summary::parse_segment(text.trim()).expect("a summary");
        assert_eq!(segment.results.requests, 60);
        assert_eq!(segment.results.failures, 0);
        assert_eq!(segment.results.achieved_rate, 20.0);
        let h = segment.histogram.as_ref().expect("a histogram");
        assert_eq!(h.total(), 60, "{:?}", segment.no_histogram);
        assert!(segment.started_at_ms.is_some_and(|ms| ms > 1.7e12));
        let line = format!(
            "Simulation started...\ngraphfleet-summary {}\n",
            text.trim()
        );
        assert_eq!(k6_summary::summary_from_log(&line), Some(text.trim()));
    }

    let mut lt = gatling_loadtest();
    lt.spec.rate = 40;
    lt.spec.duration = "3s".to_owned();
    lt.spec.thresholds = Some(
        serde_json::from_value(serde_json::json!({
            "latency": { "max": "10s" }, "maxErrorPercent": 1, "minAchievedRatePercent": 99,
        }))
        .expect("thresholds"),
    );
    // The termination messages carry the summaries too; the logged lines are read first.
    let pods: Vec<Pod> = (0..2)
        .map(|i| finished_pod(i, summaries[i as usize].trim()))
        .collect();
    let logged: status::loadtest::LoggedSummaries = (0..2)
        .map(|i| (format!("p{i}"), summaries[i].trim().to_owned()))
        .collect();
    let observed = status::loadtest::observe(&lt, &pods, &[], &Default::default(), &logged, &now());
    let st = &observed.status;
    assert_eq!(st.phase, Some(LoadTestPhase::Succeeded), "{st:?}");
    let results = st.results.as_ref().expect("results");
    assert_eq!(results.requests, 120);
    assert_eq!(results.achieved_rate, 40.0);
    assert_eq!(
        results.latency_aggregation,
        Some(LatencyAggregation::Histogram)
    );
    let passed = st
        .conditions
        .iter()
        .find(|c| c.type_ == "Passed")
        .expect("Passed");
    assert_eq!(passed.status, "True", "{passed:?}");
    assert!(
        st.start_skew_ms.is_some(),
        "each segment reported its start"
    );

    let cm = report::config_map(&lt, st, &observed.summaries);
    let md = &cm.data.expect("data")[report::REPORT_KEY];
    for part in ["scenario `query` (Gatling)", "## Whole test"] {
        assert!(md.contains(part), "{part:?} missing from\n{md}");
    }
    // Table rows by their cells, whatever the column padding.
    let rows: Vec<Vec<&str>> = md
        .lines()
        .filter(|l| l.starts_with('|'))
        .map(|l| l.trim_matches('|').split('|').map(str::trim).collect())
        .collect();
    assert!(
        rows.iter().any(|r| r.starts_with(&["120", "0", "0"])),
        "the whole test's row (120 requests, no failures, none dropped) in\n{md}"
    );
    assert!(
        rows.iter().any(|r| r.last() == Some(&"pod log")),
        "segments read from their pod logs in\n{md}"
    );
}

/// The API server applies the CRD's rules: Gatling without a scenario, with a synchronized
/// start or with abortOnFail is refused with the rule's words; a Gatling spec without them is
/// admitted and keeps its executor.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_server_refuses_k6_only_fields_with_gatling() {
    let client = common::cluster_client().await;
    let ns = graphfleet_testkit::TestNamespace::create(&client, "lt-gatling").await;
    let api: Api<LoadTest> = Api::namespaced(client.clone(), ns.name());
    let base = json!({
        "target": { "url": "http://gw/graphql" }, "scenario": "query", "executor": "gatling",
        "rate": 10, "duration": "10s",
    });
    let with = |patch: serde_json::Value| -> LoadTest {
        let mut spec = base.clone();
        for (k, v) in patch.as_object().expect("object") {
            spec[k] = v.clone();
        }
        serde_json::from_value(json!({
            "apiVersion": "graphfleet.dev/v1alpha1", "kind": "LoadTest",
            "metadata": { "name": "g" }, "spec": spec,
        }))
        .expect("a LoadTest")
    };
    let cases = [
        (
            json!({ "scenario": null, "script": { "inline": "export default function () {}" } }),
            "executor gatling runs the built-in scenarios only",
        ),
        (
            json!({ "synchronizedStart": true }),
            "synchronizedStart is k6-only",
        ),
        (
            json!({ "thresholds": { "maxErrorPercent": 1, "abortOnFail": true } }),
            "thresholds.abortOnFail is k6-only",
        ),
    ];
    for (patch, expected) in cases {
        match api
            .create(&PostParams::default(), &with(patch.clone()))
            .await
        {
            Err(kube::Error::Api(e)) => {
                assert_eq!(e.code, 422, "{patch}: {e:?}");
                assert!(e.message.contains(expected), "{patch}: {}", e.message);
            }
            other => panic!("{patch}: expected a 422 rejection, got {other:?}"),
        }
    }
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    for ok in [
        json!({}),
        json!({ "synchronizedStart": false, "thresholds": { "maxErrorPercent": 1 } }),
    ] {
        let stored = api
            .create(&dry_run, &with(ok.clone()))
            .await
            .unwrap_or_else(|e| panic!("{ok}: {e}"));
        assert_eq!(stored.spec.executor, LoadTestExecutor::Gatling);
    }
    // k6 keeps its script and abortOnFail.
    let mut k6 = with(json!({
        "scenario": null, "script": { "inline": "export default function () {}" },
        "thresholds": { "maxErrorPercent": 1, "abortOnFail": true },
    }));
    k6.spec.executor = LoadTestExecutor::K6;
    api.create(&dry_run, &k6).await.expect("k6 with a script");
    ns.delete(&client).await;
}
