//! A scenario's set deployed as pods behind Services, waited for, and its subgraphs' request
//! count read back.

use super::Config;
use super::cluster::{Cluster, managed};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{Api, ListParams};

use super::objects;
use crate::kube_io;
use crate::progress::progress;

/// The set's subgraph pods and Services and its supergraph ConfigMap, all Ready.
pub(super) async fn deploy_set(
    cfg: &Config,
    cluster: &mut Cluster,
    set: &str,
) -> anyhow::Result<()> {
    let committed = match &cfg.supergraph {
        Some(f) => f.clone(),
        None => cfg
            .repo
            .join("loadtest/sets")
            .join(set)
            .join("supergraph.graphql"),
    };
    let text = std::fs::read_to_string(&committed)
        .with_context(|| format!("reading {}", committed.display()))?;
    let subgraphs = objects::subgraph_names(&text);
    if subgraphs.is_empty() {
        bail!(
            "{} has no subgraph at {}/<name>",
            committed.display(),
            objects::LOCAL_SUBGRAPHS
        );
    }
    let supergraph = objects::rewrite_supergraph(&text, set, &cluster.ns);
    kube_io::apply(
        &cluster.config_maps,
        &objects::supergraph_config_map(set, &cluster.ns, &supergraph),
    )
    .await?;
    let started = Instant::now();
    for sg in &subgraphs {
        kube_io::apply(
            &cluster.services,
            &objects::subgraph_svc(set, sg, &cluster.ns),
        )
        .await?;
        kube_io::apply(
            &cluster.pods,
            &objects::subgraph_pod(set, sg, &cluster.ns, &cfg.images.subgraphs),
        )
        .await?;
    }
    for sg in &subgraphs {
        let name = objects::subgraph_service(set, sg);
        let pod = kube_io::wait_ready(&cluster.pods, &name, Duration::from_secs(120)).await?;
        if let Err(e) = cluster.cgroup(&pod) {
            progress(format!("{name}: {e:#}"));
        }
    }
    progress(format!(
        "set {set}: {} subgraph pods Ready in {:.1} s ({})",
        subgraphs.len(),
        started.elapsed().as_secs_f64(),
        subgraphs.join(", ")
    ));
    Ok(())
}

/// Waits until the Service's EndpointSlice lists the pod as ready, then a little more for
/// kube-proxy to program it: k6 reaches the gateway through the Service's ClusterIP, which
/// refuses connections until then (the API server's proxy, used for the first request,
/// goes to the pod directly and cannot tell).
pub(super) async fn wait_endpoint(
    cluster: &Cluster,
    service: &str,
    pod: &Pod,
) -> anyhow::Result<()> {
    use k8s_openapi::api::discovery::v1::EndpointSlice;
    let ip = pod
        .status
        .as_ref()
        .and_then(|s| s.pod_ip.clone())
        .context("the gateway pod has no IP")?;
    let slices: Api<EndpointSlice> = Api::namespaced(cluster.client.clone(), &cluster.ns);
    let lp = ListParams::default().labels(&format!("kubernetes.io/service-name={service}"));
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(30) {
        let ready = slices.list(&lp).await?.items.iter().any(|slice| {
            slice.endpoints.iter().any(|e| {
                e.addresses.contains(&ip)
                    && e.conditions.as_ref().and_then(|c| c.ready).unwrap_or(false)
            })
        });
        if ready {
            // kube-proxy syncs at most once a second.
            tokio::time::sleep(Duration::from_secs(2)).await;
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    bail!("the Service {service} has no ready endpoint {ip} after 30 s")
}

/// Sum of the subgraph pods' request counters (reset first when `reset`).
pub(super) async fn subgraph_total(cluster: &Cluster, reset: bool) -> anyhow::Result<u64> {
    let lp =
        ListParams::default().labels(&format!("{},{}=subgraph", managed(), objects::ROLE_LABEL));
    let mut total = 0;
    for svc in cluster.services.list(&lp).await?.items {
        let name = svc.name_any();
        let (method, path) = if reset {
            ("POST", "/stats/reset")
        } else {
            ("GET", "/stats")
        };
        let (status, body) = cluster
            .proxy(
                &name,
                objects::SUBGRAPH_PORT,
                method,
                path,
                Some(Bytes::new()),
            )
            .await?;
        if status != 200 {
            bail!(
                "{method} {path} of {name} answered {status}: {}",
                String::from_utf8_lossy(&body)
            );
        }
        let json: serde_json::Value =
            serde_json::from_slice(&body).with_context(|| format!("{name}{path} is not JSON"))?;
        total += json["total"]
            .as_u64()
            .with_context(|| format!("{name}{path} has no \"total\": {json}"))?;
    }
    Ok(total)
}
