//! What the listener does around GraphQL for browsers and bandwidth: CORS (`cors`), CSRF
//! prevention (`csrf`, on by default), response compression (`compression`, off by
//! default) and the GraphiQL page (`graphiql`). The checks here run at load time, so the HTTP layers built from a loaded
//! config never meet a setting they would refuse (tower-http panics on some).

use super::size;
use schemars::JsonSchema;
use serde::Deserialize;
use std::time::Duration;

/// GraphiQL, served to a browser's GET on the GraphQL path (its assets are in the
/// binary: the page needs no network beyond the gateway).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct GraphiqlConfig {
    /// Serve it; unset: where `limits.introspection` is on (GraphiQL's docs and
    /// completion come from introspection).
    pub enabled: Option<bool>,
}

impl GraphiqlConfig {
    /// Whether the page is served, given whether introspection is on.
    pub fn serves(&self, introspection: bool) -> bool {
        self.enabled.unwrap_or(introspection)
    }
}

/// Cross-origin resource sharing: which browser origins may read the gateway's answers.
/// Off (no CORS headers, `OPTIONS` is 405) unless `allow_origins` or
/// `allow_origin_patterns` names an origin.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct CorsConfig {
    /// Origins allowed, exactly as browsers send them: `scheme://host[:port]`, no path
    /// (`https://app.example.com`). `["*"]` alone allows every origin.
    pub allow_origins: Vec<String>,
    /// Regular expressions; an origin that one of them matches as a whole is allowed
    /// (`https://[a-z0-9-]+\.example\.com`).
    pub allow_origin_patterns: Vec<String>,
    /// Let browsers send cookies and HTTP authentication (`Access-Control-Allow-Credentials:
    /// true`); not allowed together with the `*` origin.
    pub allow_credentials: bool,
    /// Methods a preflight may ask for.
    pub allow_methods: Vec<String>,
    /// Request headers a preflight may ask for; empty allows the ones the preflight names.
    pub allow_headers: Vec<String>,
    /// Response headers browser scripts may read beyond the CORS-safelisted ones.
    pub expose_headers: Vec<String>,
    /// How long browsers may cache a preflight answer (`Access-Control-Max-Age`); unset
    /// leaves it to the browser (5 s in Chromium and Firefox).
    #[serde(with = "humantime_serde")]
    #[schemars(schema_with = "crate::schema::duration")]
    pub max_age: Option<Duration>,
}

impl Default for CorsConfig {
    fn default() -> Self {
        Self {
            allow_origins: Vec::new(),
            allow_origin_patterns: Vec::new(),
            allow_credentials: false,
            allow_methods: vec!["GET".to_owned(), "POST".to_owned()],
            allow_headers: Vec::new(),
            expose_headers: Vec::new(),
            max_age: None,
        }
    }
}

impl CorsConfig {
    /// Whether CORS is on: some origin is allowed.
    pub fn enabled(&self) -> bool {
        !self.allow_origins.is_empty() || !self.allow_origin_patterns.is_empty()
    }

    /// `allow_origins: ["*"]`.
    pub fn any_origin(&self) -> bool {
        self.allow_origins.iter().any(|o| o == "*")
    }

    /// The patterns, each anchored to match a whole origin.
    pub fn origin_regexes(&self) -> Result<Vec<regex::Regex>, (usize, regex::Error)> {
        self.allow_origin_patterns
            .iter()
            .enumerate()
            .map(|(i, p)| regex::Regex::new(&format!("^(?:{p})$")).map_err(|e| (i, e)))
            .collect()
    }
}

/// The headers whose presence proves a request was preflighted: Apollo's defaults.
pub const DEFAULT_CSRF_HEADERS: &[&str] = &["x-apollo-operation-name", "apollo-require-preflight"];

/// Cross-site request forgery prevention: a GET or POST to the GraphQL endpoint that a
/// browser would send cross-origin without a CORS preflight (no `Content-Type`, or
/// `text/plain`, `application/x-www-form-urlencoded` or `multipart/form-data`) and that
/// carries none of `required_headers` is refused with 400 before anything runs.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct CsrfConfig {
    pub enabled: bool,
    /// Any one of these request headers (any value) lets a request through.
    pub required_headers: Vec<String>,
}

impl Default for CsrfConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            required_headers: DEFAULT_CSRF_HEADERS.iter().map(|&h| h.to_owned()).collect(),
        }
    }
}

/// Response compression per the client's `Accept-Encoding`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct CompressionConfig {
    pub enabled: bool,
    /// Encodings offered; the client's `Accept-Encoding` weights choose among them (on a
    /// tie: zstd, then br, then gzip).
    pub algorithms: Vec<CompressionAlgorithm>,
    /// Responses smaller than this are sent as they are (bytes, or with a unit: `1KiB`).
    #[serde(deserialize_with = "size::deserialize")]
    #[schemars(schema_with = "crate::schema::size")]
    pub min_size: usize,
    /// Effort: `fastest`, `default` (gzip 6, br 4, zstd 3) or `best` (slow; for small
    /// hot responses only).
    pub level: CompressionLevel,
}

impl Default for CompressionConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            algorithms: vec![
                CompressionAlgorithm::Zstd,
                CompressionAlgorithm::Br,
                CompressionAlgorithm::Gzip,
            ],
            min_size: 1024,
            level: CompressionLevel::Default,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CompressionAlgorithm {
    Gzip,
    Br,
    Zstd,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CompressionLevel {
    Fastest,
    Default,
    Best,
}

pub(crate) fn validate(config: &super::Config, report: &mut impl FnMut(&[&str], String)) {
    cors(&config.cors, report);
    for (i, name) in config.csrf.required_headers.iter().enumerate() {
        if let Err(why) = header_name(name) {
            report(&["csrf", "required_headers", &i.to_string()], why);
        }
    }
    let compression = &config.compression;
    if compression.enabled && compression.algorithms.is_empty() {
        report(
            &["compression", "algorithms"],
            "empty while compression is enabled; name at least one of gzip, br, zstd (or \
             set enabled: false)"
                .to_owned(),
        );
    }
    for (i, algorithm) in compression.algorithms.iter().enumerate() {
        if compression.algorithms[..i].contains(algorithm) {
            report(
                &["compression", "algorithms", &i.to_string()],
                format!("{algorithm:?} is listed twice").to_lowercase(),
            );
        }
    }
}

fn cors(cors: &CorsConfig, report: &mut impl FnMut(&[&str], String)) {
    if !cors.enabled() {
        let rest = CorsConfig {
            allow_origins: Vec::new(),
            allow_origin_patterns: Vec::new(),
            ..cors.clone()
        };
        if rest != CorsConfig::default() {
            report(
                &["cors"],
                "settings without an allowed origin have no effect: CORS is on only when \
                 allow_origins or allow_origin_patterns is set"
                    .to_owned(),
            );
        }
        return;
    }
    for (i, origin) in cors.allow_origins.iter().enumerate() {
        let path = ["cors", "allow_origins", &i.to_string()];
        if origin == "*" {
            if cors.allow_origins.len() > 1 || !cors.allow_origin_patterns.is_empty() {
                report(
                    &path,
                    "\"*\" allows every origin; it must be the only origin and have no \
                     patterns beside it"
                        .to_owned(),
                );
            }
        } else if let Err(why) = origin_text(origin) {
            report(&path, why);
        }
    }
    for (i, pattern) in cors.allow_origin_patterns.iter().enumerate() {
        if let Err(e) = regex::Regex::new(pattern) {
            // The parser's last line names the problem (the lines above draw a caret).
            let text = e.to_string();
            let why = text.lines().last().unwrap_or_default();
            let why = why.trim_start_matches("error: ");
            report(
                &["cors", "allow_origin_patterns", &i.to_string()],
                format!("{pattern:?} is not a regular expression: {why}"),
            );
        }
    }
    if cors.allow_credentials && cors.any_origin() {
        report(
            &["cors", "allow_credentials"],
            "cannot be true with allow_origins [\"*\"]: browsers refuse credentials for a \
             wildcard origin; list the origins (or patterns) instead"
                .to_owned(),
        );
    }
    for (i, method) in cors.allow_methods.iter().enumerate() {
        if http::Method::from_bytes(method.as_bytes()).is_err() || method == "*" {
            report(
                &["cors", "allow_methods", &i.to_string()],
                format!("{method:?} is not an HTTP method"),
            );
        }
    }
    for (key, names) in [
        ("allow_headers", &cors.allow_headers),
        ("expose_headers", &cors.expose_headers),
    ] {
        for (i, name) in names.iter().enumerate() {
            if let Err(why) = header_name(name) {
                report(&["cors", key, &i.to_string()], why);
            }
        }
    }
}

/// A browser's `Origin`: `http(s)://host[:port]` and nothing more.
fn origin_text(origin: &str) -> Result<(), String> {
    let hint = "an origin is scheme://host[:port], e.g. https://app.example.com";
    let uri: http::Uri = origin
        .parse()
        .map_err(|_| format!("{origin:?} is not an origin: {hint}"))?;
    if uri.scheme().is_none() || uri.host().is_none_or(str::is_empty) {
        return Err(format!("{origin:?} is not an origin: {hint}"));
    }
    if origin.ends_with('/') || uri.path() != "/" || uri.query().is_some() {
        return Err(format!(
            "{origin:?} has a path; browsers send the origin without one ({hint})"
        ));
    }
    if uri.authority().is_some_and(|a| a.as_str().contains('@')) {
        return Err(format!("{origin:?} has user info: {hint}"));
    }
    Ok(())
}

fn header_name(name: &str) -> Result<(), String> {
    if name == "*" {
        return Err("\"*\" is not supported here; list the header names".to_owned());
    }
    http::HeaderName::from_bytes(name.as_bytes())
        .map(drop)
        .map_err(|_| format!("{name:?} is not a valid HTTP header name"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Config;

    fn problems(config: &Config) -> Vec<String> {
        let mut out = Vec::new();
        validate(config, &mut |path: &[&str], why: String| {
            out.push(format!("{}: {why}", path.join(".")));
        });
        out
    }

    #[test]
    fn origins_are_scheme_host_and_port() {
        assert!(origin_text("https://app.example.com").is_ok());
        assert!(origin_text("http://localhost:3000").is_ok());
        assert!(origin_text("https://app.example.com/").is_err());
        assert!(origin_text("https://app.example.com/graphql").is_err());
        assert!(origin_text("app.example.com").is_err());
        assert!(origin_text("https://u@app.example.com").is_err());
    }

    #[test]
    fn credentials_with_any_origin_are_refused() {
        let mut config = Config::default();
        config.cors.allow_origins = vec!["*".to_owned()];
        config.cors.allow_credentials = true;
        let found = problems(&config);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with("cors.allow_credentials: cannot be true"),
            "{found:?}"
        );
    }

    #[test]
    fn cors_settings_without_origins_are_refused() {
        let mut config = Config::default();
        config.cors.allow_credentials = true;
        assert_eq!(problems(&config).len(), 1);
        assert!(problems(&Config::default()).is_empty());
    }

    #[test]
    fn patterns_match_whole_origins() {
        let cors = CorsConfig {
            allow_origin_patterns: vec![r"https://[a-z]+\.example\.com".to_owned()],
            ..CorsConfig::default()
        };
        let regexes = cors.origin_regexes().expect("valid");
        assert!(regexes[0].is_match("https://app.example.com"));
        assert!(!regexes[0].is_match("https://app.example.com.evil.test"));
        assert!(!regexes[0].is_match("http://x.https://app.example.com"));
    }

    #[test]
    fn compression_algorithms_are_checked() {
        let mut config = Config::default();
        config.compression.enabled = true;
        config.compression.algorithms = Vec::new();
        assert_eq!(
            problems(&config),
            [
                "compression.algorithms: empty while compression is enabled; name at least one \
              of gzip, br, zstd (or set enabled: false)"
            ]
        );
        config.compression.algorithms = vec![CompressionAlgorithm::Gzip; 2];
        let found = problems(&config);
        assert_eq!(found, ["compression.algorithms.1: gzip is listed twice"]);
    }
}
