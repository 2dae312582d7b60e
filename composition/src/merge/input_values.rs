//! Input positions: field arguments and input object fields, their types (the most
//! restrictive), default values, descriptions and directives.

use apollo_compiler::Node;
use apollo_compiler::ast::{Directive, Type, Value};
use apollo_compiler::schema::InputValueDefinition;
use indexmap::IndexSet;

use super::accessors::canon_type;
use super::common_parts::merge_description;
use super::field_sources::FieldSource;
use super::state::Merger;
use crate::errors::{codes, subgraphs_phrase};
use crate::model::MArg;
use crate::subgraph::DirSource;

/// The most restrictive type of an input position (argument or input field).
fn merge_input_type(
    ctx: &mut Merger<'_>,
    coord: &str,
    code: &str,
    types: &[(usize, Type)],
) -> Option<Type> {
    let mut best = &types[0];
    for t in &types[1..] {
        if ctx.relations.is_subtype(&t.1, &best.1) && same_named(&t.1, &best.1) {
            best = t;
        } else if !(ctx.relations.is_subtype(&best.1, &t.1) && same_named(&t.1, &best.1)) {
            let (a, b) = (ctx.sg(best.0).name.clone(), ctx.sg(t.0).name.clone());
            ctx.sink.error_in(
                code,
                format!(
                    "Type of {coord} is incompatible across subgraphs: it has type \"{}\" in subgraph \"{a}\" but type \"{}\" in subgraph \"{b}\"",
                    best.1, t.1
                ),
                &[&a, &b],
            );
            return None;
        }
    }
    Some(best.1.clone())
}

/// Same named type, whatever the list and non-null wrappers.
fn same_named(a: &Type, b: &Type) -> bool {
    a.inner_named_type() == b.inner_named_type()
}

/// Non-null without a default value.
pub(super) fn is_required(v: &InputValueDefinition) -> bool {
    v.ty.is_non_null() && v.default_value.is_none()
}

/// The arguments all sources define; one only some define is dropped with a hint, or an
/// error when it is required somewhere.
pub(super) fn merge_args(
    ctx: &mut Merger<'_>,
    coord: &str,
    srcs: &[&FieldSource<'_>],
) -> Vec<MArg> {
    let mut names: IndexSet<&str> = IndexSet::new();
    for s in srcs {
        names.extend(s.plain_args().map(|a| a.name.as_str()));
    }
    let mut out = Vec::new();
    for aname in names {
        let defs: Vec<(usize, &Node<InputValueDefinition>)> = srcs
            .iter()
            .filter_map(|s| s.plain_args().find(|a| a.name == aname).map(|a| (s.sg, a)))
            .collect();
        let arg_coord = format!("{coord}({aname}:)");
        if defs.len() != srcs.len() {
            let have: Vec<&str> = defs.iter().map(|(i, _)| ctx.sg(*i).name.as_str()).collect();
            let missing: Vec<&str> = srcs
                .iter()
                .filter(|s| !defs.iter().any(|(i, _)| *i == s.sg))
                .map(|s| ctx.sg(s.sg).name.as_str())
                .collect();
            if defs.iter().any(|(_, a)| is_required(a)) {
                let msg = format!(
                    "Argument \"{arg_coord}\" is required in some subgraphs but does not appear in all subgraphs: it is required in {} but does not appear in {}",
                    subgraphs_phrase(&have),
                    subgraphs_phrase(&missing)
                );
                ctx.sink.error_in(
                    codes::REQUIRED_ARGUMENT_MISSING_IN_SOME_SUBGRAPH,
                    msg,
                    &have,
                );
            } else {
                let msg = format!(
                    "Optional argument \"{arg_coord}\" will not be included in the supergraph as it does not appear in all subgraphs: it is defined in {} but not in {}.",
                    subgraphs_phrase(&have),
                    subgraphs_phrase(&missing)
                );
                ctx.sink.hint(codes::INCONSISTENT_ARGUMENT_PRESENCE, msg);
            }
            continue;
        }
        if let Some(arg) = merge_input_value(ctx, &format!("argument \"{arg_coord}\""), &defs, true)
        {
            out.push(arg);
        }
    }
    out
}

/// Merges an argument or input field present in every source.
pub(super) fn merge_input_value(
    ctx: &mut Merger<'_>,
    what: &str,
    defs: &[(usize, &Node<InputValueDefinition>)],
    is_arg: bool,
) -> Option<MArg> {
    let types: Vec<(usize, Type)> = defs
        .iter()
        .map(|(i, a)| (*i, canon_type(ctx.sg(*i), &a.ty)))
        .collect();
    let (type_code, default_code) = if is_arg {
        (
            codes::FIELD_ARGUMENT_TYPE_MISMATCH,
            codes::FIELD_ARGUMENT_DEFAULT_MISMATCH,
        )
    } else {
        (
            codes::FIELD_TYPE_MISMATCH,
            codes::INPUT_FIELD_DEFAULT_MISMATCH,
        )
    };
    let ty = merge_input_type(ctx, what, type_code, &types)?;
    let mut default: Option<(usize, &Value)> = None;
    let mut some_missing = false;
    for (i, a) in defs {
        match (&a.default_value, default) {
            (None, _) => some_missing = true,
            (Some(v), None) => default = Some((*i, v)),
            (Some(v), Some((j, d))) if v.as_ref() != d => {
                let (a_name, b_name) = (ctx.sg(j).name.clone(), ctx.sg(*i).name.clone());
                ctx.sink.error_in(
                    default_code,
                    format!(
                        "Default value of {what} has incompatible default values across subgraphs: it has default value {d} in subgraph \"{a_name}\" but default value {v} in subgraph \"{b_name}\""
                    ),
                    &[&a_name, &b_name],
                );
                return None;
            }
            _ => {}
        }
    }
    if some_missing && default.is_some() {
        ctx.sink.hint(
            codes::INCONSISTENT_DEFAULT_VALUE_PRESENCE,
            format!("{what} has a default value in only some subgraphs."),
        );
    }
    let description = merge_description(
        ctx,
        what,
        defs.iter().map(|(_, a)| a.description.as_deref()),
    );
    let parts: Vec<(usize, Vec<&Directive>)> = defs
        .iter()
        .map(|(i, a)| (*i, a.directives.dirs()))
        .collect();
    let directives = ctx.carried_union(&parts);
    Some(MArg {
        name: defs[0].1.name.to_string(),
        description,
        ty,
        default: default.map(|(_, v)| v.clone()),
        directives,
    })
}
