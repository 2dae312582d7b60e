//! JWT validation: the token from the configured header (or cookie), its `kid` and
//! `alg` matched against the JWKS keys, then signature, `exp`/`nbf`, issuer and
//! audience checked by jsonwebtoken.

use super::jwks::{Key, Source};
use base64::Engine;
use graphfleet_config::AuthenticationConfig;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation};
use std::str::FromStr;
use std::sync::Arc;

/// The claims of a valid token.
pub type Claims = Arc<serde_json::Map<String, serde_json::Value>>;

/// Why a request's token was refused; the message is what the client reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// The token is missing and `require_authentication` is set.
    #[error("this request needs a token in the {0}")]
    Missing(String),
    /// The token is there but not valid.
    #[error("invalid JWT: {0}")]
    Invalid(String),
}

impl AuthError {
    /// The `extensions.code` of the error.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Missing(_) => "UNAUTHENTICATED",
            Self::Invalid(_) => "AUTH_ERROR",
        }
    }
}

pub struct Authenticator {
    config: AuthenticationConfig,
    header: http::HeaderName,
    algorithms: Vec<Algorithm>,
    sources: Vec<Arc<Source>>,
}

impl Authenticator {
    /// `None` when authentication is off (no `jwks`).
    pub fn new(config: &AuthenticationConfig) -> Option<Self> {
        if !config.enabled() {
            return None;
        }
        let header = http::HeaderName::from_bytes(config.header.name.as_bytes())
            .expect("authentication.header.name is validated at load");
        let algorithms = config
            .algorithms
            .iter()
            .filter_map(|a| Algorithm::from_str(a).ok())
            .collect();
        let sources = config.jwks.iter().cloned().map(Source::new).collect();
        Some(Self {
            config: config.clone(),
            header,
            algorithms,
            sources,
        })
    }

    /// The claims of the request's token; `None` when it has none (and may go on
    /// unauthenticated).
    pub async fn authenticate(
        &self,
        headers: &http::HeaderMap,
    ) -> Result<Option<Claims>, AuthError> {
        let Some(token) = self.token(headers)? else {
            if self.config.require_authentication {
                return Err(AuthError::Missing(self.where_from()));
            }
            return Ok(None);
        };
        self.authenticate_token(token).await.map(Some)
    }

    /// The claims of `token` (read from wherever the transport carries it: a header, a
    /// WebSocket's `connection_init`), the keys fetched or refetched as needed.
    pub async fn authenticate_token(&self, token: &str) -> Result<Claims, AuthError> {
        for source in &self.sources {
            source.ensure_started().await;
        }
        match self.check(token) {
            Err(Refused::NoKey(e)) => {
                // Keys may have rotated since the last refresh: fetch the URLs again
                // (rate-limited) and retry once.
                let mut refetched = false;
                for source in &self.sources {
                    refetched |= source.refetch_for_unknown_kid().await;
                }
                if !refetched {
                    return Err(e);
                }
                self.validate(token)
            }
            other => other.map_err(Refused::into_error),
        }
    }

    /// The token in `value` as the header carries it (`<prefix> <token>`), or bare: a
    /// JWT has no space, so the prefix cannot be mistaken for part of one.
    pub fn token_in<'v>(&self, value: &'v str) -> &'v str {
        let prefix = self.config.header.prefix.as_str();
        let value = value.trim();
        let stripped = (!prefix.is_empty())
            .then(|| value.strip_prefix(prefix)?.strip_prefix(' '))
            .flatten();
        stripped.map_or(value, str::trim)
    }

    /// Whether requests without a token are refused.
    pub fn required(&self) -> bool {
        self.config.require_authentication
    }

    /// The `exp`/`nbf` leeway.
    pub fn leeway(&self) -> std::time::Duration {
        self.config.leeway
    }

    fn where_from(&self) -> String {
        let header = match self.config.header.prefix.as_str() {
            "" => format!("{} header", self.config.header.name),
            prefix => format!("{} header (`{prefix} <token>`)", self.config.header.name),
        };
        match &self.config.cookie {
            Some(cookie) => format!("{header} or the {cookie} cookie"),
            None => header,
        }
    }

    /// The token text: the header (which must then be well formed), else the cookie.
    fn token<'h>(&self, headers: &'h http::HeaderMap) -> Result<Option<&'h str>, AuthError> {
        if let Some(value) = headers.get(&self.header) {
            let name = &self.config.header.name;
            let value = value
                .to_str()
                .map_err(|_| AuthError::Invalid(format!("the {name} header is not text")))?;
            let prefix = self.config.header.prefix.as_str();
            let token = if prefix.is_empty() {
                value.trim()
            } else {
                value
                    .strip_prefix(prefix)
                    .and_then(|rest| rest.strip_prefix(' '))
                    .map(str::trim)
                    .ok_or_else(|| {
                        AuthError::Invalid(format!("the {name} header must be `{prefix} <token>`"))
                    })?
            };
            if token.is_empty() {
                return Err(AuthError::Invalid(format!(
                    "the {name} header has no token"
                )));
            }
            return Ok(Some(token));
        }
        let Some(cookie) = &self.config.cookie else {
            return Ok(None);
        };
        let found = headers
            .get_all(http::header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .find(|(name, _)| name == cookie)
            .map(|(_, value)| value.trim());
        Ok(found.filter(|t| !t.is_empty()))
    }

    /// Check `token` against the keys and the configured issuers and audiences.
    pub fn validate(&self, token: &str) -> Result<Claims, AuthError> {
        self.check(token).map_err(Refused::into_error)
    }

    fn check(&self, token: &str) -> Result<Claims, Refused> {
        let alg = self.algorithm(token)?;
        let header = jsonwebtoken::decode_header(token).map_err(|e| malformed(&e))?;
        let candidates = self
            .candidates(header.kid.as_deref(), alg)
            .map_err(Refused::NoKey)?;
        let mut validation = Validation::new(alg);
        validation.leeway = self.config.leeway.as_secs();
        validation.validate_nbf = true;
        // jsonwebtoken checks `iss` and `aud` only when the token has them: with issuers
        // or audiences configured, a token must have them.
        let mut required = vec!["exp"];
        if !self.config.issuers.is_empty() {
            validation.set_issuer(&self.config.issuers);
            required.push("iss");
        }
        if self.config.audiences.is_empty() {
            validation.validate_aud = false;
        } else {
            validation.set_audience(&self.config.audiences);
            required.push("aud");
        }
        validation.set_required_spec_claims(&required);
        let mut last = None;
        for key in candidates {
            match jsonwebtoken::decode::<serde_json::Map<String, serde_json::Value>>(
                token,
                &key.key,
                &validation,
            ) {
                Ok(data) => return Ok(Arc::new(data.claims)),
                Err(e) if *e.kind() == ErrorKind::InvalidSignature => last = Some(e),
                Err(e) => return Err(explain(&e).into()),
            }
        }
        Err(explain(&last.expect("candidates is never empty")).into())
    }

    /// The token's `alg`, read before anything else so that `none` and algorithms the
    /// configuration does not accept get a clear error.
    fn algorithm(&self, token: &str) -> Result<Algorithm, AuthError> {
        let mut parts = token.split('.');
        let (Some(header), Some(_), Some(_), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(AuthError::Invalid(
                "the token is malformed (a JWT is three base64url parts separated by dots)"
                    .to_owned(),
            ));
        };
        #[derive(serde::Deserialize)]
        struct Header {
            alg: Option<String>,
        }
        let header: Header = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(header)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .ok_or_else(|| {
                AuthError::Invalid(
                    "the token is malformed (its header is not base64url JSON)".to_owned(),
                )
            })?;
        let name = header
            .alg
            .ok_or_else(|| AuthError::Invalid("the token's header has no alg".to_owned()))?;
        Algorithm::from_str(&name)
            .ok()
            .filter(|a| self.algorithms.contains(a))
            .ok_or_else(|| {
                AuthError::Invalid(format!(
                    "the token's algorithm {name:?} is not accepted (authentication.algorithms: {})",
                    self.config.algorithms.join(", ")
                ))
            })
    }

    /// The keys that may have signed a token with `kid` and `alg`.
    fn candidates(&self, kid: Option<&str>, alg: Algorithm) -> Result<Vec<KeyRef>, AuthError> {
        let mut out = Vec::new();
        for source in &self.sources {
            let keys = source.keys.load_full();
            for i in 0..keys.len() {
                let key = &keys[i];
                if kid.is_some_and(|kid| key.kid.as_deref() != Some(kid)) {
                    continue;
                }
                if key.fits(alg) {
                    out.push(KeyRef {
                        keys: keys.clone(),
                        i,
                    });
                }
            }
        }
        if out.is_empty() {
            return Err(AuthError::Invalid(match kid {
                Some(kid) => format!("no key with kid {kid:?} for algorithm {alg:?} in the JWKS"),
                None => format!("no key for algorithm {alg:?} in the JWKS"),
            }));
        }
        Ok(out)
    }
}

/// Why [`Authenticator::check`] refused a token: no key for its `kid` and `alg` (which
/// a fresh JWKS may have), or anything else.
enum Refused {
    NoKey(AuthError),
    Other(AuthError),
}

impl From<AuthError> for Refused {
    fn from(e: AuthError) -> Self {
        Refused::Other(e)
    }
}

impl Refused {
    fn into_error(self) -> AuthError {
        match self {
            Refused::NoKey(e) | Refused::Other(e) => e,
        }
    }
}

/// One key of a loaded key set (which stays alive while a request uses it).
struct KeyRef {
    keys: Arc<Vec<Key>>,
    i: usize,
}

impl std::ops::Deref for KeyRef {
    type Target = Key;
    fn deref(&self) -> &Key {
        &self.keys[self.i]
    }
}

fn malformed(e: &jsonwebtoken::errors::Error) -> AuthError {
    AuthError::Invalid(format!("the token is malformed: {e}"))
}

fn explain(e: &jsonwebtoken::errors::Error) -> AuthError {
    let message = match e.kind() {
        ErrorKind::ExpiredSignature => "the token has expired".to_owned(),
        ErrorKind::ImmatureSignature => "the token is not valid yet (nbf)".to_owned(),
        ErrorKind::InvalidSignature => "the token's signature does not match its key".to_owned(),
        ErrorKind::InvalidIssuer => "the token's issuer (iss) is not accepted".to_owned(),
        ErrorKind::InvalidAudience => "the token's audience (aud) is not accepted".to_owned(),
        ErrorKind::MissingRequiredClaim(claim) => format!("the token has no {claim} claim"),
        ErrorKind::InvalidAlgorithm => "the token's algorithm does not fit its key".to_owned(),
        _ => return malformed(e),
    };
    AuthError::Invalid(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use graphfleet_config::{JwksSource, TokenHeader};

    fn authenticator(header: TokenHeader, cookie: Option<&str>) -> Authenticator {
        let config = AuthenticationConfig {
            jwks: vec![JwksSource {
                file: Some("/nonexistent/jwks.json".into()),
                url: None,
                refresh_interval: std::time::Duration::from_secs(60),
                ca_file: None,
            }],
            header,
            cookie: cookie.map(str::to_owned),
            ..AuthenticationConfig::default()
        };
        Authenticator::new(&config).expect("enabled")
    }

    fn headers(pairs: &[(&str, &str)]) -> http::HeaderMap {
        pairs
            .iter()
            .map(|(k, v)| {
                (
                    http::HeaderName::from_bytes(k.as_bytes()).expect("name"),
                    v.parse().expect("value"),
                )
            })
            .collect()
    }

    #[test]
    fn the_token_comes_from_the_header_then_the_cookie() {
        let auth = authenticator(TokenHeader::default(), Some("session"));
        let token =
            |pairs: &[(&str, &str)]| auth.token(&headers(pairs)).map(|t| t.map(str::to_owned));
        assert_eq!(
            token(&[("authorization", "Bearer a.b.c")]),
            Ok(Some("a.b.c".into()))
        );
        assert_eq!(
            token(&[("cookie", "theme=dark; session=x.y.z")]),
            Ok(Some("x.y.z".into()))
        );
        assert_eq!(
            token(&[
                ("authorization", "Bearer h.h.h"),
                ("cookie", "session=c.c.c")
            ]),
            Ok(Some("h.h.h".into())),
            "the header wins"
        );
        assert_eq!(token(&[("cookie", "sessions=x.y.z")]), Ok(None));
        assert_eq!(token(&[]), Ok(None));
        for bad in [
            "Bearer",
            "Bearer ",
            "Basic a.b.c",
            "bearer a.b.c",
            "Bearera.b.c",
        ] {
            assert!(
                matches!(token(&[("authorization", bad)]), Err(AuthError::Invalid(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn a_header_without_prefix_is_the_whole_token() {
        let header = TokenHeader {
            name: "x-token".to_owned(),
            prefix: String::new(),
        };
        let auth = authenticator(header, None);
        let sent = headers(&[("x-token", " a.b.c ")]);
        assert_eq!(auth.token(&sent), Ok(Some("a.b.c")));
        assert_eq!(
            auth.token(&headers(&[("authorization", "Bearer a.b.c")])),
            Ok(None)
        );
    }

    #[test]
    fn a_payload_value_is_the_token_with_or_without_the_prefix() {
        let bearer = authenticator(TokenHeader::default(), None);
        assert_eq!(bearer.token_in("Bearer a.b.c"), "a.b.c");
        assert_eq!(bearer.token_in(" Bearer  a.b.c "), "a.b.c");
        assert_eq!(bearer.token_in("a.b.c"), "a.b.c");
        assert_eq!(bearer.token_in("Bearer"), "Bearer");
        let bare = TokenHeader {
            name: "x-token".to_owned(),
            prefix: String::new(),
        };
        assert_eq!(authenticator(bare, None).token_in(" a.b.c"), "a.b.c");
    }
}
