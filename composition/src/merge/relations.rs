//! Relations between supergraph types that merging decisions depend on: subtyping (for
//! field type compatibility) and where each type is used (for enum value merging).

use std::collections::HashSet;

use apollo_compiler::ast::Type;
use apollo_compiler::schema::{ExtendedType, FieldDefinition};

use crate::subgraph::Subgraph;

#[derive(Default)]
pub(super) struct Relations {
    /// (sub, super) pairs from implements and union membership, by canonical names.
    subtypes: HashSet<(String, String)>,
    /// Named types some subgraph uses in an input position (argument or input field).
    pub(super) used_as_input: HashSet<String>,
    /// Named types some subgraph returns from a field.
    pub(super) used_as_output: HashSet<String>,
}

impl Relations {
    /// The relations across all subgraphs.
    pub(super) fn collect(subgraphs: &[Subgraph]) -> Self {
        let mut out = Relations::default();
        for sg in subgraphs {
            for (local, ty) in &sg.schema.types {
                if ty.is_built_in() || sg.is_internal_type(local) {
                    continue;
                }
                let name = sg.canonical(local).to_owned();
                match ty {
                    ExtendedType::Object(o) => {
                        for i in &o.implements_interfaces {
                            out.subtypes.insert((name.clone(), i.to_string()));
                        }
                        for f in o.fields.values() {
                            out.note_field_use(sg, f);
                        }
                    }
                    ExtendedType::Interface(o) => {
                        for i in &o.implements_interfaces {
                            out.subtypes.insert((name.clone(), i.to_string()));
                        }
                        for f in o.fields.values() {
                            out.note_field_use(sg, f);
                        }
                    }
                    ExtendedType::Union(u) => {
                        for m in &u.members {
                            out.subtypes
                                .insert((sg.canonical(m).to_owned(), name.clone()));
                        }
                    }
                    ExtendedType::InputObject(o) => {
                        for f in o.fields.values() {
                            out.used_as_input
                                .insert(f.ty.inner_named_type().to_string());
                        }
                    }
                    _ => {}
                }
            }
        }
        out
    }

    fn note_field_use(&mut self, sg: &Subgraph, f: &FieldDefinition) {
        self.used_as_output
            .insert(sg.canonical(f.ty.inner_named_type()).to_owned());
        for a in &f.arguments {
            self.used_as_input
                .insert(a.ty.inner_named_type().to_string());
        }
    }

    /// Whether `sub` can stand where `sup` is expected in an output position.
    pub(super) fn is_subtype(&self, sub: &Type, sup: &Type) -> bool {
        match (sub, sup) {
            (Type::NonNullNamed(a), Type::NonNullNamed(b) | Type::Named(b))
            | (Type::Named(a), Type::Named(b)) => {
                a == b || self.subtypes.contains(&(a.to_string(), b.to_string()))
            }
            (Type::NonNullList(a), Type::NonNullList(b) | Type::List(b))
            | (Type::List(a), Type::List(b)) => self.is_subtype(a, b),
            _ => false,
        }
    }
}
