//! TLS with certificates made here, against the real binary: `https://` subgraphs
//! trusted through the standard `SSL_CERT_FILE` or the config's `ca_file`, refused when
//! untrusted; subgraphs that require a client certificate (mTLS); and HTTPS on the
//! gateway's own listener.

mod support;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::process::{GatewayProcess, test_dir};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A private CA that signs server and client certificates.
struct TestCa {
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
    cert: rcgen::Certificate,
}

/// A certificate the CA signed, with its key.
struct Leaf {
    cert: rcgen::Certificate,
    key: rcgen::KeyPair,
}

impl TestCa {
    fn new(name: &str) -> Self {
        let key = rcgen::KeyPair::generate().expect("CA key");
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        let cert = params.self_signed(&key).expect("self-signed CA");
        Self {
            issuer: rcgen::Issuer::new(params, key),
            cert,
        }
    }

    fn sign(&self, names: &[&str], usage: rcgen::ExtendedKeyUsagePurpose) -> Leaf {
        let key = rcgen::KeyPair::generate().expect("leaf key");
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let mut params = rcgen::CertificateParams::new(names).expect("leaf params");
        params.extended_key_usages = vec![usage];
        let cert = params.signed_by(&key, &self.issuer).expect("signed leaf");
        Leaf { cert, key }
    }

    /// A server certificate for `localhost` and 127.0.0.1.
    fn server(&self) -> Leaf {
        self.sign(
            &["localhost", "127.0.0.1"],
            rcgen::ExtendedKeyUsagePurpose::ServerAuth,
        )
    }

    fn client(&self) -> Leaf {
        self.sign(
            &["gateway.test"],
            rcgen::ExtendedKeyUsagePurpose::ClientAuth,
        )
    }

    fn roots(&self) -> rustls::RootCertStore {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.cert.der().clone()).expect("CA as a root");
        roots
    }
}

impl Leaf {
    fn chain(&self) -> Vec<CertificateDer<'static>> {
        vec![self.cert.der().clone()]
    }

    fn key(&self) -> PrivateKeyDer<'static> {
        PrivateKeyDer::Pkcs8(self.key.serialize_der().into())
    }

    /// Writes `<name>.pem` and `<name>-key.pem` into `dir`.
    fn write(&self, dir: &Path, name: &str) {
        std::fs::write(dir.join(format!("{name}.pem")), self.cert.pem()).expect("write cert");
        std::fs::write(
            dir.join(format!("{name}-key.pem")),
            self.key.serialize_pem(),
        )
        .expect("write key");
    }
}

/// A TLS server config for `server`; with `client_ca`, a client certificate signed by
/// it is required.
fn server_config(server: &Leaf, client_ca: Option<&TestCa>) -> rustls::ServerConfig {
    let builder = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("default TLS versions");
    let builder = match client_ca {
        Some(ca) => {
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(ca.roots()),
                provider(),
            )
            .build()
            .expect("client verifier");
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    builder
        .with_single_cert(server.chain(), server.key())
        .expect("server certificate and key")
}

/// Terminates TLS on a loopback port and forwards the plain bytes to `backend`.
async fn tls_front(config: rustls::ServerConfig, backend: SocketAddr) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address");
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(stream).await else {
                    return; // the client refused our certificate, or we refused its
                };
                let Ok(mut plain) = TcpStream::connect(backend).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
            });
        }
    });
    addr
}

/// The `keys` fixture's subgraphs behind a TLS front made with `config`: the test
/// directory and the supergraph file routing to `https://localhost:<front>`.
async fn https_subgraphs(
    test: &str,
    config: rustls::ServerConfig,
) -> (support::json_subgraph::JsonSubgraphs, std::path::PathBuf) {
    let (subgraphs, text) = support::fixture_subgraphs("keys").await;
    let backend: SocketAddr = subgraphs
        .base_url
        .trim_start_matches("http://")
        .parse()
        .expect("subgraph address");
    let front = tls_front(config, backend).await;
    let https = text.replace(
        &subgraphs.base_url,
        &format!("https://localhost:{}", front.port()),
    );
    let dir = test_dir(test);
    std::fs::write(dir.join("supergraph.graphql"), https).expect("write the supergraph");
    (subgraphs, dir)
}

const QUERY: &[u8] = br#"{"query":"{ users { id } }"}"#;

fn users() -> serde_json::Value {
    serde_json::json!({"data": {"users": [{"id": "u1"}, {"id": "u2"}]}})
}

async fn query(gateway: &GatewayProcess) -> serde_json::Value {
    let reply = support::request(
        &support::client(),
        "POST",
        &gateway.url("/graphql"),
        &[("content-type", "application/json")],
        QUERY.to_vec(),
    )
    .await;
    serde_json::from_slice(&reply.body).expect("JSON answer")
}

/// The gateway with `config.yaml` (written into `dir`) and the supergraph beside it.
/// `SSL_CERT_FILE` names an empty bundle, so only what the config adds is trusted
/// beyond the webpki roots.
async fn start(dir: &Path, config: &str) -> GatewayProcess {
    let config_file = dir.join("config.yaml");
    std::fs::write(&config_file, config).expect("write the config");
    let empty = dir.join("no-ca.pem");
    std::fs::write(&empty, "").expect("write an empty bundle");
    GatewayProcess::start(
        dir,
        &[
            "--config",
            config_file.to_str().expect("UTF-8 path"),
            "--listen",
            "127.0.0.1:0",
        ],
        &[("SSL_CERT_FILE", empty.to_str().expect("UTF-8 path"))],
    )
    .await
}

const SUPERGRAPH: &str = "supergraph:\n  path: supergraph.graphql\n";

/// The fetch failed with `SUBREQUEST_HTTP_ERROR` and a message containing `reason`.
fn assert_http_error(body: &serde_json::Value, reason: &str, gateway: &GatewayProcess) {
    assert_eq!(
        body["errors"][0]["extensions"]["code"],
        "SUBREQUEST_HTTP_ERROR",
        "{body}\n{}",
        gateway.log()
    );
    let message = body["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(message.contains(reason), "{body}");
    assert_eq!(body["data"], serde_json::Value::Null, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_subgraphs_are_fetched_over_tls_and_verified() {
    let ca = TestCa::new("graphfleet test CA");
    let (_subgraphs, dir) = https_subgraphs("tls", server_config(&ca.server(), None)).await;
    let ca_file = dir.join("ca.pem");
    std::fs::write(&ca_file, ca.cert.pem()).expect("write the CA");
    let supergraph = dir.join("supergraph.graphql");
    let args = [
        "--listen",
        "127.0.0.1:0",
        "--supergraph",
        supergraph.to_str().expect("UTF-8 path"),
    ];

    // Trusting the CA: answered over TLS.
    let ca = ca_file.to_str().expect("UTF-8 path");
    let trusting = GatewayProcess::start(&dir, &args, &[("SSL_CERT_FILE", ca)]).await;
    let body = query(&trusting).await;
    assert_eq!(body, users(), "{}", trusting.log());
    drop(trusting);

    // Not trusting it: the fetch fails with an HTTP error naming the certificate.
    let empty = dir.join("no-ca.pem");
    std::fs::write(&empty, "").expect("write an empty bundle");
    let doubting = GatewayProcess::start(
        &dir,
        &args,
        &[("SSL_CERT_FILE", empty.to_str().expect("UTF-8 path"))],
    )
    .await;
    let body = query(&doubting).await;
    let message = body["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(
        body["errors"][0]["extensions"]["code"] == "SUBREQUEST_HTTP_ERROR"
            && message.to_lowercase().contains("certificate"),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_private_ca_in_ca_file_is_trusted() {
    let ca = TestCa::new("graphfleet ca_file CA");
    let (_subgraphs, dir) = https_subgraphs("tls-ca-file", server_config(&ca.server(), None)).await;
    std::fs::write(dir.join("ca.pem"), ca.cert.pem()).expect("write the CA");

    // Relative to the config file, like supergraph.path.
    let trusting = start(
        &dir,
        &format!("{SUPERGRAPH}traffic:\n  tls:\n    ca_file: ca.pem\n"),
    )
    .await;
    assert_eq!(query(&trusting).await, users(), "{}", trusting.log());
    drop(trusting);

    // The per-subgraph setting wins: another CA for the queried subgraph is not enough.
    let other = TestCa::new("some other CA");
    std::fs::write(dir.join("other.pem"), other.cert.pem()).expect("write the other CA");
    let config = format!(
        "{SUPERGRAPH}traffic:\n  tls:\n    ca_file: ca.pem\nsubgraphs:\n  accounts:\n    \
         tls:\n      ca_file: other.pem\n"
    );
    let overridden = start(&dir, &config).await;
    assert_http_error(&query(&overridden).await, "UnknownIssuer", &overridden);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subgraphs_requiring_a_client_certificate_get_the_configured_one() {
    let ca = TestCa::new("graphfleet mTLS CA");
    let config = server_config(&ca.server(), Some(&ca));
    let (_subgraphs, dir) = https_subgraphs("tls-mtls", config).await;
    std::fs::write(dir.join("ca.pem"), ca.cert.pem()).expect("write the CA");
    ca.client().write(&dir, "client");

    // The client certificate set for the subgraph; the CA inherited from traffic.tls.
    let config = format!(
        "{SUPERGRAPH}traffic:\n  tls:\n    ca_file: ca.pem\nsubgraphs:\n  accounts:\n    \
         tls:\n      client_cert_file: client.pem\n      client_key_file: client-key.pem\n"
    );
    let with_cert = start(&dir, &config).await;
    assert_eq!(query(&with_cert).await, users(), "{}", with_cert.log());
    drop(with_cert);

    // The same for every subgraph, from traffic.tls.
    let config = format!(
        "{SUPERGRAPH}traffic:\n  tls:\n    ca_file: ca.pem\n    client_cert_file: client.pem\n    \
         client_key_file: client-key.pem\n"
    );
    let global = start(&dir, &config).await;
    assert_eq!(query(&global).await, users(), "{}", global.log());
    drop(global);

    // Without one the subgraph refuses the connection.
    let config = format!("{SUPERGRAPH}traffic:\n  tls:\n    ca_file: ca.pem\n");
    let without = start(&dir, &config).await;
    let body = query(&without).await;
    assert_http_error(&body, "", &without);
    // TLS 1.3 finishes the client's side of the handshake before the server checks the
    // certificate, so the refusal arrives either as the server's alert or, when the
    // request was already on its way, as the connection closing under it.
    let message = body["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(
        [
            "CertificateRequired",
            "connection was not ready",
            "connection closed"
        ]
        .iter()
        .any(|reason| message.contains(reason)),
        "{body}"
    );

    // A certificate from a CA the subgraph does not trust is refused too.
    TestCa::new("untrusted client CA")
        .client()
        .write(&dir, "stranger");
    let config = format!(
        "{SUPERGRAPH}traffic:\n  tls:\n    ca_file: ca.pem\n    client_cert_file: stranger.pem\n    \
         client_key_file: stranger-key.pem\n"
    );
    let stranger = start(&dir, &config).await;
    // (The server drops the handshake, so the message names no certificate.)
    assert_http_error(&query(&stranger).await, "", &stranger);
}

type HttpsClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// An HTTPS client trusting `ca`, offering h2 and http/1.1, or http/1.1 only.
fn https_client(ca: &TestCa, h2: bool) -> HttpsClient {
    let tls = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("default TLS versions")
        .with_root_certificates(ca.roots())
        .with_no_client_auth();
    let builder = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_only();
    let connector = if h2 {
        builder.enable_all_versions().build()
    } else {
        builder.enable_http1().build()
    };
    Client::builder(TokioExecutor::new()).build(connector)
}

/// POSTs the query over HTTPS; the answer's HTTP version and JSON body.
async fn https_query(client: &HttpsClient, url: &str) -> (http::Version, serde_json::Value) {
    let request = hyper::Request::post(url)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from_static(QUERY)))
        .expect("request");
    let response = tokio::time::timeout(Duration::from_secs(10), client.request(request))
        .await
        .expect("answered within 10 s")
        .expect("HTTPS request");
    let version = response.version();
    let body = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    (version, serde_json::from_slice(&body).expect("JSON answer"))
}

/// Sends `bytes` on a raw connection and waits for the server to close it.
async fn closed_after(addr: SocketAddr, bytes: &[u8]) -> Duration {
    let started = Instant::now();
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(bytes).await.expect("write");
    let mut sink = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut sink))
        .await
        .expect("the server closes the connection within 10 s")
        .ok();
    started.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_listener_serves_https_and_survives_plain_http_and_silent_clients() {
    let (_subgraphs, dir, _) = support::fixture_supergraph_file("keys", "tls-listener").await;
    let ca = TestCa::new("graphfleet listener CA");
    ca.server().write(&dir, "server");
    let config = format!(
        "{SUPERGRAPH}tls:\n  cert_file: server.pem\n  key_file: server-key.pem\n\
         traffic:\n  header_read_timeout: 1s\n"
    );
    let gateway = start(&dir, &config).await;
    let url = format!("https://localhost:{}/graphql", gateway.addr.port());

    // h2 and http/1.1, chosen by ALPN.
    let (version, body) = https_query(&https_client(&ca, true), &url).await;
    assert_eq!(
        (version, &body),
        (http::Version::HTTP_2, &users()),
        "{}",
        gateway.log()
    );
    let (version, body) = https_query(&https_client(&ca, false), &url).await;
    assert_eq!((version, &body), (http::Version::HTTP_11, &users()));

    // Plain HTTP on the TLS port: that connection fails, nothing else.
    let request = b"POST /graphql HTTP/1.1\r\nhost: localhost\r\ncontent-length: 0\r\n\r\n";
    closed_after(gateway.addr, request).await;
    // A client that never starts its handshake is cut after header_read_timeout.
    let silent = closed_after(gateway.addr, b"").await;
    assert!(silent < Duration::from_secs(5), "closed after {silent:?}");

    let (_, body) = https_query(&https_client(&ca, true), &url).await;
    assert_eq!(body, users(), "{}", gateway.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h2_subgraphs_over_tls_are_chosen_by_alpn() {
    use graphfleet_gateway::config::Http2Mode;
    use support::front::{self, Answer, Versions};
    let ca = TestCa::new("graphfleet ALPN CA");
    let dir = test_dir("tls-alpn");
    let ca_file = dir.join("ca.pem");
    std::fs::write(&ca_file, ca.cert.pem()).expect("write the CA");
    let (subgraphs, text) = support::fixture_subgraphs("keys").await;
    for (versions, mode, version) in [
        // The server offers h2 and http/1.1 and takes what ALPN agreed on.
        (Versions::Both, Http2Mode::Alpn, http::Version::HTTP_2),
        (Versions::Both, Http2Mode::Off, http::Version::HTTP_11),
        // Offering h2 alone is enough for a server that speaks only h2.
        (
            Versions::H2Only,
            Http2Mode::PriorKnowledge,
            http::Version::HTTP_2,
        ),
    ] {
        let front = front::start(
            subgraphs.base_url.clone(),
            versions,
            Some(server_config(&ca.server(), None)),
            Answer::Plain,
        )
        .await;
        let body = query_behind_front(&text, &subgraphs.base_url, &front, &ca_file, mode).await;
        assert_eq!(body, users(), "{mode:?}");
        let versions: Vec<_> = front
            .seen
            .lock()
            .expect("seen")
            .iter()
            .map(|s| s.version)
            .collect();
        assert_eq!(versions, [version], "{mode:?}");
    }

    // HTTP/1.1 to a TLS server that speaks only h2 (hyper-rustls offers no ALPN for
    // HTTP/1.1 alone, so the handshake succeeds): the fetch fails, with a hint.
    let front = front::start(
        subgraphs.base_url.clone(),
        Versions::H2Only,
        Some(server_config(&ca.server(), None)),
        Answer::Plain,
    )
    .await;
    let body =
        query_behind_front(&text, &subgraphs.base_url, &front, &ca_file, Http2Mode::Off).await;
    assert_eq!(
        body["errors"][0]["extensions"]["code"], "SUBREQUEST_HTTP_ERROR",
        "{body}"
    );
    let message = body["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(message.contains("set http2: prior_knowledge"), "{body}");
}

/// QUERY through a gateway whose subgraphs are reached over TLS via `front` (trusting
/// `ca_file`, HTTP/2 per `mode`): the answer's JSON.
async fn query_behind_front(
    supergraph: &str,
    base_url: &str,
    front: &support::front::Front,
    ca_file: &std::path::Path,
    mode: graphfleet_gateway::config::Http2Mode,
) -> serde_json::Value {
    let https = supergraph.replace(
        base_url,
        &format!("https://localhost:{}", front.addr.port()),
    );
    let mut config = graphfleet_gateway::config::Config::default();
    config.traffic.tls.ca_file = Some(ca_file.to_path_buf());
    config.traffic.http2 = mode;
    let url = support::start_gateway_with_config(
        config,
        graphfleet_gateway::supergraph::Supergraph::parse(&https).expect("supergraph"),
    )
    .await;
    let reply = support::request(
        &support::client(),
        "POST",
        &url,
        &[("content-type", "application/json")],
        QUERY.to_vec(),
    )
    .await;
    serde_json::from_slice(&reply.body).expect("JSON")
}
