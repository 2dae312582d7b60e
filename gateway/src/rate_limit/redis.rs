//! Token buckets in Redis, shared by every gateway pointing at it: one script checks
//! and takes from all of a request's buckets atomically, on Redis's clock (so pods'
//! clocks need not agree). While Redis cannot be reached, attempts to reconnect are
//! spaced a second apart, and checks answer at once as the store being down.

use super::Limit;
use graphfleet_config::RedisConfig;
use parking_lot::Mutex;
use redis::aio::ConnectionManager;
use std::time::{Duration, Instant};
use tokio::sync::OnceCell;

/// Takes one token from each bucket `KEYS[i]` (capacity `ARGV[2i-1]`, interval ms
/// `ARGV[2i]`) if all have one; returns 0, or the ms until they would.
const TAKE: &str = r"
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local tokens, wait = {}, 0
for i, key in ipairs(KEYS) do
  local cap, interval = tonumber(ARGV[2 * i - 1]), tonumber(ARGV[2 * i])
  local b = redis.call('HMGET', key, 'tokens', 'at')
  local have = math.min(cap, (tonumber(b[1]) or cap) + (now - (tonumber(b[2]) or now)) * cap / interval)
  if have < 1 then wait = math.max(wait, math.ceil((1 - have) * interval / cap)) end
  tokens[i] = have
end
for i, key in ipairs(KEYS) do
  local interval = tonumber(ARGV[2 * i])
  local left = tokens[i]
  if wait == 0 then left = left - 1 end
  redis.call('HSET', key, 'tokens', tostring(left), 'at', now)
  redis.call('PEXPIRE', key, interval * 2)
end
return wait
";

/// Why the store could not answer.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("Redis did not answer within {0:?}")]
    Timeout(Duration),
    #[error("Redis: {0}")]
    Redis(#[from] redis::RedisError),
    #[error("Redis was unreachable less than a second ago; not retried yet")]
    Backoff,
}

pub struct RedisBuckets {
    client: redis::Client,
    connection: OnceCell<ConnectionManager>,
    script: redis::Script,
    timeout: Duration,
    prefix: String,
    /// When the last connection attempt failed.
    failed_at: Mutex<Option<Instant>>,
}

impl RedisBuckets {
    /// For a validated `config` (the URL parses: checked at start-up).
    pub fn new(config: &RedisConfig) -> Result<Self, redis::RedisError> {
        Ok(Self {
            client: redis::Client::open(config.url.as_str())?,
            connection: OnceCell::new(),
            script: redis::Script::new(TAKE),
            timeout: config.timeout,
            prefix: config.key_prefix.clone(),
            failed_at: Mutex::new(None),
        })
    }

    /// Take one token from each of `buckets` (keys under the configured prefix), or the
    /// wait until they all have one.
    pub async fn take(
        &self,
        buckets: &[(&str, Limit)],
    ) -> Result<Result<(), Duration>, StoreError> {
        let timeout = self.timeout;
        let waited = tokio::time::timeout(timeout, self.invoke(buckets)).await;
        if waited.is_err() && self.connection.get().is_none() {
            // Still connecting: the next requests do not all try again at once.
            *self.failed_at.lock() = Some(Instant::now());
        }
        let wait_ms = waited.map_err(|_| StoreError::Timeout(timeout))??;
        Ok(match wait_ms {
            0 => Ok(()),
            ms => Err(Duration::from_millis(ms)),
        })
    }

    async fn invoke(&self, buckets: &[(&str, Limit)]) -> Result<u64, StoreError> {
        let mut connection = self.connection().await?;
        let mut call = self.script.prepare_invoke();
        for (key, limit) in buckets {
            call.key(format!("{}{key}", self.prefix));
            let interval_ms = limit.interval.as_millis().max(1) as u64;
            call.arg(limit.capacity).arg(interval_ms);
        }
        Ok(call.invoke_async(&mut connection).await?)
    }

    async fn connection(&self) -> Result<ConnectionManager, StoreError> {
        if let Some(connection) = self.connection.get() {
            return Ok(connection.clone());
        }
        if self
            .failed_at
            .lock()
            .is_some_and(|at| at.elapsed() < Duration::from_secs(1))
        {
            return Err(StoreError::Backoff);
        }
        let made = self
            .connection
            .get_or_try_init(|| ConnectionManager::new(self.client.clone()))
            .await;
        match made {
            Ok(connection) => Ok(connection.clone()),
            Err(e) => {
                *self.failed_at.lock() = Some(Instant::now());
                Err(e.into())
            }
        }
    }
}
