//! Header rules over real HTTP: the gateway in front of `main` (a JSON subgraph) and
//! `faulty` (a subgraph that records every request's headers); the query reaches
//! `faulty` for entities, so what it saw is what the rules made.

mod support;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use graphfleet_gateway::config::{Config, HeaderRule, JwksSource, SubgraphConfig};
use graphfleet_gateway::supergraph::Supergraph;
use serde_json::json;
use support::fault_subgraph;

const QUERY: &str = "{ products { id name price } }";

fn rules(yaml: &str) -> Vec<HeaderRule> {
    serde_yaml_ng::from_str(yaml).expect("header rules")
}

/// The headers `faulty` received for one request with `client_headers`, as sorted
/// `name: value` lines (only the `x-` ones and `authorization`: the rest are the
/// gateway's own).
async fn faulty_saw(
    tune: impl FnOnce(&mut Config),
    client_headers: &[(&str, &str)],
) -> Vec<String> {
    let fault = fault_subgraph::start().await;
    let main = fault_subgraph::start_main().await;
    let mut config = Config::default();
    config.subgraphs.insert(
        "faulty".into(),
        SubgraphConfig {
            url: Some(fault.url("ok")),
            ..SubgraphConfig::default()
        },
    );
    config.subgraphs.insert(
        "main".into(),
        SubgraphConfig {
            url: Some(format!("{}/main", main.base_url)),
            ..SubgraphConfig::default()
        },
    );
    tune(&mut config);
    let supergraph = Supergraph::parse(fault_subgraph::SUPERGRAPH).expect("supergraph loads");
    let url = support::start_gateway_with_config(config, supergraph).await;
    let body = serde_json::to_vec(&json!({ "query": QUERY })).expect("JSON");
    let mut headers = vec![("content-type", "application/json")];
    headers.extend_from_slice(client_headers);
    let reply = support::request(&support::client(), "POST", &url, &headers, body).await;
    let text = String::from_utf8_lossy(&reply.body);
    assert_eq!(reply.status, 200, "{text}");
    assert!(!text.contains("errors"), "{text}");
    let seen = fault.headers.lock().expect("not poisoned").clone();
    assert_eq!(seen.len(), 1, "one entity fetch to faulty");
    let mut lines: Vec<String> = seen[0]
        .iter()
        .filter(|(k, _)| k.as_str().starts_with("x-") || k.as_str() == "authorization")
        .map(|(k, v)| format!("{k}: {}", v.to_str().expect("ASCII header")))
        .collect();
    lines.sort();
    lines
}

#[tokio::test]
async fn global_rules_propagate_rename_insert_and_remove() {
    let seen = faulty_saw(
        |c| {
            c.headers.forward_authorization = false;
            c.headers.rules = rules(
                r#"
- propagate: {named: x-request-id, rename: x-trace-id}
- propagate: {named: x-tenant, default: public}
- propagate: {matching: "^x-flag-"}
- insert: {name: x-gateway, value: graphfleet}
- remove: {named: x-flag-internal}
"#,
            );
        },
        &[
            ("authorization", "Bearer secret"),
            ("x-request-id", "r-1"),
            ("x-flag-beta", "on"),
            ("x-flag-internal", "yes"),
            ("x-unlisted", "no"),
        ],
    )
    .await;
    assert_eq!(
        seen,
        [
            "x-flag-beta: on",
            "x-gateway: graphfleet",
            "x-tenant: public",
            "x-trace-id: r-1",
        ]
    );
}

#[tokio::test]
async fn a_subgraphs_own_rules_apply_only_to_it() {
    let client = [("authorization", "Bearer secret"), ("x-tenant", "acme")];
    let global_only = |c: &mut Config| c.headers.propagate = vec!["x-tenant".to_owned()];
    let seen = faulty_saw(global_only, &client).await;
    assert_eq!(seen, ["authorization: Bearer secret", "x-tenant: acme"]);

    // Rules for `main` leave `faulty` alone.
    let seen = faulty_saw(
        |c| {
            global_only(c);
            let main = c.subgraphs.get_mut("main").expect("configured above");
            main.headers = rules("- remove: {named: authorization}");
        },
        &client,
    )
    .await;
    assert_eq!(seen, ["authorization: Bearer secret", "x-tenant: acme"]);

    // Rules for `faulty` change what it gets, after the global ones.
    let seen = faulty_saw(
        |c| {
            global_only(c);
            let faulty = c.subgraphs.get_mut("faulty").expect("configured above");
            faulty.headers = rules(
                "- remove: {named: authorization}\n- insert: {name: x-tenant, value: internal}",
            );
        },
        &client,
    )
    .await;
    assert_eq!(seen, ["x-tenant: internal"]);
}

/// A JWT signed with a fresh P-256 key, and the configuration that trusts that key.
fn signed_token(claims: serde_json::Value) -> (String, Vec<JwksSource>) {
    let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("a P-256 key");
    let point = pair.public_key_raw();
    let jwk = json!({
        "kty": "EC", "crv": "P-256", "kid": "k1", "alg": "ES256",
        "x": B64.encode(&point[1..33]), "y": B64.encode(&point[33..]),
    });
    let dir = support::process::test_dir("header-rules-jwks");
    let file = dir.join("jwks.json");
    std::fs::write(&file, json!({ "keys": [jwk] }).to_string()).expect("write the JWKS");
    let key = jsonwebtoken::EncodingKey::from_ec_pem(pair.serialize_pem().as_bytes())
        .expect("a PKCS#8 EC key");
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
    header.kid = Some("k1".to_owned());
    let token = jsonwebtoken::encode(&header, &claims, &key).expect("sign the token");
    let source = JwksSource {
        file: Some(file),
        url: None,
        refresh_interval: std::time::Duration::from_secs(60),
        ca_file: None,
    };
    (token, vec![source])
}

#[tokio::test]
async fn claims_of_the_validated_token_become_headers() {
    let exp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
        + 600;
    let claims = json!({"sub": "user-7", "exp": exp, "org": {"id": 42}, "roles": ["a", "b"]});
    let (token, jwks) = signed_token(claims);
    let bearer = format!("Bearer {token}");
    let seen = faulty_saw(
        |c| {
            c.authentication.jwks = jwks;
            c.headers.forward_authorization = false;
            c.headers.rules = rules(
                r#"
- insert: {name: x-user-id, from_claim: sub}
- insert: {name: x-org-id, from_claim: /org/id}
- insert: {name: x-roles, from_claim: roles}
- insert: {name: x-missing, from_claim: tenant}
"#,
            );
        },
        &[("authorization", &bearer)],
    )
    .await;
    assert_eq!(seen, ["x-org-id: 42", "x-roles: a,b", "x-user-id: user-7"]);
}
