//! The subgraph transport against real hyper servers on loopback: HTTP/2 with prior
//! knowledge (h2c) per subgraph, compressed subgraph answers decoded under the size
//! cap, compressed request bodies; and HTTP/2 from clients on the plain listener.

mod support;

use graphfleet_gateway::config::{Config, Http2Mode, RequestCompression, SubgraphConfig};
use graphfleet_gateway::supergraph::Supergraph;
use support::front::{self, Answer, Front, Versions};
use support::json_subgraph::JsonSubgraphs;

/// Spans the `keys` fixture's subgraphs, so answers are merged.
const ORDERS: &str =
    "query Orders { orders { id storeId status item { sku title vendor { id } } } }";

/// The `keys` subgraphs behind a front; the supergraph routing every subgraph to it.
async fn fronted(versions: Versions, answer: Answer) -> (JsonSubgraphs, Front, String) {
    let (subgraphs, text) = support::fixture_subgraphs("keys").await;
    let front = front::start(subgraphs.base_url.clone(), versions, None, answer).await;
    let text = text.replace(&subgraphs.base_url, &format!("http://{}", front.addr));
    (subgraphs, front, text)
}

async fn gateway(config: Config, supergraph: &str) -> String {
    let supergraph = Supergraph::parse(supergraph).expect("supergraph loads");
    support::start_gateway_with_config(config, supergraph).await
}

async fn orders(url: &str) -> serde_json::Value {
    let reply = support::post_graphql(&support::client(), url, ORDERS, serde_json::json!({})).await;
    serde_json::from_slice(&reply.body).expect("JSON answer")
}

/// The answer through a plain HTTP/1.1 front, the reference for the others.
async fn reference() -> serde_json::Value {
    let (_subgraphs, _front, text) = fronted(Versions::Both, Answer::Plain).await;
    let body = orders(&gateway(Config::default(), &text).await).await;
    assert!(body.get("errors").is_none(), "{body}");
    assert!(
        body["data"]["orders"][0]["item"]["title"].is_string(),
        "{body}"
    );
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_h2c_only_subgraph_is_reached_with_prior_knowledge() {
    let expected = reference().await;
    let (_subgraphs, front, text) = fronted(Versions::H2Only, Answer::Plain).await;

    let mut config = Config::default();
    config.traffic.http2 = Http2Mode::PriorKnowledge;
    assert_eq!(orders(&gateway(config, &text).await).await, expected);
    let seen = front.seen.lock().expect("seen").clone();
    assert!(seen.len() >= 2, "{seen:?}");
    assert!(
        seen.iter().all(|s| s.version == http::Version::HTTP_2),
        "{seen:?}"
    );

    // Set for each subgraph over an HTTP/1.1 default.
    let mut config = Config::default();
    for name in ["accounts", "billing", "orders", "shipping"] {
        let sg = SubgraphConfig {
            http2: Some(Http2Mode::PriorKnowledge),
            ..SubgraphConfig::default()
        };
        config.subgraphs.insert(name.to_owned(), sg);
    }
    assert_eq!(orders(&gateway(config, &text).await).await, expected);

    // HTTP/1.1 to a server that only speaks h2c: the fetch fails as an HTTP error.
    let before = front.seen.lock().expect("seen").len();
    let body = orders(&gateway(Config::default(), &text).await).await;
    assert_eq!(
        body["errors"][0]["extensions"]["code"], "SUBREQUEST_HTTP_ERROR",
        "{body}"
    );
    assert_eq!(body["data"], serde_json::Value::Null, "{body}");
    let message = body["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(message.contains("set http2: prior_knowledge"), "{body}");
    assert_eq!(
        front.seen.lock().expect("seen").len(),
        before,
        "nothing was served"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compressed_subgraph_answers_are_decoded_and_merged() {
    let expected = reference().await;
    for encoding in ["gzip", "br", "zstd"] {
        let (_subgraphs, front, text) = fronted(Versions::Both, Answer::Encoded(encoding)).await;
        let mut config = Config::default();
        config.traffic.accept_compressed_responses = true;
        let body = orders(&gateway(config, &text).await).await;
        assert_eq!(body, expected, "{encoding}");
        let seen = front.seen.lock().expect("seen").clone();
        assert!(seen.len() >= 2, "{seen:?}");
        for s in &seen {
            let accepted = s.accept_encoding.as_deref().unwrap_or_default();
            assert!(accepted.contains(encoding), "{encoding}: {accepted}");
        }
    }

    // Not asked for by default: `identity`, and the front answers plain.
    let (_subgraphs, front, text) = fronted(Versions::Both, Answer::Encoded("gzip")).await;
    assert_eq!(
        orders(&gateway(Config::default(), &text).await).await,
        expected
    );
    let seen = front.seen.lock().expect("seen").clone();
    assert!(
        seen.iter()
            .all(|s| s.accept_encoding.as_deref() == Some("identity")),
        "{seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gzip_bomb_is_cut_at_the_decoded_size_cap() {
    const CAP: usize = 1024 * 1024;
    // 64 MiB of spaces: about 64 KiB compressed, far under the cap.
    let bomb = Answer::GzipBomb { size: 64 * CAP };
    assert!(front::encode("gzip", &vec![b' '; 64 * CAP]).len() < CAP / 8);
    let (_subgraphs, _front, text) = fronted(Versions::Both, bomb).await;
    let mut config = Config::default();
    config.traffic.max_subgraph_response_bytes = CAP;
    let body = orders(&gateway(config, &text).await).await;
    assert_eq!(
        body["errors"][0]["extensions"]["code"], "SUBREQUEST_RESPONSE_TOO_LARGE",
        "{body}"
    );
    let message = body["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(message.contains(&CAP.to_string()), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_bodies_are_compressed_when_configured() {
    let (_subgraphs, front, text) = fronted(Versions::Both, Answer::Plain).await;
    let expected = orders(&gateway(Config::default(), &text).await).await;
    let plain: Vec<_> = std::mem::take(&mut *front.seen.lock().expect("seen"));
    assert!(plain.len() >= 2, "{plain:?}");
    assert!(plain.iter().all(|s| s.content_encoding.is_none()));

    for (setting, encoding) in [
        (RequestCompression::Gzip, "gzip"),
        (RequestCompression::Br, "br"),
        (RequestCompression::Zstd, "zstd"),
    ] {
        let mut config = Config::default();
        config.traffic.compress_requests = setting;
        assert_eq!(orders(&gateway(config, &text).await).await, expected);
        let seen: Vec<_> = std::mem::take(&mut *front.seen.lock().expect("seen"));
        assert_eq!(seen.len(), plain.len(), "{encoding}");
        for (s, p) in seen.iter().zip(&plain) {
            assert_eq!(s.content_encoding.as_deref(), Some(encoding));
            assert_ne!(s.raw, s.body, "{encoding}: sent encoded");
            assert_eq!(s.body, p.body, "{encoding}: decodes to the plain request");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_listener_serves_h2c_prior_knowledge_clients() {
    let (_subgraphs, text) = support::fixture_subgraphs("keys").await;
    let url = gateway(Config::default(), &text).await;
    let client: support::HttpClient =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .http2_only(true)
            .build_http();
    let request = hyper::Request::post(&url)
        .header("content-type", "application/json")
        .body(http_body_util::Full::new(bytes::Bytes::from_static(
            br#"{"query":"{ users { id } }"}"#,
        )))
        .expect("request");
    let response = client.request(request).await.expect("h2c exchange");
    assert_eq!(response.version(), http::Version::HTTP_2);
    let body = http_body_util::BodyExt::collect(response.into_body())
        .await
        .expect("body")
        .to_bytes();
    let body: serde_json::Value = serde_json::from_slice(&body).expect("JSON answer");
    assert_eq!(
        body,
        serde_json::json!({"data": {"users": [{"id": "u1"}, {"id": "u2"}]}})
    );
}
