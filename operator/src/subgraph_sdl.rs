//! Loading a Subgraph's SDL from its source: inline, a ConfigMap key, or `_service { sdl }`.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::{Client as HttpClient, connect::HttpConnector};
use hyper_util::rt::TokioExecutor;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, ResourceExt};

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

/// HTTP(S) client for `_service { sdl }` introspection.
#[derive(Clone)]
pub struct Introspector {
    client: HttpClient<HttpsConnector<HttpConnector>, Full<Bytes>>,
}

impl Default for Introspector {
    fn default() -> Self {
        Self::new()
    }
}

impl Introspector {
    pub fn new() -> Self {
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_webpki_roots(rustls::crypto::ring::default_provider())
            .expect("ring supports the default TLS versions")
            .https_or_http()
            .enable_http1()
            .build();
        Self {
            client: HttpClient::builder(TokioExecutor::new()).build(https),
        }
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
            .map_err(|e| failed(format!("request failed: {e}")))?;
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
