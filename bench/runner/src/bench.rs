//! The benchmark loop: per scenario, start the set's subgraphs, ask the monolith for the
//! expected answer, then per gateway start it under its CPU budget, warm up, measure with
//! the load generator (native or k6) while sampling /proc, read the subgraph counters and
//! optionally search capacity.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use tokio::process::Child;

use crate::capacity::{self, Step};
use crate::config::{Config, Generator};
use crate::driver::Driver;
use crate::gateway::{Gateway, Kind, Slots};
use crate::http::Client;
use crate::k6::{Check, Expected, Summary};
use crate::openload::Ramp;
use crate::oracle::{conformance, oracle};
use crate::process::{self, Cgroup};
use crate::progress::progress;
use crate::results::{GatewayInfo, GatewayRun, Measured, Outcome, Report, ScenarioRun, System};
use crate::sampler::{self, CoreTimes, Sampler};
use crate::scenario::Scenario;
use crate::servers::{SetServers, free_port, launch_gateway, start_set, wait_ready};

pub async fn run(cfg: &Config) -> anyhow::Result<Report> {
    let work = cfg.out.join("work");
    std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
    let client = Client::new();
    let mut scenarios = Vec::new();
    for scenario in &cfg.scenarios {
        // Smoke runs are about correctness: a fifth of the scenario's rate, 1 to 5 req/s.
        let rate = match (cfg.rate, cfg.smoke) {
            (Some(r), _) => r,
            (None, true) => (scenario.load.rate / 5).clamp(1, 5),
            (None, false) => scenario.load.rate,
        };
        let mut run = ScenarioRun::starting(scenario, rate, cfg.duration_s, cfg.generator.name());
        progress(format!(
            "scenario {} (set {}, {rate} req/s for {} s)",
            scenario.name, scenario.set, cfg.duration_s
        ));
        let result = if scenario.name == graphfleet_bench_model::scenarios::SUBSCRIPTIONS {
            run.rate = cfg.fanout.subscribers.iter().copied().max().unwrap_or(0);
            crate::fanout::run_scenario(cfg, &cfg.fanout, &client, scenario, &work, &mut run).await
        } else {
            run_scenario(cfg, &client, scenario, rate, &work, &mut run).await
        };
        if let Err(e) = result {
            progress(format!("scenario {} failed: {e:#}", scenario.name));
            run.error = Some(format!("{e:#}"));
        }
        scenarios.push(run);
    }
    Ok(Report {
        smoke: cfg.smoke,
        system: system_info(cfg).await.facts(),
        gateways: cfg
            .gateways
            .iter()
            .map(|(g, installed, version)| GatewayInfo {
                name: g.name.clone(),
                label: g.label.clone(),
                version: version.clone(),
                status: match installed {
                    Ok(Some(p)) => format!("`{}`", p.display()),
                    Ok(None) => match &g.kind {
                        Kind::Custom { template } => format!("command `{template}`"),
                        _ => "ready".into(),
                    },
                    Err(e) => format!("**{}**", e.lines().next().unwrap_or_default()),
                },
            })
            .collect(),
        scenarios,
        timings: Vec::new(),
    })
}

async fn run_scenario(
    cfg: &Config,
    client: &Client,
    scenario: &Scenario,
    rate: u32,
    work: &Path,
    run: &mut ScenarioRun,
) -> anyhow::Result<()> {
    let dir = work.join(&scenario.name);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let payload = dir.join("payload.json");
    let body = scenario.payload()?;
    std::fs::write(&payload, &body).context("writing the payload")?;
    let expected = oracle(cfg.server(), client, scenario, &body, &dir).await?;
    run.response_bytes = Some(expected.bytes);
    let mut servers = start_set(cfg, client, &scenario.set, &dir).await?;
    // Outcomes by gateway, one per round; the gateways take turns within each round.
    let mut rounds: Vec<Vec<Outcome>> = vec![Vec::new(); cfg.gateways.len()];
    for round in 0..cfg.rounds {
        if cfg.rounds > 1 {
            progress(format!(
                "{}: round {} of {}",
                scenario.name,
                round + 1,
                cfg.rounds
            ));
        }
        for ((gateway, installed, _), outcomes) in cfg.gateways.iter().zip(&mut rounds) {
            let outcome = match installed {
                Err(e) => Outcome::NotInstalled { error: e.clone() },
                Ok(bin) => {
                    let result = measure(
                        cfg,
                        client,
                        scenario,
                        rate,
                        gateway,
                        bin.as_deref(),
                        &servers,
                        &payload,
                        &expected,
                        &dir,
                    )
                    .await;
                    Outcome::from_run(result, &scenario.name, &gateway.name)
                }
            };
            outcomes.push(outcome);
        }
    }
    for ((gateway, _, _), outcomes) in cfg.gateways.iter().zip(rounds) {
        let (outcome, per_core_second) = pick_rounds(outcomes);
        run.gateways.push(GatewayRun {
            gateway: gateway.name.clone(),
            label: gateway.label.clone(),
            outcome,
            rounds: per_core_second,
        });
    }
    process::stop(&mut servers.subgraphs).await;
    Ok(())
}

/// The outcome a gateway's rounds report: the first failure when any round failed (a
/// failure is never hidden by a good round), else the round with the median
/// requests/core.s (the lower middle one of an even count), so every figure shown comes
/// from one real run. Also each round's requests/core.s when there were several.
pub(crate) fn pick_rounds(mut outcomes: Vec<Outcome>) -> (Outcome, Vec<f64>) {
    let rate = |o: &Outcome| match o {
        Outcome::Measured(m) => m.per_core_second(),
        _ => None,
    };
    if let Some(i) = outcomes
        .iter()
        .position(|o| !matches!(o, Outcome::Measured(_)))
    {
        return (outcomes.swap_remove(i), Vec::new());
    }
    let rates: Vec<f64> = outcomes.iter().filter_map(rate).collect();
    let mut order: Vec<usize> = (0..outcomes.len()).collect();
    order.sort_by(|a, b| {
        let (a, b) = (rate(&outcomes[*a]), rate(&outcomes[*b]));
        a.unwrap_or(0.0).total_cmp(&b.unwrap_or(0.0))
    });
    let Some(&median) = order.get(order.len().saturating_sub(1) / 2) else {
        return (
            Outcome::Failed {
                error: "no round ran".into(),
            },
            Vec::new(),
        );
    };
    let shown = if outcomes.len() > 1 {
        rates
    } else {
        Vec::new()
    };
    (outcomes.swap_remove(median), shown)
}

async fn subgraph_total(client: &Client, base: &str, reset: bool) -> anyhow::Result<u64> {
    let url = format!("{base}/stats{}", if reset { "/reset" } else { "" });
    let (status, body) = if reset {
        client.post_json(&url, Bytes::new()).await?
    } else {
        client.get(&url).await?
    };
    if status != 200 {
        bail!("{url} answered {status}");
    }
    let json: serde_json::Value =
        serde_json::from_slice(&body).with_context(|| format!("{url} is not JSON"))?;
    json["total"]
        .as_u64()
        .with_context(|| format!("{url} has no \"total\": {json}"))
}

#[allow(clippy::too_many_arguments)]
async fn measure(
    cfg: &Config,
    client: &Client,
    scenario: &Scenario,
    rate: u32,
    gateway: &Gateway,
    bin: Option<&Path>,
    servers: &SetServers,
    payload: &Path,
    expected: &Expected,
    dir: &Path,
) -> anyhow::Result<Measured> {
    let tag = format!("{}-{}", scenario.name, gateway.name);
    let port = free_port()?;
    let slots = Slots {
        supergraph: &servers.supergraph,
        host: "127.0.0.1",
        port,
        set: &scenario.set,
    };
    let command = gateway.command(bin, &slots, cfg.placement.cpus)?;
    let log = dir.join(format!("{}.log", gateway.name));
    let (mut child, cgroup) = launch_gateway(&cfg.placement, command, &tag, &log)?;
    let result = measure_running(
        cfg,
        client,
        scenario,
        rate,
        gateway,
        &mut child,
        port,
        servers,
        payload,
        expected,
        dir,
        &log,
        cgroup.as_ref(),
    )
    .await;
    process::stop(&mut child).await;
    drop(cgroup);
    result
}

/// Requests a capacity step at `rate` may have open: `rate` × twice `p99_s` (at least
/// 100 ms), plus one.
fn in_flight_for(rate: u32, p99_s: f64) -> u32 {
    let window = (2.0 * p99_s).max(0.1);
    (f64::from(rate) * window).ceil() as u32 + 1
}

#[allow(clippy::too_many_arguments)]
async fn measure_running(
    cfg: &Config,
    client: &Client,
    scenario: &Scenario,
    rate: u32,
    gateway: &Gateway,
    child: &mut Child,
    port: u16,
    servers: &SetServers,
    payload: &Path,
    expected: &Expected,
    dir: &Path,
    log: &Path,
    cgroup: Option<&Cgroup>,
) -> anyhow::Result<Measured> {
    let pid = child.id().context("the gateway exited immediately")?;
    let url = format!("http://127.0.0.1:{port}{}", gateway.graphql_path);
    let started = Instant::now();
    wait_ready(client, child, &url, cfg.start_timeout, &gateway.name, log).await?;
    progress(format!(
        "{} / {}: ready in {:.1} s",
        scenario.name,
        gateway.name,
        started.elapsed().as_secs_f64()
    ));
    let expected = &conformance(client, &url, payload, expected, dir, &gateway.name).await?;
    let load = scenario.load;
    let driver = Driver::new(cfg, scenario, &url, payload, expected, dir, &gateway.name)?;
    let k6_run = |check: Check, rate: u32, duration_s: u32, max_vus: u32, ramp: Option<Ramp>| {
        driver.run(
            check,
            rate,
            duration_s,
            load.vus.min(max_vus),
            max_vus,
            ramp,
        )
    };
    if cfg.warmup_s > 0 {
        let w = k6_run(Check::Full, rate, cfg.warmup_s, load.max_vus, None)
            .await
            .context("warm-up")?;
        progress(format!(
            "{} / {}: warm-up {} requests, {} failures",
            scenario.name, gateway.name, w.requests, w.failures
        ));
    }
    subgraph_total(client, &servers.base, true).await?;
    let throttled_before = cgroup.and_then(Cgroup::throttling);
    let sampler = Sampler::start(pid);
    let summary = k6_run(cfg.check, rate, cfg.duration_s, load.max_vus, None).await;
    let usage = sampler::usage(&sampler.finish().await);
    let throttled = throttled_since(throttled_before, cgroup);
    let summary = summary.context("measured run")?;
    let subgraph_requests = subgraph_total(client, &servers.base, false).await?;
    progress(format!(
        "{} / {}: {} requests, {} failures, {} dropped, {:.1} req/s, p99 {:.2} ms, CPU {:.0}%, RSS max {:.0} MiB{throttled}{}",
        scenario.name,
        gateway.name,
        summary.requests,
        summary.failures,
        summary.dropped_iterations,
        summary.achieved_rate.unwrap_or(0.0),
        summary.latency_ms.map_or(0.0, |l| l.p99),
        usage.cpu_avg * 100.0,
        usage.mem_max as f64 / 1048576.0,
        driver.lag_note()
    ));
    let mut capacity = None;
    if let Some(c) = cfg.capacity {
        let mut steps: Vec<Step> = Vec::new();
        // The load generator's and subgraphs' cores, when they have their own.
        let load_cores = cfg
            .placement
            .others
            .as_deref()
            .and_then(process::parse_cpu_list)
            .unwrap_or_default();
        let measured_p99_s = summary.latency_ms.map_or(0.0, |l| l.p99 / 1000.0);
        let mut next = Some(c.start.unwrap_or(rate).max(1));
        let deadline = Instant::now()
            + Duration::from_secs(u64::from(c.steps) * (u64::from(c.duration_s) + 75));
        while let Some(target) = next {
            if steps.len() >= c.steps as usize || Instant::now() > deadline {
                break;
            }
            // Enough VUs for twice the measured run's p99 (at least 100 ms) at the target
            // rate, never fewer than the scenario's: a slow scenario (chain: 250 ms) must not
            // be capped by its in-flight limit instead of by the gateway.
            let max_vus = load.max_vus.max(in_flight_for(target, measured_p99_s));
            let sampler = Sampler::start(pid);
            let throttled_before = cgroup.and_then(Cgroup::throttling);
            let cores_before = CoreTimes::read(&load_cores);
            // From the rate before (the measured run's, first), so the step measures its
            // rate and not the jump to it.
            let from = steps.last().map_or(rate, |s| s.target);
            let ramp = (!c.ramp.is_zero()).then_some(Ramp { from, over: c.ramp });
            let s = k6_run(Check::Length, target, c.duration_s, max_vus, ramp).await;
            let load_busy = cores_before
                .zip(CoreTimes::read(&load_cores))
                .and_then(|(before, after)| after.busy_since(&before));
            let used = sampler::usage(&sampler.finish().await);
            let throttled = throttled_since(throttled_before, cgroup);
            let s: Summary = s.context("capacity step")?;
            let step = Step {
                target,
                achieved: s.achieved_rate.unwrap_or(0.0),
                p99: s.latency_ms.map_or(f64::INFINITY, |l| l.p99),
                failures: s.failures,
                dropped: s.dropped_iterations,
                gateway_cpu: (used.seconds > 0.0).then(|| used.cpu_seconds / used.seconds),
                load_busy,
            };
            progress(format!(
                "{} / {}: capacity step {}: target {target} req/s, achieved {:.1}, p99 {:.2} ms, {} failures, {} dropped, gateway CPU {}{throttled}, load cores {} busy{}{}",
                scenario.name,
                gateway.name,
                steps.len() + 1,
                step.achieved,
                step.p99,
                step.failures,
                step.dropped,
                step.gateway_cpu.map_or("-".into(), |c| format!("{c:.2}")),
                step.load_busy
                    .map_or("-".into(), |b| format!("{:.0}%", b * 100.0)),
                driver.lag_note(),
                if step.kept_up() { "" } else { " (fell behind)" }
            ));
            steps.push(step);
            next = capacity::next_rate(&steps, c.factor, cfg.placement.cpus);
        }
        capacity = Some(capacity::analyse(steps, cfg.placement.cpus));
    }
    Ok(Measured {
        summary,
        usage: Some(usage),
        subgraph_requests: Some(subgraph_requests),
        capacity,
    })
}

/// ", CFS-throttled N periods (S s)" since `before` (the gateway cgroup's `cpu.stat`), or
/// nothing without a cgroup.
fn throttled_since(before: Option<(u64, f64)>, cgroup: Option<&Cgroup>) -> String {
    match (before, cgroup.and_then(Cgroup::throttling)) {
        (Some((n0, s0)), Some((n1, s1))) => {
            format!(", CFS-throttled {} periods ({:.2} s)", n1 - n0, s1 - s0)
        }
        _ => String::new(),
    }
}

async fn system_info(cfg: &Config) -> System {
    let machine = crate::host::Machine::this();
    let load_generator = match (&cfg.k6, cfg.generator) {
        (Some(k6), Generator::K6) => crate::host::output(&k6.to_string_lossy(), &["version"])
            .await
            .unwrap_or_else(|| "k6 (version unknown)".into()),
        _ => format!(
            "native (graphfleet-bench {}: hyper HTTP/1.1 keep-alive, one current-thread runtime and a scheduler thread on the non-gateway cores, latency from each request's scheduled time, in the LoadTest report's log buckets (within 1%))",
            env!("CARGO_PKG_VERSION")
        ),
    };
    let probe = Cgroup::create("probe", cfg.placement.cpus);
    let limit = match &probe {
        Some(cg) => format!("{} cores ({} + taskset)", cfg.placement.cpus, cg.kind),
        None => format!(
            "{} cores (taskset only: no writable cgroup)",
            cfg.placement.cpus
        ),
    };
    drop(probe);
    System {
        date: crate::host::now_rfc3339(),
        cpu: machine.cpu,
        cores: machine.cores,
        memory: machine.memory,
        kernel: machine.kernel,
        git_commit: crate::host::git_commit(&cfg.repo).await,
        load_generator,
        placement: cfg.placement.describe(),
        cpu_limit: limit,
    }
}

#[cfg(test)]
mod tests {
    use super::{in_flight_for, pick_rounds};
    use crate::results::{Measured, Outcome};

    /// A measured round of `requests` requests on `cpu_seconds` of CPU.
    fn round(requests: u64, cpu_seconds: f64) -> Outcome {
        Outcome::Measured(Box::new(Measured::example(requests, cpu_seconds, 1.0)))
    }

    fn rate(o: &Outcome) -> Option<f64> {
        match o {
            Outcome::Measured(m) => m.per_core_second(),
            _ => None,
        }
    }

    #[test]
    fn rounds_report_the_median_round_and_every_rate() {
        let (shown, rates) = pick_rounds(vec![round(100, 1.0), round(300, 1.0), round(200, 1.0)]);
        assert_eq!(rate(&shown), Some(200.0));
        assert_eq!(rates, vec![100.0, 300.0, 200.0]);
        // Even counts show the lower middle round: never a flattering pick.
        let (shown, _) = pick_rounds(vec![round(400, 1.0), round(100, 1.0)]);
        assert_eq!(rate(&shown), Some(100.0));
        // One round: no spread to show.
        let (shown, rates) = pick_rounds(vec![round(50, 1.0)]);
        assert_eq!(rate(&shown), Some(50.0));
        assert!(rates.is_empty());
    }

    #[test]
    fn a_failed_round_is_what_the_rounds_report() {
        let failed = Outcome::Failed {
            error: "k6 failed".into(),
        };
        let (shown, rates) = pick_rounds(vec![round(100, 1.0), failed, round(300, 1.0)]);
        assert!(matches!(shown, Outcome::Failed { ref error } if error == "k6 failed"));
        assert!(rates.is_empty());
    }

    #[test]
    fn capacity_steps_may_hold_twice_the_measured_p99_in_flight() {
        // chain: 250 ms p99 at 800 req/s needs 400 open requests, not 81.
        assert_eq!(in_flight_for(800, 0.25), 401);
        // Fast scenarios keep the 100 ms floor.
        assert_eq!(in_flight_for(1000, 0.002), 101);
    }
}
