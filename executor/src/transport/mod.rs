//! Subgraph transport: HTTP over a keep-alive hyper-util pool, or anything else that
//! turns a request body into a response body (benchmarks feed recorded bytes).

use crate::dedup::{DedupKey, InFlight};
/// Kept importable from here, where transports are written.
pub use crate::error::FetchError;
use crate::memory::MemoryBudget;
use crate::resilience::{Guards, ResiliencePolicy};
use bytes::Bytes;
use graphfleet_federation::meta::SubgraphId;
use http::header::ACCEPT_ENCODING;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use rustc_hash::FxHashMap;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tower_http::decompression::Decompression;

mod exchange;
use exchange::{Cap, call, copy_request};

/// One subgraph request as the executor hands it to a transport.
pub struct SubgraphRequest<'a> {
    pub subgraph: SubgraphId,
    /// The subgraph's name in the supergraph.
    pub name: &'a str,
    pub url: &'a str,
    /// The JSON body (`query`, `variables`).
    pub body: Bytes,
    /// Client headers to forward, already filtered by the propagation rules.
    pub headers: &'a http::HeaderMap,
    /// A query operation (safe to deduplicate); false for mutations.
    pub is_query: bool,
    /// What is left of the request's response budget (`limits.max_response_bytes`):
    /// a body larger than this (or than the subgraph's own cap) is not read.
    pub budget_bytes: usize,
    /// The gateway-wide memory budget the body is charged to as it is read; the
    /// charge goes with the body and is released when its last holder drops it.
    pub memory: &'a MemoryBudget,
    /// Keep the response's headers (response header rules or the `Cache-Control`
    /// merge want them); otherwise they are dropped with the exchange.
    pub keep_headers: bool,
    /// May share an identical request's call (in-flight deduplication); false for a
    /// fetch a hook may have made differ per client.
    pub shareable: bool,
}

/// A subgraph's answer: its body and, when the request asked to keep them, its
/// response headers.
#[derive(Debug, Clone)]
pub struct Fetched {
    pub body: Bytes,
    pub headers: Option<Arc<http::HeaderMap>>,
}

impl From<Bytes> for Fetched {
    fn from(body: Bytes) -> Self {
        Self {
            body,
            headers: None,
        }
    }
}

pub trait Transport: Send + Sync + 'static {
    fn fetch(
        &self,
        request: SubgraphRequest<'_>,
    ) -> impl Future<Output = Result<Fetched, FetchError>> + Send;

    /// Retries and breaker counts per subgraph whose resilience is on (for metrics).
    fn resilience_stats(&self) -> Vec<(String, crate::resilience::GuardStats)> {
        Vec::new()
    }
}

/// How to fetch from one subgraph.
#[derive(Debug, Clone, PartialEq)]
pub struct FetchPolicy {
    /// Longest a fetch may take, connecting included.
    pub timeout: Duration,
    /// Share one in-flight request among identical concurrent fetches.
    pub deduplicate: bool,
    /// Largest response body accepted; a bigger one fails the fetch unread.
    pub max_response_bytes: usize,
    /// TLS beyond the defaults for `https://` URLs; `None`: the system and webpki
    /// roots, no client certificate.
    pub tls: Option<Arc<TlsSettings>>,
    /// Which HTTP version the subgraph is spoken to in.
    pub http2: Http2,
    /// Encoding of request bodies (`Content-Encoding`); the subgraph must decode it.
    pub compress_requests: RequestEncoding,
    /// Send `Accept-Encoding: gzip, br, zstd` (else `identity`). A response that is
    /// compressed anyway is decoded either way.
    pub accept_compressed: bool,
    /// Retries, circuit breaking and a concurrency limit; inactive by default.
    pub resilience: ResiliencePolicy,
}

/// The HTTP version towards a subgraph.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Http2 {
    /// HTTP/1.1 only.
    #[default]
    Off,
    /// HTTP/2 only: h2c with prior knowledge for `http://`, ALPN `h2` alone for
    /// `https://`; a server that does not speak it fails the fetch.
    PriorKnowledge,
    /// `https://`: ALPN offers `h2` and `http/1.1`, the server picks. `http://` stays
    /// HTTP/1.1 (there is nothing to negotiate with).
    Alpn,
}

/// How subgraph request bodies are compressed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RequestEncoding {
    #[default]
    None,
    Gzip,
    Br,
    Zstd,
}

impl RequestEncoding {
    /// The `Content-Encoding` value, `None` for an uncompressed body.
    pub fn header(self) -> Option<&'static str> {
        match self {
            Self::None => None,
            Self::Gzip => Some("gzip"),
            Self::Br => Some("br"),
            Self::Zstd => Some("zstd"),
        }
    }

    /// `body` encoded. Fast levels: the body is encoded on every fetch's critical
    /// path, and GraphQL requests are small and repetitive, so higher levels save
    /// little.
    pub fn encode(self, body: &[u8]) -> std::io::Result<Bytes> {
        use std::io::Write as _;
        let encoded = match self {
            Self::None => return Ok(Bytes::copy_from_slice(body)),
            Self::Gzip => {
                let mut encoder = flate2::write::GzEncoder::new(
                    Vec::with_capacity(body.len() / 2),
                    flate2::Compression::fast(),
                );
                encoder.write_all(body)?;
                encoder.finish()?
            }
            Self::Br => {
                let mut encoder =
                    brotli::CompressorWriter::new(Vec::with_capacity(body.len() / 2), 4096, 1, 22);
                encoder.write_all(body)?;
                encoder.flush()?;
                encoder.into_inner()
            }
            Self::Zstd => zstd::bulk::compress(body, 1)?,
        };
        Ok(Bytes::from(encoded))
    }
}

/// TLS towards `https://` subgraphs beyond the defaults (read from files by the caller).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct TlsSettings {
    /// CA certificates trusted in addition to the system and webpki roots.
    pub extra_roots: Vec<CertificateDer<'static>>,
    /// Presented when a subgraph asks for a client certificate (mTLS).
    pub identity: Option<ClientIdentity>,
}

/// A client certificate chain (leaf first) and its private key.
#[derive(Debug, PartialEq, Eq)]
pub struct ClientIdentity {
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
}

impl TlsSettings {
    /// Whether rustls accepts these settings: every extra root parses, the key is
    /// usable and matches the chain's leaf. For start-up checks, before any fetch.
    pub fn check(&self) -> Result<(), String> {
        self.client_config(rustls::RootCertStore::empty())
            .map(drop)
            .map_err(|e| e.to_string())
    }

    /// The rustls client config over the default roots (system store and webpki), for
    /// the gateway's other `https://` clients (JWKS URLs).
    pub fn default_client_config(&self) -> Result<rustls::ClientConfig, rustls::Error> {
        self.client_config(default_roots())
    }

    /// The rustls client config: `roots` plus the extra roots, with the client identity.
    fn client_config(
        &self,
        mut roots: rustls::RootCertStore,
    ) -> Result<rustls::ClientConfig, rustls::Error> {
        for cert in &self.extra_roots {
            roots.add(cert.clone())?;
        }
        let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("ring supports the default TLS versions")
        .with_root_certificates(roots);
        match &self.identity {
            Some(identity) => {
                builder.with_client_auth_cert(identity.chain.clone(), identity.key.clone_key())
            }
            None => Ok(builder.with_no_client_auth()),
        }
    }
}

/// Plain TCP for `http://` subgraphs, TLS for `https://` ones.
type Connector = hyper_rustls::HttpsConnector<HttpConnector>;
/// Decodes gzip, br and zstd responses as their body is read (so the read's size cap
/// counts decoded bytes).
type HttpClient = Decompression<Client<Connector, Full<Bytes>>>;

/// The default trusted roots: the system store (which honours `SSL_CERT_FILE`/
/// `SSL_CERT_DIR`, so a private CA can be added) and the webpki roots, for images
/// without a CA bundle.
pub(crate) fn default_roots() -> rustls::RootCertStore {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let native = rustls_native_certs::load_native_certs();
    for error in &native.errors {
        tracing::warn!(%error, "reading the system's CA certificates");
    }
    let (added, ignored) = roots.add_parsable_certificates(native.certs);
    if ignored > 0 {
        tracing::warn!(
            added,
            ignored,
            "some system CA certificates could not be used"
        );
    }
    roots
}

/// A keep-alive pool whose connector does TLS with `tls` for `https://` URLs, speaking
/// the HTTP versions `http2` asks for.
fn http_client(tls: rustls::ClientConfig, http2: Http2) -> HttpClient {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    connector.set_keepalive(Some(Duration::from_secs(60)));
    // `https://` URLs are TLS over the same connector; `http://` stays plain.
    connector.enforce_http(false);
    // The connector's ALPN list follows the enabled versions.
    let builder = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http();
    let connector = match http2 {
        Http2::Off => builder.enable_http1().wrap_connector(connector),
        Http2::PriorKnowledge => builder.enable_http2().wrap_connector(connector),
        Http2::Alpn => builder.enable_all_versions().wrap_connector(connector),
    };
    let client = Client::builder(TokioExecutor::new())
        // No cap on idle connections per host (there was one of 256): a cap below the
        // requests open at once (chain: ~1,500 at 6,000 req/s) closes connections as the
        // load dips and reconnects as it rises. Idle ones close after 90 s.
        .pool_idle_timeout(Duration::from_secs(90))
        // h2c with prior knowledge; over TLS, the connector's ALPN already said h2.
        .http2_only(http2 == Http2::PriorKnowledge)
        .build(connector);
    // Decodes gzip, br, zstd (the features enabled); `Accept-Encoding` is set per
    // request, so this only adds it when a forwarded client header did not.
    Decompression::new(client)
}

/// Where one subgraph's fetches go: its policy and the pool for its TLS settings.
#[derive(Clone)]
struct Route {
    policy: FetchPolicy,
    /// Or why the TLS settings could not become a rustls config: then every fetch
    /// fails with it (start-up checks make this unlikely; never a silent fallback).
    client: Pool,
}

/// A client pool, or why the TLS settings could not become one.
type Pool = Result<HttpClient, String>;
/// What tells pools apart: TLS settings and HTTP versions.
type PoolKey = (Option<Arc<TlsSettings>>, Http2);

/// Keep-alive pools (hyper-util keeps idle connections per subgraph host), one per
/// distinct TLS and HTTP version setting, with per-subgraph timeouts, compression and
/// optional in-flight deduplication.
#[derive(Clone)]
pub struct HttpTransport {
    default: Route,
    per_subgraph: Arc<FxHashMap<String, Route>>,
    in_flight: InFlight<Fetched>,
    /// Per-subgraph breakers, budgets and slots, for routes whose resilience is on.
    guards: Arc<Guards>,
}

impl HttpTransport {
    /// `default` for every subgraph but those named in `per_subgraph`. Subgraphs with
    /// equal TLS and HTTP version settings share one connection pool.
    pub fn new(
        default: FetchPolicy,
        per_subgraph: impl IntoIterator<Item = (String, FetchPolicy)>,
    ) -> Self {
        let roots = default_roots();
        // One rustls config and pool per distinct setting.
        let mut pools: Vec<(PoolKey, Pool)> = Vec::new();
        let mut route = |policy: FetchPolicy| {
            let key = (policy.tls.clone(), policy.http2);
            let found = pools.iter().find(|(k, _)| *k == key);
            let client = match found {
                Some((_, client)) => client.clone(),
                None => {
                    let tls = policy.tls.as_deref().map_or_else(
                        || TlsSettings::default().client_config(roots.clone()),
                        |tls| tls.client_config(roots.clone()),
                    );
                    let client = tls.map(|tls| http_client(tls, policy.http2)).map_err(|e| {
                        tracing::error!(error = %e, "unusable subgraph TLS settings");
                        format!("unusable TLS settings: {e}")
                    });
                    pools.push((key, client.clone()));
                    client
                }
            };
            Route { policy, client }
        };
        let default = route(default);
        let per_subgraph = per_subgraph
            .into_iter()
            .map(|(name, policy)| (name, route(policy)))
            .collect();
        Self {
            default,
            per_subgraph: Arc::new(per_subgraph),
            in_flight: InFlight::default(),
            guards: Arc::default(),
        }
    }

    fn route(&self, subgraph: &str) -> &Route {
        self.per_subgraph.get(subgraph).unwrap_or(&self.default)
    }

    /// Subgraph requests currently shared by deduplication (tests and metrics).
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }
}

impl Transport for HttpTransport {
    fn resilience_stats(&self) -> Vec<(String, crate::resilience::GuardStats)> {
        self.guards.stats()
    }

    async fn fetch(&self, request: SubgraphRequest<'_>) -> Result<Fetched, FetchError> {
        let route = self.route(request.name);
        let client = route
            .client
            .as_ref()
            .map_err(|why| FetchError::http(why.clone()))?;
        let policy = &route.policy;
        let mut builder = hyper::Request::post(request.url)
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .header(hyper::header::ACCEPT, "application/json");
        for (name, value) in request.headers {
            builder = builder.header(name, value);
        }
        if !policy.accept_compressed && !request.headers.contains_key(ACCEPT_ENCODING) {
            // Stated, so the decompression layer does not ask for compression itself.
            builder = builder.header(ACCEPT_ENCODING, "identity");
        }
        if let Some(headers) = builder.headers_mut() {
            // The fetch span's trace context (W3C traceparent), when traces are exported.
            crate::propagation::inject_current(headers);
        }
        // Keyed on the plain body: the encoding is the same for every fetch of a route.
        let key = (policy.deduplicate && request.is_query && request.shareable).then(|| {
            let key = DedupKey::new(request.name, request.url, &request.body, request.headers);
            key.keeping_headers(request.keep_headers)
        });
        let body = match policy.compress_requests.header() {
            None => request.body,
            Some(encoding) => {
                builder = builder.header(hyper::header::CONTENT_ENCODING, encoding);
                policy
                    .compress_requests
                    .encode(&request.body)
                    .map_err(|e| {
                        FetchError::http(format!("compressing the request ({encoding}): {e}"))
                    })?
            }
        };
        let http_request = builder
            .body(Full::new(body))
            .map_err(|e| FetchError::http(format!("invalid subgraph request: {e}")))?;
        let budget_binds = request.budget_bytes < policy.max_response_bytes;
        let cap_bytes = policy.max_response_bytes.min(request.budget_bytes);
        let (timeout, http2) = (policy.timeout, policy.http2);
        let keep_headers = request.keep_headers;
        let call = match policy.resilience.is_active() {
            false => {
                let cap = Cap {
                    bytes: cap_bytes,
                    charge: request.memory.charge(),
                    keep_headers,
                };
                futures::future::Either::Left(call(
                    client.clone(),
                    http_request,
                    timeout,
                    cap,
                    http2,
                ))
            }
            true => {
                let guard = self.guards.get(request.name, &policy.resilience);
                let (client, memory) = (client.clone(), request.memory.clone());
                let attempt = move |timeout| {
                    let cap = Cap {
                        bytes: cap_bytes,
                        charge: memory.charge(),
                        keep_headers,
                    };
                    call(
                        client.clone(),
                        copy_request(&http_request),
                        timeout,
                        cap,
                        http2,
                    )
                };
                let name = request.name.to_owned();
                let run = crate::resilience::run(guard, name, timeout, request.is_query, attempt);
                futures::future::Either::Right(run)
            }
        };
        let result = match key {
            Some(key) => self.in_flight.run(key, call).await,
            None => call.await,
        };
        match result {
            // The request's budget, not the subgraph's cap, stopped the read.
            Err(e) if budget_binds && e.code == FetchError::RESPONSE_TOO_LARGE => Err(FetchError {
                code: FetchError::REQUEST_RESPONSE_TOO_LARGE,
                message: "the subgraph responses of this request exceed limits.max_response_bytes"
                    .to_owned(),
            }),
            other => other,
        }
    }
}
