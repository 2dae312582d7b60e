//! JSON Web Key Sets: read from a file or fetched from a URL, kept fresh in the
//! background. A failed read keeps the last good keys (and logs), so an identity
//! provider's outage does not lock every client out.

use arc_swap::ArcSwap;
use bytes::Bytes;
use graphfleet_config::JwksSource;
use graphfleet_executor::transport::TlsSettings;
use http_body_util::{BodyExt, Empty, Limited};
use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use std::path::Path;
use std::str::FromStr;
use std::sync::{Arc, Weak};
use std::time::Duration;

/// Largest JWKS document accepted.
const MAX_JWKS_BYTES: usize = 1 << 20;
/// Longest one JWKS fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// Shortest time between two fetches of a URL made for tokens with an unknown `kid`
/// (beyond the regular refreshes), so such tokens cannot make the gateway hammer the
/// identity provider.
const UNKNOWN_KID_REFETCH: Duration = Duration::from_secs(10);

/// One usable verification key.
pub struct Key {
    pub kid: Option<String>,
    /// The key's own `alg`, when the JWKS states it.
    pub alg: Option<Algorithm>,
    pub family: Family,
    pub key: DecodingKey,
}

/// Which algorithms a key type can verify.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Rsa,
    Ec,
    Okp,
}

impl Family {
    pub fn of(alg: Algorithm) -> Option<Self> {
        use Algorithm::*;
        match alg {
            RS256 | RS384 | RS512 | PS256 | PS384 | PS512 => Some(Self::Rsa),
            ES256 | ES384 => Some(Self::Ec),
            EdDSA => Some(Self::Okp),
            HS256 | HS384 | HS512 => None,
        }
    }
}

impl Key {
    /// Whether this key may verify a token signed with `alg`.
    pub fn fits(&self, alg: Algorithm) -> bool {
        match self.alg {
            Some(own) => own == alg,
            None => Family::of(alg) == Some(self.family),
        }
    }
}

/// The keys of a JWKS document; keys that cannot be used (symmetric, unknown type or
/// algorithm, bad parameters) are skipped with a warning.
pub fn parse(text: &[u8], origin: &str) -> Result<Vec<Key>, String> {
    #[derive(serde::Deserialize)]
    struct Set {
        keys: Vec<serde_json::Value>,
    }
    let set: Set = serde_json::from_slice(text)
        .map_err(|e| format!("{origin} is not a JWKS (a JSON object with \"keys\"): {e}"))?;
    let mut keys = Vec::with_capacity(set.keys.len());
    for (i, raw) in set.keys.into_iter().enumerate() {
        match key(raw) {
            Ok(k) => keys.push(k),
            Err(why) => tracing::warn!(source = origin, key = i, "JWKS key skipped: {why}"),
        }
    }
    Ok(keys)
}

fn key(raw: serde_json::Value) -> Result<Key, String> {
    let jwk: Jwk = serde_json::from_value(raw).map_err(|e| e.to_string())?;
    if matches!(&jwk.common.public_key_use, Some(u) if *u != PublicKeyUse::Signature) {
        return Err("not a signature key (use)".to_owned());
    }
    let family = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => Family::Rsa,
        AlgorithmParameters::EllipticCurve(_) => Family::Ec,
        AlgorithmParameters::OctetKeyPair(_) => Family::Okp,
        AlgorithmParameters::OctetKey(_) => return Err("symmetric keys are not used".to_owned()),
    };
    let alg = match &jwk.common.key_algorithm {
        None => None,
        Some(a) => {
            let alg = Algorithm::from_str(&a.to_string())
                .map_err(|_| format!("algorithm {a} is not supported"))?;
            if Family::of(alg) != Some(family) {
                return Err(format!("algorithm {a} does not fit the key type"));
            }
            Some(alg)
        }
    };
    let key = DecodingKey::from_jwk(&jwk).map_err(|e| e.to_string())?;
    Ok(Key {
        kid: jwk.common.key_id,
        alg,
        family,
        key,
    })
}

/// The keys of one source, swapped whole on each successful read.
pub struct Source {
    config: JwksSource,
    /// A URL source's HTTP client, trusting its `ca_file` besides the default roots.
    client: Option<Client>,
    pub keys: ArcSwap<Vec<Key>>,
    /// Set once the first read was attempted (URL sources read on first use).
    started: tokio::sync::OnceCell<()>,
    refresher: parking_lot::Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// When a token with an unknown `kid` last made this URL be fetched.
    refetched: parking_lot::Mutex<Option<std::time::Instant>>,
}

impl Drop for Source {
    fn drop(&mut self) {
        if let Some(task) = self.refresher.get_mut().take() {
            task.abort();
        }
    }
}

impl Source {
    /// A source; a file is read now (so a bad path shows at startup, in the log).
    pub fn new(config: JwksSource) -> Arc<Self> {
        let client = config.url.as_ref().map(|_| {
            client(config.ca_file.as_deref()).unwrap_or_else(|why| {
                // Checked at start-up: only a file changed since can fail here.
                tracing::error!("authentication.jwks: {why}; trusting the default roots only");
                client(None).expect("no extra roots: nothing for rustls to refuse")
            })
        });
        let source = Arc::new(Self {
            client,
            config,
            keys: ArcSwap::from_pointee(Vec::new()),
            started: tokio::sync::OnceCell::new(),
            refresher: parking_lot::Mutex::new(None),
            refetched: parking_lot::Mutex::new(None),
        });
        if let Some(path) = &source.config.file {
            match read_file(path) {
                Ok(keys) => source.keys.store(Arc::new(keys)),
                Err(why) => tracing::error!("authentication.jwks: {why}"),
            }
        }
        source
    }

    fn origin(&self) -> String {
        match (&self.config.file, &self.config.url) {
            (Some(path), _) => path.display().to_string(),
            (None, Some(url)) => url.clone(),
            (None, None) => "(no source)".to_owned(),
        }
    }

    /// Read the source once if it never was, and keep it fresh from then on.
    pub async fn ensure_started(self: &Arc<Self>) {
        self.started
            .get_or_init(|| async {
                if self.config.url.is_some() {
                    self.refresh().await;
                }
                let weak = Arc::downgrade(self);
                let every = self.config.refresh_interval;
                *self.refresher.lock() = Some(tokio::spawn(refresh_loop(weak, every)));
            })
            .await;
    }

    /// Fetch a URL source now, for a token whose `kid` no key has (the provider may have
    /// rotated its keys since the last refresh); at most once per
    /// [`UNKNOWN_KID_REFETCH`]. Whether it fetched.
    pub async fn refetch_for_unknown_kid(&self) -> bool {
        if self.config.url.is_none() {
            return false;
        }
        {
            let mut last = self.refetched.lock();
            let now = std::time::Instant::now();
            if last.is_some_and(|at| now.duration_since(at) < UNKNOWN_KID_REFETCH) {
                return false;
            }
            *last = Some(now);
        }
        self.refresh().await;
        true
    }

    async fn refresh(&self) {
        let read = match (&self.config.file, &self.config.url, &self.client) {
            (Some(path), _, _) => read_file(path),
            (None, Some(url), Some(client)) => fetch(url, client).await,
            _ => return,
        };
        match read {
            Ok(keys) => {
                tracing::debug!(source = %self.origin(), keys = keys.len(), "JWKS read");
                self.keys.store(Arc::new(keys));
            }
            Err(why) => tracing::warn!("authentication.jwks: {why}; keeping the last good keys"),
        }
    }
}

async fn refresh_loop(source: Weak<Source>, every: Duration) {
    let mut ticker = tokio::time::interval(every);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticker.tick().await; // the first tick is now: the source was just read
    loop {
        ticker.tick().await;
        let Some(source) = source.upgrade() else {
            return;
        };
        source.refresh().await;
    }
}

fn read_file(path: &std::path::Path) -> Result<Vec<Key>, String> {
    let text = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse(&text, &path.display().to_string())
}

type Client = hyper_util::client::legacy::Client<
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
    Empty<Bytes>,
>;

/// An HTTP(S) client trusting the system store (which honours `SSL_CERT_FILE` and
/// `SSL_CERT_DIR`), the webpki roots and the CAs of `ca_file`, like the subgraphs'.
fn client(ca_file: Option<&Path>) -> Result<Client, String> {
    let extra_roots = match ca_file {
        Some(path) => ca_certificates(path)?,
        None => Vec::new(),
    };
    let settings = TlsSettings {
        extra_roots,
        identity: None,
    };
    let tls = settings
        .default_client_config()
        .map_err(|e| match ca_file {
            Some(path) => format!("{}: not a usable CA bundle: {e}", path.display()),
            None => e.to_string(),
        })?;
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .build();
    Ok(
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .build(https),
    )
}

/// Every certificate of a PEM bundle; at least one.
pub fn ca_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{}: not valid PEM: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "{}: no certificate in it (expected PEM \"BEGIN CERTIFICATE\" blocks)",
            path.display()
        ));
    }
    Ok(certs)
}

/// An error and its causes, each said once: hyper's "client error (Connect)" alone
/// hides that the certificate was refused.
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
            " (trust its CA with authentication.jwks[].ca_file, or SSL_CERT_FILE for the whole gateway)",
        );
    }
    text
}

async fn fetch(url: &str, client: &Client) -> Result<Vec<Key>, String> {
    let uri: http::Uri = url.parse().map_err(|e| format!("{url:?}: {e}"))?;
    let request = http::Request::get(uri)
        .header(http::header::ACCEPT, "application/json")
        .body(Empty::new())
        .map_err(|e| format!("{url}: {e}"))?;
    let read = async {
        let response = client
            .request(request)
            .await
            .map_err(|e| format!("cannot fetch {url}: {}", with_causes(&e)))?;
        if !response.status().is_success() {
            return Err(format!("{url} answered {}", response.status()));
        }
        let body = Limited::new(response.into_body(), MAX_JWKS_BYTES)
            .collect()
            .await
            .map_err(|e| format!("cannot read {url}: {e}"))?
            .to_bytes();
        parse(&body, url)
    };
    tokio::time::timeout(FETCH_TIMEOUT, read)
        .await
        .map_err(|_| format!("fetching {url} took longer than {FETCH_TIMEOUT:?}"))?
}

#[cfg(test)]
mod tests {
    use super::*;

    const EC_KEY: &str = r#"{"kty":"EC","crv":"P-256","kid":"ec","alg":"ES256",
        "x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
        "y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}"#;

    #[test]
    fn unusable_keys_are_skipped_and_usable_ones_kept() {
        let text = format!(
            r#"{{"keys":[{EC_KEY},
                {{"kty":"oct","k":"c2VjcmV0","kid":"hmac"}},
                {{"kty":"EC","crv":"P-256","kid":"wrong-alg","alg":"RS256","x":"AA","y":"AA"}},
                {{"kty":"nonsense"}},
                {{"kty":"EC","crv":"P-256","kid":"enc","use":"enc",
                  "x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
                  "y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}}]}}"#
        );
        let keys = parse(text.as_bytes(), "test").expect("a JWKS");
        let kids: Vec<_> = keys.iter().map(|k| k.kid.as_deref()).collect();
        assert_eq!(kids, [Some("ec")]);
        let ec = &keys[0];
        assert!(ec.fits(Algorithm::ES256));
        assert!(!ec.fits(Algorithm::ES384), "the key states ES256");
        assert!(!ec.fits(Algorithm::RS256));
    }

    #[test]
    fn a_key_without_alg_fits_its_family() {
        let text = EC_KEY.replace(r#""alg":"ES256","#, "");
        let keys = parse(format!(r#"{{"keys":[{text}]}}"#).as_bytes(), "test").expect("a JWKS");
        assert!(keys[0].fits(Algorithm::ES256) && keys[0].fits(Algorithm::ES384));
        assert!(!keys[0].fits(Algorithm::PS256) && !keys[0].fits(Algorithm::HS256));
    }

    #[test]
    fn a_document_without_keys_is_an_error_naming_it() {
        let err = parse(b"{\"key\":[]}", "/keys/jwks.json")
            .err()
            .expect("an error");
        assert!(err.starts_with("/keys/jwks.json is not a JWKS"), "{err}");
    }
}

#[cfg(test)]
mod https_tests {
    use super::*;

    const JWKS: &str = r#"{"keys":[{"kty":"EC","crv":"P-256","kid":"ec","alg":"ES256",
        "x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
        "y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}"#;

    /// A JWKS served over HTTPS with a certificate for 127.0.0.1 signed by a CA made
    /// here; its URL and the CA's PEM.
    async fn https_jwks() -> (String, String) {
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
                        let body = http_body_util::Full::new(Bytes::from_static(JWKS.as_bytes()));
                        Ok::<_, std::convert::Infallible>(hyper::Response::new(body))
                    });
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(io, service)
                        .await;
                });
            }
        });
        (format!("https://{addr}/jwks.json"), ca)
    }

    #[tokio::test]
    async fn an_https_jwks_is_trusted_through_its_ca_file_and_refused_clearly_without() {
        let (url, ca) = https_jwks().await;
        let ca_file =
            std::env::temp_dir().join(format!("graphfleet-jwks-ca-{}.pem", std::process::id()));
        std::fs::write(&ca_file, ca).expect("write the CA");
        let trusting = client(Some(&ca_file)).expect("a client");
        let keys = fetch(&url, &trusting).await.expect("fetched");
        assert_eq!(keys.len(), 1);
        let refused = fetch(&url, &client(None).expect("a client"))
            .await
            .err()
            .expect("refused without the CA");
        assert_eq!(
            refused,
            format!(
                "cannot fetch {url}: client error (Connect): invalid peer certificate: UnknownIssuer (trust its CA with authentication.jwks[].ca_file, or SSL_CERT_FILE for the whole gateway)"
            )
        );
        let _ = std::fs::remove_file(&ca_file);
    }
}
