//! What every merged element shares: its description, and for types the `@join__type`s
//! and carried directives.

use apollo_compiler::ast::Directive;
use indexmap::IndexMap;

use super::accessors::{description_of, kind_of, type_directives};
use super::join::join_types;
use super::state::{Merger, TypeSource};
use crate::errors::codes;
use crate::model::MType;

/// The most common non-empty description (first wins ties).
pub(super) fn merge_description<'d>(
    ctx: &mut Merger<'_>,
    element: &str,
    descs: impl Iterator<Item = Option<&'d str>>,
) -> Option<String> {
    let mut counts: IndexMap<&str, usize> = IndexMap::new();
    for d in descs.flatten() {
        if !d.trim().is_empty() {
            *counts.entry(d).or_default() += 1;
        }
    }
    if counts.len() > 1 {
        ctx.sink.hint(
            codes::INCONSISTENT_DESCRIPTION,
            format!("Element \"{element}\" has inconsistent descriptions across subgraphs."),
        );
    }
    let best = counts.values().copied().max()?;
    counts
        .into_iter()
        .find(|(_, c)| *c == best)
        .map(|(d, _)| d.to_owned())
}

/// A merged type with the parts every kind has: description, `@join__type`s and
/// carried directives.
pub(super) fn type_with_common_parts(
    ctx: &mut Merger<'_>,
    name: &str,
    sources: &[TypeSource<'_>],
) -> MType {
    let kind = kind_of(ctx.sg(sources[0].sg), sources[0].ty);
    let mut t = MType::new(name, kind);
    t.description = merge_description(ctx, name, sources.iter().map(|s| description_of(s.ty)));
    for src in sources {
        t.join_types.extend(join_types(ctx, src, kind));
    }
    let parts: Vec<(usize, Vec<&Directive>)> = sources
        .iter()
        .map(|s| (s.sg, type_directives(s.ty)))
        .collect();
    t.directives = ctx.carried_union(&parts);
    t
}
