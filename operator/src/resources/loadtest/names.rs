//! What a LoadTest's objects are called and carry: images, labels, annotations, the
//! ConfigMap's keys, Job names, k6 execution segments, and the metadata every object gets.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::{Resource, ResourceExt};

use crate::resources::MANAGER;
use graphfleet_api::{LoadTest, LoadTestExecutor};

/// Default load-generator image (k6 plus graphfleet's scripts).
pub const DEFAULT_K6_IMAGE: &str = "ghcr.io/graphfleet/graphfleet-k6:0.1.0";
/// Default image of `executor: gatling` (a JRE, Gatling and graphfleet's simulation).
pub const DEFAULT_GATLING_IMAGE: &str = "ghcr.io/graphfleet/graphfleet-gatling:0.1.0";
/// The gatling image's main class: graphfleet's simulation under Gatling's runner (the
/// image's entrypoint is the JVM with the simulation's class path).
pub const GATLING_MAIN: &str = "dev.graphfleet.gatling.Main";
/// Label on every Job and pod of a LoadTest: the LoadTest's name.
pub const LOADTEST_LABEL: &str = "graphfleet.dev/loadtest";
/// Label on every Job and pod of a LoadTest: the segment index.
pub const SEGMENT_LABEL: &str = "graphfleet.dev/segment";
/// Label on the Jobs and pods of one of `spec.targets`: the target's name.
pub const TARGET_LABEL: &str = "graphfleet.dev/target";
/// Where handleSummary writes: the kubelet turns it into the termination message.
pub const TERMINATION_LOG: &str = "/dev/termination-log";
/// Bytes of a termination message the kubelet keeps; the script fits its summary in them.
pub const TERMINATION_MESSAGE_LIMIT: usize = 4096;
pub(super) const SCRIPT_KEY: &str = "script.js";
pub(super) const PAYLOAD_KEY: &str = "payload.json";
pub(super) const MOUNT_DIR: &str = "/etc/graphfleet/loadtest";
/// Port of k6's REST API in a synchronized segment's pod (k6's default).
pub const K6_API_PORT: i32 = 6565;
/// Name of the load-generator container in the segment pods, `k6` whatever the executor
/// (status, logs and diagnosis read it by this name).
pub const K6_CONTAINER: &str = "k6";
/// Annotation the operator writes on a segment Job once the Job's pod is scheduled: the pod.
/// It outlives the pod, so a deleted pod can still be named in status.
pub const POD_ANNOTATION: &str = "graphfleet.dev/pod";
/// Companion of [`POD_ANNOTATION`]: the node the pod was scheduled to.
pub const NODE_ANNOTATION: &str = "graphfleet.dev/node";

/// Name of the ConfigMap holding the script and payload.
pub fn config_map_name(lt: &str) -> String {
    format!("{lt}-k6")
}

/// Name of the Job of segment `index` (of `spec.target`).
pub fn job_name(lt: &str, index: i32) -> String {
    format!("{lt}-{index}")
}
/// The k6 `--execution-segment` of segment `index` out of `n`, e.g. `1/4:2/4`.
pub fn execution_segment(index: i32, n: i32) -> String {
    let bound = |i: i32| match i {
        0 => "0".to_owned(),
        i if i == n => "1".to_owned(),
        i => format!("{i}/{n}"),
    };
    format!("{}:{}", bound(index), bound(index + 1))
}

/// The k6 `--execution-segment-sequence` splitting the load in `n` equal parts.
pub fn execution_segment_sequence(n: i32) -> String {
    let mut bounds = vec!["0".to_owned()];
    bounds.extend((1..n).map(|i| format!("{i}/{n}")));
    bounds.push("1".to_owned());
    bounds.join(",")
}

pub(super) fn labels(lt: &LoadTest) -> BTreeMap<String, String> {
    let name = match lt.spec.executor {
        LoadTestExecutor::K6 => "graphfleet-k6",
        LoadTestExecutor::Gatling => "graphfleet-gatling",
    };
    BTreeMap::from([
        ("app.kubernetes.io/name".to_owned(), name.to_owned()),
        (
            "app.kubernetes.io/managed-by".to_owned(),
            MANAGER.to_owned(),
        ),
        (LOADTEST_LABEL.to_owned(), lt.name_any()),
    ])
}

pub(super) fn owner(lt: &LoadTest) -> OwnerReference {
    lt.controller_owner_ref(&())
        .expect("a LoadTest read from the API server has a name and uid")
}

pub(super) fn meta(lt: &LoadTest, name: String, labels: BTreeMap<String, String>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name),
        namespace: lt.namespace(),
        labels: Some(labels),
        owner_references: Some(vec![owner(lt)]),
        ..ObjectMeta::default()
    }
}
