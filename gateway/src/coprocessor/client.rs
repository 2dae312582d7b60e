//! The HTTP exchange with the coprocessor: one POST of the payload per stage, its
//! answer read within the time and size limits and checked against the protocol.

use super::protocol::{self, Payload, ProtocolError};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use std::time::Duration;

type HyperClient = hyper_util::client::legacy::Client<
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
    Full<Bytes>,
>;

/// Why a call gave no usable answer (logged; the client sees a generic error).
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("calling the coprocessor at {url}: {reason}")]
    Transport { url: String, reason: String },
    #[error("the coprocessor did not answer within {0:?} (coprocessor.timeout)")]
    Timeout(Duration),
    #[error("the coprocessor's answer is refused: {0}")]
    Protocol(#[from] ProtocolError),
}

pub struct Client {
    inner: HyperClient,
    timeout: Duration,
    /// Largest answer read: a response stage's answer carries a whole response.
    max_bytes: usize,
}

impl Client {
    pub fn new(timeout: Duration, max_bytes: usize) -> Self {
        // The subgraphs' roots: the system store (SSL_CERT_FILE) and webpki.
        let tls = crate::executor::transport::TlsSettings::default()
            .default_client_config()
            .expect("the default TLS settings are usable");
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .build();
        let inner =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .pool_idle_timeout(Duration::from_secs(15))
                .build(https);
        Self {
            inner,
            timeout,
            max_bytes,
        }
    }

    /// `payload` sent to `url`; the answer, checked for `payload`'s stage. The HTTP
    /// status is not read (as in Apollo Router): the body decides.
    pub async fn call(&self, url: &str, payload: &Payload) -> Result<Payload, CallError> {
        let transport = |reason: String| CallError::Transport {
            url: url.to_owned(),
            reason,
        };
        let body = serde_json::to_vec(payload).expect("payloads serialize");
        let request = http::Request::post(url)
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| transport(e.to_string()))?;
        let exchange = async {
            let response = self
                .inner
                .request(request)
                .await
                .map_err(|e| transport(with_causes(&e)))?;
            let read = Limited::new(response.into_body(), self.max_bytes).collect();
            read.await
                .map(|b| b.to_bytes())
                .map_err(|e| transport(format!("reading the answer: {e}")))
        };
        let text = tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| CallError::Timeout(self.timeout))??;
        Ok(protocol::read_answer(payload.stage, &text)?)
    }
}

/// An error and its causes ("client error (Connect)" alone hides the reason).
fn with_causes(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(e) = cause {
        text.push_str(": ");
        text.push_str(&e.to_string());
        cause = e.source();
    }
    text
}
