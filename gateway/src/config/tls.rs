//! TLS settings: towards subgraphs (`traffic.tls`, overridden per key by
//! `subgraphs.<name>.tls`) and on the listener (top-level `tls`). The files are PEM and
//! are read at start-up; an unreadable or unusable file is a configuration error
//! naming the setting and the file.

use super::Config;
use graphfleet_executor::transport::{ClientIdentity, TlsSettings};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// TLS towards `https://` subgraphs, beyond the system and webpki roots.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SubgraphTlsConfig {
    /// PEM bundle of CA certificates trusted in addition to the system roots.
    pub ca_file: Option<PathBuf>,
    /// PEM client certificate chain (leaf first) for subgraphs that ask for one (mTLS).
    pub client_cert_file: Option<PathBuf>,
    /// PEM private key of `client_cert_file` (PKCS#8, PKCS#1 or SEC1).
    pub client_key_file: Option<PathBuf>,
}

impl SubgraphTlsConfig {
    /// This subgraph's settings over `default`, key by key; the client certificate and
    /// its key are one setting, so a subgraph naming either replaces both.
    pub fn over(&self, default: &Self) -> Self {
        let own_identity = self.client_cert_file.is_some() || self.client_key_file.is_some();
        let identity = if own_identity { self } else { default };
        Self {
            ca_file: self.ca_file.clone().or_else(|| default.ca_file.clone()),
            client_cert_file: identity.client_cert_file.clone(),
            client_key_file: identity.client_key_file.clone(),
        }
    }

    fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// The files read into transport settings; `None` when nothing is set (the
    /// transport's defaults). Errors are `(key, message)`.
    pub fn load(&self) -> Result<Option<TlsSettings>, (&'static str, String)> {
        if self.is_empty() {
            return Ok(None);
        }
        let identity = match (&self.client_cert_file, &self.client_key_file) {
            (Some(cert), Some(key)) => Some((cert, key)),
            (Some(_), None) => return Err(("client_cert_file", missing_pair("client_key_file"))),
            (None, Some(_)) => return Err(("client_key_file", missing_pair("client_cert_file"))),
            (None, None) => None,
        };
        let extra_roots = match &self.ca_file {
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
            let key = self.client_key_file.as_deref().unwrap_or(Path::new(""));
            (
                "client_key_file",
                format!("{}: rejected: {why}", key.display()),
            )
        })?;
        Ok(Some(settings))
    }
}

/// TLS on the listener: HTTPS instead of plain HTTP when both files are set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ListenerTlsConfig {
    /// PEM certificate chain served to clients (leaf first).
    pub cert_file: Option<PathBuf>,
    /// PEM private key of `cert_file` (PKCS#8, PKCS#1 or SEC1).
    pub key_file: Option<PathBuf>,
}

impl ListenerTlsConfig {
    /// The rustls server config (ALPN h2 and http/1.1), or `None` for plain HTTP.
    /// Errors are `(key, message)`.
    pub fn server_config(
        &self,
    ) -> Result<Option<Arc<rustls::ServerConfig>>, (&'static str, String)> {
        let (cert, key) = match (&self.cert_file, &self.key_file) {
            (None, None) => return Ok(None),
            (Some(cert), Some(key)) => (cert, key),
            (Some(_), None) => return Err(("cert_file", missing_pair("key_file"))),
            (None, Some(_)) => return Err(("key_file", missing_pair("cert_file"))),
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
}

fn missing_pair(other: &str) -> String {
    format!("set without {other}; give both (certificate and key) or neither")
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

/// Start-up checks of every TLS setting: pairs complete, files readable and usable.
pub(crate) fn validate(config: &Config, report: &mut impl FnMut(&[&str], String)) {
    if let Err((key, why)) = config.tls.server_config() {
        report(&["tls", key], why);
    }
    if let Err((key, why)) = config.traffic.tls.load() {
        report(&["traffic", "tls", key], why);
    }
    for (name, subgraph) in &config.subgraphs {
        if let Some(tls) = &subgraph.tls
            && let Err((key, why)) = tls.load()
        {
            report(&["subgraphs", name, "tls", key], why);
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
    match config.load() {
        Ok(settings) => settings.map(Arc::new),
        Err((key, why)) => {
            tracing::error!("{at}.{key}: {why}; using the default TLS settings");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(ca: Option<&str>, cert: Option<&str>, key: Option<&str>) -> SubgraphTlsConfig {
        SubgraphTlsConfig {
            ca_file: ca.map(PathBuf::from),
            client_cert_file: cert.map(PathBuf::from),
            client_key_file: key.map(PathBuf::from),
        }
    }

    #[test]
    fn a_subgraph_overrides_key_by_key_and_the_client_pair_as_one() {
        let default = paths(Some("ca"), Some("cert"), Some("key"));
        assert_eq!(
            paths(Some("own-ca"), None, None).over(&default),
            paths(Some("own-ca"), Some("cert"), Some("key"))
        );
        assert_eq!(
            paths(None, Some("own-cert"), Some("own-key")).over(&default),
            paths(Some("ca"), Some("own-cert"), Some("own-key"))
        );
        assert_eq!(
            SubgraphTlsConfig::default().over(&default),
            default,
            "nothing set: the default"
        );
    }

    #[test]
    fn half_a_client_identity_names_the_missing_key() {
        let (key, why) = paths(None, Some("cert.pem"), None)
            .load()
            .expect_err("a certificate without its key");
        assert_eq!(key, "client_cert_file");
        assert!(why.contains("without client_key_file"), "{why}");
    }
}
