//! Fetch resilience per subgraph (`traffic.resilience`, `subgraphs.<name>.resilience`):
//! a limit on fetches in flight, a circuit breaker that fails fetches at once while a
//! subgraph keeps failing, and retries of query fetches that failed before an answer
//! came, within a retry budget and with jittered backoff. Each subgraph has its own
//! [`Guard`]; with nothing configured no guard exists and a fetch goes straight out.

mod breaker;
mod budget;

pub use breaker::{Admit, Breaker, BreakerPolicy};
pub use budget::{RetryBudget, backoff};

use crate::error::FetchError;
use parking_lot::RwLock;
use rustc_hash::FxHashMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// `extensions.code` of a fetch refused because its subgraph's breaker is open.
pub const CIRCUIT_OPEN: &str = "SUBREQUEST_CIRCUIT_OPEN";
/// `extensions.code` of a fetch that found no free slot within its timeout.
pub const CONCURRENCY_LIMIT: &str = "SUBREQUEST_CONCURRENCY_LIMIT";

/// What one subgraph's fetches are held to.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResiliencePolicy {
    pub retry: Option<RetryPolicy>,
    pub breaker: Option<BreakerPolicy>,
    pub max_concurrent: Option<usize>,
}

impl ResiliencePolicy {
    pub fn is_active(&self) -> bool {
        self.retry.is_some() || self.breaker.is_some() || self.max_concurrent.is_some()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    pub attempts: u32,
    pub backoff: Duration,
    pub max_backoff: Duration,
    pub budget_ratio: f64,
    pub min_per_second: u32,
}

/// One subgraph's breaker, retry budget and slots, with counts for the metrics.
pub struct Guard {
    retry: Option<(RetryPolicy, RetryBudget)>,
    breaker: Option<Breaker>,
    slots: Option<(Arc<Semaphore>, usize)>,
    retries: AtomicU64,
    rejected: AtomicU64,
}

impl Guard {
    pub fn new(policy: &ResiliencePolicy) -> Self {
        let epoch = Instant::now();
        Self {
            retry: policy.retry.clone().map(|r| {
                let budget = RetryBudget::new(r.budget_ratio, r.min_per_second, epoch);
                (r, budget)
            }),
            breaker: policy.breaker.clone().map(|b| Breaker::new(b, epoch)),
            slots: policy
                .max_concurrent
                .map(|n| (Arc::new(Semaphore::new(n)), n)),
            retries: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
        }
    }

    /// Counts so far, for the metrics.
    pub fn stats(&self) -> GuardStats {
        GuardStats {
            retries: self.retries.load(Ordering::Relaxed),
            circuit_rejections: self.rejected.load(Ordering::Relaxed),
            circuit_open: self.breaker.as_ref().is_some_and(Breaker::is_open),
            circuit_opened: self.breaker.as_ref().map_or(0, Breaker::times_opened),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GuardStats {
    pub retries: u64,
    pub circuit_rejections: u64,
    pub circuit_open: bool,
    pub circuit_opened: u64,
}

/// The guards of the subgraphs fetched from so far, by name.
#[derive(Default)]
pub struct Guards(RwLock<FxHashMap<Box<str>, Arc<Guard>>>);

impl Guards {
    /// `subgraph`'s guard, made under `policy` on its first fetch.
    pub fn get(&self, subgraph: &str, policy: &ResiliencePolicy) -> Arc<Guard> {
        if let Some(guard) = self.0.read().get(subgraph) {
            return guard.clone();
        }
        self.0
            .write()
            .entry(subgraph.into())
            .or_insert_with(|| Arc::new(Guard::new(policy)))
            .clone()
    }

    pub fn stats(&self) -> Vec<(String, GuardStats)> {
        let mut all: Vec<_> = self
            .0
            .read()
            .iter()
            .map(|(name, g)| (name.to_string(), g.stats()))
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }
}

/// Runs `attempt` for `subgraph` under `guard`: waits up to `timeout` for a slot,
/// fails at once while the breaker is open, and retries a query (`retryable`) whose
/// attempt failed before an answer came, while the budget allows. Each attempt is
/// given its timeout less what its wait for a slot took; the slot is given back during
/// a retry's backoff, so a failing subgraph's retries do not starve other fetches.
pub async fn run<F, Fut, T>(
    guard: Arc<Guard>,
    subgraph: String,
    timeout: Duration,
    retryable: bool,
    mut attempt: F,
) -> Result<T, FetchError>
where
    F: FnMut(Duration) -> Fut,
    Fut: Future<Output = Result<T, FetchError>>,
{
    let started = Instant::now();
    let mut slot = slot(&guard, &subgraph, timeout).await?;
    if let Some((_, budget)) = &guard.retry {
        budget.fetched(Instant::now());
    }
    let mut retried = 0;
    let mut left = timeout.saturating_sub(started.elapsed());
    loop {
        let admitted = match &guard.breaker {
            Some(breaker) => breaker.admit(Instant::now()),
            None => Admit::Allowed,
        };
        if let Admit::Rejected(after) = admitted {
            guard.rejected.fetch_add(1, Ordering::Relaxed);
            return Err(FetchError {
                code: CIRCUIT_OPEN,
                message: format!(
                    "the circuit breaker for subgraph '{subgraph}' is open after repeated failures; it probes again in {}s",
                    after.as_secs_f64().ceil()
                ),
            });
        }
        let result = attempt(left).await;
        let failed = result
            .as_ref()
            .err()
            .filter(|e| e.code == FetchError::HTTP || e.code == FetchError::TIMEOUT);
        if let Some(breaker) = &guard.breaker {
            breaker.record(Instant::now(), admitted, failed.is_none());
        }
        // Timeouts are not retried: a hung subgraph would hold the request that long again.
        let again = failed.is_some_and(|e| e.code == FetchError::HTTP)
            && retryable
            && guard.retry.as_ref().is_some_and(|(policy, budget)| {
                retried < policy.attempts && budget.try_retry(Instant::now())
            });
        let Some((policy, _)) = guard.retry.as_ref().filter(|_| again) else {
            return result;
        };
        let wait = backoff(retried, policy.backoff, policy.max_backoff, fastrand::f64());
        drop(slot.take());
        tokio::time::sleep(wait).await;
        retried += 1;
        guard.retries.fetch_add(1, Ordering::Relaxed);
        let asked = Instant::now();
        // No slot for the retry within its timeout: the attempt's own failure says more.
        let Ok(again) = self::slot(&guard, &subgraph, timeout).await else {
            return result;
        };
        slot = again;
        left = timeout.saturating_sub(asked.elapsed());
    }
}

/// A slot of `subgraph`'s concurrency limit, if it has one, waited for up to `timeout`.
async fn slot(
    guard: &Guard,
    subgraph: &str,
    timeout: Duration,
) -> Result<Option<tokio::sync::OwnedSemaphorePermit>, FetchError> {
    let Some((slots, n)) = &guard.slots else {
        return Ok(None);
    };
    match tokio::time::timeout(timeout, slots.clone().acquire_owned()).await {
        Ok(slot) => Ok(Some(slot.expect("the semaphore is never closed"))),
        Err(_) => Err(FetchError {
            code: CONCURRENCY_LIMIT,
            message: format!(
                "no slot of the {n} for subgraph '{subgraph}' came free within {timeout:?} (max_concurrent_fetches)"
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use std::sync::atomic::AtomicU32;

    fn policy(attempts: u32) -> ResiliencePolicy {
        ResiliencePolicy {
            retry: Some(RetryPolicy {
                attempts,
                backoff: Duration::from_millis(1),
                max_backoff: Duration::from_millis(2),
                budget_ratio: 0.0,
                min_per_second: 100,
            }),
            ..ResiliencePolicy::default()
        }
    }

    /// [`run`] for subgraph `a` with a 1 s timeout, its attempts failing with `code` while
    /// `calls` (shared across runs) is under `failures`.
    async fn once(
        guard: &Arc<Guard>,
        retryable: bool,
        calls: &AtomicU32,
        failures: u32,
        code: &'static str,
    ) -> Result<Bytes, FetchError> {
        let attempt = flaky(failures, code, calls);
        run(
            guard.clone(),
            "a".into(),
            Duration::from_secs(1),
            retryable,
            attempt,
        )
        .await
    }

    /// [`once`] with its own count: whether it succeeded, and the attempts made.
    async fn attempts(
        guard: &Arc<Guard>,
        retryable: bool,
        failures: u32,
        code: &'static str,
    ) -> (bool, u32) {
        let calls = AtomicU32::new(0);
        let ok = once(guard, retryable, &calls, failures, code).await.is_ok();
        (ok, calls.load(Ordering::Relaxed))
    }

    /// An attempt failing with `code` the first `failures` times, then answering.
    fn flaky<'a>(
        failures: u32,
        code: &'static str,
        calls: &'a AtomicU32,
    ) -> impl FnMut(Duration) -> std::future::Ready<Result<Bytes, FetchError>> + 'a {
        move |_| {
            let n = calls.fetch_add(1, Ordering::Relaxed);
            std::future::ready(if n < failures {
                Err(FetchError {
                    code,
                    message: "down".into(),
                })
            } else {
                Ok(Bytes::from_static(b"{}"))
            })
        }
    }

    #[tokio::test]
    async fn queries_are_retried_up_to_the_attempts_mutations_never() {
        let guard = Arc::new(Guard::new(&policy(2)));
        assert_eq!(attempts(&guard, true, 2, FetchError::HTTP).await, (true, 3));
        assert_eq!(guard.stats().retries, 2);
        assert_eq!(
            attempts(&guard, true, 5, FetchError::HTTP).await,
            (false, 3),
            "1 + 2 attempts"
        );
        assert_eq!(
            attempts(&guard, false, 1, FetchError::HTTP).await,
            (false, 1),
            "a mutation"
        );
        let timeout = attempts(&guard, true, 1, FetchError::TIMEOUT).await;
        assert_eq!(timeout, (false, 1), "timeouts are not retried");
    }

    #[tokio::test]
    async fn an_open_breaker_fails_fetches_at_once() {
        let guard = Arc::new(Guard::new(&ResiliencePolicy {
            breaker: Some(BreakerPolicy {
                error_ratio: 0.5,
                min_fetches: 2,
                window: Duration::from_secs(10),
                open_for: Duration::from_secs(60),
            }),
            ..ResiliencePolicy::default()
        }));
        let calls = AtomicU32::new(0);
        for _ in 0..2 {
            let r = once(&guard, true, &calls, 9, FetchError::HTTP).await;
            assert_eq!(r.expect_err("down").code, FetchError::HTTP);
        }
        let r = once(&guard, true, &calls, 9, FetchError::HTTP);
        let e = r.await.expect_err("open");
        assert_eq!(e.code, CIRCUIT_OPEN);
        assert!(e.message.contains("subgraph 'a'"), "{e}");
        assert_eq!(calls.load(Ordering::Relaxed), 2, "nothing sent while open");
        let stats = guard.stats();
        assert!(stats.circuit_open && stats.circuit_rejections == 1 && stats.circuit_opened == 1);
    }

    #[tokio::test]
    async fn fetches_past_the_concurrency_limit_wait_then_give_up() {
        let guard = Arc::new(Guard::new(&ResiliencePolicy {
            max_concurrent: Some(1),
            ..ResiliencePolicy::default()
        }));
        let (release, held) = tokio::sync::oneshot::channel::<()>();
        let first = tokio::spawn(run(
            guard.clone(),
            "a".into(),
            Duration::from_secs(5),
            true,
            {
                let mut held = Some(held);
                move |_| {
                    let held = held.take().expect("one attempt");
                    async move {
                        let _ = held.await;
                        Ok(Bytes::new())
                    }
                }
            },
        ));
        tokio::task::yield_now().await;
        let calls = AtomicU32::new(0);
        let second = run(
            guard.clone(),
            "a".into(),
            Duration::from_millis(20),
            true,
            flaky(0, FetchError::HTTP, &calls),
        );
        assert_eq!(second.await.expect_err("no slot").code, CONCURRENCY_LIMIT);
        release.send(()).expect("the first waits");
        assert!(first.await.expect("task").is_ok());
        let third = run(
            guard,
            "a".into(),
            Duration::from_millis(20),
            true,
            flaky(0, FetchError::HTTP, &calls),
        );
        assert!(third.await.is_ok(), "its slot came back");
    }

    #[tokio::test]
    async fn a_retry_gives_its_slot_back_during_the_backoff() {
        let mut limited = policy(1);
        limited.max_concurrent = Some(1);
        if let Some(retry) = limited.retry.as_mut() {
            retry.backoff = Duration::from_millis(200);
            retry.max_backoff = Duration::from_millis(200);
        }
        let guard = Arc::new(Guard::new(&limited));
        let (failed, first_failed) = tokio::sync::oneshot::channel::<()>();
        let first = tokio::spawn(run(
            guard.clone(),
            "a".into(),
            Duration::from_secs(5),
            true,
            {
                let mut failed = Some(failed);
                move |_| {
                    // The first attempt fails (and says so), the retry answers.
                    let result = match failed.take() {
                        Some(tx) => {
                            let _ = tx.send(());
                            Err(FetchError {
                                code: FetchError::HTTP,
                                message: "down".into(),
                            })
                        }
                        None => Ok(Bytes::from_static(b"retried")),
                    };
                    std::future::ready(result)
                }
            },
        ));
        first_failed.await.expect("the first attempt ran");
        // The first fetch is in its backoff (this one-thread runtime ran it up to its
        // sleep): a fetch that waits no time for a slot still gets one.
        let calls = AtomicU32::new(0);
        let second = run(
            guard.clone(),
            "a".into(),
            Duration::ZERO,
            true,
            flaky(0, FetchError::HTTP, &calls),
        );
        assert!(second.await.is_ok(), "the slot was free during the backoff");
        let first = first.await.expect("task").expect("the retry answered");
        assert_eq!(&first[..], b"retried");
        assert_eq!(guard.stats().retries, 1);
    }
}
