//! Merging input object types: only the fields every subgraph defines.

use apollo_compiler::Node;
use apollo_compiler::schema::{ExtendedType, InputValueDefinition};
use indexmap::IndexSet;

use super::accessors::canon_type;
use super::common_parts::type_with_common_parts;
use super::input_values::{is_required, merge_input_value};
use super::state::{Merger, TypeSource};
use crate::errors::{codes, subgraphs_phrase};
use crate::model::{JoinField, MField, MType};

/// Only the fields every subgraph defines are kept; `None` when none are (an error).
pub(super) fn merge_input(
    ctx: &mut Merger<'_>,
    name: &str,
    sources: &[TypeSource<'_>],
) -> Option<MType> {
    let mut t = type_with_common_parts(ctx, name, sources);
    let objs: Vec<(usize, &apollo_compiler::schema::InputObjectType)> = sources
        .iter()
        .filter_map(|s| match s.ty {
            ExtendedType::InputObject(o) => Some((s.sg, &**o)),
            _ => None,
        })
        .collect();
    let mut names: IndexSet<&str> = IndexSet::new();
    for (_, o) in &objs {
        names.extend(o.fields.keys().map(|n| n.as_str()));
    }
    for fname in names {
        let defs: Vec<(usize, &Node<InputValueDefinition>)> = objs
            .iter()
            .filter_map(|(i, o)| o.fields.get(fname).map(|f| (*i, &f.node)))
            .collect();
        let coord = format!("{name}.{fname}");
        if defs.len() != objs.len() {
            let have: Vec<&str> = defs.iter().map(|(i, _)| ctx.sg(*i).name.as_str()).collect();
            let missing: Vec<&str> = objs
                .iter()
                .filter(|(i, _)| !defs.iter().any(|(j, _)| j == i))
                .map(|(i, _)| ctx.sg(*i).name.as_str())
                .collect();
            if defs.iter().any(|(_, f)| is_required(f)) {
                let msg = format!(
                    "Input object field \"{coord}\" is required in some subgraphs but does not appear in all subgraphs: it is required in {} but does not appear in {}",
                    subgraphs_phrase(&have),
                    subgraphs_phrase(&missing)
                );
                ctx.sink.error_in(
                    codes::REQUIRED_INPUT_FIELD_MISSING_IN_SOME_SUBGRAPH,
                    msg,
                    &have,
                );
            } else {
                let msg = format!(
                    "Input object field \"{fname}\" will not be added to \"{name}\" in the supergraph as it does not appear in all subgraphs: it is defined in {} but not in {}.",
                    subgraphs_phrase(&have),
                    subgraphs_phrase(&missing)
                );
                ctx.sink.hint(codes::INCONSISTENT_INPUT_OBJECT_FIELD, msg);
            }
            continue;
        }
        let Some(v) = merge_input_value(ctx, &format!("field \"{coord}\""), &defs, false) else {
            continue;
        };
        let types_differ = defs
            .iter()
            .any(|(i, f)| canon_type(ctx.sg(*i), &f.ty) != v.ty);
        let joins = types_differ.then(|| {
            defs.iter()
                .map(|(i, f)| JoinField {
                    graph: Some(ctx.sg(*i).graph.clone()),
                    ty: Some(canon_type(ctx.sg(*i), &f.ty).to_string()),
                    ..JoinField::default()
                })
                .collect()
        });
        t.fields.insert(
            fname.to_owned(),
            MField {
                name: v.name,
                description: v.description,
                ty: v.ty,
                args: Vec::new(),
                default: v.default,
                joins,
                directives: v.directives,
            },
        );
    }
    if t.fields.is_empty() {
        let names: Vec<&str> = objs.iter().map(|(i, _)| ctx.sg(*i).name.as_str()).collect();
        ctx.sink.error_in(
            codes::EMPTY_MERGED_INPUT_TYPE,
            format!("None of the fields of input object type \"{name}\" are consistently defined in all the subgraphs defining that type. As only fields common to all subgraphs are merged, this would result in an empty type."),
            &names,
        );
        return None;
    }
    Some(t)
}
