//! Rate limiting (`rate_limit`): before a request is planned, it takes a token from the
//! gateway's bucket and from its client's (per operation name, when asked); without
//! one it is answered 429 `REQUEST_RATE_LIMITED` with `Retry-After`. Buckets are this
//! process's, or with `rate_limit.redis` shared by the fleet through Redis; while
//! Redis is down requests pass (counted) or get 503, as `fail_open` says.

mod local;
mod redis;

use self::local::LocalBuckets;
use self::redis::RedisBuckets;
use graphfleet_config::{ClientKey, Config, RateLimitConfig};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// `extensions.code` of a request over its bucket.
pub const RATE_LIMITED: &str = "REQUEST_RATE_LIMITED";
/// `extensions.code` of a request refused because Redis could not be asked (fail closed).
pub const STORE_UNAVAILABLE: &str = "RATE_LIMIT_STORE_UNAVAILABLE";
/// The client a request is counted as when it lacks the configured header or claim.
pub const NO_KEY: &str = "(none)";
/// Longest client key kept: longer ones are cut (a header's value is the client's).
const MAX_KEY_BYTES: usize = 256;

/// `capacity` tokens per `interval`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limit {
    pub capacity: u64,
    pub interval: Duration,
}

/// What the limiter says about one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Allowed,
    /// Over a bucket: retry after this long.
    Limited(Duration),
    /// Redis could not be asked and `fail_open` is off.
    StoreDown(String),
}

enum Store {
    Local(LocalBuckets),
    Redis {
        buckets: Box<RedisBuckets>,
        fail_open: bool,
    },
}

pub struct RateLimiter {
    global: Option<Limit>,
    per_client: Option<(Limit, bool)>,
    key: ClientKey,
    store: Store,
    limited: AtomicU64,
    store_errors: AtomicU64,
}

impl RateLimiter {
    /// The limiter `config.rate_limit` asks for, `None` when it sets no bucket (checked
    /// before: the Redis URL parses).
    pub fn new(config: &Config) -> Option<Self> {
        let rl: &RateLimitConfig = &config.rate_limit;
        if !rl.is_active() {
            return None;
        }
        let store = match &rl.redis {
            None => Store::Local(LocalBuckets::default()),
            Some(redis) => Store::Redis {
                buckets: Box::new(
                    RedisBuckets::new(redis).expect("rate_limit.redis.url is validated"),
                ),
                fail_open: redis.fail_open,
            },
        };
        let client = rl.per_client.as_ref();
        Some(Self {
            global: rl.global.as_ref().map(|b| Limit {
                capacity: b.capacity,
                interval: b.interval,
            }),
            per_client: client.map(|b| {
                let limit = Limit {
                    capacity: b.capacity,
                    interval: b.interval,
                };
                (limit, b.per_operation)
            }),
            key: client
                .map(|b| ClientKey::parse(&b.key).expect("rate_limit.per_client.key is validated"))
                .unwrap_or(ClientKey::Ip),
            store,
            limited: AtomicU64::new(0),
            store_errors: AtomicU64::new(0),
        })
    }

    /// Whether a client's buckets are per operation (checked once its name is known).
    pub fn per_operation(&self) -> bool {
        self.per_client
            .is_some_and(|(_, per_operation)| per_operation)
    }

    /// How clients are told apart (the HTTP layer reads the key off each request).
    pub fn client_key(&self) -> Option<&ClientKey> {
        self.per_client.as_ref().map(|_| &self.key)
    }

    /// Take a token for a request of `client` (its key) running `operation`.
    pub async fn check(&self, client: Option<&str>, operation: Option<&str>) -> Verdict {
        let client_bucket = self.per_client.map(|(limit, per_operation)| {
            let client = client.unwrap_or(NO_KEY);
            let key = match (per_operation, operation) {
                (true, Some(op)) => format!("c:{}:{op}", bounded(client)),
                (true, None) => format!("c:{}:(anonymous)", bounded(client)),
                (false, _) => format!("c:{}", bounded(client)),
            };
            (key, limit)
        });
        let mut buckets: Vec<(&str, Limit)> = Vec::with_capacity(2);
        if let Some(limit) = self.global {
            buckets.push(("g", limit));
        }
        if let Some((key, limit)) = &client_bucket {
            buckets.push((key, *limit));
        }
        let taken = match &self.store {
            Store::Local(local) => local.take(&buckets, Instant::now()),
            Store::Redis {
                buckets: redis,
                fail_open,
            } => match redis.take(&buckets).await {
                Ok(taken) => taken,
                Err(e) => {
                    self.store_errors.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(error = %e, "rate limit store unavailable");
                    return match fail_open {
                        true => Verdict::Allowed,
                        false => Verdict::StoreDown(e.to_string()),
                    };
                }
            },
        };
        match taken {
            Ok(()) => Verdict::Allowed,
            Err(wait) => {
                self.limited.fetch_add(1, Ordering::Relaxed);
                Verdict::Limited(wait)
            }
        }
    }

    /// Requests limited, and checks Redis could not answer, so far.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.limited.load(Ordering::Relaxed),
            self.store_errors.load(Ordering::Relaxed),
        )
    }
}

/// `key` cut to [`MAX_KEY_BYTES`] at a character boundary.
fn bounded(key: &str) -> &str {
    if key.len() <= MAX_KEY_BYTES {
        return key;
    }
    let mut end = MAX_KEY_BYTES;
    while !key.is_char_boundary(end) {
        end -= 1;
    }
    &key[..end]
}
