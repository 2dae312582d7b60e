//! Pod settings a fleet needs on the pods the operator makes, GraphGateway's and LoadTest's
//! alike: registry credentials, the service account, labels and annotations for the
//! cluster's own tooling, priority and spreading. Each is Kubernetes' own type, so the
//! fields read as in a pod template; each is optional, so older resources stay valid.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{LocalObjectReference, TopologySpreadConstraint};
use kube::KubeSchema;
use schemars::Schema;
use serde::{Deserialize, Serialize};

/// Drops the descriptions inside an embedded Kubernetes type's schema (its fields are
/// documented in Kubernetes' own reference), keeping the field's own. A `Volume` alone
/// would otherwise add 70 KB of text, and `kubectl apply` keeps the whole CRD in one
/// annotation of at most 256 KiB.
pub(crate) fn terse(schema: &mut Schema) {
    fn strip(value: &mut serde_json::Value) {
        match value {
            serde_json::Value::Object(object) => {
                object.remove("description");
                object.values_mut().for_each(strip);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    if let Some(object) = schema.as_object_mut() {
        for key in [
            "items",
            "properties",
            "additionalProperties",
            "anyOf",
            "oneOf",
            "allOf",
        ] {
            if let Some(inner) = object.get_mut(key) {
                strip(inner);
            }
        }
    }
}

/// Label keys the operator sets on its pods (and selects them by): a pod label may not use
/// them, nor a key under the [`RESERVED_PREFIXES`].
pub const RESERVED_LABELS: [&str; 5] = [
    "app.kubernetes.io/name",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/managed-by",
    "job-name",
    "controller-uid",
];

/// Key prefixes of the operator's (and the Job controller's) labels and annotations.
pub const RESERVED_PREFIXES: [&str; 2] = ["graphfleet.dev/", "batch.kubernetes.io/"];

/// The CEL rule refusing a label map that uses a reserved key.
fn labels_rule() -> String {
    let names = RESERVED_LABELS.map(|k| format!("'{k}'")).join(", ");
    let prefixes = RESERVED_PREFIXES
        .map(|p| format!("!k.startsWith('{p}')"))
        .join(" && ");
    format!("self.all(k, !(k in [{names}]) && {prefixes})")
}

/// The CEL rule refusing an annotation map that uses a reserved prefix.
fn annotations_rule() -> String {
    let prefixes = RESERVED_PREFIXES
        .map(|p| format!("!k.startsWith('{p}')"))
        .join(" && ");
    format!("self.all(k, {prefixes})")
}

/// Whether a pod label key is the operator's (see [`RESERVED_LABELS`]).
pub fn is_reserved_label(key: &str) -> bool {
    RESERVED_LABELS.contains(&key) || is_reserved_annotation(key)
}

/// Whether a pod annotation key is the operator's (see [`RESERVED_PREFIXES`]).
pub fn is_reserved_annotation(key: &str) -> bool {
    RESERVED_PREFIXES.iter().any(|p| key.starts_with(p))
}

/// Settings of the pods themselves, flattened into a GraphGateway's spec and a LoadTest's.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodOptions {
    /// Secrets (in the resource's namespace) holding registry credentials for the image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 16))]
    pub image_pull_secrets: Option<Vec<LocalObjectReference>>,
    /// The pods' service account (default: the namespace's `default`). GraphGateway pods
    /// keep the token unmounted: the gateway calls no Kubernetes API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub service_account_name: Option<String>,
    /// Labels added to the pods, e.g. for a mesh or a cost report. The operator's own keys
    /// (`app.kubernetes.io/name`, `instance`, `managed-by`, `job-name`, `controller-uid`
    /// and anything under `graphfleet.dev/` or `batch.kubernetes.io/`) are refused: pods are
    /// selected by them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxProperties" = 64))]
    #[x_kube(validation = Rule::new(labels_rule())
        .message("podLabels may not set the operator's labels (app.kubernetes.io/name, instance, managed-by, job-name, controller-uid, graphfleet.dev/*, batch.kubernetes.io/*)"))]
    pub pod_labels: Option<BTreeMap<String, String>>,
    /// Annotations added to the pods (e.g. `sidecar.istio.io/inject: "false"`). Keys under
    /// `graphfleet.dev/` or `batch.kubernetes.io/` are the operator's and refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxProperties" = 64))]
    #[x_kube(validation = Rule::new(annotations_rule())
        .message("podAnnotations may not set graphfleet.dev/* or batch.kubernetes.io/* keys"))]
    pub pod_annotations: Option<BTreeMap<String, String>>,
    /// The pods' PriorityClass (must exist in the cluster).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub priority_class_name: Option<String>,
    /// How the pods spread over zones or nodes. A constraint's `labelSelector` is written
    /// by the user: select the pods by `app.kubernetes.io/instance: <gateway>` (gateways)
    /// or `graphfleet.dev/loadtest: <loadtest>` (load generators).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 8), transform = terse)]
    pub topology_spread_constraints: Option<Vec<TopologySpreadConstraint>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rules_name_every_reserved_key() {
        let rule = labels_rule();
        for key in RESERVED_LABELS {
            assert!(rule.contains(&format!("'{key}'")), "{rule}");
        }
        assert!(rule.contains("!k.startsWith('graphfleet.dev/')"), "{rule}");
        assert!(annotations_rule().contains("batch.kubernetes.io/"));
        assert!(is_reserved_label("graphfleet.dev/track"));
        assert!(is_reserved_label("app.kubernetes.io/instance"));
        assert!(!is_reserved_label("team"));
        assert!(!is_reserved_annotation("app.kubernetes.io/name"));
    }
}
