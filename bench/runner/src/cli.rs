//! The command line: flags of a benchmark run and the subcommands (reports from LoadTests,
//! pod sampling, one native load run).

use std::path::PathBuf;

use clap::Parser;

use crate::config::Generator;
use crate::k6::Check;

/// Benchmarks GraphQL federation gateways side by side (open-model load, CPU budget,
/// /proc sampling) and writes REPORT.md with tables and SVG charts; with --in-cluster, as
/// pods of the local cluster.
#[derive(Parser)]
#[command(name = "graphfleet-bench", args_conflicts_with_subcommands = true)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
    /// Run every gateway, the subgraphs and k6 as pods of a cluster (gateway on the router
    /// pool under --cpus as requests = limits, subgraphs on the subgraph pool, k6 as a Job
    /// on the client pool) instead of as processes on this machine.
    #[arg(long)]
    pub(crate) in_cluster: bool,
    /// Kubeconfig of the cluster (--in-cluster; default: KUBECONFIG, ~/.kube/config).
    #[arg(long, value_name = "FILE")]
    pub(crate) kubeconfig: Option<PathBuf>,
    /// Namespace for the --in-cluster objects (created when missing).
    #[arg(long, default_value = "graphfleet-bench")]
    pub(crate) namespace: String,
    /// Memory of the gateway pod (--in-cluster; requests = limits).
    #[arg(long, default_value = "1Gi")]
    pub(crate) memory: String,
    /// Tag of the graphfleet gateway, subgraphs and k6 images (--in-cluster; built and
    /// imported by scripts/cluster.sh images).
    #[arg(long, default_value = env!("CARGO_PKG_VERSION"))]
    pub(crate) image_tag: String,
    /// Gateways to measure: built-ins (graphfleet, hive-router, apollo-router, hive-gateway,
    /// apollo-gateway) or names defined with --gateway-command. Default: graphfleet.
    #[arg(long = "gateway", value_name = "NAME")]
    pub(crate) gateways: Vec<String>,
    /// A gateway as a command template, NAME=COMMAND with {supergraph} {host} {port} {set}
    /// placeholders; measured when named by --gateway (or when no --gateway is given).
    #[arg(long = "gateway-command", value_name = "NAME=TEMPLATE")]
    pub(crate) gateway_commands: Vec<String>,
    /// The GraphQL path of a gateway, NAME=PATH (default /graphql; / for the Apollo peers).
    #[arg(long = "gateway-path", value_name = "NAME=PATH")]
    pub(crate) gateway_paths: Vec<String>,
    /// Version of a peer, NAME=VERSION (defaults: hive-router 0.3.10, apollo-router 2.17.0,
    /// hive-gateway 2.15.1, apollo-gateway 2.14.4).
    #[arg(long = "peer-version", value_name = "NAME=VERSION")]
    pub(crate) peer_versions: Vec<String>,
    /// Scenarios to run (default: every bench/sets/*/queries/*.graphql).
    #[arg(long = "scenario", value_name = "NAME")]
    pub(crate) scenarios: Vec<String>,
    /// Measured load per scenario and gateway: seconds (`30`) or a duration (`30s`, `1m30s`;
    /// whole seconds).
    #[arg(long, default_value = "30", value_parser = whole_seconds)]
    pub(crate) duration: u32,
    /// Warm-up (every response checked in full) before measuring: seconds or a duration.
    #[arg(long, default_value = "5", value_parser = whole_seconds)]
    pub(crate) warmup: u32,
    /// Arrival rate for every scenario (default: the scenario's own).
    #[arg(long)]
    pub(crate) rate: Option<u32>,
    /// Measured runs per scenario and gateway, the gateways taking turns (A B A B …) so a
    /// noisy spell on a shared machine hits them alike; the report shows each gateway's
    /// round with the median requests/core.s, and the spread of all rounds.
    #[arg(long, default_value_t = 1)]
    pub(crate) rounds: u32,
    /// CPU budget of the gateway, in cores.
    #[arg(long, default_value_t = 1.0)]
    pub(crate) cpus: f64,
    /// What generates the load: `native` (the runner's own open-model client, the default
    /// on this machine: it does several times a gateway's rate on one core) or `k6`
    /// (bench/k6/scenario.js; saturates its core near 1,000 small req/s). --in-cluster
    /// always uses k6.
    #[arg(long, value_enum)]
    pub(crate) load_generator: Option<Generator>,
    /// How responses are checked during the measured run (default: length; --in-cluster
    /// always checks in full, through the LoadTest's expect).
    #[arg(long, value_enum)]
    pub(crate) check: Option<Check>,
    /// Search each gateway's capacity after the measured run.
    #[arg(long)]
    pub(crate) capacity: bool,
    /// Most capacity steps per scenario and gateway.
    #[arg(long, default_value_t = 8)]
    pub(crate) capacity_steps: u32,
    /// Time per capacity step: seconds or a duration (`15s`, `1m`).
    #[arg(long, default_value = "15", value_parser = whole_seconds)]
    pub(crate) capacity_duration: u32,
    /// Rate multiplier between capacity steps until the first miss, when the gateway's CPU
    /// is not known (else the CPU reading steers the growth, see capacity.rs).
    #[arg(long, default_value_t = 1.5)]
    pub(crate) capacity_factor: f64,
    /// First capacity rate (default: the scenario's rate).
    #[arg(long)]
    pub(crate) capacity_start: Option<u32>,
    /// Before each capacity step, the rate moves linearly from the step before's (the
    /// measured run's, first) to the step's over this long, uncounted, so a step measures
    /// its rate and not a cold jump to it; 0 jumps. Native generator only: k6 steps jump.
    #[arg(long, default_value = "2", value_parser = whole_seconds)]
    pub(crate) capacity_ramp: u32,
    /// CI smoke test: every scenario for a few seconds at a low rate, every response compared
    /// with the monolith; fails on any failure.
    #[arg(long)]
    pub(crate) smoke: bool,
    /// Output directory for REPORT.md, results.json, charts/ and logs.
    #[arg(long, default_value = "bench/results/latest")]
    pub(crate) out: PathBuf,
    /// The repository root (default: where this binary was built from).
    #[arg(long)]
    pub(crate) repo: Option<PathBuf>,
    /// The k6 binary for --load-generator k6 (default: the tool cache, then PATH).
    #[arg(long)]
    pub(crate) k6: Option<PathBuf>,
    /// The graphfleet-subgraphs binary (default: target/release, built when missing).
    #[arg(long)]
    pub(crate) subgraphs_bin: Option<PathBuf>,
    /// The graphfleet-gateway binary (default: target/release, built when missing).
    #[arg(long)]
    pub(crate) gateway_bin: Option<PathBuf>,
    /// Serve this supergraph instead of the set's committed one (all scenarios must be of one
    /// set; routing URLs at http://127.0.0.1:4200 are pointed at the runner's subgraphs).
    #[arg(long, value_name = "FILE")]
    pub(crate) supergraph: Option<PathBuf>,
    /// Seconds a gateway may take to answer its first request.
    #[arg(long, default_value_t = 120)]
    pub(crate) start_timeout: u64,
    /// Subscription fan-out (`--scenario subscriptions`): subscribers held open at once, one
    /// measurement per count (default 100 and 1000; 5 with --smoke).
    #[arg(long = "subscribers", value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub(crate) subscribers: Vec<u32>,
    /// Subscription fan-out: milliseconds between two events of every subgraph
    /// subscription (graphfleet-subgraphs --event-interval).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(10..=60_000))]
    pub(crate) event_interval: u64,
}

#[derive(clap::Subcommand)]
pub(crate) enum Command {
    /// The first seconds of a new graphfleet gateway with and without plan warm-up
    /// (`usage.warm_up_file`, a saved `/usage/operations` report): per run, a fresh gateway
    /// gets distinct many-plans operations at a constant rate once it is ready (as a pod
    /// gets traffic once its readiness probe passes); prints (and writes to --out) p50, p99
    /// and max of the first second and of the whole burst, per start and pooled.
    WarmUp {
        /// Distinct operations (each its own plan), sent in turn.
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=10_000))]
        operations: u32,
        /// Requests per second.
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=10_000))]
        rate: u32,
        /// Length of the burst: seconds or a duration (at most a minute).
        #[arg(long, default_value = "5", value_parser = burst_seconds)]
        seconds: u32,
        /// Gateway starts with and without warm-up, taking turns.
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=20))]
        runs: u32,
        /// CPU budget of the gateway, in cores.
        #[arg(long, default_value_t = 1.0)]
        cpus: f64,
        #[arg(long, default_value = "bench/results/warm-up")]
        out: PathBuf,
        /// The repository root (default: where this binary was built from).
        #[arg(long)]
        repo: Option<PathBuf>,
        /// The graphfleet-subgraphs binary (default: target/release, built when missing).
        #[arg(long)]
        subgraphs_bin: Option<PathBuf>,
        /// The graphfleet-gateway binary (default: target/release, built when missing).
        #[arg(long)]
        gateway_bin: Option<PathBuf>,
        /// Seconds a gateway may take to listen.
        #[arg(long, default_value_t = 120)]
        start_timeout: u64,
        /// Milliseconds from `/health/ready` answering 200 to the burst: a pod gets traffic
        /// only once a readiness probe (every 2 s on the operator's pods, so 1 s on
        /// average) has passed. 0 sends the moment it is ready.
        #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(0..=10_000))]
        after_ready_ms: u64,
    },
    /// Hostile inputs (issue 33) against gateway binaries side by side: per attack a fresh
    /// gateway of each binary in front of the fed subgraphs (or a big loopback subgraph),
    /// measuring the attack's wall time, the gateway's CPU seconds and peak RSS, the answer
    /// and its GraphQL error codes, and the slowest /health/live meanwhile; prints the
    /// table and writes HOSTILE.md and hostile.json to --out.
    Hostile {
        /// A gateway binary, NAME=PATH (repeatable; every attack runs on each, in order).
        #[arg(long = "gateway-bin", value_name = "NAME=PATH", required = true)]
        binaries: Vec<String>,
        /// Attack classes to run (repeatable; default all): fan-out, memory-burst,
        /// silent-connections, websocket-flood, plan-cache, introspection, long-get.
        #[arg(long = "class", value_name = "NAME")]
        classes: Vec<String>,
        #[arg(long, default_value = "bench/results/hostile")]
        out: PathBuf,
        /// The repository root (default: where this binary was built from).
        #[arg(long)]
        repo: Option<PathBuf>,
        /// The graphfleet-subgraphs binary (default: target/release, built when missing).
        #[arg(long)]
        subgraphs_bin: Option<PathBuf>,
        /// CPU budget of the gateway, in cores.
        #[arg(long, default_value_t = 1.0)]
        cpus: f64,
        /// Seconds a gateway may take to answer its first request.
        #[arg(long, default_value_t = 60)]
        start_timeout: u64,
        /// A gateway whose resident memory passes this many MiB is killed, and its row
        /// says so: an unhardened binary could otherwise take the machine's memory.
        #[arg(long, default_value_t = 4096, value_parser = clap::value_parser!(u64).range(64..=65_536))]
        rss_limit_mib: u64,
    },
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
        #[arg(long, default_value = "bench/results/latest")]
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

/// The warm-up burst's length: whole seconds, 1 to 60.
fn burst_seconds(text: &str) -> Result<u32, String> {
    match whole_seconds(text)? {
        s @ 1..=60 => Ok(s),
        s => Err(format!("{s} s: the burst lasts 1 to 60 seconds")),
    }
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

#[cfg(test)]
mod tests;
