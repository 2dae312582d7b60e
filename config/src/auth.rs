//! `authentication` (JWT validation against JWKS) and `authorization` (enforcing the
//! supergraph's `@authenticated`, `@requiresScopes` and `@policy`). See "Authentication
//! and authorization" in gateway/README.md.

use schemars::JsonSchema;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// JWT validation. Off unless `jwks` names at least one key source.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct AuthenticationConfig {
    /// Where the verification keys come from (JSON Web Key Sets); every key of every
    /// source is tried by `kid` and algorithm.
    #[schemars(length(max = 16))]
    pub jwks: Vec<JwksSource>,
    /// Accepted `iss` values; empty accepts any issuer.
    pub issuers: Vec<String>,
    /// Accepted `aud` values (a token must name one of them); empty skips the check.
    pub audiences: Vec<String>,
    /// Accepted signing algorithms (`alg`), e.g. `RS256`, `ES256`; `none` never is.
    pub algorithms: Vec<String>,
    /// Leeway for `exp` and `nbf`, for clocks that disagree a little.
    #[serde(with = "humantime_serde")]
    #[schemars(schema_with = "crate::schema::duration")]
    pub leeway: Duration,
    /// The request header that carries the token.
    pub header: TokenHeader,
    /// A cookie that carries the token when the header is absent.
    pub cookie: Option<String>,
    /// Refuse requests without a token (401) instead of running them unauthenticated.
    pub require_authentication: bool,
}

impl Default for AuthenticationConfig {
    fn default() -> Self {
        Self {
            jwks: Vec::new(),
            issuers: Vec::new(),
            audiences: Vec::new(),
            algorithms: [
                "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384",
            ]
            .map(str::to_owned)
            .to_vec(),
            leeway: Duration::from_secs(60),
            header: TokenHeader::default(),
            cookie: None,
            require_authentication: false,
        }
    }
}

impl AuthenticationConfig {
    /// Whether tokens are validated at all.
    pub fn enabled(&self) -> bool {
        !self.jwks.is_empty()
    }
}

/// `authentication.header`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct TokenHeader {
    /// Header name (case-insensitive).
    pub name: String,
    /// What precedes the token in the header value, followed by one space; empty: the
    /// whole value is the token.
    pub prefix: String,
}

impl Default for TokenHeader {
    fn default() -> Self {
        Self {
            name: "authorization".to_owned(),
            prefix: "Bearer".to_owned(),
        }
    }
}

/// One JWKS: a file (re-read when it changes, e.g. a mounted Secret) or a URL fetched
/// every `refresh_interval`. A failed refresh keeps the last good keys and logs.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[schemars(extend("x-kubernetes-validations" = [{"rule": "[has(self.file), has(self.url)].filter(x, x).size() == 1", "message": "set exactly one of file and url"}]))]
#[serde(deny_unknown_fields)]
pub struct JwksSource {
    /// A JWKS JSON file.
    pub file: Option<PathBuf>,
    /// An `http://` or `https://` URL serving a JWKS.
    pub url: Option<String>,
    /// How often the source is read again.
    #[serde(with = "humantime_serde", default = "default_refresh")]
    #[schemars(schema_with = "crate::schema::duration")]
    pub refresh_interval: Duration,
    /// PEM bundle of CA certificates trusted for an `https://` `url`, in addition to
    /// the system store (which honours `SSL_CERT_FILE`/`SSL_CERT_DIR`) and the webpki
    /// roots, as `traffic.tls.ca_file` is for subgraphs.
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
}

fn default_refresh() -> Duration {
    Duration::from_secs(60)
}

/// Enforcement of the supergraph's authorization directives.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct AuthorizationConfig {
    /// Enforce `@authenticated`, `@requiresScopes` and `@policy` when the supergraph
    /// has them.
    pub enabled: bool,
    /// Refuse a request that selects any unauthorized field (no subgraph is called),
    /// instead of answering those fields with `null` and an error.
    pub reject_unauthorized: bool,
    /// The claim holding the token's scopes: a space-separated string or an array.
    pub scope_claim: String,
    /// `@policy` names and the claim rule each one stands for; a policy not listed
    /// here is never granted.
    pub policies: BTreeMap<String, PolicyRule>,
}

impl Default for AuthorizationConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            reject_unauthorized: false,
            scope_claim: "scope".to_owned(),
            policies: BTreeMap::new(),
        }
    }
}

/// A policy granted when claim `claim` (a dot-separated path into the claims) equals
/// `equals`, or is an array or space-separated string containing `contains`. Exactly
/// one of the two is set.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
// No CEL rule for 'exactly one of equals and contains': CEL cannot name `equals`, a value
// of any JSON type; the operator reports it (graphfleet_config::validate).
#[serde(deny_unknown_fields)]
pub struct PolicyRule {
    pub claim: String,
    #[schemars(schema_with = "crate::schema::any_value")]
    pub equals: Option<serde_json::Value>,
    pub contains: Option<String>,
}

/// Algorithms the `algorithms` key accepts.
const ALGORITHMS: &[&str] = &[
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA",
];

pub(super) fn validate(config: &super::Config, report: &mut impl FnMut(&[&str], String)) {
    let auth = &config.authentication;
    for (i, source) in auth.jwks.iter().enumerate() {
        let i = i.to_string();
        match (&source.file, &source.url) {
            (Some(_), Some(_)) | (None, None) => report(
                &["authentication", "jwks", &i],
                "set exactly one of file or url".to_owned(),
            ),
            (None, Some(url)) => {
                if let Err(why) = super::checks::http_url(url) {
                    report(&["authentication", "jwks", &i, "url"], why);
                }
            }
            (Some(_), None) => {}
        }
        if source.ca_file.is_some() && source.url.is_none() {
            report(
                &["authentication", "jwks", &i, "ca_file"],
                "only for a url source (a file is read, not fetched)".to_owned(),
            );
        }
        if source.refresh_interval.is_zero() {
            report(
                &["authentication", "jwks", &i, "refresh_interval"],
                "must be longer than 0".to_owned(),
            );
        }
    }
    if auth.algorithms.is_empty() {
        report(
            &["authentication", "algorithms"],
            "must name at least one algorithm".to_owned(),
        );
    }
    for (i, alg) in auth.algorithms.iter().enumerate() {
        if !ALGORITHMS.contains(&alg.as_str()) {
            report(
                &["authentication", "algorithms", &i.to_string()],
                format!(
                    "{alg:?} is not supported; use one of {}",
                    ALGORITHMS.join(", ")
                ),
            );
        }
    }
    if http::HeaderName::from_bytes(auth.header.name.as_bytes()).is_err() {
        report(
            &["authentication", "header", "name"],
            format!("{:?} is not a valid HTTP header name", auth.header.name),
        );
    }
    if auth.cookie.as_deref().is_some_and(|c| c.trim().is_empty()) {
        report(
            &["authentication", "cookie"],
            "must not be empty (or unset for no cookie)".to_owned(),
        );
    }
    if auth.require_authentication && !auth.enabled() {
        report(
            &["authentication", "require_authentication"],
            "needs authentication.jwks: without keys no token can be validated".to_owned(),
        );
    }
    let authz = &config.authorization;
    if authz.scope_claim.is_empty() {
        report(
            &["authorization", "scope_claim"],
            "must not be empty".to_owned(),
        );
    }
    for (name, rule) in &authz.policies {
        if rule.claim.is_empty() {
            report(
                &["authorization", "policies", name, "claim"],
                "must not be empty".to_owned(),
            );
        }
        if rule.equals.is_some() == rule.contains.is_some() {
            report(
                &["authorization", "policies", name],
                "set exactly one of equals or contains".to_owned(),
            );
        }
    }
}
