//! graphfleet-bench: runs the benchmark scenarios against one or more gateways with k6 and
//! writes REPORT.md (tables per scenario, SVG charts) and results.json.

mod bench;
mod capacity;
mod charts;
mod compare;
mod gateway;
mod http;
mod k6;
mod paths;
mod peers;
mod process;
mod report;
mod results;
mod sampler;
mod scenario;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Parser;

use crate::gateway::{Gateway, Kind};
use crate::k6::Check;
use crate::peers::Peer;

/// Benchmarks GraphQL federation gateways side by side (open-model k6 load, CPU budget,
/// /proc sampling) and writes REPORT.md with tables and SVG charts.
#[derive(Parser)]
#[command(name = "graphfleet-bench")]
struct Cli {
    /// Gateways to measure: built-ins (graphfleet, hive-router, apollo-router, hive-gateway,
    /// apollo-gateway) or names defined with --gateway-command. Default: graphfleet.
    #[arg(long = "gateway", value_name = "NAME")]
    gateways: Vec<String>,
    /// A gateway as a command template, NAME=COMMAND with {supergraph} {host} {port} {set}
    /// placeholders; measured when named by --gateway (or when no --gateway is given).
    #[arg(long = "gateway-command", value_name = "NAME=TEMPLATE")]
    gateway_commands: Vec<String>,
    /// The GraphQL path of a gateway, NAME=PATH (default /graphql; / for the Apollo peers).
    #[arg(long = "gateway-path", value_name = "NAME=PATH")]
    gateway_paths: Vec<String>,
    /// Version of a peer, NAME=VERSION (defaults: hive-router 0.3.10, apollo-router 2.17.0,
    /// hive-gateway 2.15.1, apollo-gateway 2.14.4).
    #[arg(long = "peer-version", value_name = "NAME=VERSION")]
    peer_versions: Vec<String>,
    /// Scenarios to run (default: every loadtest/sets/*/queries/*.graphql).
    #[arg(long = "scenario", value_name = "NAME")]
    scenarios: Vec<String>,
    /// Seconds of measured load per scenario and gateway.
    #[arg(long, default_value_t = 30)]
    duration: u32,
    /// Seconds of warm-up (every response checked in full) before measuring.
    #[arg(long, default_value_t = 5)]
    warmup: u32,
    /// Arrival rate for every scenario (default: the scenario's own).
    #[arg(long)]
    rate: Option<u32>,
    /// CPU budget of the gateway, in cores.
    #[arg(long, default_value_t = 1.0)]
    cpus: f64,
    /// How responses are checked during the measured run.
    #[arg(long, value_enum, default_value_t = Check::Length)]
    check: Check,
    /// Search each gateway's capacity after the measured run.
    #[arg(long)]
    capacity: bool,
    /// Most capacity steps per scenario and gateway.
    #[arg(long, default_value_t = 8)]
    capacity_steps: u32,
    /// Seconds per capacity step.
    #[arg(long, default_value_t = 15)]
    capacity_duration: u32,
    /// Rate multiplier between capacity steps until the first miss.
    #[arg(long, default_value_t = 1.5)]
    capacity_factor: f64,
    /// First capacity rate (default: the scenario's rate).
    #[arg(long)]
    capacity_start: Option<u32>,
    /// CI smoke test: every scenario for a few seconds at a low rate, every response compared
    /// with the monolith; fails on any failure.
    #[arg(long)]
    smoke: bool,
    /// Output directory for REPORT.md, results.json, charts/ and logs.
    #[arg(long, default_value = "loadtest/results/latest")]
    out: PathBuf,
    /// The repository root (default: where this binary was built from).
    #[arg(long)]
    repo: Option<PathBuf>,
    /// The k6 binary (default: the tool cache, then PATH).
    #[arg(long)]
    k6: Option<PathBuf>,
    /// The graphfleet-subgraphs binary (default: target/release, built when missing).
    #[arg(long)]
    subgraphs_bin: Option<PathBuf>,
    /// The graphfleet-gateway binary (default: target/release, built when missing).
    #[arg(long)]
    gateway_bin: Option<PathBuf>,
    /// Serve this supergraph instead of the set's committed one (all scenarios must be of one
    /// set; routing URLs at http://127.0.0.1:4200 are pointed at the runner's subgraphs).
    #[arg(long, value_name = "FILE")]
    supergraph: Option<PathBuf>,
    /// Seconds a gateway may take to answer its first request.
    #[arg(long, default_value_t = 120)]
    start_timeout: u64,
}

fn pairs(flag: &str, values: &[String]) -> anyhow::Result<Vec<(String, String)>> {
    values
        .iter()
        .map(|v| {
            v.split_once('=')
                .map(|(a, b)| (a.trim().to_owned(), b.trim().to_owned()))
                .with_context(|| format!("{flag} expects NAME=VALUE, got {v:?}"))
        })
        .collect()
}

/// The gateways to measure, each with its binary/install dir (or why it has none) and version.
async fn resolve_gateways(
    cli: &Cli,
    repo: &std::path::Path,
) -> anyhow::Result<Vec<(Gateway, Result<Option<PathBuf>, String>, String)>> {
    let customs: Vec<Gateway> = cli
        .gateway_commands
        .iter()
        .map(|s| Gateway::custom(s))
        .collect::<anyhow::Result<_>>()?;
    let names: Vec<String> = match (cli.gateways.is_empty(), customs.is_empty()) {
        (false, _) => cli.gateways.clone(),
        (true, false) => customs.iter().map(|g| g.name.clone()).collect(),
        (true, true) => vec!["graphfleet".into()],
    };
    let versions = pairs("--peer-version", &cli.peer_versions)?;
    let graphql_paths = pairs("--gateway-path", &cli.gateway_paths)?;
    let mut out = Vec::new();
    for name in &names {
        if out
            .iter()
            .any(|(g, _, _): &(Gateway, _, _)| &g.name == name)
        {
            bail!("gateway {name:?} is listed twice");
        }
        let mut gateway = match customs.iter().find(|g| &g.name == name) {
            Some(g) => g.clone(),
            None => Gateway::built_in(name)?,
        };
        if let Some((_, p)) = graphql_paths.iter().find(|(n, _)| n == name) {
            if !p.starts_with('/') {
                bail!("--gateway-path {name}={p}: the path must start with '/'");
            }
            gateway.graphql_path = p.clone();
        }
        let (installed, version) = match &gateway.kind {
            Kind::Custom { .. } => (Ok(None), "custom".to_owned()),
            Kind::Graphfleet => {
                let bin = match &cli.gateway_bin {
                    Some(p) => Ok(p.clone()),
                    None => paths::release_binary(repo, "graphfleet-gateway", "graphfleet-gateway"),
                };
                (
                    bin.map(Some).map_err(|e| format!("{e:#}")),
                    env!("CARGO_PKG_VERSION").to_owned(),
                )
            }
            Kind::Peer(peer) => {
                let version = versions
                    .iter()
                    .find(|(n, _)| n == peer.name())
                    .map_or_else(|| peer.default_version().to_owned(), |(_, v)| v.clone());
                let dir = peer.ensure(&version, repo).await;
                if let Err(e) = &dir {
                    eprintln!("[bench] {e:#}");
                }
                (dir.map(Some).map_err(|e| format!("{e:#}")), version)
            }
        };
        out.push((gateway, installed, version));
    }
    for (name, _) in versions.iter().chain(&graphql_paths) {
        if !names.contains(name) && Peer::from_name(name).is_none() {
            bail!("{name:?} is not a gateway of this run");
        }
    }
    Ok(out)
}

impl Peer {
    fn from_name(name: &str) -> Option<Peer> {
        [
            Peer::HiveRouter,
            Peer::ApolloRouter,
            Peer::HiveGateway,
            Peer::ApolloGateway,
        ]
        .into_iter()
        .find(|p| p.name() == name)
    }
}

/// Makes a given binary path absolute (gateways may run in another directory).
fn absolute(flag: &str, path: Option<&PathBuf>) -> anyhow::Result<Option<PathBuf>> {
    path.map(|p| {
        p.canonicalize()
            .with_context(|| format!("{flag} {}: no such file", p.display()))
    })
    .transpose()
}

async fn run(mut cli: Cli) -> anyhow::Result<()> {
    cli.k6 = absolute("--k6", cli.k6.as_ref())?;
    cli.subgraphs_bin = absolute("--subgraphs-bin", cli.subgraphs_bin.as_ref())?;
    cli.gateway_bin = absolute("--gateway-bin", cli.gateway_bin.as_ref())?;
    let repo = paths::repo_root(cli.repo.as_deref())?;
    let out = if cli.out.is_absolute() {
        cli.out.clone()
    } else {
        std::env::current_dir().context("cwd")?.join(&cli.out)
    };
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let k6 = paths::k6(cli.k6.as_deref(), &repo)?;
    let all = scenario::discover(&repo.join("loadtest/sets"))?;
    let scenarios = scenario::select(all, &cli.scenarios)?;
    cli.supergraph = absolute("--supergraph", cli.supergraph.as_ref())?;
    if cli.supergraph.is_some() {
        let mut sets: Vec<&str> = scenarios.iter().map(|s| s.set.as_str()).collect();
        sets.sort_unstable();
        sets.dedup();
        if sets.len() != 1 {
            bail!(
                "--supergraph serves one set, but the scenarios span {sets:?}; pick them with --scenario"
            );
        }
    }
    if cli.duration == 0 {
        bail!("--duration must be at least 1 second");
    }
    let placement = process::Placement::new(cli.cpus)?;
    let subgraphs_bin = match &cli.subgraphs_bin {
        Some(p) => p.clone(),
        None => paths::release_binary(&repo, "graphfleet-loadtest", "graphfleet-subgraphs")?,
    };
    let gateways = resolve_gateways(&cli, &repo).await?;
    let (duration_s, warmup_s, rate, check) = if cli.smoke {
        (cli.duration.min(3), 0, cli.rate, Check::Full)
    } else {
        (cli.duration, cli.warmup, cli.rate, cli.check)
    };
    let capacity = (cli.capacity && !cli.smoke).then_some(bench::CapacityConfig {
        steps: cli.capacity_steps.clamp(1, 50),
        duration_s: cli.capacity_duration.max(1),
        factor: cli.capacity_factor.clamp(1.05, 10.0),
        start: cli.capacity_start,
    });
    let cfg = bench::Config {
        repo,
        out: out.clone(),
        k6,
        subgraphs_bin,
        gateways,
        scenarios,
        placement,
        duration_s,
        warmup_s,
        rate,
        check,
        smoke: cli.smoke,
        capacity,
        start_timeout: Duration::from_secs(cli.start_timeout.max(1)),
        supergraph: cli.supergraph.clone(),
    };
    let report = bench::run(&cfg).await?;
    report::write(&report, &out)?;
    eprintln!("[bench] report: {}", out.join("REPORT.md").display());
    if cli.smoke {
        let problems = report.smoke_problems();
        if !problems.is_empty() {
            bail!("smoke test failed:\n  {}", problems.join("\n  "));
        }
        eprintln!("[bench] smoke test passed: every response matched the monolith");
    }
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the tokio runtime")?;
    runtime.block_on(run(cli))
}
