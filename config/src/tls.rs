//! TLS settings: towards subgraphs (`traffic.tls`, overridden per key by
//! `subgraphs.<name>.tls`) and on the listener (top-level `tls`). The files are PEM; the
//! gateway reads them at start-up (an unreadable or unusable file is a configuration
//! error naming the setting and the file).

use schemars::JsonSchema;
use serde::Deserialize;
use std::path::PathBuf;

/// TLS towards `https://` subgraphs, beyond the system and webpki roots.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
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

    /// Nothing set: the transport's defaults.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// The client certificate and key, when both are set; a half pair is an error
    /// `(key, message)` naming the key that is set.
    pub fn identity(&self) -> Result<Option<(&PathBuf, &PathBuf)>, (&'static str, String)> {
        match (&self.client_cert_file, &self.client_key_file) {
            (Some(cert), Some(key)) => Ok(Some((cert, key))),
            (Some(_), None) => Err(("client_cert_file", missing_pair("client_key_file"))),
            (None, Some(_)) => Err(("client_key_file", missing_pair("client_cert_file"))),
            (None, None) => Ok(None),
        }
    }
}

/// TLS on the listener: HTTPS instead of plain HTTP when both files are set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ListenerTlsConfig {
    /// PEM certificate chain served to clients (leaf first).
    pub cert_file: Option<PathBuf>,
    /// PEM private key of `cert_file` (PKCS#8, PKCS#1 or SEC1).
    pub key_file: Option<PathBuf>,
}

impl ListenerTlsConfig {
    /// The certificate and key, when both are set; a half pair is an error `(key,
    /// message)` naming the key that is set.
    pub fn pair(&self) -> Result<Option<(&PathBuf, &PathBuf)>, (&'static str, String)> {
        match (&self.cert_file, &self.key_file) {
            (None, None) => Ok(None),
            (Some(cert), Some(key)) => Ok(Some((cert, key))),
            (Some(_), None) => Err(("cert_file", missing_pair("key_file"))),
            (None, Some(_)) => Err(("key_file", missing_pair("cert_file"))),
        }
    }
}

fn missing_pair(other: &str) -> String {
    format!("set without {other}; give both (certificate and key) or neither")
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
            .identity()
            .expect_err("a certificate without its key");
        assert_eq!(key, "client_cert_file");
        assert!(why.contains("without client_key_file"), "{why}");
    }
}
