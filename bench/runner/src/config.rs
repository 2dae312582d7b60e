//! What a host-mode run is asked to do: gateways and scenarios, CPU placement, the load
//! generator, and the optional capacity search and subscription fan-out.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::gateway::Gateway;
use crate::k6::Check;
use crate::process::Placement;
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
    /// Measured runs per scenario and gateway, taking turns (see
    /// [`crate::bench::pick_rounds`]).
    pub rounds: u32,
    pub check: Check,
    pub smoke: bool,
    pub capacity: Option<CapacityConfig>,
    pub start_timeout: Duration,
    /// Subscriber counts and event interval of the `subscriptions` scenario.
    pub fanout: FanoutConfig,
    /// A supergraph to serve instead of the set's committed one (e.g. the operator's).
    pub supergraph: Option<PathBuf>,
}

/// What drives the load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Generator {
    /// The runner's own open-model client ([`crate::openload`]): several times the
    /// gateways' rate on one core, latency from each request's scheduled time at
    /// microsecond resolution.
    Native,
    /// k6 running bench/k6/scenario.js (saturates its core near 1,000 small req/s).
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

/// What the fan-out runs: subscriber counts and the subgraph's event interval.
#[derive(Debug, Clone)]
pub struct FanoutConfig {
    pub subscribers: Vec<u32>,
    pub event_interval: Duration,
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
