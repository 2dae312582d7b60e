//! `--capacity` in the cluster: after the measured run, each gateway alone under LoadTests at
//! rising rates (the host mode's search, `crate::capacity`), each step's CPU from the gateway
//! pod's cgroup and the load side's from the k6 pod's, so the report says what ran out
//! first. Steps check status 200, an object `data` and no `errors` (the host mode checks the
//! length): hashing every answer would make k6 the limit sooner.

use super::Config;
use super::cluster::Cluster;
use super::run::{Serving, run_to_end, window};
use std::time::{Duration, Instant};

use anyhow::Context;
use graphfleet_api::LoadTestPhase;
use kube::ResourceExt;

use super::objects::{self, LoadRun, TargetRun};
use crate::capacity::{self, Capacity, Step};
use crate::config::CapacityConfig;
use crate::podsample::{PodSampler, usage_in};
use crate::progress::progress;
use crate::scenario::Scenario;

/// The CPU limit of a k6 container (the operator's default): a busy share is against it.
const K6_CORES: f64 = 1.0;

/// Searches `gw`'s capacity, from `from` req/s (the measured run's rate) unless told.
pub(super) async fn search(
    cfg: &Config,
    c: &CapacityConfig,
    cluster: &mut Cluster,
    scenario: &Scenario,
    gw: &Serving,
    target: &TargetRun,
    from: u32,
) -> anyhow::Result<Capacity> {
    let ns = cluster.ns.clone();
    let unchecked = TargetRun {
        sha256: String::new(),
        answer: Vec::new(),
        ..target.clone()
    };
    let mut steps: Vec<Step> = Vec::new();
    let mut next = Some(c.start.unwrap_or(from).max(1));
    let deadline =
        Instant::now() + Duration::from_secs(u64::from(c.steps) * (u64::from(c.duration_s) + 150));
    while let Some(rate) = next {
        if steps.len() >= c.steps as usize || Instant::now() > deadline {
            break;
        }
        let name = objects::dns_label(&format!("cap-{}-{}", scenario.name, steps.len()));
        let (_, lt) = LoadRun {
            name: &name,
            scenario: &scenario.name,
            rate,
            duration_s: c.duration_s,
            vus: scenario.load.vus.min(scenario.load.max_vus),
            // Room for a second of the rate in flight: the gateway, not k6's VUs, must be
            // what stops a step.
            max_vus: scenario.load.max_vus.max(rate),
        }
        .build(&ns, std::slice::from_ref(&unchecked));
        let cgroup = cluster.cgroup(&gw.pod)?;
        let sampler = PodSampler::start(
            &gw.pod.name_any(),
            &gw.pod.uid().unwrap_or_default(),
            gw.pod.spec.as_ref().and_then(|s| s.node_name.clone()),
            cgroup,
        );
        let mut k6 = None;
        let done = run_to_end(cluster, &lt, 1, c.duration_s, None, Some(&mut k6)).await;
        let ticks = sampler.finish().await.0;
        let k6_ticks = match k6 {
            Some(s) => Some(s.finish().await.0),
            None => None,
        };
        let done = done.context("capacity step")?;
        let status = done.status.clone().unwrap_or_default();
        let seen = status
            .targets
            .first()
            .context("the step's LoadTest has no target status")?;
        let results = match (seen.phase, &seen.results) {
            (LoadTestPhase::Succeeded, Some(r)) => r.clone(),
            (phase, _) => anyhow::bail!(
                "capacity step at {rate} req/s: LoadTest target {phase:?}: {}",
                seen.message.as_deref().unwrap_or("no message")
            ),
        };
        let window = window(seen, c.duration_s);
        let busy = |t: &[crate::podsample::Tick]| {
            window
                .and_then(|(from, to)| usage_in(t, from, to))
                .map(|u| u.cpu_avg)
        };
        let step = Step {
            target: rate,
            achieved: results.achieved_rate,
            p99: results.latency_ms.p99,
            failures: results.failures,
            dropped: results.dropped_iterations,
            gateway_cpu: busy(&ticks),
            load_busy: k6_ticks
                .as_deref()
                .and_then(busy)
                .map(|cores| cores / K6_CORES),
        };
        progress(format!(
            "{} / {}: capacity step {}: target {rate} req/s, achieved {:.1}, p99 {:.2} ms, {} failures, {} dropped, gateway CPU {}, k6 {} busy{}",
            scenario.name,
            gw.name,
            steps.len() + 1,
            step.achieved,
            step.p99,
            step.failures,
            step.dropped,
            step.gateway_cpu.map_or("-".into(), |c| format!("{c:.2}")),
            step.load_busy
                .map_or("-".into(), |b| format!("{:.0}%", b * 100.0)),
            if step.kept_up() { "" } else { " (fell behind)" }
        ));
        steps.push(step);
        next = capacity::next_rate(&steps, c.factor, cfg.cpus);
    }
    Ok(capacity::analyse(steps, cfg.cpus))
}
