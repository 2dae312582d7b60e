//! big-response, many-plans and apollo: the subgraphs, joined by hand the way a
//! gateway would, agree with the monolith; built-in latencies hold.

mod common;

use std::time::{Duration, Instant};

use graphfleet_bench_model::Set;
use graphfleet_bench_subgraphs::{Mode, Options};
use serde_json::{Value, json};

async fn data(client: &common::HttpClient, url: &str, query: &str, variables: Value) -> Value {
    let (status, body) = common::graphql(client, url, query, variables).await;
    let response = common::parse(&body);
    assert_eq!(status, 200, "{url}: {}", response["errors"]);
    assert!(
        response.get("errors").is_none(),
        "{url}: {}",
        response["errors"]
    );
    response["data"].clone()
}

#[tokio::test]
async fn big_response_entities_join_to_the_monolith_answer() {
    let subgraphs = common::start(Set::BigResponse, Mode::Subgraphs, Options::default()).await;
    let monolith = common::start(Set::BigResponse, Mode::Monolith, Options::default()).await;
    let client = common::client();
    let base = subgraphs.base_url();

    let payload = "{ nodes(n: 3) { id int string floats nodes(n: 2) { id float ints strings } } }";
    let mut joined = data(&client, &format!("{base}/sub0"), payload, Value::Null).await;
    let ids: Vec<Value> = joined["nodes"]
        .as_array()
        .expect("nodes list")
        .iter()
        .map(|n| json!({ "__typename": "Node", "id": n["id"] }))
        .collect();
    let names = "query($r: [_Any!]!) { _entities(representations: $r) { ... on Node { name } } }";
    let names = data(&client, &format!("{base}/sub1"), names, json!({ "r": ids })).await;
    for (node, entity) in joined["nodes"]
        .as_array_mut()
        .expect("nodes")
        .iter_mut()
        .zip(names["_entities"].as_array().expect("entities"))
    {
        node["name"] = entity["name"].clone();
    }
    let full =
        "{ nodes(n: 3) { id int string floats nodes(n: 2) { id float ints strings } name } }";
    let expected = data(
        &client,
        &format!("{}/graphql", monolith.base_url()),
        full,
        Value::Null,
    )
    .await;
    assert_eq!(joined, expected);

    let extra = "query($r: [_Any!]!) { _entities(representations: $r) { ... on Node { extra } } }";
    let start = Instant::now();
    let got = data(
        &client,
        &format!("{base}/sub2"),
        extra,
        json!({ "r": [{ "__typename": "Node", "id": "7" }] }),
    )
    .await;
    assert!(
        start.elapsed() >= Duration::from_millis(100),
        "sub2 has a built-in 100 ms latency"
    );
    assert_eq!(got["_entities"], json!([{ "extra": "extra-7" }]));
}

#[tokio::test]
async fn big_response_intrinsic_delay_can_be_overridden() {
    let opts = Options {
        delays: vec![
            ("sub2".into(), Duration::ZERO),
            ("sub0".into(), Duration::from_millis(120)),
        ],
    };
    let server = common::start(Set::BigResponse, Mode::Subgraphs, opts).await;
    let client = common::client();
    let start = Instant::now();
    data(
        &client,
        &format!("{}/sub0", server.base_url()),
        "{ nodes(n: 1) { id } }",
        Value::Null,
    )
    .await;
    assert!(start.elapsed() >= Duration::from_millis(120));
    let (_, body) = common::send(
        &client,
        "GET",
        &format!("{}/stats", server.base_url()),
        Vec::new(),
    )
    .await;
    assert_eq!(
        common::parse(&body)["requests"],
        json!({ "sub0": 1, "sub1": 0, "sub2": 0 })
    );
}

#[tokio::test]
async fn many_plans_subgraphs_agree_on_shared_fields_under_every_key() {
    let subgraphs = common::start(Set::ManyPlans, Mode::Subgraphs, Options::default()).await;
    let monolith = common::start(Set::ManyPlans, Mode::Monolith, Options::default()).await;
    let client = common::client();
    let expected = data(
        &client,
        &format!("{}/graphql", monolith.base_url()),
        "{ users { id email name age bio karma } posts { id slug title body score } }",
        Value::Null,
    )
    .await;
    let user = &expected["users"][3];
    let post = &expected["posts"][7];
    let mut sources = 0;
    for def in Set::ManyPlans.subgraphs() {
        let url = format!("{}/{}", subgraphs.base_url(), def.name);
        for (typename, key, value, object) in [
            ("User", "id", &user["id"], user),
            ("User", "email", &user["email"], user),
            ("Post", "id", &post["id"], post),
            ("Post", "slug", &post["slug"], post),
        ] {
            let fields = object.as_object().expect("an object");
            // Ask this subgraph for every field of the object it defines.
            let known: Vec<&String> = fields
                .keys()
                .filter(|f| def.sdl.contains(&format!("  {f}: ")))
                .collect();
            let selection = known
                .iter()
                .map(|f| f.as_str())
                .collect::<Vec<_>>()
                .join(" ");
            let query = format!(
                "query($r: [_Any!]!) {{ _entities(representations: $r) {{ ... on {typename} {{ {selection} }} }} }}"
            );
            let got = data(
                &client,
                &url,
                &query,
                json!({ "r": [{ "__typename": typename, key: value }] }),
            )
            .await;
            for field in known {
                assert_eq!(
                    got["_entities"][0][field], fields[field],
                    "{} {typename} by {key}: {field}",
                    def.name
                );
                sources += 1;
            }
        }
    }
    assert!(
        sources > 60,
        "fields overlap across subgraphs ({sources} checks)"
    );
}

#[tokio::test]
async fn apollo_chain_needs_six_sequential_fetches() {
    let subgraphs = common::start(Set::Apollo, Mode::Subgraphs, Options::default()).await;
    let monolith = common::start(Set::Apollo, Mode::Monolith, Options::default()).await;
    let client = common::client();
    let base = subgraphs.base_url();
    let start = Instant::now();
    let root = data(
        &client,
        &format!("{base}/chain1"),
        "{ chain { id s1 c1_16 } }",
        Value::Null,
    )
    .await;
    let mut previous = root["chain"]["s1"].clone();
    let mut last = Value::Null;
    for k in 2..=6 {
        let query = format!(
            "query($r: [_Any!]!) {{ _entities(representations: $r) {{ ... on Step {{ s{k} c{k}_01 }} }} }}"
        );
        let rep = json!({ "r": [{ "__typename": "Step", "id": root["chain"]["id"], format!("s{}", k - 1): previous }] });
        let got = data(&client, &format!("{base}/chain{k}"), &query, rep).await;
        previous = got["_entities"][0][format!("s{k}")].clone();
        last = got["_entities"][0].clone();
    }
    assert!(
        start.elapsed() >= Duration::from_millis(240),
        "six fetches of 40 ms each"
    );
    let expected = data(
        &client,
        &format!("{}/graphql", monolith.base_url()),
        "{ chain { s6 c6_01 } }",
        Value::Null,
    )
    .await;
    assert_eq!(last, expected["chain"]);
    assert_eq!(expected["chain"]["s6"], "1>2>3>4>5>6");

    // Without the required field, the chain step answers with an error, not a guess.
    let query = "query($r: [_Any!]!) { _entities(representations: $r) { ... on Step { s3 } } }";
    let (status, body) = common::graphql(
        &client,
        &format!("{base}/chain3"),
        query,
        json!({ "r": [{ "__typename": "Step", "id": "1" }] }),
    )
    .await;
    let response = common::parse(&body);
    assert_eq!(status, 200);
    assert_eq!(response["data"]["_entities"], json!([null]));
    assert!(
        response["errors"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("s2"))
    );
}

#[tokio::test]
async fn apollo_large_query_has_one_hundred_fields() {
    let server = common::start(Set::Apollo, Mode::Subgraphs, Options::default()).await;
    let client = common::client();
    let query = common::query_file("apollo", "large-delayed");
    let start = Instant::now();
    let got = data(
        &client,
        &format!("{}/delayed", server.base_url()),
        &query,
        Value::Null,
    )
    .await;
    assert!(start.elapsed() >= Duration::from_millis(40));
    assert_eq!(got["largeDelayed"].as_object().map(|o| o.len()), Some(100));
    let got = data(
        &client,
        &format!("{}/single", server.base_url()),
        "{ hello }",
        Value::Null,
    )
    .await;
    assert_eq!(got, json!({ "hello": "world" }));
}
