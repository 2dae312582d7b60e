//! Subgraph response headers over real HTTP: the gateway in front of `main` and
//! `faulty` (both served by the strict JSON subgraph, each answering with the headers
//! the test sets); `{ products { id name price } }` asks `main`, then `faulty` for the
//! prices, so the client's response headers are the rules' merge of both answers.

mod support;

use graphfleet_gateway::config::{Config, SubgraphConfig};
use graphfleet_gateway::supergraph::Supergraph;
use serde_json::json;
use support::fault_subgraph::{FAULTY_SDL, MAIN_SDL, SUPERGRAPH};
use support::json_subgraph::{self, JsonSubgraphs};

const QUERY: &str = "{ products { id name price } }";

/// Both subgraphs on one server; product 2 has no `sku` (a non-null field), so asking
/// for it is an error.
async fn subgraphs() -> JsonSubgraphs {
    let product = |id: &str, sku: Option<&str>| json!({"__typename": "Product", "id": id, "price": 10, "sku": sku});
    let data = json!({
        "main": { "Query": { "products": [
            { "__typename": "Product", "id": "1", "name": "Kettle" },
            { "__typename": "Product", "id": "2", "name": "Teapot" } ] } },
        "faulty": {
            "Query": { "top": product("9", Some("s9")) },
            "Mutation": { "bump": 1 },
            "entities": { "Product": [product("1", Some("s1")), product("2", None)] }
        }
    });
    let sdls = [("main", MAIN_SDL), ("faulty", FAULTY_SDL)]
        .map(|(name, sdl)| (name.to_owned(), sdl.to_owned()));
    json_subgraph::start(data, sdls.into()).await
}

/// A gateway over `subgraphs` with `headers` (YAML of the `headers` section) and the
/// subgraph section `subgraph` (YAML, for `faulty`).
async fn gateway(subgraphs: &JsonSubgraphs, headers: &str, faulty: &str) -> String {
    let mut config: Config =
        serde_yaml_ng::from_str(&format!("headers: {headers}")).expect("a headers section");
    for name in ["main", "faulty"] {
        let own = if name == "faulty" { faulty } else { "{}" };
        let mut subgraph: SubgraphConfig = serde_yaml_ng::from_str(own).expect("a subgraph");
        subgraph.url = Some(format!("{}/{name}", subgraphs.base_url));
        config.subgraphs.insert(name.to_owned(), subgraph);
    }
    let problems = graphfleet_gateway::config::validate(&config);
    assert!(problems.is_empty(), "{problems:?}");
    let supergraph = Supergraph::parse(SUPERGRAPH).expect("supergraph loads");
    support::start_gateway_with_config(config, supergraph).await
}

fn answer_with(subgraphs: &JsonSubgraphs, name: &str, headers: &[(&str, &str)]) {
    let headers = headers
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let mut respond_with = subgraphs.respond_with.lock().expect("not poisoned");
    respond_with.insert(name.to_owned(), headers);
}

/// POSTs `query`; the reply's values of each header in `names`, and its body.
async fn ask(url: &str, query: &str, names: &[&str]) -> (Vec<Vec<String>>, serde_json::Value) {
    let body = serde_json::to_vec(&json!({ "query": query })).expect("JSON");
    let headers = [("content-type", "application/json")];
    let reply = support::request(&support::client(), "POST", url, &headers, body).await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    let values = names
        .iter()
        .map(|n| {
            let all = reply.headers.get_all(*n).iter();
            all.map(|v| v.to_str().expect("ASCII").to_owned()).collect()
        })
        .collect();
    let body = serde_json::from_slice(&reply.body).expect("a JSON answer");
    (values, body)
}

#[tokio::test]
async fn nothing_is_propagated_without_rules() {
    let subgraphs = subgraphs().await;
    answer_with(
        &subgraphs,
        "main",
        &[("x-served-by", "main"), ("cache-control", "max-age=60")],
    );
    let url = gateway(&subgraphs, "{}", "{}").await;
    let (values, body) = ask(&url, QUERY, &["x-served-by", "cache-control"]).await;
    assert!(body.get("errors").is_none(), "{body}");
    assert_eq!(values, [Vec::<String>::new(), Vec::new()]);
}

#[tokio::test]
async fn rules_propagate_in_plan_order_and_per_subgraph() {
    let subgraphs = subgraphs().await;
    answer_with(
        &subgraphs,
        "main",
        &[
            ("x-served-by", "main"),
            ("x-region", "eu"),
            ("x-debug", "1"),
        ],
    );
    answer_with(
        &subgraphs,
        "faulty",
        &[
            ("x-served-by", "faulty"),
            ("x-region", "us"),
            ("x-price-version", "7"),
        ],
    );
    let headers = r#"
  response:
    - propagate: {named: x-served-by, algorithm: append}
    - propagate: {named: x-region, algorithm: first}
    - insert: {name: x-gateway, value: graphfleet}
"#;
    let faulty = "response_headers: [{propagate: {named: x-price-version, rename: x-prices}}]";
    let url = gateway(&subgraphs, headers, faulty).await;
    let names = [
        "x-served-by",
        "x-region",
        "x-gateway",
        "x-prices",
        "x-debug",
    ];
    let (values, body) = ask(&url, QUERY, &names).await;
    assert_eq!(body["data"]["products"][1]["price"], 10, "{body}");
    assert_eq!(
        values,
        [
            vec!["main", "faulty"],
            vec!["eu"],
            vec!["graphfleet"],
            vec!["7"],
            vec![],
        ]
    );
}

#[tokio::test]
async fn cache_control_is_the_most_restrictive_of_the_subgraphs() {
    let subgraphs = subgraphs().await;
    let url = gateway(&subgraphs, "{cache_control: most_restrictive}", "{}").await;
    let cases: &[(&str, &str, &str)] = &[
        (
            "public, max-age=300",
            "public, max-age=60",
            "public, max-age=60",
        ),
        (
            "max-age=300",
            "private, max-age=600",
            "private, max-age=300",
        ),
        ("max-age=300", "no-cache", "no-cache"),
        ("max-age=300", "no-store", "no-store"),
        // A subgraph that says nothing lets nothing be kept.
        ("max-age=300", "", "no-store"),
    ];
    for (main, faulty, want) in cases {
        for (name, value) in [("main", main), ("faulty", faulty)] {
            let headers: &[(&str, &str)] = match *value {
                "" => &[],
                v => &[("cache-control", v)],
            };
            answer_with(&subgraphs, name, headers);
        }
        let (values, body) = ask(&url, QUERY, &["cache-control"]).await;
        assert!(body.get("errors").is_none(), "{body}");
        assert_eq!(values, [vec![*want]], "main {main:?}, faulty {faulty:?}");
    }
}

#[tokio::test]
async fn errors_and_mutations_are_not_stored() {
    let subgraphs = subgraphs().await;
    for name in ["main", "faulty"] {
        answer_with(
            &subgraphs,
            name,
            &[("cache-control", "public, max-age=300")],
        );
    }
    let url = gateway(&subgraphs, "{cache_control: most_restrictive}", "{}").await;
    let (values, _) = ask(&url, QUERY, &["cache-control"]).await;
    assert_eq!(values, [vec!["public, max-age=300"]]);

    let (values, body) = ask(&url, "{ products { id sku } }", &["cache-control"]).await;
    assert!(body["errors"].is_array(), "product 2 has no sku: {body}");
    assert_eq!(values, [vec!["no-store"]]);

    let (values, body) = ask(&url, "mutation { bump }", &["cache-control"]).await;
    assert_eq!(body["data"]["bump"], 1, "{body}");
    assert_eq!(values, [vec!["no-store"]]);
}
