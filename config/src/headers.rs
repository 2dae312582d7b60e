//! Header rules for subgraph requests (`headers.rules`, `subgraphs.<name>.headers`):
//! propagate, rename, insert (static or from a JWT claim) and remove, in order.

use super::Config;
use schemars::JsonSchema;
use serde::Deserialize;

/// One header rule: exactly one of `propagate`, `insert` and `remove`. Rules run in
/// order: the global ones build the headers every subgraph gets, then a subgraph's own
/// rules change its copy.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[schemars(extend("x-kubernetes-validations" = [{"rule": "[has(self.propagate), has(self.insert), has(self.remove)].filter(x, x).size() == 1", "message": "set exactly one of propagate, insert and remove"}]))]
#[serde(default, deny_unknown_fields)]
pub struct HeaderRule {
    /// Copy client headers (every value).
    pub propagate: Option<PropagateRule>,
    /// Set a header (replacing what earlier rules set).
    pub insert: Option<InsertRule>,
    /// Drop headers earlier rules set.
    pub remove: Option<RemoveRule>,
}

/// A [`HeaderRule`] once checked to hold exactly one action.
#[derive(Debug, Clone, Copy)]
pub enum HeaderAction<'a> {
    Propagate(&'a PropagateRule),
    Insert(&'a InsertRule),
    Remove(&'a RemoveRule),
}

impl HeaderRule {
    /// Its one action, or `None` when it sets none or several.
    pub fn action(&self) -> Option<HeaderAction<'_>> {
        match (&self.propagate, &self.insert, &self.remove) {
            (Some(p), None, None) => Some(HeaderAction::Propagate(p)),
            (None, Some(i), None) => Some(HeaderAction::Insert(i)),
            (None, None, Some(r)) => Some(HeaderAction::Remove(r)),
            _ => None,
        }
    }
}

/// Which headers a rule applies to: one name, or every name matching a regex.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct PropagateRule {
    /// The header's name (case-insensitive).
    pub named: Option<String>,
    /// A regular expression over lower-case names (anchor it with `^…$` to match whole names).
    pub matching: Option<String>,
    /// Send it under this name instead (with `named` only).
    pub rename: Option<String>,
    /// Send this value when the client sent none (with `named` only).
    pub default: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct InsertRule {
    /// The header to set.
    pub name: String,
    /// A fixed value.
    pub value: Option<String>,
    /// The value of this claim of the request's validated JWT (a name, or a JSON
    /// pointer like `/realm_access/roles`); nothing is set without a token or claim.
    pub from_claim: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RemoveRule {
    pub named: Option<String>,
    /// A regular expression over lower-case names.
    pub matching: Option<String>,
}

/// Problems in `headers.rules` and every `subgraphs.<name>.headers`.
pub(super) fn validate(config: &Config, report: &mut impl FnMut(&[&str], String)) {
    for (i, rule) in config.headers.rules.iter().enumerate() {
        let i = i.to_string();
        check_rule(rule, &mut |key, why| {
            let path = ["headers", "rules", &i, key];
            report(&path[..path.len() - usize::from(key.is_empty())], why);
        });
    }
    for (name, subgraph) in &config.subgraphs {
        for (i, rule) in subgraph.headers.iter().enumerate() {
            let i = i.to_string();
            check_rule(rule, &mut |key, why| {
                let path = ["subgraphs", name, "headers", &i, key];
                report(&path[..path.len() - usize::from(key.is_empty())], why);
            });
        }
    }
}

fn check_rule(rule: &HeaderRule, report: &mut impl FnMut(&str, String)) {
    let Some(action) = rule.action() else {
        report(
            "",
            "set exactly one of `propagate`, `insert` and `remove`".to_owned(),
        );
        return;
    };
    match action {
        HeaderAction::Propagate(p) => {
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
            if let Some(name) = &p.named {
                check_name("propagate.named", name, report);
            }
            if let Some(name) = &p.rename {
                check_name("propagate.rename", name, report);
            }
            if let Some(value) = &p.default {
                check_value("propagate.default", value, report);
            }
            if let Some(pattern) = &p.matching {
                check_regex("propagate.matching", pattern, report);
            }
        }
        HeaderAction::Insert(ins) => {
            check_name("insert.name", &ins.name, report);
            match (&ins.value, &ins.from_claim) {
                (Some(value), None) => check_value("insert.value", value, report),
                (None, Some(claim)) if claim.is_empty() => {
                    report("insert.from_claim", "must name a claim".to_owned());
                }
                (None, Some(_)) => {}
                _ => report(
                    "insert",
                    "set exactly one of `value` and `from_claim`".to_owned(),
                ),
            }
        }
        HeaderAction::Remove(r) => {
            one_of("remove", r.named.as_deref(), r.matching.as_deref(), report);
            if let Some(name) = &r.named {
                check_name("remove.named", name, report);
            }
            if let Some(pattern) = &r.matching {
                check_regex("remove.matching", pattern, report);
            }
        }
    }
}

pub(super) fn one_of(
    kind: &str,
    named: Option<&str>,
    matching: Option<&str>,
    report: &mut impl FnMut(&str, String),
) {
    if named.is_some() == matching.is_some() {
        report(kind, "set exactly one of `named` and `matching`".to_owned());
    }
}

fn check_name(key: &str, name: &str, report: &mut impl FnMut(&str, String)) {
    match http::HeaderName::from_bytes(name.as_bytes()) {
        Err(_) => report(key, format!("{name:?} is not a valid HTTP header name")),
        Ok(h) if super::checks::UNPROPAGATABLE.contains(&h.as_str()) => report(
            key,
            format!("{name:?} is set by the gateway for each subgraph request"),
        ),
        Ok(_) => {}
    }
}

pub(super) fn check_value(key: &str, value: &str, report: &mut impl FnMut(&str, String)) {
    if http::HeaderValue::from_str(value).is_err() {
        report(key, format!("{value:?} is not a valid HTTP header value"));
    }
}

pub(super) fn check_regex(key: &str, pattern: &str, report: &mut impl FnMut(&str, String)) {
    if let Err(e) = regex::Regex::new(pattern) {
        report(key, format!("not a valid regular expression: {e}"));
    }
}
