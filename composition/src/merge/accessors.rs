//! Uniform access to the parts every `ExtendedType` variant has, and type references
//! under canonical (supergraph) names.

use apollo_compiler::Name;
use apollo_compiler::ast::{Directive, Type};
use apollo_compiler::schema::{ComponentName, ExtendedType, FieldDefinition};

use crate::model::Kind;
use crate::specs::FedDirective;
use crate::subgraph::{DirSource, Subgraph};

/// The supergraph kind of a subgraph type: an `@interfaceObject` is an interface.
pub(super) fn kind_of(sg: &Subgraph, ty: &ExtendedType) -> Kind {
    match ty {
        ExtendedType::Scalar(_) => Kind::Scalar,
        ExtendedType::Object(o) => {
            if sg.has(&o.directives, FedDirective::InterfaceObject) {
                Kind::Interface
            } else {
                Kind::Object
            }
        }
        ExtendedType::Interface(_) => Kind::Interface,
        ExtendedType::Union(_) => Kind::Union,
        ExtendedType::Enum(_) => Kind::Enum,
        ExtendedType::InputObject(_) => Kind::Input,
    }
}

/// Rewrites root type names in a type reference to their canonical names.
pub(super) fn canon_type(sg: &Subgraph, ty: &Type) -> Type {
    let rename = |n: &Name| Name::new(sg.canonical(n)).unwrap_or_else(|_| n.clone());
    match ty {
        Type::Named(n) => Type::Named(rename(n)),
        Type::NonNullNamed(n) => Type::NonNullNamed(rename(n)),
        Type::List(inner) => Type::List(Box::new(canon_type(sg, inner))),
        Type::NonNullList(inner) => Type::NonNullList(Box::new(canon_type(sg, inner))),
    }
}

pub(super) fn type_directives(ty: &ExtendedType) -> Vec<&Directive> {
    match ty {
        ExtendedType::Scalar(t) => t.directives.dirs(),
        ExtendedType::Object(t) => t.directives.dirs(),
        ExtendedType::Interface(t) => t.directives.dirs(),
        ExtendedType::Union(t) => t.directives.dirs(),
        ExtendedType::Enum(t) => t.directives.dirs(),
        ExtendedType::InputObject(t) => t.directives.dirs(),
    }
}

pub(super) fn type_fields(
    ty: &ExtendedType,
) -> Option<
    &apollo_compiler::collections::IndexMap<
        Name,
        apollo_compiler::schema::Component<FieldDefinition>,
    >,
> {
    match ty {
        ExtendedType::Object(o) => Some(&o.fields),
        ExtendedType::Interface(i) => Some(&i.fields),
        _ => None,
    }
}

pub(super) fn description_of(ty: &ExtendedType) -> Option<&str> {
    match ty {
        ExtendedType::Scalar(t) => t.description.as_deref(),
        ExtendedType::Object(t) => t.description.as_deref(),
        ExtendedType::Interface(t) => t.description.as_deref(),
        ExtendedType::Union(t) => t.description.as_deref(),
        ExtendedType::Enum(t) => t.description.as_deref(),
        ExtendedType::InputObject(t) => t.description.as_deref(),
    }
}

pub(super) fn implements_of(ty: &ExtendedType) -> Vec<&ComponentName> {
    match ty {
        ExtendedType::Object(o) => o.implements_interfaces.iter().collect(),
        ExtendedType::Interface(i) => i.implements_interfaces.iter().collect(),
        _ => Vec::new(),
    }
}
