//! `graphfleet-bench report`: the same REPORT.md tables and charts from LoadTests the
//! operator ran in a cluster (`kubectl get loadtest X -o json`), with the gateway pods'
//! CPU and memory from `sample-pods` files cut to each LoadTest's window.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use graphfleet_api::{LoadTest, LoadTestPhase};
use kube::ResourceExt;

use crate::k6::{Latency, Summary};
use crate::podsample::Resources;
use crate::results::{GatewayInfo, GatewayRun, Measured, Outcome, Report, ScenarioRun};
use crate::scenario::Scenario;

/// LoadTests from one file: a LoadTest, or a List of them (`kubectl get loadtests -o json`).
pub fn parse(text: &str) -> anyhow::Result<Vec<LoadTest>> {
    let value: serde_json::Value = serde_json::from_str(text).context("not JSON")?;
    let items = match value.get("kind").and_then(|k| k.as_str()) {
        Some("LoadTest") => vec![value],
        Some(kind) if kind.ends_with("List") => value["items"]
            .as_array()
            .cloned()
            .context("a List without items")?,
        other => bail!("expected a LoadTest or a List of LoadTests, got kind {other:?}"),
    };
    items
        .into_iter()
        .map(|item| serde_json::from_value(item).context("not a graphfleet.dev LoadTest"))
        .collect()
}

pub fn read(path: &Path) -> anyhow::Result<Vec<LoadTest>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    parse(&text).with_context(|| format!("{}", path.display()))
}

/// `what: value` lines (scripts/run.sh's timings.txt); other lines are ignored.
pub fn parse_timings(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| {
            let (what, value) = l.split_once(": ")?;
            let (what, value) = (what.trim(), value.trim());
            (!what.is_empty() && !value.is_empty()).then(|| (what.to_owned(), value.to_owned()))
        })
        .collect()
}

/// Seconds of a LoadTest duration (`30s`, `1m30s`, `1h2m3.5s`, `500ms`), read as the operator
/// reads it.
fn duration_s(spec: &str) -> Option<f64> {
    graphfleet_bench_model::duration::parse(spec)
        .ok()
        .map(|d| d.as_secs_f64())
}

fn unix(t: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time) -> f64 {
    t.0.as_millisecond() as f64 / 1000.0
}

/// What the LoadTest loaded: the GraphGateway's name, else the URL's host; with
/// `spec.targets`, the targets' names.
fn target(lt: &LoadTest) -> String {
    let Some(t) = &lt.spec.target else {
        let names: Vec<&str> = lt
            .spec
            .targets
            .iter()
            .flatten()
            .map(|t| t.name.as_str())
            .collect();
        return names.join(", ");
    };
    if let Some(gw) = &t.gateway_ref {
        return gw.name.clone();
    }
    let url = t.url.as_deref().unwrap_or("?");
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.split(['/', '?', '#'])
        .next()
        .unwrap_or(rest)
        .to_owned()
}

/// The URLs the LoadTest loaded: each target's as its status records it, else the spec's.
fn target_url(lt: &LoadTest) -> String {
    let status = lt.status.clone().unwrap_or_default();
    if !status.targets.is_empty() {
        return status
            .targets
            .iter()
            .map(|t| t.url.as_str())
            .collect::<Vec<_>>()
            .join("`, `");
    }
    match lt.spec.target.as_ref().map(|t| (&t.gateway_ref, &t.url)) {
        Some((_, Some(url))) => url.clone(),
        // The GraphGateway's Service, as the operator resolves it.
        Some((Some(gw), None)) => format!(
            "http://{}.{}.svc:80/graphql",
            gw.name,
            gw.namespace
                .clone()
                .unwrap_or_else(|| gateway_namespace(lt))
        ),
        _ => "?".to_owned(),
    }
}

fn label(lt: &LoadTest) -> String {
    let (target, name) = (target(lt), lt.name_any());
    if target == name {
        name
    } else {
        format!("{target} ({name})")
    }
}

fn phase(lt: &LoadTest) -> LoadTestPhase {
    lt.status
        .as_ref()
        .and_then(|s| s.phase)
        .unwrap_or(LoadTestPhase::Pending)
}

/// The runs of one LoadTest: itself, or each of its `spec.targets` (a row each, side by
/// side), with the gateway pods' resources when a file covers the run's window.
fn gateway_runs(lt: &LoadTest, resources: &[Resources]) -> Vec<GatewayRun> {
    let status = lt.status.clone().unwrap_or_default();
    if lt.spec.targets.is_none() {
        let run = Run {
            label: label(lt),
            phase: phase(lt),
            results: status.results.clone(),
            message: status.message.clone(),
            start: status.start_time.clone(),
            end: status.completion_time.clone(),
            namespace: gateway_namespace(lt),
        };
        return vec![gateway_run(lt, &run, resources)];
    }
    let mut out = Vec::new();
    for t in lt.spec.targets.iter().flatten() {
        let seen = status.targets.iter().find(|s| s.name == t.name);
        let namespace = t
            .gateway_ref
            .as_ref()
            .and_then(|g| g.namespace.clone())
            .or_else(|| lt.namespace())
            .unwrap_or_else(|| "default".into());
        let run = Run {
            label: format!("{} ({})", t.name, lt.name_any()),
            phase: seen.map_or(LoadTestPhase::Pending, |s| s.phase),
            results: seen.and_then(|s| s.results.clone()),
            message: seen.and_then(|s| s.message.clone()),
            start: seen.and_then(|s| s.start_time.clone()),
            end: seen.and_then(|s| s.completion_time.clone()),
            namespace,
        };
        out.push(gateway_run(lt, &run, resources));
    }
    out
}

/// A LoadTest's (or one target's) results as the k6 summary the report reads.
pub(crate) fn summary_of(
    r: &graphfleet_api::LoadTestResults,
    rate: f64,
    duration_s: f64,
) -> Summary {
    let l = &r.latency_ms;
    Summary {
        target_rate: Some(rate),
        duration_s,
        requests: r.requests,
        ok: r.requests.saturating_sub(r.failures),
        failures: r.failures,
        dropped_iterations: r.dropped_iterations,
        achieved_rate: Some(r.achieved_rate),
        latency_ms: Some(Latency {
            min: l.min,
            med: l.med,
            // The status keeps no mean.
            avg: f64::NAN,
            p90: l.p90,
            p95: l.p95,
            p99: l.p99,
            max: l.max,
        }),
        scheduled_latency_ms: None,
    }
}

/// One LoadTest's (or one of its targets') outcome as the report reads it.
struct Run {
    label: String,
    phase: LoadTestPhase,
    results: Option<graphfleet_api::LoadTestResults>,
    message: Option<String>,
    start: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
    end: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
    /// Namespace of the target gateway's pods (where sample-pods should have looked).
    namespace: String,
}

fn gateway_run(lt: &LoadTest, run: &Run, resources: &[Resources]) -> GatewayRun {
    let label = run.label.clone();
    let outcome = match (run.phase, &run.results) {
        (LoadTestPhase::Succeeded, Some(r)) => {
            let planned = duration_s(&lt.spec.duration).unwrap_or(0.0);
            let summary = summary_of(r, f64::from(lt.spec.rate), planned);
            let usage = match (&run.start, &run.end) {
                (Some(start), Some(end)) => resources
                    .iter()
                    .filter(|res| res.namespace == run.namespace)
                    .find_map(|res| crate::podsample::usage_in(&res.ticks, unix(start), unix(end))),
                _ => None,
            };
            Outcome::Measured(Box::new(Measured {
                summary,
                usage,
                subgraph_requests: None,
                capacity: None,
            }))
        }
        (LoadTestPhase::Succeeded, None) => Outcome::Failed {
            error: "the LoadTest succeeded but its status has no results".into(),
        },
        (LoadTestPhase::Failed, _) => Outcome::Failed {
            error: format!(
                "LoadTest failed: {}",
                run.message.as_deref().unwrap_or("no message")
            ),
        },
        (LoadTestPhase::Aborted, _) => Outcome::Failed {
            error: format!(
                "LoadTest aborted on a threshold: {}",
                run.message.as_deref().unwrap_or("no message")
            ),
        },
        (p, _) => Outcome::Failed {
            error: format!("LoadTest not finished (phase {p:?})"),
        },
    };
    GatewayRun {
        gateway: lt.name_any(),
        label,
        outcome,
        rounds: Vec::new(),
    }
}

/// Namespace of the target gateway's pods (where sample-pods should have looked).
fn gateway_namespace(lt: &LoadTest) -> String {
    lt.spec
        .target
        .as_ref()
        .and_then(|t| t.gateway_ref.as_ref())
        .and_then(|g| g.namespace.clone())
        .or_else(|| lt.namespace())
        .unwrap_or_else(|| "default".into())
}

/// Scenario name, set and description of a LoadTest (built-in scenarios are the runner's).
fn scenario_of<'a>(lt: &LoadTest, known: &'a [Scenario]) -> (String, Option<&'a Scenario>) {
    match &lt.spec.scenario {
        Some(name) => (name.clone(), known.iter().find(|s| &s.name == name)),
        None => ("script".into(), None),
    }
}

/// A filesystem- and heading-friendly name.
fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// Builds the report: one section per (scenario, rate, duration), one row per LoadTest.
pub fn report(
    loadtests: &[LoadTest],
    resources: &[Resources],
    known: &[Scenario],
    timings: Vec<(String, String)>,
    git_commit: &str,
) -> Report {
    type Key = (String, i32, String);
    let mut groups: Vec<(Key, Vec<&LoadTest>)> = Vec::new();
    for lt in loadtests {
        let key = (
            scenario_of(lt, known).0,
            lt.spec.rate,
            lt.spec.duration.clone(),
        );
        match groups.iter_mut().find(|(k, _)| k == &key) {
            Some((_, v)) => v.push(lt),
            None => groups.push((key, vec![lt])),
        }
    }
    let mut per_name: BTreeMap<String, usize> = BTreeMap::new();
    for ((name, _, _), _) in &groups {
        *per_name.entry(name.clone()).or_default() += 1;
    }
    let scenarios = groups
        .iter()
        .map(|((name, rate, duration), lts)| {
            let (_, scenario) = scenario_of(lts[0], known);
            let section = if per_name[name] > 1 {
                slug(&format!("{name}-{rate}rps-{duration}"))
            } else {
                slug(name)
            };
            let mut description = scenario.map_or_else(
                || match name.as_str() {
                    "script" => "A LoadTest with its own k6 script.".to_owned(),
                    other => format!("Scenario `{other}`."),
                },
                |s| s.description.clone(),
            );
            description.push_str(
                "\n\nFrom LoadTest status (the operator's k6 Jobs on the client pool). The status keeps one latency trend, counted from each request's scheduled start when k6 recorded it (open model, no coordinated omission), so Min…Max already include queueing and there is no separate \"P99 from schedule\".",
            );
            let max_parallel = lts.iter().map(|l| l.spec.parallelism).max().unwrap_or(1);
            if max_parallel > 1 {
                description.push_str(&format!(
                    " With {max_parallel} k6 segments, P90…Max are the worst segment's (an upper bound) and the median is the segments' request-weighted mean."
                ));
            }
            description.push_str(&resources_note(lts, resources));
            ScenarioRun {
                name: section,
                set: scenario.map_or_else(|| "-".into(), |s| s.set.clone()),
                description,
                rate: u32::try_from(*rate).unwrap_or(0),
                duration_s: duration_s(duration).map_or(0, |d| d.round() as u32),
                generator: "k6".into(),
                response_bytes: None,
                error: None,
                gateways: lts.iter().flat_map(|lt| gateway_runs(lt, resources)).collect(),
                fanout: None,
            }
        })
        .collect();
    Report {
        smoke: false,
        system: system(loadtests, resources, git_commit),
        gateways: loadtests.iter().map(info).collect(),
        scenarios,
        timings,
    }
}

fn resources_note(lts: &[&LoadTest], resources: &[Resources]) -> String {
    let sampled: Vec<String> = lts
        .iter()
        .filter_map(|lt| {
            let s = lt.status.as_ref()?;
            let (start, end) = (
                unix(s.start_time.as_ref()?),
                unix(s.completion_time.as_ref()?),
            );
            let res = resources
                .iter()
                .filter(|r| r.namespace == gateway_namespace(lt))
                .find(|r| crate::podsample::usage_in(&r.ticks, start, end).is_some())?;
            let covered = crate::podsample::window(&res.ticks, start, end);
            let secs = covered.last()?.at - covered.first()?.at;
            Some(format!(
                "{} over {secs:.0} of its {:.0} s (pods `{}`)",
                lt.name_any(),
                end - start,
                res.selector
            ))
        })
        .collect();
    if sampled.is_empty() {
        if resources.is_empty() {
            String::new()
        } else {
            " No resources file covers these LoadTests' windows.".into()
        }
    } else {
        format!(
            " Resources: the gateway pods' cgroups sampled every 100 ms from the LoadTest's start to its completion (k6 start-up and the operator noticing the end included, so CPU avg is slightly diluted; requests/core.s is not): {}.",
            sampled.join("; ")
        )
    }
}

fn info(lt: &LoadTest) -> GatewayInfo {
    let s = &lt.spec;
    let st = lt.status.clone().unwrap_or_default();
    let when = match (&st.start_time, &st.completion_time) {
        (Some(a), Some(b)) => format!(", {} → {}", a.0, b.0),
        (Some(a), None) => format!(", started {}", a.0),
        _ => String::new(),
    };
    GatewayInfo {
        name: format!(
            "{}/{}",
            lt.namespace().unwrap_or_else(|| "default".into()),
            lt.name_any()
        ),
        label: label(lt),
        version: format!("LoadTest {:?}", phase(lt)),
        status: format!(
            "`{}`, {} req/s for {}, {} k6 segment(s){when}",
            target_url(lt),
            s.rate,
            s.duration,
            s.parallelism
        ),
    }
}

fn system(
    loadtests: &[LoadTest],
    resources: &[Resources],
    git_commit: &str,
) -> Vec<(String, String)> {
    let mut facts = vec![(
        "Source".to_owned(),
        "LoadTest status written by the graphfleet operator (k6 Jobs in the cluster)".to_owned(),
    )];
    let latest = loadtests
        .iter()
        .filter_map(|lt| lt.status.as_ref()?.completion_time.clone())
        .max_by(|a, b| a.0.cmp(&b.0));
    if let Some(t) = latest {
        facts.push(("Date".into(), t.0.to_string()));
    }
    if let Some(res) = resources.first() {
        let m = &res.machine;
        facts.push(("CPU".into(), m.cpu.clone()));
        facts.push(("Memory".into(), m.memory.clone()));
        facts.push(("Linux Version".into(), m.kernel.clone()));
        facts.push(("Cores".into(), m.cores.to_string()));
        if !res.node_cpus.is_empty() {
            let cpus: Vec<String> = res
                .node_cpus
                .iter()
                .map(|(node, cpus)| format!("{node} on CPU {cpus}"))
                .collect();
            facts.push(("Placement".into(), cpus.join(", ")));
        }
        facts.push((
            "Resources".into(),
            format!(
                "pod cgroups read on the node every {} ms: CPU from cpuacct, memory as {}",
                res.interval_ms, res.memory_metric
            ),
        ));
    } else {
        facts.push((
            "Resources".into(),
            "not sampled (pass --resources FILE from `graphfleet-bench sample-pods`)".into(),
        ));
    }
    facts.push(("Git Commit".into(), git_commit.to_owned()));
    facts
}

/// Options of `graphfleet-bench report`.
pub struct ReportOptions {
    pub loadtests: Vec<PathBuf>,
    pub resources: Vec<PathBuf>,
    pub timings: Option<PathBuf>,
    pub out: PathBuf,
    pub repo: Option<PathBuf>,
}

pub async fn run(opts: &ReportOptions) -> anyhow::Result<()> {
    if opts.loadtests.is_empty() {
        bail!("report needs at least one --loadtest FILE (kubectl get loadtest NAME -o json)");
    }
    let mut loadtests = Vec::new();
    for f in &opts.loadtests {
        loadtests.extend(read(f)?);
    }
    let resources = opts
        .resources
        .iter()
        .map(|f| Resources::read(f))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let timings = match &opts.timings {
        Some(f) => parse_timings(
            &std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?,
        ),
        None => Vec::new(),
    };
    // Descriptions of the built-in scenarios, when the checkout is at hand.
    let repo = crate::paths::repo_root(opts.repo.as_deref()).ok();
    let known = repo
        .as_ref()
        .and_then(|r| crate::scenario::discover(&r.join("bench/sets")).ok())
        .unwrap_or_default();
    let commit = match &repo {
        Some(r) => crate::host::git_commit(r).await,
        None => "unknown".into(),
    };
    let report = report(&loadtests, &resources, &known, timings, &commit);
    std::fs::create_dir_all(&opts.out)
        .with_context(|| format!("creating {}", opts.out.display()))?;
    crate::report::write(&report, &opts.out)?;
    eprintln!("[bench] report: {}", opts.out.join("REPORT.md").display());
    Ok(())
}

#[cfg(test)]
mod tests;
