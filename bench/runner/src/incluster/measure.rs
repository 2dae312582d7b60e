//! One scenario measured on every gateway of the set: each gateway's first answer judged
//! against the monolith's, a warm-up LoadTest, then the measured LoadTest with every gateway
//! a target (the operator runs them in turn, never at once), while each gateway pod's cgroup
//! and the subgraphs' request counters are sampled on this machine.

use super::Config;
use super::cluster::Cluster;
use super::run::{Serving, run_to_end, window};
use std::path::Path;

use anyhow::{Context, bail};
use bytes::Bytes;
use graphfleet_api::{LoadTestPhase, TargetStatus};
use kube::ResourceExt;

use super::objects::{self, LoadRun, TargetRun};
use crate::k6::Expected;
use crate::kube_io;
use crate::oracle::judge;
use crate::podsample::{PodSampler, Tick};
use crate::progress::progress;
use crate::results::Measured;
use crate::scenario::Scenario;

/// Each serving gateway's measured run, or why it has none, in the order given.
#[allow(clippy::too_many_arguments)]
pub(super) async fn measure_all(
    cfg: &Config,
    cluster: &mut Cluster,
    scenario: &Scenario,
    rate: u32,
    serving: &[Serving],
    body: &str,
    expected: &Expected,
    dir: &Path,
) -> Vec<(String, anyhow::Result<Measured>)> {
    let mut out: Vec<(String, anyhow::Result<Measured>)> = Vec::new();
    let mut targets = Vec::new();
    let mut loaded: Vec<&Serving> = Vec::new();
    for gw in serving {
        match first_answer(cluster, gw, body, expected, dir).await {
            Ok(target) => {
                targets.push(target);
                loaded.push(gw);
            }
            Err(e) => out.push((gw.name.clone(), Err(e))),
        }
    }
    if targets.is_empty() {
        return out;
    }
    let measured = load(cfg, cluster, scenario, rate, &loaded, &targets, dir).await;
    match measured {
        Ok(runs) => out.extend(runs),
        Err(e) => {
            let why = format!("{e:#}");
            out.extend(
                loaded
                    .iter()
                    .map(|gw| (gw.name.clone(), Err(anyhow::anyhow!("{why}")))),
            );
        }
    }
    // Back in the order the gateways were given.
    out.sort_by_key(|(name, _)| serving.iter().position(|s| &s.name == name));
    out
}

/// The gateway's first answer, judged against the monolith's: the target's expected bytes.
async fn first_answer(
    cluster: &Cluster,
    gw: &Serving,
    body: &str,
    expected: &Expected,
    dir: &Path,
) -> anyhow::Result<TargetRun> {
    let (status, got) = cluster
        .proxy(
            &gw.service,
            gw.port,
            "POST",
            &gw.path,
            Some(Bytes::from(body.to_owned())),
        )
        .await
        .with_context(|| format!("{}: first request", gw.name))?;
    let answer = judge(status, &got, expected, dir, &gw.name)?;
    Ok(TargetRun {
        name: gw.name.clone(),
        gateway_ref: gw.gateway_ref.clone(),
        url: gw.gateway_ref.is_none().then(|| gw.url.clone()),
        sha256: answer.sha256.clone(),
        answer: std::fs::read(&answer.file).context("reading the expected answer")?,
    })
}

/// The warm-up and measured LoadTests, and each target's results.
async fn load(
    cfg: &Config,
    cluster: &mut Cluster,
    scenario: &Scenario,
    rate: u32,
    loaded: &[&Serving],
    targets: &[TargetRun],
    dir: &Path,
) -> anyhow::Result<Vec<(String, anyhow::Result<Measured>)>> {
    let name = objects::dns_label(&format!("bench-{}", scenario.name));
    let ns = cluster.ns.clone();
    let run = |name: &str, duration_s: u32| {
        LoadRun {
            name: &objects::dns_label(name),
            scenario: &scenario.name,
            rate,
            duration_s,
            vus: scenario.load.vus.min(scenario.load.max_vus),
            max_vus: scenario.load.max_vus,
        }
        .build(&ns, targets)
    };
    if cfg.warmup_s > 0 {
        let (cm, lt) = run(&format!("{name}-warmup"), cfg.warmup_s);
        kube_io::apply(&cluster.config_maps, &cm).await?;
        let done = run_to_end(cluster, &lt, targets.len(), cfg.warmup_s, None, None).await?;
        for t in &done.status.clone().unwrap_or_default().targets {
            let r = t.results.as_ref();
            progress(format!(
                "{} / {}: warm-up {:?}, {} requests, {} failures",
                scenario.name,
                t.name,
                t.phase,
                r.map_or(0, |r| r.requests),
                r.map_or(0, |r| r.failures)
            ));
        }
    }
    let mut samplers = Vec::new();
    let mut throttled = Vec::new();
    for gw in loaded {
        match cluster.cgroup(&gw.pod) {
            Ok(cg) => samplers.push((gw.name.clone(), {
                throttled.push((gw.name.clone(), cg.clone(), cg.throttling(&cluster.sys)));
                PodSampler::start(
                    &gw.pod.name_any(),
                    &gw.pod.uid().unwrap_or_default(),
                    gw.pod.spec.as_ref().and_then(|s| s.node_name.clone()),
                    cg,
                )
            })),
            Err(e) => progress(format!("{}: resources not sampled: {e:#}", gw.name)),
        }
    }
    let (cm, lt) = run(&name, cfg.duration_s);
    kube_io::apply(&cluster.config_maps, &cm).await?;
    let mut counts: Vec<(f64, u64)> = Vec::new();
    let done = run_to_end(
        cluster,
        &lt,
        targets.len(),
        cfg.duration_s,
        Some(&mut counts),
        None,
    )
    .await;
    let mut ticks: Vec<(String, Vec<Tick>)> = Vec::new();
    for (gw, sampler) in samplers {
        ticks.push((gw, sampler.finish().await.0));
    }
    // CFS throttling over the whole LoadTest: the other targets' turns leave a pod idle.
    let throttled: Vec<(String, String)> = throttled
        .into_iter()
        .filter_map(|(gw, cg, before)| {
            let ((n0, s0), (n1, s1)) = (before?, cg.throttling(&cluster.sys)?);
            Some((
                gw,
                format!(", CFS-throttled {} periods ({:.2} s)", n1 - n0, s1 - s0),
            ))
        })
        .collect();
    let done = done?;
    let status = done.status.clone().unwrap_or_default();
    std::fs::write(
        dir.join(format!("{name}.status.json")),
        serde_json::to_vec_pretty(&status).unwrap_or_default(),
    )
    .context("writing the LoadTest's status")?;
    let mut out = Vec::new();
    for (t, gw) in targets.iter().zip(loaded) {
        let seen = status.targets.iter().find(|s| s.name == t.name);
        let samples = ticks
            .iter()
            .find(|(g, _)| g == &t.name)
            .map(|(_, v)| v.as_slice());
        let mut result = measured(scenario, rate, cfg.duration_s, seen, samples, &counts);
        if let Ok(m) = &result {
            let throttled = throttled
                .iter()
                .find(|(g, _)| g == &t.name)
                .map_or("", |(_, s)| s);
            report(scenario, &t.name, m, throttled);
        }
        if let (Ok(m), Some(c)) = (&mut result, &cfg.capacity) {
            match super::capacity::search(cfg, c, cluster, scenario, gw, t, rate).await {
                Ok(found) => m.capacity = Some(found),
                Err(e) => result = Err(e.context("capacity search")),
            }
        }
        out.push((t.name.clone(), result));
    }
    Ok(out)
}

/// Requests the subgraphs counted between `from` and `to`: the last reading before the
/// window to the first after it (readings every half second; targets are seconds apart).
fn requests_in(counts: &[(f64, u64)], from: f64, to: f64) -> Option<u64> {
    let before = counts.iter().rev().find(|(at, _)| *at <= from)?.1;
    let after = counts.iter().find(|(at, _)| *at >= to)?.1;
    after.checked_sub(before)
}

/// One target's measured run from the LoadTest's status and this machine's samples.
fn measured(
    scenario: &Scenario,
    rate: u32,
    duration_s: u32,
    seen: Option<&TargetStatus>,
    ticks: Option<&[Tick]>,
    counts: &[(f64, u64)],
) -> anyhow::Result<Measured> {
    let seen = seen.context("the LoadTest's status has no entry for this target")?;
    let results = match (seen.phase, &seen.results) {
        (LoadTestPhase::Succeeded, Some(r)) => r,
        (phase, _) => bail!(
            "LoadTest target {phase:?}: {}",
            seen.message.as_deref().unwrap_or("no message")
        ),
    };
    let summary = crate::loadtests::summary_of(results, f64::from(rate), f64::from(duration_s));
    let window = window(seen, duration_s);
    let usage = match (ticks, window) {
        (Some(ticks), Some((from, to))) => crate::podsample::usage_in(ticks, from, to),
        _ => None,
    };
    if usage.is_none() {
        progress(format!(
            "{} / {}: no CPU and memory samples in the run's window",
            scenario.name, seen.name
        ));
    }
    Ok(Measured {
        summary,
        usage,
        subgraph_requests: window.and_then(|(from, to)| requests_in(counts, from, to)),
        capacity: None,
    })
}

fn report(scenario: &Scenario, gateway: &str, m: &Measured, throttled: &str) {
    let s = &m.summary;
    progress(format!(
        "{} / {gateway}: {} requests, {} failures, {} dropped, {:.1} req/s, p99 {:.2} ms, CPU {}, mem max {}{throttled}",
        scenario.name,
        s.requests,
        s.failures,
        s.dropped_iterations,
        s.achieved_rate.unwrap_or(0.0),
        s.latency_ms.map_or(0.0, |l| l.p99),
        m.usage
            .map_or("-".into(), |u| format!("{:.0}%", u.cpu_avg * 100.0)),
        m.usage.map_or("-".into(), |u| format!(
            "{:.0} MiB",
            u.mem_max as f64 / 1048576.0
        )),
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subgraph_requests_count_from_the_reading_before_to_the_one_after() {
        let counts = [
            (9.5, 100),
            (10.0, 100),
            (10.5, 130),
            (20.0, 900),
            (20.5, 1000),
            (30.0, 1500),
        ];
        assert_eq!(requests_in(&counts, 10.2, 20.2), Some(900));
        assert_eq!(requests_in(&counts, 10.0, 20.5), Some(900));
        assert_eq!(requests_in(&counts, 5.0, 20.0), None, "no reading before");
        assert_eq!(requests_in(&counts, 10.0, 31.0), None, "no reading after");
    }
}
