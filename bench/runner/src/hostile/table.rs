//! One row per attack and gateway binary, and the markdown table of them.

use serde::Serialize;

/// What an attack saw of its hostile requests.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Outcome {
    /// From the first hostile byte sent until the last request was answered or refused
    /// (or the attack's bound ran out).
    pub(crate) wall_s: f64,
    /// The answers' statuses, e.g. `200`, `503×30, 200×2`, `timeout`, `closed 1008`.
    pub(crate) answer: String,
    /// The GraphQL error codes of the answers, `—` for none.
    pub(crate) codes: String,
    pub(crate) note: String,
}

/// The figures of one attack on one gateway binary.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Row {
    pub(crate) class: String,
    pub(crate) case: String,
    pub(crate) gateway: String,
    /// Settings given on top of the defaults, and those the binary refused (not passed).
    pub(crate) settings: Vec<String>,
    pub(crate) refused_settings: Vec<String>,
    pub(crate) outcome: Outcome,
    /// utime + stime of the gateway over the attack.
    pub(crate) cpu_s: f64,
    /// VmHWM: the most resident memory the fresh gateway ever had.
    pub(crate) peak_rss_mib: f64,
    pub(crate) start_rss_mib: f64,
    /// The slowest `/health/live` answer while the attack ran, and how many failed.
    pub(crate) health_worst_ms: f64,
    pub(crate) health_probes: u32,
    pub(crate) health_failures: u32,
    /// Which listener the health probes went to.
    pub(crate) health_on: String,
    /// Health and a simple query answered after the attack.
    pub(crate) healthy_after: bool,
    /// Killed by the runner over `--rss-limit-mib` (then the peak is at least that).
    pub(crate) killed: bool,
}

/// The markdown table of `rows`, in their order.
pub(crate) fn markdown(rows: &[Row]) -> String {
    let mut out = String::from(
        "| class | case | gateway | wall s | CPU s | peak RSS MiB | /health worst ms (failed) | answer | code | healthy after |\n\
         | --- | --- | --- | ---: | ---: | ---: | ---: | --- | --- | --- |\n",
    );
    for r in rows {
        let o = &r.outcome;
        let peak = if r.killed {
            format!("≥ {:.0} (killed)", r.peak_rss_mib)
        } else {
            format!("{:.0}", r.peak_rss_mib)
        };
        out.push_str(&format!(
            "| {} | {} | {} | {:.2} | {:.2} | {} | {:.0} ({}/{}) | {} | {} | {} |\n",
            cell(&r.class),
            cell(&r.case),
            cell(&r.gateway),
            o.wall_s,
            r.cpu_s,
            peak,
            r.health_worst_ms,
            r.health_failures,
            r.health_probes,
            cell(&o.answer),
            cell(&o.codes),
            if r.healthy_after { "yes" } else { "**no**" },
        ));
    }
    out
}

/// The notes under the table: each row's settings and what the attack observed.
pub(crate) fn notes(rows: &[Row]) -> String {
    let mut out = String::new();
    for r in rows {
        let mut line = format!("- {} / {}: ", r.case, r.gateway);
        if r.settings.is_empty() {
            line.push_str("defaults");
        } else {
            line.push_str(&r.settings.join(", "));
        }
        if !r.refused_settings.is_empty() {
            line.push_str(&format!(
                " (refused by this binary, not passed: {})",
                r.refused_settings.join(", ")
            ));
        }
        line.push_str(&format!("; health on {}", r.health_on));
        if !r.outcome.note.is_empty() {
            line.push_str("; ");
            line.push_str(&r.outcome.note);
        }
        out.push_str(&cell(&line));
        out.push('\n');
    }
    out
}

/// Text safe in a table cell: no pipes, no line breaks.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\n', '\r'], " ")
}
