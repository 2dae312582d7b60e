//! The native load generator: an open model (constant arrival rate) on one core, so the
//! capacity search measures the gateway and not the client (k6 saturates its core near
//! 1,000 small requests/s on the benchmark machine).
//!
//! A scheduler thread wakes at each request's due time (`start + i / rate`, with the
//! kernel's sub-millisecond sleep; tokio's timer ticks in whole milliseconds) and hands
//! the index to a current-thread runtime, which sends it on a keep-alive connection.
//! Both threads are pinned to the non-gateway cores. At most `max_in_flight` requests are
//! outstanding (k6's maxVUs); a request due while that many are outstanding is dropped
//! (k6's dropped_iterations). Latency counts from the due time, not from when the request
//! went out, so a generator or gateway that falls behind cannot hide it (coordinated
//! omission). Every response is checked as scenario.js checks it.
//!
//! An optional [`Ramp`] comes first: the rate rises (or falls) linearly to the run's rate,
//! and those requests load the gateway without being counted, so a capacity step measures
//! the rate it names and not a cold jump to it (a gateway connecting hundreds of new
//! subgraph connections in its first second).
//!
//! One module per job: `expected` (bodies sent and answers expected) below `load` (the run
//! and its schedule), below the driver here.

mod expected;
mod load;

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use graphfleet_bench_model::latency_histogram::Latencies;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper::header::{ACCEPT, CONTENT_TYPE};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use crate::k6::{Latency, Summary};

/// How long outstanding requests may finish after the last one was due (k6's gracefulStop);
/// those still open then count as failures.
const GRACE: Duration = Duration::from_secs(10);
/// Scenario.js's per-request timeout.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

pub use expected::{ExpectedBody, Payload};
use load::Schedule;
pub use load::{Load, Ramp};

/// What a run measured: k6's summary shape plus the generator's own lateness.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub summary: Summary,
    /// p99 of how late requests went out after their due time (ms): a generator that keeps
    /// up stays well under a millisecond.
    pub send_lag_p99_ms: f64,
    /// The most requests outstanding at once.
    pub peak_in_flight: u32,
    /// A few failure descriptions, for the log.
    pub failure_samples: Vec<String>,
}

impl Load {
    /// Runs the load on its own threads and waits for it (blocking: call from
    /// `spawn_blocking` inside a runtime).
    pub fn run(self) -> anyhow::Result<Outcome> {
        if self.rate == 0 || self.duration.is_zero() || self.max_in_flight == 0 {
            bail!("the native generator needs a rate, a duration and at least one connection");
        }
        if let Some(cpus) = &self.cpus {
            pin_current_thread(cpus);
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting the generator's runtime")?;
        let load = Rc::new(self);
        let local = tokio::task::LocalSet::new();
        local.block_on(&runtime, drive(load))
    }
}

/// Pins the calling thread (not the whole process) with `taskset -p` on its thread id;
/// a failure only costs placement, so it is reported and the run goes on.
pub(crate) fn pin_current_thread(cpus: &str) {
    let tid = std::fs::read_link("/proc/thread-self")
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()));
    let Some(tid) = tid else {
        eprintln!("[bench] cannot pin the load generator: no /proc/thread-self");
        return;
    };
    let status = std::process::Command::new("taskset")
        .args(["-p", "-c", cpus, &tid])
        .stdout(std::process::Stdio::null())
        .status();
    if !status.is_ok_and(|s| s.success()) {
        eprintln!("[bench] taskset -p -c {cpus} {tid} failed: the generator runs unpinned");
    }
}

/// Counters and histograms of one run (one thread only).
struct Stats {
    requests: u64,
    ok: u64,
    failures: u64,
    dropped: u64,
    latency: Latencies,
    send_lag: Latencies,
    in_flight: u32,
    peak_in_flight: u32,
    failure_samples: Vec<String>,
}

impl Stats {
    fn fail(&mut self, why: impl FnOnce() -> String) {
        self.failures += 1;
        if self.failure_samples.len() < 3 {
            self.failure_samples.push(why());
        }
    }
}

async fn drive(load: Rc<Load>) -> anyhow::Result<Outcome> {
    let mut connector = HttpConnector::new();
    // Small requests must not wait for Nagle's algorithm (Go's net/http, k6's client,
    // disables it too).
    connector.set_nodelay(true);
    let client: Client<HttpConnector, Full<Bytes>> = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(load.max_in_flight as usize)
        // Idle connections are not reused after 2 s, well under gateways' keep-alive
        // timeouts, so a request is not sent on one the server is closing for idleness
        // (the likely cause of three "connection reset" failures from Hive Router in a
        // step where the generator had been starved of CPU).
        .pool_idle_timeout(Duration::from_secs(2))
        .build(connector);
    let stats = Rc::new(RefCell::new(Stats {
        requests: 0,
        ok: 0,
        failures: 0,
        dropped: 0,
        latency: Latencies::new(),
        send_lag: Latencies::new(),
        in_flight: 0,
        peak_in_flight: 0,
        failure_samples: Vec::new(),
    }));
    let idle = Rc::new(tokio::sync::Notify::new());
    let schedule = Schedule::new(&load);
    let total = load.total();
    // Leave the runtime a moment to start waiting before the first request is due.
    let start = Instant::now() + Duration::from_millis(20);
    let end = start + schedule.offset(schedule.len());
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<u64>();
    let scheduler = {
        let cpus = load.cpus.clone();
        std::thread::Builder::new()
            .name("openload-scheduler".into())
            .spawn(move || {
                if let Some(cpus) = &cpus {
                    pin_current_thread(cpus);
                }
                for i in 0..schedule.len() {
                    let due = start + schedule.offset(i);
                    let now = Instant::now();
                    if due > now {
                        std::thread::sleep(due - now);
                    }
                    if tx.send(i).is_err() {
                        break;
                    }
                }
            })
            .context("starting the scheduler thread")?
    };
    // Bounded in time as well as in count: nothing is started after the last due time
    // plus a second, whatever the scheduler thread does.
    let stop_sending = end + Duration::from_secs(1);
    // Measured requests handed over by the scheduler.
    let mut handed = 0u64;
    loop {
        let next = tokio::time::timeout_at(stop_sending.into(), rx.recv()).await;
        let i = match next {
            Ok(Some(i)) => i,
            Ok(None) => break,
            Err(_) => {
                rx.close();
                while rx.try_recv().is_ok() {}
                break;
            }
        };
        let due = start + schedule.offset(i);
        let measured = schedule.measured(i);
        handed += u64::from(measured);
        {
            let mut s = stats.borrow_mut();
            if s.in_flight >= load.max_in_flight {
                s.dropped += u64::from(measured);
                continue;
            }
            s.in_flight += 1;
            s.peak_in_flight = s.peak_in_flight.max(s.in_flight);
        }
        tokio::task::spawn_local(one(
            Rc::clone(&load),
            client.clone(),
            Rc::clone(&stats),
            Rc::clone(&idle),
            Slot { i, due, measured },
        ));
    }
    let _ = scheduler.join();
    let interrupted_scheduling = total.saturating_sub(handed);
    let drain_until = tokio::time::Instant::from(end.max(Instant::now())) + GRACE;
    while stats.borrow().in_flight > 0 {
        if tokio::time::timeout_at(drain_until, idle.notified())
            .await
            .is_err()
        {
            break;
        }
    }
    let mut s = stats.borrow_mut();
    let interrupted = u64::from(s.in_flight);
    if interrupted > 0 {
        s.fail(|| format!("{interrupted} requests still open {GRACE:?} after the last was due"));
        s.failures += interrupted - 1;
    }
    // Requests the scheduler never handed over (it could not keep up within the run's
    // time bound) are dropped, like k6's iterations it could not start.
    s.dropped += interrupted_scheduling;
    let duration_s = load.duration.as_secs_f64();
    let latency = latency_ms(&s.latency);
    Ok(Outcome {
        summary: Summary {
            target_rate: Some(f64::from(load.rate)),
            duration_s,
            requests: s.requests,
            ok: s.ok,
            failures: s.failures,
            dropped_iterations: s.dropped,
            achieved_rate: Some(s.requests as f64 / duration_s),
            // Counted from the due time: the same figure as "from schedule", in the
            // cluster's buckets (within 1%; min, max and mean exact).
            latency_ms: latency,
            scheduled_latency_ms: latency,
        },
        send_lag_p99_ms: s.send_lag.quantile(0.99).unwrap_or(0.0),
        peak_in_flight: s.peak_in_flight,
        failure_samples: std::mem::take(&mut s.failure_samples),
    })
}

/// k6's latency figures from the recorded latencies; `None` when nothing was measured.
fn latency_ms(l: &Latencies) -> Option<Latency> {
    Some(Latency {
        min: l.min_ms()?,
        med: l.quantile(0.5)?,
        avg: l.mean_ms()?,
        p90: l.quantile(0.90)?,
        p95: l.quantile(0.95)?,
        p99: l.quantile(0.99)?,
        max: l.max_ms()?,
    })
}

/// One scheduled request: its index, due time and whether it counts (not a ramp's).
#[derive(Debug, Clone, Copy)]
struct Slot {
    i: u64,
    due: Instant,
    measured: bool,
}

/// Sends the request of `slot`, checks the answer and, when it is measured, records it.
async fn one(
    load: Rc<Load>,
    client: Client<HttpConnector, Full<Bytes>>,
    stats: Rc<RefCell<Stats>>,
    idle: Rc<tokio::sync::Notify>,
    Slot { i, due, measured }: Slot,
) {
    let sent = Instant::now();
    let (body, token) = load.payload.body(i);
    let request = Request::post(load.url.clone())
        .header(CONTENT_TYPE, "application/json")
        .header(ACCEPT, "application/json")
        .body(Full::new(body));
    let exchange = async {
        let request = request.context("building the request")?;
        let response = client.request(request).await.context("sending")?;
        let status = response.status().as_u16();
        let body = response
            .into_body()
            .collect()
            .await
            .context("reading the body")?
            .to_bytes();
        anyhow::Ok((status, body))
    };
    let result = tokio::time::timeout(REQUEST_TIMEOUT, exchange).await;
    let done = Instant::now();
    let verdict = match result {
        Err(_) => Err(format!("no answer within {REQUEST_TIMEOUT:?}")),
        Ok(Err(e)) => Err(format!("{e:#}")),
        Ok(Ok((200, body))) => {
            if load
                .expected
                .accepts(load.check, &body, token.as_deref().map(str::as_bytes))
            {
                Ok(())
            } else {
                Err(format!(
                    "status 200, {} bytes, not the expected answer: {}",
                    body.len(),
                    String::from_utf8_lossy(&body[..body.len().min(300)])
                ))
            }
        }
        Ok(Ok((status, body))) => Err(format!(
            "status {status}: {}",
            String::from_utf8_lossy(&body[..body.len().min(300)])
        )),
    };
    let mut s = stats.borrow_mut();
    if measured {
        s.requests += 1;
        match verdict {
            Ok(()) => s.ok += 1,
            Err(why) => s.fail(|| why),
        }
        s.latency.record(done.saturating_duration_since(due));
        s.send_lag.record(sent.saturating_duration_since(due));
    }
    s.in_flight -= 1;
    let idle_now = s.in_flight == 0;
    drop(s);
    if idle_now {
        idle.notify_one();
    }
}

#[cfg(test)]
mod tests;
