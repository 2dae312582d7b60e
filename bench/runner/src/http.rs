//! A small HTTP/1.1 client for the runner's own requests (oracle, readiness, `/stats`);
//! the load itself comes from k6.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{ACCEPT, CONTENT_TYPE};
use hyper::{Method, Request};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

#[derive(Clone)]
pub struct Client {
    inner: HyperClient<HttpConnector, Full<Bytes>>,
}

impl Client {
    pub fn new() -> Self {
        Client {
            inner: HyperClient::builder(TokioExecutor::new()).build_http(),
        }
    }

    /// A client that opens a connection per request, as a kubelet probe does (a kept
    /// connection would hold a slot of the server's connection limit between requests).
    pub fn fresh_connections() -> Self {
        Client {
            inner: HyperClient::builder(TokioExecutor::new())
                .pool_max_idle_per_host(0)
                .build_http(),
        }
    }

    /// Sends `req` and returns the response as soon as its head arrives, the body unread.
    pub async fn open(
        &self,
        req: Request<Full<Bytes>>,
    ) -> Result<hyper::Response<hyper::body::Incoming>, hyper_util::client::legacy::Error> {
        self.inner.request(req).await
    }

    /// Sends one request and returns the status and the whole body, within `timeout`.
    pub async fn send(
        &self,
        method: Method,
        url: &str,
        body: Option<Bytes>,
        timeout: Duration,
    ) -> anyhow::Result<(u16, Bytes)> {
        let mut req = Request::builder()
            .method(method)
            .uri(url)
            .header(ACCEPT, "application/json");
        if body.is_some() {
            req = req.header(CONTENT_TYPE, "application/json");
        }
        let req = req
            .body(Full::new(body.unwrap_or_default()))
            .with_context(|| format!("building a request to {url}"))?;
        let exchange = async {
            let res = self.open(req).await?;
            let status = res.status().as_u16();
            let body = res.into_body().collect().await?.to_bytes();
            anyhow::Ok((status, body))
        };
        tokio::time::timeout(timeout, exchange)
            .await
            .with_context(|| format!("{url} did not answer within {timeout:?}"))?
            .with_context(|| format!("request to {url}"))
    }

    pub async fn post_json(&self, url: &str, body: Bytes) -> anyhow::Result<(u16, Bytes)> {
        self.send(Method::POST, url, Some(body), Duration::from_secs(60))
            .await
    }

    pub async fn get(&self, url: &str) -> anyhow::Result<(u16, Bytes)> {
        self.send(Method::GET, url, None, Duration::from_secs(10))
            .await
    }

    /// Polls `url` with `body` (POST) or GET until it answers 200, for at most `limit`.
    /// `alive` is asked between attempts so a crashed server fails fast.
    pub async fn wait_ok(
        &self,
        url: &str,
        body: Option<Bytes>,
        limit: Duration,
        mut alive: impl FnMut() -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let start = Instant::now();
        let mut last = String::from("no answer yet");
        while start.elapsed() < limit {
            alive()?;
            let method = if body.is_some() {
                Method::POST
            } else {
                Method::GET
            };
            match self
                .send(method, url, body.clone(), Duration::from_secs(5))
                .await
            {
                Ok((200, _)) => return Ok(()),
                Ok((status, b)) => {
                    last = format!(
                        "status {status}: {}",
                        String::from_utf8_lossy(&b[..b.len().min(200)])
                    )
                }
                Err(e) => last = format!("{e:#}"),
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        bail!("{url} was not ready within {limit:?} (last: {last})")
    }
}
