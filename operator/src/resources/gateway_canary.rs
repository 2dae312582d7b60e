//! The canary Deployment (`<gateway>-canary`): the stable Deployment's desired pod
//! template with a `track: canary` label, beside the stable pods behind the same Service.
//! Pure: the controller decides when it exists and how many pods it has.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use kube::ResourceExt;

use super::gateway_meta as meta;
use graphfleet_api::GraphGateway;

/// The pod label that tells canary pods from stable ones (stable pods carry none).
pub const TRACK_LABEL: &str = "graphfleet.dev/track";
pub const CANARY_TRACK: &str = "canary";
/// On a gateway Deployment: the hash of the pod template it was applied with.
pub const TEMPLATE_HASH_ANNOTATION: &str = "graphfleet.dev/template-hash";

pub fn canary_name(gw: &GraphGateway) -> String {
    format!("{}-canary", gw.name_any())
}

/// The hash of a built Deployment's pod template (as built, before the API server adds
/// its defaults), so equal templates hash alike.
pub fn template_hash(deployment: &Deployment) -> String {
    let template = deployment.spec.as_ref().map(|s| &s.template);
    let json = serde_json::to_vec(&template).expect("a pod template serializes");
    super::short_hash(&json)
}

/// `deployment` with its template hash recorded on the object (not on the pods).
pub fn with_template_hash(mut deployment: Deployment) -> Deployment {
    let hash = template_hash(&deployment);
    deployment
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(TEMPLATE_HASH_ANNOTATION.to_owned(), hash);
    deployment
}

/// The template hash a live gateway Deployment was applied with.
pub fn applied_template_hash(deployment: &Deployment) -> Option<&str> {
    deployment
        .metadata
        .annotations
        .as_ref()?
        .get(TEMPLATE_HASH_ANNOTATION)
        .map(String::as_str)
}

/// The canary Deployment running `desired`'s pod template with `replicas` pods.
pub fn canary_deployment(gw: &GraphGateway, desired: &Deployment, replicas: i32) -> Deployment {
    let mut canary = with_template_hash(desired.clone());
    canary.metadata.name = Some(canary_name(gw));
    let track = || (TRACK_LABEL.to_owned(), CANARY_TRACK.to_owned());
    if let Some(spec) = canary.spec.as_mut() {
        spec.replicas = Some(replicas);
        let mut selector = meta::selector_labels(gw);
        selector.extend([track()]);
        spec.selector.match_labels = Some(selector);
        let labels = spec
            .template
            .metadata
            .get_or_insert_with(Default::default)
            .labels
            .get_or_insert_with(BTreeMap::new);
        labels.extend([track()]);
    }
    canary
}

/// Whether a gateway pod is a canary pod.
pub fn is_canary(pod: &k8s_openapi::api::core::v1::Pod) -> bool {
    pod.labels().get(TRACK_LABEL).map(String::as_str) == Some(CANARY_TRACK)
}
