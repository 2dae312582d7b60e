//! `coprocessor`: an external HTTP service the gateway calls at chosen stages of a
//! request (router, supergraph, subgraph; requests and responses), speaking Apollo
//! Router's coprocessor protocol v1, so the section is written as Apollo's is and an
//! existing coprocessor works unchanged. Off unless the section is present.

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::Deserialize;
use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CoprocessorConfig {
    /// The coprocessor's URL (`http://` or `https://`); every stage POSTs its JSON there
    /// unless the stage has a `url` of its own.
    pub url: String,
    /// Longest one call may take (connecting included); past it the call fails.
    #[serde(default = "one_second", with = "humantime_serde")]
    #[schemars(schema_with = "crate::schema::duration")]
    pub timeout: Duration,
    /// What a failed call (unreachable, timed out, an answer that breaks the protocol)
    /// does: `fail` (the default, as Apollo Router does) fails the request (500, or the
    /// fetch's error at subgraph stages); `continue` goes on as if the stage were not
    /// configured, counted in `graphfleet_coprocessor_calls_total{outcome="failed_open"}`.
    #[serde(default)]
    pub on_error: OnError,
    /// Check that a GraphQL body returned at a response stage is a GraphQL response
    /// (an object with `data`, or with a non-empty `errors` list).
    #[serde(default = "yes")]
    pub response_validation: bool,
    #[serde(default)]
    pub router: RouterStages,
    #[serde(default)]
    pub supergraph: SupergraphStages,
    #[serde(default)]
    pub subgraph: SubgraphStages,
}

fn one_second() -> Duration {
    Duration::from_secs(1)
}

fn yes() -> bool {
    true
}

/// `coprocessor.on_error`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnError {
    #[default]
    Fail,
    Continue,
}

/// `coprocessor.router`: the HTTP request before it is decoded, and the HTTP response.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RouterStages {
    pub request: RouterRequestConf,
    pub response: RouterResponseConf,
}

/// `coprocessor.supergraph`: the GraphQL request once parsed, and its response.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SupergraphStages {
    pub request: SupergraphRequestConf,
    pub response: SupergraphResponseConf,
}

/// `coprocessor.subgraph`: every subgraph fetch (`all`; there is no per-subgraph block).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SubgraphStages {
    pub all: SubgraphAllStages,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SubgraphAllStages {
    pub request: SubgraphRequestConf,
    pub response: SubgraphResponseConf,
}

/// What the `RouterRequest` call carries. A stage all of whose keys are their defaults
/// is not called at all (as in Apollo Router): set at least one.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RouterRequestConf {
    pub headers: bool,
    /// The raw HTTP body, as a string (empty for GET).
    pub body: bool,
    pub context: ContextConf,
    pub sdl: bool,
    /// The request's path and query string.
    pub path: bool,
    pub method: bool,
    /// This stage's URL instead of `coprocessor.url`.
    pub url: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RouterResponseConf {
    pub headers: bool,
    /// The HTTP body, as a string.
    pub body: bool,
    pub context: ContextConf,
    pub sdl: bool,
    pub status_code: bool,
    pub url: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SupergraphRequestConf {
    pub headers: bool,
    /// The GraphQL request as JSON (`query`, `operationName`, `variables`, `extensions`).
    pub body: bool,
    /// With context on, the call carries the JWT claims, the operation's name and kind,
    /// and the `@policy` policies it touches; its answer decides those policies.
    pub context: ContextConf,
    pub sdl: bool,
    pub method: bool,
    pub url: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SupergraphResponseConf {
    pub headers: bool,
    /// The GraphQL response as JSON (single responses; `@defer` parts and
    /// subscription events are not sent).
    pub body: bool,
    pub context: ContextConf,
    pub sdl: bool,
    pub status_code: bool,
    pub url: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SubgraphRequestConf {
    pub headers: bool,
    /// The subgraph's GraphQL request as JSON.
    pub body: bool,
    pub context: ContextConf,
    pub uri: bool,
    pub method: bool,
    pub service_name: bool,
    /// An id per subgraph fetch, the same at its request and response stage.
    pub subgraph_request_id: bool,
    pub url: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SubgraphResponseConf {
    pub headers: bool,
    /// The subgraph's GraphQL response as JSON.
    pub body: bool,
    pub context: ContextConf,
    pub service_name: bool,
    pub status_code: bool,
    pub subgraph_request_id: bool,
    pub url: Option<String>,
}

/// Which request context entries a call carries: `false` (none), `true` or `all`
/// (every entry), or `{selective: [key, ...]}`. Apollo Router 1.x's key names
/// (`deprecated`) are not translated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ContextConf {
    #[default]
    None,
    All,
    Selective(Vec<String>),
}

impl ContextConf {
    pub fn is_on(&self) -> bool {
        *self != ContextConf::None
    }

    /// Whether entry `key` is sent (and, at response stages, may be deleted).
    pub fn includes(&self, key: &str) -> bool {
        match self {
            ContextConf::None => false,
            ContextConf::All => true,
            ContextConf::Selective(keys) => keys.iter().any(|k| k == key),
        }
    }
}

impl<'de> Deserialize<'de> for ContextConf {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Wire {
            Flag(bool),
            Word(String),
            Selective { selective: Vec<String> },
        }
        let bad = |what: &str| {
            serde::de::Error::custom(format!(
                "context must be false, true, all or {{selective: [keys]}}, not {what}"
            ))
        };
        match Wire::deserialize(d).map_err(|_| bad("that"))? {
            Wire::Flag(false) => Ok(ContextConf::None),
            Wire::Flag(true) => Ok(ContextConf::All),
            Wire::Word(w) if w == "all" => Ok(ContextConf::All),
            Wire::Word(w) if w == "deprecated" => Err(serde::de::Error::custom(
                "context: deprecated (Apollo Router 1.x key names) is not supported; use all",
            )),
            Wire::Word(w) => Err(bad(&format!("{w:?}"))),
            Wire::Selective { selective } => Ok(ContextConf::Selective(selective)),
        }
    }
}

impl JsonSchema for ContextConf {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ContextConf".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        // A Kubernetes structural schema cannot say "boolean or string or object":
        // the value is kept as written and checked by the gateway's loader.
        json_schema!({
            "description": "false, true, all, or {selective: [key, ...]}",
            "x-kubernetes-preserve-unknown-fields": true,
        })
    }
}

impl CoprocessorConfig {
    /// The URL a stage calls: its own, or the section's.
    pub fn url_of<'a>(&'a self, own: &'a Option<String>) -> &'a str {
        own.as_deref().unwrap_or(&self.url)
    }
}

/// Problems with `config`, reported to `report`.
pub(crate) fn validate(config: &CoprocessorConfig, report: &mut impl FnMut(&[&str], String)) {
    let path = ["coprocessor", "url"];
    if config.url.starts_with("unix:") {
        let why = "Unix sockets (unix://) are not supported; use an http:// or https:// URL";
        report(&path, why.to_owned());
    } else if let Err(why) = crate::checks::http_url(&config.url) {
        report(&path, why);
    }
    if config.timeout.is_zero() {
        report(&["coprocessor", "timeout"], "must be > 0".to_owned());
    }
    let stages = [
        ("router", "request", &config.router.request.url),
        ("router", "response", &config.router.response.url),
        ("supergraph", "request", &config.supergraph.request.url),
        ("supergraph", "response", &config.supergraph.response.url),
        ("subgraph", "request", &config.subgraph.all.request.url),
        ("subgraph", "response", &config.subgraph.all.response.url),
    ];
    for (group, stage, url) in stages {
        if let Some(url) = url
            && let Err(why) = crate::checks::http_url(url)
        {
            let path: &[&str] = match group {
                "subgraph" => &["coprocessor", group, "all", stage, "url"],
                _ => &["coprocessor", group, stage, "url"],
            };
            report(path, why);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_apollo_section_reads_as_is() {
        let section = serde_json::json!({
            "url": "http://127.0.0.1:8081",
            "timeout": "2s",
            "router": {
                "request": {"headers": true, "body": true, "context": "all", "path": true, "method": true, "sdl": false},
                "response": {"headers": true, "body": true, "status_code": true}
            },
            "supergraph": {
                "request": {"body": true, "context": true},
                "response": {"context": {"selective": ["a", "b"]}}
            },
            "subgraph": {"all": {
                "request": {"uri": true, "service_name": true, "subgraph_request_id": true},
                "response": {"body": true, "status_code": true}
            }}
        });
        let config: CoprocessorConfig = serde_json::from_value(section).expect("parses");
        assert_eq!(config.timeout, Duration::from_secs(2));
        assert_eq!(config.on_error, OnError::Fail);
        assert_eq!(config.router.request.context, ContextConf::All);
        assert_eq!(config.supergraph.request.context, ContextConf::All);
        let selective = &config.supergraph.response.context;
        assert!(selective.includes("a") && !selective.includes("c"));
        assert!(config.subgraph.all.request.uri);
    }

    #[test]
    fn context_refuses_other_words() {
        for bad in [r#""deprecated""#, r#""some""#, "3"] {
            let text = format!(r#"{{"context": {bad}}}"#);
            let parsed = serde_json::from_str::<RouterRequestConf>(&text);
            assert!(parsed.is_err(), "{bad}");
        }
        let off: RouterRequestConf = serde_json::from_str(r#"{"context": false}"#).expect("parses");
        assert_eq!(off, RouterRequestConf::default());
    }
}
