//! What a benchmark run measured (also written as results.json next to the report).

use serde::Serialize;

use crate::capacity::Capacity;
use crate::gateway::Gateway;
use crate::k6::Summary;
use crate::progress::progress;
use crate::sampler::Usage;

#[derive(Debug, Clone, Serialize)]
pub struct Measured {
    pub summary: Summary,
    /// CPU and memory of the gateway during the measured run; None when nobody sampled it
    /// (a LoadTest reported without a resources file).
    pub usage: Option<Usage>,
    /// Subgraph requests the gateway made during the measured run; None when not counted
    /// (LoadTests: the operator does not read the subgraphs' counters).
    pub subgraph_requests: Option<u64>,
    pub capacity: Option<Capacity>,
}

impl Measured {
    /// Requests per CPU-second the gateway used.
    pub fn per_core_second(&self) -> Option<f64> {
        let cpu = self.usage?.cpu_seconds;
        (cpu > 0.0).then(|| self.summary.requests as f64 / cpu)
    }

    /// Requests per GB-second of average resident memory.
    pub fn per_gb_second(&self) -> Option<f64> {
        let gb_s = self.usage?.mem_avg / 1e9 * self.summary.duration_s;
        (gb_s > 0.0).then(|| self.summary.requests as f64 / gb_s)
    }

    pub fn subgraph_per_request(&self) -> Option<f64> {
        let total = self.subgraph_requests?;
        if self.summary.requests == 0 {
            return Some(0.0);
        }
        Some(total as f64 / self.summary.requests as f64)
    }
}

#[cfg(test)]
impl Measured {
    /// A run of `requests` requests on `cpu_seconds` of CPU with a p99 of `p99_ms` and a
    /// 30 MiB peak, for tests of what reports make of runs.
    pub(crate) fn example(requests: u64, cpu_seconds: f64, p99_ms: f64) -> Measured {
        Measured {
            summary: Summary {
                duration_s: 10.0,
                requests,
                ok: requests,
                latency_ms: Some(crate::k6::Latency {
                    p99: p99_ms,
                    ..Default::default()
                }),
                ..Summary::default()
            },
            usage: Some(Usage {
                cpu_seconds,
                mem_max: 30 * 1024 * 1024,
                ..Usage::default()
            }),
            subgraph_requests: None,
            capacity: None,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    Measured(Box<Measured>),
    /// The gateway could not be installed or built.
    NotInstalled {
        error: String,
    },
    /// It was installed but the run failed (did not start, k6 failed, ...).
    Failed {
        error: String,
    },
    /// It cannot run in this mode (e.g. a Node.js peer in the cluster).
    Unavailable {
        error: String,
    },
}

impl Outcome {
    /// A measured run, or its error (also reported as progress) as `Failed`.
    pub fn from_run(result: anyhow::Result<Measured>, scenario: &str, gateway: &str) -> Self {
        match result {
            Ok(m) => Outcome::Measured(Box::new(m)),
            Err(e) => {
                progress(format!("{scenario} / {gateway}: {e:#}"));
                Outcome::Failed {
                    error: format!("{e:#}"),
                }
            }
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct GatewayRun {
    pub gateway: String,
    pub label: String,
    pub outcome: Outcome,
    /// Requests/core.s of every round when the run had several (`--rounds`); `outcome`
    /// is the median one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rounds: Vec<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ScenarioRun {
    pub name: String,
    pub set: String,
    pub description: String,
    pub rate: u32,
    pub duration_s: u32,
    /// What generated the load: "native" (the runner's own client) or "k6".
    pub generator: String,
    /// Bytes of the monolith's response.
    pub response_bytes: Option<usize>,
    /// Set when the scenario could not run at all (e.g. its set failed to start).
    pub error: Option<String>,
    pub gateways: Vec<GatewayRun>,
    /// The `subscriptions` scenario's rows (its `gateways` stay empty).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fanout: Option<Vec<FanoutRow>>,
}

impl ScenarioRun {
    /// A scenario about to run at `rate` for `duration_s`, nothing measured yet.
    pub fn starting(
        scenario: &crate::scenario::Scenario,
        rate: u32,
        duration_s: u32,
        generator: &str,
    ) -> Self {
        ScenarioRun {
            name: scenario.name.clone(),
            set: scenario.set.clone(),
            description: scenario.description.clone(),
            rate,
            duration_s,
            generator: generator.to_owned(),
            response_bytes: None,
            error: None,
            gateways: Vec::new(),
            fanout: None,
        }
    }
}

/// One measured (gateway, variant, subscriber count) of the `subscriptions` fan-out.
#[derive(Debug, Clone, Serialize)]
pub struct FanoutRow {
    pub gateway: String,
    pub label: String,
    /// The gateway's settings for this row, e.g. `dedup on`.
    pub variant: String,
    pub subscribers: u32,
    /// Set when the row could not be measured.
    pub error: Option<String>,
    pub opened: u32,
    pub open_failures: u32,
    /// Seconds from the first connect until every subscription was acknowledged.
    pub open_seconds: f64,
    /// Events every subscriber should get per second (subscribers / interval).
    pub expected_per_s: f64,
    /// Events delivered per second in the measured window, all subscribers together.
    pub delivered_per_s: f64,
    pub events_in_window: u64,
    /// Events that were not a `next` with data and no errors, or subscriptions that
    /// ended before the run did (`error`, `complete`, a closed socket).
    pub bad_events: u64,
    pub ended_early: u32,
    pub failure_samples: Vec<String>,
    /// End-to-end latency (emission at the subgraph → receipt), ms.
    pub latency_p50_ms: Option<f64>,
    pub latency_p99_ms: Option<f64>,
    pub latency_max_ms: Option<f64>,
    /// Gateway CPU over the window (1.0 = one core).
    pub cpu_avg: Option<f64>,
    /// Resident memory before any subscription, and the window's average with N open.
    pub rss_before: Option<u64>,
    pub rss_open: Option<u64>,
    /// (rss_open − rss_before) / subscribers, bytes.
    pub bytes_per_subscription: Option<f64>,
}

impl FanoutRow {
    pub fn failed(gateway: &Gateway, variant: &str, subscribers: u32, error: String) -> Self {
        FanoutRow {
            gateway: gateway.name.clone(),
            label: gateway.label.clone(),
            variant: variant.to_owned(),
            subscribers,
            error: Some(error),
            opened: 0,
            open_failures: 0,
            open_seconds: 0.0,
            expected_per_s: 0.0,
            delivered_per_s: 0.0,
            events_in_window: 0,
            bad_events: 0,
            ended_early: 0,
            failure_samples: Vec::new(),
            latency_p50_ms: None,
            latency_p99_ms: None,
            latency_max_ms: None,
            cpu_avg: None,
            rss_before: None,
            rss_open: None,
            bytes_per_subscription: None,
        }
    }

    /// Problems that fail a smoke run.
    pub fn problems(&self) -> Option<String> {
        if let Some(e) = &self.error {
            return Some(e.clone());
        }
        let broken = self.open_failures > 0
            || self.bad_events > 0
            || self.ended_early > 0
            || self.events_in_window == 0;
        broken.then(|| {
            format!(
                "{} opened, {} failed to open, {} events, {} bad, {} ended early: {}",
                self.opened,
                self.open_failures,
                self.events_in_window,
                self.bad_events,
                self.ended_early,
                self.failure_samples.join("; ")
            )
        })
    }
}

/// What the host mode knows about the machine; [`System::facts`] turns it into the report's
/// "System Information" lines.
#[derive(Debug, Clone, Serialize)]
pub struct System {
    pub date: String,
    pub cpu: String,
    pub cores: usize,
    pub memory: String,
    pub kernel: String,
    pub git_commit: String,
    pub load_generator: String,
    pub placement: String,
    pub cpu_limit: String,
}

impl System {
    pub fn facts(&self) -> Vec<(String, String)> {
        [
            ("Date", &self.date),
            ("CPU", &self.cpu),
            ("Memory", &self.memory),
            ("Linux Version", &self.kernel),
            ("Git Commit", &self.git_commit),
            ("Load generator", &self.load_generator),
            ("Gateway CPU budget", &self.cpu_limit),
            ("Placement", &self.placement),
            ("Cores", &self.cores.to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.clone()))
        .collect()
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct GatewayInfo {
    pub name: String,
    pub label: String,
    pub version: String,
    pub status: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub smoke: bool,
    /// "System Information": ordered (name, value) lines; each mode says what it knows.
    pub system: Vec<(String, String)>,
    pub gateways: Vec<GatewayInfo>,
    pub scenarios: Vec<ScenarioRun>,
    /// A closing "Timings" section of (what, how long) lines, e.g. from scripts/run.sh.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub timings: Vec<(String, String)>,
}

impl Report {
    /// Problems that fail a smoke run: no requests, any failure, or a gateway that did not run.
    /// Dropped iterations (a slow debug build) are speed, not correctness, so they pass.
    pub fn smoke_problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        for s in &self.scenarios {
            if let Some(e) = &s.error {
                out.push(format!("{}: {e}", s.name));
            }
            for row in s.fanout.iter().flatten() {
                if let Some(p) = row.problems() {
                    out.push(format!(
                        "{} / {} ({}) × {}: {p}",
                        s.name, row.gateway, row.variant, row.subscribers
                    ));
                }
            }
            for g in &s.gateways {
                match &g.outcome {
                    Outcome::Measured(m) => {
                        let k = &m.summary;
                        if k.requests == 0 || k.failures > 0 {
                            out.push(format!(
                                "{} / {}: {} requests, {} failures",
                                s.name, g.gateway, k.requests, k.failures
                            ));
                        }
                    }
                    Outcome::NotInstalled { error }
                    | Outcome::Failed { error }
                    | Outcome::Unavailable { error } => {
                        out.push(format!("{} / {}: {error}", s.name, g.gateway));
                    }
                }
            }
        }
        out
    }
}
