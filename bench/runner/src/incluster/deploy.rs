//! A scenario's set deployed: its subgraphs as pods behind Services with their `Subgraph`
//! resources, graphfleet's GraphGateway composed and Ready, the peers serving the same
//! supergraph; and the subgraphs' request count read back.

use super::Config;
use super::cluster::{Cluster, managed};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use graphfleet_bench_model::sets::Set;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{Api, ListParams};

use super::objects;
use crate::kube_io;
use crate::progress::progress;

/// The set's subgraph pods and Services, all Ready, and their `Subgraph` resources.
pub(super) async fn deploy_set(
    cfg: &Config,
    cluster: &mut Cluster,
    set: &str,
) -> anyhow::Result<()> {
    let defs = set.parse::<Set>().map_err(anyhow::Error::from)?.subgraphs();
    let started = Instant::now();
    for sg in defs {
        kube_io::apply(
            &cluster.services,
            &objects::subgraph_svc(set, sg.name, &cluster.ns),
        )
        .await?;
        kube_io::apply(
            &cluster.pods,
            &objects::subgraph_pod(set, sg.name, &cluster.ns, &cfg.images.subgraphs),
        )
        .await?;
        kube_io::apply(
            &cluster.subgraphs,
            &objects::subgraph_resource(set, sg, &cluster.ns),
        )
        .await?;
    }
    for sg in defs {
        let name = objects::subgraph_service(set, sg.name);
        let pod = kube_io::wait_ready(&cluster.pods, &name, Duration::from_secs(120)).await?;
        if let Err(e) = cluster.cgroup(&pod) {
            progress(format!("{name}: {e:#}"));
        }
    }
    progress(format!(
        "set {set}: {} subgraph pods Ready in {:.1} s ({})",
        defs.len(),
        started.elapsed().as_secs_f64(),
        defs.iter().map(|d| d.name).collect::<Vec<_>>().join(", ")
    ));
    Ok(())
}

/// graphfleet's GraphGateway for the set, once the operator composed the set's Subgraphs
/// and its pod serves: the GraphGateway's name, the supergraph revision ConfigMap it serves
/// (the peers get the same one) and its pod.
pub(super) async fn deploy_fleet(
    cfg: &Config,
    cluster: &Cluster,
    set: &str,
) -> anyhow::Result<(String, String, Pod)> {
    let gw = objects::graph_gateway(set, &cluster.ns, &cfg.images.gateway, &budget(cfg));
    let name = gw.name_any();
    kube_io::apply(&cluster.gateways, &gw).await?;
    let started = Instant::now();
    let limit = cfg.start_timeout + Duration::from_secs(60);
    let served = loop {
        let now = cluster.gateways.get(&name).await?;
        let status = now.status.clone().unwrap_or_default();
        let condition = |t: &str| status.conditions.iter().find(|c| c.type_ == t).cloned();
        if let Some(c) = condition("Composed")
            && c.status == "False"
        {
            bail!(
                "GraphGateway {name} did not compose: {} ({})",
                c.message,
                c.reason
            );
        }
        if condition("Ready").is_some_and(|c| c.status == "True")
            && let Some(hash) = status.supergraph_hash.clone()
        {
            break hash;
        }
        if started.elapsed() > limit {
            bail!(
                "GraphGateway {name} not Ready after {limit:?} (is the operator installed? `helm install graphfleet charts/graphfleet`): {:?}",
                status
                    .conditions
                    .iter()
                    .map(|c| format!("{}={} {}", c.type_, c.status, c.message))
                    .collect::<Vec<_>>()
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let pod = fleet_pod(cluster, &name).await?;
    progress(format!(
        "set {set}: GraphGateway {name} Ready in {:.1} s, supergraph {served}, pod {} on {}",
        started.elapsed().as_secs_f64(),
        pod.name_any(),
        pod.spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .unwrap_or("?")
    ));
    Ok((
        name.clone(),
        graphfleet_api::supergraph_config_map_name(&name, &served),
        pod,
    ))
}

/// The GraphGateway's one Ready pod (an old one may still be going).
async fn fleet_pod(cluster: &Cluster, gateway: &str) -> anyhow::Result<Pod> {
    let lp = ListParams::default().labels(&format!("app.kubernetes.io/instance={gateway}"));
    let start = Instant::now();
    loop {
        let pods = cluster.pods.list(&lp).await?.items;
        let ready: Vec<Pod> = pods
            .into_iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none() && kube_io::is_ready(p))
            .collect();
        if let [pod] = ready.as_slice() {
            return Ok(pod.clone());
        }
        if start.elapsed() > Duration::from_secs(60) {
            bail!(
                "GraphGateway {gateway} has {} Ready pods, expected 1",
                ready.len()
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn budget(cfg: &Config) -> objects::Budget {
    objects::Budget {
        cpus: cfg.cpus,
        memory: cfg.memory.clone(),
        gateways: cfg.gateways.len(),
    }
}

/// A peer's Deployment and Service serving the fleet's supergraph, and its Ready pod.
pub(super) async fn deploy_peer(
    cfg: &Config,
    cluster: &Cluster,
    gateway: &str,
    container: &objects::GatewayContainer,
    supergraph: &str,
) -> anyhow::Result<Pod> {
    let ns = &cluster.ns;
    kube_io::apply(&cluster.services, &objects::gateway_svc(gateway, ns)).await?;
    let deployment = objects::peer_deployment(gateway, ns, container, supergraph, &budget(cfg));
    kube_io::apply(&cluster.deployments, &deployment).await?;
    let lp = ListParams::default().labels(&format!("{}={gateway}", objects::GATEWAY_LABEL));
    let start = Instant::now();
    loop {
        let pods = cluster.pods.list(&lp).await?.items;
        if let Some(pod) = pods.iter().find(|p| kube_io::is_ready(p)) {
            return Ok(pod.clone());
        }
        if let Some(problem) = pods.iter().find_map(kube_io::pod_problem) {
            bail!("{gateway}: {problem}");
        }
        if start.elapsed() > cfg.start_timeout {
            bail!("{gateway} not Ready after {:?}", cfg.start_timeout);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
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
