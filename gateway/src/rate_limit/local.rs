//! Token buckets in this process: a map from bucket key to its tokens, bounded in
//! entries (past [`MAX_KEYS`] the buckets that have refilled are forgotten, as a new
//! bucket starts full; if that frees less than a tenth, all start over).

use super::Limit;
use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use std::time::{Duration, Instant};

/// Buckets kept at once.
pub const MAX_KEYS: usize = 100_000;

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    fn refilled(self, limit: Limit, now: Instant) -> f64 {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        let rate = limit.capacity as f64 / limit.interval.as_secs_f64();
        (self.tokens + elapsed * rate).min(limit.capacity as f64)
    }
}

#[derive(Default)]
pub struct LocalBuckets(Mutex<FxHashMap<Box<str>, (Bucket, Limit)>>);

impl LocalBuckets {
    /// Take one token from each of `buckets` if every one has it; else take none and
    /// say how long until they all would.
    pub fn take(&self, buckets: &[(&str, Limit)], now: Instant) -> Result<(), Duration> {
        let mut map = self.0.lock();
        if map.len() + buckets.len() > MAX_KEYS {
            map.retain(|_, (b, limit)| b.refilled(*limit, now) < limit.capacity as f64);
            // Unless the sweep freed a tenth, start over: otherwise every new key would
            // sweep the whole map again (a client rotating keys would make each request
            // cost a full scan under the lock).
            if map.len() + buckets.len() > MAX_KEYS - MAX_KEYS / 10 {
                map.clear();
            }
        }
        let mut wait = Duration::ZERO;
        let mut tokens = Vec::with_capacity(buckets.len());
        for (key, limit) in buckets {
            let tokens_now = map
                .get(*key)
                .map_or(limit.capacity as f64, |(b, _)| b.refilled(*limit, now));
            if tokens_now < 1.0 {
                let per_token = limit.interval.as_secs_f64() / limit.capacity as f64;
                wait = wait.max(Duration::from_secs_f64((1.0 - tokens_now) * per_token));
            }
            tokens.push(tokens_now);
        }
        let allowed = wait.is_zero();
        for ((key, limit), tokens) in buckets.iter().zip(tokens) {
            let tokens = if allowed { tokens - 1.0 } else { tokens };
            let bucket = Bucket { tokens, at: now };
            match map.get_mut(*key) {
                Some(entry) => *entry = (bucket, *limit),
                None => {
                    map.insert((*key).into(), (bucket, *limit));
                }
            }
        }
        if allowed { Ok(()) } else { Err(wait) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PER_SECOND: Limit = Limit {
        capacity: 2,
        interval: Duration::from_secs(1),
    };

    #[test]
    fn a_bucket_takes_its_capacity_at_once_then_refills_evenly() {
        let buckets = LocalBuckets::default();
        let t0 = Instant::now();
        assert!(buckets.take(&[("a", PER_SECOND)], t0).is_ok());
        assert!(buckets.take(&[("a", PER_SECOND)], t0).is_ok());
        let wait = buckets.take(&[("a", PER_SECOND)], t0).expect_err("empty");
        assert_eq!(
            wait,
            Duration::from_millis(500),
            "one token per half second"
        );
        // Another key has its own bucket.
        assert!(buckets.take(&[("b", PER_SECOND)], t0).is_ok());
        let later = t0 + Duration::from_millis(500);
        assert!(buckets.take(&[("a", PER_SECOND)], later).is_ok());
        assert!(buckets.take(&[("a", PER_SECOND)], later).is_err());
    }

    #[test]
    fn a_request_takes_from_every_bucket_or_from_none() {
        let buckets = LocalBuckets::default();
        let t0 = Instant::now();
        let one = Limit {
            capacity: 1,
            interval: Duration::from_secs(60),
        };
        assert!(
            buckets
                .take(&[("global", PER_SECOND), ("client", one)], t0)
                .is_ok()
        );
        // The client's bucket is empty: the global one keeps its token.
        assert!(
            buckets
                .take(&[("global", PER_SECOND), ("client", one)], t0)
                .is_err()
        );
        assert!(buckets.take(&[("global", PER_SECOND)], t0).is_ok());
        assert!(buckets.take(&[("global", PER_SECOND)], t0).is_err());
    }
}
