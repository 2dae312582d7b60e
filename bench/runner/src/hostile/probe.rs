//! The health probe beside an attack: `GET /health/live` every 50 ms on a fresh
//! connection, as a kubelet probes, from a thread and runtime of its own so the attack's
//! work in the runner does not delay it; and the guard that kills a gateway whose
//! resident memory passes the run's limit (an unhardened binary may grow without bound).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hyper::Method;

use crate::http::Client;
use crate::sampler;

const INTERVAL: Duration = Duration::from_millis(50);
/// A probe slower than this counts as failed (the kubelet's default timeout is 1 s).
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// At most this many probes (10 minutes of them): the attack's own bound ends it sooner.
const MOST: u32 = 12_000;

/// What the probe saw.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Health {
    pub(crate) probes: u32,
    pub(crate) failures: u32,
    pub(crate) worst: Duration,
    /// The gateway was killed at this resident size (bytes).
    pub(crate) killed_at: Option<u64>,
}

pub(crate) struct Probe {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Health>,
}

impl Probe {
    /// Probes `url` and watches `pid`'s VmRSS against `rss_limit` bytes until finished.
    pub(crate) fn start(url: String, pid: u32, rss_limit: u64) -> anyhow::Result<Probe> {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::Builder::new()
            .name("health-probe".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a current-thread runtime for the probe");
                runtime.block_on(async {
                    let (mut health, killed_at) =
                        tokio::join!(probe(&url, &stopped), guard(pid, rss_limit, &stopped));
                    health.killed_at = killed_at;
                    health
                })
            })?;
        Ok(Probe { stop, thread })
    }

    pub(crate) fn finish(self) -> Health {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or_default()
    }
}

async fn probe(url: &str, stop: &AtomicBool) -> Health {
    let client = Client::fresh_connections();
    let mut health = Health::default();
    while !stop.load(Ordering::Relaxed) && health.probes < MOST {
        let started = Instant::now();
        let ok = matches!(
            client.send(Method::GET, url, None, PROBE_TIMEOUT).await,
            Ok((200, _))
        );
        health.probes += 1;
        health.failures += u32::from(!ok);
        health.worst = health.worst.max(started.elapsed());
        tokio::time::sleep(INTERVAL.saturating_sub(started.elapsed())).await;
    }
    health
}

/// Reads `pid`'s VmRSS every 20 ms and kills it once over `limit` bytes; the size it
/// had then. Its own loop, so a hung health probe does not leave the memory unwatched.
async fn guard(pid: u32, limit: u64, stop: &AtomicBool) -> Option<u64> {
    // Bounded like the probe: 10 minutes of readings at most.
    for _ in 0..30_000 {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        let rss = sampler::process_status_bytes(pid, "VmRSS").unwrap_or(0);
        if rss > limit {
            eprintln!(
                "[hostile] the gateway (pid {pid}) holds {} MiB, over --rss-limit-mib: killed",
                rss >> 20
            );
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            return Some(rss);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}
