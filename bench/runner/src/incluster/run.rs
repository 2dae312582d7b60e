//! Running the bench's LoadTests: a gateway that serves the set, a LoadTest polled to its end
//! (reading the subgraphs' counters and sampling its k6 pod as it goes), and when a target's
//! load ran. Used by the measured run (`measure`) and the capacity search (`capacity`).

use super::cluster::Cluster;
use super::deploy::subgraph_total;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use graphfleet_api::{LoadTest, LoadTestPhase, TargetStatus};
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::PostParams;

use crate::kube_io;
use crate::podsample::PodSampler;

/// A gateway serving the set, ready for load.
pub(super) struct Serving {
    pub(super) name: String,
    pub(super) pod: Pod,
    /// The Service the first request goes to (through the API server) and its port.
    pub(super) service: String,
    pub(super) port: i32,
    pub(super) path: String,
    /// graphfleet's GraphGateway (a `gatewayRef` target), else the peer's URL.
    pub(super) gateway_ref: Option<String>,
    pub(super) url: String,
}

/// Creates the LoadTest (replacing an earlier run's) and polls it to its end, reading the
/// subgraphs' request counters at every poll when `counts` is given, and sampling its
/// (first) k6 pod's cgroup into `k6` once that runs, when given.
pub(super) async fn run_to_end(
    cluster: &Cluster,
    lt: &LoadTest,
    targets: usize,
    duration_s: u32,
    mut counts: Option<&mut Vec<(f64, u64)>>,
    mut k6: Option<&mut Option<PodSampler>>,
) -> anyhow::Result<LoadTest> {
    let name = lt.name_any();
    kube_io::delete_and_wait(&cluster.loadtests, &name, Duration::from_secs(60)).await?;
    cluster
        .loadtests
        .create(&PostParams::default(), lt)
        .await
        .with_context(|| format!("creating LoadTest {name}"))?;
    // Each target: its pods start, the run, k6's graceful stop and the summary.
    let limit = Duration::from_secs((u64::from(duration_s) + 150) * targets as u64);
    let start = Instant::now();
    loop {
        if let Some(counts) = counts.as_deref_mut() {
            let total = subgraph_total(cluster, false).await?;
            counts.push((crate::host::unix_now(), total));
        }
        if let Some(slot) = k6.as_deref_mut()
            && slot.is_none()
        {
            *slot = k6_sampler(cluster, &name).await;
        }
        let now = cluster.loadtests.get(&name).await?;
        let phase = now.status.as_ref().and_then(|s| s.phase);
        if matches!(
            phase,
            Some(LoadTestPhase::Succeeded | LoadTestPhase::Failed | LoadTestPhase::Aborted)
        ) {
            return Ok(now);
        }
        if start.elapsed() > limit {
            bail!(
                "LoadTest {name} not finished after {limit:?} (phase {phase:?}): {}",
                now.status
                    .as_ref()
                    .and_then(|s| s.message.clone())
                    .unwrap_or_default()
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// A sampler of the LoadTest's k6 pod once it runs (the operator labels it with the
/// LoadTest's name).
async fn k6_sampler(cluster: &Cluster, lt: &str) -> Option<PodSampler> {
    let lp = kube::api::ListParams::default().labels(&format!("graphfleet.dev/loadtest={lt}"));
    let pods = cluster.pods.list(&lp).await.ok()?.items;
    let pod = pods
        .iter()
        .find(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))?;
    let uid = pod.uid()?;
    let cgroup = crate::podsample::PodCgroup::find(&cluster.sys, &uid).ok()?;
    Some(PodSampler::start(
        &pod.name_any(),
        &uid,
        pod.spec.as_ref().and_then(|s| s.node_name.clone()),
        cgroup,
    ))
}

/// When a target's load ran, Unix seconds: from its segments' start (all resumed together)
/// for the planned duration.
pub(super) fn window(target: &TargetStatus, duration_s: u32) -> Option<(f64, f64)> {
    let micros = |t: &k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime| {
        t.0.as_microsecond() as f64 / 1e6
    };
    let start = target
        .segments
        .iter()
        .filter_map(|s| s.resumed_at.as_ref().or(s.started_at.as_ref()))
        .map(micros)
        .reduce(f64::max)?;
    Some((start, start + f64::from(duration_s)))
}
