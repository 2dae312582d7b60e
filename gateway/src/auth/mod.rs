//! Authentication (JWT validation, `authentication`) and authorization (the
//! supergraph's `@authenticated`, `@requiresScopes` and `@policy`, `authorization`).
//! See "Authentication and authorization" in gateway/README.md.

pub mod authz;
pub mod jwks;
pub mod jwt;

pub use jwt::{AuthError, Claims};

use graphfleet_config::Config;

/// A gateway's authentication state: the JWKS keys, kept fresh in the background.
#[derive(Default)]
pub struct Auth {
    authenticator: Option<jwt::Authenticator>,
}

impl Auth {
    pub fn new(config: &Config) -> Self {
        Self {
            authenticator: jwt::Authenticator::new(&config.authentication),
        }
    }

    /// The claims of the request's valid token; `None` without a token or with
    /// authentication off.
    pub async fn authenticate(
        &self,
        headers: &http::HeaderMap,
    ) -> Result<Option<Claims>, AuthError> {
        match &self.authenticator {
            None => Ok(None),
            Some(authenticator) => authenticator.authenticate(headers).await,
        }
    }

    /// The claims of a token carried outside the headers (a WebSocket's
    /// `connection_init` payload value, `<prefix> <token>` or bare), validated like the
    /// header's; `Ok(None)` with authentication off.
    pub async fn authenticate_value(&self, value: &str) -> Result<Option<Claims>, AuthError> {
        let Some(authenticator) = &self.authenticator else {
            return Ok(None);
        };
        let token = authenticator.token_in(value);
        if token.is_empty() {
            return Err(AuthError::Invalid("the token is empty".to_owned()));
        }
        authenticator.authenticate_token(token).await.map(Some)
    }

    /// Whether tokens are validated at all (`authentication.jwks`).
    pub fn enabled(&self) -> bool {
        self.authenticator.is_some()
    }

    /// Whether authentication is on and requests without a token are refused.
    pub fn required(&self) -> bool {
        self.authenticator
            .as_ref()
            .is_some_and(jwt::Authenticator::required)
    }

    /// When `claims` stop being valid: their `exp` plus the leeway (`None` without an
    /// `exp`, or with authentication off).
    pub fn expiry(&self, claims: &Claims) -> Option<std::time::SystemTime> {
        let leeway = self.authenticator.as_ref()?.leeway();
        let exp = claims.get("exp")?;
        // Validation accepted it, so it is a non-negative number.
        let exp = exp.as_u64().or_else(|| exp.as_f64().map(|f| f as u64))?;
        let after_epoch = std::time::Duration::from_secs(exp).checked_add(leeway)?;
        std::time::UNIX_EPOCH.checked_add(after_epoch)
    }
}
