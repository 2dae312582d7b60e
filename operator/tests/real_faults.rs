//! Faults on the real-node cluster (`graphfleet_testkit::real_cluster()`: real kubelets and
//! containerd, no route out) and the status the operator (in-process, scoped to each test's
//! own namespace) gives them: a gateway image not on router-0, a gateway that crashes, a k6
//! pod SIGKILLed mid-run, a k6 pod deleted mid-run. Every wait is bounded.
//!
//! The image fault uses a tag no node has rather than removing the shared image from
//! router-0: other tests on this cluster need that image; the kubelet's path (not present,
//! pull fails) is the same.

mod common;

use std::time::{Duration, Instant};

use common::{Operator, fixture_sdl, real_cluster_client, wait_for};
use graphfleet_api::{GraphGateway, LoadTest, LoadTestPhase, Subgraph};
use graphfleet_operator::resources::loadtest::{
    DEFAULT_K6_IMAGE, LOADTEST_LABEL, NODE_ANNOTATION, POD_ANNOTATION,
};
use graphfleet_testkit::{TestNamespace, pool_placement};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::{Api, Client, ResourceExt};
use serde_json::json;

/// Pods on real nodes start in seconds; a crash loop needs a restart or two.
const WAIT: Duration = Duration::from_secs(90);
/// Every API poll of these tests waits this long (the real cluster is shared).
const POLL: Duration = Duration::from_millis(250);

async fn poll<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    wait_for(what, timeout, || {
        let next = check();
        async move {
            let found = next.await;
            if found.is_none() {
                tokio::time::sleep(POLL).await;
            }
            found
        }
    })
    .await
}

async fn create<K>(api: &Api<K>, value: serde_json::Value) -> K
where
    K: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let object: K = serde_json::from_value(value).expect("valid object");
    api.create(&PostParams::default(), &object)
        .await
        .expect("create object")
}

/// A Subgraph with an inline SDL and a one-replica GraphGateway on the router pool running
/// `image`, with requests small enough to share router-0 with other tests.
async fn gateway_running(client: &Client, ns: &str, image: &str) {
    let subgraphs: Api<Subgraph> = Api::namespaced(client.clone(), ns);
    create(
        &subgraphs,
        json!({
            "apiVersion": "graphfleet.dev/v1alpha1", "kind": "Subgraph",
            "metadata": { "name": "accounts" },
            "spec": { "url": "http://accounts:4001/graphql", "sdl": fixture_sdl("accounts") },
        }),
    )
    .await;
    let gateways: Api<GraphGateway> = Api::namespaced(client.clone(), ns);
    let router = pool_placement("router");
    create(
        &gateways,
        json!({
            "apiVersion": "graphfleet.dev/v1alpha1", "kind": "GraphGateway",
            "metadata": { "name": "gw" },
            "spec": {
                "replicas": 1,
                "nodeSelector": router["nodeSelector"],
                "tolerations": router["tolerations"],
                "image": image,
                "resources": {
                    "requests": { "cpu": "10m", "memory": "32Mi" },
                    "limits": { "cpu": "200m", "memory": "128Mi" },
                },
            },
        }),
    )
    .await;
}

/// The Ready condition once its reason is `reason` and its message contains `until`.
async fn ready_condition(client: &Client, ns: &str, reason: &str, until: &str) -> (String, String) {
    let gateways: Api<GraphGateway> = Api::namespaced(client.clone(), ns);
    poll(
        &format!("Ready False with {reason} ({until})"),
        WAIT,
        || async {
            let gw = gateways.get("gw").await.ok()?;
            let c = gw
                .status?
                .conditions
                .into_iter()
                .find(|c| c.type_ == "Ready")?;
            (c.status == "False" && c.reason == reason && c.message.contains(until))
                .then_some((c.reason, c.message))
        },
    )
    .await
}

async fn the_gateway_pod(client: &Client, ns: &str) -> Pod {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let params = ListParams::default().labels("app.kubernetes.io/instance=gw");
    let mut list = pods.list(&params).await.expect("list gateway pods").items;
    assert_eq!(
        list.len(),
        1,
        "one gateway pod: {:?}",
        list.iter().map(|p| p.name_any()).collect::<Vec<_>>()
    );
    list.remove(0)
}

fn node_of(pod: &Pod) -> String {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .unwrap_or_default()
}

fn assert_contains(message: &str, parts: &[&str]) {
    for part in parts {
        assert!(message.contains(part), "{part:?} missing from {message:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_image_missing_on_router_0_is_named_in_the_ready_condition() {
    let client = real_cluster_client().await;
    let ns = TestNamespace::create(&client, "rf-image").await;
    let operator = Operator::start(&client, ns.name());
    let started = Instant::now();
    let image = "ghcr.io/graphfleet/graphfleet-gateway:not-on-any-node";
    gateway_running(&client, ns.name(), image).await;
    let (_, message) =
        ready_condition(&client, ns.name(), "ImagePullFailed", "cannot be pulled").await;
    println!(
        "MEASURED GraphGateway applied → Ready=False ImagePullFailed: {:.1} s\n{message}",
        started.elapsed().as_secs_f64()
    );
    let pod = the_gateway_pod(&client, ns.name()).await;
    assert_eq!(node_of(&pod), "router-0");
    assert_contains(
        &message,
        &[
            &format!("pod {} on node router-0", pod.name_any()),
            &format!("image {image} is not present on the node and cannot be pulled"),
            "replicas updated, 0 available",
        ],
    );
    operator.stop().await;
    ns.delete(&client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashing_gateway_names_its_exit_its_last_words_and_its_previous_log() {
    let client = real_cluster_client().await;
    let ns = TestNamespace::create(&client, "rf-crash").await;
    let operator = Operator::start(&client, ns.name());
    let started = Instant::now();
    // The k6 image is on every node; as a gateway it rejects the gateway's flags and exits.
    gateway_running(&client, ns.name(), DEFAULT_K6_IMAGE).await;
    let (_, message) =
        ready_condition(&client, ns.name(), "ContainerCrashing", "keeps restarting").await;
    println!(
        "MEASURED GraphGateway applied → Ready=False ContainerCrashing: {:.1} s\n{message}",
        started.elapsed().as_secs_f64()
    );
    let pod = the_gateway_pod(&client, ns.name()).await;
    assert_contains(
        &message,
        &[
            &format!("pod {} on node router-0", pod.name_any()),
            "container gateway exited with code 255",
            "CrashLoopBackOff",
            "last termination message:",
            "unknown flag: --supergraph",
            &format!(
                "log: kubectl -n {} logs {} -c gateway --previous",
                ns.name(),
                pod.name_any()
            ),
        ],
    );
    operator.stop().await;
    ns.delete(&client).await;
}

/// A LoadTest against an address nothing listens on (k6 keeps sending, every request
/// fails fast): it runs until something stops it.
async fn long_loadtest(client: &Client, ns: &str, name: &str) -> Pod {
    let loadtests: Api<LoadTest> = Api::namespaced(client.clone(), ns);
    create(
        &loadtests,
        json!({
            "apiVersion": "graphfleet.dev/v1alpha1", "kind": "LoadTest",
            "metadata": { "name": name },
            "spec": {
                "target": { "url": "http://127.0.0.1:9/graphql" },
                "scenario": "query", "rate": 5, "duration": "2m",
                "placement": pool_placement("client"),
                // The operator runs on the host here, outside the pods' network: it could not
                // resume a paused k6, and these tests are about faults, not the start.
                "synchronizedStart": false,
            },
        }),
    )
    .await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let params = ListParams::default().labels(&format!("{LOADTEST_LABEL}={name}"));
    let pod = poll("the k6 container running", WAIT, || async {
        let list = pods.list(&params).await.ok()?.items;
        let [pod] = list.as_slice() else { return None };
        let status = pod.status.as_ref()?.container_statuses.as_ref()?.first()?;
        (status.state.as_ref()?.running.is_some() && status.container_id.is_some())
            .then(|| pod.clone())
    })
    .await;
    // The operator records where the segment runs before anything can take the pod away.
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
    poll("the pod and node recorded on the Job", WAIT, || async {
        let job = jobs.get(&format!("{name}-0")).await.ok()?;
        (job.annotations().get(POD_ANNOTATION) == Some(&pod.name_any())
            && job.annotations().get(NODE_ANNOTATION) == Some(&node_of(&pod)))
        .then_some(())
    })
    .await;
    pod
}

async fn failed_message(client: &Client, ns: &str, name: &str) -> String {
    let loadtests: Api<LoadTest> = Api::namespaced(client.clone(), ns);
    poll(
        &format!("LoadTest {name} Failed"),
        Duration::from_secs(60),
        || async {
            let status = loadtests.get(name).await.ok()?.status?;
            match status.phase? {
                LoadTestPhase::Failed => status.message,
                LoadTestPhase::Succeeded => panic!("LoadTest {name} succeeded: {status:?}"),
                _ => None,
            }
        },
    )
    .await
}

/// The Job failed without starting k6 again: no pod but `original`, now and a moment later.
async fn assert_not_rerun(client: &Client, ns: &str, job: &str, original: &str) -> Job {
    let jobs: Api<Job> = Api::namespaced(client.clone(), ns);
    let failed = poll(
        &format!("Job {job} Failed"),
        Duration::from_secs(60),
        || async {
            let j = jobs.get(job).await.ok()?;
            let failed = j
                .status
                .as_ref()?
                .conditions
                .as_ref()?
                .iter()
                .any(|c| c.type_ == "Failed" && c.status == "True");
            failed.then_some(j)
        },
    )
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let params = ListParams::default().labels(&format!("batch.kubernetes.io/job-name={job}"));
    let left = pods.list(&params).await.expect("list k6 pods").items;
    let names: Vec<String> = left.iter().map(|p| p.name_any()).collect();
    assert!(
        names.iter().all(|n| n == original),
        "Job {job} started k6 again: {names:?}"
    );
    failed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_k6_pod_killed_mid_run_fails_the_load_test_naming_job_pod_node_and_log() {
    let client = real_cluster_client().await;
    let ns = TestNamespace::create(&client, "rf-kill").await;
    let operator = Operator::start(&client, ns.name());
    let pod = long_loadtest(&client, ns.name(), "kill").await;
    let node = node_of(&pod);
    assert_eq!(node, "client-0");
    let container = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.first())
        .and_then(|c| c.container_id.clone())
        .expect("a running container has an id");
    let id = container
        .strip_prefix("containerd://")
        .expect("containerd runs the pods");
    let socket = graphfleet_testkit::real_cluster()
        .state()
        .join("nodes/client/containerd/containerd.sock");
    let killed = Instant::now();
    let status = std::process::Command::new("ctr")
        .arg("-a")
        .arg(&socket)
        .args(["-n", "k8s.io", "tasks", "kill", "-s", "SIGKILL", id])
        .status()
        .expect("run ctr");
    assert!(status.success(), "ctr tasks kill failed: {status}");

    let message = failed_message(&client, ns.name(), "kill").await;
    println!(
        "MEASURED k6 SIGKILL → LoadTest Failed: {:.1} s\n{message}",
        killed.elapsed().as_secs_f64()
    );
    assert_contains(
        &message,
        &[
            &format!("k6 pod {} (job kill-0) on node client-0", pod.name_any()),
            "was killed by SIGKILL (exit code 137)",
            "ended without a k6 summary",
            &format!("log: kubectl -n {} logs job/kill-0", ns.name()),
        ],
    );
    let job = assert_not_rerun(&client, ns.name(), "kill-0", &pod.name_any()).await;
    let reason = job
        .status
        .and_then(|s| s.conditions)
        .and_then(|cs| cs.into_iter().find(|c| c.type_ == "Failed"))
        .and_then(|c| c.reason);
    assert_eq!(reason.as_deref(), Some("PodFailurePolicy"));
    // Where the message points: the killed pod and its log are still there.
    let logs = graphfleet_testkit::real_cluster()
        .kubectl()
        .args(["-n", ns.name(), "logs", "job/kill-0"])
        .output()
        .expect("run kubectl logs");
    assert!(
        logs.status.success(),
        "kubectl logs job/kill-0: {}",
        String::from_utf8_lossy(&logs.stderr)
    );
    operator.stop().await;
    ns.delete(&client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_k6_pod_deleted_mid_run_fails_the_load_test_and_is_not_rerun() {
    let client = real_cluster_client().await;
    let ns = TestNamespace::create(&client, "rf-delete").await;
    let operator = Operator::start(&client, ns.name());
    let pod = long_loadtest(&client, ns.name(), "gone").await;
    let deleted = Instant::now();
    Api::<Pod>::namespaced(client.clone(), ns.name())
        .delete(&pod.name_any(), &DeleteParams::default().grace_period(0))
        .await
        .expect("force-delete the k6 pod");
    let message = failed_message(&client, ns.name(), "gone").await;
    println!(
        "MEASURED k6 pod deleted → LoadTest Failed: {:.1} s\n{message}",
        deleted.elapsed().as_secs_f64()
    );
    // Seen terminating (k6 aborted by SIGTERM) or already gone: named either way.
    assert_contains(
        &message,
        &[
            &format!("k6 pod {} (job gone-0) on node client-0", pod.name_any()),
            "k6 summary",
        ],
    );
    assert_not_rerun(&client, ns.name(), "gone-0", &pod.name_any()).await;
    operator.stop().await;
    ns.delete(&client).await;
}
