//! The benchmark scenarios in one list: every set's `queries/<name>.graphql` plus the
//! no-cache variants, each with its description and load profile. graphfleet-bench, the
//! operator's `LoadTest.spec.scenario` and the k6 script all take their names from here.

use crate::sets::{ALL, Set};

/// How an open-model load drives one scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Load {
    /// Arrival rate (requests per second, open model).
    pub rate: u32,
    /// Pre-allocated VUs.
    pub vus: u32,
    /// The most VUs k6 may use to keep the arrival rate.
    pub max_vus: u32,
}

const fn load(rate: u32, vus: u32, max_vus: u32) -> Load {
    Load { rate, vus, max_vus }
}

/// One built-in scenario.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scenario {
    pub name: &'static str,
    pub set: Set,
    /// The query as committed (`queries/<query_file>.graphql`); see [`Scenario::query`].
    pub query_file: &'static str,
    /// Every request's document is new to the gateway (see [`unique_query`]): the operation
    /// name and the first root field's alias carry a per-request token.
    pub unique: bool,
    pub description: &'static str,
    /// The profile of the public benchmarks for it, scaled to a 1-core gateway budget.
    pub load: Load,
}

/// Profile of a scenario the table below does not describe.
pub const DEFAULT_LOAD: Load = load(50, 10, 100);

/// Scenarios that also get a `<name>-no-cache` variant (see [`Scenario::unique`]): the
/// scenario and its variant's name.
pub const NO_CACHE_OF: &[(&str, &str)] = &[("many-plans", "many-plans-no-cache")];

/// Descriptions and load profiles, by scenario name.
const KNOWN: &[(&str, &str, Load)] = &[
    (
        "query",
        "The classic TestQuery over accounts/inventory/products/reviews: a fragment-heavy query needing a dozen subgraph requests, ~85.5 KiB response, at a constant arrival rate.",
        load(100, 10, 100),
    ),
    (
        "deduplication",
        "A query whose plan repeats identical subgraph requests, at a constant arrival rate; shows how well a gateway deduplicates and holds latency under load.",
        load(100, 10, 100),
    ),
    (
        "big-response",
        "A ~8 MiB response mixing lists, objects, strings, floats and ints; measures the cost of moving large payloads.",
        load(5, 2, 20),
    ),
    (
        "long-lived-big-response",
        "Like big-response plus an extra subgraph request that takes 100 ms, so every response stays in memory longer.",
        load(5, 4, 30),
    ),
    (
        "many-plans",
        "Seven overlapping subgraphs and a large, deep query: many candidate plans, so planning cost and subgraph request count dominate.",
        load(20, 2, 40),
    ),
    (
        "many-plans-no-cache",
        "many-plans with every request's document new to the gateway (a unique operation name and root-field alias per request, as the no-cache gateways of the published benchmark): planning cost under load, no plan cache hits.",
        load(20, 2, 40),
    ),
    (
        "small",
        "Apollo's base case: a one-field query answered by a single subgraph; measures the gateway's own overhead.",
        load(200, 10, 100),
    ),
    (
        "small-delayed",
        "The one-field query against a subgraph that takes 40 ms: the gateway must hold many requests in flight.",
        load(200, 20, 200),
    ),
    (
        "large-delayed",
        "A 100-field query against one subgraph that takes 40 ms: more data to parse and serialise per request.",
        load(100, 10, 100),
    ),
    (
        "subscriptions",
        "Subscription fan-out: N clients hold the same graphql-transport-ws subscription (reviewAdded with its product from products and inventory and its author), the reviews subgraph emits an event per interval to each subgraph subscription; events/s delivered, end-to-end event latency from the subgraph's emission (Review.publishedAt), CPU and memory per open subscription. The load's rate is the number of subscribers.",
        load(100, 100, 1000),
    ),
    (
        "chain",
        "A 100-field query needing 6 sequential subgraph fetches (40 ms each, linked by @requires): at least 240 ms per request.",
        load(50, 20, 200),
    ),
];

/// The description and load profile of a scenario by name, when the table knows it.
pub fn known(name: &str) -> Option<(&'static str, Load)> {
    KNOWN
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, d, l)| (*d, *l))
}

/// Every built-in scenario, sorted by name: each set's queries, then the no-cache variants.
pub fn all() -> Vec<Scenario> {
    let mut out: Vec<Scenario> = Vec::new();
    for set in ALL {
        for (name, _) in set.scenarios() {
            let (description, load) = known(name).unwrap_or(("", DEFAULT_LOAD));
            out.push(Scenario {
                name,
                set,
                query_file: name,
                unique: false,
                description,
                load,
            });
        }
    }
    let variants: Vec<Scenario> = out
        .iter()
        .filter_map(|s| {
            let (_, name) = NO_CACHE_OF.iter().find(|(of, _)| *of == s.name)?;
            let (description, load) = known(name).unwrap_or((s.description, s.load));
            Some(Scenario {
                name,
                unique: true,
                description,
                load,
                ..*s
            })
        })
        .collect();
    out.extend(variants);
    out.sort_by(|a, b| a.name.cmp(b.name));
    out
}

/// The subscription fan-out scenario: its rate is the number of subscribers, and only
/// graphql-transport-ws clients (graphfleet-bench's own, k6's `k6/websockets`) run it.
pub const SUBSCRIPTIONS: &str = "subscriptions";

/// Names of every built-in scenario, sorted.
pub fn names() -> Vec<&'static str> {
    all().into_iter().map(|s| s.name).collect()
}

/// The built-in scenario called `name`.
pub fn find(name: &str) -> Option<Scenario> {
    all().into_iter().find(|s| s.name == name)
}

impl Scenario {
    /// The query each request sends: the committed one, or for a no-cache scenario the same
    /// with [`TOKEN_ZERO`] in the operation's name and root-field alias (each request puts
    /// its own token there).
    pub fn query(&self) -> Result<String, UniqueQueryError> {
        let text = self
            .set
            .scenarios()
            .iter()
            .find(|(n, _)| *n == self.query_file)
            .map(|(_, q)| *q)
            .unwrap_or_default();
        if self.unique {
            unique_query(text)
        } else {
            Ok(text.to_owned())
        }
    }
}

/// The token a no-cache payload carries; each request replaces every occurrence with its own
/// of the same width (`gfnc` + 6-digit nonce + 9-digit request index), so the expected answer
/// keeps its length and a response is compared after putting this token back.
pub const TOKEN_ZERO: &str = "gfnc000000000000000";

/// Why a query cannot be made unique.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum UniqueQueryError {
    #[error("the query has no selection set")]
    NoSelectionSet,
    #[error("only a query operation can be made unique, found {0:?}")]
    NotAQuery(String),
    #[error("empty selection set")]
    EmptySelectionSet,
    #[error("the first root selection must be a plain field without an alias")]
    AliasedRootField,
}

/// The query with [`TOKEN_ZERO`] in the operation's name and as an alias of the first root
/// field (`query Q_<token> { f_<token>: f ... }`). The alias changes the planned operation
/// and the response, so a plan cache keyed by normalised documents (names dropped) misses
/// too; the response carries the token only as that one key.
pub fn unique_query(query: &str) -> Result<String, UniqueQueryError> {
    let open = query.find('{').ok_or(UniqueQueryError::NoSelectionSet)?;
    let header = query[..open].trim();
    let header = match header.strip_prefix("query") {
        Some("") => format!("query Q_{TOKEN_ZERO}"),
        Some(rest) => {
            let rest = rest.trim_start();
            let name_end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            if name_end == 0 {
                format!("query Q_{TOKEN_ZERO}{rest}")
            } else {
                format!(
                    "query {}_{TOKEN_ZERO}{}",
                    &rest[..name_end],
                    &rest[name_end..]
                )
            }
        }
        None if header.is_empty() => format!("query Q_{TOKEN_ZERO}"),
        None => return Err(UniqueQueryError::NotAQuery(header.to_owned())),
    };
    let body = &query[open + 1..];
    let field_at = body
        .find(|c: char| !c.is_whitespace())
        .ok_or(UniqueQueryError::EmptySelectionSet)?;
    let field = &body[field_at..];
    let name_len = field
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(field.len());
    if name_len == 0 || field[name_len..].trim_start().starts_with(':') {
        return Err(UniqueQueryError::AliasedRootField);
    }
    let name = &field[..name_len];
    Ok(format!(
        "{header} {{{}{name}_{TOKEN_ZERO}: {field}",
        &body[..field_at]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_set_query_and_variant_is_listed_once_with_a_profile() {
        let all = all();
        let names = names();
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(names, sorted, "sorted, no duplicates");
        let from_sets: usize = ALL.iter().map(|s| s.scenarios().len()).sum();
        assert_eq!(all.len(), from_sets + NO_CACHE_OF.len());
        for s in &all {
            assert!(!s.description.is_empty(), "{} has a description", s.name);
            let query = s.query().expect("a query");
            assert!(query.contains('{'), "{}", s.name);
            assert_eq!(s.unique, query.contains(TOKEN_ZERO), "{}", s.name);
        }
        for (name, _, _) in KNOWN {
            assert!(find(name).is_some(), "{name} of the profile table exists");
        }
    }

    #[test]
    fn unique_query_handles_anonymous_operations_and_refuses_aliases() {
        assert_eq!(
            unique_query("{ me { id } }").expect("anonymous"),
            format!("query Q_{TOKEN_ZERO} {{ me_{TOKEN_ZERO}: me {{ id }} }}")
        );
        assert_eq!(
            unique_query("query Q($n: Int) {\n  top(n: $n) { id }\n}").expect("variables"),
            format!(
                "query Q_{TOKEN_ZERO}($n: Int) {{\n  top_{TOKEN_ZERO}: top(n: $n) {{ id }}\n}}"
            )
        );
        assert_eq!(
            unique_query("{ a: me { id } }"),
            Err(UniqueQueryError::AliasedRootField)
        );
        assert!(matches!(
            unique_query("mutation M { x }"),
            Err(UniqueQueryError::NotAQuery(_))
        ));
    }
}
