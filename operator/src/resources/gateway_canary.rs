//! The canary Deployment (`<gateway>-canary`): the stable Deployment's desired pod
//! template with a `track: canary` label, beside the stable pods behind the same Service;
//! and for the load-gated canary, the Service `<gateway>-canary` selecting the canary pods
//! alone and each step's LoadTest against it. Pure: the controller decides when they
//! exist and how many pods there are.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt;

use super::gateway_meta as meta;
use super::{MANAGER, loadtest};
use graphfleet_api::{GraphGateway, LoadTest, LoadTestSpec, LoadTestTarget, LoadTestTemplate};

/// The pod label that tells canary pods from stable ones (stable pods carry none).
pub const TRACK_LABEL: &str = "graphfleet.dev/track";
pub const CANARY_TRACK: &str = "canary";
/// On a gateway Deployment: the hash of the pod template it was applied with (and, as a
/// label, on a canary LoadTest: the template it loaded).
pub const TEMPLATE_HASH_ANNOTATION: &str = "graphfleet.dev/template-hash";
/// On a canary's LoadTests: the GraphGateway (`kubectl get lt -l graphfleet.dev/canary-of=<gw>`).
pub const CANARY_OF_LABEL: &str = "graphfleet.dev/canary-of";
/// On a canary's LoadTests: the step (0-based).
pub const CANARY_STEP_LABEL: &str = "graphfleet.dev/canary-step";
/// Longest name of a canary LoadTest: its Jobs (`<name>-<segment>`), ConfigMaps
/// (`<name>-report`) and the label naming it stay within Kubernetes' 63 characters.
const MAX_LOADTEST_NAME: usize = 52;

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

/// The Service of the canary pods alone (the gateway Service's ports, its selector plus
/// the canary track; ClusterIP, without the gateway Service's annotations): what a
/// load-gated canary's LoadTests load.
pub fn canary_service(gw: &GraphGateway) -> Service {
    let mut service = super::gateway::service(gw);
    service.metadata.name = Some(canary_name(gw));
    // In-cluster only, whatever `spec.service` asks of the gateway's own Service.
    service.metadata.annotations = None;
    if let Some(spec) = service.spec.as_mut() {
        spec.type_ = Some(graphfleet_api::ServiceType::ClusterIP.as_str().to_owned());
        spec.selector
            .get_or_insert_with(BTreeMap::new)
            .insert(TRACK_LABEL.to_owned(), CANARY_TRACK.to_owned());
    }
    service
}

/// The in-cluster GraphQL endpoint of the canary Service.
pub fn canary_url(gw: &GraphGateway) -> String {
    let ns = gw.namespace().unwrap_or_else(|| "default".to_owned());
    loadtest::service_url(&canary_name(gw), &ns)
}

/// `<gateway>-canary-<template>-<step>`: the template hash's first 8 digits, the step
/// 0-based; a long gateway name is shortened so the name fits [`MAX_LOADTEST_NAME`].
pub fn canary_loadtest_name(gw: &GraphGateway, template_hash: &str, step: u32) -> String {
    let short: String = template_hash.chars().take(8).collect();
    let suffix = format!("-canary-{short}-{step}");
    let room = MAX_LOADTEST_NAME.saturating_sub(suffix.len());
    let name = gw.name_any();
    let prefix: String = name.chars().take(room).collect();
    format!("{}{suffix}", prefix.trim_end_matches(['-', '.']))
}

/// The LoadTest of canary step `step` of pod template `template_hash`: `template` against
/// the canary Service, owned by the GraphGateway (deleted with it).
pub fn canary_loadtest(
    gw: &GraphGateway,
    template: &LoadTestTemplate,
    template_hash: &str,
    step: u32,
) -> LoadTest {
    let labels = BTreeMap::from([
        (CANARY_OF_LABEL.to_owned(), gw.name_any()),
        (CANARY_STEP_LABEL.to_owned(), step.to_string()),
        (
            TEMPLATE_HASH_ANNOTATION.to_owned(),
            template_hash.to_owned(),
        ),
        (
            "app.kubernetes.io/managed-by".to_owned(),
            MANAGER.to_owned(),
        ),
    ]);
    let spec = LoadTestSpec {
        target: Some(LoadTestTarget {
            gateway_ref: None,
            url: Some(canary_url(gw)),
        }),
        targets: None,
        template: template.clone(),
    };
    LoadTest {
        metadata: ObjectMeta {
            name: Some(canary_loadtest_name(gw, template_hash, step)),
            namespace: gw.namespace(),
            labels: Some(labels),
            owner_references: Some(vec![meta::owner(gw)]),
            ..ObjectMeta::default()
        },
        spec,
        status: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gateway(name: &str) -> GraphGateway {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "graphfleet.dev/v1alpha1",
            "kind": "GraphGateway",
            "metadata": { "name": name, "namespace": "shop", "uid": "u-1" },
            "spec": { "replicas": 3 },
        }))
        .expect("valid GraphGateway")
    }

    fn template() -> LoadTestTemplate {
        serde_json::from_value(serde_json::json!({
            "scenario": "query", "rate": 50, "duration": "30s",
            "thresholds": { "maxErrorPercent": 1 },
        }))
        .expect("valid template")
    }

    #[test]
    fn the_canary_service_selects_only_canary_pods_on_the_gateway_ports() {
        let gw = gateway("fed");
        let stable = super::super::gateway::service(&gw);
        let canary = canary_service(&gw);
        assert_eq!(canary.metadata.name.as_deref(), Some("fed-canary"));
        let (stable, canary_spec) = (
            stable.spec.expect("spec"),
            canary.spec.clone().expect("spec"),
        );
        assert_eq!(canary_spec.ports, stable.ports);
        let mut selector = stable.selector.expect("selector");
        selector.insert(TRACK_LABEL.to_owned(), CANARY_TRACK.to_owned());
        assert_eq!(canary_spec.selector, Some(selector));
        let owner = &canary.metadata.owner_references.expect("owned")[0];
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str()),
            ("GraphGateway", "fed")
        );
    }

    #[test]
    fn a_step_loadtest_loads_the_canary_service_and_says_whose_it_is() {
        let gw = gateway("fed");
        let lt = canary_loadtest(&gw, &template(), "ab12cd34ef56ab78", 1);
        assert_eq!(lt.metadata.name.as_deref(), Some("fed-canary-ab12cd34-1"));
        assert_eq!(lt.metadata.namespace.as_deref(), Some("shop"));
        let target = lt.spec.target.as_ref().expect("a target");
        assert_eq!(
            target.url.as_deref(),
            Some("http://fed-canary.shop.svc:80/graphql")
        );
        assert_eq!(lt.spec.template, template());
        let labels = lt.metadata.labels.as_ref().expect("labels");
        assert_eq!(labels[CANARY_OF_LABEL], "fed");
        assert_eq!(labels[CANARY_STEP_LABEL], "1");
        assert_eq!(labels[TEMPLATE_HASH_ANNOTATION], "ab12cd34ef56ab78");
        let owner = &lt.metadata.owner_references.as_ref().expect("owned")[0];
        assert_eq!(owner.controller, Some(true));
        assert_eq!(owner.name, "fed");
    }

    #[test]
    fn long_gateway_names_are_shortened_to_fit() {
        let long = "a".repeat(40) + "-" + &"b".repeat(40);
        let name = canary_loadtest_name(&gateway(&long), "0123456789abcdef", 9);
        assert_eq!(name.len(), MAX_LOADTEST_NAME);
        assert!(name.ends_with("-canary-01234567-9"), "{name}");
        let dash = canary_loadtest_name(&gateway(&("a".repeat(33) + "-b")), "0123456789", 0);
        assert_eq!(dash, "a".repeat(33) + "-canary-01234567-0");
    }
}
