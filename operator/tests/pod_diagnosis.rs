//! What the operator says about faults on real nodes, from the pods' own state: gateway pods
//! that are not Ready (`fixtures/gateway-pods/`: a Deployment and its pods) and k6 segments
//! that ended badly or never ended (`fixtures/k6-segments/`: the time of observation, a
//! LoadTest, its Jobs and pods). Most fixtures were captured on the real-node cluster
//! (`kubectl get -o json`, trimmed to what the operator reads); each file says how it was
//! made. No cluster needed.

use std::path::PathBuf;

use graphfleet_api::{LoadTest, LoadTestPhase, LoadTestStatus};
use graphfleet_operator::diagnose::{self, Problem, Rollout};
use graphfleet_operator::resources::gateway::GATEWAY_CONTAINER;
use graphfleet_operator::resources::loadtest;
use graphfleet_operator::status::{self, gateway::CompositionOutcome, gateway::Observed};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use serde::Deserialize;
use serde_json::{Value, json};

/// Every fixture in `fixtures/<dir>/` as (stem, its YAML documents), sorted by name.
fn fixtures(dir: &str) -> Vec<(String, Vec<Value>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(dir);
    let mut out: Vec<_> = std::fs::read_dir(&dir)
        .expect("fixture dir exists")
        .map(|entry| entry.expect("readable dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("readable fixture");
            let docs = serde_yaml_ng::Deserializer::from_str(&text)
                .map(|doc| Value::deserialize(doc).expect("fixture documents are YAML"))
                .collect();
            let stem = path
                .file_stem()
                .expect("file stem")
                .to_string_lossy()
                .into_owned();
            (stem, docs)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(!out.is_empty(), "no fixtures in {}", dir.display());
    out
}

fn of_kind<T: serde::de::DeserializeOwned>(docs: &[Value], kind: &str) -> Vec<T> {
    docs.iter()
        .filter(|d| d["kind"] == kind)
        .map(|d| serde_json::from_value(d.clone()).expect("fixture object deserializes"))
        .collect()
}

struct Gateway {
    deployment: Deployment,
    pods: Vec<Pod>,
}

fn gateway(docs: &[Value]) -> Gateway {
    let mut deployments: Vec<Deployment> = of_kind(docs, "Deployment");
    assert_eq!(deployments.len(), 1, "one Deployment per fixture");
    Gateway {
        deployment: deployments.remove(0),
        pods: of_kind(docs, "Pod"),
    }
}

fn gateway_problem(name: &str) -> Option<Problem> {
    let (_, docs) = fixtures("gateway-pods")
        .into_iter()
        .find(|(n, _)| n == name)
        .expect("fixture exists");
    let gw = gateway(&docs);
    diagnose::rollout_problem(&gw.deployment, &gw.pods, GATEWAY_CONTAINER)
}

#[test]
fn gateway_pod_problems_match_snapshots() {
    for (name, docs) in fixtures("gateway-pods") {
        let gw = gateway(&docs);
        let problem = diagnose::rollout_problem(&gw.deployment, &gw.pods, GATEWAY_CONTAINER);
        let shown = problem.map(|p| json!({ "reason": p.reason, "message": p.message }));
        insta::assert_yaml_snapshot!(format!("gateway-{name}"), shown);
    }
}

fn assert_says(problem: Option<Problem>, reason: &str, parts: &[&str]) {
    let problem = problem.unwrap_or_else(|| panic!("expected {reason}, got no problem"));
    assert_eq!(problem.reason, reason, "{}", problem.message);
    for part in parts {
        assert!(
            problem.message.contains(part),
            "{reason}: {part:?} missing from {:?}",
            problem.message
        );
    }
}

#[test]
fn a_gateway_image_missing_on_the_node_is_named_with_the_node() {
    assert_says(
        gateway_problem("image-not-on-node"),
        "ImagePullFailed",
        &[
            "pod gw-6cf7cbf9db-z6mjg on node router-0",
            "image ghcr.io/graphfleet/graphfleet-gateway:0.1.0 is not present on the node",
            "ImagePullBackOff",
            "network is unreachable",
        ],
    );
    assert_says(
        gateway_problem("never-pull"),
        "ImagePullFailed",
        &["router-0", "pull policy is Never", "ErrImageNeverPull"],
    );
}

#[test]
fn a_crashing_gateway_says_how_it_ended_and_where_its_log_is() {
    assert_says(
        gateway_problem("crash-loop"),
        "ContainerCrashing",
        &[
            "pod gw-75778b5b6f-npzps on node router-0",
            "exited with code 255",
            "CrashLoopBackOff, 2 restarts",
            "unknown flag: --supergraph",
            "kubectl -n faults-exp logs gw-75778b5b6f-npzps -c gateway --previous",
        ],
    );
    assert_says(
        gateway_problem("oom-killed"),
        "ContainerCrashing",
        &["was OOMKilled", "exit code 137", "4 restarts", "--previous"],
    );
    assert_says(
        gateway_problem("start-error"),
        "ContainerCrashing",
        &[
            "exited with code 128 (StartError)",
            "failed to start containerd task",
        ],
    );
}

#[test]
fn unschedulable_and_unready_gateway_pods_say_so() {
    assert_says(
        gateway_problem("unschedulable"),
        "Unschedulable",
        &[
            "cannot be scheduled",
            "1 Insufficient cpu",
            "untolerated taint",
        ],
    );
    assert_says(
        gateway_problem("not-ready"),
        "ContainerNotReady",
        &[
            "running but not ready",
            "readiness probe GET /health/ready failing",
            "kubectl -n faults-exp logs gw-6cf7cbf9db-nv46d -c gateway",
        ],
    );
    assert_eq!(gateway_problem("healthy"), None);
}

#[test]
fn the_ready_condition_carries_the_pod_problem() {
    let (_, docs) = fixtures("gateway-pods")
        .into_iter()
        .find(|(n, _)| n == "image-not-on-node")
        .expect("fixture exists");
    let gw = gateway(&docs);
    let outcome = CompositionOutcome::Composed {
        hash: "4531c76e9a2532d4".to_owned(),
        subgraphs: vec!["accounts".to_owned()],
    };
    let observed = Observed {
        generation: Some(1),
        applied: true,
        outcome: &outcome,
        served_hash: Some("4531c76e9a2532d4".to_owned()),
        revisions: Vec::new(),
        serving: Default::default(),
        canary: None,
        rollout: Some(Rollout::of(&gw.deployment)),
        selector: "app=gw".to_owned(),
        pods: diagnose::rollout_problem(&gw.deployment, &gw.pods, GATEWAY_CONTAINER),
        refused: None,
    };
    let now = Time("2026-11-23T22:32:00Z".parse().expect("a valid timestamp"));
    let s = status::gateway::gateway_status(None, &observed, &now);
    let condition = |t: &str| {
        s.conditions
            .iter()
            .find(|c| c.type_ == t)
            .expect("condition present")
    };
    let ready = condition(status::READY);
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "ImagePullFailed")
    );
    assert!(
        ready
            .message
            .starts_with("pod gw-6cf7cbf9db-z6mjg on node router-0: image")
            && ready
                .message
                .ends_with("; 1/1 replicas updated, 0 available"),
        "{}",
        ready.message
    );
    let degraded = condition(status::DEGRADED);
    assert_eq!(degraded.reason, "Unavailable");
    assert!(
        degraded
            .message
            .starts_with("no gateway replica is available: pod gw-6cf7cbf9db-z6mjg"),
        "{}",
        degraded.message
    );
}

/// What the operator makes of one k6 fixture: the status, the Jobs it stops, the
/// placements it records.
struct Segments {
    status: LoadTestStatus,
    stop: Vec<String>,
    record: Vec<Value>,
}

fn segments(docs: &[Value]) -> Segments {
    let now: Time = serde_json::from_value(docs[0]["now"].clone()).expect("first doc has `now`");
    let mut lt: LoadTest = of_kind(docs, "LoadTest")
        .into_iter()
        .next()
        .expect("a LoadTest");
    // Recorded from k6 pods that started on their own, before synchronized starts.
    lt.spec.synchronized_start.get_or_insert(false);
    let jobs: Vec<Job> = of_kind(docs, "Job");
    let pods: Vec<Pod> = of_kind(docs, "Pod");
    let status =
        status::loadtest::loadtest_status(&lt, &pods, &jobs, &LoadTestStatus::default(), &now);
    let stop = status::loadtest::jobs_to_stop(&status, &jobs, &pods);
    let record = jobs
        .iter()
        .filter_map(|job| {
            let segment = job.labels().get(loadtest::SEGMENT_LABEL);
            let of_job: Vec<&Pod> = pods
                .iter()
                .filter(|p| p.labels().get(loadtest::SEGMENT_LABEL) == segment)
                .collect();
            let annotations = loadtest::placement_to_record(job, &of_job)?;
            Some(json!({ "job": job.name_any(), "annotations": annotations }))
        })
        .collect();
    Segments {
        status,
        stop,
        record,
    }
}

fn k6(name: &str) -> Segments {
    let (_, docs) = fixtures("k6-segments")
        .into_iter()
        .find(|(n, _)| n == name)
        .expect("fixture exists");
    segments(&docs)
}

#[test]
fn k6_segment_outcomes_match_snapshots() {
    for (name, docs) in fixtures("k6-segments") {
        let s = segments(&docs);
        let shown = json!({
            "status": s.status,
            "jobsToStop": s.stop,
            "placementsToRecord": s.record,
        });
        insta::assert_yaml_snapshot!(format!("k6-{name}"), shown);
    }
}

fn assert_failed_with(s: &Segments, parts: &[&str]) {
    assert_eq!(
        s.status.phase,
        Some(LoadTestPhase::Failed),
        "{:?}",
        s.status
    );
    let message = s.status.message.as_deref().expect("a message");
    for part in parts {
        assert!(message.contains(part), "{part:?} missing from {message:?}");
    }
    assert!(s.status.completion_time.is_some());
    assert_eq!(s.status.results, None);
}

#[test]
fn a_killed_k6_fails_naming_job_pod_node_signal_and_log() {
    let killed = k6("killed");
    assert_failed_with(
        &killed,
        &[
            "k6 pod kill2-0-f27qt (job kill2-0) on node client-0",
            "was killed by SIGKILL (exit code 137)",
            "ended without a k6 summary",
            "log: kubectl -n faults-exp logs job/kill2-0",
        ],
    );
    // Its k6 has ended: stopping the Job would delete the pod and its log.
    assert!(killed.stop.is_empty(), "{:?}", killed.stop);
    assert_failed_with(&k6("oom-killed"), &["was OOMKilled", "client-0"]);
}

#[test]
fn a_deleted_k6_pod_fails_the_segment_whether_or_not_it_is_still_there() {
    assert_failed_with(
        &k6("deleted-terminating"),
        &[
            "k6 pod kill2-0-f27qt (job kill2-0) on node client-0",
            "exited with code 105 (k6: aborted by a signal) after its pod was deleted",
            "partial k6 summary (57 requests) is not used",
        ],
    );
    assert_failed_with(
        &k6("deleted-gone"),
        &[
            "k6 pod force-0-5sm56 (job force-0) on node client-0 is gone",
            "Container k6 for pod faults-exp/force-0-5sm56 failed with exit code 105",
            "ended without a k6 summary",
        ],
    );
}

#[test]
fn a_k6_image_missing_on_the_node_fails_at_once_and_stops_the_job() {
    let s = k6("image-missing");
    assert_failed_with(
        &s,
        &[
            "k6 pod noimage2-0-99bf9 (job noimage2-0) on node client-0 cannot start",
            "image ghcr.io/graphfleet/graphfleet-k6:0.1.0 is not present on the node",
            "ErrImagePull",
        ],
    );
    assert_eq!(s.stop, ["noimage2-0"]);
}

#[test]
fn a_segment_never_stays_running_past_duration_plus_margin() {
    let running = k6("running");
    assert_eq!(running.status.phase, Some(LoadTestPhase::Running));
    assert_eq!(running.status.message, None);
    assert_eq!(running.record.len(), 1, "the pod and node are recorded");
    assert!(running.stop.is_empty(), "a running test is not stopped");
    let overdue = k6("overdue-running");
    assert_failed_with(
        &overdue,
        &[
            "did not finish within 4m (duration 2m + 2m for start-up and summary)",
            "k6 pod kill2-0-f27qt (job kill2-0) on node client-0 is still Running",
        ],
    );
    assert_eq!(overdue.stop, ["kill2-0"]);
}

#[test]
fn a_segment_the_scheduler_cannot_place_fails_at_once_with_its_words() {
    let s = k6("unschedulable");
    assert_failed_with(&s, &["cannot be scheduled", "1 Insufficient cpu"]);
    let scheduled = s
        .status
        .conditions
        .iter()
        .find(|c| c.type_ == "Scheduled")
        .expect("a Scheduled condition");
    assert_eq!(
        (scheduled.status.as_str(), scheduled.reason.as_str()),
        ("False", "Unschedulable")
    );
    assert!(
        scheduled.message.contains("Insufficient cpu"),
        "{scheduled:?}"
    );
    // Preemption under way: the pod gets its node soon, so it waits.
    let preempting = k6("unschedulable-preempting");
    assert_eq!(preempting.status.phase, Some(LoadTestPhase::Pending));
    let message = preempting.status.message.as_deref().unwrap_or_default();
    assert!(message.contains("preempts pods for it"), "{message}");
    // Without a synchronized start no segment waits paused for it: it waits for a node.
    let waiting = k6("unschedulable-unsynchronized");
    assert_eq!(waiting.status.phase, Some(LoadTestPhase::Pending));
    assert!(
        waiting
            .status
            .conditions
            .iter()
            .any(|c| c.type_ == "Scheduled" && c.status == "False"),
        "{:?}",
        waiting.status.conditions
    );
}

#[test]
fn one_failed_segment_fails_the_test_and_stops_the_others() {
    let s = k6("parallel-one-killed");
    assert_failed_with(&s, &["segment 0: k6 pod kill2-0-f27qt", "SIGKILL"]);
    let phases: Vec<_> = s
        .status
        .segments
        .iter()
        .map(|seg| (seg.phase, seg.message.clone().unwrap_or_default()))
        .collect();
    assert_eq!(phases[1].0, LoadTestPhase::Failed);
    assert_eq!(phases[1].1, "stopped because segment 0 failed");
    assert_eq!(s.stop, ["kill2-1"]);
}

#[test]
fn a_segment_is_never_rerun() {
    assert_failed_with(
        &k6("rerun"),
        &[
            "job kill2-0 started k6 2 times (pods kill2-0-b7xq9, kill2-0-f27qt)",
            "never rerun",
        ],
    );
    assert_eq!(k6("rerun").stop, ["kill2-0"], "the second k6 is stopped");
}
