//! Persisted documents and automatic persisted queries over real HTTP: the gateway in
//! front of the `keys` JSON subgraphs, list files in Apollo's, Relay's and Hive's
//! formats, the three modes, APQ over POST and GET, and (with the real binary) the list
//! file's reload and a bad file at start-up. Error codes and bodies are checked exactly.

mod support;

use graphfleet_gateway::config::{Config, ManifestFormat, PersistedMode};
use graphfleet_gateway::supergraph::Supergraph;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::Reply;

const USERS: &str = "query Users { users { id } }";
const USERS_DATA: &str = r#"{"data":{"users":[{"id":"u1"},{"id":"u2"}]}}"#;
const NAMES: &str = "query Names { users { name } }";
const NAMES_DATA: &str = r#"{"data":{"users":[{"name":"Ada"},{"name":"Bob"}]}}"#;
/// Planned across two subgraphs (accounts, then billing by email).
const PLANS: &str = "query Plans { users { plan } }";
const PLANS_DATA: &str = r#"{"data":{"users":[{"plan":"pro"},{"plan":"free"}]}}"#;

fn sha256(text: &str) -> String {
    graphfleet_gateway::supergraph::hex(&Sha256::digest(text.as_bytes()))
}

fn apollo_manifest(ops: &[(&str, &str)]) -> String {
    let operations: Vec<Value> = ops
        .iter()
        .map(|(name, body)| {
            json!({ "id": sha256(body), "name": name, "type": "query", "body": body })
        })
        .collect();
    json!({
        "format": "apollo-persisted-query-manifest",
        "version": 1,
        "operations": operations,
    })
    .to_string()
}

struct Env {
    url: String,
    client: support::HttpClient,
    subgraphs: support::json_subgraph::JsonSubgraphs,
    _dir: PathBuf,
}

/// The gateway with `list` (if any) written to a file and `config`'s other settings.
async fn env(test: &str, list: Option<&str>, mut config: Config) -> Env {
    let dir = support::process::test_dir(test);
    if let Some(list) = list {
        let file = dir.join("documents.json");
        std::fs::write(&file, list).expect("write the list");
        config.persisted_documents.path = Some(file);
    }
    let (subgraphs, text) = support::fixture_subgraphs("keys").await;
    let supergraph = Supergraph::parse(&text).expect("supergraph loads");
    let url = support::start_gateway_with_config(config, supergraph).await;
    Env {
        url,
        client: support::client(),
        subgraphs,
        _dir: dir,
    }
}

impl Env {
    async fn post(&self, body: Value) -> Reply {
        let body = serde_json::to_vec(&body).expect("JSON");
        support::request(
            &self.client,
            "POST",
            &self.url,
            &[("content-type", "application/json")],
            body,
        )
        .await
    }

    /// A GET with `params` form-encoded (and the header that passes CSRF prevention).
    async fn get(&self, params: &[(&str, &str)]) -> Reply {
        let query: Vec<String> = params
            .iter()
            .map(|(k, v)| {
                let v =
                    percent_encoding::utf8_percent_encode(v, percent_encoding::NON_ALPHANUMERIC);
                format!("{k}={v}")
            })
            .collect();
        let url = format!("{}?{}", self.url, query.join("&"));
        support::request(&self.client, "GET", &url, support::PREFLIGHTED, Vec::new()).await
    }

    fn subgraph_requests(&self) -> u64 {
        self.subgraphs.counts().values().sum()
    }
}

fn text(reply: &Reply) -> &str {
    std::str::from_utf8(&reply.body).expect("UTF-8 body")
}

/// The body of a refused request: one error with `code` and `message`, no data.
fn refused(code: &str, message: &str) -> String {
    let message = serde_json::to_string(message).expect("JSON string");
    format!(r#"{{"errors":[{{"message":{message},"extensions":{{"code":"{code}"}}}}]}}"#)
}

fn assert_data(reply: &Reply, data: &str) {
    assert_eq!((reply.status, text(reply)), (200, data));
}

fn assert_refused(reply: &Reply, code: &str, message: &str) {
    assert_eq!(
        (reply.status, text(reply)),
        (200, refused(code, message).as_str())
    );
}

fn apq(hash: &str) -> Value {
    json!({ "persistedQuery": { "version": 1, "sha256Hash": hash } })
}

fn documents(mode: PersistedMode, apq_on: bool) -> Config {
    let mut config = Config::default();
    config.persisted_documents.mode = mode;
    config.apq.enabled = apq_on;
    config
}

#[tokio::test]
async fn apollo_manifest_ids_run_over_post_and_get() {
    let manifest = apollo_manifest(&[("Users", USERS), ("Plans", PLANS)]);
    let env = env(
        "pd-apollo",
        Some(&manifest),
        documents(PersistedMode::AllowArbitrary, false),
    )
    .await;
    let reply = env.post(json!({ "extensions": apq(&sha256(USERS)) })).await;
    assert_data(&reply, USERS_DATA);
    let reply = env
        .post(json!({ "extensions": apq(&sha256(PLANS)), "variables": {} }))
        .await;
    assert_data(&reply, PLANS_DATA);
    let extensions = apq(&sha256(PLANS)).to_string();
    let reply = env.get(&[("extensions", &extensions)]).await;
    assert_data(&reply, PLANS_DATA);
    // The same id as a documentId (the Hive / GraphQL-over-HTTP way).
    let reply = env.post(json!({ "documentId": sha256(USERS) })).await;
    assert_data(&reply, USERS_DATA);
    // Not listed, APQ off: Apollo Router's code for an id not in the list.
    let unknown = sha256(NAMES);
    let reply = env.post(json!({ "extensions": apq(&unknown) })).await;
    assert_refused(
        &reply,
        "PERSISTED_QUERY_NOT_IN_LIST",
        &format!("persisted query '{unknown}' is not in the persisted documents list"),
    );
    // Arbitrary operations still run in this mode.
    let reply = support::post_graphql(&env.client, &env.url, NAMES, json!({})).await;
    assert_data(&reply, NAMES_DATA);
}

#[tokio::test]
async fn relay_ids_run_as_doc_id_and_document_id() {
    let relay = json!({ "4b2c3f8a": USERS, "9e0d7c6b": NAMES }).to_string();
    let env = env(
        "pd-relay",
        Some(&relay),
        documents(PersistedMode::AllowArbitrary, true),
    )
    .await;
    assert_data(&env.post(json!({ "doc_id": "4b2c3f8a" })).await, USERS_DATA);
    assert_data(
        &env.post(json!({ "documentId": "9e0d7c6b", "variables": {} }))
            .await,
        NAMES_DATA,
    );
    assert_data(&env.get(&[("documentId", "9e0d7c6b")]).await, NAMES_DATA);
    assert_data(&env.get(&[("doc_id", "4b2c3f8a")]).await, USERS_DATA);
    // An Apollo client's hash finds a Relay-listed document by its text's SHA-256.
    let by_hash = env.post(json!({ "extensions": apq(&sha256(NAMES)) })).await;
    assert_data(&by_hash, NAMES_DATA);
    let reply = env.post(json!({ "documentId": "ffffffff" })).await;
    assert_refused(
        &reply,
        "PERSISTED_DOCUMENT_NOT_FOUND",
        "persisted document 'ffffffff' is not in the persisted documents list",
    );
    // An id and a text at once is refused, not guessed at.
    let reply = env
        .post(json!({ "documentId": "4b2c3f8a", "query": NAMES }))
        .await;
    assert_refused(
        &reply,
        "CANNOT_SEND_PQ_ID_AND_BODY",
        "a request may carry a documentId or a query, not both",
    );
}

#[tokio::test]
async fn hive_app_deployment_ids() {
    let hive = json!({ sha256(USERS): USERS, sha256(PLANS): PLANS }).to_string();
    let mut config = documents(PersistedMode::RequireId, false);
    config.persisted_documents.format = ManifestFormat::Hive;
    let env = env("pd-hive", Some(&hive), config).await;
    let id = format!("storefront~1.4.0~{}", sha256(PLANS));
    assert_data(&env.post(json!({ "documentId": id })).await, PLANS_DATA);
    assert_data(
        &env.post(json!({ "documentId": sha256(USERS) })).await,
        USERS_DATA,
    );
    let unknown = format!("storefront~1.4.0~{}", sha256(NAMES));
    let reply = env.post(json!({ "documentId": unknown })).await;
    assert_refused(
        &reply,
        "PERSISTED_DOCUMENT_NOT_FOUND",
        &format!("persisted document '{unknown}' is not in the persisted documents list"),
    );
}

#[tokio::test]
async fn safelist_runs_listed_operations_only() {
    let manifest = apollo_manifest(&[("Users", USERS)]);
    let env = env(
        "pd-safelist",
        Some(&manifest),
        documents(PersistedMode::Safelist, true),
    )
    .await;
    let before = env.subgraph_requests();
    let not_in_safelist = "the operation's text is not in the persisted documents safelist \
                           (texts are compared exactly, whitespace included)";
    let reply = support::post_graphql(&env.client, &env.url, NAMES, json!({})).await;
    assert_refused(&reply, "QUERY_NOT_IN_SAFELIST", not_in_safelist);
    // Same operation, other whitespace: not the listed text.
    let respaced = USERS.replace("{ id }", "{id}");
    let reply = support::post_graphql(&env.client, &env.url, &respaced, json!({})).await;
    assert_refused(&reply, "QUERY_NOT_IN_SAFELIST", not_in_safelist);
    // APQ cannot add to a safelist.
    let reply = env
        .post(json!({ "query": NAMES, "extensions": apq(&sha256(NAMES)) }))
        .await;
    assert_refused(
        &reply,
        "PERSISTED_QUERY_NOT_IN_LIST",
        &format!(
            "persisted query '{}' is not in the persisted documents list",
            sha256(NAMES)
        ),
    );
    assert_eq!(
        env.subgraph_requests(),
        before,
        "refused operations reached subgraphs"
    );
    // The listed text, as text, by id, and by APQ (text with its hash).
    let reply = support::post_graphql(&env.client, &env.url, USERS, json!({})).await;
    assert_data(&reply, USERS_DATA);
    assert_data(
        &env.post(json!({ "extensions": apq(&sha256(USERS)) })).await,
        USERS_DATA,
    );
    let reply = env
        .post(json!({ "query": USERS, "extensions": apq(&sha256(USERS)) }))
        .await;
    assert_data(&reply, USERS_DATA);
    let query = USERS.to_owned();
    assert_data(&env.get(&[("query", &query)]).await, USERS_DATA);
}

#[tokio::test]
async fn require_id_refuses_text_even_when_listed() {
    let manifest = apollo_manifest(&[("Users", USERS)]);
    let env = env(
        "pd-require",
        Some(&manifest),
        documents(PersistedMode::RequireId, true),
    )
    .await;
    let reply = support::post_graphql(&env.client, &env.url, USERS, json!({})).await;
    assert_refused(
        &reply,
        "PERSISTED_QUERY_ID_REQUIRED",
        "this gateway runs persisted documents only: send the operation's id (documentId, or \
         extensions.persistedQuery.sha256Hash) instead of its text",
    );
    assert_data(
        &env.post(json!({ "extensions": apq(&sha256(USERS)) })).await,
        USERS_DATA,
    );
}

#[tokio::test]
async fn apq_round_trip_over_post_and_get() {
    let env = env("apq-round-trip", None, Config::default()).await;
    let hash = sha256(PLANS);
    let not_found = |reply: &Reply| {
        assert_refused(reply, "PERSISTED_QUERY_NOT_FOUND", "PersistedQueryNotFound");
    };
    not_found(&env.post(json!({ "extensions": apq(&hash) })).await);
    let extensions = apq(&hash).to_string();
    not_found(&env.get(&[("extensions", &extensions)]).await);
    // Register with the text, then the hash alone runs it.
    let reply = env
        .post(json!({ "query": PLANS, "extensions": apq(&hash) }))
        .await;
    assert_data(&reply, PLANS_DATA);
    assert_data(
        &env.post(json!({ "extensions": apq(&hash) })).await,
        PLANS_DATA,
    );
    assert_data(&env.get(&[("extensions", &extensions)]).await, PLANS_DATA);
    // Registered over GET, run over POST.
    let names = sha256(NAMES);
    let names_ext = apq(&names).to_string();
    not_found(&env.get(&[("extensions", &names_ext)]).await);
    let reply = env
        .get(&[("query", NAMES), ("extensions", &names_ext)])
        .await;
    assert_data(&reply, NAMES_DATA);
    assert_data(
        &env.post(json!({ "extensions": apq(&names) })).await,
        NAMES_DATA,
    );
}

#[tokio::test]
async fn apq_hash_mismatch_is_refused_and_not_stored() {
    let env = env("apq-mismatch", None, Config::default()).await;
    let wrong = sha256(NAMES);
    let reply = env
        .post(json!({ "query": USERS, "extensions": apq(&wrong) }))
        .await;
    assert_refused(
        &reply,
        "PERSISTED_QUERY_HASH_MISMATCH",
        "provided sha does not match query",
    );
    let reply = env
        .post(json!({ "query": USERS, "extensions": apq("not-hex") }))
        .await;
    assert_refused(
        &reply,
        "PERSISTED_QUERY_HASH_MISMATCH",
        "provided sha does not match query",
    );
    // Nothing was stored under the wrong hash.
    let reply = env.post(json!({ "extensions": apq(&wrong) })).await;
    assert_refused(
        &reply,
        "PERSISTED_QUERY_NOT_FOUND",
        "PersistedQueryNotFound",
    );
}

#[tokio::test]
async fn apq_cache_is_bounded() {
    let mut config = Config::default();
    config.apq.max_entries = 3;
    let env = env("apq-bounded", None, config).await;
    let queries: Vec<String> = (0..24)
        .map(|i| format!("query Q{i} {{ users {{ id }} }}"))
        .collect();
    for q in &queries {
        let reply = env
            .post(json!({ "query": q, "extensions": apq(&sha256(q)) }))
            .await;
        assert_data(&reply, USERS_DATA);
    }
    let mut kept = 0;
    for q in &queries {
        let reply = env.post(json!({ "extensions": apq(&sha256(q)) })).await;
        if text(&reply) == USERS_DATA {
            kept += 1;
        } else {
            assert_refused(
                &reply,
                "PERSISTED_QUERY_NOT_FOUND",
                "PersistedQueryNotFound",
            );
        }
    }
    assert!(
        (1..=3).contains(&kept),
        "{kept} of 24 operations kept with max_entries 3"
    );
}

#[tokio::test]
async fn features_off() {
    let mut config = Config::default();
    config.apq.enabled = false;
    let env = env("pd-off", None, config).await;
    let reply = env.post(json!({ "extensions": apq(&sha256(USERS)) })).await;
    assert_refused(
        &reply,
        "PERSISTED_QUERY_NOT_SUPPORTED",
        "PersistedQueryNotSupported",
    );
    let reply = env.post(json!({ "documentId": "abc" })).await;
    assert_refused(
        &reply,
        "PERSISTED_DOCUMENT_NOT_FOUND",
        "persisted document 'abc' cannot be run: persisted documents are not enabled on this \
         gateway",
    );
    // A text with a hash (an APQ client's retry) runs as text.
    let reply = env
        .post(json!({ "query": USERS, "extensions": apq(&sha256(USERS)) }))
        .await;
    assert_data(&reply, USERS_DATA);
}

/// Replace `path`'s content the way a ConfigMap update does: a new file renamed over it.
fn replace(path: &Path, content: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, content).expect("write");
    std::fs::rename(&tmp, path).expect("rename");
}

/// POST `body` until the reply body is `want`, for up to 10 s.
async fn eventually(client: &support::HttpClient, url: &str, body: &Value, want: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let bytes = serde_json::to_vec(body).expect("JSON");
        let reply = support::request(
            client,
            "POST",
            url,
            &[("content-type", "application/json")],
            bytes,
        )
        .await;
        let got = text(&reply).to_owned();
        if got == want || Instant::now() > deadline {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn the_binary_reloads_the_list_and_keeps_the_last_good_one() {
    let (_subgraphs, dir, supergraph) = support::fixture_supergraph_file("keys", "pd-reload").await;
    let list = dir.join("documents.json");
    std::fs::write(&list, json!({ "users": USERS }).to_string()).expect("write the list");
    let gateway = support::fed::start_gateway(
        &dir,
        &supergraph,
        &[
            &format!("persisted_documents.path={}", list.display()),
            "persisted_documents.mode=require_id",
            "persisted_documents.poll_interval=100ms",
        ],
    )
    .await;
    let url = gateway.url("/graphql");
    let client = support::client();
    let users = json!({ "documentId": "users" });
    let names = json!({ "documentId": "names" });
    assert_eq!(
        eventually(&client, &url, &users, USERS_DATA).await,
        USERS_DATA
    );
    replace(
        &list,
        &json!({ "users": USERS, "names": NAMES }).to_string(),
    );
    assert_eq!(
        eventually(&client, &url, &names, NAMES_DATA).await,
        NAMES_DATA,
        "the new document was not picked up:\n{}",
        gateway.log()
    );
    // A broken file: logged, and the last good list keeps serving.
    replace(&list, "{\n  \"users\": \"{ users { id } }\",\n  oops\n}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !gateway.log().contains("persisted documents file rejected") {
        assert!(
            Instant::now() < deadline,
            "no rejection logged:\n{}",
            gateway.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let log = gateway.log();
    assert!(
        log.contains("keeping the last good list (2 documents): not valid JSON: key must be a string at line 3 column 3"),
        "{log}"
    );
    assert_eq!(
        eventually(&client, &url, &names, NAMES_DATA).await,
        NAMES_DATA
    );
    assert_eq!(
        eventually(&client, &url, &users, USERS_DATA).await,
        USERS_DATA
    );
    // The file gone (a ConfigMap deleted): logged once, the list stays.
    std::fs::remove_file(&list).expect("remove the list");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !gateway
        .log()
        .contains("cannot read the persisted documents file")
    {
        assert!(
            Instant::now() < deadline,
            "no read error logged:\n{}",
            gateway.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        eventually(&client, &url, &names, NAMES_DATA).await,
        NAMES_DATA
    );
    // A new list replaces the whole list: `names` is gone.
    replace(&list, &json!({ "users": USERS }).to_string());
    let gone = refused(
        "PERSISTED_DOCUMENT_NOT_FOUND",
        "persisted document 'names' is not in the persisted documents list",
    );
    assert_eq!(eventually(&client, &url, &names, &gone).await, gone);
    assert_eq!(
        eventually(&client, &url, &users, USERS_DATA).await,
        USERS_DATA
    );
    let log = gateway.log();
    let read_errors = log
        .matches("cannot read the persisted documents file")
        .count();
    assert_eq!(read_errors, 1, "{log}");
}

#[tokio::test]
async fn a_bad_list_fails_the_start_naming_the_key_and_the_place() {
    let (_subgraphs, dir, supergraph) = support::fixture_supergraph_file("keys", "pd-bad").await;
    let list = dir.join("documents.json");
    std::fs::write(&list, "{\n  \"a\": \"{ users { id } }\"\n  \"b\": 1\n}").expect("write");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_graphfleet-gateway"))
        .env_clear()
        .args(["--listen", "127.0.0.1:0", "--supergraph"])
        .arg(&supergraph)
        .arg("--set")
        .arg(format!("persisted_documents.path={}", list.display()))
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run graphfleet-gateway");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr:\n{stderr}");
    let expected = format!(
        "persisted_documents.path: {} is not valid JSON: expected `,` or `}}` at line 3 column 3",
        list.display()
    );
    assert!(stderr.contains(&expected), "stderr:\n{stderr}");
    assert!(!stderr.contains("panicked"), "stderr:\n{stderr}");
}

/// Apollo Client's own persisted-queries link (@apollo/client 3.14.1, pinned by
/// tools/apq-client/package-lock.json) against the gateway: it sends the hash, gets
/// PERSISTED_QUERY_NOT_FOUND, resends with the text, and the next time the hash alone is
/// answered; over POST and over GET (useGETForHashedQueries: the hash on GET, the retry
/// with the text on POST); and against a gateway with APQ off it falls back to text for
/// good after PERSISTED_QUERY_NOT_SUPPORTED.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apollo_clients_persisted_query_link() {
    let on = env("apq-apollo-client", None, Config::default()).await;
    let mut config = Config::default();
    config.apq.enabled = false;
    let off = env("apq-apollo-client-off", None, config).await;
    let args = vec!["apq-client".to_owned(), on.url.clone(), off.url.clone()];
    let output = support::node_tool(args).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "Apollo Client failed:\n{stderr}");
    let out: Value = serde_json::from_slice(&output.stdout).expect("the client prints JSON");
    let users = json!({ "users": [{ "id": "u1" }, { "id": "u2" }] });
    let names = json!({ "users": [{ "name": "Ada" }, { "name": "Bob" }] });
    for (case, data) in [("post", &users), ("get", &names), ("off", &users)] {
        assert_eq!(&out[case]["first"], data, "{case}: {out}");
        assert_eq!(&out[case]["second"], data, "{case}: {out}");
    }
    // (method, text sent, hash sent, error codes); every hash is the SHA-256 of the
    // text the link sends when asked for it.
    let exchanges = |case: &str| -> Vec<(String, bool, bool, Value)> {
        let all = out[case]["exchanges"].as_array().expect("exchanges");
        let text = all
            .iter()
            .find_map(|e| e["query"].as_str())
            .expect("the text was sent once");
        for e in all {
            if let Some(h) = e["hash"].as_str() {
                assert_eq!(h, sha256(text), "{case}: the hash is the text's SHA-256");
            }
        }
        all.iter()
            .map(|e| {
                let method = e["method"].as_str().expect("method").to_owned();
                (
                    method,
                    e["query"].is_string(),
                    e["hash"].is_string(),
                    e["codes"].clone(),
                )
            })
            .collect()
    };
    let not_found = json!(["PERSISTED_QUERY_NOT_FOUND"]);
    let post = |query, hash, codes: &Value| ("POST".to_owned(), query, hash, codes.clone());
    assert_eq!(
        exchanges("post"),
        [
            post(false, true, &not_found),
            post(true, true, &json!([])),
            post(false, true, &json!([])),
        ]
    );
    let get = |query, hash, codes: &Value| ("GET".to_owned(), query, hash, codes.clone());
    assert_eq!(
        exchanges("get"),
        [
            get(false, true, &not_found),
            post(true, true, &json!([])),
            get(false, true, &json!([])),
        ]
    );
    assert_eq!(
        exchanges("off"),
        [
            post(false, true, &json!(["PERSISTED_QUERY_NOT_SUPPORTED"])),
            // The link stops hashing: the retry and later requests carry the text only.
            post(true, false, &json!([])),
            post(true, false, &json!([])),
        ]
    );
}

/// The `operation` labels of `graphfleet_graphql_requests_total` at `/metrics`.
async fn operation_labels(env: &Env) -> Vec<String> {
    let url = env.url.replace("/graphql", "/metrics");
    let reply = support::request(&env.client, "GET", &url, &[], Vec::new()).await;
    assert_eq!(reply.status, 200);
    text(&reply)
        .lines()
        .filter(|l| l.starts_with("graphfleet_graphql_requests_total{"))
        .filter_map(|l| l.split("operation=\"").nth(1)?.split('"').next())
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn listed_operations_are_labelled_on_their_first_request() {
    let manifest = apollo_manifest(&[("Plans", PLANS)]);
    let env = env(
        "pd-labels",
        Some(&manifest),
        documents(PersistedMode::AllowArbitrary, false),
    )
    .await;
    // 100 names a client made up hold every capped label slot...
    for i in 0..100 {
        let query = format!("query Made{i} {{ users {{ id }} }}");
        let reply = support::post_graphql(&env.client, &env.url, &query, json!({})).await;
        assert_data(&reply, USERS_DATA);
    }
    let labels = operation_labels(&env).await;
    assert!(labels.iter().any(|l| l == "Made99"), "{labels:?}");
    let extra = "query Made100 { users { id } }";
    let reply = support::post_graphql(&env.client, &env.url, extra, json!({})).await;
    assert_data(&reply, USERS_DATA);
    // ...so the next made-up name counts as (other), but a listed operation, by id or
    // as text, has its label from its first request.
    assert_data(
        &env.post(json!({ "documentId": sha256(PLANS) })).await,
        PLANS_DATA,
    );
    let labels = operation_labels(&env).await;
    assert!(labels.iter().any(|l| l == "Plans"), "{labels:?}");
    assert!(labels.iter().any(|l| l == "(other)"), "{labels:?}");
    assert!(!labels.iter().any(|l| l == "Made100"), "{labels:?}");
}
