//! Directive definitions. Operations can only use a directive at executable locations
//! (`FIELD`, `QUERY`, …), so a change there breaks clients; a directive that is
//! type-system only is never written by clients, and its changes are at most dangerous
//! (tools that read the SDL or introspection may still rely on it).

use apollo_compiler::ast::{DirectiveDefinition, DirectiveLocation};
use apollo_compiler::{Name, Node, Schema};

use super::inputs;
use crate::change::{Change, ChangeKind, Severity};

pub(super) fn compare(old: &Schema, new: &Schema, out: &mut Vec<Change>) {
    for (name, old_def) in user_directives(old) {
        match new.directive_definitions.get(name) {
            None => out.push(removed(name, old_def)),
            Some(new_def) => compare_directive(name, old_def, new_def, out),
        }
    }
    for (name, _) in user_directives(new) {
        if !old.directive_definitions.contains_key(name) {
            out.push(Change::new(
                ChangeKind::DirectiveAdded,
                format!("@{name}"),
                Severity::Safe,
                format!("Directive `@{name}` was added"),
            ));
        }
    }
}

fn user_directives(schema: &Schema) -> impl Iterator<Item = (&Name, &Node<DirectiveDefinition>)> {
    schema
        .directive_definitions
        .iter()
        .filter(|(_, def)| !def.is_built_in())
}

fn removed(name: &Name, def: &DirectiveDefinition) -> Change {
    let (severity, note) = if is_executable(def) {
        (Severity::Breaking, "")
    } else {
        (
            Severity::Dangerous,
            " (type-system only: no operation uses it)",
        )
    };
    Change::new(
        ChangeKind::DirectiveRemoved,
        format!("@{name}"),
        severity,
        format!("Directive `@{name}` was removed{note}"),
    )
}

fn compare_directive(
    name: &Name,
    old: &DirectiveDefinition,
    new: &DirectiveDefinition,
    out: &mut Vec<Change>,
) {
    let coordinate = format!("@{name}");
    let mut changes = Vec::new();
    locations(&coordinate, old, new, &mut changes);
    repeatable(&coordinate, old, new, &mut changes);
    inputs::compare_arguments(&coordinate, &old.arguments, &new.arguments, &mut changes);
    if !is_executable(old) {
        for change in &mut changes {
            change.severity = change.severity.min(Severity::Dangerous);
        }
    }
    out.extend(changes);
}

fn locations(
    coordinate: &str,
    old: &DirectiveDefinition,
    new: &DirectiveDefinition,
    out: &mut Vec<Change>,
) {
    for location in old.locations.iter().filter(|l| !new.locations.contains(l)) {
        let severity = if is_executable_location(*location) {
            Severity::Breaking
        } else {
            Severity::Dangerous
        };
        out.push(Change::new(
            ChangeKind::DirectiveLocationRemoved,
            coordinate,
            severity,
            format!("Directive `{coordinate}` can no longer be used on {location}"),
        ));
    }
    for location in new.locations.iter().filter(|l| !old.locations.contains(l)) {
        out.push(Change::new(
            ChangeKind::DirectiveLocationAdded,
            coordinate,
            Severity::Safe,
            format!("Directive `{coordinate}` can now be used on {location}"),
        ));
    }
}

/// Operations that repeat a directive stop validating when it is no longer repeatable.
fn repeatable(
    coordinate: &str,
    old: &DirectiveDefinition,
    new: &DirectiveDefinition,
    out: &mut Vec<Change>,
) {
    match (old.repeatable, new.repeatable) {
        (true, false) => out.push(Change::new(
            ChangeKind::DirectiveRepeatableRemoved,
            coordinate,
            Severity::Breaking,
            format!("Directive `{coordinate}` is no longer repeatable"),
        )),
        (false, true) => out.push(Change::new(
            ChangeKind::DirectiveRepeatableAdded,
            coordinate,
            Severity::Safe,
            format!("Directive `{coordinate}` is now repeatable"),
        )),
        _ => {}
    }
}

fn is_executable(def: &DirectiveDefinition) -> bool {
    def.locations.iter().copied().any(is_executable_location)
}

fn is_executable_location(location: DirectiveLocation) -> bool {
    matches!(
        location,
        DirectiveLocation::Query
            | DirectiveLocation::Mutation
            | DirectiveLocation::Subscription
            | DirectiveLocation::Field
            | DirectiveLocation::FragmentDefinition
            | DirectiveLocation::FragmentSpread
            | DirectiveLocation::InlineFragment
            | DirectiveLocation::VariableDefinition
    )
}
