//! The fed subgraphs over real HTTP: SDL, entities, root fields, stats, delays, errors.

mod common;

use std::time::{Duration, Instant};

use graphfleet_bench_model::Set;
use graphfleet_bench_subgraphs::{Mode, Options};
use serde_json::{Value, json};

const USERS: &str = "query($representations: [_Any!]!) { _entities(representations: $representations) { __typename ... on User { id name username birthday } } }";
const PRODUCTS: &str = "query($representations: [_Any!]!) { _entities(representations: $representations) { __typename ... on Product { upc name price weight } } }";

async fn fed() -> (graphfleet_bench_subgraphs::Handle, common::HttpClient) {
    (
        common::start(Set::Fed, Mode::Subgraphs, Options::default()).await,
        common::client(),
    )
}

#[tokio::test]
async fn every_subgraph_serves_its_sdl() {
    let (server, client) = fed().await;
    for def in Set::Fed.subgraphs() {
        let url = format!("{}/{}", server.base_url(), def.name);
        let (status, body) =
            common::graphql(&client, &url, "{ _service { sdl } }", Value::Null).await;
        assert_eq!(status, 200, "{}", def.name);
        assert_eq!(
            common::parse(&body)["data"]["_service"]["sdl"],
            def.sdl,
            "{}",
            def.name
        );
    }
}

#[tokio::test]
async fn entities_resolve_single_and_batched() {
    let (server, client) = fed().await;
    let accounts = format!("{}/accounts", server.base_url());
    let single = json!({ "representations": [{ "__typename": "User", "id": "3" }] });
    let (status, body) = common::graphql(&client, &accounts, USERS, single).await;
    assert_eq!(status, 200);
    assert_eq!(
        common::parse(&body)["data"]["_entities"],
        json!([{ "__typename": "User", "id": "3", "name": "Kamil Kisiela", "username": "kamilkisiela", "birthday": 1234567890 }])
    );

    let products = format!("{}/products", server.base_url());
    let batch = json!({ "representations": [
        { "__typename": "Product", "upc": "2" },
        { "__typename": "Product", "upc": "404" },
        { "__typename": "Product", "upc": "9" },
    ] });
    let (status, body) = common::graphql(&client, &products, PRODUCTS, batch).await;
    assert_eq!(status, 200);
    let response = common::parse(&body);
    assert_eq!(
        response["data"]["_entities"],
        json!([
            { "__typename": "Product", "upc": "2", "name": "Couch", "price": 1299, "weight": 1000 },
            null,
            { "__typename": "Product", "upc": "9", "name": "Sofa", "price": 9999, "weight": 800 },
        ])
    );
}

#[tokio::test]
async fn reviews_and_inventory_keep_the_published_behaviour() {
    let (server, client) = fed().await;
    let reviews = format!("{}/reviews", server.base_url());
    let query = "query($r: [_Any!]!) { _entities(representations: $r) { ... on User { reviews { id } } ... on Product { reviews { id author { id username } } } } }";
    let reps = json!({ "r": [{ "__typename": "User", "id": "5" }, { "__typename": "Product", "upc": "4" }] });
    let (_, body) = common::graphql(&client, &reviews, query, reps).await;
    let author = json!({ "id": "1", "username": "urigo" });
    assert_eq!(
        common::parse(&body)["data"]["_entities"],
        json!([
            { "reviews": [{ "id": "1" }, { "id": "2" }] },
            { "reviews": [{ "id": "10", "author": author }, { "id": "11", "author": author }] },
        ])
    );

    let inventory = format!("{}/inventory", server.base_url());
    let query = "query($r: [_Any!]!) { _entities(representations: $r) { ... on Product { upc inStock shippingEstimate } } }";
    let reps =
        json!({ "r": [{ "__typename": "Product", "upc": "1", "price": 899, "weight": 100 }] });
    let (_, body) = common::graphql(&client, &inventory, query, reps).await;
    assert_eq!(
        common::parse(&body)["data"]["_entities"],
        json!([{ "upc": "1", "inStock": true, "shippingEstimate": null }])
    );
}

#[tokio::test]
async fn root_fields_and_arguments() {
    let (server, client) = fed().await;
    let products = format!("{}/products", server.base_url());
    let (_, body) =
        common::graphql(&client, &products, "{ topProducts { upc } }", Value::Null).await;
    let upcs = common::parse(&body)["data"]["topProducts"]
        .as_array()
        .map(Vec::len);
    assert_eq!(upcs, Some(5), "topProducts defaults to 5");
    let (_, body) = common::graphql(
        &client,
        &products,
        "query($n: Int) { top: topProducts(first: $n) { upc name } }",
        json!({ "n": 2 }),
    )
    .await;
    assert_eq!(
        common::parse(&body)["data"],
        json!({ "top": [{ "upc": "1", "name": "Table" }, { "upc": "2", "name": "Couch" }] })
    );
    let accounts = format!("{}/accounts", server.base_url());
    let (_, body) = common::graphql(
        &client,
        &accounts,
        "{ me { username } user(id: \"6\") { name } nobody: user(id: \"7\") { name } }",
        Value::Null,
    )
    .await;
    assert_eq!(
        common::parse(&body)["data"],
        json!({ "me": { "username": "urigo" }, "user": { "name": "Laurin Quast" }, "nobody": null })
    );
}

#[tokio::test]
async fn stats_count_requests_per_subgraph_and_reset() {
    let (server, client) = fed().await;
    let base = server.base_url();
    for (subgraph, times) in [("accounts", 3), ("reviews", 1)] {
        for _ in 0..times {
            common::graphql(
                &client,
                &format!("{base}/{subgraph}"),
                "{ __typename }",
                Value::Null,
            )
            .await;
        }
    }
    let (status, body) = common::send(&client, "GET", &format!("{base}/stats"), Vec::new()).await;
    assert_eq!(status, 200);
    let stats = common::parse(&body);
    assert_eq!(stats["total"], 4);
    assert_eq!(
        stats["requests"],
        json!({ "accounts": 3, "inventory": 0, "products": 0, "reviews": 1 })
    );
    let (status, _) =
        common::send(&client, "POST", &format!("{base}/stats/reset"), Vec::new()).await;
    assert_eq!(status, 200);
    let (_, body) = common::send(&client, "GET", &format!("{base}/stats"), Vec::new()).await;
    assert_eq!(common::parse(&body)["total"], 0);
}

#[tokio::test]
async fn delays_apply_to_the_named_subgraph_only() {
    let opts = Options {
        delays: vec![("inventory".into(), Duration::from_millis(200))],
    };
    let server = common::start(Set::Fed, Mode::Subgraphs, opts).await;
    let client = common::client();
    let timed = |subgraph: &'static str| {
        let url = format!("{}/{subgraph}", server.base_url());
        let client = client.clone();
        async move {
            let start = Instant::now();
            let (status, _) = common::graphql(&client, &url, "{ __typename }", Value::Null).await;
            assert_eq!(status, 200);
            start.elapsed()
        }
    };
    assert!(timed("inventory").await >= Duration::from_millis(200));
    assert!(timed("accounts").await < Duration::from_millis(200));

    let unknown = Options {
        delays: vec![("nope".into(), Duration::from_millis(1))],
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let error =
        graphfleet_bench_subgraphs::spawn(Set::Fed, Mode::Subgraphs, listener, unknown).err();
    assert!(error.is_some_and(|e| e.to_string().contains("nope")));
}

/// Bad input of every kind gets GraphQL errors, and the server keeps serving.
#[tokio::test]
async fn bad_requests_get_graphql_errors() {
    let (server, client) = fed().await;
    let accounts = format!("{}/accounts", server.base_url());
    let request_errors: [(&str, Vec<u8>); 6] = [
        ("malformed JSON", b"{\"query\": ".to_vec()),
        ("not an object", b"[1, 2]".to_vec()),
        ("no query", b"{}".to_vec()),
        ("syntax error", br#"{"query": "{ me { "}"#.to_vec()),
        (
            "unknown field",
            br#"{"query": "{ me { email } }"}"#.to_vec(),
        ),
        (
            "unknown operation",
            br#"{"query": "query A { me { id } }", "operationName": "B"}"#.to_vec(),
        ),
    ];
    for (case, body) in request_errors {
        let (status, body) = common::send(&client, "POST", &accounts, body).await;
        assert_eq!(status, 400, "{case}");
        let errors = &common::parse(&body)["errors"];
        assert!(
            errors[0]["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{case}: {errors}"
        );
    }

    let bad_representations = [
        ("not a list", json!({ "representations": "User" })),
        ("no typename", json!({ "representations": [{ "id": "1" }] })),
        (
            "no key",
            json!({ "representations": [{ "__typename": "User" }] }),
        ),
        (
            "object key",
            json!({ "representations": [{ "__typename": "User", "id": {} }] }),
        ),
        (
            "unknown typename",
            json!({ "representations": [{ "__typename": "Review", "id": "1" }] }),
        ),
    ];
    for (case, variables) in bad_representations {
        let (status, body) = common::graphql(&client, &accounts, USERS, variables).await;
        let response = common::parse(&body);
        assert!(status == 200 || status == 400, "{case}");
        assert!(
            response["errors"][0]["message"].is_string(),
            "{case}: {response}"
        );
    }
    let (status, body) = common::graphql(&client, &accounts, "{ me { id } }", Value::Null).await;
    assert_eq!(
        (status, common::parse(&body)["data"]["me"]["id"].clone()),
        (200, json!("1"))
    );

    let (status, _) = common::send(
        &client,
        "POST",
        &format!("{}/nowhere", server.base_url()),
        Vec::new(),
    )
    .await;
    assert_eq!(status, 404);
    let (status, _) = common::send(&client, "GET", &accounts, Vec::new()).await;
    assert_eq!(status, 405);
}

/// Gateways may talk HTTP/2 with prior knowledge (h2c) to subgraphs.
#[tokio::test]
async fn serves_h2c_with_prior_knowledge() {
    use http_body_util::{BodyExt, Full};
    use hyper_util::rt::{TokioExecutor, TokioIo};

    let (server, _) = fed().await;
    let stream = tokio::net::TcpStream::connect(server.addr())
        .await
        .expect("connect");
    let (mut sender, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .expect("h2 handshake");
    tokio::spawn(connection);
    let body = json!({ "query": "{ me { username } }" }).to_string();
    let request = hyper::Request::post(format!("{}/accounts", server.base_url()))
        .header("content-type", "application/json")
        .body(Full::new(bytes::Bytes::from(body)))
        .expect("request");
    let response = sender.send_request(request).await.expect("h2 response");
    assert_eq!(response.version(), hyper::Version::HTTP_2);
    let body = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    assert_eq!(&body[..], br#"{"data":{"me":{"username":"urigo"}}}"#);
}
