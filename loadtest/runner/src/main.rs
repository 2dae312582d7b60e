//! graphfleet-bench: runs the benchmark scenarios against one or more gateways with its own
//! open-model load generator (or k6) and writes REPORT.md (tables per scenario, SVG charts)
//! and results.json.

mod bench;
mod capacity;
mod charts;
mod command;
mod compare;
mod config;
mod driver;
mod fanout;
mod gateway;
mod host;
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

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Parser;

use crate::config::Generator;
use crate::gateway::{Gateway, Kind};
use crate::k6::Check;
use crate::peers::Peer;

/// Benchmarks GraphQL federation gateways side by side (open-model load, CPU budget,
/// /proc sampling) and writes REPORT.md with tables and SVG charts; with --in-cluster, as
/// pods of the local cluster.
#[derive(Parser)]
#[command(name = "graphfleet-bench", args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Run every gateway, the subgraphs and k6 as pods of a cluster (gateway on the router
    /// pool under --cpus as requests = limits, subgraphs on the subgraph pool, k6 as a Job
    /// on the client pool) instead of as processes on this machine.
    #[arg(long)]
    in_cluster: bool,
    /// Kubeconfig of the cluster (--in-cluster; default: KUBECONFIG, ~/.kube/config).
    #[arg(long, value_name = "FILE")]
    kubeconfig: Option<PathBuf>,
    /// Namespace for the --in-cluster objects (created when missing).
    #[arg(long, default_value = "graphfleet-bench")]
    namespace: String,
    /// Memory of the gateway pod (--in-cluster; requests = limits).
    #[arg(long, default_value = "1Gi")]
    memory: String,
    /// Tag of the graphfleet gateway, subgraphs and k6 images (--in-cluster; built and
    /// imported by scripts/cluster.sh images).
    #[arg(long, default_value = env!("CARGO_PKG_VERSION"))]
    image_tag: String,
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
    /// Measured load per scenario and gateway: seconds (`30`) or a duration (`30s`, `1m30s`;
    /// whole seconds).
    #[arg(long, default_value = "30", value_parser = whole_seconds)]
    duration: u32,
    /// Warm-up (every response checked in full) before measuring: seconds or a duration.
    #[arg(long, default_value = "5", value_parser = whole_seconds)]
    warmup: u32,
    /// Arrival rate for every scenario (default: the scenario's own).
    #[arg(long)]
    rate: Option<u32>,
    /// Measured runs per scenario and gateway, the gateways taking turns (A B A B …) so a
    /// noisy spell on a shared machine hits them alike; the report shows each gateway's
    /// round with the median requests/core.s, and the spread of all rounds.
    #[arg(long, default_value_t = 1)]
    rounds: u32,
    /// CPU budget of the gateway, in cores.
    #[arg(long, default_value_t = 1.0)]
    cpus: f64,
    /// What generates the load: `native` (the runner's own open-model client, the default
    /// on this machine: it does several times a gateway's rate on one core) or `k6`
    /// (loadtest/k6/scenario.js; saturates its core near 1,000 small req/s). --in-cluster
    /// always uses k6.
    #[arg(long, value_enum)]
    load_generator: Option<Generator>,
    /// How responses are checked during the measured run.
    #[arg(long, value_enum, default_value_t = Check::Length)]
    check: Check,
    /// Search each gateway's capacity after the measured run.
    #[arg(long)]
    capacity: bool,
    /// Most capacity steps per scenario and gateway.
    #[arg(long, default_value_t = 8)]
    capacity_steps: u32,
    /// Time per capacity step: seconds or a duration (`15s`, `1m`).
    #[arg(long, default_value = "15", value_parser = whole_seconds)]
    capacity_duration: u32,
    /// Rate multiplier between capacity steps until the first miss, when the gateway's CPU
    /// is not known (else the CPU reading steers the growth, see capacity.rs).
    #[arg(long, default_value_t = 1.5)]
    capacity_factor: f64,
    /// First capacity rate (default: the scenario's rate).
    #[arg(long)]
    capacity_start: Option<u32>,
    /// Before each capacity step, the rate moves linearly from the step before's (the
    /// measured run's, first) to the step's over this long, uncounted, so a step measures
    /// its rate and not a cold jump to it; 0 jumps. Native generator only: k6 steps jump.
    #[arg(long, default_value = "2", value_parser = whole_seconds)]
    capacity_ramp: u32,
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
    /// The k6 binary for --load-generator k6 (default: the tool cache, then PATH).
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
    /// Subscription fan-out (`--scenario subscriptions`): subscribers held open at once, one
    /// measurement per count (default 100 and 1000; 5 with --smoke).
    #[arg(long = "subscribers", value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    subscribers: Vec<u32>,
    /// Subscription fan-out: milliseconds between two events of every subgraph
    /// subscription (graphfleet-subgraphs --event-interval).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(10..=60_000))]
    event_interval: u64,
}

#[derive(clap::Subcommand)]
enum Command {
    /// REPORT.md and charts from LoadTests the operator ran (`kubectl get loadtest X -o
    /// json`), with the gateway pods' CPU and memory from `sample-pods` files.
    Report {
        /// A LoadTest, or a List of them, as JSON (repeatable).
        #[arg(long = "loadtest", value_name = "FILE", required = true)]
        loadtests: Vec<PathBuf>,
        /// A `sample-pods` file; each LoadTest takes the samples inside its start and
        /// completion time (repeatable).
        #[arg(long = "resources", value_name = "FILE")]
        resources: Vec<PathBuf>,
        /// `what: value` lines to end the report with (a Timings table).
        #[arg(long, value_name = "FILE")]
        timings: Option<PathBuf>,
        #[arg(long, default_value = "loadtest/results/latest")]
        out: PathBuf,
        /// The repository root (scenario descriptions, git commit).
        #[arg(long)]
        repo: Option<PathBuf>,
    },
    /// Samples the CPU (cpuacct) and memory (working set) of pods from their cgroups on this
    /// machine, every 100 ms for --seconds, re-listing the pods every second (a rollout's
    /// new pods are followed), and writes them with wall-clock timestamps for `report`.
    /// Drives one URL with the native generator (POST of a payload at a constant arrival
    /// rate, no response check) and prints the summary as JSON: the generator's own
    /// ceiling against a trivial endpoint, or a quick load by hand.
    Load {
        #[arg(long)]
        url: String,
        /// File with the POST body.
        #[arg(long, value_name = "FILE")]
        payload: PathBuf,
        #[arg(long)]
        rate: u32,
        /// Seconds or a duration (`10s`, `1m30s`; whole seconds).
        #[arg(long, default_value = "10", value_parser = whole_seconds)]
        duration: u32,
        #[arg(long, default_value_t = 100)]
        max_in_flight: u32,
        /// taskset list for the generator's threads.
        #[arg(long)]
        cpus: Option<String>,
    },
    SamplePods {
        #[arg(long, value_name = "FILE")]
        kubeconfig: Option<PathBuf>,
        #[arg(long, short = 'n', default_value = "default")]
        namespace: String,
        /// Label selector of the pods, e.g. app.kubernetes.io/instance=fed.
        #[arg(long, short = 'l')]
        selector: String,
        /// How long to sample.
        #[arg(long)]
        seconds: u64,
        /// Milliseconds between samples.
        #[arg(long, default_value_t = 100)]
        interval_ms: u64,
        #[arg(long)]
        out: PathBuf,
    },
}

/// A time in whole seconds: a bare number of seconds (`30`), or a duration in the LoadTest
/// CRD's grammar (`30s`, `1m30s`, `1h2m3.5s`; `graphfleet_bench_model::duration`).
fn whole_seconds(text: &str) -> Result<u32, String> {
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return text
            .parse()
            .map_err(|_| format!("{text} seconds is too long"));
    }
    let d = graphfleet_bench_model::duration::parse(text).map_err(|e| e.to_string())?;
    if d.subsec_nanos() != 0 {
        return Err(format!(
            "{text} is not a whole number of seconds; the runner measures in seconds"
        ));
    }
    u32::try_from(d.as_secs()).map_err(|_| format!("{text} is too long"))
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
    let all = scenario::discover(&repo.join("loadtest/sets"))?;
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
        None => paths::release_binary(&repo, "graphfleet-loadtest", "graphfleet-subgraphs")?,
    };
    let gateways = resolve_gateways(&cli, &repo).await?;
    if cli.in_cluster {
        if cli.load_generator == Some(Generator::Native) {
            bail!("--in-cluster runs k6 Jobs: --load-generator native is host-mode only");
        }
        if cli.smoke || cli.capacity || cli.rounds > 1 {
            bail!(
                "--in-cluster measures once at one rate: --smoke, --capacity and --rounds are host-mode only"
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
            check: cli.check,
            cpus: cli.cpus,
            memory: cli.memory.clone(),
            start_timeout: Duration::from_secs(cli.start_timeout.max(1)),
            supergraph: cli.supergraph.clone(),
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
        (cli.duration, cli.warmup, cli.rate, cli.check)
    };
    if cli.rounds > 1 && (cli.capacity || cli.smoke) {
        bail!("--rounds repeats the measured run only: run --capacity and --smoke without it");
    }
    let capacity = (cli.capacity && !cli.smoke).then_some(config::CapacityConfig {
        steps: cli.capacity_steps.clamp(1, 50),
        duration_s: cli.capacity_duration.max(1),
        factor: cli.capacity_factor.clamp(1.05, 10.0),
        start: cli.capacity_start,
        ramp: Duration::from_secs(u64::from(cli.capacity_ramp)),
    });
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

#[cfg(test)]
mod tests;
