//! Subgraph transport: HTTP over a keep-alive hyper-util pool, or anything else that
//! turns a request body into a response body (benchmarks feed recorded bytes).

use crate::supergraph::meta::SubgraphId;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use std::future::Future;
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
}

pub trait Transport: Send + Sync {
    fn fetch(
        &self,
        request: SubgraphRequest<'_>,
    ) -> impl Future<Output = Result<Bytes, String>> + Send;
}

/// HTTP/1.1 keep-alive pool (hyper-util keeps idle connections per subgraph host).
#[derive(Clone)]
pub struct HttpTransport {
    client: Client<HttpConnector, Full<Bytes>>,
    timeout: Duration,
}

impl Default for HttpTransport {
    fn default() -> Self {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.set_keepalive(Some(Duration::from_secs(60)));
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(90))
            .pool_max_idle_per_host(256)
            .build(connector);
        Self {
            client,
            timeout: Duration::from_secs(30),
        }
    }
}

impl Transport for HttpTransport {
    async fn fetch(&self, request: SubgraphRequest<'_>) -> Result<Bytes, String> {
        let mut builder = hyper::Request::post(request.url)
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .header(hyper::header::ACCEPT, "application/json");
        for (name, value) in request.headers {
            builder = builder.header(name, value);
        }
        let request = builder
            .body(Full::new(request.body))
            .map_err(|e| format!("invalid subgraph request: {e}"))?;
        let call = async {
            let response = self
                .client
                .request(request)
                .await
                .map_err(|e| format!("{e}"))?;
            let status = response.status();
            let body = response
                .into_body()
                .collect()
                .await
                .map_err(|e| format!("reading response body: {e}"))?
                .to_bytes();
            if !status.is_success() && body.is_empty() {
                return Err(format!("subgraph responded with status {status}"));
            }
            Ok(body)
        };
        tokio::time::timeout(self.timeout, call)
            .await
            .map_err(|_| format!("timed out after {:?}", self.timeout))?
    }
}
