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
}
