//! One subgraph: parsed, its `@link`s resolved to local directive names, Federation 1
//! schemas upgraded, and validated with apollo-compiler.
//!
//! This module holds the subgraph model and its lookups; `build` makes one from SDL,
//! with `links` resolving the `@link`s first.

pub(crate) mod auth;
mod build;
pub(crate) mod cost;
mod links;

pub use self::build::build;

use std::collections::{HashMap, HashSet};

use apollo_compiler::ast::{self, Directive, Value};
use apollo_compiler::schema::Schema;
use apollo_compiler::validation::Valid;

use crate::Location;
use crate::specs::FedDirective;

/// (type, field), both as named in the subgraph.
pub type Coord = (String, String);

/// The federation spec a subgraph links (Federation 1 subgraphs have no `@link`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct FedVersion {
    pub major: u32,
    pub minor: u32,
}

/// A custom spec linked with `@link`, possibly composed through `@composeDirective`.
#[derive(Debug, Clone)]
pub struct CustomLink {
    pub url: String,
    /// Imported directive local names, with the original `import` element text.
    pub imports: Vec<(String, Value)>,
    /// Local names of all directives this link provides (imports and namespaced ones).
    pub namespace: String,
}

#[derive(Debug)]
pub struct Subgraph {
    pub name: String,
    pub url: String,
    /// The `join__Graph` value name.
    pub graph: String,
    pub fed1: bool,
    pub version: FedVersion,
    pub schema: Valid<Schema>,
    /// Federation directive → local name in this subgraph.
    names: HashMap<FedDirective, String>,
    /// Root type local name → canonical name (`Query`, `Mutation`, `Subscription`).
    root_names: HashMap<String, String>,
    pub custom_links: Vec<CustomLink>,
    /// Local names of directives composed with `@composeDirective`.
    pub composed_directives: Vec<String>,
    /// Definitions that are federation machinery, not part of the user's schema.
    internal_types: HashSet<String>,
}

impl Subgraph {
    /// Local name of a federation directive (without `@`).
    pub fn dir_name(&self, d: FedDirective) -> &str {
        self.names.get(&d).map(String::as_str).unwrap_or("")
    }

    /// Canonical (supergraph) name of a type named `local` in this subgraph.
    pub fn canonical<'a>(&'a self, local: &'a str) -> &'a str {
        self.root_names
            .get(local)
            .map(String::as_str)
            .unwrap_or(local)
    }

    /// Whether a type or directive definition belongs to federation machinery.
    pub fn is_internal_type(&self, name: &str) -> bool {
        self.internal_types.contains(name)
            || name.starts_with("federation__")
            || name.starts_with("link__")
            || name.starts_with("join__")
    }

    /// Line and column of a node of this subgraph's SDL.
    pub fn location(&self, span: Option<apollo_compiler::parser::SourceSpan>) -> Option<Location> {
        let start = span?.line_column_range(&self.schema.sources)?.start;
        Some(Location {
            subgraph: self.name.clone(),
            line: start.line,
            column: start.column,
        })
    }

    /// The applications of a federation directive in a directive list.
    pub fn applications<'a>(
        &self,
        directives: &'a impl DirSource,
        d: FedDirective,
    ) -> Vec<&'a Directive> {
        let name = self.dir_name(d);
        directives
            .dirs()
            .into_iter()
            .filter(|x| x.name == name)
            .collect()
    }

    pub fn has(&self, directives: &impl DirSource, d: FedDirective) -> bool {
        !self.applications(directives, d).is_empty()
    }
}

/// Directive lists of both the AST and the schema representation.
pub trait DirSource {
    fn dirs(&self) -> Vec<&Directive>;
}

impl DirSource for ast::DirectiveList {
    fn dirs(&self) -> Vec<&Directive> {
        self.iter().map(|d| &**d).collect()
    }
}

impl DirSource for apollo_compiler::schema::DirectiveList {
    fn dirs(&self) -> Vec<&Directive> {
        self.iter().map(|d| &***d).collect()
    }
}

impl DirSource for Vec<&Directive> {
    fn dirs(&self) -> Vec<&Directive> {
        self.clone()
    }
}

/// String argument of a directive application.
pub fn str_arg<'a>(d: &'a Directive, name: &str) -> Option<&'a str> {
    match d.specified_argument_by_name(name).map(|v| v.as_ref()) {
        Some(Value::String(s)) => Some(s.as_str()),
        _ => None,
    }
}

pub fn bool_arg(d: &Directive, name: &str) -> Option<bool> {
    match d.specified_argument_by_name(name).map(|v| v.as_ref()) {
        Some(Value::Boolean(b)) => Some(*b),
        _ => None,
    }
}

/// The `join__Graph` enum value for a subgraph name.
pub fn graph_enum_name(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    if out.starts_with(|c: char| c.is_ascii_digit()) || out.is_empty() {
        out.insert(0, '_');
    }
    out
}
