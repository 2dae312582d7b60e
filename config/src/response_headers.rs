//! Subgraph response headers towards the client (`headers.response`,
//! `subgraphs.<name>.response_headers`) and the `Cache-Control` merge
//! (`headers.cache_control`).

use super::Config;
use super::headers::{check_regex, check_value, one_of};
use schemars::JsonSchema;
use serde::Deserialize;

/// One response header rule: exactly one of `propagate`, `insert` and `remove`. For
/// each subgraph response of a request (in plan order) the global rules run, then that
/// subgraph's own, building the headers the client's response gets.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[schemars(extend("x-kubernetes-validations" = [{"rule": "[has(self.propagate), has(self.insert), has(self.remove)].filter(x, x).size() == 1", "message": "set exactly one of propagate, insert and remove"}]))]
#[serde(default, deny_unknown_fields)]
pub struct ResponseHeaderRule {
    /// Copy headers of the subgraph's response to the client's.
    pub propagate: Option<ResponsePropagateRule>,
    /// Set a header on the client's response (replacing what earlier rules set).
    pub insert: Option<ResponseInsertRule>,
    /// Drop headers earlier rules set.
    pub remove: Option<super::RemoveRule>,
}

/// A [`ResponseHeaderRule`] once checked to hold exactly one action.
#[derive(Debug, Clone, Copy)]
pub enum ResponseHeaderAction<'a> {
    Propagate(&'a ResponsePropagateRule),
    Insert(&'a ResponseInsertRule),
    Remove(&'a super::RemoveRule),
}

impl ResponseHeaderRule {
    /// Its one action, or `None` when it sets none or several.
    pub fn action(&self) -> Option<ResponseHeaderAction<'_>> {
        match (&self.propagate, &self.insert, &self.remove) {
            (Some(p), None, None) => Some(ResponseHeaderAction::Propagate(p)),
            (None, Some(i), None) => Some(ResponseHeaderAction::Insert(i)),
            (None, None, Some(r)) => Some(ResponseHeaderAction::Remove(r)),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ResponsePropagateRule {
    /// The header's name (case-insensitive).
    pub named: Option<String>,
    /// A regular expression over lower-case names (anchor it with `^…$` to match whole names).
    pub matching: Option<String>,
    /// Send it to the client under this name instead (with `named` only).
    pub rename: Option<String>,
    /// Send this value when no subgraph response had it (with `named` only).
    pub default: Option<String>,
    /// When several subgraph responses carry the header: keep the `first` one's
    /// values, the `last` one's, or `append` them all (plan order, not arrival order,
    /// so the answer is the same on every request).
    pub algorithm: MergeAlgorithm,
}

/// How a header seen in several subgraph responses reaches the client.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MergeAlgorithm {
    First,
    #[default]
    Last,
    Append,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ResponseInsertRule {
    /// The header to set.
    pub name: String,
    /// Its value.
    pub value: String,
}

/// What the client's `Cache-Control` says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CacheControlMode {
    /// Only what the response rules put there (none by default).
    #[default]
    Off,
    /// The most restrictive of the subgraph responses' `Cache-Control` (a subgraph
    /// response without one counts as `no-store`); `no-store` for mutations and for
    /// responses with errors. Single responses only: `@defer`, subscriptions and
    /// batches get none.
    MostRestrictive,
}

/// Headers the gateway writes itself on every response; a rule setting them would
/// corrupt it.
const GATEWAY_OWNED: &[&str] = &[
    "content-length",
    "content-type",
    "content-encoding",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "te",
    "trailer",
    "upgrade",
    "proxy-connection",
    "vary",
];

/// Problems in `headers.response`, `headers.cache_control` and every
/// `subgraphs.<name>.response_headers`.
pub(super) fn validate(config: &Config, report: &mut impl FnMut(&[&str], String)) {
    let merged = config.headers.cache_control == CacheControlMode::MostRestrictive;
    for (i, rule) in config.headers.response.iter().enumerate() {
        let i = i.to_string();
        check_rule(rule, merged, &mut |key, why| {
            let path = ["headers", "response", &i, key];
            report(&path[..path.len() - usize::from(key.is_empty())], why);
        });
    }
    for (name, subgraph) in &config.subgraphs {
        for (i, rule) in subgraph.response_headers.iter().enumerate() {
            let i = i.to_string();
            check_rule(rule, merged, &mut |key, why| {
                let path = ["subgraphs", name, "response_headers", &i, key];
                report(&path[..path.len() - usize::from(key.is_empty())], why);
            });
        }
    }
}

fn check_rule(rule: &ResponseHeaderRule, merged: bool, report: &mut impl FnMut(&str, String)) {
    let Some(action) = rule.action() else {
        report(
            "",
            "set exactly one of `propagate`, `insert` and `remove`".to_owned(),
        );
        return;
    };
    match action {
        ResponseHeaderAction::Propagate(p) => {
            one_of(
                "propagate",
                p.named.as_deref(),
                p.matching.as_deref(),
                report,
            );
            if p.named.is_none() {
                for (key, set) in [
                    ("propagate.rename", &p.rename),
                    ("propagate.default", &p.default),
                ] {
                    if set.is_some() {
                        report(key, "only allowed with `named` (one header)".to_owned());
                    }
                }
            }
            if let Some(n) = &p.named {
                check_name("propagate.named", n, merged, report);
            }
            if let Some(n) = &p.rename {
                check_name("propagate.rename", n, merged, report);
            }
            if let Some(value) = &p.default {
                check_value("propagate.default", value, report);
            }
            if let Some(pattern) = &p.matching {
                check_regex("propagate.matching", pattern, report);
            }
        }
        ResponseHeaderAction::Insert(ins) => {
            check_name("insert.name", &ins.name, merged, report);
            check_value("insert.value", &ins.value, report);
        }
        ResponseHeaderAction::Remove(r) => {
            one_of("remove", r.named.as_deref(), r.matching.as_deref(), report);
            if let Some(n) = &r.named {
                check_name("remove.named", n, merged, report);
            }
            if let Some(pattern) = &r.matching {
                check_regex("remove.matching", pattern, report);
            }
        }
    }
}

fn check_name(key: &str, name: &str, merged: bool, report: &mut impl FnMut(&str, String)) {
    match http::HeaderName::from_bytes(name.as_bytes()) {
        Err(_) => report(key, format!("{name:?} is not a valid HTTP header name")),
        Ok(h) if GATEWAY_OWNED.contains(&h.as_str()) => report(
            key,
            format!("{name:?} is written by the gateway for each response"),
        ),
        Ok(h) if merged && h == http::header::CACHE_CONTROL => report(
            key,
            "cache-control is the merge's with `headers.cache_control: most_restrictive`; set one or the other".to_owned(),
        ),
        Ok(_) => {}
    }
}
