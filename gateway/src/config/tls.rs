//! The TLS settings' PEM files read at start-up (listener, subgraphs, the CAs of JWKS
//! URLs); an unreadable or unusable file is a configuration error naming the setting
//! and the file.

use graphfleet_config::{Config, ListenerTlsConfig, SubgraphTlsConfig};
use graphfleet_executor::transport::{ClientIdentity, TlsSettings};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::Path;
use std::sync::Arc;

/// The files of a subgraph TLS setting read into transport settings; `None` when
/// nothing is set (the transport's defaults). Errors are `(key, message)`.
pub fn load(config: &SubgraphTlsConfig) -> Result<Option<TlsSettings>, (&'static str, String)> {
    if config.is_empty() {
        return Ok(None);
    }
    let identity = config.identity()?;
    let extra_roots = match &config.ca_file {
        Some(path) => ca_certificates(path).map_err(|e| ("ca_file", e))?,
        None => Vec::new(),
    };
    let identity = match identity {
        Some((cert, key)) => Some(ClientIdentity {
            chain: certificates(cert).map_err(|e| ("client_cert_file", e))?,
            key: private_key(key).map_err(|e| ("client_key_file", e))?,
        }),
        None => None,
    };
    let settings = TlsSettings {
        extra_roots,
        identity,
    };
    // The roots passed above, so what rustls refuses now is the key (or its pairing
    // with the certificate).
    settings.check().map_err(|why| {
        let key = config.client_key_file.as_deref().unwrap_or(Path::new(""));
        (
            "client_key_file",
            format!("{}: rejected: {why}", key.display()),
        )
    })?;
    Ok(Some(settings))
}

/// The listener's rustls server config (ALPN h2 and http/1.1), or `None` for plain
/// HTTP. Errors are `(key, message)`.
pub fn server_config(
    config: &ListenerTlsConfig,
) -> Result<Option<Arc<rustls::ServerConfig>>, (&'static str, String)> {
    let Some((cert, key)) = config.pair()? else {
        return Ok(None);
    };
    let chain = certificates(cert).map_err(|e| ("cert_file", e))?;
    let key = private_key(key).map_err(|e| ("key_file", e))?;
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("ring supports the default TLS versions")
    .with_no_client_auth()
    .with_single_cert(chain, key)
    .map_err(|e| ("key_file", format!("rejected by TLS: {e}")))?;
    // The server speaks both (hyper-util's auto builder); h2 first, as clients prefer.
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Some(Arc::new(config)))
}

/// Every certificate in a PEM file; at least one.
fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let text = read(path)?;
    let certs = CertificateDer::pem_slice_iter(&text)
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

/// A CA bundle, each certificate checked to be usable as a trust anchor.
fn ca_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = certificates(path)?;
    let mut store = rustls::RootCertStore::empty();
    for (i, cert) in certs.iter().enumerate() {
        store.add(cert.clone()).map_err(|e| {
            format!(
                "{}: certificate #{} is not a usable CA: {e}",
                path.display(),
                i + 1
            )
        })?;
    }
    Ok(certs)
}

/// The first private key in a PEM file.
fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>, String> {
    let text = read(path)?;
    PrivateKeyDer::from_pem_slice(&text).map_err(|e| match e {
        rustls::pki_types::pem::Error::NoItemsFound => format!(
            "{}: no private key in it (expected a PEM \"BEGIN PRIVATE KEY\", \"BEGIN RSA \
             PRIVATE KEY\" or \"BEGIN EC PRIVATE KEY\" block)",
            path.display()
        ),
        e => format!("{}: not valid PEM: {e}", path.display()),
    })
}

fn read(path: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// Start-up checks of every TLS setting's files: readable and usable. A half pair is
/// `graphfleet_config::validate`'s to report, so those settings are skipped here.
pub(crate) fn validate(config: &Config, report: &mut impl FnMut(&[&str], String)) {
    if config.tls.pair().is_ok()
        && let Err((key, why)) = server_config(&config.tls)
    {
        report(&["tls", key], why);
    }
    if config.traffic.tls.identity().is_ok()
        && let Err((key, why)) = load(&config.traffic.tls)
    {
        report(&["traffic", "tls", key], why);
    }
    for (name, subgraph) in &config.subgraphs {
        if let Some(tls) = &subgraph.tls
            && tls.identity().is_ok()
            && let Err((key, why)) = load(tls)
        {
            report(&["subgraphs", name, "tls", key], why);
        }
    }
    for (i, source) in config.authentication.jwks.iter().enumerate() {
        if let Some(path) = &source.ca_file
            && let Err(why) = ca_certificates(path)
        {
            report(&["authentication", "jwks", &i.to_string(), "ca_file"], why);
        }
    }
}

/// Each distinct effective subgraph TLS setting loaded once, so subgraphs with equal
/// settings share one client pool; `None` for the default (nothing set).
pub(crate) struct Loaded {
    default: Option<Arc<TlsSettings>>,
    /// Effective settings other than the default, and what they loaded into.
    others: Vec<(SubgraphTlsConfig, Option<Arc<TlsSettings>>)>,
    default_config: SubgraphTlsConfig,
}

impl Loaded {
    pub(crate) fn new(default: &SubgraphTlsConfig) -> Self {
        Self {
            default: load_checked(default, "traffic.tls"),
            others: Vec::new(),
            default_config: default.clone(),
        }
    }

    pub(crate) fn default_settings(&self) -> Option<Arc<TlsSettings>> {
        self.default.clone()
    }

    /// The settings of a subgraph with `own` TLS settings (if any) over the default.
    pub(crate) fn for_subgraph(
        &mut self,
        name: &str,
        own: Option<&SubgraphTlsConfig>,
    ) -> Option<Arc<TlsSettings>> {
        let effective = match own {
            Some(own) => own.over(&self.default_config),
            None => return self.default_settings(),
        };
        if effective == self.default_config {
            return self.default_settings();
        }
        if let Some((_, loaded)) = self.others.iter().find(|(c, _)| *c == effective) {
            return loaded.clone();
        }
        let loaded = load_checked(&effective, &format!("subgraphs.{name}.tls"));
        self.others.push((effective, loaded.clone()));
        loaded
    }
}

/// Loading after the start-up checks passed: only a file changed since then can fail.
/// Then the setting is dropped with an error in the log, which fails closed (fewer
/// trusted CAs, no client certificate) rather than stopping a running gateway.
fn load_checked(config: &SubgraphTlsConfig, at: &str) -> Option<Arc<TlsSettings>> {
    match load(config) {
        Ok(settings) => settings.map(Arc::new),
        Err((key, why)) => {
            tracing::error!("{at}.{key}: {why}; using the default TLS settings");
            None
        }
    }
}
