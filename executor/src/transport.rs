//! Subgraph transport: HTTP over a keep-alive hyper-util pool, or anything else that
//! turns a request body into a response body (benchmarks feed recorded bytes).

use crate::dedup::{DedupKey, InFlight};
/// Kept importable from here, where transports are written.
pub use crate::error::FetchError;
use bytes::Bytes;
use graphfleet_federation::meta::SubgraphId;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use rustc_hash::FxHashMap;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

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
}

pub trait Transport: Send + Sync {
    fn fetch(
        &self,
        request: SubgraphRequest<'_>,
    ) -> impl Future<Output = Result<Bytes, FetchError>> + Send;
}

/// How to fetch from one subgraph.
#[derive(Debug, Clone, PartialEq, Eq)]
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
type HttpClient = Client<Connector, Full<Bytes>>;

/// The default trusted roots: the system store (which honours `SSL_CERT_FILE`/
/// `SSL_CERT_DIR`, so a private CA can be added) and the webpki roots, for images
/// without a CA bundle.
fn default_roots() -> rustls::RootCertStore {
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

/// A keep-alive pool whose connector does TLS with `tls` for `https://` URLs.
fn http_client(tls: rustls::ClientConfig) -> HttpClient {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    connector.set_keepalive(Some(Duration::from_secs(60)));
    // `https://` URLs are TLS over the same connector; `http://` stays plain.
    connector.enforce_http(false);
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .wrap_connector(connector);
    Client::builder(TokioExecutor::new())
        .pool_idle_timeout(Duration::from_secs(90))
        .pool_max_idle_per_host(256)
        .build(connector)
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

/// HTTP/1.1 keep-alive pools (hyper-util keeps idle connections per subgraph host), one
/// per distinct TLS setting, with per-subgraph timeouts and optional in-flight
/// deduplication.
#[derive(Clone)]
pub struct HttpTransport {
    default: Route,
    per_subgraph: Arc<FxHashMap<String, Route>>,
    in_flight: InFlight,
}

impl HttpTransport {
    /// `default` for every subgraph but those named in `per_subgraph`. Subgraphs with
    /// equal TLS settings share one connection pool.
    pub fn new(
        default: FetchPolicy,
        per_subgraph: impl IntoIterator<Item = (String, FetchPolicy)>,
    ) -> Self {
        let roots = default_roots();
        // One rustls config and pool per distinct setting.
        let mut pools: Vec<(Option<Arc<TlsSettings>>, Pool)> = Vec::new();
        let mut route = |policy: FetchPolicy| {
            let found = pools.iter().find(|(tls, _)| *tls == policy.tls);
            let client = match found {
                Some((_, client)) => client.clone(),
                None => {
                    let tls = policy.tls.as_deref().map_or_else(
                        || TlsSettings::default().client_config(roots.clone()),
                        |tls| tls.client_config(roots.clone()),
                    );
                    let client = tls.map(http_client).map_err(|e| {
                        tracing::error!(error = %e, "unusable subgraph TLS settings");
                        format!("unusable TLS settings: {e}")
                    });
                    pools.push((policy.tls.clone(), client.clone()));
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
    async fn fetch(&self, request: SubgraphRequest<'_>) -> Result<Bytes, FetchError> {
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
        if let Some(headers) = builder.headers_mut() {
            // The fetch span's trace context (W3C traceparent), when traces are exported.
            crate::propagation::inject_current(headers);
        }
        let key = (policy.deduplicate && request.is_query)
            .then(|| DedupKey::new(request.url, &request.body, request.headers));
        let http_request = builder
            .body(Full::new(request.body))
            .map_err(|e| FetchError::http(format!("invalid subgraph request: {e}")))?;
        let budget_binds = request.budget_bytes < policy.max_response_bytes;
        let call = call(
            client.clone(),
            http_request,
            policy.timeout,
            policy.max_response_bytes.min(request.budget_bytes),
        );
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

/// The whole body, at most `max` bytes (else `SUBREQUEST_RESPONSE_TOO_LARGE`, unread
/// past the limit), in one buffer sized by `Content-Length` up front: a large body is
/// not gathered chunk by chunk and then copied again into one piece.
async fn read_body(mut body: hyper::body::Incoming, max: usize) -> Result<Bytes, FetchError> {
    use hyper::body::Body as _;
    let too_large = || FetchError {
        code: FetchError::RESPONSE_TOO_LARGE,
        message: format!("subgraph response larger than {max} bytes"),
    };
    let announced = body.size_hint().exact().map(|n| n as usize);
    if announced.is_some_and(|n| n > max) {
        return Err(too_large());
    }
    let mut buf = bytes::BytesMut::with_capacity(announced.unwrap_or(8 * 1024));
    while let Some(frame) = body.frame().await {
        let frame = frame
            .map_err(|e| FetchError::http(format!("reading response body: {}", error_chain(&e))))?;
        if let Ok(data) = frame.into_data() {
            if buf.len() + data.len() > max {
                return Err(too_large());
            }
            buf.extend_from_slice(&data);
        }
    }
    Ok(buf.freeze())
}

/// One HTTP exchange bounded by `timeout`; owns everything so followers can share it.
fn call(
    client: HttpClient,
    request: hyper::Request<Full<Bytes>>,
    timeout: Duration,
    max_response_bytes: usize,
) -> impl Future<Output = Result<Bytes, FetchError>> + Send + 'static {
    let exchange = async move {
        let response = client
            .request(request)
            .await
            .map_err(|e| FetchError::http(error_chain(&e)))?;
        let status = response.status();
        crate::propagation::record_status(status.as_u16());
        let body = read_body(response.into_body(), max_response_bytes).await?;
        // A failed status with a GraphQL body still carries errors worth merging.
        if !status.is_success() && serde_json::from_slice::<serde::de::IgnoredAny>(&body).is_err() {
            return Err(FetchError::http(format!(
                "subgraph responded with status {status}"
            )));
        }
        Ok(body)
    };
    async move {
        tokio::time::timeout(timeout, exchange)
            .await
            .unwrap_or_else(|_| {
                Err(FetchError {
                    code: FetchError::TIMEOUT,
                    message: format!("timed out after {timeout:?}"),
                })
            })
    }
}

/// `error: cause: cause`, so "connection reset" is not hidden behind "client error".
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}
