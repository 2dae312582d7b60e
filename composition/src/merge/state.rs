//! What every merging step reads and writes.

use apollo_compiler::ast::Directive;
use apollo_compiler::schema::ExtendedType;

use super::carried::CarriedDirectives;
use super::relations::Relations;
use crate::errors::ErrorSink;
use crate::fieldsets::SubgraphInfo;
use crate::subgraph::Subgraph;

/// Everything merging reads: the subgraphs and their field-set analyses.
pub struct Input<'a> {
    pub subgraphs: &'a [Subgraph],
    pub infos: &'a [SubgraphInfo],
}

/// One subgraph's definition of a type.
pub(super) struct TypeSource<'a> {
    pub(super) sg: usize,
    pub(super) local: &'a str,
    pub(super) ty: &'a ExtendedType,
}

/// The merge in progress: its input, where errors and hints go, and what holds across
/// types.
pub(super) struct Merger<'a> {
    pub(super) input: &'a Input<'a>,
    pub(super) sink: &'a mut ErrorSink,
    pub(super) relations: Relations,
    pub(super) carried: CarriedDirectives,
}

impl<'a> Merger<'a> {
    pub(super) fn sg(&self, i: usize) -> &'a Subgraph {
        &self.input.subgraphs[i]
    }

    /// The carried directives of one element's subgraph definitions, deduplicated.
    pub(super) fn carried_union(&mut self, parts: &[(usize, Vec<&Directive>)]) -> Vec<String> {
        let out = self.carried.union(self.input.subgraphs, parts);
        for hint in std::mem::take(&mut self.carried.merge_hints) {
            self.sink.hint(
                crate::errors::codes::MERGED_NON_REPEATABLE_DIRECTIVE_ARGUMENTS,
                hint,
            );
        }
        out
    }
}
