//! Every scenario query of every set runs on the set's monolith without errors.

mod common;

use graphfleet_bench_model::sets::ALL;
use graphfleet_bench_subgraphs::{Mode, Options};
use serde_json::Value;

#[tokio::test]
async fn every_scenario_runs_on_its_monolith() {
    let client = common::client();
    for set in ALL {
        let server = common::start(set, Mode::Monolith, Options::default()).await;
        let dir = common::sets_dir().join(set.name()).join("queries");
        let mut scenarios = 0;
        for entry in std::fs::read_dir(&dir).expect("read queries/") {
            let path = entry.expect("dir entry").path();
            if path.extension().is_none_or(|e| e != "graphql") {
                continue;
            }
            let query = std::fs::read_to_string(&path).expect("read query");
            let name = path
                .file_stem()
                .and_then(|s| s.to_str())
                .expect("a file name");
            assert!(
                set.scenarios().contains(&(name, query.as_str())),
                "{name} missing from Set::scenarios"
            );
            let variables = std::fs::read(path.with_extension("variables.json"))
                .map(|b| common::parse(&b))
                .unwrap_or(Value::Null);
            let url = format!("{}/graphql", server.base_url());
            if query.trim_start().starts_with("subscription") {
                subscription_event(&client, &url, &query).await;
                scenarios += 1;
                continue;
            }
            let (status, body) = common::graphql(&client, &url, &query, variables).await;
            let response = common::parse(&body);
            assert_eq!(status, 200, "{}: {}", path.display(), response["errors"]);
            assert!(
                response.get("errors").is_none(),
                "{}: {}",
                path.display(),
                response["errors"]
            );
            assert!(response["data"].is_object(), "{}", path.display());
            println!("{} {}: {} bytes", set.name(), path.display(), body.len());
            scenarios += 1;
        }
        assert_eq!(
            scenarios,
            set.scenarios().len(),
            "{}: Set::scenarios lists every query file",
            set.name()
        );
        server.shutdown().await;
    }
}

/// A subscription scenario gets one good event (over GraphQL over SSE, `limit: 1`), with
/// `publishedAt`, its emission time, set.
async fn subscription_event(client: &common::HttpClient, url: &str, query: &str) {
    let once = query.replacen("reviewAdded {", "reviewAdded(limit: 1) {", 1);
    assert_ne!(once, query, "the subscription selects reviewAdded");
    let body = serde_json::to_vec(&serde_json::json!({ "query": once })).expect("JSON");
    let request = hyper::Request::builder()
        .method("POST")
        .uri(url)
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .body(http_body_util::Full::new(bytes::Bytes::from(body)))
        .expect("a valid request");
    let stream = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        let response = client.request(request).await.expect("HTTP exchange");
        assert_eq!(response.status(), 200);
        http_body_util::BodyExt::collect(response.into_body())
            .await
            .expect("the stream ends after one event")
            .to_bytes()
    })
    .await
    .expect("one event within 30 s");
    let text = String::from_utf8(stream.to_vec()).expect("UTF-8 stream");
    let data = text
        .lines()
        .find_map(|l| {
            l.strip_prefix("data: ")
                .filter(|d| d.contains("reviewAdded"))
        })
        .unwrap_or_else(|| panic!("no event in {text}"));
    let event = common::parse(data.as_bytes());
    assert!(event.get("errors").is_none(), "{event}");
    let review = &event["data"]["reviewAdded"];
    assert!(review["publishedAt"].is_f64(), "{event}");
    assert!(review["product"]["name"].is_string(), "{event}");
    println!("subscription event: {event}");
}

#[test]
fn supergraph_at_rewrites_every_routing_url() {
    for set in ALL {
        let rewritten = set.supergraph_at("http://10.0.0.9:1234/");
        assert!(
            !rewritten.contains(graphfleet_bench_model::sets::DEFAULT_BASE_URL),
            "{}",
            set.name()
        );
        for def in set.subgraphs() {
            assert!(
                rewritten.contains(&format!("url: \"http://10.0.0.9:1234/{}\"", def.name)),
                "{} {}",
                set.name(),
                def.name
            );
        }
    }
}
