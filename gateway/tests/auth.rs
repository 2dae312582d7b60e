//! Authentication and authorization over real HTTP: the gateway validates JWTs against
//! JWKS (a file, or a URL it refreshes) and enforces the supergraph's `@authenticated`,
//! `@requiresScopes` and `@policy` (tests/auth: subgraph SDLs composed by our
//! composition, served by the strict JSON subgraphs, which log every request they get).
//! Keys are made per run: ES256 by rcgen, RS256 by the `openssl` command (ring, our
//! crypto backend, cannot generate RSA keys).

mod support;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use bytes::Bytes;
use graphfleet_gateway::config::{Config, JwksSource, PolicyRule};
use graphfleet_gateway::supergraph::Supergraph;
use http_body_util::Full;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use support::json_subgraph::JsonSubgraphs;

const ISSUER: &str = "https://issuer.test";
const AUDIENCE: &str = "graphfleet";

/// A signing key and its public JWK.
struct TestKey {
    kid: String,
    alg: Algorithm,
    encoding: EncodingKey,
    jwk: Value,
}

impl TestKey {
    fn es256(kid: &str) -> Self {
        let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
            .expect("generate a P-256 key");
        let point = pair.public_key_raw(); // 0x04 || x || y
        assert_eq!(point.len(), 65, "an uncompressed P-256 point");
        let jwk = json!({
            "kty": "EC", "crv": "P-256", "kid": kid, "use": "sig", "alg": "ES256",
            "x": B64.encode(&point[1..33]), "y": B64.encode(&point[33..]),
        });
        let encoding =
            EncodingKey::from_ec_pem(pair.serialize_pem().as_bytes()).expect("PKCS#8 EC key");
        Self {
            kid: kid.to_owned(),
            alg: Algorithm::ES256,
            encoding,
            jwk,
        }
    }

    fn rs256(kid: &str, dir: &Path) -> Self {
        let pem = dir.join(format!("{kid}.pem"));
        let run = |args: &[&str]| {
            let out = std::process::Command::new("openssl")
                .args(args)
                .output()
                .expect("the openssl command runs");
            assert!(out.status.success(), "openssl {args:?}: {out:?}");
            out.stdout
        };
        let pem_path = pem.to_str().expect("UTF-8 path");
        run(&[
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
            "-out",
            pem_path,
        ]);
        let modulus =
            String::from_utf8(run(&["rsa", "-in", pem_path, "-noout", "-modulus"])).expect("text");
        let hex = modulus.trim().trim_start_matches("Modulus=");
        let n: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex modulus"))
            .collect();
        let jwk = json!({
            "kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
            "n": B64.encode(&n), "e": "AQAB",
        });
        let encoding = EncodingKey::from_rsa_pem(&std::fs::read(&pem).expect("the key file"))
            .expect("an RSA PEM key");
        Self {
            kid: kid.to_owned(),
            alg: Algorithm::RS256,
            encoding,
            jwk,
        }
    }

    fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(self.alg);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.encoding).expect("sign a token")
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
}

/// Claims the test configuration accepts, with `extra` merged in.
fn claims(extra: Value) -> Value {
    let mut base = json!({ "iss": ISSUER, "aud": AUDIENCE, "sub": "u1", "exp": now() + 600 });
    for (k, v) in extra.as_object().expect("an object") {
        base[k] = v.clone();
    }
    base
}

fn jwks(keys: &[&TestKey]) -> String {
    json!({ "keys": keys.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>() }).to_string()
}

fn config(jwks: Vec<JwksSource>) -> Config {
    let mut config = Config::default();
    config.authentication.jwks = jwks;
    config.authentication.issuers = vec![ISSUER.to_owned()];
    config.authentication.audiences = vec![AUDIENCE.to_owned()];
    config.authentication.leeway = Duration::ZERO;
    config.authorization.policies.insert(
        "admin".to_owned(),
        PolicyRule {
            claim: "roles".to_owned(),
            equals: None,
            contains: Some("admin".to_owned()),
        },
    );
    config
}

fn file_source(path: &Path) -> JwksSource {
    JwksSource {
        file: Some(path.to_owned()),
        url: None,
        refresh_interval: Duration::from_secs(60),
        ca_file: None,
    }
}

struct Setup {
    subgraphs: JsonSubgraphs,
    url: String,
    client: support::HttpClient,
}

async fn start(config: Config) -> Setup {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/auth");
    let subgraphs = support::json_subgraph::start_suite(&dir).await;
    let text = std::fs::read_to_string(dir.join("supergraph.graphql"))
        .expect("tests/auth/supergraph.graphql")
        .replace("http://127.0.0.1:4200", &subgraphs.base_url);
    let supergraph = Supergraph::parse(&text).expect("the auth supergraph loads");
    let url = support::start_gateway_with_config(config, supergraph).await;
    Setup {
        subgraphs,
        url,
        client: support::client(),
    }
}

impl Setup {
    async fn post(&self, query: &str, headers: &[(&str, &str)]) -> (u16, Value) {
        let mut all = vec![("content-type", "application/json")];
        all.extend_from_slice(headers);
        let body = serde_json::to_vec(&json!({ "query": query })).expect("JSON");
        let reply = support::request(&self.client, "POST", &self.url, &all, body).await;
        let value = serde_json::from_slice(&reply.body).unwrap_or_else(|e| {
            panic!("{e}: {}", String::from_utf8_lossy(&reply.body));
        });
        (reply.status, value)
    }

    async fn with_variables(&self, query: &str, variables: Value, token: &str) -> (u16, Value) {
        let bearer = format!("Bearer {token}");
        let headers = [
            ("content-type", "application/json"),
            ("authorization", bearer.as_str()),
        ];
        let body =
            serde_json::to_vec(&json!({ "query": query, "variables": variables })).expect("JSON");
        let reply = support::request(&self.client, "POST", &self.url, &headers, body).await;
        let value = serde_json::from_slice(&reply.body).expect("a JSON body");
        (reply.status, value)
    }

    async fn with_token(&self, query: &str, token: &str) -> (u16, Value) {
        let bearer = format!("Bearer {token}");
        self.post(query, &[("authorization", &bearer)]).await
    }

    /// The subgraph queries received since the log was last taken.
    fn take_queries(&self) -> Vec<String> {
        let mut log = self.subgraphs.log.lock().expect("log lock");
        log.drain(..)
            .map(|(sg, body)| format!("{sg}: {}", body["query"].as_str().unwrap_or("")))
            .collect()
    }
}

fn auth_error(message: &str) -> Value {
    json!({ "errors": [{ "message": message, "extensions": { "code": "AUTH_ERROR" } }] })
}

fn unauthorized(path: Value) -> Value {
    json!({
        "message": "Unauthorized field or type",
        "path": path,
        "extensions": { "code": "UNAUTHORIZED_FIELD_OR_TYPE" },
    })
}

#[tokio::test]
async fn tokens_are_validated_against_the_jwks() {
    let dir = support::process::test_dir("auth-tokens");
    let es = TestKey::es256("es-1");
    let rs = TestKey::rs256("rs-1", &dir);
    let stranger = TestKey::es256("es-1"); // same kid, other key
    let unknown = TestKey::es256("es-unknown");
    let file = dir.join("jwks.json");
    std::fs::write(&file, jwks(&[&es, &rs])).expect("write the JWKS");
    let setup = start(config(vec![file_source(&file)])).await;
    let query = "{ me { name } }";
    let ok = json!({ "data": { "me": { "name": "Ada" } } });

    for key in [&es, &rs] {
        let (status, body) = setup.with_token(query, &key.sign(&claims(json!({})))).await;
        assert_eq!((status, &body), (200, &ok), "{:?}", key.alg);
    }

    let expired = es.sign(&claims(json!({ "exp": now() - 10 })));
    let wrong_aud = rs.sign(&claims(json!({ "aud": "someone-else" })));
    let wrong_iss = es.sign(&claims(json!({ "iss": "https://evil.test" })));
    let bad_signature = stranger.sign(&claims(json!({})));
    let unknown_kid = unknown.sign(&claims(json!({})));
    let no_exp = {
        let mut c = claims(json!({}));
        c.as_object_mut().expect("object").remove("exp");
        es.sign(&c)
    };
    let without = |claim: &str| {
        let mut c = claims(json!({}));
        c.as_object_mut().expect("object").remove(claim);
        es.sign(&c)
    };
    let (no_iss, no_aud) = (without("iss"), without("aud"));
    let not_yet = es.sign(&claims(json!({ "nbf": now() + 600 })));
    let alg_none = {
        let header = B64.encode(br#"{"alg":"none","typ":"JWT"}"#);
        let payload = B64.encode(claims(json!({})).to_string());
        format!("{header}.{payload}.")
    };
    let hs256 = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims(json!({})),
        &EncodingKey::from_secret(b"shared"),
    )
    .expect("sign");
    let tampered = {
        let token = es.sign(&claims(json!({})));
        let mut parts: Vec<String> = token.split('.').map(str::to_owned).collect();
        parts[1] = B64.encode(claims(json!({ "sub": "admin" })).to_string());
        parts.join(".")
    };
    let cases = [
        (expired.as_str(), "invalid JWT: the token has expired"),
        (
            wrong_aud.as_str(),
            "invalid JWT: the token's audience (aud) is not accepted",
        ),
        (
            wrong_iss.as_str(),
            "invalid JWT: the token's issuer (iss) is not accepted",
        ),
        (
            bad_signature.as_str(),
            "invalid JWT: the token's signature does not match its key",
        ),
        (
            tampered.as_str(),
            "invalid JWT: the token's signature does not match its key",
        ),
        (
            unknown_kid.as_str(),
            "invalid JWT: no key with kid \"es-unknown\" for algorithm ES256 in the JWKS",
        ),
        (no_exp.as_str(), "invalid JWT: the token has no exp claim"),
        (no_iss.as_str(), "invalid JWT: the token has no iss claim"),
        (no_aud.as_str(), "invalid JWT: the token has no aud claim"),
        (
            not_yet.as_str(),
            "invalid JWT: the token is not valid yet (nbf)",
        ),
        (
            alg_none.as_str(),
            "invalid JWT: the token's algorithm \"none\" is not accepted (authentication.algorithms: \
             RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384)",
        ),
        (
            hs256.as_str(),
            "invalid JWT: the token's algorithm \"HS256\" is not accepted (authentication.algorithms: \
             RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384)",
        ),
        (
            "not-a-jwt",
            "invalid JWT: the token is malformed (a JWT is three base64url parts separated by dots)",
        ),
        (
            "a.b.c",
            "invalid JWT: the token is malformed (its header is not base64url JSON)",
        ),
    ];
    for (token, message) in cases {
        let (status, body) = setup.with_token(query, token).await;
        assert_eq!((status, body), (401, auth_error(message)), "{token}");
    }
    let (status, body) = setup.post(query, &[("authorization", "Basic abc")]).await;
    assert_eq!(
        (status, body),
        (
            401,
            auth_error("invalid JWT: the authorization header must be `Bearer <token>`")
        )
    );
    assert!(
        setup.take_queries().len() == 2,
        "only the two valid requests reached a subgraph"
    );
}

#[tokio::test]
async fn a_missing_token_is_refused_when_required_and_a_cookie_can_carry_it() {
    let dir = support::process::test_dir("auth-required");
    let es = TestKey::es256("es-1");
    let file = dir.join("jwks.json");
    std::fs::write(&file, jwks(&[&es])).expect("write the JWKS");
    let mut config = config(vec![file_source(&file)]);
    config.authentication.require_authentication = true;
    config.authentication.cookie = Some("session".to_owned());
    let setup = start(config).await;
    let query = "{ products { name } }";
    let (status, body) = setup.post(query, &[]).await;
    let message = "this request needs a token in the authorization header (`Bearer <token>`) or \
                   the session cookie";
    assert_eq!(
        (status, body),
        (
            401,
            json!({ "errors": [{ "message": message, "extensions": { "code": "UNAUTHENTICATED" } }] })
        )
    );
    assert!(setup.take_queries().is_empty(), "no subgraph was asked");
    let cookie = format!("theme=dark; session={}", es.sign(&claims(json!({}))));
    let (status, body) = setup.post(query, &[("cookie", &cookie)]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["products"][0]["name"], "Table");
}

#[tokio::test]
async fn unauthorized_fields_are_null_with_an_error_and_never_fetched() {
    let dir = support::process::test_dir("auth-fields");
    let es = TestKey::es256("es-1");
    let file = dir.join("jwks.json");
    std::fs::write(&file, jwks(&[&es])).expect("write the JWKS");
    let setup = start(config(vec![file_source(&file)])).await;

    // @authenticated without a token: `me` is null, `products` still answered, and the
    // products subgraph was asked for `products` alone.
    let (status, body) = setup.post("{ me { name } products { name } }", &[]).await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        json!({
            "data": { "me": null, "products": [{ "name": "Table" }, { "name": "Chair" }] },
            "errors": [unauthorized(json!(["me"]))],
        })
    );
    let queries = setup.take_queries();
    assert_eq!(queries, ["products: query { products { name } }"]);

    // Only `me` selected: no subgraph request at all.
    let (_, body) = setup.post("{ me { name } }", &[]).await;
    assert_eq!(
        body,
        json!({ "data": { "me": null }, "errors": [unauthorized(json!(["me"]))] })
    );
    assert_eq!(setup.take_queries(), Vec::<String>::new());

    // @requiresScopes: any one of the inner lists.
    let query = "{ products { name price } }";
    let token = es.sign(&claims(json!({ "scope": "read:other" })));
    let (_, body) = setup.with_token(query, &token).await;
    assert_eq!(
        body,
        json!({
            "data": { "products": [{ "name": "Table", "price": null }, { "name": "Chair", "price": null }] },
            "errors": [unauthorized(json!(["products", 0, "price"])), unauthorized(json!(["products", 1, "price"]))],
        })
    );
    let queries = setup.take_queries();
    assert!(queries.iter().all(|q| !q.contains("price")), "{queries:?}");
    for scope in [json!("read:other read:price"), json!(["admin"])] {
        let token = es.sign(&claims(json!({ "scope": scope })));
        let (_, body) = setup.with_token(query, &token).await;
        assert_eq!(
            body,
            json!({ "data": { "products": [{ "name": "Table", "price": 120.5 }, { "name": "Chair", "price": 35 }] } }),
            "{scope}"
        );
        assert!(setup.take_queries().iter().any(|q| q.contains("price")));
    }

    // A non-null field denied: null propagates to the nullable parent, and the reviews
    // subgraph (which alone resolves `stock`) is not asked.
    let (_, body) = setup.post("{ topProduct { name stock } }", &[]).await;
    assert_eq!(
        body,
        json!({ "data": { "topProduct": null }, "errors": [unauthorized(json!(["topProduct", "stock"]))] })
    );
    let queries = setup.take_queries();
    assert!(
        queries.iter().all(|q| q.starts_with("products")),
        "{queries:?}"
    );
    let token = es.sign(&claims(json!({ "scope": "read:stock" })));
    let (_, body) = setup
        .with_token("{ topProduct { name stock reviews { body } } }", &token)
        .await;
    assert_eq!(
        body,
        json!({ "data": { "topProduct": { "name": "Table", "stock": 3, "reviews": [{ "body": "sturdy" }] } } })
    );

    // @policy on a type guards every field returning it.
    let query = "{ topProduct { secret { note } } }";
    let (_, body) = setup
        .with_token(query, &es.sign(&claims(json!({ "roles": ["user"] }))))
        .await;
    assert_eq!(
        body,
        json!({ "data": { "topProduct": { "secret": null } }, "errors": [unauthorized(json!(["topProduct", "secret"]))] })
    );
    assert!(setup.take_queries().iter().all(|q| !q.contains("secret")));
    let (_, body) = setup
        .with_token(
            query,
            &es.sign(&claims(json!({ "roles": ["user", "admin"] }))),
        )
        .await;
    assert_eq!(
        body,
        json!({ "data": { "topProduct": { "secret": { "note": "cost 40" } } } })
    );
}

#[tokio::test]
async fn reject_mode_refuses_the_whole_request() {
    let dir = support::process::test_dir("auth-reject");
    let es = TestKey::es256("es-1");
    let file = dir.join("jwks.json");
    std::fs::write(&file, jwks(&[&es])).expect("write the JWKS");
    let mut config = config(vec![file_source(&file)]);
    config.authorization.reject_unauthorized = true;
    let setup = start(config).await;
    let (status, body) = setup
        .post("{ products { name price } me { id } }", &[])
        .await;
    assert_eq!(status, 200, "a request error (application/json)");
    assert_eq!(
        body,
        json!({ "errors": [{
            "message": "Unauthorized field or type: this request may not read Product.price, Query.me",
            "extensions": { "code": "UNAUTHORIZED_FIELD_OR_TYPE" },
        }] })
    );
    assert!(setup.take_queries().is_empty(), "no subgraph was asked");
    let token = es.sign(&claims(json!({ "scope": "read:price" })));
    let (_, body) = setup
        .with_token("{ products { name price } me { id } }", &token)
        .await;
    assert_eq!(body["data"]["me"]["id"], "u1", "{body}");
    // A denied field that @include leaves out does not refuse the request.
    let query = "query ($p: Boolean!) { products { name price @include(if: $p) } }";
    let (status, body) = setup
        .with_variables(query, json!({ "p": false }), &es.sign(&claims(json!({}))))
        .await;
    assert_eq!(
        (status, body),
        (
            200,
            json!({ "data": { "products": [{ "name": "Table" }, { "name": "Chair" }] } })
        )
    );
    let (_, body) = setup
        .with_variables(query, json!({ "p": true }), &es.sign(&claims(json!({}))))
        .await;
    assert_eq!(
        body["errors"][0]["message"],
        "Unauthorized field or type: this request may not read Product.price"
    );
}

/// A JWKS over HTTP whose answer the test changes.
async fn jwks_server(body: Arc<Mutex<(u16, String)>>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("address");
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let body = body.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |_req| {
                    let (status, text) = body.lock().expect("lock").clone();
                    async move {
                        let mut response = hyper::Response::new(Full::new(Bytes::from(text)));
                        *response.status_mut() =
                            hyper::StatusCode::from_u16(status).expect("status");
                        Ok::<_, std::convert::Infallible>(response)
                    }
                });
                let io = hyper_util::rt::TokioIo::new(stream);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await;
            });
        }
    });
    format!("http://{addr}/jwks.json")
}

#[tokio::test]
async fn jwks_from_a_url_is_refreshed_and_a_failed_refresh_keeps_the_keys() {
    let old = TestKey::es256("old");
    let new = TestKey::es256("new");
    let served = Arc::new(Mutex::new((200, jwks(&[&old]))));
    let url = jwks_server(served.clone()).await;
    let source = JwksSource {
        file: None,
        url: Some(url),
        refresh_interval: Duration::from_millis(200),
        ca_file: None,
    };
    let setup = start(config(vec![source])).await;
    let query = "{ me { name } }";
    let (status, _) = setup.with_token(query, &old.sign(&claims(json!({})))).await;
    assert_eq!(status, 200, "the first request waits for the first fetch");
    let new_token = new.sign(&claims(json!({})));
    let (status, _) = setup.with_token(query, &new_token).await;
    assert_eq!(status, 401, "not rotated yet");

    *served.lock().expect("lock") = (200, jwks(&[&new]));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (status, body) = setup.with_token(query, &new_token).await;
        if status == 200 {
            assert_eq!(body, json!({ "data": { "me": { "name": "Ada" } } }));
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the rotated key was never picked up"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (status, _) = setup.with_token(query, &old.sign(&claims(json!({})))).await;
    assert_eq!(status, 401, "the old key is gone");

    // The provider fails: the last good keys stay.
    *served.lock().expect("lock") = (500, "down".to_owned());
    tokio::time::sleep(Duration::from_millis(600)).await;
    let (status, _) = setup.with_token(query, &new_token).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn without_auth_directives_or_with_authorization_off_nothing_is_enforced() {
    let mut config = Config::default();
    config.authorization.enabled = false;
    let setup = start(config).await;
    let (status, body) = setup
        .post("{ me { name } topProduct { price } }", &[])
        .await;
    assert_eq!(
        (status, body),
        (
            200,
            json!({ "data": { "me": { "name": "Ada" }, "topProduct": { "price": 120.5 } } })
        )
    );
}

#[tokio::test]
async fn requirements_on_enums_scalars_and_fields_behind_an_interface() {
    let dir = support::process::test_dir("auth-types");
    let es = TestKey::es256("es-1");
    let file = dir.join("jwks.json");
    std::fs::write(&file, jwks(&[&es])).expect("write the JWKS");
    let setup = start(config(vec![file_source(&file)])).await;
    // `Item.label` may resolve to `Product.label` (@requiresScopes), `Tier` is an enum
    // with @requiresScopes, `Money` a scalar with @policy.
    let query = "{ items { id label } topProduct { name tier cost } }";
    let token = es.sign(&claims(json!({ "scope": "read:other" })));
    let (status, body) = setup.with_token(query, &token).await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        json!({
            "data": {
                "items": [{ "id": "1", "label": null }, { "id": "2", "label": null }],
                "topProduct": { "name": "Table", "tier": null, "cost": null },
            },
            "errors": [
                unauthorized(json!(["items", 0, "label"])),
                unauthorized(json!(["items", 1, "label"])),
                unauthorized(json!(["topProduct", "tier"])),
                unauthorized(json!(["topProduct", "cost"])),
            ],
        })
    );
    let queries = setup.take_queries();
    for field in ["label", "tier", "cost"] {
        assert!(queries.iter().all(|q| !q.contains(field)), "{queries:?}");
    }
    let token = es.sign(&claims(
        json!({ "scope": "read:label read:tier", "roles": ["admin"] }),
    ));
    let (_, body) = setup.with_token(query, &token).await;
    assert_eq!(
        body,
        json!({ "data": {
            "items": [{ "id": "1", "label": "T-1" }, { "id": "2", "label": "C-2" }],
            "topProduct": { "name": "Table", "tier": "GOLD", "cost": "40.00" },
        } })
    );
}

/// The real binary, configured by `--set` flags: the keys load from the file, a request
/// without a token is refused, a valid one is authorized by the configured policy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_validates_tokens_configured_by_flags() {
    let dir = support::process::test_dir("auth-binary");
    let es = TestKey::es256("es-1");
    let jwks_file = dir.join("jwks.json");
    std::fs::write(&jwks_file, jwks(&[&es])).expect("write the JWKS");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/auth");
    let subgraphs = support::json_subgraph::start_suite(&fixture).await;
    let text = std::fs::read_to_string(fixture.join("supergraph.graphql"))
        .expect("tests/auth/supergraph.graphql")
        .replace("http://127.0.0.1:4200", &subgraphs.base_url);
    let supergraph = dir.join("supergraph.graphql");
    std::fs::write(&supergraph, text).expect("write the supergraph");
    let jwks_setting = format!(
        "authentication.jwks=[{{file: {}}}]",
        jwks_file.to_str().expect("UTF-8 path")
    );
    let settings = [
        jwks_setting.as_str(),
        "authentication.require_authentication=true",
        "authentication.audiences=[graphfleet]",
        "authorization.policies.admin.claim=roles",
        "authorization.policies.admin.contains=admin",
    ];
    let gateway = support::fed::start_gateway(&dir, &supergraph, &settings).await;
    let url = gateway.url("/graphql");
    let client = support::client();
    let post = |token: Option<String>| {
        let (client, url) = (client.clone(), url.clone());
        async move {
            let body =
                serde_json::to_vec(&json!({ "query": "{ topProduct { secret { note } } }" }))
                    .expect("JSON");
            let bearer = token.map(|t| format!("Bearer {t}"));
            let mut headers = vec![("content-type", "application/json")];
            if let Some(b) = &bearer {
                headers.push(("authorization", b.as_str()));
            }
            let reply = support::request(&client, "POST", &url, &headers, body).await;
            let value: Value = serde_json::from_slice(&reply.body).expect("JSON body");
            (reply.status, value)
        }
    };
    let (status, body) = post(None).await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["errors"][0]["extensions"]["code"], "UNAUTHENTICATED");
    let expired = es.sign(&claims(json!({ "exp": now() - 3600 })));
    let (status, body) = post(Some(expired)).await;
    assert_eq!(
        (status, body),
        (401, auth_error("invalid JWT: the token has expired"))
    );
    let admin = es.sign(&claims(json!({ "roles": ["admin"] })));
    let (status, body) = post(Some(admin)).await;
    assert_eq!(
        (status, body),
        (
            200,
            json!({ "data": { "topProduct": { "secret": { "note": "cost 40" } } } })
        )
    );
}

/// Plans are kept per (condition variable values, denied requirements): each of the four
/// combinations answers as its own, repeated requests included.
#[tokio::test]
async fn condition_variables_and_denied_requirements_combine() {
    let dir = support::process::test_dir("auth-variants");
    let es = TestKey::es256("es-1");
    let file = dir.join("jwks.json");
    std::fs::write(&file, jwks(&[&es])).expect("write the JWKS");
    let setup = start(config(vec![file_source(&file)])).await;
    let query = "query ($p: Boolean!) { topProduct { name price @include(if: $p) } }";
    let scoped = es.sign(&claims(json!({ "scope": "read:price" })));
    let unscoped = es.sign(&claims(json!({ "scope": "read:other" })));
    for _ in 0..2 {
        let (_, body) = setup
            .with_variables(query, json!({ "p": true }), &scoped)
            .await;
        assert_eq!(
            body,
            json!({ "data": { "topProduct": { "name": "Table", "price": 120.5 } } })
        );
        let (_, body) = setup
            .with_variables(query, json!({ "p": true }), &unscoped)
            .await;
        assert_eq!(
            body,
            json!({
                "data": { "topProduct": { "name": "Table", "price": null } },
                "errors": [unauthorized(json!(["topProduct", "price"]))],
            })
        );
        for token in [&scoped, &unscoped] {
            let (_, body) = setup
                .with_variables(query, json!({ "p": false }), token)
                .await;
            assert_eq!(
                body,
                json!({ "data": { "topProduct": { "name": "Table" } } }),
                "an excluded field needs no authorization"
            );
        }
    }
}

/// A token whose `kid` no key has makes a URL source be fetched again at once (its
/// provider may have rotated keys since the last refresh), at most once per 10 s.
#[tokio::test]
async fn an_unknown_kid_refetches_a_url_at_most_every_ten_seconds() {
    let old = TestKey::es256("old");
    let new = TestKey::es256("new");
    let newer = TestKey::es256("newer");
    let served = Arc::new(Mutex::new((200, jwks(&[&old]))));
    let url = jwks_server(served.clone()).await;
    let source = JwksSource {
        file: None,
        url: Some(url),
        refresh_interval: Duration::from_secs(3600),
        ca_file: None,
    };
    let setup = start(config(vec![source])).await;
    let query = "{ me { name } }";
    let (status, _) = setup.with_token(query, &old.sign(&claims(json!({})))).await;
    assert_eq!(status, 200);
    *served.lock().expect("lock") = (200, jwks(&[&old, &new]));
    let (status, body) = setup.with_token(query, &new.sign(&claims(json!({})))).await;
    assert_eq!(
        (status, body),
        (200, json!({ "data": { "me": { "name": "Ada" } } })),
        "the rotated key is fetched for the token that needs it"
    );
    *served.lock().expect("lock") = (200, jwks(&[&newer]));
    let (status, body) = setup
        .with_token(query, &newer.sign(&claims(json!({}))))
        .await;
    assert_eq!(
        (status, body),
        (
            401,
            auth_error("invalid JWT: no key with kid \"newer\" for algorithm ES256 in the JWKS")
        ),
        "a second unknown kid within 10 s does not fetch again"
    );
    let (status, _) = setup.with_token(query, &old.sign(&claims(json!({})))).await;
    assert_eq!(status, 200, "the keys fetched last stay");
}

/// A JWKS over HTTPS with a certificate for 127.0.0.1 signed by a CA made here: its
/// URL and the CA's PEM.
async fn https_jwks_server(text: String) -> (String, String) {
    let (acceptor, ca) = graphfleet_testkit::tls::loopback_acceptor();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("address");
    let text = Bytes::from(text);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (acceptor, text) = (acceptor.clone(), text.clone());
            tokio::spawn(async move {
                // A client refusing the certificate ends the handshake.
                let Ok(stream) = acceptor.accept(stream).await else {
                    return;
                };
                let service = hyper::service::service_fn(move |_req| {
                    let body = Full::new(text.clone());
                    async move { Ok::<_, std::convert::Infallible>(hyper::Response::new(body)) }
                });
                let io = hyper_util::rt::TokioIo::new(stream);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await;
            });
        }
    });
    (format!("https://{addr}/jwks.json"), ca)
}

/// A JWKS served over HTTPS by a private CA: its keys verify tokens once the source's
/// `ca_file` names that CA; without it the fetch is refused (the log says the
/// certificate's issuer is unknown and names `ca_file`), so no key verifies the token.
#[tokio::test]
async fn an_https_jwks_is_trusted_through_its_ca_file() {
    let key = TestKey::es256("tls");
    let (url, ca) = https_jwks_server(jwks(&[&key])).await;
    let dir = support::process::test_dir("jwks_ca_file");
    let ca_file = dir.join("ca.pem");
    std::fs::write(&ca_file, ca).expect("write the CA");
    let source = |ca_file| JwksSource {
        file: None,
        url: Some(url.clone()),
        refresh_interval: Duration::from_secs(3600),
        ca_file,
    };
    let token = key.sign(&claims(json!({})));
    let query = "{ me { name } }";

    let trusting = start(config(vec![source(Some(ca_file.clone()))])).await;
    let (status, body) = trusting.with_token(query, &token).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, json!({ "data": { "me": { "name": "Ada" } } }));

    let refusing = start(config(vec![source(None)])).await;
    let (status, body) = refusing.with_token(query, &token).await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(
        body["errors"][0]["message"],
        "invalid JWT: no key with kid \"tls\" for algorithm ES256 in the JWKS"
    );
}
