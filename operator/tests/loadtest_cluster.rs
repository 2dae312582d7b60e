//! The LoadTest controller against the local control plane (kwok nodes, real scheduler, Job
//! and garbage-collector controllers). No container runs: kwok completes Job pods on its nodes
//! with an empty termination message, and where a test needs results it plays the kubelet by
//! writing a terminated container status with a k6 summary to an unscheduled pod.

mod common;

use std::time::{Duration, Instant};

use common::{Operator, cluster_client, set_pod_status, summary, wait_for};
use graphfleet_api::{LoadTest, LoadTestPhase};
use graphfleet_operator::resources::loadtest::{LOADTEST_LABEL, SEGMENT_LABEL};
use graphfleet_testkit::TestNamespace;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::{Api, Client, ResourceExt};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(60);

fn loadtest(name: &str, spec: serde_json::Value) -> LoadTest {
    serde_json::from_value(json!({
        "apiVersion": "graphfleet.dev/v1alpha1",
        "kind": "LoadTest",
        "metadata": { "name": name },
        "spec": spec,
    }))
    .expect("valid LoadTest")
}

async fn wait_phase(api: &Api<LoadTest>, name: &str, phase: LoadTestPhase) -> LoadTest {
    wait_for(&format!("LoadTest {name} {phase:?}"), WAIT, || async {
        let lt = api.get(name).await.ok()?;
        (lt.status.as_ref()?.phase == Some(phase)).then_some(lt)
    })
    .await
}

async fn pods_of(client: &Client, ns: &str, name: &str, count: usize) -> Vec<Pod> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let params = ListParams::default().labels(&format!("{LOADTEST_LABEL}={name}"));
    wait_for(&format!("{count} pods of {name}"), WAIT, || async {
        let list = pods.list(&params).await.ok()?.items;
        (list.len() == count).then_some(list)
    })
    .await
}

fn env_of(job: &Job) -> Vec<(String, String)> {
    job.spec
        .as_ref()
        .expect("job spec")
        .template
        .spec
        .as_ref()
        .expect("pod spec")
        .containers[0]
        .env
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|e| (e.name, e.value.unwrap_or_default()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn segments_run_on_the_client_pool_and_a_silent_k6_fails_the_test() {
    let client = cluster_client().await;
    let ns = TestNamespace::create(&client, "lt-pool").await;
    let operator = Operator::start(&client, ns.name());
    let api: Api<LoadTest> = Api::namespaced(client.clone(), ns.name());
    let started = Instant::now();
    api.create(
        &PostParams::default(),
        &loadtest(
            "fed",
            json!({
                "target": { "gatewayRef": { "name": "shop" } },
                "scenario": "query", "rate": 600, "duration": "30s", "vus": 20, "parallelism": 3,
                "placement": graphfleet_testkit::pool_placement("client"),
            }),
        ),
    )
    .await
    .expect("create LoadTest");

    let jobs: Api<Job> = Api::namespaced(client.clone(), ns.name());
    let mut segments = Vec::new();
    for i in 0..3 {
        let name = format!("fed-{i}");
        let job = wait_for(&format!("job {name}"), WAIT, || async {
            jobs.get_opt(&name).await.ok().flatten()
        })
        .await;
        let pod_spec = job
            .spec
            .as_ref()
            .expect("spec")
            .template
            .spec
            .clone()
            .expect("pod spec");
        assert_eq!(
            pod_spec.node_selector.expect("node selector")["graphfleet.dev/pool"],
            "client"
        );
        let toleration = &pod_spec.tolerations.expect("tolerations")[0];
        assert_eq!(toleration.value.as_deref(), Some("client"));
        let args = pod_spec.containers[0].args.clone().expect("args");
        segments.push(args[4].clone());
        assert_eq!(args[6], "0,1/3,2/3,1");
        let env = env_of(&job);
        let url = ns.name();
        assert!(env.contains(&(
            "GF_URL".to_owned(),
            format!("http://shop.{url}.svc:80/graphql")
        )));
        assert!(env.contains(&("GF_RATE".to_owned(), "600".to_owned())));
        assert!(env.contains(&("GF_DURATION".to_owned(), "30s".to_owned())));
        assert!(env.contains(&("GF_VUS".to_owned(), "20".to_owned())));
        assert!(env.contains(&("GF_SUMMARY".to_owned(), "/dev/termination-log".to_owned())));
    }
    assert_eq!(segments, ["0:1/3", "1/3:2/3", "2/3:1"]);
    println!(
        "MEASURED LoadTest → 3 Jobs: {:.0} ms",
        started.elapsed().as_secs_f64() * 1e3
    );
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns.name());
    let cm = cms.get("fed-k6").await.expect("script ConfigMap");
    assert!(cm.data.expect("data")["payload.json"].contains("TestQuery"));

    // kwok schedules the pods onto the client node and completes them without a message.
    let pods = pods_of(&client, ns.name(), "fed", 3).await;
    let failed = wait_phase(&api, "fed", LoadTestPhase::Failed).await;
    let pods_now: Vec<Pod> = {
        let papi: Api<Pod> = Api::namespaced(client.clone(), ns.name());
        let mut out = Vec::new();
        for p in &pods {
            out.push(papi.get(&p.name_any()).await.expect("pod"));
        }
        out
    };
    for pod in &pods_now {
        let node = pod.spec.as_ref().and_then(|s| s.node_name.clone());
        assert_eq!(node.as_deref(), Some("client-0"), "{}", pod.name_any());
    }
    let status = failed.status.expect("status");
    let message = status.message.expect("message");
    assert!(message.contains("ended without a k6 summary"), "{message}");
    assert_eq!(status.results, None);
    assert!(status.completion_time.is_some());

    operator.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_of_every_segment_are_aggregated_and_objects_collected_on_delete() {
    let client = cluster_client().await;
    let ns = TestNamespace::create(&client, "lt-results").await;
    let operator = Operator::start(&client, ns.name());
    let api: Api<LoadTest> = Api::namespaced(client.clone(), ns.name());
    // No node carries this pool, so the pods stay unscheduled and kwok leaves them alone.
    api.create(
        &PostParams::default(),
        &loadtest(
            "run",
            json!({
                "target": { "url": "http://gateway.example/graphql" },
                "scenario": "query", "rate": 300, "duration": "30s", "parallelism": 2,
                // kwok runs no k6 to resume; this test is about the results.
                "synchronizedStart": false,
                "placement": {
                    "nodeSelector": { "graphfleet.dev/pool": "nowhere" },
                    "tolerations": [{ "operator": "Exists" }],
                },
            }),
        ),
    )
    .await
    .expect("create LoadTest");
    let pending = wait_phase(&api, "run", LoadTestPhase::Pending).await;
    assert_eq!(pending.status.expect("status").segments.len(), 2);

    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let listed = pods_of(&client, ns.name(), "run", 2).await;
    let pod_of = |i: &str| {
        listed
            .iter()
            .find(|p| p.labels().get(SEGMENT_LABEL).map(String::as_str) == Some(i))
            .expect("a pod per segment")
            .name_any()
    };
    let (first, second) = (pod_of("0"), pod_of("1"));
    let selector = listed[0].spec.as_ref().expect("spec").node_selector.clone();
    assert_eq!(
        selector.expect("selector")["graphfleet.dev/pool"],
        "nowhere",
        "placement overrides the client pool"
    );

    let running = json!({ "running": { "startedAt": "2026-01-01T00:00:00Z" } });
    set_pod_status(&pods, &first, "Running", running.clone()).await;
    let lt = wait_phase(&api, "run", LoadTestPhase::Running).await;
    assert!(lt.status.expect("status").start_time.is_some());

    let done = |file: &str| {
        json!({ "terminated": {
            "exitCode": 0, "reason": "Completed", "message": summary(file),
            "startedAt": "2026-01-01T00:00:00Z", "finishedAt": "2026-01-01T00:00:31Z",
        }})
    };
    set_pod_status(&pods, &first, "Succeeded", done("segment-0.json")).await;
    // One segment done is not the end of the test.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let lt = api.get("run").await.expect("LoadTest");
    assert_eq!(
        lt.status.as_ref().and_then(|s| s.phase),
        Some(LoadTestPhase::Running)
    );
    set_pod_status(&pods, &second, "Succeeded", done("segment-1.json")).await;
    let lt = wait_phase(&api, "run", LoadTestPhase::Succeeded).await;
    let status = lt.status.expect("status");
    let results = status.results.expect("aggregate results");
    assert_eq!((results.requests, results.failures), (5970, 2));
    assert_eq!(results.dropped_iterations, 30);
    assert_eq!(results.achieved_rate, 199.0);
    assert_eq!(results.latency_ms.p99, 12.9);
    let per_segment: Vec<_> = status
        .segments
        .iter()
        .map(|s| (s.segment.as_str(), s.results.as_ref().map(|r| r.requests)))
        .collect();
    assert_eq!(per_segment, [("0:1/2", Some(3000)), ("1/2:1", Some(2970))]);

    // Deleting the LoadTest garbage-collects its Jobs and ConfigMap.
    api.delete("run", &DeleteParams::background())
        .await
        .expect("delete LoadTest");
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns.name());
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns.name());
    wait_for("jobs and ConfigMap collected", WAIT, || async {
        let jobs_left = jobs.list(&ListParams::default()).await.ok()?.items.len();
        let cm_left = cms.get_opt("run-k6").await.ok()?.is_some();
        (jobs_left == 0 && !cm_left).then_some(())
    })
    .await;
    operator.stop().await;
}

/// `thresholds.abortOnFail`: a segment whose k6 stopped on a threshold (exit code 99) ends
/// the test Aborted, and the operator stops the other segment's Job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_segment_aborting_on_a_threshold_stops_the_others() {
    let client = cluster_client().await;
    let ns = TestNamespace::create(&client, "lt-abort").await;
    let operator = Operator::start(&client, ns.name());
    let api: Api<LoadTest> = Api::namespaced(client.clone(), ns.name());
    api.create(
        &PostParams::default(),
        &loadtest(
            "abort",
            json!({
                "target": { "url": "http://gateway.example/graphql" },
                "scenario": "query", "rate": 300, "duration": "5m", "parallelism": 2,
                "thresholds": { "maxErrorPercent": 0.1, "abortOnFail": true },
                // Unscheduled pods would fail a synchronized test at once; kwok runs no k6
                // to resume anyway, and this test is about the abort.
                "synchronizedStart": false,
                "placement": {
                    "nodeSelector": { "graphfleet.dev/pool": "nowhere" },
                    "tolerations": [{ "operator": "Exists" }],
                },
            }),
        ),
    )
    .await
    .expect("create LoadTest");
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let listed = pods_of(&client, ns.name(), "abort", 2).await;
    let pod_of = |i: &str| {
        listed
            .iter()
            .find(|p| p.labels().get(SEGMENT_LABEL).map(String::as_str) == Some(i))
            .expect("a pod per segment")
            .name_any()
    };
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns.name());
    let job = jobs.get("abort-1").await.expect("job");
    let thresholds = env_of(&job)
        .into_iter()
        .find(|(k, _)| k == "GF_THRESHOLDS")
        .map(|(_, v)| v)
        .expect("GF_THRESHOLDS");
    assert!(thresholds.contains("rate<0.001"), "{thresholds}");

    let running = json!({ "running": { "startedAt": "2026-01-01T00:00:00Z" } });
    set_pod_status(&pods, &pod_of("0"), "Running", running).await;
    let mut partial: serde_json::Value =
        serde_json::from_str(&summary("segment-1.json")).expect("JSON");
    partial["thresholds_failed"] = json!(["gf_error_rate rate<0.001"]);
    let aborted = json!({ "terminated": {
        "exitCode": 99, "reason": "Error", "message": partial.to_string(),
        "startedAt": "2026-01-01T00:00:00Z", "finishedAt": "2026-01-01T00:00:12Z",
    }});
    set_pod_status(&pods, &pod_of("1"), "Failed", aborted).await;
    let lt = wait_phase(&api, "abort", LoadTestPhase::Aborted).await;
    let status = lt.status.expect("status");
    let passed = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Passed")
        .expect("Passed condition");
    assert_eq!(
        (passed.status.as_str(), passed.reason.as_str()),
        ("False", "AbortedOnThreshold")
    );
    assert!(
        passed.message.contains("gf_error_rate rate<0.001"),
        "{}",
        passed.message
    );
    let stopped = jobs.get("abort-0").await.expect("job");
    assert_eq!(
        stopped.spec.and_then(|s| s.active_deadline_seconds),
        Some(1),
        "the running segment's Job is stopped"
    );
    operator.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_specs_are_rejected_or_failed_with_a_reason() {
    let client = cluster_client().await;
    let ns = TestNamespace::create(&client, "lt-bad").await;
    let api: Api<LoadTest> = Api::namespaced(client.clone(), ns.name());
    let base = json!({ "target": { "url": "http://gw/graphql" }, "scenario": "query", "rate": 10, "duration": "10s" });
    let with = |patch: serde_json::Value| {
        let mut spec = base.clone();
        for (k, v) in patch.as_object().expect("object") {
            spec[k] = v.clone();
        }
        loadtest("bad", spec)
    };
    let cases = [
        (json!({ "rate": 0 }), "spec.rate"),
        (json!({ "parallelism": 101 }), "spec.parallelism"),
        (
            json!({ "duration": "ten seconds" }),
            "duration must look like",
        ),
        (
            json!({ "target": { "url": "http://a/graphql", "gatewayRef": { "name": "g" } } }),
            "exactly one of gatewayRef or url",
        ),
        (
            json!({ "target": { "url": "gw:4000" } }),
            "absolute http://",
        ),
        (json!({ "duration": "1.5" }), "duration must look like"),
        (json!({ "duration": "0s" }), "duration must be above 0"),
        (json!({ "thresholds": {} }), "thresholds need at least one"),
        (
            json!({ "thresholds": { "latency": { "p99": "fast" } } }),
            "p99 must look like",
        ),
        (
            json!({ "thresholds": { "maxErrorPercent": 101 } }),
            "spec.thresholds.maxErrorPercent",
        ),
        (
            json!({ "targets": [{ "name": "a", "url": "http://a/graphql" }] }),
            "set exactly one of target or targets",
        ),
        (
            json!({ "target": null, "targets": [
                { "name": "a", "url": "http://a/graphql" },
                { "name": "a", "gatewayRef": { "name": "g" } },
            ] }),
            "target names must be unique",
        ),
        (
            json!({ "target": null, "targets": [{ "name": "Not_A_Label", "url": "http://a/graphql" }] }),
            "spec.targets[0].name",
        ),
        (
            json!({ "target": null, "targets": [{ "name": "a" }] }),
            "each of targets needs exactly one of gatewayRef or url",
        ),
        (json!({ "target": null, "targets": [] }), "spec.targets"),
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

    // Decimal durations and the thresholds pass the CRD's rules (a dry run stores nothing).
    let good = with(json!({
        "duration": "1m0.5s",
        "thresholds": { "latency": { "p99": "50ms", "max": "1.5s" }, "maxErrorPercent": 0.1, "minAchievedRatePercent": 99 },
    }));
    api.create(
        &PostParams {
            dry_run: true,
            ..PostParams::default()
        },
        &good,
    )
    .await
    .expect("a valid spec is accepted");

    // What the schema cannot know: an unknown built-in scenario fails with the list of names.
    let operator = Operator::start(&client, ns.name());
    api.create(&PostParams::default(), &with(json!({ "scenario": "nope" })))
        .await
        .expect("accepted by the API server");
    let lt = wait_phase(&api, "bad", LoadTestPhase::Failed).await;
    let message = lt
        .status
        .as_ref()
        .and_then(|s| s.message.clone())
        .expect("message");
    assert!(message.contains("unknown scenario \"nope\""), "{message}");
    let valid = lt
        .status
        .iter()
        .flat_map(|s| &s.conditions)
        .find(|c| c.type_ == "SpecValid")
        .expect("a SpecValid condition");
    assert_eq!(
        (valid.status.as_str(), valid.reason.as_str()),
        ("False", "UnknownScenario")
    );
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns.name());
    assert!(
        jobs.list(&ListParams::default())
            .await
            .expect("jobs")
            .items
            .is_empty()
    );
    operator.stop().await;
}

/// `spec.targets` on the API server: the second target's Job is created only once the first
/// target's k6 pod has ended; each target gets its results and the report compares them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn targets_run_one_after_another() {
    let client = cluster_client().await;
    let ns = TestNamespace::create(&client, "lt-targets").await;
    let operator = Operator::start(&client, ns.name());
    let api: Api<LoadTest> = Api::namespaced(client.clone(), ns.name());
    api.create(
        &PostParams::default(),
        &loadtest(
            "cmp",
            json!({
                "targets": [
                    { "name": "first", "gatewayRef": { "name": "shop" } },
                    { "name": "second", "url": "http://gateway.example/graphql" },
                ],
                "scenario": "query", "rate": 300, "duration": "30s",
                // kwok runs no k6 to resume; this test is about the order of the targets.
                "synchronizedStart": false,
                "thresholds": { "maxErrorPercent": 0.1 },
                "placement": {
                    "nodeSelector": { "graphfleet.dev/pool": "nowhere" },
                    "tolerations": [{ "operator": "Exists" }],
                },
            }),
        ),
    )
    .await
    .expect("create LoadTest");
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns.name());
    let first = wait_for("job cmp-first-0", WAIT, || async {
        jobs.get_opt("cmp-first-0").await.ok().flatten()
    })
    .await;
    let env = env_of(&first);
    assert!(env.contains(&(
        "GF_URL".to_owned(),
        format!("http://shop.{}.svc:80/graphql", ns.name())
    )));
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let listed = pods_of(&client, ns.name(), "cmp", 1).await;
    let first_pod = listed[0].name_any();
    assert_eq!(
        listed[0]
            .labels()
            .get("graphfleet.dev/target")
            .map(String::as_str),
        Some("first")
    );
    let running = json!({ "running": { "startedAt": "2026-01-01T00:00:00Z" } });
    set_pod_status(&pods, &first_pod, "Running", running.clone()).await;
    let lt = wait_phase(&api, "cmp", LoadTestPhase::Running).await;
    let targets = lt.status.expect("status").targets;
    assert_eq!(targets[0].phase, LoadTestPhase::Running);
    assert_eq!(targets[1].phase, LoadTestPhase::Pending);
    // While the first target runs, the second has no Job.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(jobs.get_opt("cmp-second-0").await.expect("get").is_none());

    let done = |file: &str| {
        json!({ "terminated": {
            "exitCode": 0, "reason": "Completed", "message": summary(file),
            "startedAt": "2026-01-01T00:00:00Z", "finishedAt": "2026-01-01T00:00:31Z",
        }})
    };
    let ended = Instant::now();
    set_pod_status(&pods, &first_pod, "Succeeded", done("segment-0.json")).await;
    let second = wait_for("job cmp-second-0", WAIT, || async {
        jobs.get_opt("cmp-second-0").await.ok().flatten()
    })
    .await;
    println!(
        "MEASURED first target's k6 ended → second target's Job: {:.0} ms",
        ended.elapsed().as_secs_f64() * 1e3
    );
    assert!(env_of(&second).contains(&(
        "GF_URL".to_owned(),
        "http://gateway.example/graphql".to_owned()
    )));
    let listed = pods_of(&client, ns.name(), "cmp", 2).await;
    let second_pod = listed
        .iter()
        .find(|p| p.labels().get("graphfleet.dev/target").map(String::as_str) == Some("second"))
        .expect("the second target's pod")
        .name_any();
    set_pod_status(&pods, &second_pod, "Succeeded", done("segment-1.json")).await;
    let lt = wait_phase(&api, "cmp", LoadTestPhase::Succeeded).await;
    let status = lt.status.expect("status");
    let per_target: Vec<_> = status
        .targets
        .iter()
        .map(|t| {
            (
                t.name.as_str(),
                t.results.as_ref().map(|r| r.requests),
                t.passed,
            )
        })
        .collect();
    assert_eq!(
        per_target,
        [
            ("first", Some(3000), Some(true)),
            ("second", Some(2970), Some(true))
        ]
    );
    let passed = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Passed")
        .expect("Passed condition");
    assert_eq!(
        (passed.status.as_str(), passed.reason.as_str()),
        ("True", "ThresholdsMet")
    );
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns.name());
    let report = cms.get("cmp-report").await.expect("report ConfigMap");
    let md = report.data.expect("data")["REPORT.md"].clone();
    assert!(
        md.contains("## Comparison") && md.contains("## Target `second`"),
        "{md}"
    );
    operator.stop().await;
}
