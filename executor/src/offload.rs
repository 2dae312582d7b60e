//! Long synchronous work (merging a big subgraph answer, writing a big response) off the
//! async worker it runs on: the worker's other tasks (health checks, other requests'
//! I/O) move to another thread meanwhile, instead of waiting behind it.

use tokio::runtime::{Handle, RuntimeFlavor};

/// Work on this many input bytes or more is run with [`tokio::task::block_in_place`]:
/// below it the hand-over costs more than the wait it saves.
pub const OFFLOAD_BYTES: usize = 1024 * 1024;

/// `work()`, handed over to a blocking thread when `size` is at least [`OFFLOAD_BYTES`]
/// and the runtime can (a multi-thread one; a current-thread runtime, as in unit tests,
/// has no other worker to hand over to, so it runs in place).
pub fn run<R>(size: usize, work: impl FnOnce() -> R) -> R {
    let can = size >= OFFLOAD_BYTES
        && Handle::try_current().is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread);
    if can {
        tokio::task::block_in_place(work)
    } else {
        work()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_a_runtime_it_runs_in_place() {
        assert_eq!(run(OFFLOAD_BYTES * 2, || 7), 7);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_current_thread_runtime_runs_it_in_place() {
        assert_eq!(run(OFFLOAD_BYTES * 2, || 7), 7);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn big_work_leaves_the_worker_to_other_tasks() {
        // A 300 ms piece of work on the only worker while a timer task ticks: handed
        // over, the ticks go on meanwhile (in place, none would).
        let ticks = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
        let counting = ticks.clone();
        let ticker = tokio::spawn(async move {
            loop {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                counting.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        });
        tokio::time::sleep(std::time::Duration::from_millis(30)).await;
        let watched = ticks.clone();
        // On the worker, as a request's task is (the test's own body is not on one).
        let during = tokio::spawn(async move {
            let before = watched.load(std::sync::atomic::Ordering::Relaxed);
            run(OFFLOAD_BYTES, || {
                std::thread::sleep(std::time::Duration::from_millis(300))
            });
            watched.load(std::sync::atomic::Ordering::Relaxed) - before
        })
        .await
        .expect("the work task ends");
        ticker.abort();
        assert!(during >= 5, "only {during} ticks while the work ran");
    }
}
