//! Output fields of object and interface types, and their arguments.

use apollo_compiler::collections::IndexMap;
use apollo_compiler::schema::{Component, FieldDefinition};
use apollo_compiler::{Name, ast};

use super::{deprecation, inputs};
use crate::change::{Change, ChangeKind, Severity};

pub(super) fn compare(
    type_name: &Name,
    old: &IndexMap<Name, Component<FieldDefinition>>,
    new: &IndexMap<Name, Component<FieldDefinition>>,
    out: &mut Vec<Change>,
) {
    for (name, old_field) in old {
        let coordinate = format!("{type_name}.{name}");
        match new.get(name) {
            None => out.push(removed(&coordinate, old_field)),
            Some(new_field) => compare_field(&coordinate, old_field, new_field, out),
        }
    }
    for name in new.keys().filter(|n| !old.contains_key(*n)) {
        out.push(Change::new(
            ChangeKind::FieldAdded,
            format!("{type_name}.{name}"),
            Severity::Safe,
            format!("Field `{type_name}.{name}` was added"),
        ));
    }
}

fn removed(coordinate: &str, field: &FieldDefinition) -> Change {
    let note = if deprecation::reason(&field.directives).is_some() {
        " (it was deprecated)"
    } else {
        ""
    };
    Change::new(
        ChangeKind::FieldRemoved,
        coordinate,
        Severity::Breaking,
        format!("Field `{coordinate}` was removed{note}"),
    )
}

fn compare_field(
    coordinate: &str,
    old: &FieldDefinition,
    new: &FieldDefinition,
    out: &mut Vec<Change>,
) {
    if old.ty != new.ty {
        out.push(Change::new(
            ChangeKind::FieldTypeChanged,
            coordinate,
            output_severity(&old.ty, &new.ty),
            format!(
                "Field `{coordinate}` changed type from `{}` to `{}`",
                old.ty, new.ty
            ),
        ));
    }
    deprecation::compare(coordinate, &old.directives, &new.directives, out);
    inputs::compare_arguments(coordinate, &old.arguments, &new.arguments, out);
}

/// Clients read outputs: a new type is safe when every value of it is a value of the
/// old one (`String` → `String!`, `[Int]` → `[Int!]!`); anything else may hand a client
/// a null or a shape it does not expect.
fn output_severity(old: &ast::Type, new: &ast::Type) -> Severity {
    if new.is_assignable_to(old) {
        Severity::Safe
    } else {
        Severity::Breaking
    }
}
