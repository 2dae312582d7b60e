//! Runs `bench/k6/scenario.js` and reads the JSON summary it writes.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use tokio::process::Command;

/// Latency percentiles in milliseconds.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize)]
pub struct Latency {
    pub min: f64,
    pub med: f64,
    pub avg: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
}

/// The summary `handleSummary` writes (see scenario.js).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct Summary {
    pub target_rate: Option<f64>,
    pub duration_s: f64,
    pub requests: u64,
    pub ok: u64,
    pub failures: u64,
    pub dropped_iterations: u64,
    pub achieved_rate: Option<f64>,
    pub latency_ms: Option<Latency>,
    pub scheduled_latency_ms: Option<Latency>,
}

/// How a response is checked against the monolith's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Check {
    None,
    Length,
    Full,
}

impl Check {
    fn as_str(self) -> &'static str {
        match self {
            Check::None => "none",
            Check::Length => "length",
            Check::Full => "full",
        }
    }
}

/// The monolith's answer to a scenario, written where k6 can `open()` it.
#[derive(Debug, Clone)]
pub struct Expected {
    pub file: PathBuf,
    pub len_utf16: usize,
    pub sha256: String,
    pub bytes: usize,
}

/// One k6 run.
pub struct Run<'a> {
    pub k6: &'a Path,
    pub script: &'a Path,
    pub url: &'a str,
    pub payload: &'a Path,
    pub expected: &'a Expected,
    pub check: Check,
    pub rate: u32,
    pub vus: u32,
    pub max_vus: u32,
    pub duration_s: u32,
    /// A no-cache scenario's nonce (`GF_UNIQUE`): every request a new document.
    pub unique: Option<u32>,
    pub summary: &'a Path,
    pub log: &'a Path,
    pub cpus: Option<&'a str>,
}

impl Run<'_> {
    pub async fn run(&self) -> anyhow::Result<Summary> {
        let _ = std::fs::remove_file(self.summary);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log)
            .with_context(|| format!("opening {}", self.log.display()))?;
        let err = log.try_clone().context("duplicating the log handle")?;
        let mut cmd = match self.cpus {
            Some(cpus) => {
                let mut c = Command::new("taskset");
                c.args(["-c", cpus]).arg(self.k6);
                c
            }
            None => Command::new(self.k6),
        };
        cmd.args(["run", "--quiet", "--no-usage-report", "--address", ""])
            .arg(self.script)
            .env("GF_URL", self.url)
            .env("GF_PAYLOAD", self.payload)
            .env("GF_CHECK", self.check.as_str())
            .env("GF_EXPECTED_LEN", self.expected.len_utf16.to_string())
            .env("GF_EXPECTED_SHA256", &self.expected.sha256)
            .env("GF_EXPECTED_FILE", &self.expected.file)
            .env("GF_EXECUTOR", "constant-arrival-rate")
            .env("GF_RATE", self.rate.to_string())
            .env("GF_VUS", self.vus.to_string())
            .env("GF_MAX_VUS", self.max_vus.to_string())
            .env("GF_DURATION", format!("{}s", self.duration_s))
            .env("GF_SUMMARY", self.summary)
            .env("K6_NO_USAGE_REPORT", "true")
            .env(
                "GF_UNIQUE",
                self.unique.map_or(String::new(), |n| n.to_string()),
            )
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .kill_on_drop(true);
        // k6 stops by itself after the duration plus its 10 s graceful stop; the margin
        // covers start-up and the summary.
        let limit = Duration::from_secs(u64::from(self.duration_s) + 60);
        let status = tokio::time::timeout(limit, cmd.status())
            .await
            .with_context(|| format!("k6 did not finish within {limit:?}"))?
            .with_context(|| format!("running {}", self.k6.display()))?;
        let text = std::fs::read_to_string(self.summary).with_context(|| {
            format!(
                "k6 ({status}) wrote no summary {}; its log ends with:\n{}",
                self.summary.display(),
                crate::process::log_tail(self.log, 15)
            )
        })?;
        let summary: Summary = serde_json::from_str(&text)
            .with_context(|| format!("parsing the k6 summary {}", self.summary.display()))?;
        if !status.success() && summary.requests == 0 {
            bail!(
                "k6 failed ({status}); its log ends with:\n{}",
                crate::process::log_tail(self.log, 15)
            );
        }
        Ok(summary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_script_summary_shape() {
        let text = r#"{"executor":"constant-arrival-rate","target_rate":10,"vus":2,"max_vus":3,
            "duration_s":2,"run_duration_s":2.1,"requests":20,"ok":19,"failures":1,
            "dropped_iterations":0,"achieved_rate":10,
            "latency_ms":{"min":1,"med":2,"avg":2.1,"p90":3,"p95":3.5,"p99":4,"max":5,"count":20},
            "scheduled_latency_ms":null,"data_received_bytes":1000}"#;
        let s: Summary = serde_json::from_str(text).expect("summary");
        assert_eq!((s.requests, s.failures), (20, 1));
        assert_eq!(s.latency_ms.expect("latency").p99, 4.0);
        assert!(s.scheduled_latency_ms.is_none());
    }
}
