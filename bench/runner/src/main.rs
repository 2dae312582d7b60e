//! graphfleet-bench: runs the benchmark scenarios against one or more gateways with its own
//! open-model load generator (or k6) and writes REPORT.md (tables per scenario, SVG charts)
//! and results.json.

mod bench;
mod capacity;
mod charts;
mod cli;
mod command;
mod compare;
mod config;
mod driver;
mod fanout;
mod gateway;
mod host;
mod hostile;
mod http;
mod incluster;
mod k6;
mod kube_io;
mod loadtests;
mod openload;
mod oracle;
mod paths;
mod peers;
mod podsample;
mod process;
mod progress;
mod report;
mod results;
mod sampler;
mod scenario;
mod servers;
mod warmup;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Parser;

use crate::cli::{Cli, Command};

use crate::config::Generator;
use crate::gateway::{Gateway, Kind};
use crate::k6::Check;
use crate::peers::Peer;

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
            // In the cluster graphfleet is its image, run by the operator.
            Kind::Graphfleet if cli.in_cluster => (Ok(None), env!("CARGO_PKG_VERSION").to_owned()),
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
            Kind::Peer(peer @ (Peer::HiveGateway | Peer::ApolloGateway)) if cli.in_cluster => {
                // Not imaged (no Node.js runtime in the local images): nothing to install.
                let version = versions
                    .iter()
                    .find(|(n, _)| n == peer.name())
                    .map_or_else(|| peer.default_version().to_owned(), |(_, v)| v.clone());
                (Ok(None), version)
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

/// `--subgraphs-bin` made absolute, else target/release's (built when missing).
fn subgraphs_binary(repo: &std::path::Path, given: Option<&PathBuf>) -> anyhow::Result<PathBuf> {
    match absolute("--subgraphs-bin", given)? {
        Some(p) => Ok(p),
        None => paths::release_binary(repo, "graphfleet-bench-subgraphs", "graphfleet-subgraphs"),
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
    match cli.command.take() {
        Some(Command::Report {
            loadtests,
            resources,
            timings,
            out,
            repo,
        }) => {
            return loadtests::run(&loadtests::ReportOptions {
                loadtests,
                resources,
                timings,
                out,
                repo,
            })
            .await;
        }
        Some(Command::SamplePods {
            kubeconfig,
            namespace,
            selector,
            seconds,
            interval_ms,
            out,
        }) => {
            return podsample::sample_pods(&podsample::SampleOptions {
                kubeconfig,
                namespace,
                selector,
                seconds: seconds.max(1),
                interval: Duration::from_millis(interval_ms.clamp(10, 10_000)),
                out,
            })
            .await;
        }
        Some(Command::WarmUp {
            operations,
            rate,
            seconds,
            runs,
            cpus,
            out,
            repo,
            subgraphs_bin,
            gateway_bin,
            start_timeout,
            after_ready_ms,
        }) => {
            let repo = paths::repo_root(repo.as_deref())?;
            let subgraphs_bin = subgraphs_binary(&repo, subgraphs_bin.as_ref())?;
            let gateway_bin = match absolute("--gateway-bin", gateway_bin.as_ref())? {
                Some(p) => p,
                None => paths::release_binary(&repo, "graphfleet-gateway", "graphfleet-gateway")?,
            };
            let out = std::env::current_dir().context("cwd")?.join(out);
            return warmup::run(&warmup::Options {
                repo,
                out,
                subgraphs_bin,
                gateway_bin,
                operations,
                rate,
                seconds,
                runs,
                cpus,
                start_timeout: Duration::from_secs(start_timeout.max(1)),
                after_ready: Duration::from_millis(after_ready_ms),
            })
            .await;
        }
        Some(Command::Hostile {
            binaries,
            classes,
            out,
            repo,
            subgraphs_bin,
            cpus,
            start_timeout,
            rss_limit_mib,
        }) => {
            let repo = paths::repo_root(repo.as_deref())?;
            let subgraphs_bin = subgraphs_binary(&repo, subgraphs_bin.as_ref())?;
            let mut named = Vec::new();
            for (name, path) in pairs("--gateway-bin", &binaries)? {
                if named.iter().any(|b: &hostile::Binary| b.name == name) {
                    bail!("--gateway-bin {name} is given twice");
                }
                let path = absolute("--gateway-bin", Some(&PathBuf::from(path)))?
                    .context("a --gateway-bin path")?;
                named.push(hostile::Binary { name, path });
            }
            let out = std::env::current_dir().context("cwd")?.join(out);
            return hostile::run(&hostile::Options {
                repo,
                out,
                subgraphs_bin,
                binaries: named,
                classes,
                cpus,
                start_timeout: Duration::from_secs(start_timeout.max(1)),
                rss_limit: rss_limit_mib << 20,
            })
            .await;
        }
        Some(Command::Load {
            url,
            payload,
            rate,
            duration,
            max_in_flight,
            cpus,
        }) => {
            let body = std::fs::read(&payload)
                .with_context(|| format!("reading {}", payload.display()))?;
            let load = openload::Load {
                url: url.parse().with_context(|| format!("{url} is not a URL"))?,
                payload: openload::Payload::new(&body, None)?,
                expected: std::sync::Arc::new(openload::ExpectedBody::new(Vec::new())),
                check: k6::Check::None,
                rate,
                duration: Duration::from_secs(u64::from(duration.max(1))),
                max_in_flight,
                cpus,
                ramp: None,
            };
            let outcome = tokio::task::spawn_blocking(move || load.run())
                .await
                .context("the load generator panicked")??;
            let mut json = serde_json::to_value(&outcome.summary).context("summary")?;
            json["send_lag_p99_ms"] = outcome.send_lag_p99_ms.into();
            json["peak_in_flight"] = outcome.peak_in_flight.into();
            json["failure_samples"] = outcome.failure_samples.into();
            println!("{json:#}");
            return Ok(());
        }
        None => {}
    }
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
    let all = scenario::discover(&repo.join("bench/sets"))?;
    let mut scenarios = scenario::select(all, &cli.scenarios)?;
    if cli.in_cluster && cli.scenarios.is_empty() {
        // "Every scenario" in the cluster leaves out the subscription fan-out, which runs
        // in host mode or as a LoadTest; asked for by name, it is reported as refused.
        scenarios.retain(|s| s.name != graphfleet_bench_model::scenarios::SUBSCRIPTIONS);
    }
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
    if !(cli.cpus.is_finite() && cli.cpus > 0.0) {
        bail!(
            "--cpus must be a positive number of cores, got {}",
            cli.cpus
        );
    }
    let subgraphs_bin = match &cli.subgraphs_bin {
        Some(p) => p.clone(),
        None => paths::release_binary(&repo, "graphfleet-bench-subgraphs", "graphfleet-subgraphs")?,
    };
    let gateways = resolve_gateways(&cli, &repo).await?;
    if cli.in_cluster {
        if cli.load_generator == Some(Generator::Native) {
            bail!("--in-cluster runs k6 Jobs: --load-generator native is host-mode only");
        }
        if cli.smoke || cli.rounds > 1 {
            bail!(
                "--in-cluster measures once per scenario: --smoke and --rounds are host-mode only"
            );
        }
        if cli.check.is_some_and(|c| c != Check::Full) {
            bail!(
                "--in-cluster checks every answer in full (the LoadTest's expect): --check is host-mode only"
            );
        }
        if cli.supergraph.is_some() {
            bail!(
                "--in-cluster serves the supergraph the operator composes from the set's Subgraphs: --supergraph is host-mode only"
            );
        }
        let kubeconfig = absolute("--kubeconfig", cli.kubeconfig.as_ref())?;
        let cfg = incluster::Config {
            repo,
            out: out.clone(),
            subgraphs_bin,
            gateways,
            scenarios,
            duration_s: cli.duration,
            warmup_s: cli.warmup,
            rate: cli.rate,
            cpus: cli.cpus,
            memory: cli.memory.clone(),
            start_timeout: Duration::from_secs(cli.start_timeout.max(1)),
            capacity: capacity_config(&cli),
            kubeconfig,
            namespace: cli.namespace.clone(),
            images: incluster::objects::Images::defaults(&cli.image_tag),
        };
        let report = incluster::run(&cfg).await?;
        report::write(&report, &out)?;
        eprintln!("[bench] report: {}", out.join("REPORT.md").display());
        return Ok(());
    }
    let generator = cli.load_generator.unwrap_or(Generator::Native);
    let k6 = match generator {
        Generator::K6 => Some(paths::k6(cli.k6.as_deref(), &repo)?),
        Generator::Native => None,
    };
    let placement = process::Placement::new(cli.cpus)?;
    let (duration_s, warmup_s, rate, check) = if cli.smoke {
        (cli.duration.min(3), 0, cli.rate, Check::Full)
    } else {
        (
            cli.duration,
            cli.warmup,
            cli.rate,
            cli.check.unwrap_or(Check::Length),
        )
    };
    if cli.rounds > 1 && (cli.capacity || cli.smoke) {
        bail!("--rounds repeats the measured run only: run --capacity and --smoke without it");
    }
    let capacity = capacity_config(&cli);
    let cfg = config::Config {
        repo,
        out: out.clone(),
        generator,
        k6,
        subgraphs_bin,
        gateways,
        scenarios,
        placement,
        duration_s,
        warmup_s,
        rate,
        rounds: cli.rounds.clamp(1, 20),
        check,
        smoke: cli.smoke,
        capacity,
        start_timeout: Duration::from_secs(cli.start_timeout.max(1)),
        fanout: config::FanoutConfig {
            subscribers: match (cli.subscribers.is_empty(), cli.smoke) {
                (false, _) => cli.subscribers.clone(),
                (true, true) => vec![5],
                (true, false) => vec![100, 1000],
            },
            event_interval: Duration::from_millis(cli.event_interval),
        },
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

/// `--capacity` and its knobs (never with `--smoke`).
fn capacity_config(cli: &Cli) -> Option<config::CapacityConfig> {
    (cli.capacity && !cli.smoke).then_some(config::CapacityConfig {
        steps: cli.capacity_steps.clamp(1, 50),
        duration_s: cli.capacity_duration.max(1),
        factor: cli.capacity_factor.clamp(1.05, 10.0),
        start: cli.capacity_start,
        ramp: Duration::from_secs(u64::from(cli.capacity_ramp)),
    })
}
