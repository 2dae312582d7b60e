//! The operator at scale on an API-only (kwok) cluster: 100 nodes, 200 Subgraphs, 50
//! GraphGateways, with the operator in this process. Reports how long an SDL change
//! takes to become a checked revision in the gateway's status, the operator's CPU and
//! memory, and the API requests it makes per change. A benchmark, not a test:
//!
//! ```sh
//! scripts/cluster.sh up --nodes kwok --state /tmp/gf-scale
//! KUBECONFIG=/tmp/gf-scale/kubeconfig cargo run --release -p graphfleet-operator --example scale_kwok
//! scripts/cluster.sh down --state /tmp/gf-scale
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use graphfleet_api::{GraphGateway, Subgraph, all_crds};
use graphfleet_operator::controller::{self, Settings};
use graphfleet_operator::metrics::Metrics;
use k8s_openapi::api::core::v1::{Namespace, Node};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Patch, PatchParams, PostParams};
use kube::client::ClientBuilder;
use kube::{Api, Client, Config};
use serde_json::json;

const NODES: usize = 100;
const GATEWAYS: usize = 50;
const SUBGRAPHS_PER_GATEWAY: usize = 4;
const CHANGES: usize = 10;
const NS: &str = "graphfleet-scale";

/// Counts the requests a client sends.
#[derive(Clone)]
struct Counted<S> {
    inner: S,
    count: Arc<AtomicU64>,
}

impl<S, R> tower::Service<R> for Counted<S>
where
    S: tower::Service<R>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> Self::Future {
        self.count.fetch_add(1, Ordering::Relaxed);
        self.inner.call(request)
    }
}

fn sdl(gateway: usize, subgraph: usize, extra: Option<usize>) -> String {
    let extra = extra.map_or(String::new(), |n| format!("  added{n}: Int\n"));
    format!(
        "extend schema @link(url: \"https://specs.apollo.dev/federation/v2.3\", import: [\"@key\"])\n\
         type Query {{\n  g{gateway}s{subgraph}: T{subgraph}\n}}\n\
         type T{subgraph} {{\n  id: ID!\n  name: String\n{extra}}}\n"
    )
}

fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    (ticks(11) + ticks(12)) / 100.0
}

fn memory_mib(key: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |kib| kib / 1024.0)
}

async fn apply_json<K>(api: &Api<K>, name: &str, value: serde_json::Value) -> anyhow::Result<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.patch(
        name,
        &PatchParams::apply("graphfleet-scale").force(),
        &Patch::Apply(value),
    )
    .await
    .with_context(|| format!("apply {name}"))?;
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let config = Config::infer().await.context("a kubeconfig (KUBECONFIG)")?;
    let plain = Client::try_from(config.clone())?;
    let count = Arc::new(AtomicU64::new(0));
    let counter = count.clone();
    let counted = ClientBuilder::try_from(config)?
        .with_layer(&tower::layer::layer_fn(move |inner| Counted {
            inner,
            count: counter.clone(),
        }))
        .build();

    let crds: Api<CustomResourceDefinition> = Api::all(plain.clone());
    for (_, crd) in all_crds() {
        let name = crd.metadata.name.clone().context("a CRD name")?;
        crds.patch(
            &name,
            &PatchParams::apply("graphfleet-scale").force(),
            &Patch::Apply(&crd),
        )
        .await?;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let namespaces: Api<Namespace> = Api::all(plain.clone());
    let _ = namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": NS}}))?,
        )
        .await;
    let nodes: Api<Node> = Api::all(plain.clone());
    for i in 0..NODES {
        let name = format!("scale-router-{i}");
        apply_json(&nodes, &name, json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {
                "name": name,
                "annotations": { "kwok.x-k8s.io/node": "fake" },
                "labels": { "type": "kwok", "graphfleet.dev/pool": "router", "kubernetes.io/hostname": name },
            },
            "spec": { "taints": [{ "key": "graphfleet.dev/pool", "value": "router", "effect": "NoSchedule" }] },
            "status": {
                "allocatable": { "cpu": "32", "memory": "128Gi", "pods": "110" },
                "capacity": { "cpu": "32", "memory": "128Gi", "pods": "110" },
            },
        })).await?;
    }
    let subgraphs: Api<Subgraph> = Api::namespaced(plain.clone(), NS);
    let gateways: Api<GraphGateway> = Api::namespaced(plain.clone(), NS);
    let created = Instant::now();
    for g in 0..GATEWAYS {
        for s in 0..SUBGRAPHS_PER_GATEWAY {
            let name = format!("g{g}-s{s}");
            apply_json(&subgraphs, &name, json!({
                "apiVersion": "graphfleet.dev/v1alpha1", "kind": "Subgraph",
                "metadata": { "name": name, "labels": { "graph": format!("g{g}") } },
                "spec": { "url": format!("http://{name}.svc:4001/graphql"), "sdl": sdl(g, s, None) },
            })).await?;
        }
        apply_json(&gateways, &format!("g{g}"), json!({
            "apiVersion": "graphfleet.dev/v1alpha1", "kind": "GraphGateway",
            "metadata": { "name": format!("g{g}") },
            "spec": {
                "subgraphSelector": { "matchLabels": { "graph": format!("g{g}") } }, "replicas": 2,
                // The router pool, set explicitly: the operator places gateways nowhere in particular.
                "nodeSelector": { "graphfleet.dev/pool": "router" },
                "tolerations": [{ "key": "graphfleet.dev/pool", "operator": "Equal", "value": "router", "effect": "NoSchedule" }],
            },
        })).await?;
    }

    let metrics = Arc::new(Metrics::new());
    let settings = Settings {
        namespace: Some(NS.to_owned()),
        ..Settings::default()
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let cpu_start = cpu_seconds();
    let operator = tokio::spawn(controller::run(counted, metrics, settings, async move {
        let _ = stopped.await;
    }));
    let ready = |gateways: Api<GraphGateway>| async move {
        let list = gateways.list(&Default::default()).await.ok()?;
        let done = list
            .items
            .iter()
            .filter(|gw| {
                gw.status.as_ref().is_some_and(|s| {
                    s.supergraph_hash.is_some()
                        && s.conditions
                            .iter()
                            .any(|c| c.type_ == "Ready" && c.status == "True")
                })
            })
            .count();
        Some(done)
    };
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        if ready(gateways.clone()).await == Some(GATEWAYS) {
            break;
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "not every gateway Ready within 600 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let converged = created.elapsed();
    let cpu_converged = cpu_seconds() - cpu_start;
    let requests_converged = count.load(Ordering::Relaxed);
    // Let the initial rollouts' reconciles settle before measuring changes.
    tokio::time::sleep(Duration::from_secs(10)).await;

    let mut latencies = Vec::new();
    let requests_before = count.load(Ordering::Relaxed);
    let cpu_before = cpu_seconds();
    for change in 0..CHANGES {
        let g = change * (GATEWAYS / CHANGES);
        let before = gateways.get(&format!("g{g}")).await?;
        let old = before
            .status
            .and_then(|s| s.revisions.first().map(|r| r.hash.clone()));
        let started = Instant::now();
        let patch = Patch::Merge(json!({ "spec": { "sdl": sdl(g, 0, Some(change)) } }));
        subgraphs
            .patch(&format!("g{g}-s0"), &PatchParams::default(), &patch)
            .await?;
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let gw = gateways.get(&format!("g{g}")).await?;
            let newest = gw
                .status
                .and_then(|s| s.revisions.first().map(|r| r.hash.clone()));
            if newest.is_some() && newest != old {
                latencies.push(started.elapsed());
                break;
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "change {change} not composed in 120 s"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // Let its rollout's reconciles finish, so each change's requests are its own.
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
    let requests_changes = count.load(Ordering::Relaxed) - requests_before;
    let cpu_changes = cpu_seconds() - cpu_before;
    latencies.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "nodes {NODES}, subgraphs {}, gateways {GATEWAYS}",
        GATEWAYS * SUBGRAPHS_PER_GATEWAY
    );
    println!(
        "converged: every gateway Ready {:.1} s after creation; operator CPU {cpu_converged:.2} s; {requests_converged} API requests",
        converged.as_secs_f64()
    );
    println!(
        "SDL change -> new revision (composed, checked) in status: p50 {:.0} ms, max {:.0} ms over {CHANGES} changes",
        ms(latencies[latencies.len() / 2]),
        ms(*latencies.last().context("latencies")?)
    );
    println!(
        "per change (including the 3 s after it): {:.1} API requests, {:.3} CPU s",
        requests_changes as f64 / CHANGES as f64,
        cpu_changes / CHANGES as f64
    );
    println!(
        "process memory: RSS {:.0} MiB, peak {:.0} MiB",
        memory_mib("VmRSS:"),
        memory_mib("VmHWM:")
    );
    let _ = stop.send(());
    let _ = tokio::time::timeout(Duration::from_secs(20), operator).await;
    Ok(())
}
