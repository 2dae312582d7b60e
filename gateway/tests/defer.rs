//! `@defer` end to end: the gateway in front of the real `fed` subgraph servers, asked
//! over HTTP with the Accept header Apollo Client sends. The deferred parts, merged into
//! the initial payload at their paths, must equal the answer to the same operation
//! without `@defer`; the initial payload must not wait for a slow subgraph that only a
//! deferred fragment needs.

mod support;

use bytes::Bytes;
use graphfleet_gateway::gateway::Gateway;
use graphfleet_gateway::supergraph::Supergraph;
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

const MULTIPART: &str = "multipart/mixed;deferSpec=20220824,application/json;q=0.9";

/// One part of a multipart answer, and when its bytes had all arrived.
struct Part {
    json: Value,
    at: Duration,
}

async fn gateway(delays: &[(&str, Duration)]) -> (graphfleet_bench_subgraphs::Handle, String) {
    let subgraphs = support::fed::subgraphs(delays).await;
    let sdl = graphfleet_bench_model::Set::Fed.supergraph_at(&subgraphs.base_url());
    let supergraph = Supergraph::parse(&sdl).expect("the fed supergraph loads");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind an ephemeral loopback port");
    let addr = listener.local_addr().expect("bound address");
    tokio::spawn(graphfleet_gateway::http::serve(
        listener,
        Arc::new(Gateway::new(supergraph)),
    ));
    (subgraphs, format!("http://{addr}/graphql"))
}

/// POSTs `query` accepting `accept`; returns the content type and the parts of a
/// multipart answer (or the one JSON body), each with its arrival time.
async fn ask(url: &str, accept: &str, query: &str, variables: Value) -> (String, Vec<Part>) {
    let body = serde_json::to_vec(&json!({ "query": query, "variables": variables }))
        .expect("serializable request");
    let req = hyper::Request::post(url)
        .header("content-type", "application/json")
        .header("accept", accept)
        .body(Full::new(Bytes::from(body)))
        .expect("a valid request");
    let start = Instant::now();
    let response = tokio::time::timeout(Duration::from_secs(30), support::client().request(req))
        .await
        .expect("an answer within 30 s")
        .expect("HTTP exchange");
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"]
        .to_str()
        .expect("ASCII content type")
        .to_owned();
    let mut body = response.into_body();
    let mut buffer = Vec::new();
    let mut parts = Vec::new();
    let multipart = content_type.starts_with("multipart/mixed");
    while let Some(frame) = body.frame().await {
        let frame = frame.expect("the body streams");
        let Some(data) = frame.data_ref() else {
            continue;
        };
        buffer.extend_from_slice(data);
        if multipart {
            for json in take_parts(&mut buffer) {
                parts.push(Part {
                    json,
                    at: start.elapsed(),
                });
            }
        }
    }
    if multipart {
        let rest = String::from_utf8_lossy(&buffer);
        assert_eq!(
            rest, "\r\n--graphql--\r\n",
            "the body ends with the closing delimiter"
        );
    } else {
        let json = serde_json::from_slice(&buffer).expect("a JSON answer");
        parts.push(Part {
            json,
            at: start.elapsed(),
        });
    }
    (content_type, parts)
}

/// The complete parts at the front of `buffer` (each `\r\n--graphql\r\n` + headers +
/// JSON, up to the next boundary), removed from it.
fn take_parts(buffer: &mut Vec<u8>) -> Vec<Value> {
    const DELIMITER: &[u8] = b"\r\n--graphql";
    let mut out = Vec::new();
    loop {
        assert!(buffer.starts_with(DELIMITER) || DELIMITER.starts_with(buffer));
        let Some(next) = find(&buffer[DELIMITER.len().min(buffer.len())..], DELIMITER) else {
            return out;
        };
        let end = DELIMITER.len() + next;
        let part = &buffer[DELIMITER.len()..end];
        let text = std::str::from_utf8(part).expect("UTF-8 part");
        let (headers, json) = text
            .strip_prefix("\r\n")
            .and_then(|t| t.split_once("\r\n\r\n"))
            .expect("part headers, a blank line, the JSON");
        assert_eq!(headers, "content-type: application/json; charset=utf-8");
        out.push(serde_json::from_str(json).expect("each part is JSON"));
        buffer.drain(..end);
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The response a client builds: each incremental item's data merged at its path.
fn merged(parts: &[Part]) -> Value {
    let mut result = parts[0].json.clone();
    for part in &parts[1..] {
        for item in part.json["incremental"]
            .as_array()
            .expect("incremental items")
        {
            let mut at = &mut result["data"];
            for seg in item["path"].as_array().expect("a path") {
                at = match seg {
                    Value::String(key) => &mut at[key.as_str()],
                    Value::Number(i) => &mut at[i.as_u64().expect("an index") as usize],
                    other => panic!("path segment {other}"),
                };
            }
            if let (Value::Object(target), Value::Object(data)) = (at, &item["data"]) {
                for (k, v) in data {
                    target.insert(k.clone(), v.clone());
                }
            }
            if let Some(errors) = item.get("errors") {
                let all = result["errors"].as_array().cloned().unwrap_or_default();
                let mut all = all;
                all.extend(errors.as_array().cloned().unwrap_or_default());
                result["errors"] = Value::Array(all);
            }
        }
    }
    let object = result.as_object_mut().expect("an object");
    object.remove("hasNext");
    result
}

const DEFERRED: &str = r#"query Top {
  topProducts {
    upc
    name
    ... @defer(label: "reviews") {
      reviews { body author { username } }
    }
  }
}"#;
const PLAIN: &str = "query Top { topProducts { upc name reviews { body author { username } } } }";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_initial_payload_does_not_wait_for_a_deferred_slow_subgraph() {
    let delay = Duration::from_secs(3);
    let (_subgraphs, url) = gateway(&[("reviews", delay)]).await;
    let (content_type, parts) = ask(&url, MULTIPART, DEFERRED, json!({})).await;
    assert_eq!(
        content_type,
        "multipart/mixed;boundary=\"graphql\";deferSpec=20220824"
    );
    assert_eq!(
        parts.len(),
        2,
        "the initial payload and one with the reviews"
    );
    let initial = &parts[0].json;
    assert_eq!(initial["hasNext"], json!(true));
    let products = initial["data"]["topProducts"].as_array().expect("products");
    assert_eq!(products.len(), 5);
    for p in products {
        assert!(p["name"].is_string() && p.get("reviews").is_none(), "{p}");
    }
    assert!(
        parts[0].at < delay,
        "the initial payload came after {:?}, not before the reviews subgraph's {delay:?}",
        parts[0].at
    );
    assert!(parts[1].at >= delay);
    println!(
        "initial payload after {:?}, the deferred reviews after {:?} (reviews delay {delay:?})",
        parts[0].at, parts[1].at
    );
    let later = &parts[1].json;
    assert_eq!(later["hasNext"], json!(false));
    let items = later["incremental"].as_array().expect("incremental items");
    assert_eq!(items.len(), 5, "one item per product");
    for (i, item) in items.iter().enumerate() {
        assert_eq!(item["label"], json!("reviews"));
        assert_eq!(item["path"], json!(["topProducts", i]));
        assert!(item["data"]["reviews"].is_array(), "{item}");
    }

    // The oracle: the fed monolith answers the operation without @defer.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind an ephemeral loopback port");
    let monolith = graphfleet_bench_subgraphs::spawn(
        graphfleet_bench_model::Set::Fed,
        graphfleet_bench_subgraphs::Mode::Monolith,
        listener,
        Default::default(),
    )
    .expect("the fed monolith starts");
    let oracle = format!("{}/graphql", monolith.base_url());
    let (_, expected) = ask(&oracle, "application/json", PLAIN, json!({})).await;
    assert_eq!(merged(&parts), expected[0].json);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn defer_is_ignored_without_multipart_and_when_if_is_false() {
    let (_subgraphs, url) = gateway(&[]).await;
    let (_, plain) = ask(&url, "application/json", PLAIN, json!({})).await;
    let expected = &plain[0].json;
    // A client that does not take multipart gets one JSON body with everything.
    let (content_type, parts) = ask(&url, "application/json", DEFERRED, json!({})).await;
    assert!(content_type.starts_with("application/json"));
    assert_eq!(&parts[0].json, expected);

    let conditional = DEFERRED
        .replace("query Top {", "query Top($d: Boolean!) {")
        .replace(
            "@defer(label: \"reviews\")",
            "@defer(label: \"reviews\", if: $d)",
        );
    let (_, off) = ask(&url, MULTIPART, &conditional, json!({ "d": false })).await;
    assert_eq!(off.len(), 1, "if: false delivers everything at once");
    assert_eq!(off[0].json["hasNext"], json!(false));
    assert_eq!(merged(&off), *expected);
    let (_, on) = ask(&url, MULTIPART, &conditional, json!({ "d": true })).await;
    assert_eq!(on.len(), 2);
    assert_eq!(merged(&on), *expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_defers_and_fields_of_the_same_subgraph() {
    let (_subgraphs, url) = gateway(&[]).await;
    // The deferred `name` lives in the same subgraph as the root field (a fetch of its
    // own), and a defer nested in a deferred fragment comes after its parent.
    let query = r#"{
      topProducts {
        upc
        ... @defer(label: "outer") {
          name
          ... @defer(label: "inner") { inStock reviews { body } }
        }
      }
      me { name ... @defer { username } }
    }"#;
    let plain = "{ topProducts { upc name inStock reviews { body } } me { name username } }";
    let (_, parts) = ask(&url, MULTIPART, query, json!({})).await;
    let (_, expected) = ask(&url, "application/json", plain, json!({})).await;
    assert_eq!(merged(&parts), expected[0].json);
    assert_eq!(parts.last().expect("parts").json["hasNext"], json!(false));
    let labels: Vec<(usize, String)> = parts
        .iter()
        .enumerate()
        .flat_map(|(n, p)| {
            p.json["incremental"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .map(move |i| (n, i["label"].as_str().unwrap_or("").to_owned()))
        })
        .collect();
    let first = |label: &str| {
        labels
            .iter()
            .find(|(_, l)| l == label)
            .map(|(n, _)| *n)
            .unwrap_or_else(|| panic!("no {label:?} item in {labels:?}"))
    };
    assert!(first("outer") < first("inner"), "{labels:?}");
}

/// Real clients: Apollo Client (@apollo/client 3.14.1, which sends the multipart Accept
/// header for operations with `@defer` and merges the parts itself) and the meros
/// multipart reader, pinned by tools/defer-client/package-lock.json.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apollo_client_and_meros_read_the_deferred_parts() {
    let (_subgraphs, url) = gateway(&[("reviews", Duration::from_millis(300))]).await;
    let (_, plain) = ask(&url, "application/json", PLAIN, json!({})).await;
    let expected = plain[0].json["data"].clone();
    let args = ["defer-client", &url, DEFERRED, "reviews"].map(str::to_owned);
    let output = support::node_tool(args.to_vec()).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the clients failed:\n{stderr}");
    let out: Value = serde_json::from_slice(&output.stdout).expect("the client prints JSON");

    let apollo = out["apollo"].as_array().expect("Apollo Client's results");
    assert!(
        apollo.len() >= 2,
        "the initial result, then the merged one: {out}"
    );
    let first = &apollo[0]["data"]["topProducts"];
    assert_eq!(first.as_array().map(Vec::len), Some(5), "{out}");
    assert!(first[0].get("reviews").is_none(), "{out}");
    let last = apollo.last().expect("a last result");
    assert_eq!(last["data"], expected, "Apollo Client's merged result");
    assert_eq!(last["errors"], Value::Null);

    let meros = &out["meros"];
    assert_eq!(
        meros["contentType"],
        json!("multipart/mixed;boundary=\"graphql\";deferSpec=20220824")
    );
    let parts = meros["parts"].as_array().expect("parts");
    assert_eq!(parts.len(), 2, "{meros}");
    assert!(parts.iter().all(|p| p["json"] == json!(true)), "{meros}");
    assert_eq!(parts[0]["body"]["hasNext"], json!(true));
    assert_eq!(parts[1]["body"]["hasNext"], json!(false));
    assert_eq!(
        parts[1]["body"]["incremental"][4]["path"],
        json!(["topProducts", 4])
    );
}

/// Errors in a deferred fragment go with its item, at paths from the response root; a
/// non-null field's null bubbles up to the fragment (the item's data is null), not into
/// the payload already sent. Strict JSON subgraphs (tests/fixtures/errors).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_and_nulls_in_deferred_fragments_stay_in_their_items() {
    let (_subgraphs, text) = support::fixture_subgraphs("errors").await;
    let supergraph = Supergraph::parse(&text).expect("the fixture supergraph loads");
    let url = support::start_gateway(supergraph).await;
    let query = r#"{ products { name ... @defer(label: "r") { topReview rating } } }"#;
    let (_, parts) = ask(&url, MULTIPART, query, json!({})).await;
    assert_eq!(parts.len(), 2);
    let initial = &parts[0].json;
    assert_eq!(
        initial,
        &json!({ "data": { "products": [{ "name": "Table" }, { "name": "Couch" }] }, "hasNext": true })
    );
    let items = parts[1].json["incremental"].as_array().expect("items");
    assert_eq!(items.len(), 2, "{}", parts[1].json);
    let item = |i: usize| {
        items
            .iter()
            .find(|it| it["path"] == json!(["products", i]))
            .unwrap_or_else(|| panic!("no item at products.{i}: {items:?}"))
    };
    assert_eq!(
        item(0)["data"],
        json!({ "topReview": "Solid", "rating": 5 })
    );
    assert!(item(0).get("errors").is_none(), "{:?}", item(0));
    // rating is non-null: its null takes the whole fragment with it, for that product.
    assert_eq!(item(1)["data"], Value::Null);
    let paths: Vec<&Value> = item(1)["errors"]
        .as_array()
        .expect("the item's errors")
        .iter()
        .map(|e| &e["path"])
        .collect();
    assert!(
        paths.contains(&&json!(["products", 1, "rating"])),
        "{paths:?}"
    );
    assert!(
        paths.contains(&&json!(["products", 1, "topReview"])),
        "{paths:?}"
    );
    assert_eq!(item(1)["label"], json!("r"));
}

/// Deferred fragments on the possible types of an interface and a union (named and
/// inline), with fields from another subgraph: only objects of the fragment's type get
/// an item, and the parts merged equal the plain answer (tests/fixtures/abstract-types).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn defer_on_abstract_types() {
    let (_subgraphs, text) = support::fixture_subgraphs("abstract-types").await;
    let supergraph = Supergraph::parse(&text).expect("the fixture supergraph loads");
    let url = support::start_gateway(supergraph).await;
    let query = r#"
      query Feed {
        feed { __typename title ... on Book @defer(label: "book") { pages stars } ... on Movie { minutes } }
        search { ...Rated @defer(label: "rated") ... on Person { name } }
      }
      fragment Rated on SearchResult { ... on Book { stars } ... on Person { followers } }"#;
    let plain = r#"
      query Feed {
        feed { __typename title ... on Book { pages stars } ... on Movie { minutes } }
        search { ... on Book { stars } ... on Person { followers } ... on Person { name } }
      }"#;
    let (_, parts) = ask(&url, MULTIPART, query, json!({})).await;
    let (_, expected) = ask(&url, "application/json", plain, json!({})).await;
    assert!(
        expected[0].json.get("errors").is_none(),
        "{}",
        expected[0].json
    );
    assert!(parts.len() >= 2, "deferred parts follow");
    assert_eq!(merged(&parts), expected[0].json);
    let feed = expected[0].json["data"]["feed"]
        .as_array()
        .expect("feed")
        .clone();
    let books: Vec<Value> = feed
        .iter()
        .enumerate()
        .filter(|(_, m)| m["__typename"] == json!("Book"))
        .map(|(i, _)| json!(["feed", i]))
        .collect();
    let book_items: Vec<Value> = parts
        .iter()
        .flat_map(|p| {
            p.json["incremental"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter(|i| i["label"] == json!("book"))
        .map(|i| i["path"].clone())
        .collect();
    assert!(!books.is_empty());
    assert_eq!(book_items, books, "one item per Book, none for Movies");
}
