//! Scenarios: every `bench/sets/<set>/queries/<scenario>.graphql`, with the load
//! profile the public benchmarks use for it (scaled to a small machine).

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde_json::Value;

use graphfleet_bench_model::scenarios::{DEFAULT_LOAD, NO_CACHE_OF, known};
pub use graphfleet_bench_model::scenarios::{Load, TOKEN_ZERO, unique_query};

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
            let known = known(&name);
            out.push(Scenario {
                description: known.map_or_else(
                    || format!("Scenario `{name}` of the `{set_name}` set."),
                    |(d, _)| d.to_owned(),
                ),
                load: known.map_or(DEFAULT_LOAD, |(_, l)| l),
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
        .filter_map(|s| {
            let (_, name) = NO_CACHE_OF.iter().find(|(of, _)| *of == s.name)?;
            let known = known(name);
            Some(Scenario {
                description: known.map_or_else(
                    || {
                        format!(
                            "`{}` with every request's document new to the gateway.",
                            s.name
                        )
                    },
                    |(d, _)| d.to_owned(),
                ),
                load: known.map_or(s.load, |(_, l)| l),
                name: (*name).to_owned(),
                unique: true,
                ..s.clone()
            })
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
        assert_eq!(Some(query.load), known("query").map(|(_, l)| l));
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

    /// The bench and the operator (`LoadTest.spec.scenario`) know the same scenarios: the
    /// query files under `bench/sets` plus the no-cache variants are the library's list.
    #[test]
    fn the_discovered_scenarios_are_the_librarys_list() {
        let all = discover(&sets_dir()).expect("discover");
        let discovered: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(discovered, graphfleet_bench_model::scenarios::names());
        for s in &all {
            let lib = graphfleet_bench_model::scenarios::find(&s.name).expect("listed");
            assert_eq!(
                (s.set.as_str(), s.unique, s.load, s.description.as_str()),
                (lib.set.name(), lib.unique, lib.load, lib.description),
                "{}",
                s.name
            );
            let payload: Value =
                serde_json::from_str(&s.payload().expect("payload")).expect("json");
            assert_eq!(payload["query"], lib.query().expect("query"), "{}", s.name);
        }
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
