//! The workspace's architecture rules, checked by every `cargo test --workspace`: no module
//! cycle inside any crate, and no source file under a `src/` folder over 600 lines.
//!
//! A module "uses" another when its file names it by a `crate::…` or `super::…` path (in a
//! `use` or inline, groups like `crate::{a::X, b::Y}` included), outside `#[cfg(test)] mod … { }`
//! blocks and comments. A parent naming its own descendants is how modules are declared and
//! re-exported, so that is not an edge. The reader is rough on purpose (a macro can hide an
//! edge); it only has to see what a reviewer sees.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const MAX_LINES: usize = 600;

/// Folders that hold no product source of a crate (or another crate's build output).
const SKIPPED_DIRS: &[&str] = &["target", "fuzz", "tests", "benches", "node_modules"];

/// A module inside one crate: `["status", "loadtest"]`; the crate root is `[]`.
type Module = Vec<String>;

#[test]
fn no_module_cycle_in_any_crate() {
    let root = workspace_root();
    let mut found = Vec::new();
    for src in crate_sources(&root) {
        let files = module_files(&src);
        let sources: Vec<(Module, String)> = files
            .iter()
            .map(|(module, path)| (module.clone(), read(path)))
            .collect();
        for cycle in cycles(&uses(&sources)) {
            let names: Vec<String> = cycle.iter().map(|m| relative(&root, &files[m])).collect();
            found.push(names.join(", "));
        }
    }
    assert!(
        found.is_empty(),
        "module cycles (each line the files of one):\n{}",
        found.join("\n")
    );
}

#[test]
fn no_source_file_over_the_line_limit() {
    let root = workspace_root();
    let mut too_long = Vec::new();
    for src in crate_sources(&root) {
        for path in rust_files(&src) {
            let lines = read(&path).lines().count();
            if lines > MAX_LINES {
                too_long.push(format!("{}: {lines} lines", relative(&root, &path)));
            }
        }
    }
    assert!(
        too_long.is_empty(),
        "source files over {MAX_LINES} lines (split them by job):\n{}",
        too_long.join("\n")
    );
}

/// The module each file uses, parent-declares-child edges left out.
fn uses(files: &[(Module, String)]) -> BTreeMap<Module, BTreeSet<Module>> {
    let known: BTreeSet<&Module> = files.iter().map(|(m, _)| m).collect();
    let mut edges: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (module, text) in files {
        let out = edges.entry(module.clone()).or_default();
        for path in named_paths(module, &strip_comments(&strip_test_modules(text))) {
            // The longest prefix that is a module: `crate::a::b::Item` uses `a::b`.
            let target = (0..=path.len())
                .rev()
                .map(|n| path[..n].to_vec())
                .find(|p| known.contains(p));
            if let Some(target) = target
                && !target.starts_with(module)
            {
                out.insert(target);
            }
        }
    }
    edges
}

/// Every `crate::…`/`super::…` path in `text`, as absolute module paths from the crate root.
fn named_paths(module: &Module, text: &str) -> Vec<Module> {
    let mut paths = Vec::new();
    let starts = text
        .match_indices("crate::")
        .chain(text.match_indices("super::"));
    for (at, _) in starts {
        let before = &text[..at];
        // Inside a longer word (`mycrate::`), or a later `super::` of a chain.
        if before.ends_with(|c: char| c.is_alphanumeric() || c == '_')
            || before.ends_with("super::")
        {
            continue;
        }
        let mut tail = &text[at..];
        let mut base = Vec::new();
        if let Some(rest) = tail.strip_prefix("crate::") {
            tail = rest;
        } else {
            base = module.clone();
            while let Some(rest) = tail.strip_prefix("super::") {
                base.pop();
                tail = rest;
            }
        }
        for path in use_tree(tail) {
            let mut full = base.clone();
            full.extend(path.into_iter().filter(|s| s != "self"));
            paths.push(full);
        }
    }
    paths
}

/// The paths of a use tree at the start of `text`: `a::b`, `a::{b, c::{d, e}}`, `a::*`.
fn use_tree(text: &str) -> Vec<Module> {
    let text = text.trim_start();
    let ident_len = text
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    if text.starts_with('{') {
        let inner = &text[1..matching_brace(text).unwrap_or(text.len())];
        return split_top_level(inner).flat_map(use_tree).collect();
    }
    if ident_len == 0 {
        return vec![Vec::new()]; // `*` or the end of the path
    }
    let (ident, rest) = text.split_at(ident_len);
    let rest = rest.strip_prefix("::").map(use_tree);
    let mut paths = rest.unwrap_or_else(|| vec![Vec::new()]);
    for path in &mut paths {
        path.insert(0, ident.to_owned());
    }
    paths
}

/// Where the brace opening `text` closes.
fn matching_brace(text: &str) -> Option<usize> {
    let mut depth = 0;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// The comma-separated items of a use group, nested groups kept whole.
fn split_top_level(inner: &str) -> impl Iterator<Item = &str> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&inner[start..]);
    items.into_iter().filter(|s| !s.trim().is_empty())
}

/// `text` without its `#[cfg(test)] mod name { … }` blocks (tests may use anything).
fn strip_test_modules(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = rest[at + "#[cfg(test)]".len()..].trim_start();
        let after = after.strip_prefix("pub ").unwrap_or(after).trim_start();
        let inline_module = after.strip_prefix("mod ").and_then(|m| {
            let open = m.find(['{', ';'])?;
            (m.as_bytes()[open] == b'{').then(|| &m[open..])
        });
        match inline_module.and_then(|block| Some((block, matching_brace(block)?))) {
            Some((block, close)) => rest = &block[close + 1..],
            None => {
                out.push_str("#[cfg(test)]");
                rest = &rest[at + "#[cfg(test)]".len()..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// `text` without `//` comments (doc comments name paths in prose).
fn strip_comments(text: &str) -> String {
    text.lines()
        .map(|line| line.find("//").map_or(line, |at| &line[..at]))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The modules in cycles: each strongly connected group of more than one module.
fn cycles(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    let reach: BTreeMap<&Module, BTreeSet<&Module>> =
        edges.keys().map(|m| (m, reachable(edges, m))).collect();
    let mut groups = BTreeSet::new();
    for (m, from_m) in &reach {
        let group: Vec<Module> = from_m
            .iter()
            .filter(|other| reach[*other].contains(m))
            .map(|other| (*other).clone())
            .collect();
        if group.len() > 1 {
            groups.insert(group);
        }
    }
    groups.into_iter().collect()
}

/// The modules `from` reaches, itself included.
fn reachable<'a>(
    edges: &'a BTreeMap<Module, BTreeSet<Module>>,
    from: &'a Module,
) -> BTreeSet<&'a Module> {
    let mut seen = BTreeSet::from([from]);
    let mut todo = vec![from];
    while let Some(m) = todo.pop() {
        for next in edges.get(m).into_iter().flatten() {
            if seen.insert(next) {
                todo.push(next);
            }
        }
    }
    seen
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("testkit sits in the workspace root")
        .to_path_buf()
}

/// The `src/` folder of every crate in the workspace.
fn crate_sources(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        if dir.join("Cargo.toml").is_file() && dir.join("src").is_dir() {
            out.push(dir.join("src"));
        }
        for entry in entries(&dir) {
            let name = entry.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if entry.is_dir()
                && !name.starts_with('.')
                && !SKIPPED_DIRS.contains(&name)
                && name != "src"
            {
                todo.push(entry);
            }
        }
    }
    out.sort();
    assert!(
        out.len() > 10,
        "found only {} crates under {}",
        out.len(),
        root.display()
    );
    out
}

/// Each module of the crate whose source is `src`, with its file. `src/bin/` holds other
/// crates' roots; a `main.rs` beside `lib.rs` counts as the root too (a root has no edges).
fn module_files(src: &Path) -> BTreeMap<Module, PathBuf> {
    let mut out = BTreeMap::new();
    for path in rust_files(src) {
        let relative = path
            .strip_prefix(src)
            .expect("under src")
            .with_extension("");
        let mut module: Module = relative
            .iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect();
        if module.first().is_some_and(|s| s == "bin") {
            continue;
        }
        if module
            .last()
            .is_some_and(|s| ["lib", "main", "mod"].contains(&s.as_str()))
        {
            module.pop();
        }
        out.insert(module, path);
    }
    out
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in entries(dir) {
        if entry.is_dir() {
            out.extend(rust_files(&entry));
        } else if entry.extension().is_some_and(|e| e == "rs") {
            out.push(entry);
        }
    }
    out
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    out.sort();
    out
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// The check itself: it must find a cycle where there is one.
mod check {
    use super::*;

    fn module(path: &str) -> Module {
        path.split("::")
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    }

    fn files(files: &[(&str, &str)]) -> Vec<(Module, String)> {
        files
            .iter()
            .map(|(m, text)| (module(m), (*text).to_owned()))
            .collect()
    }

    #[test]
    fn a_cycle_through_crate_and_super_paths_is_found() {
        let crate_files = files(&[
            ("", "mod a; mod b; mod c; pub use a::run;"),
            ("a", "use crate::b::{Thing, helper};\npub fn run() {}"),
            // b is a child of the root, so `super::` is the root and this names `c`.
            (
                "b",
                "pub struct Thing;\npub fn helper() { super::c::more() }",
            ),
            ("c", "use crate::{x::y, a::run}; // crate::d::nothing\n"),
            ("x", "pub mod y;"),
            ("x::y", "pub fn leaf() {}"),
        ]);
        assert_eq!(
            cycles(&uses(&crate_files)),
            vec![vec![module("a"), module("b"), module("c")]]
        );
    }

    #[test]
    fn declaring_children_tests_and_comments_are_no_edges() {
        let crate_files = files(&[
            ("", "mod a;"),
            ("a", "mod b;\npub use b::Thing;\nuse crate::a::b::helper;"),
            (
                "a::b",
                "use super::Other;\nuse super::super::c::g;\npub struct Thing;",
            ),
            (
                "c",
                "// use crate::a::Thing;\n#[cfg(test)]\nmod tests {\n    use crate::a::b::Thing;\n    fn f() { if true { } }\n}\nfn g() {}",
            ),
        ]);
        let edges = uses(&crate_files);
        assert!(cycles(&edges).is_empty());
        assert_eq!(edges[&module("a")], BTreeSet::new());
        assert_eq!(
            edges[&module("a::b")],
            BTreeSet::from([module("a"), module("c")])
        );
        assert_eq!(edges[&module("c")], BTreeSet::new());
    }

    #[test]
    fn use_groups_expand_to_every_path() {
        assert_eq!(
            use_tree("a::{b, c::{d, self}, e::*};"),
            vec![
                module("a::b"),
                module("a::c::d"),
                module("a::c::self"),
                module("a::e"),
            ]
        );
    }
}
