//! Scenarios: every `loadtest/sets/<set>/queries/<scenario>.graphql`, with the load
//! profile the public benchmarks use for it (scaled to a small machine).

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde_json::Value;

/// How k6 drives one scenario.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Load {
    /// Arrival rate (requests per second, open model).
    pub rate: u32,
    /// Pre-allocated VUs.
    pub vus: u32,
    /// The most VUs k6 may use to keep the arrival rate.
    pub max_vus: u32,
}

#[derive(Debug, Clone)]
pub struct Scenario {
    pub name: String,
    pub set: String,
    pub query_file: PathBuf,
    pub variables_file: Option<PathBuf>,
    pub description: String,
    pub load: Load,
    /// Every request's document is new to the gateway (see [`unique_query`]): the
    /// operation name and the first root field's alias carry a per-request token.
    pub unique: bool,
}

struct Known {
    name: &'static str,
    description: &'static str,
    load: Load,
}

const fn load(rate: u32, vus: u32, max_vus: u32) -> Load {
    Load { rate, vus, max_vus }
}

/// Profiles of the scenarios from the seeds; rates are for a 1-core gateway budget.
const KNOWN: &[Known] = &[
    Known {
        name: "query",
        description: "The classic TestQuery over accounts/inventory/products/reviews: a fragment-heavy query needing a dozen subgraph requests, ~85.5 KiB response, at a constant arrival rate.",
        load: load(100, 10, 100),
    },
    Known {
        name: "deduplication",
        description: "A query whose plan repeats identical subgraph requests, at a constant arrival rate; shows how well a gateway deduplicates and holds latency under load.",
        load: load(100, 10, 100),
    },
    Known {
        name: "big-response",
        description: "A ~8 MiB response mixing lists, objects, strings, floats and ints; measures the cost of moving large payloads.",
        load: load(5, 2, 20),
    },
    Known {
        name: "long-lived-big-response",
        description: "Like big-response plus an extra subgraph request that takes 100 ms, so every response stays in memory longer.",
        load: load(5, 4, 30),
    },
    Known {
        name: "many-plans",
        description: "Seven overlapping subgraphs and a large, deep query: many candidate plans, so planning cost and subgraph request count dominate.",
        load: load(20, 2, 40),
    },
    Known {
        name: "many-plans-no-cache",
        description: "many-plans with every request's document new to the gateway (a unique operation name and root-field alias per request, as the no-cache gateways of the published benchmark): planning cost under load, no plan cache hits.",
        load: load(20, 2, 40),
    },
    Known {
        name: "small",
        description: "Apollo's base case: a one-field query answered by a single subgraph; measures the gateway's own overhead.",
        load: load(200, 10, 100),
    },
    Known {
        name: "small-delayed",
        description: "The one-field query against a subgraph that takes 40 ms: the gateway must hold many requests in flight.",
        load: load(200, 20, 200),
    },
    Known {
        name: "large-delayed",
        description: "A 100-field query against one subgraph that takes 40 ms: more data to parse and serialise per request.",
        load: load(100, 10, 100),
    },
    Known {
        name: "chain",
        description: "A 100-field query needing 6 sequential subgraph fetches (40 ms each, linked by @requires): at least 240 ms per request.",
        load: load(50, 20, 200),
    },
];

const DEFAULT_LOAD: Load = load(50, 10, 100);

/// Scenarios that also get a `<name>-no-cache` variant (see [`Scenario::unique`]).
const NO_CACHE_OF: &[&str] = &["many-plans"];

/// The token a no-cache payload carries; each request replaces every occurrence with its
/// own of the same width ([`request_token`]), so the expected answer keeps its length and
/// a response is compared after putting this token back.
pub const TOKEN_ZERO: &str = "gfnc000000000000000";

/// `gfnc` + 6 digits of the run's nonce + 9 digits of the request index; the nonce differs
/// per run so warm-up, measured run and capacity steps never repeat a document.
pub fn request_token(nonce: u32, index: u64) -> String {
    format!("gfnc{:06}{:09}", nonce % 1_000_000, index % 1_000_000_000)
}

/// A fresh nonce (1..=999999) for one run of a no-cache scenario: a process-wide counter
/// started from the clock, so no two runs against one gateway process share tokens.
pub fn next_nonce() -> u32 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.subsec_micros());
    let _ = NEXT.compare_exchange(0, seed % 999_999 + 1, Ordering::Relaxed, Ordering::Relaxed);
    NEXT.fetch_add(1, Ordering::Relaxed) % 999_999 + 1
}

/// The query with [`TOKEN_ZERO`] in the operation's name and as an alias of the first root
/// field (`query Q_<token> { f_<token>: f ... }`). The alias changes the planned operation
/// and the response, so a plan cache keyed by normalised documents (names dropped) misses
/// too; the response carries the token only as that one key.
pub fn unique_query(query: &str) -> anyhow::Result<String> {
    let open = query.find('{').context("the query has no selection set")?;
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
        None => bail!("only a query operation can be made unique, found {header:?}"),
    };
    let body = &query[open + 1..];
    let field_at = body
        .find(|c: char| !c.is_whitespace())
        .context("empty selection set")?;
    let field = &body[field_at..];
    let name_len = field
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(field.len());
    if name_len == 0 || field[name_len..].trim_start().starts_with(':') {
        bail!("the first root selection must be a plain field without an alias");
    }
    let name = &field[..name_len];
    Ok(format!(
        "{header} {{{}{name}_{TOKEN_ZERO}: {field}",
        &body[..field_at]
    ))
}

/// Every scenario under `sets_dir`, sorted by name.
pub fn discover(sets_dir: &Path) -> anyhow::Result<Vec<Scenario>> {
    let mut out = Vec::new();
    let sets = std::fs::read_dir(sets_dir)
        .with_context(|| format!("reading the sets directory {}", sets_dir.display()))?;
    for set in sets {
        let set = set.context("listing sets")?.path();
        let queries = set.join("queries");
        if !queries.is_dir() {
            continue;
        }
        let set_name = file_name(&set)?;
        for entry in
            std::fs::read_dir(&queries).with_context(|| format!("reading {}", queries.display()))?
        {
            let path = entry.context("listing queries")?.path();
            if path.extension().is_none_or(|e| e != "graphql") {
                continue;
            }
            let name = path
                .file_stem()
                .and_then(|s| s.to_str())
                .with_context(|| format!("{} has no UTF-8 name", path.display()))?
                .to_owned();
            let variables = path.with_extension("variables.json");
            let known = KNOWN.iter().find(|k| k.name == name);
            out.push(Scenario {
                description: known.map_or_else(
                    || format!("Scenario `{name}` of the `{set_name}` set."),
                    |k| k.description.to_owned(),
                ),
                load: known.map_or(DEFAULT_LOAD, |k| k.load),
                name,
                set: set_name.clone(),
                variables_file: variables.is_file().then_some(variables),
                query_file: path,
                unique: false,
            });
        }
    }
    let variants: Vec<Scenario> = out
        .iter()
        .filter(|s| NO_CACHE_OF.contains(&s.name.as_str()))
        .map(|s| {
            let name = format!("{}-no-cache", s.name);
            let known = KNOWN.iter().find(|k| k.name == name);
            Scenario {
                description: known.map_or_else(
                    || {
                        format!(
                            "`{}` with every request's document new to the gateway.",
                            s.name
                        )
                    },
                    |k| k.description.to_owned(),
                ),
                load: known.map_or(s.load, |k| k.load),
                name,
                unique: true,
                ..s.clone()
            }
        })
        .collect();
    out.extend(variants);
    out.sort_by(|a, b| a.name.cmp(&b.name));
    if let Some(w) = out.windows(2).find(|w| w[0].name == w[1].name) {
        bail!(
            "scenario {:?} exists in two sets ({} and {})",
            w[0].name,
            w[0].set,
            w[1].set
        );
    }
    Ok(out)
}

fn file_name(path: &Path) -> anyhow::Result<String> {
    path.file_name()
        .and_then(|s| s.to_str())
        .map(str::to_owned)
        .with_context(|| format!("{} has no UTF-8 name", path.display()))
}

/// Keeps the scenarios named in `wanted` (all when empty), in the order given.
pub fn select(all: Vec<Scenario>, wanted: &[String]) -> anyhow::Result<Vec<Scenario>> {
    if wanted.is_empty() {
        return Ok(all);
    }
    wanted
        .iter()
        .map(|w| {
            all.iter().find(|s| &s.name == w).cloned().with_context(|| {
                let names: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
                format!("unknown scenario {w:?} (known: {})", names.join(", "))
            })
        })
        .collect()
}

impl Scenario {
    /// The GraphQL POST body: `{"query", "operationName"?, "variables"?}`.
    pub fn payload(&self) -> anyhow::Result<String> {
        let mut query = std::fs::read_to_string(&self.query_file)
            .with_context(|| format!("reading {}", self.query_file.display()))?;
        if self.unique {
            query = unique_query(&query)
                .with_context(|| format!("making {} unique", self.query_file.display()))?;
        }
        let mut body = serde_json::Map::new();
        body.insert("query".into(), Value::String(query));
        if let Some(file) = &self.variables_file {
            let text = std::fs::read_to_string(file)
                .with_context(|| format!("reading {}", file.display()))?;
            let vars: Value = serde_json::from_str(&text)
                .with_context(|| format!("{} is not JSON", file.display()))?;
            body.insert("variables".into(), vars);
        }
        Ok(Value::Object(body).to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sets_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../sets")
    }

    #[test]
    fn discovers_the_committed_fed_scenarios() {
        let all = discover(&sets_dir()).expect("discover");
        let query = all.iter().find(|s| s.name == "query").expect("query");
        assert_eq!(query.set, "fed");
        assert_eq!(query.load, KNOWN[0].load);
        let payload: Value =
            serde_json::from_str(&query.payload().expect("payload")).expect("json");
        assert!(
            payload["query"]
                .as_str()
                .is_some_and(|q| q.contains("topProducts"))
        );
    }

    #[test]
    fn the_no_cache_variant_names_and_aliases_with_the_token() {
        let all = discover(&sets_dir()).expect("discover");
        let base = all
            .iter()
            .find(|s| s.name == "many-plans")
            .expect("many-plans");
        let variant = all
            .iter()
            .find(|s| s.name == "many-plans-no-cache")
            .expect("variant");
        assert!(variant.unique && !base.unique);
        assert_eq!(
            (variant.set.as_str(), variant.load),
            ("many-plans", base.load)
        );
        let payload: Value =
            serde_json::from_str(&variant.payload().expect("payload")).expect("json");
        let query = payload["query"].as_str().expect("query");
        assert!(
            query.starts_with(&format!(
                "query ManyPlans_{TOKEN_ZERO} {{\n  users_{TOKEN_ZERO}: users {{"
            )),
            "{query}"
        );
        let base_payload: Value =
            serde_json::from_str(&base.payload().expect("payload")).expect("json");
        let base_query = base_payload["query"].as_str().expect("query");
        // Nothing else changed: removing the two insertions gives the base query back.
        let restored = query.replacen(&format!("_{TOKEN_ZERO}"), "", 1).replacen(
            &format!("users_{TOKEN_ZERO}: "),
            "",
            1,
        );
        assert_eq!(restored, base_query);
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
        assert!(unique_query("{ a: me { id } }").is_err());
        assert!(unique_query("mutation M { x }").is_err());
    }

    #[test]
    fn request_tokens_have_the_zero_token_width_and_differ() {
        let a = request_token(123, 0);
        let b = request_token(123, 1);
        let c = request_token(124, 0);
        assert_eq!(a.len(), TOKEN_ZERO.len());
        assert_eq!(a, "gfnc000123000000000");
        assert!(a != b && a != c && b != c);
        let (n1, n2) = (next_nonce(), next_nonce());
        assert!(n1 != n2 && (1..=999_999).contains(&n1), "{n1} {n2}");
    }

    #[test]
    fn unknown_scenario_is_a_clear_error() {
        let all = discover(&sets_dir()).expect("discover");
        let err = select(all, &["nope".into()]).expect_err("unknown");
        assert!(
            err.to_string().contains("unknown scenario \"nope\""),
            "{err}"
        );
    }
}
