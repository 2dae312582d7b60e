//! Federation v2 composition: subgraph SDLs → Apollo-format supergraph or precise errors.
//!
//! The single entry point is [`compose`]. Its output is the supergraph format that
//! `@apollo/composition` emits (`@link` core schema, `join__*` and `link__*` elements),
//! so gateways and composers can be swapped either way.

use std::fmt;

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
pub fn compose(subgraphs: &[SubgraphInput]) -> Result<Composed, CompositionErrors> {
    let _ = subgraphs;
    Err(CompositionErrors(vec![CompositionError {
        code: "UNSUPPORTED".to_owned(),
        message: "composition is not implemented yet".to_owned(),
        subgraphs: Vec::new(),
        locations: Vec::new(),
    }]))
}
