//! Merging one object or interface field: its type, sharing, arguments, joins,
//! description and directives.

use apollo_compiler::ast::{Directive, Type};

use super::common_parts::merge_description;
use super::field_sources::FieldSource;
use super::input_values::merge_args;
use super::join::join_fields;
use super::state::Merger;
use crate::errors::{codes, subgraphs_phrase};
use crate::model::{Kind, MField};
use crate::subgraph::DirSource;

/// `None` after an error: the field is external everywhere or its types conflict.
pub(super) fn merge_field(
    ctx: &mut Merger<'_>,
    tname: &str,
    kind: Kind,
    fname: &str,
    srcs: Vec<FieldSource<'_>>,
    type_sources: usize,
) -> Option<MField> {
    let coord = format!("{tname}.{fname}");
    let live: Vec<&FieldSource<'_>> = srcs.iter().filter(|s| !s.external).collect();
    if live.is_empty() && kind == Kind::Object {
        let names: Vec<&str> = srcs.iter().map(|s| ctx.sg(s.sg).name.as_str()).collect();
        ctx.sink.error_in(
            codes::EXTERNAL_MISSING_ON_BASE,
            format!(
                "Field \"{coord}\" is marked @external on all the subgraphs in which it is listed ({}).",
                subgraphs_phrase(&names)
            ),
            &names,
        );
        for s in &srcs {
            ctx.sink
                .locate(ctx.sg(s.sg).location(s.def.name.location()));
        }
        return None;
    }
    let typed: Vec<&FieldSource<'_>> = if live.is_empty() {
        srcs.iter().collect()
    } else {
        live
    };
    let ty = merge_output_type(ctx, &coord, &typed)?;
    let types_differ = srcs.iter().any(|s| s.ty != ty);
    check_sharing(ctx, kind, &coord, &srcs);
    let args = merge_args(ctx, &coord, &typed);
    let special = srcs.iter().any(|s| {
        s.external
            || s.requires.is_some()
            || s.provides.is_some()
            || s.overrides.is_some()
            || s.overridden.is_some()
            || !s.context_args.is_empty()
    });
    let joins = (srcs.len() != type_sources || special || types_differ)
        .then(|| join_fields(ctx, &srcs, types_differ));
    let description = merge_description(
        ctx,
        &coord,
        srcs.iter().map(|s| s.def.description.as_deref()),
    );
    let parts: Vec<(usize, Vec<&Directive>)> = srcs
        .iter()
        .map(|s| (s.sg, s.def.directives.dirs()))
        .collect();
    let directives = ctx.carried_union(&parts);
    Some(MField {
        name: fname.to_owned(),
        description,
        ty,
        args,
        default: None,
        joins,
        directives,
    })
}

/// The most general type of an output field across its sources.
fn merge_output_type(ctx: &mut Merger<'_>, coord: &str, srcs: &[&FieldSource<'_>]) -> Option<Type> {
    let mut best = srcs[0];
    for s in &srcs[1..] {
        if ctx.relations.is_subtype(&s.ty, &best.ty) {
            continue;
        }
        if ctx.relations.is_subtype(&best.ty, &s.ty) {
            best = s;
            continue;
        }
        let (a, b) = (ctx.sg(best.sg).name.clone(), ctx.sg(s.sg).name.clone());
        ctx.sink.error_in(
            codes::FIELD_TYPE_MISMATCH,
            format!(
                "Type of field \"{coord}\" is incompatible across subgraphs: it has type \"{}\" in subgraph \"{a}\" but type \"{}\" in subgraph \"{b}\"",
                best.ty, s.ty
            ),
            &[&a, &b],
        );
        for src in [best, s] {
            ctx.sink
                .locate(ctx.sg(src.sg).location(src.def.name.location()));
        }
        return None;
    }
    let other: Vec<&str> = srcs
        .iter()
        .filter(|s| s.ty != best.ty)
        .map(|s| ctx.sg(s.sg).name.as_str())
        .collect();
    if !other.is_empty() {
        let msg = format!(
            "Type of field \"{coord}\" is inconsistent but compatible across subgraphs: will use type \"{}\" (from {}) in supergraph but \"{coord}\" has subtype in {}.",
            best.ty,
            subgraphs_phrase(&[ctx.sg(best.sg).name.as_str()]),
            subgraphs_phrase(&other)
        );
        ctx.sink
            .hint(codes::INCONSISTENT_BUT_COMPATIBLE_FIELD_TYPE, msg);
    }
    Some(best.ty.clone())
}

/// An object field resolved from several subgraphs must be `@shareable` in each.
fn check_sharing(ctx: &mut Merger<'_>, kind: Kind, coord: &str, srcs: &[FieldSource<'_>]) {
    if kind != Kind::Object {
        return;
    }
    let resolving: Vec<&FieldSource<'_>> = srcs
        .iter()
        .filter(|s| (!s.external || s.provided) && s.overridden.is_none())
        .collect();
    if resolving.len() < 2 {
        return;
    }
    let non_shareable: Vec<&str> = resolving
        .iter()
        .filter(|s| !s.shareable && !s.external)
        .map(|s| ctx.sg(s.sg).name.as_str())
        .collect();
    if non_shareable.is_empty() {
        return;
    }
    let all: Vec<&str> = resolving
        .iter()
        .map(|s| ctx.sg(s.sg).name.as_str())
        .collect();
    let which = if non_shareable.len() == all.len() {
        "in all of them".to_owned()
    } else {
        format!("in {}", subgraphs_phrase(&non_shareable))
    };
    ctx.sink.error_in(
        codes::INVALID_FIELD_SHARING,
        format!(
            "Non-shareable field \"{coord}\" is resolved from multiple subgraphs: it is resolved from {} and defined as non-shareable {which}",
            subgraphs_phrase(&all)
        ),
        &all,
    );
    for s in resolving {
        ctx.sink
            .locate(ctx.sg(s.sg).location(s.def.name.location()));
    }
}
