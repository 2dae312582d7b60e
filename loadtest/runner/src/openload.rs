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

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper::header::{ACCEPT, CONTENT_TYPE};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use crate::k6::{Check, Latency, Summary};
use crate::scenario::{TOKEN_ZERO, request_token};

/// How long outstanding requests may finish after the last one was due (k6's gracefulStop);
/// those still open then count as failures.
const GRACE: Duration = Duration::from_secs(10);
/// Scenario.js's per-request timeout.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// Bodies above this are not re-parsed to compare `data` when their bytes differ (as k6).
const REPARSE_LIMIT: usize = 1 << 20;
/// Latencies are recorded in microseconds up to this (longer ones are clamped).
const MAX_LATENCY_US: u64 = 3_600_000_000;

/// The answer responses are compared with (the monolith's, or the gateway's own bytes when
/// it formats the same data differently; see `oracle::judge`).
pub struct ExpectedBody {
    pub bytes: Vec<u8>,
    /// `data` of the answer, parsed on the first byte mismatch.
    data: std::sync::OnceLock<Option<serde_json::Value>>,
}

impl ExpectedBody {
    pub fn new(bytes: Vec<u8>) -> Self {
        ExpectedBody {
            bytes,
            data: std::sync::OnceLock::new(),
        }
    }

    fn data(&self) -> Option<&serde_json::Value> {
        self.data
            .get_or_init(|| {
                serde_json::from_slice::<serde_json::Value>(&self.bytes)
                    .ok()
                    .map(|mut v| v["data"].take())
            })
            .as_ref()
    }

    /// Whether `body` passes `check` (scenario.js's `bodyOk`): `length` compares the byte
    /// length, `full` the bytes, and a body that differs in bytes still passes when it has
    /// no `errors` and the same `data`. `token` is the request's no-cache token, put back to
    /// [`TOKEN_ZERO`] before comparing.
    pub fn accepts(&self, check: Check, body: &[u8], token: Option<&[u8]>) -> bool {
        let same = match check {
            Check::None => return true,
            Check::Length => body.len() == self.bytes.len(),
            Check::Full => match token {
                Some(t) if body.len() == self.bytes.len() => {
                    let mut own = body.to_vec();
                    replace_all(&mut own, t, TOKEN_ZERO.as_bytes());
                    own == self.bytes
                }
                _ => body == self.bytes.as_slice(),
            },
        };
        same || self.same_data(body, token)
    }

    fn same_data(&self, body: &[u8], token: Option<&[u8]>) -> bool {
        if body.len() > REPARSE_LIMIT {
            return false;
        }
        let mut own = body.to_vec();
        if let Some(t) = token {
            replace_all(&mut own, t, TOKEN_ZERO.as_bytes());
        }
        let Ok(mut got) = serde_json::from_slice::<serde_json::Value>(&own) else {
            return false;
        };
        got.get("errors").is_none()
            && self
                .data()
                .is_some_and(|want| want.is_object() && got["data"].take() == *want)
    }
}

/// Replaces every occurrence of `from` in `buf` with `to`, which has the same length.
fn replace_all(buf: &mut [u8], from: &[u8], to: &[u8]) {
    debug_assert_eq!(from.len(), to.len());
    if from.is_empty() || buf.len() < from.len() {
        return;
    }
    let mut i = 0;
    while i + from.len() <= buf.len() {
        if &buf[i..i + from.len()] == from {
            buf[i..i + from.len()].copy_from_slice(to);
            i += from.len();
        } else {
            i += 1;
        }
    }
}

/// The request body: the payload, or for a no-cache run the payload split at each
/// [`TOKEN_ZERO`] so every request joins it with its own token.
#[derive(Clone)]
pub struct Payload {
    parts: Vec<Bytes>,
    nonce: Option<u32>,
}

impl Payload {
    /// `nonce`: a no-cache run's nonce (the payload must carry the zero token).
    pub fn new(payload: &[u8], nonce: Option<u32>) -> anyhow::Result<Self> {
        let zero = TOKEN_ZERO.as_bytes();
        let mut parts = Vec::new();
        let mut rest = payload;
        if nonce.is_some() {
            while let Some(at) = rest.windows(zero.len()).position(|w| w == zero) {
                parts.push(Bytes::copy_from_slice(&rest[..at]));
                rest = &rest[at + zero.len()..];
            }
            if parts.is_empty() {
                bail!("a no-cache payload must carry {TOKEN_ZERO}");
            }
        }
        parts.push(Bytes::copy_from_slice(rest));
        Ok(Payload { parts, nonce })
    }

    /// The body of request `index` and the token it carries.
    pub fn body(&self, index: u64) -> (Bytes, Option<String>) {
        let Some(nonce) = self.nonce else {
            return (self.parts[0].clone(), None);
        };
        let token = request_token(nonce, index);
        let len =
            self.parts.iter().map(Bytes::len).sum::<usize>() + token.len() * (self.parts.len() - 1);
        let mut body = Vec::with_capacity(len);
        for (i, part) in self.parts.iter().enumerate() {
            if i > 0 {
                body.extend_from_slice(token.as_bytes());
            }
            body.extend_from_slice(part);
        }
        (Bytes::from(body), Some(token))
    }
}

/// One run of the native generator.
pub struct Load {
    pub url: hyper::Uri,
    pub payload: Payload,
    pub expected: Arc<ExpectedBody>,
    pub check: Check,
    pub rate: u32,
    pub duration: Duration,
    pub max_in_flight: u32,
    /// taskset list for the generator's threads (the non-gateway cores).
    pub cpus: Option<String>,
    /// An uncounted lead-in before the measured requests.
    pub ramp: Option<Ramp>,
}

/// A linear change of the arrival rate from `from` to the run's rate over `over`, before
/// the measured requests; its requests count towards nothing but the in-flight limit.
#[derive(Debug, Clone, Copy)]
pub struct Ramp {
    pub from: u32,
    pub over: Duration,
}

/// When each request is due, relative to the start: first the ramp's, then the run's.
#[derive(Debug, Clone, Copy)]
struct Schedule {
    rate: u32,
    /// Requests of the ramp (uncounted), then `measured` requests at `rate`.
    ramp_requests: u64,
    measured: u64,
    ramp: Option<Ramp>,
}

impl Schedule {
    fn new(load: &Load) -> Schedule {
        let ramp_requests = load.ramp.map_or(0, |r| {
            (f64::from(r.from.saturating_add(load.rate)) / 2.0 * r.over.as_secs_f64()) as u64
        });
        Schedule {
            rate: load.rate,
            ramp_requests,
            measured: load.total(),
            ramp: load.ramp,
        }
    }

    fn len(&self) -> u64 {
        self.ramp_requests + self.measured
    }

    /// Whether request `i` is one of the measured ones.
    fn measured(&self, i: u64) -> bool {
        i >= self.ramp_requests
    }

    /// The due time of request `i`, after the start.
    fn offset(&self, i: u64) -> Duration {
        match self.ramp {
            Some(ramp) if i < self.ramp_requests => ramp_offset(ramp, self.rate, i),
            ramp => {
                let k = i - self.ramp_requests;
                let lead = ramp.map_or(Duration::ZERO, |r| r.over);
                lead + Duration::from_nanos(
                    (u128::from(k) * 1_000_000_000 / u128::from(self.rate)) as u64,
                )
            }
        }
    }
}

/// When the `j`th request of a ramp is due: the time `t` at which the ramp's count
/// `from·t + (rate − from)·t²/(2·over)` reaches `j`, in the form that stays exact for a
/// flat ramp and never divides by zero for a ramp from 0.
fn ramp_offset(ramp: Ramp, rate: u32, j: u64) -> Duration {
    if j == 0 {
        return Duration::ZERO;
    }
    let over = ramp.over.as_secs_f64();
    let b = f64::from(ramp.from);
    let a = (f64::from(rate) - b) / (2.0 * over);
    let j = j as f64;
    let t = 2.0 * j / (b + (b * b + 4.0 * a * j).max(0.0).sqrt());
    Duration::from_secs_f64(t.min(over))
}

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
    /// The total number of requests the run schedules (rate × duration).
    fn total(&self) -> u64 {
        (u128::from(self.rate) * self.duration.as_nanos() / 1_000_000_000) as u64
    }

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
    latency: Histogram<u64>,
    send_lag: Histogram<u64>,
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

fn histogram() -> anyhow::Result<Histogram<u64>> {
    Histogram::new_with_bounds(1, MAX_LATENCY_US, 3).context("creating a latency histogram")
}

fn micros(d: Duration) -> u64 {
    (d.as_micros() as u64).clamp(1, MAX_LATENCY_US)
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
        latency: histogram()?,
        send_lag: histogram()?,
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
    let latency = (!s.latency.is_empty()).then(|| latency_ms(&s.latency));
    Ok(Outcome {
        summary: Summary {
            target_rate: Some(f64::from(load.rate)),
            duration_s,
            requests: s.requests,
            ok: s.ok,
            failures: s.failures,
            dropped_iterations: s.dropped,
            achieved_rate: Some(s.requests as f64 / duration_s),
            // Counted from the due time: the same figure as "from schedule", at
            // microsecond resolution.
            latency_ms: latency,
            scheduled_latency_ms: latency,
        },
        send_lag_p99_ms: if !s.send_lag.is_empty() {
            s.send_lag.value_at_quantile(0.99) as f64 / 1000.0
        } else {
            0.0
        },
        peak_in_flight: s.peak_in_flight,
        failure_samples: std::mem::take(&mut s.failure_samples),
    })
}

fn latency_ms(h: &Histogram<u64>) -> Latency {
    let ms = |us: u64| us as f64 / 1000.0;
    Latency {
        min: ms(h.min()),
        med: ms(h.value_at_quantile(0.5)),
        avg: h.mean() / 1000.0,
        p90: ms(h.value_at_quantile(0.90)),
        p95: ms(h.value_at_quantile(0.95)),
        p99: ms(h.value_at_quantile(0.99)),
        max: ms(h.max()),
    }
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
        s.latency
            .saturating_record(micros(done.saturating_duration_since(due)));
        s.send_lag
            .saturating_record(micros(sent.saturating_duration_since(due)));
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
