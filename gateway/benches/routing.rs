//! What routing features cost per request. `header_rules`: building the subgraph
//! headers from a browser-like request, with the default keys only (what every request
//! pays) and with rules (global, per subgraph, from claims). `override_labels`: a plan
//! cache hit for the TestQuery on a supergraph without `percent()` labels and on one with
//! two (the draw and the key it adds).

use criterion::{Criterion, criterion_group, criterion_main};
use graphfleet_bench_model::Set;
use graphfleet_gateway::config::Config;
use graphfleet_gateway::http::headers::HeaderRules;
use graphfleet_gateway::pipeline::plan_cache::State;
use graphfleet_gateway::supergraph::Supergraph;
use http::{HeaderMap, HeaderName, HeaderValue};
use std::hint::black_box;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Headers a browser-based client sends with a GraphQL POST.
fn client_headers() -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in [
        ("host", "api.example.com"),
        ("content-type", "application/json"),
        (
            "accept",
            "application/graphql-response+json, application/json",
        ),
        ("accept-encoding", "gzip, deflate, br, zstd"),
        ("accept-language", "en-GB,en;q=0.9"),
        (
            "authorization",
            "Bearer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1MSJ9.c2ln",
        ),
        ("origin", "https://app.example.com"),
        ("referer", "https://app.example.com/cart"),
        (
            "user-agent",
            "Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/140.0",
        ),
        ("x-request-id", "9f1c2d3e-4b5a-6978-8a9b-0c1d2e3f4a5b"),
        ("x-tenant", "acme"),
        ("x-flag-beta", "on"),
    ] {
        h.insert(HeaderName::from_static(k), HeaderValue::from_static(v));
    }
    h
}

fn rules(yaml: &str) -> HeaderRules {
    let config: Config = serde_yaml_ng::from_str(yaml).expect("a valid config");
    HeaderRules::compile(&config.headers, &config.subgraphs)
}

fn header_rules(c: &mut Criterion) {
    let client = client_headers();
    let claims = serde_json::json!({"sub": "u1", "scope": "read write", "roles": ["a", "b"]});
    let claims = claims.as_object().expect("an object");
    let global = r#"
headers:
  propagate: [x-tenant]
  rules:
    - propagate: {named: x-request-id, rename: x-trace-id}
    - propagate: {matching: "^x-flag-"}
    - insert: {name: x-gateway, value: edge}
    - insert: {name: x-user, from_claim: sub}
    - remove: {named: x-flag-internal}
"#;
    let per_subgraph = format!(
        "{global}subgraphs:\n  billing:\n    headers:\n      - remove: {{named: authorization}}\n"
    );
    let cases = [
        ("defaults", rules("{}")),
        ("rules", rules(global)),
        ("rules_and_subgraph", rules(&per_subgraph)),
    ];
    let mut group = c.benchmark_group("header_rules");
    for (name, rules) in &cases {
        group.bench_function(*name, |b| {
            b.iter(|| black_box(rules.apply(black_box(&client), Some(claims))))
        });
    }
    group.finish();
}

fn override_labels(c: &mut Criterion) {
    let text = Set::Fed.supergraph_at("http://127.0.0.1:9");
    let plain = State::new(Supergraph::parse(&text).expect("the fed supergraph loads"));
    // Two fields the TestQuery selects move between subgraphs under percent() labels.
    let labelled = text
        .replace("usedOverridden: Boolean)", "usedOverridden: Boolean, overrideLabel: String)")
        .replacen(
            "inStock: Boolean @join__field(graph: INVENTORY)",
            r#"inStock: Boolean @join__field(graph: INVENTORY, overrideLabel: "percent(50)") @join__field(graph: PRODUCTS, override: "inventory", overrideLabel: "percent(50)")"#,
            1,
        )
        .replacen(
            "name: String @join__field(graph: PRODUCTS)",
            r#"name: String @join__field(graph: PRODUCTS, overrideLabel: "percent(10)") @join__field(graph: INVENTORY, override: "products", overrideLabel: "percent(10)")"#,
            1,
        );
    assert_ne!(labelled, text, "the labels were added");
    let labelled = State::new(Supergraph::parse(&labelled).expect("the labelled supergraph loads"));
    let path = format!(
        "{}/../bench/sets/fed/queries/query.graphql",
        env!("CARGO_MANIFEST_DIR")
    );
    let query = std::fs::read_to_string(&path).expect("the TestQuery exists");
    let mut group = c.benchmark_group("override_labels");
    for (name, state) in [("none", &plain), ("two_percent_labels", &labelled)] {
        // Every label set planned before measuring: the cache then always hits.
        for _ in 0..64 {
            assert!(state.prepare(&query, None).is_ok(), "{name} plans");
        }
        group.bench_function(name, |b| {
            b.iter(|| black_box(state.prepare(black_box(&query), None).is_ok()))
        });
    }
    group.finish();
}

criterion_group!(benches, header_rules, override_labels);
criterion_main!(benches);
