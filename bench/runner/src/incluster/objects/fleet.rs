//! graphfleet under test as users run it: a `GraphGateway` selecting the set's Subgraphs,
//! one pod on the router pool under the CPU budget; the operator
//! composes the supergraph and rolls the pod out.

use super::parts::{Budget, GATEWAY_LABEL, SET_LABEL, dns_label, labels, meta, pool_placement};

use graphfleet_api::GraphGateway;

/// The GraphGateway of a set (also its Service's name).
pub fn fleet_name(set: &str) -> String {
    dns_label(&format!("bench-{set}"))
}

/// The set's GraphGateway: the gateway's default configuration, as the host mode runs it,
/// under `budget`.
pub fn graph_gateway(set: &str, namespace: &str, image: &str, budget: &Budget) -> GraphGateway {
    let name = fleet_name(set);
    let (node_selector, tolerations) = pool_placement("router");
    serde_json::from_value(serde_json::json!({
        "apiVersion": "graphfleet.dev/v1alpha1",
        "kind": "GraphGateway",
        "metadata": meta(&name, namespace, labels("gateway", &[(GATEWAY_LABEL, "graphfleet"), (SET_LABEL, set)])),
        "spec": {
            "subgraphSelector": { "matchLabels": { SET_LABEL: set } },
            "replicas": 1,
            "image": image,
            "resources": budget.resources(),
            "nodeSelector": node_selector,
            "tolerations": tolerations,
            // One pod at a time on the router node, whose core the measured gateway owns.
            "rollout": { "maxSurge": 0, "maxUnavailable": 1 },
        },
    }))
    .expect("the bench's GraphGateway is a valid GraphGateway")
}
