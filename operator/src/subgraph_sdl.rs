//! Loading a Subgraph's SDL from its source: inline, a ConfigMap key, or `_service { sdl }`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::{Client as HttpClient, connect::HttpConnector};
use hyper_util::rt::TokioExecutor;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, ResourceExt};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use graphfleet_api::Subgraph;

/// Default timeout of one introspection request.
const DEFAULT_INTROSPECTION_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest introspection response accepted (an SDL is far smaller).
const MAX_INTROSPECTION_BYTES: usize = 16 * 1024 * 1024;
const SERVICE_QUERY: &str =
    r#"{"query":"query __ApolloGetServiceDefinition__ { _service { sdl } }"}"#;

/// Why a Subgraph's schema could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    #[error("ConfigMap {name} not found")]
    ConfigMapMissing { name: String },
    #[error("ConfigMap {name} has no key {key}")]
    ConfigMapKeyMissing { name: String, key: String },
    #[error("reading ConfigMap {name}: {source}")]
    Kube {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("invalid subgraph url {url}: {reason}")]
    BadUrl { url: String, reason: String },
    #[error("introspecting {url}: {reason}")]
    Introspection { url: String, reason: String },
    #[error("introspecting {url}: timed out after {timeout:?}")]
    Timeout { url: String, timeout: Duration },
    #[error("subgraph returned an empty schema")]
    Empty,
}

impl SchemaError {
    /// Condition reason for this error.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::ConfigMapMissing { .. }
            | Self::ConfigMapKeyMissing { .. }
            | Self::Kube { .. } => "ConfigMapUnavailable",
            Self::BadUrl { .. } => "InvalidUrl",
            Self::Introspection { .. } | Self::Timeout { .. } => "IntrospectionFailed",
            Self::Empty => "EmptySchema",
        }
    }
}

/// An error and its causes, each said once: hyper's "client error (Connect)" alone
/// hides that the subgraph's certificate was refused.
fn with_causes(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(e) = cause {
        let more = e.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        cause = e.source();
    }
    if text.contains("invalid peer certificate") {
        text.push_str(
            " (trust its CA with the operator's --introspection-ca-file or SSL_CERT_FILE)",
        );
    }
    text
}

/// HTTP(S) client for `_service { sdl }` introspection.
#[derive(Clone)]
pub struct Introspector {
    client: HttpClient<HttpsConnector<HttpConnector>, Full<Bytes>>,
}

impl Default for Introspector {
    fn default() -> Self {
        Self::new(None).expect("no extra roots: nothing for rustls to refuse")
    }
}

impl Introspector {
    /// A client trusting the system store (which honours `SSL_CERT_FILE` and
    /// `SSL_CERT_DIR`), the webpki roots (for images without a CA bundle) and the CAs
    /// of `ca_file` (`--introspection-ca-file`), as the gateway trusts subgraphs.
    pub fn new(ca_file: Option<&Path>) -> Result<Self, String> {
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        let native = rustls_native_certs::load_native_certs();
        for error in &native.errors {
            tracing::warn!(%error, "reading the system's CA certificates");
        }
        roots.add_parsable_certificates(native.certs);
        if let Some(path) = ca_file {
            let certs = CertificateDer::pem_file_iter(path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| format!("{}: not valid PEM: {e}", path.display()))?;
            if certs.is_empty() {
                return Err(format!("{}: no certificate in it", path.display()));
            }
            for cert in certs {
                roots
                    .add(cert)
                    .map_err(|e| format!("{}: not a usable CA: {e}", path.display()))?;
            }
        }
        let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("ring supports the default TLS versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .build();
        Ok(Self {
            client: HttpClient::builder(TokioExecutor::new()).build(https),
        })
    }

    /// Fetches the subgraph's SDL via `_service { sdl }`, bounded by `timeout`.
    async fn fetch_sdl(&self, url: &str, timeout: Duration) -> Result<String, SchemaError> {
        match tokio::time::timeout(timeout, self.fetch(url)).await {
            Ok(result) => result,
            Err(_) => Err(SchemaError::Timeout {
                url: url.to_owned(),
                timeout,
            }),
        }
    }

    async fn fetch(&self, url: &str) -> Result<String, SchemaError> {
        let uri: hyper::Uri =
            url.parse()
                .map_err(|e: hyper::http::uri::InvalidUri| SchemaError::BadUrl {
                    url: url.to_owned(),
                    reason: e.to_string(),
                })?;
        let request = hyper::Request::post(uri)
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .header(hyper::header::ACCEPT, "application/json")
            .body(Full::new(Bytes::from_static(SERVICE_QUERY.as_bytes())))
            .map_err(|e| SchemaError::BadUrl {
                url: url.to_owned(),
                reason: e.to_string(),
            })?;
        let failed = |reason: String| SchemaError::Introspection {
            url: url.to_owned(),
            reason,
        };
        let response = self
            .client
            .request(request)
            .await
            .map_err(|e| failed(format!("request failed: {}", with_causes(&e))))?;
        let status = response.status();
        let body = Limited::new(response.into_body(), MAX_INTROSPECTION_BYTES)
            .collect()
            .await
            .map_err(|e| failed(format!("reading the response: {e}")))?
            .to_bytes();
        if !status.is_success() {
            return Err(failed(format!("HTTP {status}")));
        }
        parse_service_response(&body).map_err(failed)
    }
}

/// Extracts `data._service.sdl` from a GraphQL response, surfacing GraphQL errors.
fn parse_service_response(body: &[u8]) -> Result<String, String> {
    let value: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| format!("response is not JSON: {e}"))?;
    if let Some(sdl) = value.pointer("/data/_service/sdl").and_then(|v| v.as_str()) {
        return Ok(sdl.to_owned());
    }
    let errors: Vec<&str> = value
        .get("errors")
        .and_then(|e| e.as_array())
        .into_iter()
        .flatten()
        .filter_map(|e| e.get("message").and_then(|m| m.as_str()))
        .collect();
    if errors.is_empty() {
        Err("response has no data._service.sdl".to_owned())
    } else {
        Err(format!("GraphQL errors: {}", errors.join("; ")))
    }
}

/// Loads the SDL of `subgraph` from whichever source its spec selects.
pub async fn load_sdl(
    client: &kube::Client,
    introspector: &Introspector,
    subgraph: &Subgraph,
) -> Result<String, SchemaError> {
    let spec = &subgraph.spec;
    let sdl = if let Some(sdl) = &spec.sdl {
        sdl.clone()
    } else if let Some(r) = &spec.config_map_ref {
        let namespace = subgraph.namespace().unwrap_or_else(|| "default".to_owned());
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
        let cm = api
            .get_opt(&r.name)
            .await
            .map_err(|source| SchemaError::Kube {
                name: r.name.clone(),
                source,
            })?
            .ok_or_else(|| SchemaError::ConfigMapMissing {
                name: r.name.clone(),
            })?;
        cm.data.and_then(|mut d| d.remove(&r.key)).ok_or_else(|| {
            SchemaError::ConfigMapKeyMissing {
                name: r.name.clone(),
                key: r.key.clone(),
            }
        })?
    } else {
        let timeout = spec
            .introspection_timeout_ms
            .map(|ms| Duration::from_millis(u64::from(ms)))
            .unwrap_or(DEFAULT_INTROSPECTION_TIMEOUT);
        let namespace = subgraph.namespace().unwrap_or_else(|| "default".to_owned());
        introspector
            .fetch_sdl(&introspection_url(&spec.url, &namespace), timeout)
            .await?
    };
    if sdl.trim().is_empty() {
        return Err(SchemaError::Empty);
    }
    Ok(sdl)
}

/// The URL the operator introspects for a Subgraph in `namespace`.
///
/// A one-label host (`http://accounts:4200/`) is a Service name the gateway pods resolve
/// through their namespace's DNS search path; the operator runs in another namespace, so
/// it asks for `accounts.<namespace>.svc`, the same Service. Other URLs are unchanged.
fn introspection_url(url: &str, namespace: &str) -> String {
    let Ok(uri) = url.parse::<hyper::Uri>() else {
        return url.to_owned();
    };
    let Some(host) = uri.host() else {
        return url.to_owned();
    };
    let one_label = !host.contains('.') && !host.contains(':') && host != "localhost";
    if !one_label || host.is_empty() {
        return url.to_owned();
    }
    let authority = uri.authority().map(|a| a.as_str()).unwrap_or(host);
    let qualified = authority.replacen(host, &format!("{host}.{namespace}.svc"), 1);
    url.replacen(authority, &qualified, 1)
}

#[cfg(test)]
mod tests {
    use super::{introspection_url, parse_service_response};

    #[test]
    fn service_names_are_qualified_with_the_subgraph_namespace() {
        assert_eq!(
            introspection_url("http://accounts:4200/accounts", "demo"),
            "http://accounts.demo.svc:4200/accounts"
        );
        assert_eq!(
            introspection_url("http://accounts/graphql", "demo"),
            "http://accounts.demo.svc/graphql"
        );
    }

    #[test]
    fn qualified_names_addresses_and_localhost_are_kept() {
        for url in [
            "http://accounts.other.svc:4200/accounts",
            "http://127.0.0.1:4200/accounts",
            "http://localhost:4200/accounts",
            "http://[::1]:4200/accounts",
            "https://api.example.com/graphql",
            "not a url",
        ] {
            assert_eq!(introspection_url(url, "demo"), url);
        }
    }

    #[test]
    fn service_response_yields_the_sdl() {
        let body = br#"{"data":{"_service":{"sdl":"type Query { a: Int }"}}}"#;
        assert_eq!(
            parse_service_response(body).as_deref(),
            Ok("type Query { a: Int }")
        );
    }

    #[test]
    fn graphql_errors_are_reported() {
        let body = br#"{"errors":[{"message":"Cannot query field \"_service\""}]}"#;
        let err = parse_service_response(body).expect_err("no sdl");
        assert!(err.contains("Cannot query field"), "{err}");
    }

    #[test]
    fn non_json_is_reported() {
        let err = parse_service_response(b"<html>").expect_err("not json");
        assert!(err.starts_with("response is not JSON"), "{err}");
    }
}

#[cfg(test)]
mod tls_tests {
    use super::{Introspector, SchemaError};
    use std::time::Duration;

    /// A subgraph answering `_service { sdl }` over HTTPS with a certificate for
    /// 127.0.0.1 signed by a CA made here: its URL and the CA's PEM.
    async fn https_subgraph() -> (String, String) {
        let (acceptor, ca) = graphfleet_testkit::tls::loopback_acceptor();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("address");
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    // A client refusing the certificate ends the handshake.
                    let Ok(stream) = acceptor.accept(stream).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(|_| async {
                        let sdl = r#"{"data":{"_service":{"sdl":"type Query { a: Int }"}}}"#;
                        let body =
                            http_body_util::Full::new(bytes::Bytes::from_static(sdl.as_bytes()));
                        Ok::<_, std::convert::Infallible>(hyper::Response::new(body))
                    });
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(io, service)
                        .await;
                });
            }
        });
        (format!("https://{addr}/graphql"), ca)
    }

    #[tokio::test]
    async fn an_https_subgraph_is_trusted_through_the_ca_file_and_refused_clearly_without() {
        let (url, ca) = https_subgraph().await;
        let ca_file = std::env::temp_dir().join(format!(
            "graphfleet-introspection-ca-{}.pem",
            std::process::id()
        ));
        std::fs::write(&ca_file, ca).expect("write the CA");
        let timeout = Duration::from_secs(10);
        let trusting = Introspector::new(Some(&ca_file)).expect("a client");
        let sdl = trusting
            .fetch_sdl(&url, timeout)
            .await
            .expect("introspected");
        assert_eq!(sdl, "type Query { a: Int }");
        let refused = Introspector::default().fetch_sdl(&url, timeout).await;
        let Err(SchemaError::Introspection { reason, .. }) = refused else {
            panic!("refused without the CA: {refused:?}");
        };
        assert_eq!(
            reason,
            "request failed: client error (Connect): invalid peer certificate: UnknownIssuer (trust its CA with the operator's --introspection-ca-file or SSL_CERT_FILE)"
        );
        let missing = Introspector::new(Some(&ca_file.with_extension("missing")));
        assert!(missing.err().is_some_and(|e| e.starts_with("cannot read ")));
        let _ = std::fs::remove_file(&ca_file);
    }
}
