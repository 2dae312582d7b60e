//! Shared test helpers: fixture discovery, the @apollo/composition oracle, normalisation.

#![allow(dead_code)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use apollo_compiler::ast::{Definition, Document};
use graphfleet_composition::{CompositionErrors, SubgraphInput, config::load_config};

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("composition/ lives in the repository root")
        .to_owned()
}

/// Fixture folders under composition/tests/fixtures, sorted.
pub fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("fixtures directory exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("supergraph.yaml").is_file())
        .collect();
    out.sort();
    out
}

/// Benchmark subgraph sets (bench/sets/*/supergraph.yaml), when present.
pub fn benchmark_sets() -> Vec<PathBuf> {
    config_folders("bench/sets")
}

/// The gateway's fixtures (gateway/tests/fixtures/*/supergraph.yaml), when present.
pub fn gateway_fixtures() -> Vec<PathBuf> {
    config_folders("gateway/tests/fixtures")
}

/// The folders below `under` (from the repository root) holding a supergraph.yaml.
fn config_folders(under: &str) -> Vec<PathBuf> {
    let dir = repo_root().join(under);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("supergraph.yaml").is_file())
        .collect();
    out.sort();
    out
}

pub fn load(dir: &Path) -> Vec<SubgraphInput> {
    load_config(&dir.join("supergraph.yaml")).expect("fixture config loads")
}

/// Errors as snapshot text: one `CODE: message` per line.
pub fn error_text(errors: &CompositionErrors) -> String {
    errors
        .0
        .iter()
        .map(|e| format!("{e}\n  subgraphs: {:?}", e.subgraphs))
        .collect::<Vec<_>>()
        .join("\n")
}

/// What the oracle said about a config.
pub enum Oracle {
    /// The supergraph and the hint codes.
    Supergraph(String, Vec<String>),
    /// (code, message) of each error.
    Errors(Vec<(String, String)>),
    /// The oracle could not even parse the input (graphql-js throws on syntax errors).
    Crashed(String),
}

pub fn node_available() -> bool {
    Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

pub fn oracle(config: &Path) -> Oracle {
    let out = Command::new(repo_root().join("scripts/oracle-compose.sh"))
        .arg(config)
        .arg("--json")
        .output()
        .expect("oracle script runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let Ok(json) = serde_json::from_str::<serde_json::Value>(&stdout) else {
        return Oracle::Crashed(String::from_utf8_lossy(&out.stderr).into_owned());
    };
    if let Some(sdl) = json["supergraph"].as_str() {
        let hints = json["hints"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|h| h["code"].as_str().unwrap_or("UNKNOWN").to_owned())
                    .collect()
            })
            .unwrap_or_default();
        return Oracle::Supergraph(sdl.to_owned(), hints);
    }
    let codes = json["errors"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| {
                    (
                        e["code"].as_str().unwrap_or("UNKNOWN").to_owned(),
                        e["message"].as_str().unwrap_or("").to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    Oracle::Errors(codes)
}

/// Prints a schema with definitions, fields, values and directive applications in a
/// deterministic order, so two semantically equal supergraphs print the same.
pub fn normalize(sdl: &str) -> String {
    let mut doc = Document::parse(sdl, "supergraph.graphql").expect("supergraph parses");
    for def in &mut doc.definitions {
        normalize_definition(def);
    }
    doc.definitions.sort_by_key(|d| {
        (
            !matches!(d, Definition::SchemaDefinition(_)),
            d.name().map(|n| n.to_string()).unwrap_or_default(),
            d.to_string(),
        )
    });
    doc.to_string()
}

fn sort_directives(list: &mut apollo_compiler::ast::DirectiveList) {
    list.0.sort_by_key(|d| d.to_string());
}

/// Object and interface fields: by name, each field's directives sorted too.
fn sort_fields(fields: &mut [apollo_compiler::Node<apollo_compiler::ast::FieldDefinition>]) {
    fields.sort_by_key(|f| f.name.to_string());
    for f in fields {
        sort_directives(&mut f.make_mut().directives);
    }
}

fn normalize_definition(def: &mut Definition) {
    match def {
        Definition::SchemaDefinition(s) => sort_directives(&mut s.make_mut().directives),
        Definition::ObjectTypeDefinition(t) => {
            let t = t.make_mut();
            sort_directives(&mut t.directives);
            t.implements_interfaces.sort();
            sort_fields(&mut t.fields);
        }
        Definition::InterfaceTypeDefinition(t) => {
            let t = t.make_mut();
            sort_directives(&mut t.directives);
            t.implements_interfaces.sort();
            sort_fields(&mut t.fields);
        }
        Definition::InputObjectTypeDefinition(t) => {
            let t = t.make_mut();
            sort_directives(&mut t.directives);
            t.fields.sort_by_key(|f| f.name.to_string());
            for f in &mut t.fields {
                sort_directives(&mut f.make_mut().directives);
            }
        }
        Definition::EnumTypeDefinition(t) => {
            let t = t.make_mut();
            sort_directives(&mut t.directives);
            t.values.sort_by_key(|v| v.value.to_string());
            for v in &mut t.values {
                sort_directives(&mut v.make_mut().directives);
            }
        }
        Definition::UnionTypeDefinition(t) => {
            let t = t.make_mut();
            sort_directives(&mut t.directives);
            t.members.sort();
        }
        Definition::ScalarTypeDefinition(t) => sort_directives(&mut t.make_mut().directives),
        Definition::DirectiveDefinition(d) => {
            d.make_mut().locations.sort_by_key(|l| l.to_string());
        }
        _ => {}
    }
}

/// What a satisfiability error is about: the first field coordinate its reasons name and
/// the subgraphs it lists (`from subgraph "x"`), sorted.
pub fn satisfiability_summary(message: &str) -> (String, Vec<String>) {
    let quoted_after = |marker: &str| -> Vec<String> {
        message
            .match_indices(marker)
            .filter_map(|(i, _)| {
                let rest = &message[i + marker.len()..];
                rest.split('"').next().map(str::to_owned)
            })
            .collect()
    };
    let field = quoted_after("field \"")
        .into_iter()
        .next()
        .unwrap_or_default();
    let mut subgraphs = quoted_after("from subgraph \"");
    subgraphs.sort();
    subgraphs.dedup();
    (field, subgraphs)
}

/// Lines only in ours (`+`) or only in Apollo's (`-`).
pub fn line_diff(ours: &str, theirs: &str) -> String {
    let a: BTreeSet<&str> = ours.lines().collect();
    let b: BTreeSet<&str> = theirs.lines().collect();
    let mut out: Vec<String> = a.difference(&b).map(|l| format!("+ {l}")).collect();
    out.extend(b.difference(&a).map(|l| format!("- {l}")));
    out.join("\n")
}
