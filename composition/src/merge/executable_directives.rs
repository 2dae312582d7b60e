//! Executable directive definitions (usable in operations) that every subgraph defines.

use apollo_compiler::schema::InputValueDefinition;
use apollo_compiler::{Name, Node};
use indexmap::IndexSet;

use super::input_values::is_required;
use super::state::Merger;
use crate::errors::{codes, subgraphs_phrase};
use crate::model::Supergraph;

/// Executable directives defined in every subgraph: their common executable locations
/// and common arguments.
pub(super) fn executable_directives(ctx: &mut Merger<'_>, sup: &mut Supergraph) {
    const BUILT_IN: &[&str] = &["skip", "include", "deprecated", "specifiedBy", "oneOf"];
    let subgraphs = ctx.input.subgraphs;
    let mut names: IndexSet<&Name> = IndexSet::new();
    for sg in subgraphs {
        for (name, def) in &sg.schema.directive_definitions {
            let executable = def.locations.iter().any(|l| is_executable(&l.to_string()));
            if executable
                && !BUILT_IN.contains(&name.as_str())
                && !sg.composed_directives.iter().any(|c| c == name.as_str())
            {
                names.insert(name);
            }
        }
    }
    for name in names {
        let defs: Vec<(&str, &Node<apollo_compiler::ast::DirectiveDefinition>)> = subgraphs
            .iter()
            .filter_map(|sg| {
                sg.schema
                    .directive_definitions
                    .get(name)
                    .map(|d| (sg.name.as_str(), d))
            })
            .collect();
        if defs.len() != subgraphs.len() {
            let have: Vec<&str> = defs.iter().map(|(n, _)| *n).collect();
            let missing: Vec<&str> = subgraphs
                .iter()
                .map(|s| s.name.as_str())
                .filter(|n| !have.contains(n))
                .collect();
            ctx.sink.hint(
                codes::INCONSISTENT_EXECUTABLE_DIRECTIVE_PRESENCE,
                format!(
                    "Executable directive \"@{name}\" will not be part of the supergraph as it does not appear in all subgraphs: it is defined in {} but not in {}.",
                    subgraphs_phrase(&have),
                    subgraphs_phrase(&missing)
                ),
            );
            continue;
        }
        let def = defs[0].1;
        let executable_in = |d: &apollo_compiler::ast::DirectiveDefinition| -> Vec<String> {
            let mut v: Vec<String> = d
                .locations
                .iter()
                .map(|l| l.to_string())
                .filter(|l| is_executable(l))
                .collect();
            v.sort();
            v
        };
        let locations: Vec<_> = def
            .locations
            .iter()
            .filter(|l| is_executable(&l.to_string()))
            .filter(|l| defs.iter().all(|(_, d)| d.locations.contains(l)))
            .cloned()
            .collect();
        if defs
            .iter()
            .any(|(_, d)| executable_in(d) != executable_in(def))
        {
            ctx.sink.hint(
                codes::INCONSISTENT_EXECUTABLE_DIRECTIVE_LOCATIONS,
                format!(
                    "Executable directive \"@{name}\" has inconsistent locations across subgraphs."
                ),
            );
        }
        if locations.is_empty() {
            continue;
        }
        let mut arg_names: IndexSet<&Name> = IndexSet::new();
        for (_, d) in &defs {
            arg_names.extend(d.arguments.iter().map(|a| &a.name));
        }
        let mut arguments = Vec::new();
        for aname in arg_names {
            let found: Vec<(&str, &Node<InputValueDefinition>)> = defs
                .iter()
                .filter_map(|(sg, d)| {
                    d.arguments
                        .iter()
                        .find(|a| &a.name == aname)
                        .map(|a| (*sg, a))
                })
                .collect();
            if found.len() == defs.len() {
                if found.iter().all(|(_, a)| a.ty == found[0].1.ty) {
                    arguments.push(found[0].1.clone());
                }
            } else if found.iter().all(|(_, a)| !is_required(a)) {
                let have: Vec<&str> = found.iter().map(|(n, _)| *n).collect();
                let missing: Vec<&str> = defs
                    .iter()
                    .map(|(n, _)| *n)
                    .filter(|n| !have.contains(n))
                    .collect();
                ctx.sink.hint(
                    codes::INCONSISTENT_ARGUMENT_PRESENCE,
                    format!(
                        "Optional argument \"@{name}({aname}:)\" will not be included in the supergraph as it does not appear in all subgraphs: it is defined in {} but not in {}.",
                        subgraphs_phrase(&have),
                        subgraphs_phrase(&missing)
                    ),
                );
            }
        }
        let mut merged = (**def).clone();
        merged.description = None;
        merged.locations = locations;
        merged.arguments = arguments;
        merged.repeatable = defs.iter().all(|(_, d)| d.repeatable);
        sup.extra_definitions.push(merged.to_string());
    }
}

/// Whether a directive location is one in operations (not in schemas).
fn is_executable(location: &str) -> bool {
    matches!(
        location,
        "QUERY"
            | "MUTATION"
            | "SUBSCRIPTION"
            | "FIELD"
            | "FRAGMENT_DEFINITION"
            | "FRAGMENT_SPREAD"
            | "INLINE_FRAGMENT"
            | "VARIABLE_DEFINITION"
    )
}
