//! The PodMonitor (Prometheus Operator, `monitoring.coreos.com/v1`) of a GraphGateway: every
//! gateway pod, stable and canary, scraped on its admin port (`/metrics`, 9180), which the
//! Service does not expose. The controller applies it only where the CRD exists.

use std::collections::BTreeMap;

use kube::ResourceExt;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind};

use super::gateway_canary::TRACK_LABEL;
use super::gateway_meta::{meta, selector_labels};
use graphfleet_api::{GraphGateway, PodMonitorSpec};

/// The API group whose presence (discovery) decides whether PodMonitors are made.
pub const MONITORING_GROUP: &str = "monitoring.coreos.com";
const MONITORING_VERSION: &str = "v1";
const POD_MONITOR_KIND: &str = "PodMonitor";

/// The PodMonitor resource, for a dynamic `Api`.
pub fn pod_monitor_resource() -> ApiResource {
    let gvk = GroupVersionKind::gvk(MONITORING_GROUP, MONITORING_VERSION, POD_MONITOR_KIND);
    ApiResource::from_gvk_with_plural(&gvk, "podmonitors")
}

/// Whether `gw` wants a PodMonitor (`spec.podMonitor.enabled`, default true).
pub fn wants_pod_monitor(gw: &GraphGateway) -> bool {
    PodMonitorSpec::enabled(gw.spec.pod_monitor.as_ref())
}

/// The PodMonitor named like the gateway, owned by it; `None` when the spec turns it off.
/// Scraped series carry the pod's track label (`graphfleet.dev/track: canary` on canary
/// pods), so a canary's metrics can be told from the stable ones'.
pub fn pod_monitor(gw: &GraphGateway) -> Option<DynamicObject> {
    if !wants_pod_monitor(gw) {
        return None;
    }
    let spec = gw.spec.pod_monitor.clone().unwrap_or_default();
    let mut metadata = meta(gw, gw.name_any());
    let own = metadata.labels.take().unwrap_or_default();
    let mut labels: BTreeMap<String, String> = spec.labels.unwrap_or_default();
    labels.extend(own);
    metadata.labels = Some(labels);
    let mut endpoint = serde_json::json!({ "port": "admin", "path": "/metrics" });
    if let Some(interval) = spec.interval {
        endpoint["interval"] = interval.into();
    }
    let mut object =
        DynamicObject::new(&gw.name_any(), &pod_monitor_resource()).data(serde_json::json!({
            "spec": {
                "selector": { "matchLabels": selector_labels(gw) },
                "podMetricsEndpoints": [endpoint],
                "podTargetLabels": [TRACK_LABEL],
            }
        }));
    object.metadata = metadata;
    Some(object)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::resources::test_gateway as gateway;

    #[test]
    fn the_pod_monitor_scrapes_the_admin_port_of_the_gateways_pods() {
        let gw = gateway(serde_json::json!({
            "podMonitor": { "interval": "15s", "labels": { "release": "prom", "app.kubernetes.io/instance": "x" } },
        }));
        let monitor = pod_monitor(&gw).expect("wanted by default");
        insta::assert_yaml_snapshot!(monitor);
        let off = gateway(serde_json::json!({ "podMonitor": { "enabled": false } }));
        assert!(pod_monitor(&off).is_none());
        assert!(pod_monitor(&gateway(serde_json::json!({}))).is_some());
    }
}
