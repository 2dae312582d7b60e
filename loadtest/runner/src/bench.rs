//! The benchmark loop: per scenario, start the set's subgraphs, ask the monolith for the
//! expected answer, then per gateway start it under its CPU budget, warm up, measure with
//! the load generator (native or k6) while sampling /proc, read the subgraph counters and
//! optionally search capacity.

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use sha2::{Digest, Sha256};
use tokio::process::Child;

use crate::capacity::{self, Step};
use crate::gateway::{Gateway, Kind, Slots};
use crate::http::Client;
use crate::k6::{self, Check, Expected, Summary};
use crate::openload::{self, ExpectedBody, Payload, Ramp};
use crate::process::{self, Cgroup, Launch, Placement};
use crate::results::{GatewayInfo, GatewayRun, Measured, Outcome, Report, ScenarioRun, System};
use crate::sampler::{self, CoreTimes, Sampler};
use crate::scenario::Scenario;

pub struct Config {
    pub repo: PathBuf,
    pub out: PathBuf,
    pub generator: Generator,
    /// The k6 binary, when k6 generates the load.
    pub k6: Option<PathBuf>,
    pub subgraphs_bin: PathBuf,
    pub gateways: Vec<(Gateway, Result<Option<PathBuf>, String>, String)>,
    pub scenarios: Vec<Scenario>,
    pub placement: Placement,
    pub duration_s: u32,
    pub warmup_s: u32,
    pub rate: Option<u32>,
    /// Measured runs per scenario and gateway, taking turns (see [`pick_rounds`]).
    pub rounds: u32,
    pub check: Check,
    pub smoke: bool,
    pub capacity: Option<CapacityConfig>,
    pub start_timeout: Duration,
    /// Subscriber counts and event interval of the `subscriptions` scenario.
    pub fanout: crate::fanout::FanoutConfig,
    /// A supergraph to serve instead of the set's committed one (e.g. the operator's).
    pub supergraph: Option<PathBuf>,
}

/// What drives the load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Generator {
    /// The runner's own open-model client ([`openload`]): several times the gateways' rate
    /// on one core, latency from each request's scheduled time at microsecond resolution.
    Native,
    /// k6 running loadtest/k6/scenario.js (saturates its core near 1,000 small req/s).
    K6,
}

impl Generator {
    pub fn name(self) -> &'static str {
        match self {
            Generator::Native => "native",
            Generator::K6 => "k6",
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct CapacityConfig {
    pub steps: u32,
    pub duration_s: u32,
    pub factor: f64,
    pub start: Option<u32>,
    /// The uncounted ramp from the rate before to each step's (native generator only).
    pub ramp: Duration,
}

/// What a scenario needs from the set's servers.
pub(crate) struct SetServers {
    pub(crate) subgraphs: Child,
    base: String,
    pub(crate) supergraph: PathBuf,
}

pub fn progress(msg: impl AsRef<str>) {
    eprintln!(
        "[bench {}] {}",
        humantime::format_rfc3339_seconds(std::time::SystemTime::now()),
        msg.as_ref()
    );
}

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

/// How to start `graphfleet-subgraphs` on this machine.
#[derive(Clone, Copy)]
pub struct SubgraphServer<'a> {
    pub bin: &'a Path,
    /// taskset list (k6 and subgraph cores), when the gateway has cores of its own.
    pub cpus: Option<&'a str>,
}

impl Config {
    pub(crate) fn server(&self) -> SubgraphServer<'_> {
        SubgraphServer {
            bin: &self.subgraphs_bin,
            cpus: self.placement.others.as_deref(),
        }
    }
}

/// Starts `graphfleet-subgraphs` on an ephemeral port and returns the child and its base URL.
pub(crate) async fn start_server(
    server: SubgraphServer<'_>,
    set: &str,
    monolith: bool,
    extra_args: &[String],
    log: &Path,
) -> anyhow::Result<(Child, String)> {
    let _ = std::fs::remove_file(log);
    let mut command = format!(
        "{} --set {} --listen 127.0.0.1:0",
        process::sh_quote(&server.bin.to_string_lossy()),
        process::sh_quote(set)
    );
    if monolith {
        command.push_str(" --monolith");
    }
    if server.cpus.is_some() {
        command.push_str(" --threads 1");
    }
    for arg in extra_args {
        command.push(' ');
        command.push_str(&process::sh_quote(arg));
    }
    let mut child = process::spawn(&Launch {
        command,
        env: vec![],
        cwd: None,
        cpus: server.cpus,
        cgroup: None,
        log,
    })?;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(30) {
        if let Some(status) = child.try_wait().context("polling the subgraph server")? {
            bail!(
                "graphfleet-subgraphs --set {set} exited ({status}):\n{}",
                process::log_tail(log, 10)
            );
        }
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if let Some(url) = text.split_whitespace().find(|w| w.starts_with("http://")) {
            return Ok((child, url.trim_end_matches('/').to_owned()));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    process::stop(&mut child).await;
    bail!(
        "graphfleet-subgraphs --set {set} printed no address within 30 s:\n{}",
        process::log_tail(log, 10)
    )
}

/// Asks the set's monolith for the scenario's answer and writes it for k6.
pub async fn oracle(
    server: SubgraphServer<'_>,
    client: &Client,
    scenario: &Scenario,
    body: &str,
    dir: &Path,
) -> anyhow::Result<Expected> {
    let (mut mono, base) =
        start_server(server, &scenario.set, true, &[], &dir.join("monolith.log")).await?;
    let answer = client
        .post_json(&format!("{base}/graphql"), Bytes::from(body.to_owned()))
        .await;
    process::stop(&mut mono).await;
    let (status, bytes) = answer.context("asking the monolith for the expected response")?;
    let json: serde_json::Value =
        serde_json::from_slice(&bytes).context("the monolith's answer is not JSON")?;
    if status != 200 || json.get("errors").is_some() || !json["data"].is_object() {
        bail!(
            "the monolith answered the scenario query with status {status}: {}",
            String::from_utf8_lossy(&bytes[..bytes.len().min(300)])
        );
    }
    let text = std::str::from_utf8(&bytes).context("the monolith's answer is not UTF-8")?;
    let file = dir.join("expected.json");
    std::fs::write(&file, &bytes).context("writing expected.json")?;
    Ok(Expected {
        file,
        len_utf16: text.encode_utf16().count(),
        sha256: Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
        bytes: bytes.len(),
    })
}

async fn start_set(
    cfg: &Config,
    client: &Client,
    set: &str,
    dir: &Path,
) -> anyhow::Result<SetServers> {
    start_set_with(cfg, client, set, dir, &[]).await
}

/// [`start_set`] with extra `graphfleet-subgraphs` arguments.
pub(crate) async fn start_set_with(
    cfg: &Config,
    client: &Client,
    set: &str,
    dir: &Path,
    extra_args: &[String],
) -> anyhow::Result<SetServers> {
    let (subgraphs, base) = start_server(
        cfg.server(),
        set,
        false,
        extra_args,
        &dir.join("subgraphs.log"),
    )
    .await?;
    let committed = match &cfg.supergraph {
        Some(file) => file.clone(),
        None => cfg
            .repo
            .join("loadtest/sets")
            .join(set)
            .join("supergraph.graphql"),
    };
    let text = std::fs::read_to_string(&committed)
        .with_context(|| format!("reading {}", committed.display()))?;
    let supergraph = dir.join("supergraph.graphql");
    std::fs::write(&supergraph, text.replace("http://127.0.0.1:4200", &base))
        .context("writing the supergraph")?;
    let stats = client
        .get(&format!("{base}/stats"))
        .await
        .context("GET /stats of the subgraphs")?;
    if stats.0 != 200 {
        bail!("GET {base}/stats answered {}", stats.0);
    }
    Ok(SetServers {
        subgraphs,
        base,
        supergraph,
    })
}

/// Checks the gateway's answer once before any load. Byte-identical to the monolith's: k6
/// compares against the monolith. The same answer formatted differently (e.g. `1` for
/// `1.0`): k6 compares against this gateway's own bytes. Anything else is an error naming
/// the first difference.
async fn conformance(
    client: &Client,
    url: &str,
    payload: &Path,
    expected: &Expected,
    dir: &Path,
    name: &str,
) -> anyhow::Result<Expected> {
    let body = std::fs::read(payload).context("reading the payload")?;
    let (status, got) = client
        .post_json(url, Bytes::from(body))
        .await
        .context("first request")?;
    judge(status, &got, expected, dir, name)
}

/// The expected answer k6 should check `name`'s responses against, given its first answer
/// (see [`conformance`]).
pub fn judge(
    status: u16,
    got: &[u8],
    expected: &Expected,
    dir: &Path,
    name: &str,
) -> anyhow::Result<Expected> {
    let want = std::fs::read(&expected.file).context("reading the expected answer")?;
    if status == 200 && got[..] == want[..] {
        return Ok(expected.clone());
    }
    let snippet = || String::from_utf8_lossy(&got[..got.len().min(300)]).into_owned();
    let answer: serde_json::Value = serde_json::from_slice(got)
        .with_context(|| format!("status {status}, not JSON: {}", snippet()))?;
    if status != 200 || answer.get("errors").is_some() {
        bail!("answered with status {status}: {}", snippet());
    }
    let want: serde_json::Value =
        serde_json::from_slice(&want).context("parsing the expected answer")?;
    if let Some(d) = crate::compare::first_difference(&want["data"], &answer["data"]) {
        bail!("the answer differs from the monolith's {d}");
    }
    progress(format!(
        "{name}: same answer as the monolith, formatted differently ({} bytes vs {})",
        got.len(),
        expected.bytes
    ));
    let file = dir.join(format!("{name}-answer.json"));
    std::fs::write(&file, got).context("writing the gateway's answer")?;
    let text = std::str::from_utf8(got).context("the answer is not UTF-8")?;
    Ok(Expected {
        file,
        len_utf16: text.encode_utf16().count(),
        sha256: Sha256::digest(got)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
        bytes: got.len(),
    })
}

pub(crate) fn free_port() -> anyhow::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(l.local_addr().context("local address")?.port())
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
    let (mut child, cgroup) = launch_gateway(cfg, command, &tag, &log)?;
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

/// Starts a measured gateway: in its own cgroup `tag` with the run's CPU budget, pinned to
/// the gateway's cores, its output in `log` (replaced). Keep the cgroup until it stops.
pub(crate) fn launch_gateway(
    cfg: &Config,
    command: crate::command::Command,
    tag: &str,
    log: &Path,
) -> anyhow::Result<(Child, Option<Cgroup>)> {
    let cgroup = Cgroup::create(tag, cfg.placement.cpus);
    let _ = std::fs::remove_file(log);
    let child = process::spawn(&Launch {
        command: command.line,
        env: command.env,
        cwd: command.cwd.as_deref(),
        cpus: cfg.placement.gateway.as_deref(),
        cgroup: cgroup.as_ref(),
        log,
    })?;
    Ok((child, cgroup))
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
            .and_then(crate::process::parse_cpu_list)
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

/// Runs the load of one gateway with the configured generator; both take the same inputs
/// and yield the same [`Summary`].
struct Driver<'a> {
    cfg: &'a Config,
    url: &'a str,
    payload: &'a Path,
    expected: &'a Expected,
    /// No-cache scenario: each run gets a fresh nonce, each request its own token.
    unique: bool,
    script: PathBuf,
    summary_file: PathBuf,
    log: PathBuf,
    /// Native only: the payload and the expected answer, read once.
    native: Option<(Vec<u8>, Arc<ExpectedBody>)>,
    /// The native generator's send lag (p99, ms) in its last run.
    lag_p99_ms: Cell<Option<f64>>,
}

impl<'a> Driver<'a> {
    fn new(
        cfg: &'a Config,
        scenario: &Scenario,
        url: &'a str,
        payload: &'a Path,
        expected: &'a Expected,
        dir: &Path,
        gateway: &str,
    ) -> anyhow::Result<Self> {
        let log = dir.join(format!("{gateway}-{}.log", cfg.generator.name()));
        let _ = std::fs::remove_file(&log);
        let native = match cfg.generator {
            Generator::K6 => None,
            Generator::Native => Some((
                std::fs::read(payload).context("reading the payload")?,
                Arc::new(ExpectedBody::new(
                    std::fs::read(&expected.file).context("reading the expected answer")?,
                )),
            )),
        };
        Ok(Driver {
            cfg,
            url,
            payload,
            expected,
            unique: scenario.unique,
            script: cfg.repo.join("loadtest/k6/scenario.js"),
            summary_file: dir.join(format!("{gateway}-summary.json")),
            log,
            native,
            lag_p99_ms: Cell::new(None),
        })
    }

    fn lag_note(&self) -> String {
        self.lag_p99_ms.get().map_or(String::new(), |l| {
            format!(", generator send lag p99 {l:.2} ms")
        })
    }

    async fn run(
        &self,
        check: Check,
        rate: u32,
        duration_s: u32,
        vus: u32,
        max_vus: u32,
        ramp: Option<Ramp>,
    ) -> anyhow::Result<Summary> {
        let nonce = self.unique.then(crate::scenario::next_nonce);
        let Some((payload, expected)) = &self.native else {
            let k6 = self
                .cfg
                .k6
                .as_deref()
                .context("k6 generates the load but no k6 binary was resolved")?;
            return k6::Run {
                k6,
                script: &self.script,
                url: self.url,
                payload: self.payload,
                expected: self.expected,
                check,
                rate,
                vus,
                max_vus,
                duration_s,
                unique: nonce,
                summary: &self.summary_file,
                log: &self.log,
                cpus: self.cfg.placement.others.as_deref(),
            }
            .run()
            .await;
        };
        let load = openload::Load {
            url: self
                .url
                .parse()
                .with_context(|| format!("{} is not a URL", self.url))?,
            payload: Payload::new(payload, nonce)?,
            expected: Arc::clone(expected),
            check,
            rate,
            duration: Duration::from_secs(u64::from(duration_s)),
            max_in_flight: max_vus.max(1),
            cpus: self.cfg.placement.others.clone(),
            ramp,
        };
        let outcome = tokio::task::spawn_blocking(move || load.run())
            .await
            .context("the load generator panicked")??;
        self.lag_p99_ms.set(Some(outcome.send_lag_p99_ms));
        let s = &outcome.summary;
        let line = format!(
            "native: {rate} req/s for {duration_s} s (at most {max_vus} in flight, check {check:?}): {} requests, {} ok, {} failures, {} dropped, p50 {:.3} ms, p99 {:.3} ms, send lag p99 {:.3} ms, peak in flight {}{}\n",
            s.requests,
            s.ok,
            s.failures,
            s.dropped_iterations,
            s.latency_ms.map_or(0.0, |l| l.med),
            s.latency_ms.map_or(0.0, |l| l.p99),
            outcome.send_lag_p99_ms,
            outcome.peak_in_flight,
            outcome
                .failure_samples
                .iter()
                .map(|f| format!("\n  failure: {f}"))
                .collect::<String>()
        );
        use std::io::Write as _;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .and_then(|mut f| f.write_all(line.as_bytes()))
            .with_context(|| format!("writing {}", self.log.display()))?;
        Ok(outcome.summary)
    }
}

async fn system_info(cfg: &Config) -> System {
    let machine = crate::host::Machine::this();
    let load_generator = match (&cfg.k6, cfg.generator) {
        (Some(k6), Generator::K6) => crate::host::output(&k6.to_string_lossy(), &["version"])
            .await
            .unwrap_or_else(|| "k6 (version unknown)".into()),
        _ => format!(
            "native (graphfleet-bench {}: hyper HTTP/1.1 keep-alive, one current-thread runtime and a scheduler thread on the non-gateway cores, latency from each request's scheduled time, HDR histogram)",
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

/// Wait until the gateway `child` (named `name`, logging to `log`) answers a `{ __typename }`
/// query at `url`; an error with its log's tail if it exits first.
pub(crate) async fn wait_ready(
    client: &crate::http::Client,
    child: &mut Child,
    url: &str,
    limit: std::time::Duration,
    name: &str,
    log: &Path,
) -> anyhow::Result<()> {
    let probe = Bytes::from_static(br#"{"query":"{ __typename }"}"#);
    client
        .wait_ok(url, Some(probe), limit, || match child.try_wait() {
            Ok(Some(status)) => bail!(
                "the gateway exited ({status}):\n{}",
                process::log_tail(log, 15)
            ),
            _ => Ok(()),
        })
        .await
        .with_context(|| format!("{name} did not become ready (log: {})", log.display()))
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
