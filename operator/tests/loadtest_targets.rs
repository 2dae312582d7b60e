//! `spec.targets`: several targets loaded one after another. Pure: the Jobs of each target,
//! the status (per target and overall) from pods and Jobs, which target starts next, which
//! Jobs stop after an abort, and the report's comparison. No cluster needed.

use graphfleet_api::{LoadTest, LoadTestPhase, LoadTestStatus};
use graphfleet_operator::report;
use graphfleet_operator::resources::loadtest::{
    self, DEFAULT_K6_IMAGE, SpecError, TARGET_LABEL, Target,
};
use graphfleet_operator::status::loadtest::{
    LoggedSummaries, Observed, StartStep, jobs_to_stop, next_target, observe, record_resume,
    start_step,
};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, Time};
use k8s_openapi::jiff::Timestamp;
use serde_json::json;

fn fixture() -> LoadTest {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/loadtests/targets.yaml"
    );
    serde_yaml_ng::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("LoadTest")
}

fn now() -> Time {
    Time(Timestamp::now())
}

fn summary(file: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/k6-summaries/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(path).expect("summary fixture")
}

/// A pod of `target`'s segment `index` in `status`.
fn pod(target: &str, index: i32, status: serde_json::Value) -> Pod {
    serde_json::from_value(json!({
        "metadata": {
            "name": format!("compare-{target}-{index}-x"),
            "labels": {
                "graphfleet.dev/loadtest": "compare",
                "graphfleet.dev/segment": index.to_string(),
                "graphfleet.dev/target": target,
                "batch.kubernetes.io/job-name": format!("compare-{target}-{index}"),
            },
        },
        "status": status,
    }))
    .expect("valid pod")
}

fn terminated(exit_code: i32, message: &str) -> serde_json::Value {
    json!({
        "phase": if exit_code == 0 { "Succeeded" } else { "Failed" },
        "containerStatuses": [{
            "name": "k6", "image": "k6", "imageID": "", "ready": false, "restartCount": 0,
            "state": { "terminated": { "exitCode": exit_code, "message": message } },
        }],
    })
}

fn running(ip: &str) -> serde_json::Value {
    json!({
        "phase": "Running", "podIP": ip,
        "containerStatuses": [{
            "name": "k6", "image": "k6", "imageID": "", "ready": true, "restartCount": 0,
            "state": { "running": { "startedAt": "2026-01-01T00:00:00Z" } },
        }],
    })
}

fn jobs_of(lt: &LoadTest, k: usize) -> Vec<Job> {
    let all = loadtest::targets(lt).expect("targets");
    loadtest::target_jobs(lt, &all[k], DEFAULT_K6_IMAGE).expect("Jobs build")
}

fn run(lt: &LoadTest, pods: &[Pod], jobs: &[Job], previous: &LoadTestStatus) -> Observed {
    observe(lt, pods, jobs, previous, &LoggedSummaries::new(), &now())
}

#[test]
fn each_target_gets_its_own_jobs_labelled_and_named() {
    let lt = fixture();
    let all = loadtest::targets(&lt).expect("targets");
    assert_eq!(
        all,
        [
            Target {
                name: Some("graphfleet".into()),
                url: "http://fed.bench.svc:80/graphql".into(),
                expect: None,
            },
            Target {
                name: Some("other".into()),
                url: "http://other.bench.svc:4000/graphql".into(),
                expect: None,
            },
        ]
    );
    let jobs = loadtest::jobs(&lt, DEFAULT_K6_IMAGE).expect("Jobs");
    let names: Vec<_> = jobs
        .iter()
        .map(|j| j.metadata.name.clone().unwrap_or_default())
        .collect();
    assert_eq!(
        names,
        [
            "compare-graphfleet-0",
            "compare-graphfleet-1",
            "compare-other-0",
            "compare-other-1"
        ]
    );
    for (job, target) in jobs
        .iter()
        .zip(["graphfleet", "graphfleet", "other", "other"])
    {
        let labels = job.metadata.labels.as_ref().expect("labels");
        assert_eq!(labels[TARGET_LABEL], target);
        let spec = job.spec.as_ref().expect("spec");
        let template_labels = spec
            .template
            .metadata
            .as_ref()
            .and_then(|m| m.labels.as_ref());
        assert_eq!(template_labels.expect("pod labels")[TARGET_LABEL], target);
    }
    // Same load for both, each at its own URL and with its own no-cache nonce.
    let env = |j: &Job| -> std::collections::BTreeMap<String, String> {
        j.spec
            .as_ref()
            .and_then(|s| s.template.spec.as_ref())
            .expect("pod")
            .containers[0]
            .env
            .iter()
            .flatten()
            .map(|e| (e.name.clone(), e.value.clone().unwrap_or_default()))
            .collect()
    };
    let (a, b) = (env(&jobs[0]), env(&jobs[2]));
    assert_eq!(a["GF_URL"], "http://fed.bench.svc:80/graphql");
    assert_eq!(b["GF_URL"], "http://other.bench.svc:4000/graphql");
    for key in ["GF_RATE", "GF_DURATION", "GF_THRESHOLDS"] {
        assert_eq!(a.get(key), b.get(key), "{key}");
    }
    assert_ne!(a["GF_UNIQUE"], b["GF_UNIQUE"], "two documents never repeat");
    assert_eq!(env(&jobs[0])["GF_UNIQUE"], env(&jobs[1])["GF_UNIQUE"]);

    let mut twice = lt.clone();
    let targets = twice.spec.targets.as_mut().expect("targets");
    targets[1].name = "graphfleet".into();
    assert_eq!(
        loadtest::targets(&twice),
        Err(SpecError::DuplicateTarget("graphfleet".into()))
    );
    let mut neither = lt.clone();
    neither.spec.targets = None;
    assert_eq!(
        loadtest::jobs(&neither, "i").err(),
        Some(SpecError::NoTarget)
    );
}

/// `expect`: each target's own answer, else the template's; k6 compares by hash, and by
/// data with the answer mounted from its ConfigMap; without one, GraphQL errors fail.
#[test]
fn each_target_checks_its_expected_answer() {
    let sha = |c: char| c.to_string().repeat(64);
    let mut lt = fixture();
    lt.spec.expect = Some(serde_json::from_value(json!({ "sha256": sha('a') })).expect("expect"));
    lt.spec.targets.as_mut().expect("targets")[1].expect = Some(
        serde_json::from_value(json!({
            "sha256": sha('b'),
            "configMapRef": { "name": "answers", "key": "other.json" },
        }))
        .expect("expect"),
    );
    let jobs = loadtest::jobs(&lt, DEFAULT_K6_IMAGE).expect("Jobs");
    let pod = |j: &Job| {
        j.spec
            .as_ref()
            .and_then(|s| s.template.spec.clone())
            .expect("pod")
    };
    let env = |j: &Job| -> std::collections::BTreeMap<String, String> {
        pod(j).containers[0]
            .env
            .iter()
            .flatten()
            .map(|e| (e.name.clone(), e.value.clone().unwrap_or_default()))
            .collect()
    };
    let (a, b) = (env(&jobs[0]), env(&jobs[2]));
    assert_eq!(
        (a["GF_CHECK"].as_str(), &a["GF_EXPECTED_SHA256"]),
        ("full", &sha('a'))
    );
    assert!(!a.contains_key("GF_EXPECTED_FILE"), "{a:?}");
    assert_eq!(
        (b["GF_CHECK"].as_str(), &b["GF_EXPECTED_SHA256"]),
        ("full", &sha('b'))
    );
    assert_eq!(b["GF_EXPECTED_FILE"], "/expected/expected.json");
    let volume = pod(&jobs[2])
        .volumes
        .expect("volumes")
        .into_iter()
        .find(|v| v.name == "expected")
        .and_then(|v| v.config_map)
        .expect("the answer's ConfigMap is mounted");
    assert_eq!(volume.name, "answers");
    assert_eq!(volume.items.expect("items")[0].key, "other.json");
    let mounts = pod(&jobs[2]).containers[0]
        .volume_mounts
        .clone()
        .expect("mounts");
    assert!(
        mounts
            .iter()
            .any(|m| m.name == "expected" && m.mount_path == "/expected")
    );
    assert!(
        pod(&jobs[0])
            .volumes
            .expect("volumes")
            .iter()
            .all(|v| v.name != "expected")
    );

    lt.spec.expect = None;
    lt.spec.targets.as_mut().expect("targets")[1].expect = None;
    let plain = loadtest::jobs(&lt, DEFAULT_K6_IMAGE).expect("Jobs");
    assert_eq!(env(&plain[0])["GF_CHECK"], "graphql");

    let mut gatling = fixture();
    gatling.spec.executor = graphfleet_api::LoadTestExecutor::Gatling;
    gatling.spec.scenario = Some("query".into());
    gatling.spec.targets.as_mut().expect("targets")[0].expect =
        Some(serde_json::from_value(json!({ "sha256": sha('c') })).expect("expect"));
    assert_eq!(
        loadtest::jobs(&gatling, "i").err(),
        Some(SpecError::NotForGatling("expect"))
    );
}

/// Targets run in turn: the first's Jobs first; the second's only once every k6 pod of the
/// first has ended; each target's results and verdict, and the test's once both finished.
#[test]
fn targets_run_one_after_another_with_results_and_a_verdict_each() {
    let lt = fixture();
    let none = LoadTestStatus::default();
    let fresh = run(&lt, &[], &[], &none);
    assert_eq!(fresh.status.phase, Some(LoadTestPhase::Pending));
    assert_eq!(next_target(&lt, &fresh.status, &[], &[], &now()), Some(0));
    let names: Vec<_> = fresh
        .status
        .targets
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(names, ["graphfleet", "other"]);
    assert_eq!(
        fresh.status.targets[1].message.as_deref(),
        Some("runs after target graphfleet")
    );

    // Target 0's k6 pods run paused: the synchronized start is theirs.
    let first_jobs = jobs_of(&lt, 0);
    let paused = [
        pod("graphfleet", 0, running("10.0.0.1")),
        pod("graphfleet", 1, running("10.0.0.2")),
    ];
    let waiting = run(&lt, &paused, &first_jobs, &fresh.status);
    assert_eq!(
        start_step(&lt, &paused, &waiting.status),
        StartStep::Start(vec![(0, "10.0.0.1".into()), (1, "10.0.0.2".into())])
    );
    assert_eq!(
        next_target(&lt, &waiting.status, &first_jobs, &paused, &now()),
        None
    );
    let mut resumed = waiting.status.clone();
    for i in 0..2 {
        record_resume(&lt, &mut resumed, i, MicroTime(Timestamp::now()));
    }
    assert!(resumed.segments.is_empty(), "resumes go to the target");
    let running_now = run(&lt, &paused, &first_jobs, &resumed);
    assert_eq!(running_now.status.phase, Some(LoadTestPhase::Running));
    assert_eq!(running_now.status.targets[0].phase, LoadTestPhase::Running);
    assert_eq!(running_now.status.targets[1].phase, LoadTestPhase::Pending);

    // Target 0 done: the test still runs, target 1 starts next.
    let done_first = [
        pod("graphfleet", 0, terminated(0, &summary("segment-0.json"))),
        pod("graphfleet", 1, terminated(0, &summary("segment-1.json"))),
    ];
    let between = run(&lt, &done_first, &first_jobs, &running_now.status);
    assert_eq!(between.status.phase, Some(LoadTestPhase::Running));
    let first = &between.status.targets[0];
    assert_eq!(first.phase, LoadTestPhase::Succeeded);
    assert_eq!(first.results.as_ref().map(|r| r.requests), Some(5970));
    assert_eq!(first.passed, Some(false), "p99 12.9 ms >= 10ms");
    assert!(first.completion_time.is_some());
    assert!(
        between.status.conditions.is_empty(),
        "no verdict before every target ran"
    );
    assert_eq!(
        next_target(&lt, &between.status, &first_jobs, &done_first, &now()),
        Some(1)
    );
    // The second target's synchronized start concerns its own pods only.
    let mut all_jobs = first_jobs.clone();
    all_jobs.extend(jobs_of(&lt, 1));
    let mut pods = done_first.to_vec();
    pods.extend([
        pod("other", 0, running("10.0.1.1")),
        pod("other", 1, running("10.0.1.2")),
    ]);
    let second_waits = run(&lt, &pods, &all_jobs, &between.status);
    assert_eq!(
        start_step(&lt, &pods, &second_waits.status),
        StartStep::Start(vec![(0, "10.0.1.1".into()), (1, "10.0.1.2".into())])
    );
    assert_eq!(
        second_waits.status.targets[0].completion_time, between.status.targets[0].completion_time,
        "a finished target keeps its times"
    );

    // Both done: per-target results, the test's verdict and the comparison.
    let mut clean: serde_json::Value =
        serde_json::from_str(&summary("segment-0.json")).expect("JSON");
    clean["failures"] = 0.into();
    clean["ok"] = clean["requests"].clone();
    pods.truncate(2);
    pods.extend([
        pod("other", 0, terminated(0, &clean.to_string())),
        pod("other", 1, terminated(0, &clean.to_string())),
    ]);
    let end = run(&lt, &pods, &all_jobs, &second_waits.status);
    let status = &end.status;
    assert_eq!(status.phase, Some(LoadTestPhase::Succeeded));
    assert_eq!(status.results, None, "results are per target");
    assert!(status.segments.is_empty());
    let other = &status.targets[1];
    assert_eq!(other.results.as_ref().map(|r| r.requests), Some(6000));
    assert_eq!(other.passed, Some(true), "{:?}", other.passed_message);
    let passed = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Passed")
        .expect("Passed");
    assert_eq!(
        (passed.status.as_str(), passed.reason.as_str()),
        ("False", "ThresholdsNotMet"),
        "the test passes only if every target does"
    );
    assert!(
        passed
            .message
            .starts_with("1 of 2 targets did not meet the thresholds: target graphfleet: "),
        "{}",
        passed.message
    );
    assert_eq!(next_target(&lt, status, &all_jobs, &pods, &now()), None);

    let cm = report::config_map_of(&lt, status, &end);
    let data = cm.data.expect("data");
    let md = &data[report::REPORT_KEY];
    println!("{md}");
    for part in [
        "against 2 targets in turn (`graphfleet`, `other`)",
        "## Comparison",
        "## Target `graphfleet`",
        "## Target `other`",
        "### Whole test",
        "### Segments",
    ] {
        assert!(md.contains(part), "{part:?} missing from\n{md}");
    }
    let rows: Vec<&str> = md
        .lines()
        .skip_while(|l| !l.starts_with("| Target"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect();
    assert_eq!(rows.len(), 2, "{md}");
    // Best p99 first: `other` (8.0 ms) before `graphfleet` (12.9 ms).
    assert!(rows[0].starts_with("| other "), "{md}");
    assert!(rows[0].contains("| passed "), "{md}");
    assert!(rows[1].contains("| failed (ThresholdsNotMet) "), "{md}");
}

/// With `abortOnFail`, a target whose segment broke a bound stops (its other segments' Jobs
/// are stopped), the next target still runs once those pods ended, and the test ends Aborted.
#[test]
fn an_abort_stops_its_target_and_the_next_one_still_runs() {
    let mut lt = fixture();
    lt.spec
        .thresholds
        .as_mut()
        .expect("thresholds")
        .abort_on_fail = true;
    let first_jobs = jobs_of(&lt, 0);
    let mut partial: serde_json::Value =
        serde_json::from_str(&summary("segment-1.json")).expect("JSON");
    partial["thresholds_failed"] = json!(["gf_scheduled_latency p(99)<10"]);
    let mut pods = vec![
        pod("graphfleet", 0, running("10.0.0.1")),
        pod("graphfleet", 1, terminated(99, &partial.to_string())),
    ];
    let mut previous = LoadTestStatus::default();
    previous.targets = run(&lt, &pods, &first_jobs, &previous).status.targets;
    for i in 0..2 {
        record_resume(&lt, &mut previous, i, MicroTime(Timestamp::now()));
    }
    let aborted = run(&lt, &pods, &first_jobs, &previous);
    assert_eq!(aborted.status.phase, Some(LoadTestPhase::Running));
    assert_eq!(aborted.status.targets[0].phase, LoadTestPhase::Aborted);
    assert_eq!(
        aborted.status.targets[0].passed_reason.as_deref(),
        Some("AbortedOnThreshold")
    );
    assert_eq!(
        jobs_to_stop(&aborted.status, &first_jobs, &pods),
        ["compare-graphfleet-0"]
    );
    assert_eq!(
        next_target(&lt, &aborted.status, &first_jobs, &pods, &now()),
        None,
        "segment 0's k6 still runs"
    );
    pods[0] = pod("graphfleet", 0, terminated(105, ""));
    let stopped = run(&lt, &pods, &first_jobs, &aborted.status);
    assert_eq!(
        next_target(&lt, &stopped.status, &first_jobs, &pods, &now()),
        Some(1)
    );
    // A pod that never reports its end holds the next target back for a while only.
    pods[0] = pod("graphfleet", 0, running("10.0.0.1"));
    let later = Time(
        Timestamp::now()
            .checked_add(std::time::Duration::from_secs(61))
            .expect("in range"),
    );
    assert_eq!(
        next_target(&lt, &stopped.status, &first_jobs, &pods, &later),
        Some(1)
    );

    let mut all_jobs = first_jobs.clone();
    all_jobs.extend(jobs_of(&lt, 1));
    pods[0] = pod("graphfleet", 0, terminated(105, ""));
    pods.extend([
        pod("other", 0, terminated(0, &summary("segment-0.json"))),
        pod("other", 1, terminated(0, &summary("segment-0.json"))),
    ]);
    let end = run(&lt, &pods, &all_jobs, &stopped.status);
    assert_eq!(end.status.phase, Some(LoadTestPhase::Aborted));
    assert_eq!(end.status.targets[1].phase, LoadTestPhase::Succeeded);
    let passed = end
        .status
        .conditions
        .iter()
        .find(|c| c.type_ == "Passed")
        .expect("Passed");
    assert_eq!(
        (passed.status.as_str(), passed.reason.as_str()),
        ("False", "AbortedOnThreshold")
    );
    assert!(
        passed
            .message
            .contains("target graphfleet: segment 1 broke gf_scheduled_latency p(99)<10 on its share of the load and stopped this target"),
        "{}",
        passed.message
    );
    assert!(jobs_to_stop(&end.status, &all_jobs, &pods).is_empty());
}

/// `spec.target` LoadTests keep their layout: Jobs `<name>-<i>` without a target label,
/// results at the top of status, no `status.targets`.
#[test]
fn a_single_target_keeps_the_layout_it_had() {
    let mut lt = fixture();
    lt.spec.targets = None;
    lt.spec.target =
        Some(serde_json::from_value(json!({ "url": "http://gw/graphql" })).expect("target"));
    let jobs = loadtest::jobs(&lt, DEFAULT_K6_IMAGE).expect("Jobs");
    assert_eq!(jobs[0].metadata.name.as_deref(), Some("compare-0"));
    assert!(
        !jobs[0]
            .metadata
            .labels
            .as_ref()
            .expect("labels")
            .contains_key(TARGET_LABEL)
    );
    let pods: Vec<Pod> = (0..2)
        .map(|i| {
            let mut p = pod("x", i, terminated(0, &summary("segment-0.json")));
            p.metadata
                .labels
                .as_mut()
                .expect("labels")
                .remove(TARGET_LABEL);
            p
        })
        .collect();
    let status = run(&lt, &pods, &jobs, &LoadTestStatus::default()).status;
    assert_eq!(status.phase, Some(LoadTestPhase::Succeeded));
    assert!(status.targets.is_empty());
    assert_eq!(status.results.map(|r| r.requests), Some(6000));
    assert_eq!(
        next_target(&lt, &LoadTestStatus::default(), &[], &[], &now()),
        None
    );
}
