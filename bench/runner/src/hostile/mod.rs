//! `graphfleet-bench hostile`: every hostile input of issue 33 against gateway binaries
//! side by side (the one from before the hardening and the current one). Per attack and
//! binary a fresh gateway, in its own cgroup under the CPU budget, in front of the `fed`
//! subgraphs as a real process (or the runner's big loopback subgraph); measured: the
//! attack's wall time, the gateway's CPU seconds (utime + stime, /proc/<pid>/stat) and
//! peak RSS (VmHWM), the answer and its GraphQL error codes, and the slowest
//! `GET /health/live` polled every 50 ms meanwhile (on the admin listener where the
//! binary has one). Every attack is bounded in count and time, all traffic is on
//! loopback, and a gateway past `--rss-limit-mib` is killed rather than left to take the
//! machine's memory.

mod answer;
mod burst;
mod cases;
mod connections;
mod flood;
mod harness;
mod probe;
mod requests;
mod table;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use graphfleet_bench_model::hostile::{
    doubling_aliases, exponential_introspection, fan_out, nested_introspection,
};
use serde::Serialize;

use self::burst::BigSubgraph;
use self::cases::{Attack, Case, Graph};
pub(crate) use self::harness::Binary;
use self::harness::{Start, Target};
use self::table::{Outcome, Row};
use crate::config::SubgraphServer;
use crate::process::{self, Placement};
use crate::progress::progress;
use crate::servers::{point_supergraph, start_server};

/// A `hostile` run.
pub(crate) struct Options {
    pub(crate) repo: PathBuf,
    pub(crate) out: PathBuf,
    pub(crate) subgraphs_bin: PathBuf,
    pub(crate) binaries: Vec<Binary>,
    pub(crate) classes: Vec<String>,
    pub(crate) cpus: f64,
    pub(crate) start_timeout: Duration,
    pub(crate) rss_limit: u64,
}

/// What hostile.json holds.
#[derive(Serialize)]
struct Results<'a> {
    date: String,
    commit: String,
    command: String,
    machine: crate::host::Machine,
    binaries: Vec<(String, String)>,
    rows: &'a [Row],
}

/// A gateway's subgraphs are answered here: the fed set, and the big subgraph.
struct Graphs {
    fed: PathBuf,
    unreachable: PathBuf,
    big: Option<BigSubgraph>,
}

pub(crate) async fn run(opts: &Options) -> anyhow::Result<()> {
    let cases = cases::select(&opts.classes)?;
    let work = opts.out.join("work");
    std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
    let placement = Placement::new(opts.cpus)?;
    if let Some(others) = &placement.others {
        pin_runner(others);
    }
    progress(format!("hostile: {}", placement.describe()));
    let server = SubgraphServer {
        bin: &opts.subgraphs_bin,
        cpus: placement.others.as_deref(),
    };
    let (mut subgraphs, base) =
        start_server(server, "fed", false, &[], &work.join("subgraphs.log")).await?;
    let rows = run_cases(opts, &cases, &placement, &work, &base).await;
    process::stop(&mut subgraphs).await;
    let rows = rows?;
    write(opts, &rows).await
}

async fn run_cases(
    opts: &Options,
    cases: &[Case],
    placement: &Placement,
    work: &Path,
    base: &str,
) -> anyhow::Result<Vec<Row>> {
    let committed = opts.repo.join("bench/sets/fed/supergraph.graphql");
    let fed_dir = work.join("fed");
    let unreachable_dir = work.join("unreachable");
    for dir in [&fed_dir, &unreachable_dir] {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let graphs = Graphs {
        fed: point_supergraph(&committed, base, &fed_dir)?,
        // The discard port: nothing listens there, so every fetch is refused at once.
        unreachable: point_supergraph(&committed, "http://127.0.0.1:9", &unreachable_dir)?,
        big: match cases.iter().any(|c| c.graph == Graph::Big) {
            true => Some(burst::start(work, 60).await?),
            false => None,
        },
    };
    let mut rows = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        for binary in &opts.binaries {
            let row = run_case(opts, case, binary, &graphs, placement, work, i).await?;
            progress(format!(
                "{} / {}: {:.2} s wall, {:.2} s CPU, {:.0} MiB peak, health worst {:.0} ms, {} {}",
                row.case,
                row.gateway,
                row.outcome.wall_s,
                row.cpu_s,
                row.peak_rss_mib,
                row.health_worst_ms,
                row.outcome.answer,
                row.outcome.codes
            ));
            rows.push(row);
        }
    }
    Ok(rows)
}

async fn run_case(
    opts: &Options,
    case: &Case,
    binary: &Binary,
    graphs: &Graphs,
    placement: &Placement,
    work: &Path,
    index: usize,
) -> anyhow::Result<Row> {
    let supergraph = match case.graph {
        Graph::Fed => &graphs.fed,
        Graph::FedUnreachable => &graphs.unreachable,
        Graph::Big => &graphs.big.as_ref().context("the big subgraph")?.supergraph,
    };
    let tag = format!("hostile-{index}-{}", binary.name);
    let target = harness::start(&Start {
        binary,
        supergraph,
        required: &case.required,
        optional: &case.optional,
        placement,
        dir: work,
        tag: &tag,
        start_timeout: opts.start_timeout,
    })
    .await
    .with_context(|| format!("{}: starting {}", case.name, binary.name))?;
    let measured = harness::measure(
        &target,
        opts.rss_limit,
        case.bound,
        attack(case, &target, graphs),
    )
    .await;
    let (passed, refused, health_on) = (
        target.passed.clone(),
        target.refused.clone(),
        target.health_on,
    );
    target.stop().await;
    let m = measured.with_context(|| format!("{} on {}", case.name, binary.name))?;
    Ok(Row {
        class: case.class.to_owned(),
        case: case.name.clone(),
        gateway: binary.name.clone(),
        settings: passed
            .into_iter()
            .filter(|s| !s.starts_with("admin.listen="))
            .collect(),
        refused_settings: refused,
        outcome: m.outcome,
        cpu_s: m.cpu_s,
        peak_rss_mib: m.peak_rss_mib,
        start_rss_mib: m.start_rss_mib,
        health_worst_ms: m.health.worst.as_secs_f64() * 1e3,
        health_probes: m.health.probes,
        health_failures: m.health.failures,
        health_on: health_on.to_owned(),
        healthy_after: m.healthy_after,
        killed: m.health.killed_at.is_some(),
    })
}

/// The attack of `case` on `target`; its inner timeouts sit inside the case's bound.
async fn attack(case: &Case, target: &Target, graphs: &Graphs) -> anyhow::Result<Outcome> {
    let inner = case.bound.saturating_sub(Duration::from_secs(10));
    Ok(match case.attack {
        Attack::FanOut { aliases } => requests::one(target, &fan_out(3, aliases), inner).await,
        Attack::MemoryBurst { clients } => {
            let big = graphs.big.as_ref().context("the big subgraph")?;
            burst::burst(target, clients, big.body_bytes).await
        }
        Attack::Silent { connections } => connections::silent(target, connections, inner).await?,
        Attack::Flood { messages } => flood::flood(target, messages, inner).await?,
        Attack::PlanCache { operations, levels } => {
            let text = doubling_aliases(levels);
            let named = |i: usize| text.replacen("query {", &format!("query Op{i} {{"), 1);
            requests::many(target, operations, named, inner).await
        }
        Attack::DeepIntrospection { levels } => {
            requests::one(target, &nested_introspection(levels), inner).await
        }
        Attack::ExponentialIntrospection { levels } => {
            requests::one(target, &exponential_introspection(levels), inner).await
        }
        Attack::LongGet { bytes } => requests::long_get(target, bytes).await?,
    })
}

/// Moves every thread of the runner to `cpus` (the cores the gateway does not have), so
/// the attack's own work does not take the gateway's CPU; a failure only costs placement.
fn pin_runner(cpus: &str) {
    let pid = std::process::id().to_string();
    let ok = std::process::Command::new("taskset")
        .args(["-a", "-p", "-c", cpus, &pid])
        .stdout(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("[hostile] taskset -a -p -c {cpus} {pid} failed: the runner runs unpinned");
    }
}

async fn write(opts: &Options, rows: &[Row]) -> anyhow::Result<()> {
    let date = crate::host::now_rfc3339();
    let commit = crate::host::git_commit(&opts.repo).await;
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let binaries: Vec<(String, String)> = opts
        .binaries
        .iter()
        .map(|b| (b.name.clone(), b.path.display().to_string()))
        .collect();
    let table = table::markdown(rows);
    println!("{table}");
    let mut report = format!(
        "# Hostile inputs\n\n`{command}`\n\n{date}, commit {commit}; binaries: {}.\n\n",
        binaries
            .iter()
            .map(|(n, p)| format!("{n} = `{p}`"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    report.push_str(&table);
    report.push_str("\nSettings and observations:\n\n");
    report.push_str(&table::notes(rows));
    let results = Results {
        date,
        commit,
        command,
        machine: crate::host::Machine::this(),
        binaries,
        rows,
    };
    let json = serde_json::to_string_pretty(&results).context("hostile.json")?;
    for (name, text) in [("HOSTILE.md", report), ("hostile.json", json)] {
        let path = opts.out.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    eprintln!(
        "[hostile] report: {}",
        opts.out.join("HOSTILE.md").display()
    );
    Ok(())
}
