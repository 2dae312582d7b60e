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
            });
        }
    }
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
        let query = std::fs::read_to_string(&self.query_file)
            .with_context(|| format!("reading {}", self.query_file.display()))?;
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
    fn unknown_scenario_is_a_clear_error() {
        let all = discover(&sets_dir()).expect("discover");
        let err = select(all, &["nope".into()]).expect_err("unknown");
        assert!(
            err.to_string().contains("unknown scenario \"nope\""),
            "{err}"
        );
    }
}
