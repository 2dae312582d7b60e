//! Named types: added, removed, kind changed, and what each kind holds.

use apollo_compiler::collections::IndexSet;
use apollo_compiler::schema::{ComponentName, EnumType, ExtendedType};
use apollo_compiler::{Name, Schema};

use super::{deprecation, fields, inputs};
use crate::change::{Change, ChangeKind, Severity};

pub(super) fn compare(old: &Schema, new: &Schema, out: &mut Vec<Change>) {
    for (name, old_ty) in user_types(old) {
        match new.types.get(name) {
            None => out.push(Change::new(
                ChangeKind::TypeRemoved,
                name.as_str(),
                Severity::Breaking,
                format!("{} `{name}` was removed", capitalized(kind(old_ty))),
            )),
            Some(new_ty) => compare_type(name, old_ty, new_ty, out),
        }
    }
    for (name, new_ty) in user_types(new) {
        if !old.types.contains_key(name) {
            out.push(Change::new(
                ChangeKind::TypeAdded,
                name.as_str(),
                Severity::Safe,
                format!("{} `{name}` was added", capitalized(kind(new_ty))),
            ));
        }
    }
}

fn user_types(schema: &Schema) -> impl Iterator<Item = (&Name, &ExtendedType)> {
    schema.types.iter().filter(|(_, ty)| !ty.is_built_in())
}

fn compare_type(name: &Name, old: &ExtendedType, new: &ExtendedType, out: &mut Vec<Change>) {
    match (old, new) {
        (ExtendedType::Object(o), ExtendedType::Object(n)) => {
            interfaces(
                name,
                &o.implements_interfaces,
                &n.implements_interfaces,
                out,
            );
            fields::compare(name, &o.fields, &n.fields, out);
        }
        (ExtendedType::Interface(o), ExtendedType::Interface(n)) => {
            interfaces(
                name,
                &o.implements_interfaces,
                &n.implements_interfaces,
                out,
            );
            fields::compare(name, &o.fields, &n.fields, out);
        }
        (ExtendedType::Union(o), ExtendedType::Union(n)) => {
            union_members(name, &o.members, &n.members, out);
        }
        (ExtendedType::Enum(o), ExtendedType::Enum(n)) => enum_values(name, o, n, out),
        (ExtendedType::InputObject(o), ExtendedType::InputObject(n)) => {
            inputs::compare_input_fields(name, &o.fields, &n.fields, out);
        }
        (ExtendedType::Scalar(_), ExtendedType::Scalar(_)) => {}
        _ => out.push(Change::new(
            ChangeKind::TypeKindChanged,
            name.as_str(),
            Severity::Breaking,
            format!("`{name}` changed from {} to {}", kind(old), kind(new)),
        )),
    }
}

/// A removed interface breaks fragments on it; an added one is dangerous because fields
/// typed with that interface may now return this type, which clients switching on
/// `__typename` have never seen.
fn interfaces(
    name: &Name,
    old: &IndexSet<ComponentName>,
    new: &IndexSet<ComponentName>,
    out: &mut Vec<Change>,
) {
    let (removed, added) = removed_and_added(old, new);
    for interface in removed {
        out.push(Change::new(
            ChangeKind::ImplementedInterfaceRemoved,
            name.as_str(),
            Severity::Breaking,
            format!("`{name}` no longer implements interface `{interface}`"),
        ));
    }
    for interface in added {
        out.push(Change::new(
            ChangeKind::ImplementedInterfaceAdded,
            name.as_str(),
            Severity::Dangerous,
            format!("`{name}` now implements interface `{interface}`: clients may not expect it where `{interface}` is returned"),
        ));
    }
}

/// A removed member breaks fragments on it; an added one is a result type clients
/// switching on `__typename` may not handle.
fn union_members(
    name: &Name,
    old: &IndexSet<ComponentName>,
    new: &IndexSet<ComponentName>,
    out: &mut Vec<Change>,
) {
    let (removed, added) = removed_and_added(old, new);
    for member in removed {
        out.push(Change::new(
            ChangeKind::UnionMemberRemoved,
            name.as_str(),
            Severity::Breaking,
            format!("`{member}` was removed from union `{name}`"),
        ));
    }
    for member in added {
        out.push(Change::new(
            ChangeKind::UnionMemberAdded,
            name.as_str(),
            Severity::Dangerous,
            format!("`{member}` was added to union `{name}`: clients may not handle it"),
        ));
    }
}

/// Names in `old` only and in `new` only, each in its schema's order.
fn removed_and_added<'a>(
    old: &'a IndexSet<ComponentName>,
    new: &'a IndexSet<ComponentName>,
) -> (Vec<&'a Name>, Vec<&'a Name>) {
    let only_in = |a: &'a IndexSet<ComponentName>, b: &IndexSet<ComponentName>| {
        a.iter()
            .map(|c| &c.name)
            .filter(|name| !b.iter().any(|c| &c.name == *name))
            .collect()
    };
    (only_in(old, new), only_in(new, old))
}

/// A removed value breaks operations and variables that use it; an added one is
/// dangerous: clients reading the enum may get a value they do not handle.
fn enum_values(name: &Name, old: &EnumType, new: &EnumType, out: &mut Vec<Change>) {
    for (value, def) in &old.values {
        let coordinate = format!("{name}.{value}");
        match new.values.get(value) {
            None => out.push(Change::new(
                ChangeKind::EnumValueRemoved,
                &coordinate,
                Severity::Breaking,
                format!("Enum value `{coordinate}` was removed"),
            )),
            Some(new_def) => {
                deprecation::compare(&coordinate, &def.directives, &new_def.directives, out)
            }
        }
    }
    for value in new.values.keys().filter(|v| !old.values.contains_key(*v)) {
        out.push(Change::new(
            ChangeKind::EnumValueAdded,
            format!("{name}.{value}"),
            Severity::Dangerous,
            format!("Enum value `{name}.{value}` was added: clients may not handle it"),
        ));
    }
}

fn kind(ty: &ExtendedType) -> &'static str {
    match ty {
        ExtendedType::Scalar(_) => "scalar",
        ExtendedType::Object(_) => "object type",
        ExtendedType::Interface(_) => "interface",
        ExtendedType::Union(_) => "union",
        ExtendedType::Enum(_) => "enum",
        ExtendedType::InputObject(_) => "input object",
    }
}

fn capitalized(s: &str) -> String {
    let mut chars = s.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}
