//! Walks over a parsed field set's selections.

use std::collections::HashSet;

use apollo_compiler::executable::{Selection, SelectionSet};
use apollo_compiler::schema::ExtendedType;

use crate::errors::{ErrorSink, codes};
use crate::subgraph::{Coord, Subgraph};

/// Leaf fields of a `@requires`/`@provides` selection that are not external and have
/// no external field above them (an interface field counts as external when some
/// implementation's is), as Apollo validates them.
pub(super) fn non_external_leaves(
    sg: &Subgraph,
    external: &HashSet<Coord>,
    set: &SelectionSet,
    external_above: bool,
    out: &mut Vec<Coord>,
) {
    for sel in &set.selections {
        match sel {
            Selection::Field(f) => {
                let coord = (set.ty.to_string(), f.name.to_string());
                let is_external = external.contains(&coord);
                if f.selection_set.selections.is_empty() {
                    if !is_external && !external_above {
                        out.push(coord);
                    }
                    continue;
                }
                let mut above = external_above || is_external;
                if !above && let Some(ExtendedType::Interface(_)) = sg.schema.types.get(&set.ty) {
                    above =
                        sg.schema
                            .implementers_map()
                            .get(&set.ty)
                            .is_some_and(|imp| {
                                imp.objects.iter().chain(imp.interfaces.iter()).any(|o| {
                                    external.contains(&(o.to_string(), f.name.to_string()))
                                })
                            });
                }
                non_external_leaves(sg, external, &f.selection_set, above, out);
            }
            Selection::InlineFragment(i) => {
                non_external_leaves(sg, external, &i.selection_set, external_above, out)
            }
            Selection::FragmentSpread(_) => {}
        }
    }
}

pub(super) fn check_key_selection(
    sg: &Subgraph,
    ty: &str,
    fields: &str,
    set: &SelectionSet,
    sink: &mut ErrorSink,
) {
    for sel in &set.selections {
        match sel {
            Selection::Field(f) => {
                let target = f.definition.ty.inner_named_type();
                if let Some(ExtendedType::Interface(_) | ExtendedType::Union(_)) =
                    sg.schema.types.get(target)
                {
                    sink.error(
                        codes::KEY_FIELDS_SELECT_INVALID_TYPE,
                        format!(
                            "[{}] On type \"{ty}\", for @key(fields: \"{fields}\"): field \"{}.{}\" is a {} type which is not allowed in @key",
                            sg.name,
                            set.ty,
                            f.name,
                            if matches!(sg.schema.types.get(target), Some(ExtendedType::Union(_))) { "Union" } else { "Interface" }
                        ),
                        &sg.name,
                    );
                }
                if !f.definition.arguments.is_empty() {
                    sink.error(
                        codes::KEY_FIELDS_HAS_ARGS,
                        format!(
                            "[{}] On type \"{ty}\", for @key(fields: \"{fields}\"): field {}.{} cannot be included because it has arguments (fields with argument are not allowed in @key)",
                            sg.name, set.ty, f.name
                        ),
                        &sg.name,
                    );
                }
                check_key_selection(sg, ty, fields, &f.selection_set, sink);
            }
            Selection::InlineFragment(i) => {
                check_key_selection(sg, ty, fields, &i.selection_set, sink)
            }
            Selection::FragmentSpread(_) => {}
        }
    }
}

/// Every (type, field) a selection touches.
pub(super) fn collect(set: &SelectionSet, out: &mut Vec<Coord>) {
    for sel in &set.selections {
        match sel {
            Selection::Field(f) => {
                out.push((set.ty.to_string(), f.name.to_string()));
                collect(&f.selection_set, out);
            }
            Selection::InlineFragment(i) => collect(&i.selection_set, out),
            Selection::FragmentSpread(_) => {}
        }
    }
}

pub(super) fn top_fields(set: &SelectionSet) -> Vec<String> {
    set.selections
        .iter()
        .filter_map(|s| match s {
            Selection::Field(f) => Some(f.name.to_string()),
            _ => None,
        })
        .collect()
}
