//! The GraphGateway's subscriptions settings, in the gateway config file's key names
//! (`subscriptions`, `subgraphs.<name>.subscription`).

use serde_json::{Map, Value};

use crate::crd::{GatewayConfig, SubscriptionProtocol};

/// Add `subscriptions` and the subgraphs' `subscription` sections to the gateway config
/// `root` when `c` sets them.
pub(super) fn subscription_sections(root: &mut Map<String, Value>, c: &GatewayConfig) {
    let Some(subs) = &c.subscriptions else {
        return;
    };
    let ms = |v: Option<u32>| v.map(|ms| Value::String(format!("{ms}ms")));
    let mut section = Map::new();
    for (key, value) in [
        ("enabled", subs.enabled.map(Value::from)),
        (
            "websocket_path",
            subs.websocket_path.clone().map(Value::from),
        ),
        ("max_open", subs.max_open.map(Value::from)),
        ("max_per_client", subs.max_per_client.map(Value::from)),
        (
            "max_connections_per_client",
            subs.max_connections_per_client.map(Value::from),
        ),
        (
            "max_per_connection",
            subs.max_per_connection.map(Value::from),
        ),
        ("queue_size", subs.queue_size.map(Value::from)),
        ("deduplicate", subs.deduplicate.map(Value::from)),
        ("init_timeout", ms(subs.init_timeout_ms)),
        ("heartbeat_interval", ms(subs.heartbeat_interval_ms)),
        (
            "subgraph_connect_timeout",
            ms(subs.subgraph_connect_timeout_ms),
        ),
    ] {
        if let Some(value) = value {
            section.insert(key.to_owned(), value);
        }
    }
    if !section.is_empty() {
        root.insert("subscriptions".to_owned(), Value::Object(section));
    }
    for own in &subs.subgraphs {
        let mut subscription = Map::new();
        if let Some(protocol) = own.protocol {
            let name = match protocol {
                SubscriptionProtocol::Websocket => "websocket",
                SubscriptionProtocol::Sse => "sse",
            };
            subscription.insert("protocol".to_owned(), Value::from(name));
        }
        if let Some(url) = &own.url {
            subscription.insert("url".to_owned(), Value::from(url.clone()));
        }
        let subgraphs = super::routing::object(root, "subgraphs");
        super::routing::object(subgraphs, &own.subgraph)
            .insert("subscription".to_owned(), Value::Object(subscription));
    }
}

#[cfg(test)]
mod tests {
    use crate::crd::{
        GatewayConfig, SubgraphSubscriptionSpec, SubscriptionProtocol, SubscriptionsSpec,
    };
    use crate::resources::gateway::gateway_config_json;
    use crate::resources::gateway::tests::{gateway, load_in_container};
    use graphfleet_gateway::config as gateway_config;
    use std::time::Duration;

    fn with(subscriptions: Option<SubscriptionsSpec>) -> GatewayConfig {
        GatewayConfig {
            subscriptions,
            ..GatewayConfig::default()
        }
    }

    fn full() -> SubscriptionsSpec {
        SubscriptionsSpec {
            enabled: Some(true),
            websocket_path: Some("/ws".to_owned()),
            max_open: Some(20_000),
            max_per_client: Some(2_000),
            max_connections_per_client: Some(300),
            max_per_connection: Some(50),
            queue_size: Some(64),
            deduplicate: Some(false),
            init_timeout_ms: Some(3_000),
            heartbeat_interval_ms: Some(15_000),
            subgraph_connect_timeout_ms: Some(2_500),
            subgraphs: vec![
                SubgraphSubscriptionSpec {
                    subgraph: "reviews".to_owned(),
                    protocol: Some(SubscriptionProtocol::Sse),
                    url: Some("http://reviews.shop:4002/stream".to_owned()),
                },
                SubgraphSubscriptionSpec {
                    subgraph: "inventory".to_owned(),
                    protocol: Some(SubscriptionProtocol::Websocket),
                    url: None,
                },
            ],
        }
    }

    #[test]
    fn subscriptions_reach_the_gateway() {
        let gw = gateway(with(Some(full())));
        let config = load_in_container(&gw).expect("the gateway accepts it");
        let subs = &config.subscriptions;
        assert!(subs.enabled);
        assert_eq!(subs.websocket_path.as_deref(), Some("/ws"));
        assert_eq!(subs.max_open, 20_000);
        assert_eq!(subs.max_per_client, 2_000);
        assert_eq!(subs.max_connections_per_client, 300);
        assert_eq!(subs.max_per_connection, 50);
        assert_eq!(subs.queue_size, 64);
        assert!(!subs.deduplicate);
        assert_eq!(subs.init_timeout, Duration::from_secs(3));
        assert_eq!(subs.heartbeat_interval, Duration::from_secs(15));
        assert_eq!(subs.subgraph_connect_timeout, Duration::from_millis(2500));
        let reviews = &config.subgraphs["reviews"].subscription;
        assert_eq!(reviews.protocol, gateway_config::SubgraphProtocol::Sse);
        assert_eq!(
            reviews.url.as_deref(),
            Some("http://reviews.shop:4002/stream")
        );
        let inventory = &config.subgraphs["inventory"].subscription;
        assert_eq!(
            inventory.protocol,
            gateway_config::SubgraphProtocol::Websocket
        );
        assert_eq!(inventory.url, None);
        insta::assert_snapshot!(gateway_config_json(&gw));
    }

    #[test]
    fn unset_subscriptions_keep_the_gateway_defaults() {
        let defaults = gateway_config::SubscriptionsConfig::default();
        for spec in [None, Some(SubscriptionsSpec::default())] {
            let gw = gateway(with(spec));
            assert!(!gateway_config_json(&gw).contains("subscription"));
            let config = load_in_container(&gw).expect("the gateway accepts it");
            assert_eq!(config.subscriptions, defaults);
        }
        let off = SubscriptionsSpec {
            enabled: Some(false),
            ..SubscriptionsSpec::default()
        };
        let config = load_in_container(&gateway(with(Some(off)))).expect("accepted");
        assert!(!config.subscriptions.enabled);
    }

    #[test]
    fn subscription_settings_the_schema_cannot_catch_are_refused_by_key() {
        // The metrics path passes the CRD's pattern; the gateway refuses it.
        let bad = SubscriptionsSpec {
            websocket_path: Some("/metrics".to_owned()),
            subgraphs: vec![SubgraphSubscriptionSpec {
                subgraph: "reviews".to_owned(),
                protocol: None,
                url: Some("http://reviews:4002".to_owned()),
            }],
            ..SubscriptionsSpec::default()
        };
        let err = load_in_container(&gateway(with(Some(bad)))).expect_err("refused");
        assert!(err.contains("subscriptions.websocket_path"), "{err}");
        assert!(err.contains("subgraphs.reviews.subscription.url"), "{err}");
    }
}
