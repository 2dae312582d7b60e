//! Input values, which clients write: field and directive arguments, input object fields.

use apollo_compiler::collections::IndexMap;
use apollo_compiler::schema::Component;
use apollo_compiler::{Name, Node, ast};

use super::deprecation;
use crate::change::{Change, ChangeKind, Severity};

/// The kinds and wording for one sort of input value.
struct Vocabulary {
    what: &'static str,
    removed: ChangeKind,
    required_added: ChangeKind,
    optional_added: ChangeKind,
    type_changed: ChangeKind,
    default_changed: ChangeKind,
}

const ARGUMENT: Vocabulary = Vocabulary {
    what: "Argument",
    removed: ChangeKind::ArgumentRemoved,
    required_added: ChangeKind::RequiredArgumentAdded,
    optional_added: ChangeKind::OptionalArgumentAdded,
    type_changed: ChangeKind::ArgumentTypeChanged,
    default_changed: ChangeKind::ArgumentDefaultChanged,
};

const INPUT_FIELD: Vocabulary = Vocabulary {
    what: "Input field",
    removed: ChangeKind::InputFieldRemoved,
    required_added: ChangeKind::RequiredInputFieldAdded,
    optional_added: ChangeKind::OptionalInputFieldAdded,
    type_changed: ChangeKind::InputFieldTypeChanged,
    default_changed: ChangeKind::InputFieldDefaultChanged,
};

/// Arguments of a field (`parent` = `Type.field`) or a directive (`parent` = `@name`).
pub(super) fn compare_arguments(
    parent: &str,
    old: &[Node<ast::InputValueDefinition>],
    new: &[Node<ast::InputValueDefinition>],
    out: &mut Vec<Change>,
) {
    compare(
        &ARGUMENT,
        |name| format!("{parent}({name}:)"),
        old.iter().map(|a| &**a),
        new.iter().map(|a| &**a),
        out,
    );
}

pub(super) fn compare_input_fields(
    type_name: &Name,
    old: &IndexMap<Name, Component<ast::InputValueDefinition>>,
    new: &IndexMap<Name, Component<ast::InputValueDefinition>>,
    out: &mut Vec<Change>,
) {
    compare(
        &INPUT_FIELD,
        |name| format!("{type_name}.{name}"),
        old.values().map(|f| &*f.node),
        new.values().map(|f| &*f.node),
        out,
    );
}

fn compare<'a>(
    vocabulary: &Vocabulary,
    coordinate: impl Fn(&Name) -> String,
    old: impl Iterator<Item = &'a ast::InputValueDefinition>,
    new: impl Iterator<Item = &'a ast::InputValueDefinition>,
    out: &mut Vec<Change>,
) {
    let old: Vec<_> = old.collect();
    let new: Vec<_> = new.collect();
    let find = |list: &[&'a ast::InputValueDefinition], name: &Name| {
        list.iter().copied().find(|v| &v.name == name)
    };
    for old_value in &old {
        let coordinate = coordinate(&old_value.name);
        match find(&new, &old_value.name) {
            None => out.push(Change::new(
                vocabulary.removed,
                &coordinate,
                Severity::Breaking,
                format!("{} `{coordinate}` was removed", vocabulary.what),
            )),
            Some(new_value) => changed(vocabulary, &coordinate, old_value, new_value, out),
        }
    }
    for new_value in new.iter().filter(|v| find(&old, &v.name).is_none()) {
        out.push(added(vocabulary, &coordinate(&new_value.name), new_value));
    }
}

/// A required input breaks every operation written without it; an optional one is safe.
fn added(vocabulary: &Vocabulary, coordinate: &str, value: &ast::InputValueDefinition) -> Change {
    let ty = &value.ty;
    if value.is_required() {
        Change::new(
            vocabulary.required_added,
            coordinate,
            Severity::Breaking,
            format!(
                "Required {} `{coordinate}: {ty}` was added",
                vocabulary.what.to_lowercase()
            ),
        )
    } else {
        Change::new(
            vocabulary.optional_added,
            coordinate,
            Severity::Safe,
            format!(
                "Optional {} `{coordinate}: {ty}` was added",
                vocabulary.what.to_lowercase()
            ),
        )
    }
}

fn changed(
    vocabulary: &Vocabulary,
    coordinate: &str,
    old: &ast::InputValueDefinition,
    new: &ast::InputValueDefinition,
    out: &mut Vec<Change>,
) {
    if old.ty != new.ty {
        out.push(Change::new(
            vocabulary.type_changed,
            coordinate,
            input_severity(&old.ty, &new.ty),
            format!(
                "{} `{coordinate}` changed type from `{}` to `{}`",
                vocabulary.what, old.ty, new.ty
            ),
        ));
    }
    if let Some(message) = default_change(vocabulary, coordinate, old, new) {
        out.push(Change::new(
            vocabulary.default_changed,
            coordinate,
            Severity::Dangerous,
            message,
        ));
    }
    deprecation::compare(coordinate, &old.directives, &new.directives, out);
}

/// Clients write inputs: a new type is safe when every value they could send before is
/// still accepted (`Int!` → `Int`, `[Int!]` → `[Int]`); anything else rejects some.
fn input_severity(old: &ast::Type, new: &ast::Type) -> Severity {
    if old.is_assignable_to(new) {
        Severity::Safe
    } else {
        Severity::Breaking
    }
}

/// Every default change is dangerous: operations that omit the value still validate but
/// now mean something else. `None` when the default stayed.
fn default_change(
    vocabulary: &Vocabulary,
    coordinate: &str,
    old: &ast::InputValueDefinition,
    new: &ast::InputValueDefinition,
) -> Option<String> {
    let print = |v: &Option<Node<ast::Value>>| v.as_ref().map(|v| v.to_string());
    let what = vocabulary.what;
    match (print(&old.default_value), print(&new.default_value)) {
        (None, Some(new)) => Some(format!("{what} `{coordinate}` got the default `{new}`")),
        (Some(old), None) => Some(format!("{what} `{coordinate}` lost its default `{old}`")),
        (Some(old), Some(new)) if old != new => Some(format!(
            "{what} `{coordinate}` changed its default from `{old}` to `{new}`"
        )),
        _ => None,
    }
}
