//! Header rules, compiled once per gateway and applied to each request: the client's
//! headers (and JWT claims) in, the subgraph requests' headers out.

use super::header_names::{Names, header_name};
use crate::executor::headers::SubgraphHeaders;
use graphfleet_config::{HeaderAction, HeaderRule, HeadersConfig, SubgraphConfig};
use http::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

#[derive(Debug)]
enum Rule {
    Propagate {
        names: Names,
        rename: Option<HeaderName>,
        default: Option<HeaderValue>,
    },
    Insert {
        name: HeaderName,
        value: InsertValue,
    },
    Remove(Names),
}

#[derive(Debug)]
enum InsertValue {
    Fixed(HeaderValue),
    /// A claim name, or a JSON pointer when it starts with `/`.
    Claim(String),
}

/// Every header rule of a gateway, ready to apply.
#[derive(Debug, Default)]
pub struct HeaderRules {
    /// `forward_authorization` and `propagate`, then `headers.rules`.
    global: Vec<Rule>,
    /// Subgraphs with rules of their own, applied after the global ones.
    own: Vec<(String, Vec<Rule>)>,
    /// What the subgraphs' response headers give the client's response.
    pub response: super::response_headers::ResponseHeaderRules,
}

impl HeaderRules {
    /// Compile validated config (names, values and regexes were checked when it loaded).
    pub fn compile(headers: &HeadersConfig, subgraphs: &BTreeMap<String, SubgraphConfig>) -> Self {
        let propagate = |name: &str| Rule::Propagate {
            names: Names::One(header_name(name)),
            rename: None,
            default: None,
        };
        let mut global = Vec::new();
        if headers.forward_authorization {
            global.push(propagate("authorization"));
        }
        global.extend(headers.propagate.iter().map(|n| propagate(n)));
        global.extend(headers.rules.iter().map(compile_rule));
        let own = subgraphs
            .iter()
            .filter(|(_, sg)| !sg.headers.is_empty())
            .map(|(name, sg)| (name.clone(), sg.headers.iter().map(compile_rule).collect()))
            .collect();
        let response = super::response_headers::ResponseHeaderRules::compile(headers, subgraphs);
        Self {
            global,
            own,
            response,
        }
    }

    /// The headers of this request's subgraph requests.
    pub fn apply(
        &self,
        client: &HeaderMap,
        claims: Option<&Map<String, Value>>,
    ) -> SubgraphHeaders {
        let mut all = HeaderMap::new();
        run(&self.global, client, claims, &mut all);
        let own = self
            .own
            .iter()
            .map(|(name, rules)| {
                let mut headers = all.clone();
                run(rules, client, claims, &mut headers);
                (name.clone(), headers)
            })
            .collect();
        SubgraphHeaders { all, own }
    }
}

fn compile_rule(rule: &HeaderRule) -> Rule {
    match rule
        .action()
        .expect("validated when the config loaded: one action per rule")
    {
        HeaderAction::Propagate(p) => Rule::Propagate {
            names: Names::compile(p.named.as_deref(), p.matching.as_deref()),
            rename: p.rename.as_deref().map(header_name),
            default: p
                .default
                .as_deref()
                .map(|v| HeaderValue::from_str(v).expect("validated when the config loaded")),
        },
        HeaderAction::Insert(ins) => Rule::Insert {
            name: header_name(&ins.name),
            value: match (&ins.value, &ins.from_claim) {
                (Some(v), _) => InsertValue::Fixed(
                    HeaderValue::from_str(v).expect("validated when the config loaded"),
                ),
                (None, Some(claim)) => InsertValue::Claim(claim.clone()),
                (None, None) => {
                    unreachable!("validated when the config loaded: value or from_claim")
                }
            },
        },
        HeaderAction::Remove(r) => {
            Rule::Remove(Names::compile(r.named.as_deref(), r.matching.as_deref()))
        }
    }
}

fn run(
    rules: &[Rule],
    client: &HeaderMap,
    claims: Option<&Map<String, Value>>,
    out: &mut HeaderMap,
) {
    for rule in rules {
        match rule {
            Rule::Propagate {
                names: Names::One(name),
                rename,
                default,
            } => {
                let to = rename.as_ref().unwrap_or(name);
                let mut values = client.get_all(name).iter().peekable();
                if values.peek().is_none() {
                    if let Some(v) = default {
                        out.insert(to.clone(), v.clone());
                    }
                    continue;
                }
                out.remove(to);
                for v in values {
                    out.append(to.clone(), v.clone());
                }
            }
            Rule::Propagate {
                names: names @ Names::Matching(_),
                ..
            } => {
                for name in client.keys().filter(|n| names.matches(n)) {
                    out.remove(name);
                    for v in client.get_all(name) {
                        out.append(name.clone(), v.clone());
                    }
                }
            }
            Rule::Insert { name, value } => {
                let value = match value {
                    InsertValue::Fixed(v) => Some(v.clone()),
                    InsertValue::Claim(claim) => claims.and_then(|c| claim_value(c, claim)),
                };
                match value {
                    Some(v) => {
                        out.insert(name.clone(), v);
                    }
                    None => {
                        out.remove(name);
                    }
                }
            }
            Rule::Remove(names) => {
                let drop: Vec<HeaderName> =
                    out.keys().filter(|n| names.matches(n)).cloned().collect();
                for name in drop {
                    out.remove(name);
                }
            }
        }
    }
}

/// A claim as a header value: strings as they are, numbers and booleans as JSON, lists
/// joined with `,`, objects as compact JSON; `None` when absent or not a valid value.
fn claim_value(claims: &Map<String, Value>, claim: &str) -> Option<HeaderValue> {
    let value = if claim.starts_with('/') {
        Value::Object(claims.clone()).pointer(claim).cloned()?
    } else {
        claims.get(claim)?.clone()
    };
    let text = match value {
        Value::Null => return None,
        Value::String(s) => s,
        Value::Array(items) => items
            .iter()
            .map(|i| match i {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect::<Vec<_>>()
            .join(","),
        other => other.to_string(),
    };
    HeaderValue::from_str(&text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use graphfleet_config::Config;
    use serde_json::json;

    fn rules(yaml: &str) -> HeaderRules {
        let config: Config = serde_yaml_ng::from_str(yaml).expect("a valid config");
        HeaderRules::compile(&config.headers, &config.subgraphs)
    }

    fn client(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(header_name(k), HeaderValue::from_str(v).expect("value"));
        }
        h
    }

    fn shown(h: &HeaderMap) -> Vec<String> {
        let mut out: Vec<String> = h
            .iter()
            .map(|(k, v)| format!("{k}: {}", v.to_str().expect("ascii")))
            .collect();
        out.sort();
        out
    }

    #[test]
    fn propagate_rename_default_insert_and_remove_run_in_order() {
        let rules = rules(
            r#"
headers:
  forward_authorization: false
  rules:
    - propagate: {named: x-request-id, rename: x-trace}
    - propagate: {named: x-tenant, default: public}
    - propagate: {matching: "^x-feature-"}
    - insert: {name: x-gateway, value: graphfleet}
    - remove: {named: x-feature-secret}
"#,
        );
        let out = rules.apply(
            &client(&[
                ("x-request-id", "r1"),
                ("x-feature-a", "1"),
                ("x-feature-a", "2"),
                ("x-feature-secret", "s"),
                ("authorization", "Bearer t"),
                ("cookie", "c"),
            ]),
            None,
        );
        assert_eq!(
            shown(&out.all),
            [
                "x-feature-a: 1",
                "x-feature-a: 2",
                "x-gateway: graphfleet",
                "x-tenant: public",
                "x-trace: r1",
            ]
        );
        assert!(out.own.is_empty());
    }

    #[test]
    fn subgraph_rules_change_only_that_subgraphs_copy() {
        let rules = rules(
            r#"
headers:
  propagate: [x-tenant]
subgraphs:
  billing:
    headers:
      - remove: {named: authorization}
      - insert: {name: x-caller, value: gateway}
"#,
        );
        let out = rules.apply(
            &client(&[("authorization", "Bearer t"), ("x-tenant", "acme")]),
            None,
        );
        assert_eq!(
            shown(out.for_subgraph("products")),
            ["authorization: Bearer t", "x-tenant: acme"]
        );
        assert_eq!(
            shown(out.for_subgraph("billing")),
            ["x-caller: gateway", "x-tenant: acme"]
        );
    }

    #[test]
    fn claims_become_headers_and_a_missing_claim_sets_nothing() {
        let rules = rules(
            r#"
headers:
  rules:
    - insert: {name: x-user, from_claim: sub}
    - insert: {name: x-roles, from_claim: /realm_access/roles}
    - insert: {name: x-admin, from_claim: admin}
    - insert: {name: x-org, from_claim: org}
"#,
        );
        let claims = json!({"sub": "u1", "realm_access": {"roles": ["a", "b"]}, "admin": true});
        let claims = claims.as_object().expect("object");
        let out = rules.apply(&HeaderMap::new(), Some(claims));
        assert_eq!(
            shown(&out.all),
            ["x-admin: true", "x-roles: a,b", "x-user: u1"]
        );
        let anonymous = rules.apply(&HeaderMap::new(), None);
        assert!(anonymous.all.is_empty());
        // A claim cannot smuggle a second header line in.
        let bad = json!({"sub": "u1\r\nx-evil: 1"});
        let out = rules.apply(&HeaderMap::new(), bad.as_object());
        assert!(out.all.is_empty(), "{:?}", out.all);
    }

    #[test]
    fn the_legacy_keys_alone_forward_as_before() {
        let rules = rules("headers: {propagate: [x-tenant]}");
        let out = rules.apply(
            &client(&[("authorization", "a"), ("x-tenant", "t"), ("x-other", "o")]),
            None,
        );
        assert_eq!(shown(&out.all), ["authorization: a", "x-tenant: t"]);
    }
}
