//! The spec's pod settings (`graphfleet_api::PodOptions`) on a pod the operator builds, the
//! gateway's and the load generators' alike. The operator's labels and annotations win: a
//! reserved key (which the CRD refuses already) is reported by [`problems`] and never set.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use graphfleet_api::{PodOptions, is_reserved_annotation, is_reserved_label};

/// Every pod label or annotation of `options` that is the operator's, as
/// `spec.podLabels: ...` lines (the CRD refuses them; an API server without the rules
/// may not).
pub fn problems(options: &PodOptions) -> Vec<String> {
    let keys = |map: &Option<BTreeMap<String, String>>, reserved: fn(&str) -> bool| {
        map.iter()
            .flat_map(|m| m.keys())
            .filter(|k| reserved(k))
            .cloned()
            .collect::<Vec<_>>()
    };
    let mut out = Vec::new();
    for key in keys(&options.pod_labels, is_reserved_label) {
        out.push(format!(
            "spec.podLabels: {key} is the operator's label (it selects the pods)"
        ));
    }
    for key in keys(&options.pod_annotations, is_reserved_annotation) {
        out.push(format!(
            "spec.podAnnotations: {key} is the operator's annotation"
        ));
    }
    out
}

/// The user's labels or annotations under the operator's: a reserved key never reaches
/// the pod, and the operator's own always do.
fn merged(
    user: &Option<BTreeMap<String, String>>,
    reserved: fn(&str) -> bool,
    operator: Option<BTreeMap<String, String>>,
) -> Option<BTreeMap<String, String>> {
    let mut out: BTreeMap<String, String> = user
        .iter()
        .flatten()
        .filter(|(k, _)| !reserved(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    out.extend(operator.into_iter().flatten());
    (!out.is_empty()).then_some(out)
}

/// `options` on a pod template: its metadata (labels, annotations) and its spec.
pub fn apply(options: &PodOptions, metadata: &mut ObjectMeta, spec: &mut PodSpec) {
    metadata.labels = merged(
        &options.pod_labels,
        is_reserved_label,
        metadata.labels.take(),
    );
    metadata.annotations = merged(
        &options.pod_annotations,
        is_reserved_annotation,
        metadata.annotations.take(),
    );
    spec.image_pull_secrets
        .clone_from(&options.image_pull_secrets);
    spec.service_account_name
        .clone_from(&options.service_account_name);
    spec.priority_class_name
        .clone_from(&options.priority_class_name);
    spec.topology_spread_constraints
        .clone_from(&options.topology_spread_constraints);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> PodOptions {
        serde_json::from_value(serde_json::json!({
            "podLabels": { "team": "edge", "app.kubernetes.io/instance": "other" },
            "podAnnotations": { "sidecar.istio.io/inject": "false", "graphfleet.dev/config-hash": "x" },
            "serviceAccountName": "edge",
            "priorityClassName": "high",
            "imagePullSecrets": [{ "name": "registry" }],
        }))
        .expect("valid pod options")
    }

    #[test]
    fn the_operators_labels_win_and_reserved_keys_are_reported() {
        let mut metadata = ObjectMeta {
            labels: Some(BTreeMap::from([(
                "app.kubernetes.io/instance".to_owned(),
                "edge".to_owned(),
            )])),
            ..ObjectMeta::default()
        };
        let mut spec = PodSpec::default();
        apply(&options(), &mut metadata, &mut spec);
        let labels = metadata.labels.expect("labels");
        assert_eq!(labels["app.kubernetes.io/instance"], "edge");
        assert_eq!(labels["team"], "edge");
        let annotations = metadata.annotations.expect("annotations");
        assert_eq!(annotations.len(), 1, "{annotations:?}");
        assert_eq!(spec.service_account_name.as_deref(), Some("edge"));
        assert_eq!(spec.priority_class_name.as_deref(), Some("high"));
        assert_eq!(
            problems(&options()),
            [
                "spec.podLabels: app.kubernetes.io/instance is the operator's label (it selects the pods)",
                "spec.podAnnotations: graphfleet.dev/config-hash is the operator's annotation",
            ]
        );
        assert!(problems(&PodOptions::default()).is_empty());
    }
}
