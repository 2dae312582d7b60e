//! `traffic.resilience` and `subgraphs.<name>.resilience`: how fetches to a failing,
//! slow or overloaded subgraph are retried, cut off while it is down, and held to a
//! number in flight. Everything is off by default: each costs nothing until set.

use schemars::JsonSchema;
use serde::Deserialize;
use std::time::Duration;

#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ResilienceConfig {
    /// Retries of query fetches that failed before an answer came (connection refused
    /// or reset, a 5xx status without a GraphQL body). Mutations are never retried.
    pub retry: RetryConfig,
    /// Fetches to a subgraph that keeps failing fail at once, while it recovers.
    pub circuit_breaker: CircuitBreakerConfig,
    /// Most fetches in flight to the subgraph at once; more wait for a slot within
    /// their timeout. Unset: no limit.
    #[schemars(range(min = 1))]
    pub max_concurrent_fetches: Option<usize>,
}

impl ResilienceConfig {
    /// Whether any of it is on.
    pub fn is_active(&self) -> bool {
        self.retry.attempts > 0
            || self.circuit_breaker.enabled
            || self.max_concurrent_fetches.is_some()
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RetryConfig {
    /// Retries after the first attempt (0: none).
    #[schemars(range(max = 10))]
    pub attempts: u32,
    /// Wait before the first retry, doubled for each next one up to `max_backoff`;
    /// each wait is drawn at random up to that (full jitter), so retries from many
    /// requests do not arrive together.
    #[serde(with = "humantime_serde")]
    #[schemars(schema_with = "crate::schema::duration")]
    pub backoff: Duration,
    #[serde(with = "humantime_serde")]
    #[schemars(schema_with = "crate::schema::duration")]
    pub max_backoff: Duration,
    /// Retries to one subgraph may add at most this share of its fetches over the
    /// last 10 s, plus `min_per_second`: a subgraph that is down gets a trickle of
    /// retries, never a multiple of its load.
    #[schemars(range(min = 0.0, max = 1.0))]
    pub budget_ratio: f64,
    /// Retries per second allowed whatever the ratio (so a quiet subgraph's rare
    /// failures are retried too).
    pub min_per_second: u32,
}

impl Default for RetryConfig {
    fn default() -> Self {
        Self {
            attempts: 0,
            backoff: Duration::from_millis(50),
            max_backoff: Duration::from_secs(1),
            budget_ratio: 0.2,
            min_per_second: 10,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct CircuitBreakerConfig {
    pub enabled: bool,
    /// Opens when at least this share of the fetches in `window` failed (errors and
    /// timeouts, not GraphQL errors in an answer)...
    #[schemars(range(min = 0.0, max = 1.0))]
    pub error_ratio: f64,
    /// ...and there were at least this many.
    #[schemars(range(min = 1))]
    pub min_fetches: u32,
    #[serde(with = "humantime_serde")]
    #[schemars(schema_with = "crate::schema::duration")]
    pub window: Duration,
    /// How long it stays open, fetches failing at once with `SUBREQUEST_CIRCUIT_OPEN`;
    /// then one fetch is let through as a probe: closed again if it succeeds, open
    /// again if it fails.
    #[serde(with = "humantime_serde")]
    #[schemars(schema_with = "crate::schema::duration")]
    pub open_for: Duration,
}

impl Default for CircuitBreakerConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            error_ratio: 0.5,
            min_fetches: 20,
            window: Duration::from_secs(10),
            open_for: Duration::from_secs(5),
        }
    }
}

/// Problems with `r` (under `path`), reported to `report`.
pub(crate) fn validate<'a>(
    r: &ResilienceConfig,
    path: &[&'a str],
    report: &mut impl FnMut(&[&str], String),
) {
    let at = |key: &[&'a str]| [path, key].concat();
    let retry = &r.retry;
    if retry.attempts > 10 {
        report(&at(&["retry", "attempts"]), "must be at most 10".to_owned());
    }
    if retry.backoff.is_zero() || retry.max_backoff < retry.backoff {
        report(
            &at(&["retry", "backoff"]),
            "must be > 0 and at most retry.max_backoff".to_owned(),
        );
    }
    if !(0.0..=1.0).contains(&retry.budget_ratio) {
        report(
            &at(&["retry", "budget_ratio"]),
            "must be from 0 to 1".to_owned(),
        );
    }
    let breaker = &r.circuit_breaker;
    if !(0.0..=1.0).contains(&breaker.error_ratio) || breaker.error_ratio == 0.0 {
        report(
            &at(&["circuit_breaker", "error_ratio"]),
            "must be > 0 and at most 1".to_owned(),
        );
    }
    if breaker.min_fetches == 0 {
        report(
            &at(&["circuit_breaker", "min_fetches"]),
            "must be at least 1".to_owned(),
        );
    }
    for (key, d) in [("window", breaker.window), ("open_for", breaker.open_for)] {
        if d.is_zero() {
            report(&at(&["circuit_breaker", key]), "must be > 0".to_owned());
        }
    }
    if r.max_concurrent_fetches == Some(0) {
        report(
            &at(&["max_concurrent_fetches"]),
            "must be at least 1".to_owned(),
        );
    }
}
