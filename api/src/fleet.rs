//! How a GraphGateway meets the rest of the cluster: its Service's type and annotations, and
//! the PodMonitor the Prometheus Operator scrapes its pods by.

use std::collections::BTreeMap;

use kube::KubeSchema;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The gateway Service (port 80 → the pods' GraphQL port).
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GatewayService {
    /// `ClusterIP` (the default), `NodePort` or `LoadBalancer`. The canary Service stays
    /// `ClusterIP` whatever this says: only the operator's LoadTests use it.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<ServiceType>,
    /// Annotations of the gateway Service, e.g. a cloud load balancer's settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxProperties" = 64))]
    pub annotations: Option<BTreeMap<String, String>>,
}

/// A Service type the gateway Service may have (`ExternalName` has no pods behind it).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum ServiceType {
    #[default]
    ClusterIP,
    NodePort,
    LoadBalancer,
}

impl ServiceType {
    /// The Service's `spec.type`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ClusterIP => "ClusterIP",
            Self::NodePort => "NodePort",
            Self::LoadBalancer => "LoadBalancer",
        }
    }
}

/// The PodMonitor (`monitoring.coreos.com/v1`) scraping every gateway pod's admin port
/// (`/metrics` on 9180). Made only where the Prometheus Operator's CRD exists.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodMonitorSpec {
    /// False: no PodMonitor (an existing one is deleted). Default true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Scrape interval, e.g. `15s` (default: Prometheus' own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[0-9]+(ms|s|m|h)$"))]
    pub interval: Option<String>,
    /// Labels of the PodMonitor itself, for a Prometheus whose `podMonitorSelector` asks for
    /// them (e.g. `release: kube-prometheus-stack`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxProperties" = 16))]
    pub labels: Option<BTreeMap<String, String>>,
}

impl PodMonitorSpec {
    /// Whether a PodMonitor is wanted (the default, where the CRD exists).
    pub fn enabled(spec: Option<&Self>) -> bool {
        spec.and_then(|s| s.enabled).unwrap_or(true)
    }
}
