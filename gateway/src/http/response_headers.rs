//! Subgraph response headers towards the client: the response rules
//! (`headers.response`, `subgraphs.<name>.response_headers`) and the `Cache-Control`
//! merge, compiled once per gateway and applied to each single response.

use super::cache_control;
use super::header_names::{Names, header_name};
use crate::executor::SubgraphResponseHeaders;
use graphfleet_config::{
    CacheControlMode, HeadersConfig, MergeAlgorithm, ResponseHeaderAction, ResponseHeaderRule,
    SubgraphConfig,
};
use http::{HeaderMap, HeaderName, HeaderValue};
use std::collections::BTreeMap;

#[derive(Debug)]
enum Rule {
    Propagate {
        names: Names,
        rename: Option<HeaderName>,
        default: Option<HeaderValue>,
        algorithm: MergeAlgorithm,
    },
    Insert(HeaderName, HeaderValue),
    Remove(Names),
}

/// Every response header rule of a gateway, ready to apply.
#[derive(Debug, Default)]
pub struct ResponseHeaderRules {
    global: Vec<Rule>,
    /// Subgraphs with rules of their own, applied after the global ones.
    own: Vec<(String, Vec<Rule>)>,
    cache_control: CacheControlMode,
}

/// How the rules see one request's answer.
#[derive(Debug, Clone, Copy)]
pub struct Answer {
    /// The response carries errors.
    pub errors: bool,
    /// The operation is a mutation.
    pub mutation: bool,
}

impl ResponseHeaderRules {
    /// Compile validated config (names, values and regexes were checked when it loaded).
    pub fn compile(headers: &HeadersConfig, subgraphs: &BTreeMap<String, SubgraphConfig>) -> Self {
        let own = subgraphs
            .iter()
            .filter(|(_, sg)| !sg.response_headers.is_empty())
            .map(|(name, sg)| (name.clone(), compile_all(&sg.response_headers)))
            .collect();
        Self {
            global: compile_all(&headers.response),
            own,
            cache_control: headers.cache_control,
        }
    }

    /// Whether any rule or the merge needs the subgraphs' response headers; when not,
    /// the executor drops them with each exchange.
    pub fn is_active(&self) -> bool {
        !self.global.is_empty()
            || !self.own.is_empty()
            || self.cache_control != CacheControlMode::Off
    }

    /// The headers the client's response gets from `responses` (in plan order).
    pub fn apply(&self, responses: &[SubgraphResponseHeaders], answer: Answer) -> HeaderMap {
        let mut out = HeaderMap::new();
        if !self.is_active() {
            return out;
        }
        // Names a propagation set, for `first` and for defaults.
        let mut set: Vec<HeaderName> = Vec::new();
        for response in responses {
            for rules in [&self.global[..], self.own_rules(&response.subgraph)] {
                run(rules, &response.headers, &mut out, &mut set);
            }
        }
        let answered = |name: &str| responses.iter().any(|r| r.subgraph == name);
        let own = self.own.iter().filter(|(name, _)| answered(name));
        for rules in std::iter::once(&self.global).chain(own.map(|(_, rules)| rules)) {
            defaults(rules, &mut out, &set);
        }
        if self.cache_control == CacheControlMode::MostRestrictive {
            let merged = if answer.errors || answer.mutation {
                Some(cache_control::no_store())
            } else {
                cache_control::merge(responses.iter().map(|r| &*r.headers))
            };
            if let Some(value) = merged {
                out.insert(http::header::CACHE_CONTROL, value);
            }
        }
        out
    }

    fn own_rules(&self, subgraph: &str) -> &[Rule] {
        self.own
            .iter()
            .find(|(name, _)| name == subgraph)
            .map_or(&[], |(_, rules)| &rules[..])
    }
}

fn compile_all(rules: &[ResponseHeaderRule]) -> Vec<Rule> {
    rules.iter().map(compile).collect()
}

fn compile(rule: &ResponseHeaderRule) -> Rule {
    let value = |v: &str| HeaderValue::from_str(v).expect("validated when the config loaded");
    match rule
        .action()
        .expect("validated when the config loaded: one action per rule")
    {
        ResponseHeaderAction::Propagate(p) => Rule::Propagate {
            names: Names::compile(p.named.as_deref(), p.matching.as_deref()),
            rename: p.rename.as_deref().map(header_name),
            default: p.default.as_deref().map(value),
            algorithm: p.algorithm,
        },
        ResponseHeaderAction::Insert(ins) => {
            Rule::Insert(header_name(&ins.name), value(&ins.value))
        }
        ResponseHeaderAction::Remove(r) => {
            Rule::Remove(Names::compile(r.named.as_deref(), r.matching.as_deref()))
        }
    }
}

/// `rules` over one subgraph response's `headers`, into `out`.
fn run(rules: &[Rule], headers: &HeaderMap, out: &mut HeaderMap, set: &mut Vec<HeaderName>) {
    for rule in rules {
        match rule {
            Rule::Propagate {
                names,
                rename,
                algorithm,
                ..
            } => {
                for name in headers.keys().filter(|n| names.matches(n)) {
                    let to = rename.as_ref().unwrap_or(name);
                    copy(headers, name, to, *algorithm, out, set);
                }
            }
            Rule::Insert(name, value) => {
                out.insert(name.clone(), value.clone());
            }
            Rule::Remove(names) => {
                let drop: Vec<HeaderName> =
                    out.keys().filter(|n| names.matches(n)).cloned().collect();
                for name in drop {
                    out.remove(&name);
                    set.retain(|s| *s != name);
                }
            }
        }
    }
}

/// Every value of `from` in `headers` to `to` in `out`, as `algorithm` says.
fn copy(
    headers: &HeaderMap,
    from: &HeaderName,
    to: &HeaderName,
    algorithm: MergeAlgorithm,
    out: &mut HeaderMap,
    set: &mut Vec<HeaderName>,
) {
    let earlier = set.contains(to);
    match algorithm {
        MergeAlgorithm::First if earlier => return,
        MergeAlgorithm::Append if earlier => {}
        _ => {
            out.remove(to);
        }
    }
    for value in headers.get_all(from) {
        out.append(to.clone(), value.clone());
    }
    if !earlier {
        set.push(to.clone());
    }
}

/// The defaults of `rules`' named propagations no response had.
fn defaults(rules: &[Rule], out: &mut HeaderMap, set: &[HeaderName]) {
    for rule in rules {
        if let Rule::Propagate {
            names: Names::One(name),
            rename,
            default: Some(value),
            ..
        } = rule
        {
            let to = rename.as_ref().unwrap_or(name);
            if !set.contains(to) && !out.contains_key(to) {
                out.insert(to.clone(), value.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use graphfleet_config::Config;
    use std::sync::Arc;

    fn rules(yaml: &str) -> ResponseHeaderRules {
        let config: Config = serde_yaml_ng::from_str(yaml).expect("a valid config");
        let problems = graphfleet_config::validate(&config);
        assert!(problems.is_empty(), "{problems:?}");
        ResponseHeaderRules::compile(&config.headers, &config.subgraphs)
    }

    fn response(subgraph: &str, pairs: &[(&str, &str)]) -> SubgraphResponseHeaders {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(header_name(k), HeaderValue::from_str(v).expect("value"));
        }
        SubgraphResponseHeaders {
            subgraph: subgraph.to_owned(),
            headers: Arc::new(h),
        }
    }

    fn shown(h: &HeaderMap) -> Vec<String> {
        h.iter()
            .map(|(k, v)| format!("{k}: {}", v.to_str().expect("ascii")))
            .collect()
    }

    const OK: Answer = Answer {
        errors: false,
        mutation: false,
    };

    #[test]
    fn nothing_reaches_the_client_without_rules() {
        let rules = rules("{}");
        assert!(!rules.is_active());
        let out = rules.apply(&[response("a", &[("x-served-by", "a-1")])], OK);
        assert!(out.is_empty());
    }

    #[test]
    fn first_last_and_append_follow_plan_order() {
        let rules = rules(
            r#"
headers:
  response:
    - propagate: {named: x-first, algorithm: first}
    - propagate: {named: x-last}
    - propagate: {named: set-cookie, algorithm: append}
    - propagate: {named: x-version, rename: x-graph-version, default: unknown}
    - propagate: {named: x-absent, default: none-sent}
"#,
        );
        let out = rules.apply(
            &[
                response(
                    "a",
                    &[
                        ("x-first", "a"),
                        ("x-last", "a"),
                        ("set-cookie", "s=a"),
                        ("x-version", "7"),
                    ],
                ),
                response(
                    "b",
                    &[("x-first", "b"), ("x-last", "b"), ("set-cookie", "t=b")],
                ),
            ],
            OK,
        );
        let mut shown = shown(&out);
        shown.sort();
        assert_eq!(
            shown,
            [
                "set-cookie: s=a",
                "set-cookie: t=b",
                "x-absent: none-sent",
                "x-first: a",
                "x-graph-version: 7",
                "x-last: b",
            ]
        );
    }

    #[test]
    fn subgraph_rules_apply_to_that_subgraphs_response_only() {
        let rules = rules(
            r#"
headers:
  response:
    - propagate: {matching: "^x-rate-"}
    - insert: {name: x-gateway, value: graphfleet}
subgraphs:
  billing:
    response_headers:
      - propagate: {named: x-invoice-region}
      - remove: {named: x-rate-internal}
"#,
        );
        let out = rules.apply(
            &[
                response(
                    "accounts",
                    &[("x-invoice-region", "eu"), ("x-rate-limit", "9")],
                ),
                response(
                    "billing",
                    &[("x-invoice-region", "us"), ("x-rate-internal", "1")],
                ),
            ],
            OK,
        );
        let mut shown = shown(&out);
        shown.sort();
        assert_eq!(
            shown,
            [
                "x-gateway: graphfleet",
                "x-invoice-region: us",
                "x-rate-limit: 9"
            ]
        );
    }

    #[test]
    fn cache_control_merges_and_errors_or_mutations_are_not_stored() {
        let rules = rules("headers: {cache_control: most_restrictive}");
        assert!(rules.is_active());
        let responses = [
            response("a", &[("cache-control", "public, max-age=300")]),
            response("b", &[("cache-control", "public, max-age=60")]),
        ];
        let value = |answer| rules.apply(&responses, answer)["cache-control"].clone();
        assert_eq!(value(OK), "public, max-age=60");
        for answer in [
            Answer {
                errors: true,
                mutation: false,
            },
            Answer {
                errors: false,
                mutation: true,
            },
        ] {
            assert_eq!(value(answer), "no-store", "{answer:?}");
        }
        assert!(rules.apply(&[], OK).is_empty(), "no subgraph, no header");
    }

    #[test]
    fn bad_rules_are_refused_with_their_path() {
        let config: Config = serde_yaml_ng::from_str(
            r#"
headers:
  cache_control: most_restrictive
  response:
    - propagate: {named: cache-control}
    - propagate: {matching: "(", rename: x}
    - insert: {name: content-length, value: "1"}
    - remove: {}
subgraphs:
  a:
    response_headers:
      - insert: {name: x-ok, value: "bad\nvalue"}
      - {}
"#,
        )
        .expect("a config that parses");
        let problems: Vec<String> = graphfleet_config::validate(&config)
            .into_iter()
            .map(|(path, why)| format!("{}: {why}", path.join(".")))
            .collect();
        insta::assert_snapshot!(problems.join("\n"));
    }
}
