//! CPU per request with the plan cached and subgraph responses replayed from recorded
//! bytes, against the floor: decoding those responses plus encoding the final JSON once;
//! and the plan cache hit on its own. Two operations: the fed TestQuery (`test_query`)
//! and the ~8 MiB big-response query (`big_response`), where JSON work dominates.
//! `test_query_http`: the same execution behind the HTTP layers (CSRF check, CORS,
//! compression), each off and on, the response body read to its end; `http_layers`: the
//! layers alone around the TestQuery's answer, without compressing.
//! `test_query_demand`: the TestQuery with demand control off, measuring and enforcing.
//! `test_query_persisted`: the TestQuery as text with persisted documents and APQ off
//! and on, and sent as an APQ hash and as a listed document id.
//! `test_query_auth`: the TestQuery with JWT validation and authorization off and on.

use bytes::Bytes;
use criterion::{Criterion, criterion_group, criterion_main};
use graphfleet_bench_model::Set;
use graphfleet_bench_subgraphs::{Mode, Options, spawn};
use graphfleet_gateway::config::Config;
use graphfleet_gateway::executor::transport::Transport;
use graphfleet_gateway::gateway::Gateway;
use graphfleet_gateway::http::{HandlerBody, HttpLayers, csrf_blocked};
use graphfleet_gateway::pipeline::request::{GraphQLRequest, RequestMeta};
use graphfleet_gateway::supergraph::Supergraph;
use http_body_util::{BodyExt, Full};
use std::hint::black_box;
use std::sync::Arc;

mod common;

use common::{Recorder, Replay, post, replaying};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn bench(c: &mut Criterion) {
    scenario(c, "test_query", Set::Fed, "fed/queries/query.graphql");
    scenario(
        c,
        "big_response",
        Set::BigResponse,
        "big-response/queries/big-response.graphql",
    );
}

/// Benchmarks `group`: the query at `query_path` (under bench/sets/) on `set`.
fn scenario(c: &mut Criterion, group: &str, set: Set, query_path: &str) {
    let path = format!("{}/../bench/sets/{query_path}", env!("CARGO_MANIFEST_DIR"));
    let query = std::fs::read_to_string(&path).expect("the scenario's query exists");
    let post = post();
    let request = GraphQLRequest {
        query: Some(query),
        ..Default::default()
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");

    // Record the subgraph traffic of one real execution.
    let (recorded, expected) = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let subgraphs =
            spawn(set, Mode::Subgraphs, listener, Options::default()).expect("subgraphs");
        let text = set
            .supergraph()
            .replace("http://127.0.0.1:4200", &subgraphs.base_url());
        let recorder = Recorder {
            http: graphfleet_gateway::config::transport(&Default::default()),
            seen: Arc::default(),
        };
        let gateway = Gateway::with_transport(
            Default::default(),
            Supergraph::parse(&text).expect("supergraph"),
            recorder.clone(),
        );
        let body = gateway.execute(&request, &post).await.body().to_vec();
        subgraphs.shutdown().await;
        let seen = recorder.seen.lock().clone();
        (seen, body)
    });
    println!(
        "{group}: {} subgraph requests, {} response bytes from subgraphs, {} bytes final",
        recorded.len(),
        recorded.iter().map(|(_, r)| r.len()).sum::<usize>(),
        expected.len()
    );

    let gateway = replaying(Config::default(), set.supergraph(), &recorded);
    let check = rt.block_on(gateway.execute(&request, &post));
    assert_eq!(
        check.body(),
        expected.as_slice(),
        "replay reproduces the response"
    );

    let mut group = c.benchmark_group(group);
    group.bench_function("gateway", |b| {
        b.iter(|| black_box(rt.block_on(gateway.execute(black_box(&request), &post))))
    });
    // The plan cache hit alone (key hashing + lookup), which `gateway` includes.
    let state = gateway.state().expect("loaded");
    let text = request.query.as_deref().expect("query");
    group.bench_function("prepare_hit", |b| {
        b.iter(|| black_box(state.prepare(black_box(text), None).is_ok()))
    });
    let final_value: serde_json::Value =
        serde_json::from_slice(&expected).expect("final response is JSON");
    group.bench_function("floor", |b| {
        b.iter(|| {
            for (_, response) in &recorded {
                let v: serde_json::Value =
                    serde_json::from_slice(black_box(response)).expect("recorded JSON");
                black_box(v);
            }
            black_box(serde_json::to_vec(black_box(&final_value)).expect("encode"))
        })
    });
    group.finish();
    // The layers' cost depends on the response's size, not on what ran: measured on the
    // TestQuery only.
    if matches!(set, Set::Fed) {
        http_layers(c, &rt, &gateway, &request, &post);
        demand_control(c, &rt, set, &recorded, &request, &expected);
        persisted(c, &rt, set, &recorded, &request, &expected);
        auth(c, &rt, set, &recorded, &request, &expected);
    }
}

/// The TestQuery with persisted documents and APQ off (`text_off`) and on (`text_on`:
/// the same text request, a list loaded and APQ on), then sent as an APQ hash
/// (`apq_hash`) and as a listed `documentId` (`document_id`).
fn persisted(
    c: &mut Criterion,
    rt: &tokio::runtime::Runtime,
    set: Set,
    recorded: &[(Bytes, Bytes)],
    text: &GraphQLRequest,
    expected: &[u8],
) {
    use sha2::Digest;
    let query = text.query.clone().expect("query");
    let hash = graphfleet_gateway::supergraph::hex(&sha2::Sha256::digest(query.as_bytes()));
    let dir = std::env::temp_dir().join(format!("graphfleet-bench-pd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let list = dir.join("documents.json");
    let manifest = serde_json::json!({ "test-query": query });
    std::fs::write(&list, manifest.to_string()).expect("write the list");
    let off = {
        let mut config = Config::default();
        config.apq.enabled = false;
        config
    };
    let on = {
        let mut config = Config::default();
        config.persisted_documents.path = Some(list.clone());
        config.persisted_documents.watch = false;
        config
    };
    let gateway = |config: &Config| replaying(config.clone(), set.supergraph(), recorded);
    let (off, on) = (gateway(&off), gateway(&on));
    let _ = std::fs::remove_dir_all(&dir);
    let request = |body: serde_json::Value| -> GraphQLRequest {
        serde_json::from_value(body).expect("a GraphQL request")
    };
    let apq = serde_json::json!({ "persistedQuery": { "version": 1, "sha256Hash": hash } });
    let register = request(serde_json::json!({ "query": query, "extensions": apq }));
    let by_hash = request(serde_json::json!({ "extensions": apq }));
    let by_id = request(serde_json::json!({ "documentId": "test-query" }));
    let post = post();
    let cases: [(&str, &Gateway<Replay>, &GraphQLRequest); 4] = [
        ("text_off", &off, text),
        ("text_on", &on, text),
        ("apq_hash", &on, &by_hash),
        ("document_id", &on, &by_id),
    ];
    rt.block_on(on.execute(&register, &post));
    let mut group = c.benchmark_group("test_query_persisted");
    for (name, gateway, request) in cases {
        let body = rt.block_on(gateway.execute(request, &post)).into_body();
        assert_eq!(body.as_slice(), expected, "{name} answers as the text does");
        group.bench_function(name, |b| {
            b.iter(|| black_box(rt.block_on(gateway.execute(black_box(request), &post))))
        });
    }
    group.finish();
}

/// Request headers of one case.
type Headers<'a> = &'a [(&'a str, &'a str)];

/// One TestQuery request through `HttpLayers::respond` and the CSRF check, as the
/// listener serves it, for each configuration: everything off, the defaults (CSRF on),
/// CORS on with an allowed origin, compression on with a client that takes none, and
/// each encoding. The body is read to its end (compression happens while it streams).
fn http_layers<T: Transport>(
    c: &mut Criterion,
    rt: &tokio::runtime::Runtime,
    gateway: &Gateway<T>,
    request: &GraphQLRequest,
    post: &RequestMeta,
) {
    let off = {
        let mut config = Config::default();
        config.csrf.enabled = false;
        config
    };
    let cors = {
        let mut config = Config::default();
        config.cors.allow_origins = vec!["https://app.example.com".to_owned()];
        config
    };
    let compression = {
        let mut config = Config::default();
        config.compression.enabled = true;
        config
    };
    let json = ("content-type", "application/json");
    let origin = ("origin", "https://app.example.com");
    let cases: [(&str, &Config, Headers); 7] = [
        ("off", &off, &[json]),
        ("csrf", &Config::default(), &[json]),
        ("cors", &cors, &[json, origin]),
        ("compression_identity", &compression, &[json]),
        ("gzip", &compression, &[json, ("accept-encoding", "gzip")]),
        ("br", &compression, &[json, ("accept-encoding", "br")]),
        ("zstd", &compression, &[json, ("accept-encoding", "zstd")]),
    ];
    let answer = &Bytes::from(rt.block_on(gateway.execute(request, post)).into_body());
    // With the execution, then the layers alone around the same (already made) answer,
    // where their own cost is not lost in the execution's noise.
    for (group_name, execute, count) in [("test_query_http", true, 7), ("http_layers", false, 4)] {
        let mut group = c.benchmark_group(group_name);
        for &(name, config, headers) in &cases[..count] {
            let layers = HttpLayers::from_config(config);
            let serve = || async {
                let mut builder = http::Request::post("/graphql");
                for (k, v) in headers {
                    builder = builder.header(*k, *v);
                }
                let req = builder.body(()).expect("a valid request");
                let response = layers
                    .respond(req, |req| async move {
                        assert!(!csrf_blocked(&config.csrf, req.headers()));
                        let body = if execute {
                            let outcome = gateway.execute(black_box(request), post).await;
                            Bytes::from(outcome.into_body())
                        } else {
                            answer.clone()
                        };
                        http::Response::new(HandlerBody::from(Full::new(body)))
                    })
                    .await;
                let body = response.into_body().collect().await;
                body.expect("the body streams").to_bytes()
            };
            let size = rt.block_on(serve()).len();
            println!("{group_name}/{name}: {size} bytes sent");
            group.bench_function(name, |b| b.iter(|| black_box(rt.block_on(serve()))));
        }
        group.finish();
    }
}

/// The TestQuery with demand control off (`off`), measuring (`measure`: the estimate
/// recorded in the histogram) and enforcing a limit it stays under (`enforce`).
fn demand_control(
    c: &mut Criterion,
    rt: &tokio::runtime::Runtime,
    set: Set,
    recorded: &[(Bytes, Bytes)],
    request: &GraphQLRequest,
    expected: &[u8],
) {
    use apollo_compiler::response::JsonMap;
    use graphfleet_gateway::config::DemandControlMode;
    use graphfleet_gateway::operation::ConditionValues;
    use graphfleet_gateway::operation::demand::CostPlan;
    use graphfleet_gateway::pipeline::demand;
    let config = |mode: Option<DemandControlMode>| {
        let mut config = Config::default();
        if let Some(mode) = mode {
            config.demand_control.enabled = true;
            config.demand_control.mode = mode;
            config.demand_control.max_cost = Some(1_000_000);
        }
        replaying(config, set.supergraph(), recorded)
    };
    let post = post();
    let supergraph = Supergraph::parse(set.supergraph()).expect("supergraph");
    let text = request.query.as_deref().expect("query");
    let prepared =
        graphfleet_gateway::operation::prepare(&supergraph.api_schema, text, None).expect("valid");
    let plan = CostPlan::compile(
        &supergraph,
        &prepared.ir,
        Config::default().demand_control.list_size,
    );
    println!("test_query_demand: estimate {:?}", plan.fixed());
    let mut group = c.benchmark_group("test_query_demand");
    for (name, mode) in [
        ("off", None),
        ("measure", Some(DemandControlMode::Measure)),
        ("enforce", Some(DemandControlMode::Enforce)),
    ] {
        let gateway = config(mode);
        let body = rt.block_on(gateway.execute(request, &post)).into_body();
        assert_eq!(body.as_slice(), expected, "{name} answers as without it");
        group.bench_function(name, |b| {
            b.iter(|| black_box(rt.block_on(gateway.execute(black_box(request), &post))))
        });
    }
    // The estimate alone: compiling it (once per cached operation), then per request for
    // the TestQuery (folded to a constant) and for a variant whose `reviews` depend on
    // an @include variable (evaluated per request).
    let gateway = config(Some(DemandControlMode::Enforce));
    let state = gateway.state().expect("loaded");
    let dc = &gateway.config.demand_control;
    group.bench_function("compile", |b| {
        b.iter(|| {
            let plan = CostPlan::compile(&supergraph, black_box(&prepared.ir), dc.list_size);
            black_box(plan.fixed())
        })
    });
    let variant = text
        .replacen("query TestQuery {", "query TestQuery($r: Boolean!) {", 1)
        .replacen("reviews {", "reviews @include(if: $r) {", 1);
    for (name, text, variables) in [
        ("check_fixed", text, serde_json::json!({})),
        (
            "check_per_request",
            variant.as_str(),
            serde_json::json!({ "r": true }),
        ),
    ] {
        let cached = state.prepare(text, None).expect("valid");
        let variables: JsonMap = serde_json::from_value(variables).expect("an object");
        let values = ConditionValues::of(&cached.prepared.ir, &variables);
        let estimate = demand::check(dc, &state, &cached, &variables, values, None);
        println!("test_query_demand/{name}: estimate {estimate:?}");
        group.bench_function(name, |b| {
            b.iter(|| {
                let got = demand::check(dc, &state, &cached, black_box(&variables), values, None);
                black_box(got.is_ok())
            })
        });
    }
    group.finish();
}

/// The fed supergraph with authorization directives on what the TestQuery reads:
/// `User` needs a token, `Product.price` a scope, `Review.body` one of two scopes.
fn auth_supergraph(text: &str) -> String {
    let edits = [
        (
            "  @link(url: \"https://specs.apollo.dev/join/v0.3\", for: EXECUTION)\n",
            "  @link(url: \"https://specs.apollo.dev/join/v0.3\", for: EXECUTION)\n  \
             @link(url: \"https://specs.apollo.dev/authenticated/v0.1\", for: SECURITY)\n  \
             @link(url: \"https://specs.apollo.dev/requiresScopes/v0.1\", for: SECURITY)\n",
        ),
        (
            "scalar join__FieldSet\n",
            "scalar join__FieldSet\n\nscalar requiresScopes__Scope\n\n\
             directive @authenticated on FIELD_DEFINITION | OBJECT | INTERFACE | SCALAR | ENUM\n\n\
             directive @requiresScopes(scopes: [[requiresScopes__Scope!]!]!) on FIELD_DEFINITION \
             | OBJECT | INTERFACE | SCALAR | ENUM\n",
        ),
        ("type User\n", "type User @authenticated\n"),
        (
            "  price: Int @join__field(graph: INVENTORY, external: true) @join__field(graph: PRODUCTS)\n",
            "  price: Int @join__field(graph: INVENTORY, external: true) @join__field(graph: PRODUCTS) \
             @requiresScopes(scopes: [[\"read:price\"]])\n",
        ),
        (
            "  body: String\n",
            "  body: String @requiresScopes(scopes: [[\"read:reviews\"], [\"admin\"]])\n",
        ),
    ];
    let mut out = text.to_owned();
    for (from, to) in edits {
        assert!(out.contains(from), "the fed supergraph has {from:?}");
        out = out.replacen(from, to, 1);
    }
    out
}

/// The TestQuery with authentication and authorization: `off` (neither), `directives`
/// (the supergraph has auth directives, authorization is off), `jwt` (an ES256 token
/// validated per request against a JWKS file, no directives) and `jwt_authorized` (the
/// token and the directives, every field authorized: the cached plan). Each iteration
/// does what the HTTP handler does: authenticate the headers, then execute.
/// `validate_token`: the authentication alone.
fn auth(
    c: &mut Criterion,
    rt: &tokio::runtime::Runtime,
    set: Set,
    recorded: &[(Bytes, Bytes)],
    request: &GraphQLRequest,
    expected: &[u8],
) {
    use base64::Engine;
    let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("a P-256 key");
    let point = pair.public_key_raw();
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    let jwks = serde_json::json!({ "keys": [{
        "kty": "EC", "crv": "P-256", "kid": "bench", "alg": "ES256",
        "x": b64(&point[1..33]), "y": b64(&point[33..]),
    }] });
    let dir = std::env::temp_dir().join(format!("graphfleet-auth-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let jwks_path = dir.join("jwks.json");
    std::fs::write(&jwks_path, jwks.to_string()).expect("write the JWKS");
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
    header.kid = Some("bench".to_owned());
    let exp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
        + 3600;
    let claims = serde_json::json!({
        "iss": "https://issuer.bench", "aud": "graphfleet", "sub": "u1", "exp": exp,
        "scope": "read:price read:reviews",
    });
    let key = jsonwebtoken::EncodingKey::from_ec_pem(pair.serialize_pem().as_bytes())
        .expect("a PKCS#8 key");
    let token = jsonwebtoken::encode(&header, &claims, &key).expect("sign");
    let mut headers = http::HeaderMap::new();
    headers.insert(
        http::header::AUTHORIZATION,
        format!("Bearer {token}").parse().expect("a header value"),
    );
    let plain = set.supergraph().to_owned();
    let directed = auth_supergraph(&plain);
    let gateway = |supergraph: &str, jwt: bool, authorization: bool| {
        let mut config = Config::default();
        config.authorization.enabled = authorization;
        if jwt {
            config.authentication.jwks = vec![graphfleet_gateway::config::JwksSource {
                file: Some(jwks_path.clone()),
                url: None,
                refresh_interval: std::time::Duration::from_secs(3600),
                ca_file: None,
            }];
            config.authentication.issuers = vec!["https://issuer.bench".to_owned()];
            config.authentication.audiences = vec!["graphfleet".to_owned()];
        }
        replaying(config, supergraph, recorded)
    };
    let mut group = c.benchmark_group("test_query_auth");
    for (name, supergraph, jwt, authorization) in [
        ("off", &plain, false, true),
        ("directives", &directed, false, false),
        ("jwt", &plain, true, true),
        ("jwt_authorized", &directed, true, true),
    ] {
        let gateway = gateway(supergraph, jwt, authorization);
        let run = || async {
            let claims = gateway
                .auth
                .authenticate(black_box(&headers))
                .await
                .expect("a valid token");
            let meta = RequestMeta {
                allow_mutation: true,
                claims,
                ..RequestMeta::default()
            };
            gateway.execute(black_box(request), &meta).await.into_body()
        };
        assert_eq!(
            rt.block_on(run()).as_slice(),
            expected,
            "{name} answers in full"
        );
        group.bench_function(name, |b| b.iter(|| black_box(rt.block_on(run()))));
    }
    // The token's validation alone (ES256 signature, claims), which `jwt` includes.
    let gateway = gateway(&plain, true, true);
    group.bench_function("validate_token", |b| {
        b.iter(|| black_box(rt.block_on(gateway.auth.authenticate(black_box(&headers)))))
    });
    group.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, bench);
criterion_main!(benches);
