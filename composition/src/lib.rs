//! Federation v2 composition: subgraph SDLs → Apollo-format supergraph or precise errors.
//!
//! The single entry point is [`compose`]. Its output is the supergraph format that
//! `@apollo/composition` emits (`@link` core schema, `join__*` and `link__*` elements),
//! so gateways and composers can be swapped either way.

use std::collections::HashSet;
use std::fmt;

pub mod config;
mod context;
mod errors;
mod fieldsets;
mod merge;
mod model;
mod print;
mod satisfiability;
mod specs;
mod subgraph;
mod transitive_auth;

pub use errors::codes;

/// One subgraph to compose: its name (becomes a `join__Graph` value), routing URL and SDL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubgraphInput {
    pub name: String,
    pub url: String,
    pub sdl: String,
}

/// A successful composition: the supergraph SDL and non-fatal hints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Composed {
    pub supergraph_sdl: String,
    pub hints: Vec<Hint>,
}

/// A composition warning (Apollo hint code where one exists, e.g. `INCONSISTENT_FIELD_TYPE`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hint {
    pub code: String,
    pub message: String,
}

impl fmt::Display for Hint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

/// A source position inside one subgraph's SDL (1-based line and column).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub subgraph: String,
    pub line: usize,
    pub column: usize,
}

/// One composition error, with Apollo's error code where one exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompositionError {
    pub code: String,
    pub message: String,
    /// The subgraphs involved, in input order.
    pub subgraphs: Vec<String>,
    /// Source positions, when known.
    pub locations: Vec<Location>,
}

impl fmt::Display for CompositionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for CompositionError {}

/// All errors of a failed composition (never empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompositionErrors(pub Vec<CompositionError>);

impl fmt::Display for CompositionErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for CompositionErrors {}

/// Composes the subgraphs into an Apollo-format supergraph.
///
/// Errors carry Apollo's error codes where one exists; hints are non-fatal warnings.
pub fn compose(subgraphs: &[SubgraphInput]) -> Result<Composed, CompositionErrors> {
    let mut sink = errors::ErrorSink::default();
    if subgraphs.is_empty() {
        sink.error_in(
            codes::NO_QUERIES,
            "No subgraphs to compose: a supergraph needs at least one subgraph with a query root type."
                .to_owned(),
            &[],
        );
        return Err(CompositionErrors(sink.errors));
    }
    let mut built = Vec::with_capacity(subgraphs.len());
    let mut graph_names = HashSet::new();
    let mut seen_names = HashSet::new();
    // Apollo composes subgraphs in name order; ties between descriptions depend on it.
    let mut ordered: Vec<&SubgraphInput> = subgraphs.iter().collect();
    ordered.sort_by(|a, b| a.name.cmp(&b.name));
    for input in ordered {
        let graph = unique_graph_name(&input.name, &graph_names);
        if input.name.is_empty() || !seen_names.insert(input.name.as_str()) {
            sink.error(
                codes::INVALID_SUBGRAPH_NAME,
                format!("Invalid or duplicate subgraph name \"{}\"", input.name),
                &input.name,
            );
            continue;
        }
        graph_names.insert(graph.clone());
        if let Some(sg) = subgraph::build(&input.name, &input.url, graph, &input.sdl, &mut sink) {
            subgraph::auth::check(&sg, &mut sink);
            subgraph::cost::check(&sg, &mut sink);
            built.push(sg);
        }
    }
    if !sink.errors.is_empty() {
        return Err(CompositionErrors(sink.errors));
    }
    let infos: Vec<_> = built
        .iter()
        .map(|sg| fieldsets::analyse(sg, &mut sink))
        .collect();
    if !sink.errors.is_empty() {
        return Err(CompositionErrors(sink.errors));
    }
    let input = merge::Input {
        subgraphs: &built,
        infos: &infos,
    };
    let supergraph = merge::merge(&input, &mut sink);
    if sink.errors.is_empty() {
        satisfiability::check(&input, &supergraph, &mut sink);
    }
    if !sink.errors.is_empty() {
        return Err(CompositionErrors(sink.errors));
    }
    let supergraph_sdl = print::print(&supergraph);
    // The output must itself be a valid schema; anything else is a composer bug.
    if let Err(with) =
        apollo_compiler::Schema::parse_and_validate(&supergraph_sdl, "supergraph.graphql")
    {
        let first = with
            .errors
            .iter()
            .next()
            .map(|d| d.error.to_string())
            .unwrap_or_default();
        sink.error_in(
            codes::INVALID_SUPERGRAPH,
            format!("internal error: the composed supergraph is invalid: {first}"),
            &[],
        );
        return Err(CompositionErrors(sink.errors));
    }
    transitive_auth::check(&supergraph_sdl, &mut sink);
    if !sink.errors.is_empty() {
        return Err(CompositionErrors(sink.errors));
    }
    Ok(Composed {
        supergraph_sdl,
        hints: sink.hints,
    })
}

/// The `join__Graph` value for a subgraph; a clash with an earlier one gets a numeric suffix.
fn unique_graph_name(name: &str, taken: &HashSet<String>) -> String {
    let base = subgraph::graph_enum_name(name);
    if !taken.contains(&base) {
        return base;
    }
    (1..)
        .map(|i| format!("{base}_{i}"))
        .find(|n| !taken.contains(n))
        .unwrap_or(base)
}
