//! Subscriptions for production over WebSocket, with the real graphql-ws client
//! (graphql-transport-ws) and Apollo's legacy subscriptions-transport-ws client (the
//! `graphql-ws` subprotocol), through the gateway to a strict fake subgraph WebSocket
//! (tests/support/ws_subgraph.rs, the tests/ws_auth supergraph): a token in
//! `connection_init` authenticates like the HTTP header (a bad one closes 4403), its
//! claims decide `@authenticated`, `@requiresScopes` and `@policy` per subscription and
//! reach header rules, selected payload keys reach the subgraph's `connection_init`, an
//! expiring token ends its subscriptions, and the gateway's pings close a client that
//! does not answer.

mod support;

use graphfleet_gateway::config::{Config, HeaderRule, InsertRule};
use graphfleet_gateway::supergraph::Supergraph;
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;
use support::jwt::{TestKey, claims, now};
use support::ws_subgraph::{Behaviour, WsSubgraph};

struct Setup {
    subgraph: WsSubgraph,
    /// The gateway's `ws://` URL.
    ws: String,
    key: TestKey,
}

/// The gateway (authentication against a fresh key, `tune` applied) in front of a fake
/// subgraph behaving as `behaviour` says.
async fn setup(name: &str, behaviour: Behaviour, tune: impl FnOnce(&mut Config)) -> Setup {
    let dir = support::process::test_dir(name);
    let key = TestKey::es256("k1");
    let mut config = support::jwt::config(&key, &dir);
    tune(&mut config);
    let subgraph = WsSubgraph::start(behaviour).await;
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ws_auth/supergraph.graphql");
    let text = std::fs::read_to_string(fixture)
        .expect("tests/ws_auth/supergraph.graphql")
        .replace("http://127.0.0.1:4200", &subgraph.base_url);
    let supergraph = Supergraph::parse(&text).expect("the ticks supergraph loads");
    let http = support::start_gateway_with_config(config, supergraph).await;
    Setup {
        subgraph,
        ws: http.replacen("http://", "ws://", 1),
        key,
    }
}

fn ticks(events: usize) -> Behaviour {
    Behaviour {
        expect_init: None,
        events,
        interval: Duration::from_millis(50),
    }
}

/// Run `query` through the real `protocol` client (`ws` or `legacy`) with `params` as
/// its `connection_init` payload; the JSON lines it printed.
async fn client(
    protocol: &str,
    url: &str,
    query: &str,
    params: Option<Value>,
    extra: &[&str],
) -> Vec<Value> {
    let mut args: Vec<String> = [
        "subscription-client/client.mjs",
        "--protocol",
        protocol,
        "--url",
        url,
        "--query",
        query,
        "--timeout-ms",
        "15000",
    ]
    .map(str::to_owned)
    .to_vec();
    if let Some(params) = params {
        args.extend(["--connection-params".to_owned(), params.to_string()]);
    }
    args.extend(extra.iter().map(|a| (*a).to_owned()));
    let output = support::node_tool(args).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    // 0: completed, 1: ended with an error; 2 (timeout) and 64 (usage) are never expected.
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "the client failed: {}\n{stdout}\n{stderr}",
        output.status
    );
    // A client that could not run (npm, the package) prints nothing: a failure, not a skip.
    assert!(
        !stdout.trim().is_empty(),
        "the client printed nothing:\n{stderr}"
    );
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}\n{stderr}")))
        .collect()
}

/// `events` results of `field`, then the server's `complete`.
fn completed(field: &str, events: usize) -> Vec<Value> {
    let mut lines: Vec<Value> = (1..=events)
        .map(|i| json!({ "data": { field: i } }))
        .collect();
    lines.push(json!({ "done": "complete", "by": "server" }));
    lines
}

fn bearer(token: &str) -> Value {
    json!({ "Authorization": format!("Bearer {token}") })
}

#[tokio::test]
async fn a_token_in_connection_init_authenticates_and_its_claims_and_keys_reach_the_subgraph() {
    let behaviour = Behaviour {
        // Strict: only the forwarded key, never the token or the other keys.
        expect_init: Some(json!({ "tenant": "acme" })),
        ..ticks(3)
    };
    let setup = setup("ws-auth-valid", behaviour, |config| {
        config.authentication.require_authentication = true;
        config.subscriptions.forward_init_keys = vec!["tenant".to_owned()];
        config.headers.rules = vec![HeaderRule {
            insert: Some(InsertRule {
                name: "x-user".to_owned(),
                value: None,
                from_claim: Some("sub".to_owned()),
            }),
            ..HeaderRule::default()
        }];
    })
    .await;
    let token = setup.key.sign(&claims(json!({})));
    let mut params = bearer(&token);
    params["tenant"] = json!("acme");
    params["unrelated"] = json!(1);
    for protocol in ["ws", "legacy"] {
        let query = "subscription { privateTicks }";
        let got = client(protocol, &setup.ws, query, Some(params.clone()), &[]).await;
        assert_eq!(got, completed("privateTicks", 3), "{protocol}");
    }
    assert_eq!(setup.subgraph.inits(), vec![json!({ "tenant": "acme" }); 2]);
    // The claims reached the header rules; the client's token stayed at the gateway.
    assert_eq!(
        setup.subgraph.header("x-user"),
        vec![Some("u1".to_owned()); 2]
    );
    assert_eq!(setup.subgraph.header("authorization"), vec![None, None]);
}

#[tokio::test]
async fn bad_tokens_in_connection_init_are_closed_with_4403_and_never_reach_the_subgraph() {
    let setup = setup("ws-auth-bad", ticks(3), |config| {
        config.authentication.require_authentication = true;
    })
    .await;
    let stranger = TestKey::es256("k1"); // the same kid, another key
    let forged = stranger.sign(&claims(json!({})));
    let expired = setup.key.sign(&claims(json!({ "exp": now() - 10 })));
    let other_audience = setup.key.sign(&claims(json!({ "aud": "someone-else" })));
    let invalid = "Forbidden: invalid JWT: ";
    let cases = [
        (
            bearer(&forged),
            format!("{invalid}the token's signature does not match its key"),
        ),
        (bearer(&expired), format!("{invalid}the token has expired")),
        (
            bearer(&other_audience),
            format!("{invalid}the token's audience (aud) is not accepted"),
        ),
        (
            json!({ "Authorization": "Bearer not-a-jwt" }),
            format!(
                "{invalid}the token is malformed (a JWT is three base64url parts separated by dots)"
            ),
        ),
        (
            json!({ "Authorization": 42 }),
            format!("{invalid}the connection_init payload's Authorization is not a string"),
        ),
        (
            json!({}),
            "Forbidden: this request needs a token in the connection_init payload's \
             Authorization (or the upgrade's header)"
                .to_owned(),
        ),
    ];
    let query = "subscription { ticks }";
    for (params, reason) in &cases {
        let got = client("ws", &setup.ws, query, Some(params.clone()), &[]).await;
        let closed = json!({ "done": "error", "error": { "close": 4403, "reason": reason } });
        assert_eq!(got, vec![closed], "{params}");
        // The legacy protocol says why in connection_error first, then closes the same way.
        let got = client(
            "legacy",
            &setup.ws,
            query,
            Some(params.clone()),
            &["--report-close"],
        )
        .await;
        let refused = json!({
            "done": "error", "error": { "message": reason }, "closed": 4403, "reason": reason,
        });
        assert_eq!(got, vec![refused], "legacy {params}");
    }
    assert_eq!(setup.subgraph.inits(), Vec::<Value>::new());
}

/// The error refusing a subscription whose root field is denied.
fn denied(field: &str) -> Value {
    json!({
        "done": "error",
        "error": [{
            "message": format!("Unauthorized field or type: this request may not read Subscription.{field}"),
            "extensions": { "code": "UNAUTHORIZED_FIELD_OR_TYPE" },
        }],
    })
}

#[tokio::test]
async fn authenticated_scopes_and_policies_are_decided_per_subscription_with_the_init_claims() {
    let setup = setup("ws-auth-directives", ticks(2), |_| {}).await;
    let plain = setup.key.sign(&claims(json!({})));
    let scoped = setup.key.sign(&claims(json!({ "scope": "read:ticks" })));
    let admin = setup.key.sign(&claims(json!({ "roles": ["admin"] })));
    let cases: [(Option<&str>, &str, bool); 8] = [
        (None, "ticks", true),
        (None, "privateTicks", false),
        (Some(&plain), "privateTicks", true),
        (Some(&plain), "scopedTicks", false),
        (Some(&scoped), "scopedTicks", true),
        (Some(&plain), "adminTicks", false),
        (Some(&scoped), "adminTicks", false),
        (Some(&admin), "adminTicks", true),
    ];
    for protocol in ["ws", "legacy"] {
        for (token, field, allowed) in cases {
            let query = format!("subscription {{ {field} }}");
            let got = client(protocol, &setup.ws, &query, token.map(bearer), &[]).await;
            let expected = if allowed {
                completed(field, 2)
            } else {
                vec![denied(field)]
            };
            assert_eq!(
                got,
                expected,
                "{protocol} {field} with token {}",
                token.is_some()
            );
        }
    }
}

#[tokio::test]
async fn an_expiring_token_ends_its_subscriptions_with_an_error_then_closes_4403() {
    let endless = Behaviour {
        interval: Duration::from_millis(100),
        ..ticks(10_000)
    };
    let setup = setup("ws-auth-expiry", endless.clone(), |_| {}).await;
    // The legacy client's token under another key, bare (no `Bearer `).
    let legacy = setup_with_key(endless, &setup.key).await;
    let expected_end = json!({
        "done": "error",
        "error": [{
            "message": "invalid JWT: the token has expired",
            "extensions": { "code": "AUTH_ERROR" },
        }],
        "closed": 4403,
        "reason": "Forbidden: invalid JWT: the token has expired",
    });
    let runs = [
        ("ws", &setup.ws, "Authorization", true),
        ("legacy", &legacy, "authToken", false),
    ];
    for (protocol, url, key, with_prefix) in runs {
        // Long enough for the client to start (node takes a second or two here).
        let token = setup.key.sign(&claims(json!({ "exp": now() + 5 })));
        let value = if with_prefix {
            format!("Bearer {token}")
        } else {
            token
        };
        let params = json!({ key: value });
        let query = "subscription { privateTicks }";
        let mut got = client(protocol, url, query, Some(params), &["--report-close"]).await;
        let end = got.pop().expect("a last line");
        assert_eq!(end, expected_end, "{protocol}");
        // Events came while the token was valid, in order.
        assert!(!got.is_empty(), "{protocol}: no event before the expiry");
        let numbered: Vec<Value> = (1..=got.len())
            .map(|i| json!({ "data": { "privateTicks": i } }))
            .collect();
        assert_eq!(got, numbered, "{protocol}");
    }
}

/// A second gateway on the same key reading the token from `authToken`.
async fn setup_with_key(behaviour: Behaviour, key: &TestKey) -> String {
    let dir = support::process::test_dir("ws-auth-expiry-legacy");
    let mut config = support::jwt::config(key, &dir);
    config.subscriptions.init_token_key = Some("authToken".to_owned());
    let subgraph = WsSubgraph::start(behaviour).await;
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ws_auth/supergraph.graphql");
    let text = std::fs::read_to_string(fixture)
        .expect("tests/ws_auth/supergraph.graphql")
        .replace("http://127.0.0.1:4200", &subgraph.base_url);
    let supergraph = Supergraph::parse(&text).expect("the ticks supergraph loads");
    let http = support::start_gateway_with_config(config, supergraph).await;
    // The subgraph lives as long as the test's runtime.
    std::mem::forget(subgraph);
    http.replacen("http://", "ws://", 1)
}

#[tokio::test]
async fn the_gateway_pings_and_closes_a_client_that_does_not_answer() {
    use futures::StreamExt;
    use tokio_tungstenite::tungstenite::Message;
    let setup = setup("ws-unanswered-pings", ticks(1), |config| {
        config.subscriptions.ping_interval = Some(Duration::from_millis(200));
        config.subscriptions.pong_timeout = Duration::from_millis(300);
    })
    .await;
    let mut socket = support::ws::initialised(&setup.ws).await;
    // Not read, so never answered (tungstenite pongs as it reads), for well over a ping
    // interval and its timeout.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let mut frames = Vec::new();
    loop {
        let next = tokio::time::timeout(Duration::from_secs(10), socket.next())
            .await
            .expect("the gateway ends the connection");
        match next {
            Some(Ok(Message::Ping(_))) => frames.push(json!("ping")),
            Some(Ok(Message::Close(frame))) => {
                let frame = frame.expect("a close frame");
                frames.push(
                    json!({ "close": u16::from(frame.code), "reason": frame.reason.as_str() }),
                );
                break;
            }
            Some(Ok(other)) => panic!("unexpected {other:?}"),
            // The pong tungstenite writes on reading the ping may meet the closed socket.
            None | Some(Err(_)) => {
                frames.push(json!("dropped"));
                break;
            }
        }
    }
    // One ping, unanswered, then the close (no second ping while one is unanswered).
    assert_eq!(frames[0], "ping", "{frames:?}");
    assert_eq!(frames.len(), 2, "{frames:?}");
    let closed =
        json!({ "close": 1008, "reason": "no pong within 300ms (subscriptions.pong_timeout)" });
    assert!(frames[1] == closed || frames[1] == "dropped", "{frames:?}");
}

#[tokio::test]
async fn clients_answering_pings_and_reading_keep_alives_stay_connected() {
    let slow = Behaviour {
        interval: Duration::from_millis(300),
        ..ticks(8)
    };
    let setup = setup("ws-answered-pings", slow, |config| {
        config.subscriptions.ping_interval = Some(Duration::from_millis(100));
        config.subscriptions.pong_timeout = Duration::from_millis(500);
    })
    .await;
    // ws (the `ws` package) answers every ping frame; the legacy client closes its socket
    // when no `ka` came within its timeout, here 1 s of a 2.4 s subscription.
    let runs = [
        ("ws", &[][..]),
        ("legacy", &["--keep-alive-timeout-ms", "1000"][..]),
    ];
    for (protocol, extra) in runs {
        let got = client(protocol, &setup.ws, "subscription { ticks }", None, extra).await;
        assert_eq!(got, completed("ticks", 8), "{protocol}");
    }
}
