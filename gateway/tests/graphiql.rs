//! GraphiQL in the gateway: the page and its assets over real HTTP (who gets the page,
//! the settings that turn it off, CSRF intact), then the page used in Debian's headless
//! Chromium (tools/browser/graphiql.mjs, puppeteer-core): it loads with no other host,
//! runs a query across the `fed` subgraphs and shows the gateway's answer, and runs a
//! subscription over the WebSocket and shows its last event, the one the monolith sends.

mod support;

use graphfleet_bench_model::Set;
use graphfleet_bench_subgraphs::{Handle, Mode, Options, StreamOptions};
use graphfleet_gateway::config::Config;
use graphfleet_gateway::supergraph::Supergraph;
use serde_json::{Value, json};
use std::time::Duration;
use support::Reply;

const BROWSER_ACCEPT: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
const QUERY: &str = "{ topProducts(first: 2) { upc name price reviews { body author { name } } } }";
const SUBSCRIPTION: &str =
    "subscription NewReviews { reviewAdded(limit: 3) { id body product { name } } }";

async fn fed(mode: Mode) -> Handle {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind an ephemeral loopback port");
    let stream = StreamOptions {
        event_interval: Duration::from_millis(100),
        ..StreamOptions::default()
    };
    graphfleet_bench_subgraphs::spawn_with(Set::Fed, mode, listener, Options::default(), stream)
        .expect("the fed servers start")
}

/// A gateway over the `fed` subgraphs: its GraphQL URL, and the subgraphs (kept alive).
async fn gateway(config: Config) -> (String, Handle) {
    let subgraphs = fed(Mode::Subgraphs).await;
    let sdl = Set::Fed.supergraph_at(&subgraphs.base_url());
    let supergraph = Supergraph::parse(&sdl).expect("the fed supergraph loads");
    (
        support::start_gateway_with_config(config, supergraph).await,
        subgraphs,
    )
}

async fn get(url: &str, headers: &[(&str, &str)]) -> Reply {
    support::request(&support::client(), "GET", url, headers, Vec::new()).await
}

fn header<'a>(reply: &'a Reply, name: &str) -> &'a str {
    reply
        .headers
        .get(name)
        .map_or("", |v| v.to_str().expect("ASCII"))
}

#[tokio::test]
async fn a_browser_gets_the_page_and_its_assets_from_the_binary() {
    let (url, _subgraphs) = gateway(Config::default()).await;
    let page = get(&url, &[("accept", BROWSER_ACCEPT)]).await;
    assert_eq!(page.status, 200);
    assert_eq!(page.content_type, "text/html; charset=utf-8");
    assert!(header(&page, "content-security-policy").contains("script-src 'self'"));
    let html = String::from_utf8(page.body.to_vec()).expect("UTF-8 HTML");
    assert!(html.contains(r#"data-endpoint="/graphql""#), "{html}");
    assert!(html.contains(r#"data-websocket="/graphql""#), "{html}");
    for asset in [
        "graphiql.min.js",
        "graphiql.min.css",
        "react.production.min.js",
        "react-dom.production.min.js",
        "start.js",
    ] {
        let src = format!("/graphql/graphiql/{asset}");
        assert!(html.contains(&src), "the page loads {src}");
        let plain = get(&format!("{url}/graphiql/{asset}"), &[]).await;
        assert_eq!(plain.status, 200, "{asset}");
        assert_eq!(header(&plain, "content-encoding"), "", "{asset}");
        let gzipped = get(
            &format!("{url}/graphiql/{asset}"),
            &[("accept-encoding", "gzip, br")],
        )
        .await;
        let gzip = if asset == "start.js" { "" } else { "gzip" };
        assert_eq!(header(&gzipped, "content-encoding"), gzip, "{asset}");
        let decoded = gunzip_if(&gzipped);
        assert_eq!(
            decoded, plain.body,
            "{asset}: the gzipped bytes decode to the plain ones"
        );
    }
    let missing = get(&format!("{url}/graphiql/nothing.js"), &[]).await;
    assert_eq!(missing.status, 404);

    // What is not a browser's plain GET is GraphQL as before.
    let json_get = get(&url, &[("accept", "application/json")]).await;
    assert_eq!(
        json_get.status, 400,
        "a GET without a query is a GraphQL error"
    );
    let with_query = get(
        &format!("{url}?query=%7B__typename%7D"),
        &[
            ("accept", BROWSER_ACCEPT),
            ("apollo-require-preflight", "1"),
        ],
    )
    .await;
    assert_eq!(with_query.status, 200);
    assert_eq!(with_query.body, r#"{"data":{"__typename":"Query"}}"#);
}

#[tokio::test]
async fn settings_turn_the_page_off_and_csrf_still_holds() {
    let off = |graphiql: Option<bool>, introspection: bool| {
        let mut config = Config::default();
        config.graphiql.enabled = graphiql;
        config.limits.introspection = introspection;
        config
    };
    for (config, served) in [
        (off(Some(false), true), false),
        (off(None, false), false),
        (off(Some(true), false), true),
    ] {
        let (url, _subgraphs) = gateway(config).await;
        let page = get(&url, &[("accept", BROWSER_ACCEPT)]).await;
        assert_eq!(page.content_type == "text/html; charset=utf-8", served);
        assert_eq!(page.status == 200, served, "{:?}", page.body);
    }
    // The page's own requests are JSON POSTs; a form-like one is still refused.
    let (url, _subgraphs) = gateway(Config::default()).await;
    let simple = support::request(
        &support::client(),
        "POST",
        &url,
        &[("content-type", "text/plain")],
        br#"{"query":"{__typename}"}"#.to_vec(),
    )
    .await;
    assert_eq!(simple.status, 400, "{:?}", simple.body);
}

#[tokio::test]
async fn graphiql_runs_a_query_and_a_subscription_in_chromium() {
    let (url, _subgraphs) = gateway(Config::default()).await;
    let direct = support::request(
        &support::client(),
        "POST",
        &url,
        &[("content-type", "application/json")],
        serde_json::to_vec(&json!({ "query": QUERY })).expect("JSON"),
    )
    .await;
    let expected: Value = serde_json::from_slice(&direct.body).expect("a JSON answer");
    assert!(
        expected["data"]["topProducts"][1]["reviews"].is_array(),
        "{expected}"
    );
    let events = oracle_events().await;

    let dir = std::env::temp_dir().join(format!("graphfleet-graphiql-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a screenshot folder");
    let shot = dir.join("graphiql.png");
    let out = support::node_tool(vec![
        "browser/graphiql.mjs".into(),
        url,
        QUERY.into(),
        SUBSCRIPTION.into(),
        "--wait-for".into(),
        "topProducts".into(),
        "--wait-for".into(),
        "reviewAdded".into(),
        "--screenshot".into(),
        shot.display().to_string(),
    ])
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "graphiql.mjs failed: {stderr}");
    let seen: Value = serde_json::from_slice(&out.stdout).expect("graphiql.mjs prints JSON");
    assert_eq!(seen["title"], "graphfleet · GraphiQL");
    assert_eq!(seen["errors"], json!([]), "the page ran without errors");
    let shown = |i: usize| -> Value {
        let text = seen["answers"][i]
            .as_str()
            .expect("the response pane's text");
        serde_json::from_str(text).unwrap_or_else(|e| panic!("pane {i} is not JSON ({e}): {text}"))
    };
    assert_eq!(
        shown(0),
        expected,
        "the query's answer as the gateway gives it"
    );
    assert_eq!(
        Some(&shown(1)),
        events.last(),
        "the subscription's last event, as the monolith sends it"
    );
    let png = std::fs::read(&shot).expect("the screenshot was written");
    assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot");
    if std::env::var_os("GRAPHFLEET_KEEP_SCREENSHOT").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The body, decoded when it came gzipped.
fn gunzip_if(reply: &Reply) -> Vec<u8> {
    use std::io::Read as _;
    if header(reply, "content-encoding") != "gzip" {
        return reply.body.to_vec();
    }
    let mut plain = Vec::new();
    flate2::read::GzDecoder::new(&reply.body[..])
        .read_to_end(&mut plain)
        .expect("valid gzip");
    plain
}

/// The subscription's events straight from the `fed` monolith.
async fn oracle_events() -> Vec<Value> {
    let monolith = fed(Mode::Monolith).await;
    let url = format!("ws://{}/graphql", monolith.addr());
    let mut socket = support::ws::initialised(&url).await;
    let subscribe = json!({ "id": "o", "type": "subscribe", "payload": { "query": SUBSCRIPTION } });
    support::ws::send(&mut socket, subscribe).await;
    let mut events = Vec::new();
    loop {
        let message = support::ws::receive(&mut socket).await;
        match message["type"].as_str() {
            Some("next") => events.push(message["payload"].clone()),
            _ => {
                assert_eq!(message, json!({ "id": "o", "type": "complete" }));
                return events;
            }
        }
    }
}
