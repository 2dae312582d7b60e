//! The Kubernetes edge: a client from a kubeconfig, server-side apply, waiting for pods and
//! deletions, and HTTP to Services through the API server's proxy (the host reaches only
//! the API server of the local cluster, not pod or Service addresses).

use std::fmt::Debug;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Field manager of everything the runner applies.
pub const MANAGER: &str = "graphfleet-bench";

/// A client for the kubeconfig file, else the default (KUBECONFIG, ~/.kube/config, in-cluster).
pub async fn client(kubeconfig: Option<&Path>) -> anyhow::Result<Client> {
    let config = match kubeconfig {
        Some(path) => {
            let kc = Kubeconfig::read_from(path)
                .with_context(|| format!("reading the kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
                .await
                .with_context(|| format!("loading the kubeconfig {}", path.display()))?
        }
        None => kube::Config::infer()
            .await
            .context("no --kubeconfig and no default kubeconfig")?,
    };
    Client::try_from(config).context("building the Kubernetes client")
}

/// Creates or updates `obj` (server-side apply, forced: the runner owns its objects).
pub async fn apply<K>(api: &Api<K>, obj: &K) -> anyhow::Result<K>
where
    K: Resource + Clone + Debug + Serialize + DeserializeOwned,
    K::DynamicType: Default,
{
    let name = obj.meta().name.clone().context("object without a name")?;
    api.patch(
        &name,
        &PatchParams::apply(MANAGER).force(),
        &Patch::Apply(obj),
    )
    .await
    .with_context(|| format!("applying {} {name}", K::kind(&Default::default())))
}

/// Deletes `name` (if present) and waits until it is gone.
pub async fn delete_and_wait<K>(api: &Api<K>, name: &str, timeout: Duration) -> anyhow::Result<()>
where
    K: Resource + Clone + Debug + DeserializeOwned,
    K::DynamicType: Default,
{
    let params = DeleteParams {
        propagation_policy: Some(kube::api::PropagationPolicy::Background),
        ..DeleteParams::default()
    };
    match api.delete(name, &params).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 404 => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("deleting {name}")),
    }
    let start = Instant::now();
    while start.elapsed() < timeout {
        if api.get_opt(name).await?.is_none() {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    bail!(
        "{} {name} still exists {timeout:?} after its deletion",
        K::kind(&Default::default())
    )
}

/// Why a pod cannot start, from its container statuses (image missing, crash loop, ...).
pub fn pod_problem(pod: &Pod) -> Option<String> {
    let status = pod.status.as_ref()?;
    if status.phase.as_deref() == Some("Failed") {
        return Some(format!(
            "pod failed: {}",
            status
                .message
                .clone()
                .or_else(|| status.reason.clone())
                .unwrap_or_default()
        ));
    }
    for c in status.container_statuses.iter().flatten() {
        let state = c.state.as_ref();
        if let Some(w) = state.and_then(|s| s.waiting.as_ref()) {
            let reason = w.reason.as_deref().unwrap_or_default();
            if matches!(
                reason,
                "ErrImageNeverPull"
                    | "ErrImagePull"
                    | "ImagePullBackOff"
                    | "InvalidImageName"
                    | "CreateContainerConfigError"
                    | "CreateContainerError"
                    | "CrashLoopBackOff"
                    | "RunContainerError"
            ) {
                return Some(format!(
                    "container {}: {reason}: {}",
                    c.name,
                    w.message.clone().unwrap_or_default()
                ));
            }
        }
        if c.restart_count > 0
            && let Some(t) = c.last_state.as_ref().and_then(|s| s.terminated.as_ref())
        {
            return Some(format!(
                "container {} exited with code {}: {}",
                c.name,
                t.exit_code,
                t.message.clone().unwrap_or_default()
            ));
        }
    }
    None
}

pub fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Waits until the pod is Ready; fails early when it cannot start.
pub async fn wait_ready(api: &Api<Pod>, name: &str, timeout: Duration) -> anyhow::Result<Pod> {
    let start = Instant::now();
    let mut last = None;
    while start.elapsed() < timeout {
        if let Some(pod) = api.get_opt(name).await? {
            if is_ready(&pod) {
                return Ok(pod);
            }
            if let Some(problem) = pod_problem(&pod) {
                bail!("pod {name}: {problem}");
            }
            last = Some(pod);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let phase = last
        .as_ref()
        .and_then(|p| p.status.as_ref())
        .and_then(|s| s.phase.clone())
        .unwrap_or_else(|| "absent".into());
    bail!("pod {name} not Ready after {timeout:?} (phase {phase})")
}

/// An HTTP request to `service:port` through the API server's service proxy.
pub async fn proxy(
    client: &Client,
    namespace: &str,
    service: &str,
    port: i32,
    method: &str,
    path: &str,
    body: Option<Bytes>,
) -> anyhow::Result<(u16, Bytes)> {
    let uri = format!(
        "/api/v1/namespaces/{namespace}/services/{service}:{port}/proxy{}",
        if path.starts_with('/') {
            path.to_owned()
        } else {
            format!("/{path}")
        }
    );
    let request = http::Request::builder()
        .method(method)
        .uri(&uri)
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .body(kube::client::Body::from(body.unwrap_or_default()))
        .context("building the proxy request")?;
    let response = tokio::time::timeout(Duration::from_secs(30), client.send(request))
        .await
        .with_context(|| format!("{method} {uri}: no answer within 30 s"))?
        .with_context(|| format!("{method} {uri}"))?;
    let status = response.status().as_u16();
    let bytes = response
        .into_body()
        .collect_bytes()
        .await
        .with_context(|| format!("reading the answer of {method} {uri}"))?;
    Ok((status, bytes))
}

/// The object's uid (set once the API server has it).
pub fn uid_of<K: ResourceExt>(obj: &K) -> anyhow::Result<String> {
    obj.uid()
        .with_context(|| format!("{} has no uid", obj.name_any()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        ContainerState, ContainerStateWaiting, ContainerStatus, PodStatus,
    };

    #[test]
    fn a_missing_image_is_a_problem_not_a_wait() {
        let pod = Pod {
            status: Some(PodStatus {
                phase: Some("Pending".into()),
                container_statuses: Some(vec![ContainerStatus {
                    name: "gateway".into(),
                    state: Some(ContainerState {
                        waiting: Some(ContainerStateWaiting {
                            reason: Some("ErrImageNeverPull".into()),
                            message: Some("image not present with pull policy of Never".into()),
                        }),
                        ..ContainerState::default()
                    }),
                    ..ContainerStatus::default()
                }]),
                ..PodStatus::default()
            }),
            ..Pod::default()
        };
        let p = pod_problem(&pod).expect("problem");
        assert!(p.contains("ErrImageNeverPull"), "{p}");
        assert!(pod_problem(&Pod::default()).is_none());
    }
}
