//! Merging enum types: which values are kept depends on whether the enum is used as
//! input, output or both.

use apollo_compiler::ast::Directive;
use apollo_compiler::schema::ExtendedType;
use indexmap::IndexSet;

use super::common_parts::{merge_description, type_with_common_parts};
use super::state::{Merger, TypeSource};
use crate::errors::{codes, subgraphs_phrase};
use crate::model::{MEnumValue, MType};
use crate::specs::FedDirective;
use crate::subgraph::DirSource;

/// `None` when no value is kept (an error).
pub(super) fn merge_enum(
    ctx: &mut Merger<'_>,
    name: &str,
    sources: &[TypeSource<'_>],
) -> Option<MType> {
    let mut t = type_with_common_parts(ctx, name, sources);
    let enums: Vec<(usize, &apollo_compiler::schema::EnumType)> = sources
        .iter()
        .filter_map(|s| match s.ty {
            ExtendedType::Enum(e) => Some((s.sg, &**e)),
            _ => None,
        })
        .collect();
    let input = ctx.relations.used_as_input.contains(name);
    let output = ctx.relations.used_as_output.contains(name);
    let mut names: IndexSet<&str> = IndexSet::new();
    for (_, e) in &enums {
        names.extend(e.values.keys().map(|n| n.as_str()));
    }
    for vname in names {
        let defs: Vec<(usize, &apollo_compiler::schema::EnumValueDefinition)> = enums
            .iter()
            .filter_map(|(i, e)| e.values.get(vname).map(|v| (*i, &***v)))
            .collect();
        // A value marked @inaccessible in some subgraph skips the input checks (Apollo).
        let inaccessible = defs
            .iter()
            .any(|(i, v)| ctx.sg(*i).has(&v.directives, FedDirective::Inaccessible));
        if defs.len() != enums.len() && !(inaccessible && input) {
            let have: Vec<&str> = defs.iter().map(|(i, _)| ctx.sg(*i).name.as_str()).collect();
            let missing: Vec<&str> = enums
                .iter()
                .filter(|(i, _)| !defs.iter().any(|(j, _)| j == i))
                .map(|(i, _)| ctx.sg(*i).name.as_str())
                .collect();
            let detail = format!(
                "\"{vname}\" is defined in {} but not in {}",
                subgraphs_phrase(&have),
                subgraphs_phrase(&missing)
            );
            if input && output {
                let all: Vec<&str> = enums
                    .iter()
                    .map(|(i, _)| ctx.sg(*i).name.as_str())
                    .collect();
                ctx.sink.error_in(
                    codes::ENUM_VALUE_MISMATCH,
                    format!("Enum type \"{name}\" is used as both input type and output type, but value \"{vname}\" is not defined in all the subgraphs defining \"{name}\": {detail}"),
                    &all,
                );
                continue;
            }
            if input {
                ctx.sink.hint(
                    codes::INCONSISTENT_ENUM_VALUE_FOR_INPUT_ENUM,
                    format!("Value \"{vname}\" of enum type \"{name}\" will not be part of the supergraph as it is not defined in all the subgraphs defining \"{name}\": {detail}."),
                );
                continue;
            }
            ctx.sink.hint(
                codes::INCONSISTENT_ENUM_VALUE_FOR_OUTPUT_ENUM,
                format!("Value \"{vname}\" of enum type \"{name}\" has been added to the supergraph but is only defined in a subset of the subgraphs defining \"{name}\": {detail}."),
            );
        }
        let description = merge_description(
            ctx,
            &format!("{name}.{vname}"),
            defs.iter().map(|(_, v)| v.description.as_deref()),
        );
        let parts: Vec<(usize, Vec<&Directive>)> = defs
            .iter()
            .map(|(i, v)| (*i, v.directives.dirs()))
            .collect();
        let directives = ctx.carried_union(&parts);
        t.values.insert(
            vname.to_owned(),
            MEnumValue {
                name: vname.to_owned(),
                description,
                graphs: defs.iter().map(|(i, _)| ctx.sg(*i).graph.clone()).collect(),
                directives,
            },
        );
    }
    if t.values.is_empty() {
        let all: Vec<&str> = enums
            .iter()
            .map(|(i, _)| ctx.sg(*i).name.as_str())
            .collect();
        ctx.sink.error_in(
            codes::EMPTY_MERGED_ENUM_TYPE,
            format!("None of the values of enum type \"{name}\" are defined consistently in all the subgraphs defining that type. As only values common to all subgraphs are merged, this would result in an empty type."),
            &all,
        );
        return None;
    }
    Some(t)
}
