//! The cluster connection: the APIs the run uses, the objects it labels as its own, the
//! router node's containerd socket (the gateway pods' cgroups are sampled on this machine).

use super::Config;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use graphfleet_api::{GraphGateway, LoadTest, Subgraph};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, Service};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::{Client, ResourceExt};

use super::objects;
use crate::kube_io;
use crate::podsample::PodCgroup;

/// Everything the runner creates carries this label; leftovers of an earlier run go first.
pub(super) fn managed() -> String {
    format!("{}={}", objects::MANAGED_BY.0, objects::MANAGED_BY.1)
}

pub(super) struct Cluster {
    pub(super) client: Client,
    pub(super) ns: String,
    pub(super) pods: Api<Pod>,
    pub(super) services: Api<Service>,
    pub(super) config_maps: Api<ConfigMap>,
    pub(super) deployments: Api<Deployment>,
    pub(super) subgraphs: Api<Subgraph>,
    pub(super) gateways: Api<GraphGateway>,
    pub(super) loadtests: Api<LoadTest>,
    /// CPUs each node's pods may use, as read from their cgroups.
    pub(super) node_cpus: BTreeMap<String, String>,
    /// The image digest each gateway's container ran (from the pod status).
    pub(super) image_ids: BTreeMap<String, String>,
    pub(super) sys: PathBuf,
}

impl Cluster {
    pub(super) async fn connect(cfg: &Config) -> anyhow::Result<Cluster> {
        let client = kube_io::client(cfg.kubeconfig.as_deref()).await?;
        let ns = cfg.namespace.clone();
        let namespaces: Api<Namespace> = Api::all(client.clone());
        if namespaces
            .get_opt(&ns)
            .await
            .context("reaching the API server")?
            .is_none()
        {
            let obj = Namespace {
                metadata: kube::api::ObjectMeta {
                    name: Some(ns.clone()),
                    ..Default::default()
                },
                ..Namespace::default()
            };
            namespaces
                .create(&PostParams::default(), &obj)
                .await
                .with_context(|| format!("creating namespace {ns}"))?;
        }
        Ok(Cluster {
            pods: Api::namespaced(client.clone(), &ns),
            services: Api::namespaced(client.clone(), &ns),
            config_maps: Api::namespaced(client.clone(), &ns),
            deployments: Api::namespaced(client.clone(), &ns),
            subgraphs: Api::namespaced(client.clone(), &ns),
            gateways: Api::namespaced(client.clone(), &ns),
            loadtests: Api::namespaced(client.clone(), &ns),
            client,
            ns,
            node_cpus: BTreeMap::new(),
            image_ids: BTreeMap::new(),
            sys: PathBuf::from("/sys/fs/cgroup"),
        })
    }

    /// Deletes every object of the runner's with `extra` labels too (e.g. one role).
    pub(super) async fn delete_labelled(&self, extra: &str) -> anyhow::Result<()> {
        let selector = if extra.is_empty() {
            managed()
        } else {
            format!("{},{extra}", managed())
        };
        let lp = ListParams::default().labels(&selector);
        let dp = DeleteParams {
            propagation_policy: Some(kube::api::PropagationPolicy::Background),
            ..DeleteParams::default()
        };
        // Owners first: the operator's objects (Jobs, the gateway's Deployment and
        // ConfigMaps) go with the LoadTests and GraphGateways that own them.
        for lt in self.loadtests.list(&lp).await?.items {
            let _ = self.loadtests.delete(&lt.name_any(), &dp).await;
        }
        for gw in self.gateways.list(&lp).await?.items {
            let _ = self.gateways.delete(&gw.name_any(), &dp).await;
        }
        for sg in self.subgraphs.list(&lp).await?.items {
            let _ = self.subgraphs.delete(&sg.name_any(), &dp).await;
        }
        for d in self.deployments.list(&lp).await?.items {
            let _ = self.deployments.delete(&d.name_any(), &dp).await;
        }
        for svc in self.services.list(&lp).await?.items {
            let _ = self.services.delete(&svc.name_any(), &dp).await;
        }
        let pods = self.pods.list(&lp).await?.items;
        for pod in &pods {
            let _ = self.pods.delete(&pod.name_any(), &dp).await;
        }
        for cm in self.config_maps.list(&lp).await?.items {
            let _ = self.config_maps.delete(&cm.name_any(), &dp).await;
        }
        // The next set's gateways must have the router node to themselves: wait for the
        // pods to go, with everything done in full the operator's (gateway and k6 pods,
        // owned by the runner's GraphGateway and LoadTests) too.
        let operators =
            ListParams::default().labels("app.kubernetes.io/managed-by=graphfleet-operator");
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(90) {
            let gone = self.pods.list(&lp).await?.items.is_empty()
                && (!extra.is_empty() || self.pods.list(&operators).await?.items.is_empty());
            if gone {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        bail!("pods {selector} in {} still exist after 90 s", self.ns)
    }

    /// The pod's cgroup on this machine, noting its node's CPUs.
    pub(super) fn cgroup(&mut self, pod: &Pod) -> anyhow::Result<PodCgroup> {
        let uid = kube_io::uid_of(pod)?;
        let cg = PodCgroup::find(&self.sys, &uid)?;
        if let (Some(node), Some(cpus)) = (
            pod.spec.as_ref().and_then(|s| s.node_name.clone()),
            cg.node_cpus(&self.sys),
        ) {
            self.node_cpus.insert(node, cpus);
        }
        Ok(cg)
    }

    pub(super) async fn proxy(
        &self,
        service: &str,
        port: i32,
        method: &str,
        path: &str,
        body: Option<Bytes>,
    ) -> anyhow::Result<(u16, Bytes)> {
        kube_io::proxy(&self.client, &self.ns, service, port, method, path, body).await
    }
}

/// The containerd socket of the router node of the local cluster whose kubeconfig is given
/// (scripts/cluster.sh keeps both in its state directory).
pub(super) fn router_socket(kubeconfig: Option<&Path>, repo: &Path) -> PathBuf {
    let state = kubeconfig
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| repo.join(".graphfleet/cluster"));
    state.join("nodes/router/containerd/containerd.sock")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_router_socket_is_next_to_the_kubeconfig() {
        assert_eq!(
            router_socket(
                Some(Path::new("/r/.graphfleet/cluster/kubeconfig")),
                Path::new("/x")
            ),
            PathBuf::from("/r/.graphfleet/cluster/nodes/router/containerd/containerd.sock")
        );
        assert_eq!(
            router_socket(None, Path::new("/repo")),
            PathBuf::from("/repo/.graphfleet/cluster/nodes/router/containerd/containerd.sock")
        );
    }
}
