//! Metrics of rate limiting (`rate_limit`): requests turned away, and bucket checks
//! Redis could not answer. Counted by the limiter with plain atomics, brought up to
//! date at scrape time; absent while no bucket is set.

use prometheus::{IntCounter, Registry};

pub struct RateLimitMetrics {
    limited: IntCounter,
    store_errors: IntCounter,
}

impl RateLimitMetrics {
    pub fn new(registry: &Registry) -> Self {
        let counter = |name: &str, help: &str| {
            let c = IntCounter::new(name, help).expect("valid metric");
            registry
                .register(Box::new(c.clone()))
                .expect("metric names are unique");
            c
        };
        Self {
            limited: counter(
                "graphfleet_rate_limited_requests_total",
                "Requests answered 429 REQUEST_RATE_LIMITED (rate_limit).",
            ),
            store_errors: counter(
                "graphfleet_rate_limit_store_errors_total",
                "Rate limit checks Redis could not answer in time (let through with fail_open, else 503).",
            ),
        }
    }

    /// Bring the counters up to the limiter's (limited, store errors).
    pub fn set(&self, (limited, store_errors): (u64, u64)) {
        for (counter, total) in [(&self.limited, limited), (&self.store_errors, store_errors)] {
            counter.inc_by(total.saturating_sub(counter.get()));
        }
    }
}
