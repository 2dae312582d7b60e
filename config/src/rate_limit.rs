//! `rate_limit`: token buckets that turn requests away with 429 once a client, or the
//! gateway as a whole, sends more than it may. Per pod by default; with `redis` the
//! buckets live in Redis and hold across the fleet. Off unless a bucket is set.

use schemars::JsonSchema;
use serde::Deserialize;
use std::time::Duration;

#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RateLimitConfig {
    /// One bucket for every request the gateway (or, with `redis`, the fleet) takes.
    pub global: Option<BucketConfig>,
    /// One bucket per client, told apart by `per_client.key`.
    pub per_client: Option<ClientBucketConfig>,
    /// Keep the buckets in Redis, shared by every gateway pointing at it.
    pub redis: Option<RedisConfig>,
}

impl RateLimitConfig {
    pub fn is_active(&self) -> bool {
        self.global.is_some() || self.per_client.is_some()
    }
}

/// `capacity` requests per `interval`, refilled evenly, so a burst may take up to
/// `capacity` at once and the steady rate is `capacity / interval`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BucketConfig {
    #[schemars(range(min = 1))]
    pub capacity: u64,
    #[serde(with = "humantime_serde")]
    #[schemars(schema_with = "crate::schema::duration")]
    pub interval: Duration,
}

#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClientBucketConfig {
    #[schemars(range(min = 1))]
    pub capacity: u64,
    #[serde(with = "humantime_serde")]
    #[schemars(schema_with = "crate::schema::duration")]
    pub interval: Duration,
    /// What tells clients apart: `ip` (the TCP peer, or the client a trusted proxy
    /// names: `traffic.trusted_proxies`), `header:<name>` (e.g. `header:x-api-key`), or
    /// `claim:<name>` (a claim of the request's validated JWT, e.g. `claim:sub`). A
    /// request without the header or claim counts as the client `(none)`.
    #[serde(default = "ip")]
    #[schemars(regex(pattern = r"^(ip|header:[!#$%&'*+.^_`|~0-9A-Za-z-]+|claim:.+)$"))]
    pub key: String,
    /// A bucket per client and operation name, so one client's hot operation does not
    /// starve its others.
    #[serde(default)]
    pub per_operation: bool,
}

fn ip() -> String {
    "ip".to_owned()
}

/// How a client is told apart, parsed from `per_client.key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientKey {
    Ip,
    /// Lowercase header name.
    Header(String),
    Claim(String),
}

impl ClientKey {
    pub fn parse(key: &str) -> Result<Self, String> {
        let bad = || format!("{key:?} is not `ip`, `header:<name>` or `claim:<name>`");
        match key.split_once(':') {
            None if key == "ip" => Ok(Self::Ip),
            Some(("header", name))
                if !name.is_empty() && name.bytes().all(crate::proxies::is_token_byte) =>
            {
                Ok(Self::Header(name.to_ascii_lowercase()))
            }
            Some(("claim", name)) if !name.is_empty() => Ok(Self::Claim(name.to_owned())),
            _ => Err(bad()),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RedisConfig {
    /// `redis://[user:password@]host[:port][/db]` (or `rediss://` for TLS).
    pub url: String,
    /// Longest a bucket check may wait for Redis; past it the store counts as down.
    #[serde(with = "humantime_serde")]
    #[schemars(schema_with = "crate::schema::duration")]
    pub timeout: Duration,
    /// While Redis is unreachable (or slower than `timeout`): `true` lets requests
    /// through (counted in `graphfleet_rate_limit_store_errors_total`), `false` turns
    /// them away with 503 `RATE_LIMIT_STORE_UNAVAILABLE`.
    pub fail_open: bool,
    /// Prefix of the bucket keys, so several graphs can share one Redis.
    pub key_prefix: String,
}

impl Default for RedisConfig {
    fn default() -> Self {
        Self {
            url: "redis://127.0.0.1:6379".to_owned(),
            timeout: Duration::from_millis(50),
            fail_open: true,
            key_prefix: "graphfleet:rl:".to_owned(),
        }
    }
}

/// Problems with `config`, reported to `report`.
pub(crate) fn validate(config: &RateLimitConfig, report: &mut impl FnMut(&[&str], String)) {
    let buckets = [
        (
            "global",
            config.global.as_ref().map(|b| (b.capacity, b.interval)),
        ),
        (
            "per_client",
            config.per_client.as_ref().map(|b| (b.capacity, b.interval)),
        ),
    ];
    for (name, bucket) in buckets {
        let Some((capacity, interval)) = bucket else {
            continue;
        };
        if capacity == 0 {
            report(
                &["rate_limit", name, "capacity"],
                "must be at least 1".to_owned(),
            );
        }
        if interval.is_zero() {
            report(&["rate_limit", name, "interval"], "must be > 0".to_owned());
        }
    }
    if let Some(client) = &config.per_client
        && let Err(why) = ClientKey::parse(&client.key)
    {
        report(&["rate_limit", "per_client", "key"], why);
    }
    if let Some(redis) = &config.redis {
        if !(redis.url.starts_with("redis://") || redis.url.starts_with("rediss://")) {
            report(
                &["rate_limit", "redis", "url"],
                format!("{:?} is not a redis:// or rediss:// URL", redis.url),
            );
        }
        if redis.timeout.is_zero() {
            report(
                &["rate_limit", "redis", "timeout"],
                "must be > 0".to_owned(),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_keys_parse() {
        assert_eq!(ClientKey::parse("ip"), Ok(ClientKey::Ip));
        assert_eq!(
            ClientKey::parse("header:X-Api-Key"),
            Ok(ClientKey::Header("x-api-key".into()))
        );
        assert_eq!(
            ClientKey::parse("claim:sub"),
            Ok(ClientKey::Claim("sub".into()))
        );
        for bad in ["", "ipv4", "header:", "header:a b", "claim:", "cookie:x"] {
            assert!(ClientKey::parse(bad).is_err(), "{bad}");
        }
    }
}
