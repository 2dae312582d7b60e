//! The first seconds of a fresh gateway: an open-model burst (request `k` due at
//! `start + k / rate`, body `k mod n`) sent as soon as its listener accepts, and the
//! latency of each request from its due time, summed up per window from the start.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use anyhow::Context;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper::header::{ACCEPT, CONTENT_TYPE};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde::Serialize;

/// Longest a request may take; it counts as failed then.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Most requests outstanding at once; a request due while that many are open is
/// dropped (and counted as failed).
const MAX_IN_FLIGHT: usize = 512;

/// One request: when it was due (from the start) and how long it took from then.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Sample {
    pub(crate) due: Duration,
    pub(crate) latency: Duration,
    pub(crate) ok: bool,
}

/// A burst to send.
pub(crate) struct Burst {
    pub(crate) url: hyper::Uri,
    pub(crate) bodies: Vec<Bytes>,
    pub(crate) rate: u32,
    pub(crate) seconds: u32,
    /// taskset list for the sending thread.
    pub(crate) cpus: Option<String>,
}

impl Burst {
    /// Sends the burst from now on (blocking: call from `spawn_blocking`). Bounded in
    /// count (`rate × seconds`) and in time (the last due time plus the request timeout).
    pub(crate) fn run(self) -> anyhow::Result<Vec<Sample>> {
        if let Some(cpus) = &self.cpus {
            crate::openload::pin_current_thread(cpus);
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting the burst's runtime")?;
        let local = tokio::task::LocalSet::new();
        Ok(local.block_on(&runtime, self.send()))
    }

    async fn send(self) -> Vec<Sample> {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let client: Client<HttpConnector, Full<Bytes>> =
            Client::builder(TokioExecutor::new()).build(connector);
        let count = u64::from(self.rate) * u64::from(self.seconds);
        let samples = Rc::new(RefCell::new(Vec::with_capacity(count as usize)));
        let in_flight = Rc::new(RefCell::new(0usize));
        let start = Instant::now();
        let mut tasks = Vec::new();
        for k in 0..count {
            let due = Duration::from_secs_f64(k as f64 / f64::from(self.rate));
            tokio::time::sleep_until((start + due).into()).await;
            if *in_flight.borrow() >= MAX_IN_FLIGHT {
                samples.borrow_mut().push(Sample {
                    due,
                    latency: start.elapsed().saturating_sub(due),
                    ok: false,
                });
                continue;
            }
            let body = self.bodies[(k % self.bodies.len() as u64) as usize].clone();
            let request = Request::post(self.url.clone())
                .header(CONTENT_TYPE, "application/json")
                .header(ACCEPT, "application/json")
                .body(Full::new(body))
                .expect("a POST with static headers builds");
            let (client, samples, in_flight) = (client.clone(), samples.clone(), in_flight.clone());
            *in_flight.borrow_mut() += 1;
            tasks.push(tokio::task::spawn_local(async move {
                let exchange = async {
                    let response = client.request(request).await.ok()?;
                    let status = response.status();
                    let body = response.into_body().collect().await.ok()?.to_bytes();
                    Some(status.is_success() && answered(&body))
                };
                let ok = tokio::time::timeout(REQUEST_TIMEOUT, exchange)
                    .await
                    .ok()
                    .flatten()
                    .unwrap_or(false);
                *in_flight.borrow_mut() -= 1;
                samples.borrow_mut().push(Sample {
                    due,
                    latency: start.elapsed().saturating_sub(due),
                    ok,
                });
            }));
        }
        for task in tasks {
            // A task that panicked has no sample: it shows as a request missing.
            let _ = task.await;
        }
        let mut samples = samples.take();
        samples.sort_by_key(|s| s.due);
        samples
    }
}

/// Whether a GraphQL response body carries data and no errors.
fn answered(body: &[u8]) -> bool {
    let text = String::from_utf8_lossy(body);
    text.contains("\"data\":{") && !text.contains("\"errors\"")
}

/// Every request of a burst: `due_ms,latency_ms,ok`, in due order.
pub(crate) fn csv(samples: &[Sample]) -> String {
    let mut out = String::from("due_ms,latency_ms,ok\n");
    for s in samples {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        out.push_str(&format!("{:.3},{:.3},{}\n", ms(s.due), ms(s.latency), s.ok));
    }
    out
}

/// Latency of the requests due within the first `upto` of a burst.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Window {
    pub(crate) seconds: f64,
    pub(crate) requests: usize,
    pub(crate) failures: usize,
    pub(crate) p50_ms: f64,
    pub(crate) p99_ms: f64,
    pub(crate) max_ms: f64,
}

/// The window of requests due before `upto` (failures included in the latencies: they
/// took at least that long).
pub(crate) fn window(samples: &[Sample], upto: Duration) -> Window {
    let within: Vec<&Sample> = samples.iter().filter(|s| s.due < upto).collect();
    let mut latencies: Vec<Duration> = within.iter().map(|s| s.latency).collect();
    latencies.sort_unstable();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    Window {
        seconds: upto.as_secs_f64(),
        requests: within.len(),
        failures: within.iter().filter(|s| !s.ok).count(),
        p50_ms: ms(percentile(&latencies, 0.50)),
        p99_ms: ms(percentile(&latencies, 0.99)),
        max_ms: ms(latencies.last().copied().unwrap_or_default()),
    }
}

/// The nearest-rank `q` quantile of sorted values (zero when there are none).
fn percentile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(due_ms: u64, latency_ms: u64, ok: bool) -> Sample {
        Sample {
            due: Duration::from_millis(due_ms),
            latency: Duration::from_millis(latency_ms),
            ok,
        }
    }

    #[test]
    fn a_window_takes_the_requests_due_within_it() {
        // 100 requests in the first second: 1..=100 ms; then one slow one later.
        let mut samples: Vec<Sample> = (0..100).map(|i| sample(i * 10, i + 1, true)).collect();
        samples.push(sample(1_500, 900, false));
        let first = window(&samples, Duration::from_secs(1));
        assert_eq!(first.requests, 100);
        assert_eq!(first.failures, 0);
        assert_eq!(first.p50_ms, 50.0);
        assert_eq!(first.p99_ms, 99.0);
        assert_eq!(first.max_ms, 100.0);
        let all = window(&samples, Duration::from_secs(5));
        assert_eq!((all.requests, all.failures), (101, 1));
        assert_eq!(all.p99_ms, 100.0);
        assert_eq!(all.max_ms, 900.0);
        assert_eq!(
            csv(&samples[..2]),
            "due_ms,latency_ms,ok\n0.000,1.000,true\n10.000,2.000,true\n"
        );
        let none = window(&[], Duration::from_secs(1));
        assert_eq!((none.requests, none.p99_ms), (0, 0.0));
    }

    #[test]
    fn only_a_response_with_data_and_no_errors_counts() {
        assert!(answered(br#"{"data":{"users":[]}}"#));
        assert!(!answered(br#"{"data":null,"errors":[{"message":"x"}]}"#));
        assert!(!answered(br#"{"data":{"a":1},"errors":[]}"#));
        assert!(!answered(b"Service Unavailable"));
    }
}
