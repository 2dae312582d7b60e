//! Runs one gateway's load with the configured generator (native or k6).

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;

use crate::config::{Config, Generator};
use crate::k6::{self, Check, Expected, Summary};
use crate::openload::{self, ExpectedBody, Payload, Ramp};
use crate::scenario::Scenario;

/// Runs the load of one gateway with the configured generator; both take the same inputs
/// and yield the same [`Summary`].
pub(crate) struct Driver<'a> {
    cfg: &'a Config,
    url: &'a str,
    payload: &'a Path,
    expected: &'a Expected,
    /// No-cache scenario: each run gets a fresh nonce, each request its own token.
    unique: bool,
    script: PathBuf,
    summary_file: PathBuf,
    log: PathBuf,
    /// Native only: the payload and the expected answer, read once.
    native: Option<(Vec<u8>, Arc<ExpectedBody>)>,
    /// The native generator's send lag (p99, ms) in its last run.
    lag_p99_ms: Cell<Option<f64>>,
}

impl<'a> Driver<'a> {
    pub(crate) fn new(
        cfg: &'a Config,
        scenario: &Scenario,
        url: &'a str,
        payload: &'a Path,
        expected: &'a Expected,
        dir: &Path,
        gateway: &str,
    ) -> anyhow::Result<Self> {
        let log = dir.join(format!("{gateway}-{}.log", cfg.generator.name()));
        let _ = std::fs::remove_file(&log);
        let native = match cfg.generator {
            Generator::K6 => None,
            Generator::Native => Some((
                std::fs::read(payload).context("reading the payload")?,
                Arc::new(ExpectedBody::new(
                    std::fs::read(&expected.file).context("reading the expected answer")?,
                )),
            )),
        };
        Ok(Driver {
            cfg,
            url,
            payload,
            expected,
            unique: scenario.unique,
            script: cfg.repo.join("bench/k6/scenario.js"),
            summary_file: dir.join(format!("{gateway}-summary.json")),
            log,
            native,
            lag_p99_ms: Cell::new(None),
        })
    }

    pub(crate) fn lag_note(&self) -> String {
        self.lag_p99_ms.get().map_or(String::new(), |l| {
            format!(", generator send lag p99 {l:.2} ms")
        })
    }

    pub(crate) async fn run(
        &self,
        check: Check,
        rate: u32,
        duration_s: u32,
        vus: u32,
        max_vus: u32,
        ramp: Option<Ramp>,
    ) -> anyhow::Result<Summary> {
        let nonce = self.unique.then(crate::scenario::next_nonce);
        let Some((payload, expected)) = &self.native else {
            let k6 = self
                .cfg
                .k6
                .as_deref()
                .context("k6 generates the load but no k6 binary was resolved")?;
            return k6::Run {
                k6,
                script: &self.script,
                url: self.url,
                payload: self.payload,
                expected: self.expected,
                check,
                rate,
                vus,
                max_vus,
                duration_s,
                unique: nonce,
                summary: &self.summary_file,
                log: &self.log,
                cpus: self.cfg.placement.others.as_deref(),
            }
            .run()
            .await;
        };
        let load = openload::Load {
            url: self
                .url
                .parse()
                .with_context(|| format!("{} is not a URL", self.url))?,
            payload: Payload::new(payload, nonce)?,
            expected: Arc::clone(expected),
            check,
            rate,
            duration: Duration::from_secs(u64::from(duration_s)),
            max_in_flight: max_vus.max(1),
            cpus: self.cfg.placement.others.clone(),
            ramp,
        };
        let outcome = tokio::task::spawn_blocking(move || load.run())
            .await
            .context("the load generator panicked")??;
        self.lag_p99_ms.set(Some(outcome.send_lag_p99_ms));
        let s = &outcome.summary;
        let line = format!(
            "native: {rate} req/s for {duration_s} s (at most {max_vus} in flight, check {check:?}): {} requests, {} ok, {} failures, {} dropped, p50 {:.3} ms, p99 {:.3} ms, send lag p99 {:.3} ms, peak in flight {}{}\n",
            s.requests,
            s.ok,
            s.failures,
            s.dropped_iterations,
            s.latency_ms.map_or(0.0, |l| l.med),
            s.latency_ms.map_or(0.0, |l| l.p99),
            outcome.send_lag_p99_ms,
            outcome.peak_in_flight,
            outcome
                .failure_samples
                .iter()
                .map(|f| format!("\n  failure: {f}"))
                .collect::<String>()
        );
        use std::io::Write as _;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .and_then(|mut f| f.write_all(line.as_bytes()))
            .with_context(|| format!("writing {}", self.log.display()))?;
        Ok(outcome.summary)
    }
}
