//! CSRF prevention, CORS and response compression over real HTTP: the gateway on a
//! loopback port in front of the `keys` JSON subgraphs, each status, header and error
//! body checked exactly; compressed bodies are decoded with the real decoders.

mod support;

use graphfleet_gateway::config::{CompressionAlgorithm, Config};
use graphfleet_gateway::supergraph::Supergraph;
use serde_json::{Value, json};
use std::io::Read;
use std::time::Duration;
use support::Reply;

struct Env {
    url: String,
    client: support::HttpClient,
    subgraphs: support::json_subgraph::JsonSubgraphs,
}

async fn env(config: Config) -> Env {
    let (subgraphs, text) = support::fixture_subgraphs("keys").await;
    let supergraph = Supergraph::parse(&text).expect("supergraph loads");
    let url = support::start_gateway_with_config(config, supergraph).await;
    Env {
        url,
        client: support::client(),
        subgraphs,
    }
}

impl Env {
    async fn send(&self, method: &str, url: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
        support::request(&self.client, method, url, headers, body.to_vec()).await
    }

    async fn post(&self, headers: &[(&str, &str)], query: &str) -> Reply {
        let body = serde_json::to_vec(&json!({ "query": query })).expect("JSON");
        let mut all = vec![("content-type", "application/json")];
        all.extend_from_slice(headers);
        self.send("POST", &self.url, &all, &body).await
    }

    fn subgraph_requests(&self) -> u64 {
        self.subgraphs.counts().values().sum()
    }
}

const USERS: &str = r#"{"data":{"users":[{"id":"u1"},{"id":"u2"}]}}"#;
const GET_USERS: &str = "?query=%7B%20users%20%7B%20id%20%7D%20%7D";

fn text(reply: &Reply) -> &str {
    std::str::from_utf8(&reply.body).expect("UTF-8 body")
}

fn header<'a>(reply: &'a Reply, name: &str) -> Option<&'a str> {
    reply
        .headers
        .get(name)
        .map(|v| v.to_str().expect("ASCII header"))
}

/// The response headers whose names start with `access-control-`, sorted.
fn cors_headers(reply: &Reply) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = reply
        .headers
        .iter()
        .filter(|(k, _)| k.as_str().starts_with("access-control-"))
        .map(|(k, v)| (k.to_string(), v.to_str().expect("ASCII").to_owned()))
        .collect();
    out.sort();
    out
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

const CSRF_MESSAGE: &str = "this request was blocked as a possible cross-site request forgery \
    (CSRF): send a Content-Type other than text/plain, application/x-www-form-urlencoded, \
    multipart/form-data (e.g. application/json), or send one of these headers: \
    x-apollo-operation-name, apollo-require-preflight";

fn csrf_error(message: &str) -> Value {
    json!({"errors": [{"message": message, "extensions": {"code": "CSRF_PREVENTED"}}]})
}

fn assert_csrf_refused(reply: &Reply, message: &str, what: &str) {
    assert_eq!(reply.status, 400, "{what}: {}", text(reply));
    assert_eq!(reply.content_type, "application/json", "{what}");
    let body: Value = serde_json::from_slice(&reply.body).expect("a JSON error");
    assert_eq!(body, csrf_error(message), "{what}");
}

#[tokio::test]
async fn csrf_refuses_requests_a_form_or_link_could_send() {
    let env = env(Config::default()).await;
    let get = format!("{}{GET_USERS}", env.url);
    let reply = env.send("GET", &get, &[], b"").await;
    assert_csrf_refused(&reply, CSRF_MESSAGE, "GET without a preflight header");
    let body = serde_json::to_vec(&json!({"query": "{ users { id } }"})).expect("JSON");
    for content_type in [
        "text/plain",
        "Text/Plain; charset=utf-8",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
    ] {
        let headers = [("content-type", content_type)];
        let reply = env.send("POST", &env.url, &headers, &body).await;
        assert_csrf_refused(&reply, CSRF_MESSAGE, content_type);
    }
    let reply = env.send("POST", &env.url, &[], &body).await;
    assert_csrf_refused(&reply, CSRF_MESSAGE, "POST without Content-Type");
    // The negotiated media type carries the error too.
    let accept = [("accept", "application/graphql-response+json")];
    let reply = env.send("GET", &get, &accept, b"").await;
    assert_eq!(reply.status, 400);
    assert_eq!(reply.content_type, "application/graphql-response+json");
    assert_eq!(env.subgraph_requests(), 0, "nothing refused was executed");

    // Preflighted requests pass: either header (any value), or a JSON body.
    for name in ["apollo-require-preflight", "X-Apollo-Operation-Name"] {
        let reply = env.send("GET", &get, &[(name, "")], b"").await;
        assert_eq!(reply.status, 200, "{name}: {}", text(&reply));
        assert_eq!(text(&reply), USERS);
    }
    let reply = env.post(&[], "{ users { id } }").await;
    assert_eq!((reply.status, text(&reply)), (200, USERS));
    // A form content type with the header: past CSRF, then refused as not JSON.
    let headers = [
        ("content-type", "text/plain"),
        ("apollo-require-preflight", "1"),
    ];
    let reply = env.send("POST", &env.url, &headers, &body).await;
    assert_eq!(reply.status, 415);
    // Health and metrics are not GraphQL: no CSRF check.
    for path in ["/health", "/health/ready", "/metrics"] {
        let reply = env
            .send("GET", &env.url.replace("/graphql", path), &[], b"")
            .await;
        assert_eq!(reply.status, 200, "{path}");
    }
}

#[tokio::test]
async fn csrf_headers_are_configurable_and_it_can_be_turned_off() {
    let mut config = Config::default();
    config.csrf.required_headers = vec!["graphql-client-name".to_owned()];
    let env = env(config).await;
    let get = format!("{}{GET_USERS}", env.url);
    let reply = env
        .send("GET", &get, &[("graphql-client-name", "web")], b"")
        .await;
    assert_eq!((reply.status, text(&reply)), (200, USERS));
    let reply = env.send("GET", &get, support::PREFLIGHTED, b"").await;
    let message = CSRF_MESSAGE.replace(
        "x-apollo-operation-name, apollo-require-preflight",
        "graphql-client-name",
    );
    assert_csrf_refused(&reply, &message, "a default header no longer configured");

    let mut config = Config::default();
    config.csrf.required_headers.clear();
    let env = self::env(config).await;
    let get = format!("{}{GET_USERS}", env.url);
    let reply = env.send("GET", &get, support::PREFLIGHTED, b"").await;
    let message = "this request was blocked as a possible cross-site request forgery (CSRF): \
        send a Content-Type other than text/plain, application/x-www-form-urlencoded, \
        multipart/form-data (e.g. application/json), (csrf.required_headers is empty, so a \
        GET request cannot pass)";
    assert_csrf_refused(&reply, message, "no header can pass");

    let mut config = Config::default();
    config.csrf.enabled = false;
    let env = self::env(config).await;
    let reply = env
        .send("GET", &format!("{}{GET_USERS}", env.url), &[], b"")
        .await;
    assert_eq!((reply.status, text(&reply)), (200, USERS));
}

fn cors_config() -> Config {
    let mut config = Config::default();
    config.cors.allow_origins = vec!["https://app.example.com".to_owned()];
    config.cors.allow_origin_patterns =
        vec![r"https://[a-z0-9-]+\.preview\.example\.com".to_owned()];
    config.cors.allow_credentials = true;
    config.cors.expose_headers = vec!["x-request-id".to_owned()];
    config.cors.max_age = Some(Duration::from_secs(600));
    config
}

fn preflight(origin: &str) -> [(&str, &str); 3] {
    [
        ("origin", origin),
        ("access-control-request-method", "POST"),
        (
            "access-control-request-headers",
            "content-type,apollo-require-preflight",
        ),
    ]
}

/// What tower-http's answers vary by: the methods are a fixed list, the allowed headers
/// mirror the request's.
const VARY_CORS: &str = "origin, access-control-request-headers";
/// What a refused preflight varies by.
const VARY_PREFLIGHT: &str =
    "origin, access-control-request-method, access-control-request-headers";

#[tokio::test]
async fn cors_preflights_are_answered_without_graphql() {
    let env = env(cors_config()).await;
    for origin in [
        "https://app.example.com",
        "https://pr-42.preview.example.com",
    ] {
        let reply = env.send("OPTIONS", &env.url, &preflight(origin), b"").await;
        assert_eq!(reply.status, 200, "{origin}: {}", text(&reply));
        assert!(reply.body.is_empty());
        assert_eq!(
            cors_headers(&reply),
            pairs(&[
                ("access-control-allow-credentials", "true"),
                (
                    "access-control-allow-headers",
                    "content-type,apollo-require-preflight"
                ),
                ("access-control-allow-methods", "GET,POST"),
                ("access-control-allow-origin", origin),
                ("access-control-max-age", "600"),
            ]),
            "{origin}"
        );
        let vary: Vec<_> = reply.headers.get_all("vary").iter().collect();
        assert_eq!(vary.len(), 1);
        assert_eq!(vary[0], VARY_CORS);
    }
    // Not allowed: a look-alike of the pattern, another scheme, a suffix of an origin.
    for origin in [
        "https://evil.test",
        "https://pr-42.preview.example.com.evil.test",
        "http://app.example.com",
        "https://app.example.com:8443",
    ] {
        let reply = env.send("OPTIONS", &env.url, &preflight(origin), b"").await;
        assert_eq!(reply.status, 403, "{origin}");
        assert_eq!(reply.content_type, "application/json");
        assert_eq!(
            cors_headers(&reply),
            [],
            "{origin}: nothing a browser could use"
        );
        assert_eq!(header(&reply, "vary"), Some(VARY_PREFLIGHT));
        let message = format!(
            "CORS preflight refused: origin {origin:?} is not in cors.allow_origins and \
             matches no cors.allow_origin_patterns"
        );
        let body: Value = serde_json::from_slice(&reply.body).expect("JSON error");
        assert_eq!(
            body,
            json!({"errors": [{"message": message, "extensions": {"code": "CORS_ORIGIN_NOT_ALLOWED"}}]})
        );
    }
    assert_eq!(env.subgraph_requests(), 0, "preflights never reach GraphQL");
}

#[tokio::test]
async fn cors_headers_go_to_allowed_origins_only() {
    let env = env(cors_config()).await;
    let reply = env
        .post(&[("origin", "https://app.example.com")], "{ users { id } }")
        .await;
    assert_eq!((reply.status, text(&reply)), (200, USERS));
    assert_eq!(
        cors_headers(&reply),
        pairs(&[
            ("access-control-allow-credentials", "true"),
            ("access-control-allow-origin", "https://app.example.com"),
            ("access-control-expose-headers", "x-request-id"),
        ])
    );
    assert_eq!(header(&reply, "vary"), Some(VARY_CORS));
    // Another origin is served (a browser then refuses its script the answer), with no
    // CORS header it could use; so is a request with no origin (not a browser).
    let reply = env
        .post(&[("origin", "https://evil.test")], "{ users { id } }")
        .await;
    assert_eq!((reply.status, text(&reply)), (200, USERS));
    assert_eq!(
        cors_headers(&reply),
        pairs(&[("access-control-expose-headers", "x-request-id")])
    );
    let reply = env.post(&[], "{ users { id } }").await;
    assert_eq!(
        cors_headers(&reply),
        pairs(&[("access-control-expose-headers", "x-request-id")])
    );
    // CSRF prevention still applies behind CORS, and its error carries the CORS headers
    // so the browser script can read why.
    let reply = env
        .send(
            "GET",
            &format!("{}{GET_USERS}", env.url),
            &[("origin", "https://app.example.com")],
            b"",
        )
        .await;
    assert_csrf_refused(&reply, CSRF_MESSAGE, "cross-origin GET");
    assert_eq!(
        header(&reply, "access-control-allow-origin"),
        Some("https://app.example.com")
    );
}

#[tokio::test]
async fn any_origin_and_cors_off() {
    let mut config = Config::default();
    config.cors.allow_origins = vec!["*".to_owned()];
    let env = env(config).await;
    let reply = env
        .send("OPTIONS", &env.url, &preflight("https://a.test"), b"")
        .await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        cors_headers(&reply),
        pairs(&[
            (
                "access-control-allow-headers",
                "content-type,apollo-require-preflight"
            ),
            ("access-control-allow-methods", "GET,POST"),
            ("access-control-allow-origin", "*"),
        ])
    );
    let reply = env
        .post(&[("origin", "https://a.test")], "{ users { id } }")
        .await;
    assert_eq!(
        cors_headers(&reply),
        pairs(&[("access-control-allow-origin", "*")])
    );

    // The default: no CORS. A preflight is a 405 like any OPTIONS; no CORS headers.
    let env = self::env(Config::default()).await;
    let reply = env
        .send("OPTIONS", &env.url, &preflight("https://a.test"), b"")
        .await;
    assert_eq!(reply.status, 405);
    assert_eq!(header(&reply, "allow"), Some("GET, POST"));
    let reply = env
        .post(&[("origin", "https://a.test")], "{ users { id } }")
        .await;
    assert_eq!((reply.status, text(&reply)), (200, USERS));
    assert_eq!(cors_headers(&reply), []);
    assert_eq!(header(&reply, "vary"), None);
}

/// A query whose answer is about 2.4 KB: the users, under 40 aliases.
fn big_query() -> String {
    let fields: String = (0..40)
        .map(|i| format!("a{i}: users {{ id name }} "))
        .collect();
    format!("{{ {fields}}}")
}

fn decode(encoding: &str, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    match encoding {
        "gzip" => {
            flate2::read::GzDecoder::new(body)
                .read_to_end(&mut out)
                .expect("valid gzip");
        }
        "br" => {
            brotli_decompressor::Decompressor::new(body, 4096)
                .read_to_end(&mut out)
                .expect("valid brotli");
        }
        "zstd" => out = zstd::decode_all(body).expect("valid zstd"),
        other => panic!("unexpected encoding {other}"),
    }
    out
}

#[tokio::test]
async fn responses_are_compressed_per_accept_encoding_above_the_threshold() {
    let mut config = Config::default();
    config.compression.enabled = true;
    let env = env(config).await;
    let query = big_query();
    let plain = env.post(&[], &query).await;
    assert_eq!(plain.status, 200);
    assert!(plain.body.len() > 2000, "{}", plain.body.len());
    assert!(text(&plain).starts_with(r#"{"data":{"a0":[{"id":"u1","name":"Ada"}"#));
    assert_eq!(header(&plain, "content-encoding"), None);
    // Compressible, so the answer depends on Accept-Encoding even when not compressed.
    assert_eq!(header(&plain, "vary"), Some("accept-encoding"));
    for (accept, chosen) in [
        ("gzip", "gzip"),
        ("br", "br"),
        ("zstd", "zstd"),
        ("gzip, deflate, br, zstd", "zstd"),
        ("gzip;q=1.0, br;q=0.5", "gzip"),
        ("deflate, br;q=0.1", "br"),
        ("*", "zstd"),
    ] {
        let reply = env.post(&[("accept-encoding", accept)], &query).await;
        assert_eq!(reply.status, 200, "{accept}");
        assert_eq!(header(&reply, "content-encoding"), Some(chosen), "{accept}");
        assert_eq!(header(&reply, "vary"), Some("accept-encoding"), "{accept}");
        assert_eq!(header(&reply, "content-length"), None, "{accept}: streamed");
        assert!(
            reply.body.len() < plain.body.len() / 4,
            "{accept}: {}",
            reply.body.len()
        );
        assert_eq!(decode(chosen, &reply.body), plain.body, "{accept}");
    }
    // Nothing offered that the client takes: sent as is.
    let reply = env.post(&[("accept-encoding", "deflate")], &query).await;
    assert_eq!(header(&reply, "content-encoding"), None);
    assert_eq!(reply.body, plain.body);

    // Below the 1 KiB threshold: as is, with its length, however welcome compression is.
    let reply = env
        .post(&[("accept-encoding", "gzip, br, zstd")], "{ users { id } }")
        .await;
    assert_eq!(text(&reply), USERS);
    assert_eq!(header(&reply, "content-encoding"), None);
    assert_eq!(header(&reply, "vary"), None);
    assert_eq!(
        header(&reply, "content-length"),
        Some(&*USERS.len().to_string())
    );
}

#[tokio::test]
async fn algorithms_and_threshold_are_configurable_and_off_means_off() {
    let mut config = Config::default();
    config.compression.enabled = true;
    config.compression.algorithms = vec![CompressionAlgorithm::Gzip];
    config.compression.min_size = 16;
    let env = env(config).await;
    let reply = env
        .post(&[("accept-encoding", "br, zstd")], "{ users { id } }")
        .await;
    assert_eq!(
        header(&reply, "content-encoding"),
        None,
        "br and zstd are not offered"
    );
    assert_eq!(text(&reply), USERS);
    let reply = env
        .post(&[("accept-encoding", "br, gzip;q=0.2")], "{ users { id } }")
        .await;
    assert_eq!(header(&reply, "content-encoding"), Some("gzip"));
    assert_eq!(
        decode("gzip", &reply.body),
        USERS.as_bytes(),
        "above a 16-byte threshold"
    );

    // The default: off whatever the client accepts.
    let env = self::env(Config::default()).await;
    let reply = env
        .post(&[("accept-encoding", "gzip, br, zstd")], &big_query())
        .await;
    assert_eq!(reply.status, 200);
    assert_eq!(header(&reply, "content-encoding"), None);
    assert_eq!(header(&reply, "vary"), None);
    assert!(header(&reply, "content-length").is_some());
}

/// The real binary, configured by flags, in front of the `fed` subgraphs: the layers are
/// built on its own serving path (the one with graceful shutdown) too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_serves_with_the_configured_layers() {
    let subgraphs = support::fed::subgraphs(&[]).await;
    let dir = support::process::test_dir("browser-binary");
    let file = dir.join("supergraph.graphql");
    let sdl = graphfleet_bench_model::Set::Fed.supergraph_at(&subgraphs.base_url());
    std::fs::write(&file, sdl).expect("write the supergraph");
    let settings = [
        r#"cors.allow_origins=["https://app.example.com"]"#,
        "csrf.required_headers=[graphql-client-name]",
        "compression.enabled=true",
    ];
    let gateway = support::fed::start_gateway(&dir, &file, &settings).await;
    let url = gateway.url("/graphql");
    let client = support::client();
    let send = |method: &'static str, url: String, headers: Vec<(&'static str, &'static str)>| {
        let client = client.clone();
        async move { support::request(&client, method, &url, &headers, Vec::new()).await }
    };

    let reply = send(
        "OPTIONS",
        url.clone(),
        preflight("https://app.example.com").to_vec(),
    )
    .await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        header(&reply, "access-control-allow-origin"),
        Some("https://app.example.com")
    );
    let reply = send(
        "OPTIONS",
        url.clone(),
        preflight("https://evil.test").to_vec(),
    )
    .await;
    assert_eq!(reply.status, 403, "{}", text(&reply));

    let get = format!("{url}?query=%7B%20topProducts%20%7B%20upc%20%7D%20%7D");
    let reply = send("GET", get.clone(), vec![("graphql-client-name", "web")]).await;
    assert_eq!(reply.status, 200, "{}", text(&reply));
    assert!(text(&reply).starts_with(r#"{"data":{"topProducts":[{"upc":"#));
    let reply = send("GET", get, support::PREFLIGHTED.to_vec()).await;
    let message = CSRF_MESSAGE.replace(
        "x-apollo-operation-name, apollo-require-preflight",
        "graphql-client-name",
    );
    assert_csrf_refused(&reply, &message, "the binary's CSRF check");

    // The TestQuery (87,599 bytes), zstd-compressed.
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../bench/sets/fed/queries/query.graphql"
    );
    let query = std::fs::read_to_string(path).expect("the TestQuery");
    let body = serde_json::to_vec(&json!({ "query": query })).expect("JSON");
    let post = |headers: &'static [(&'static str, &'static str)]| {
        let (client, url, body) = (client.clone(), url.clone(), body.clone());
        async move { support::request(&client, "POST", &url, headers, body).await }
    };
    let plain = post(&[("content-type", "application/json")]).await;
    assert_eq!(plain.status, 200);
    assert!(plain.body.len() > 50_000, "{}", plain.body.len());
    let packed = post(&[
        ("content-type", "application/json"),
        ("accept-encoding", "gzip, zstd"),
    ])
    .await;
    assert_eq!(header(&packed, "content-encoding"), Some("zstd"));
    assert!(
        packed.body.len() < plain.body.len() / 10,
        "{}",
        packed.body.len()
    );
    assert_eq!(decode("zstd", &packed.body), plain.body);
}
