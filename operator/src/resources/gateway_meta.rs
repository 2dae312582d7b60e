//! Names, labels and metadata of a GraphGateway's objects, shared by its builders.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::{Resource, ResourceExt};

use super::MANAGER;
use graphfleet_api::GraphGateway;

/// Label naming the GraphGateway a gateway pod belongs to.
pub const INSTANCE_LABEL: &str = "app.kubernetes.io/instance";
/// What an object is to its gateway (`supergraph-revision`, `gateway-config`).
pub const COMPONENT_LABEL: &str = "app.kubernetes.io/component";
/// The revision a supergraph ConfigMap holds.
pub const REVISION_LABEL: &str = "graphfleet.dev/supergraph-revision";
pub const SUPERGRAPH_COMPONENT: &str = "supergraph-revision";
pub const CONFIG_COMPONENT: &str = "gateway-config";
const NAME_LABEL: &str = "app.kubernetes.io/name";
const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
const GATEWAY_APP: &str = "graphfleet-gateway";

/// Labels that select a gateway's pods.
pub fn selector_labels(gw: &GraphGateway) -> BTreeMap<String, String> {
    BTreeMap::from([
        (NAME_LABEL.to_owned(), GATEWAY_APP.to_owned()),
        (INSTANCE_LABEL.to_owned(), gw.name_any()),
    ])
}

/// Selects the pods of every GraphGateway the operator manages.
pub fn gateway_pods_selector() -> String {
    format!("{NAME_LABEL}={GATEWAY_APP},{MANAGED_BY_LABEL}={MANAGER}")
}

/// `selector_labels` as a label-selector string (for status and the scale subresource).
pub fn selector_string(gw: &GraphGateway) -> String {
    selector_string_of(&gw.name_any())
}

/// The label selector of the pods of the GraphGateway named `name`.
pub fn selector_string_of(name: &str) -> String {
    // In the order of `selector_labels` (a BTreeMap), as the status has always said it.
    format!("{INSTANCE_LABEL}={name},{NAME_LABEL}={GATEWAY_APP}")
}

/// Selects a gateway's ConfigMaps of one component.
pub fn component_selector(gw: &GraphGateway, component: &str) -> String {
    format!(
        "{INSTANCE_LABEL}={},{MANAGED_BY_LABEL}={MANAGER},{COMPONENT_LABEL}={component}",
        gw.name_any()
    )
}

/// The labels of every object the operator makes for `gw`.
pub fn labels(gw: &GraphGateway) -> BTreeMap<String, String> {
    let mut labels = selector_labels(gw);
    labels.insert(MANAGED_BY_LABEL.to_owned(), MANAGER.to_owned());
    labels
}

/// The controller owner reference of the objects the operator makes for `gw`.
pub fn owner(gw: &GraphGateway) -> OwnerReference {
    gw.controller_owner_ref(&())
        .expect("a GraphGateway read from the API server has a name and uid")
}

/// Metadata of an object named `name` owned by `gw`, in its namespace.
pub fn meta(gw: &GraphGateway, name: String) -> ObjectMeta {
    ObjectMeta {
        name: Some(name),
        namespace: gw.namespace(),
        labels: Some(labels(gw)),
        owner_references: Some(vec![owner(gw)]),
        ..ObjectMeta::default()
    }
}
