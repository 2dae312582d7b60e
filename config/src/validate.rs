//! Semantic checks that types alone cannot express, without touching a file: the
//! gateway runs them at start-up (then reads the files the settings name), the operator
//! on a GraphGateway's `spec.config`. Each problem is a dotted path (as key segments)
//! and a message; the gateway's loader adds the source that wrote the value.

use super::Config;
use super::checks::{UNPROPAGATABLE, http_url};
use std::time::Duration;

/// Each problem: the setting's path as key segments, and what is wrong with it.
pub type Problems = Vec<(Vec<String>, String)>;

/// Paths the gateway serves itself; the GraphQL and metrics endpoints must not shadow them.
const HEALTH_PREFIX: &str = "/health/";

/// Every problem of `config` that needs no file to find; empty when there is none.
/// A missing `supergraph.path` is not one: the gateway requires it, the operator sets it.
pub fn validate(config: &Config) -> Problems {
    let mut out = Problems::new();
    let mut report = |path: &[&str], message: String| {
        out.push((path.iter().map(|s| (*s).to_owned()).collect(), message));
    };

    endpoint_paths(config, &mut report);
    subscriptions(config, &mut report);
    positive(
        &mut report,
        &["supergraph", "poll_interval"],
        config.supergraph.poll_interval,
    );
    positive(
        &mut report,
        &["traffic", "request_timeout"],
        config.traffic.request_timeout,
    );
    positive(
        &mut report,
        &["traffic", "subgraph_timeout"],
        config.traffic.subgraph_timeout,
    );
    positive(
        &mut report,
        &["traffic", "header_read_timeout"],
        config.traffic.header_read_timeout,
    );
    positive(
        &mut report,
        &["traffic", "idle_timeout"],
        config.traffic.idle_timeout,
    );
    if let Some(age) = config.traffic.max_connection_age {
        positive(&mut report, &["traffic", "max_connection_age"], age);
    }
    if config.traffic.max_connections_per_client == 0 {
        report(
            &["traffic", "max_connections_per_client"],
            "must be at least 1".to_owned(),
        );
    }
    if let Err((i, why)) = crate::TrustedProxies::parse(&config.traffic.trusted_proxies) {
        report(&["traffic", "trusted_proxies", &i.to_string()], why);
    }
    if let Err(why) = crate::ClientAddressHeader::parse(&config.traffic.client_address_header) {
        report(&["traffic", "client_address_header"], why);
    }
    if config.traffic.max_subgraph_response_bytes == 0 {
        report(
            &["traffic", "max_subgraph_response_bytes"],
            "must be at least 1".to_owned(),
        );
    }
    if config.traffic.max_concurrent_requests == 0 {
        report(
            &["traffic", "max_concurrent_requests"],
            "must be at least 1".to_owned(),
        );
    }
    usage(config, &mut report);
    if config.traffic.max_connections == 0 {
        report(
            &["traffic", "max_connections"],
            "must be at least 1".to_owned(),
        );
    }
    for (name, subgraph) in &config.subgraphs {
        if let Some(url) = &subgraph.url
            && let Err(why) = http_url(url)
        {
            report(&["subgraphs", name, "url"], why);
        }
        if let Some(timeout) = subgraph.timeout {
            positive(&mut report, &["subgraphs", name, "timeout"], timeout);
        }
        if let Some(resilience) = &subgraph.resilience {
            crate::resilience::validate(
                resilience,
                &["subgraphs", name, "resilience"],
                &mut report,
            );
        }
    }
    crate::resilience::validate(
        &config.traffic.resilience,
        &["traffic", "resilience"],
        &mut report,
    );
    for (i, name) in config.headers.propagate.iter().enumerate() {
        if let Err(why) = propagatable(name) {
            report(&["headers", "propagate", &i.to_string()], why);
        }
    }
    limits(config, &mut report);
    crate::rate_limit::validate(&config.rate_limit, &mut report);
    if let Some(coprocessor) = &config.coprocessor {
        crate::coprocessor::validate(coprocessor, &mut report);
    }
    if !(1..=1000).contains(&config.batching.max_size) {
        report(
            &["batching", "max_size"],
            "must be from 1 to 1000".to_owned(),
        );
    }
    super::headers::validate(config, &mut report);
    super::response_headers::validate(config, &mut report);
    let labels = &config.progressive_override;
    for (i, label) in labels.disabled_labels.iter().enumerate() {
        if labels.enabled_labels.contains(label) {
            report(
                &["progressive_override", "disabled_labels", &i.to_string()],
                format!("{label:?} is also in progressive_override.enabled_labels; list it once"),
            );
        }
    }
    if config.workers == Some(0) {
        report(
            &["workers"],
            "must be at least 1 (or unset to follow the CPU quota)".to_owned(),
        );
    }
    tracing(config, &mut report);
    tls_pairs(config, &mut report);
    super::persisted::validate(config, &mut report);
    super::http::validate(config, &mut report);
    super::auth::validate(config, &mut report);
    super::demand::validate(config, &mut report);
    out
}

/// Certificates and keys come in pairs.
fn tls_pairs(config: &Config, report: &mut impl FnMut(&[&str], String)) {
    if let Err((key, why)) = config.tls.pair() {
        report(&["tls", key], why);
    }
    if let Err((key, why)) = config.traffic.tls.identity() {
        report(&["traffic", "tls", key], why);
    }
    for (name, subgraph) in &config.subgraphs {
        if let Some(Err((key, why))) = subgraph.tls.as_ref().map(|tls| tls.identity()) {
            report(&["subgraphs", name, "tls", key], why);
        }
    }
}

fn endpoint_paths(config: &Config, report: &mut impl FnMut(&[&str], String)) {
    let graphql = config.graphql_path.as_str();
    let metrics = config.telemetry.metrics_path.as_str();
    for (path, value) in [
        (&["graphql_path"][..], graphql),
        (&["telemetry", "metrics_path"], metrics),
    ] {
        if !value.starts_with('/') {
            report(path, format!("must start with '/', got {value:?}"));
        } else if value.starts_with(HEALTH_PREFIX) || value == HEALTH_PREFIX.trim_end_matches('/') {
            report(
                path,
                format!("{value:?} is a health path, which the gateway serves itself"),
            );
        }
    }
    if config.telemetry.metrics && graphql == metrics {
        report(
            &["telemetry", "metrics_path"],
            format!("{metrics:?} is also graphql_path; the two endpoints need different paths"),
        );
    }
}

fn subscriptions(config: &Config, report: &mut impl FnMut(&[&str], String)) {
    let subs = &config.subscriptions;
    if let Some(path) = &subs.websocket_path {
        if !path.starts_with('/') {
            report(
                &["subscriptions", "websocket_path"],
                format!("must start with '/', got {path:?}"),
            );
        } else if path.starts_with(HEALTH_PREFIX) || *path == config.telemetry.metrics_path {
            report(
                &["subscriptions", "websocket_path"],
                format!("{path:?} is a path the gateway serves for health or metrics"),
            );
        }
    }
    for (key, value) in [
        ("max_open", subs.max_open),
        ("max_per_client", subs.max_per_client),
        (
            "max_connections_per_client",
            subs.max_connections_per_client,
        ),
        ("max_per_connection", subs.max_per_connection),
        ("queue_size", subs.queue_size),
    ] {
        if value == 0 {
            report(&["subscriptions", key], "must be at least 1".to_owned());
        }
    }
    for (key, value) in [
        ("init_timeout", subs.init_timeout),
        ("heartbeat_interval", subs.heartbeat_interval),
        ("send_timeout", subs.send_timeout),
        ("subgraph_connect_timeout", subs.subgraph_connect_timeout),
        ("pong_timeout", subs.pong_timeout),
    ] {
        positive(report, &["subscriptions", key], value);
    }
    if let Some(interval) = subs.ping_interval {
        positive(report, &["subscriptions", "ping_interval"], interval);
    }
    if subs.init_token_key.as_deref().is_some_and(str::is_empty) {
        report(
            &["subscriptions", "init_token_key"],
            "must not be empty (null reads no token)".to_owned(),
        );
    }
    for (i, key) in subs.forward_init_keys.iter().enumerate() {
        if key.is_empty() {
            report(
                &["subscriptions", "forward_init_keys", &i.to_string()],
                "must not be empty".to_owned(),
            );
        }
    }
    for (name, sg) in &config.subgraphs {
        let Some(url) = &sg.subscription.url else {
            continue;
        };
        let schemes: &[&str] = match sg.subscription.protocol {
            super::SubgraphProtocol::Websocket => &["ws://", "wss://"],
            super::SubgraphProtocol::Sse => &["http://", "https://"],
        };
        if !schemes.iter().any(|s| url.starts_with(s)) {
            report(
                &["subgraphs", name, "subscription", "url"],
                format!("must start with {}, got {url:?}", schemes.join(" or ")),
            );
        }
    }
}

fn positive(report: &mut impl FnMut(&[&str], String), path: &[&str], value: Duration) {
    if value.is_zero() {
        report(path, "must be longer than 0".to_owned());
    }
}

fn limits(config: &Config, report: &mut impl FnMut(&[&str], String)) {
    let limits = &config.limits;
    if limits.plan_cache_bytes == 0 {
        report(
            &["limits", "plan_cache_bytes"],
            "must be at least 1".to_owned(),
        );
    }
    if !(1024..=16 * 1024 * 1024).contains(&limits.http2_max_header_list_bytes) {
        report(
            &["limits", "http2_max_header_list_bytes"],
            "must be from 1KiB to 16MiB".to_owned(),
        );
    }
    if limits.max_body_bytes == 0 {
        report(
            &["limits", "max_body_bytes"],
            "must be at least 1".to_owned(),
        );
    }
    if limits.max_response_bytes == 0 {
        report(
            &["limits", "max_response_bytes"],
            "must be at least 1".to_owned(),
        );
    }
    let floor = limits.max_response_bytes.saturating_mul(2);
    if limits.max_inflight_bytes != 0 && limits.max_inflight_bytes < floor {
        report(
            &["limits", "max_inflight_bytes"],
            format!(
                "must be at least twice limits.max_response_bytes ({floor} bytes): one request holds its subgraph responses and the response written from them at once, and alone it must always fit; or 0 to derive it from the container's memory limit"
            ),
        );
    }
    let optional = [
        ("max_depth", limits.max_depth),
        ("max_aliases", limits.max_aliases),
        ("max_root_fields", limits.max_root_fields),
        ("max_tokens", limits.max_tokens),
        ("max_height", limits.max_height),
        ("max_introspection_values", limits.max_introspection_values),
    ];
    for (key, value) in optional {
        if value == Some(0) {
            report(
                &["limits", key],
                "0 would reject every operation; use at least 1, or null for no limit".to_owned(),
            );
        }
    }
}

fn tracing(config: &Config, report: &mut impl FnMut(&[&str], String)) {
    let tracing = &config.telemetry.tracing;
    if let Some(endpoint) = &tracing.otlp_endpoint
        && let Err(why) = http_url(endpoint)
    {
        report(&["telemetry", "tracing", "otlp_endpoint"], why);
    }
    if !(0.0..=1.0).contains(&tracing.sample_ratio) {
        report(
            &["telemetry", "tracing", "sample_ratio"],
            format!("must be within 0..=1, got {}", tracing.sample_ratio),
        );
    }
    if tracing.service_name.trim().is_empty() {
        report(
            &["telemetry", "tracing", "service_name"],
            "must not be empty".to_owned(),
        );
    }
}

fn propagatable(name: &str) -> Result<(), String> {
    let header = http::HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| format!("{name:?} is not a valid HTTP header name"))?;
    if UNPROPAGATABLE.contains(&header.as_str()) {
        return Err(format!(
            "{name:?} is set by the gateway for each subgraph request and cannot be propagated"
        ));
    }
    if header == http::header::AUTHORIZATION {
        return Err(
            "authorization is controlled by headers.forward_authorization, not propagate"
                .to_owned(),
        );
    }
    Ok(())
}

/// Recording needs room for one document, and the admin listener its own port.
fn usage(config: &Config, report: &mut impl FnMut(&[&str], String)) {
    let usage = &config.usage;
    if usage.record && usage.max_document_bytes > usage.max_bytes / 16 {
        report(
            &["usage", "max_document_bytes"],
            format!(
                "must be at most a sixteenth of usage.max_bytes ({} bytes), so the recorder holds at least 16 documents",
                usage.max_bytes / 16
            ),
        );
    }
    if !(1..=64).contains(&usage.max_clients_per_operation) {
        report(
            &["usage", "max_clients_per_operation"],
            "must be within 1..=64".to_owned(),
        );
    }
    // Port 0 asks for an ephemeral port, a different one each time.
    if config
        .admin
        .listen
        .is_some_and(|admin| admin == config.listen && admin.port() != 0)
    {
        report(
            &["admin", "listen"],
            "must differ from listen (the admin listener needs a port of its own)".to_owned(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_must_be_absolute_http() {
        assert!(http_url("http://products:4001/graphql").is_ok());
        assert!(http_url("https://a.example").is_ok());
        assert!(http_url("products:4001").is_err());
        assert!(http_url("/graphql").is_err());
        assert!(http_url("ftp://a/b").is_err());
        assert!(http_url("http://").is_err());
        assert!(http_url("not a url").is_err());
    }

    #[test]
    fn endpoint_paths_stay_clear_of_health() {
        for path in ["/health", "/health/live", "metrics"] {
            let mut config = Config::default();
            config.telemetry.metrics_path = path.to_owned();
            assert_eq!(validate(&config).len(), 1, "{path}");
        }
        let mut config = Config::default();
        config.telemetry.metrics_path = "/healthz".to_owned();
        assert!(validate(&config).is_empty());
    }

    #[test]
    fn the_inflight_budget_holds_one_whole_request() {
        let mut config = Config::default();
        config.limits.max_response_bytes = 16 << 20;
        for (budget, problems) in [(0, 0), (32 << 20, 0), (1 << 30, 0), ((32 << 20) - 1, 1)] {
            config.limits.max_inflight_bytes = budget;
            let found = validate(&config);
            assert_eq!(found.len(), problems, "{budget}: {found:?}");
        }
        config.limits.max_inflight_bytes = 1;
        let (path, why) = &validate(&config)[0];
        assert_eq!(path, &["limits", "max_inflight_bytes"]);
        assert!(why.contains("33554432 bytes"), "{why}");
    }

    #[test]
    fn the_http2_header_list_is_held_to_a_sane_range() {
        let mut config = Config::default();
        for (bytes, problems) in [(1024, 0), (16 << 20, 0), (1023, 1), ((16 << 20) + 1, 1)] {
            config.limits.http2_max_header_list_bytes = bytes;
            assert_eq!(validate(&config).len(), problems, "{bytes}");
        }
    }

    #[test]
    fn header_names_are_checked() {
        assert!(propagatable("x-request-id").is_ok());
        assert!(propagatable("X-Tenant").is_ok());
        assert!(propagatable("bad header").is_err());
        assert!(propagatable("Host").is_err());
        assert!(propagatable("").is_err());
    }
}
