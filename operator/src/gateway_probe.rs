//! Asks gateway pods themselves, on their admin listener: which supergraph each serves
//! (so "N/N pods serve <hash>" is what the pods say, not what their template asked for)
//! and which operations each has served (the operations check). Plain HTTP to the pod
//! IP, bounded in time and size; a pod that does not answer is reported as such.

use bytes::Bytes;
use graphfleet_admin_api::{
    DEFAULT_ADMIN_PORT, METRICS_PATH, READY_PATH, Readiness, USAGE_PATH, UsageReport,
};
use http_body_util::{BodyExt, Empty, Limited};
use hyper_util::client::legacy::Client as HttpClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use std::net::SocketAddr;
use std::time::Duration;

/// How long one pod has to answer.
const TIMEOUT: Duration = Duration::from_secs(2);
/// Largest usage report read (the recorder's default bound is 4 MiB of documents).
const MAX_REPORT_BYTES: usize = 32 << 20;
/// Largest metrics text read (a gateway with many operation names writes a lot).
const MAX_METRICS_BYTES: usize = 16 << 20;
/// Largest readiness body read.
const MAX_READINESS_BYTES: usize = 16 << 10;

/// Where a pod's admin listener is.
#[derive(Clone, Debug, Default)]
pub enum AdminAddress {
    /// `<pod IP>:9180`, as the operator configures its gateway pods.
    #[default]
    PodIp,
    /// Every pod at one address: for operators run outside the pod network in tests,
    /// pointing at a real gateway process that serves the revision's supergraph.
    Fixed(SocketAddr),
}

#[derive(Clone)]
pub struct GatewayProbe {
    client: HttpClient<HttpConnector, Empty<Bytes>>,
    address: AdminAddress,
}

impl GatewayProbe {
    pub fn new(address: AdminAddress) -> Self {
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(TIMEOUT));
        Self {
            client: HttpClient::builder(TokioExecutor::new()).build(connector),
            address,
        }
    }

    fn addr(&self, pod: &Pod) -> Result<SocketAddr, String> {
        match &self.address {
            AdminAddress::Fixed(addr) => Ok(*addr),
            AdminAddress::PodIp => {
                let ip = pod
                    .status
                    .as_ref()
                    .and_then(|s| s.pod_ip.as_deref())
                    .ok_or_else(|| format!("pod {} has no IP yet", pod.name_any()))?;
                let ip = ip
                    .parse()
                    .map_err(|e| format!("pod {} IP {ip}: {e}", pod.name_any()))?;
                Ok(SocketAddr::new(ip, DEFAULT_ADMIN_PORT))
            }
        }
    }

    /// What the pod's `/health/ready` says.
    pub async fn readiness(&self, pod: &Pod) -> Result<Readiness, String> {
        // 503 (draining, no supergraph yet) still carries the body.
        self.get_json(pod, READY_PATH, MAX_READINESS_BYTES, true)
            .await
    }

    /// The pod's Prometheus metrics text.
    pub async fn metrics(&self, pod: &Pod) -> Result<String, String> {
        let body = self
            .get(pod, METRICS_PATH, MAX_METRICS_BYTES, false)
            .await?;
        String::from_utf8(body).map_err(|e| format!("metrics are not UTF-8: {e}"))
    }

    /// The operations the pod has served.
    pub async fn usage(&self, pod: &Pod) -> Result<UsageReport, String> {
        self.get_json(pod, USAGE_PATH, MAX_REPORT_BYTES, false)
            .await
    }

    async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        pod: &Pod,
        path: &str,
        max: usize,
        any_status: bool,
    ) -> Result<T, String> {
        let body = self.get(pod, path, max, any_status).await?;
        serde_json::from_slice(&body).map_err(|e| format!("{path}: {e}"))
    }

    async fn get(
        &self,
        pod: &Pod,
        path: &str,
        max: usize,
        any_status: bool,
    ) -> Result<Vec<u8>, String> {
        let addr = self.addr(pod)?;
        let url = format!("http://{addr}{path}");
        let exchange = async {
            let uri: hyper::Uri = url.parse().map_err(|e| format!("{url}: {e}"))?;
            let response = self
                .client
                .get(uri)
                .await
                .map_err(|e| format!("{url}: {e}"))?;
            let status = response.status();
            let body = Limited::new(response.into_body(), max)
                .collect()
                .await
                .map_err(|e| format!("{url}: reading the body: {e}"))?
                .to_bytes();
            if !status.is_success() && !any_status {
                return Err(format!("{url}: HTTP {status}"));
            }
            Ok(body.to_vec())
        };
        tokio::time::timeout(TIMEOUT, exchange)
            .await
            .unwrap_or_else(|_| Err(format!("{url}: no answer within {TIMEOUT:?}")))
    }
}
