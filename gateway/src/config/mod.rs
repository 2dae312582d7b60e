//! The gateway's configuration: the schema is `graphfleet-config`'s (shared with the
//! GraphGateway's `spec.config`); here it is loaded (a YAML file, then `GRAPHFLEET_*`
//! environment overrides, then CLI flags; later sources win), its files are read, and
//! it becomes the executor's transport and the planner's limits.

mod cli;
mod load;
mod startup;
mod tls;

pub use cli::{Cli, Command, parse_args};
pub use graphfleet_config::*;
pub use load::{
    CONFIG_ENV, ConfigError, ENV_PREFIX, Override, Problem, Source, Sources, env_overrides,
    ignored_env, load, parse_scalar,
};
pub use tls::server_config;

use graphfleet_executor::resilience::{BreakerPolicy, ResiliencePolicy, RetryPolicy};
use graphfleet_executor::transport::{FetchPolicy, Http2, HttpTransport, RequestEncoding};

/// The subgraph transport: `traffic` timeouts, deduplication, TLS, HTTP version and
/// compression, overridden per subgraph by `subgraphs.<name>`.
pub fn transport(config: &Config) -> HttpTransport {
    let mut tls = tls::Loaded::new(&config.traffic.tls);
    let traffic = &config.traffic;
    let default = FetchPolicy {
        timeout: traffic.subgraph_timeout,
        deduplicate: traffic.deduplicate,
        max_response_bytes: traffic.max_subgraph_response_bytes,
        tls: tls.default_settings(),
        http2: http2(traffic.http2),
        compress_requests: encoding(traffic.compress_requests),
        accept_compressed: traffic.accept_compressed_responses,
        resilience: resilience(&traffic.resilience),
    };
    let per_subgraph: Vec<_> = config
        .subgraphs
        .iter()
        .map(|(name, sg)| {
            let policy = FetchPolicy {
                timeout: sg.timeout.unwrap_or(default.timeout),
                deduplicate: sg.deduplicate.unwrap_or(default.deduplicate),
                max_response_bytes: default.max_response_bytes,
                tls: tls.for_subgraph(name, sg.tls.as_ref()),
                http2: sg.http2.map_or(default.http2, http2),
                compress_requests: sg
                    .compress_requests
                    .map_or(default.compress_requests, encoding),
                accept_compressed: sg
                    .accept_compressed_responses
                    .unwrap_or(default.accept_compressed),
                resilience: sg
                    .resilience
                    .as_ref()
                    .map_or_else(|| default.resilience.clone(), resilience),
            };
            (name.clone(), policy)
        })
        .collect();
    HttpTransport::new(default, per_subgraph)
}

/// `traffic.resilience` or a subgraph's: only what is switched on becomes a policy.
fn resilience(config: &graphfleet_config::ResilienceConfig) -> ResiliencePolicy {
    let retry = &config.retry;
    let breaker = &config.circuit_breaker;
    ResiliencePolicy {
        retry: (retry.attempts > 0).then_some(RetryPolicy {
            attempts: retry.attempts,
            backoff: retry.backoff,
            max_backoff: retry.max_backoff,
            budget_ratio: retry.budget_ratio,
            min_per_second: retry.min_per_second,
        }),
        breaker: breaker.enabled.then_some(BreakerPolicy {
            error_ratio: breaker.error_ratio,
            min_fetches: breaker.min_fetches,
            window: breaker.window,
            open_for: breaker.open_for,
        }),
        max_concurrent: config.max_concurrent_fetches,
    }
}

/// The limits operations are prepared under.
pub fn operation_limits(limits: &LimitsConfig) -> graphfleet_planner::OperationLimits {
    graphfleet_planner::OperationLimits {
        max_depth: limits.max_depth,
        max_aliases: limits.max_aliases,
        max_root_fields: limits.max_root_fields,
        max_tokens: limits.max_tokens,
        max_height: limits.max_height,
        introspection: limits.introspection,
        max_introspection_values: limits.max_introspection_values,
    }
}

fn http2(mode: Http2Mode) -> Http2 {
    match mode {
        Http2Mode::Off => Http2::Off,
        Http2Mode::PriorKnowledge => Http2::PriorKnowledge,
        Http2Mode::Alpn => Http2::Alpn,
    }
}

fn encoding(compression: RequestCompression) -> RequestEncoding {
    match compression {
        RequestCompression::None => RequestEncoding::None,
        RequestCompression::Gzip => RequestEncoding::Gzip,
        RequestCompression::Br => RequestEncoding::Br,
        RequestCompression::Zstd => RequestEncoding::Zstd,
    }
}
