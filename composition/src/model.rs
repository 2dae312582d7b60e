//! The merged supergraph, before printing.

use apollo_compiler::ast::{Type, Value};
use indexmap::IndexMap;

use crate::context::ContextArg;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Scalar,
    Object,
    Interface,
    Union,
    Enum,
    Input,
}

impl Kind {
    pub fn describe(self) -> &'static str {
        match self {
            Kind::Scalar => "ScalarType",
            Kind::Object => "ObjectType",
            Kind::Interface => "InterfaceType",
            Kind::Union => "UnionType",
            Kind::Enum => "EnumType",
            Kind::Input => "InputObjectType",
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct JoinType {
    pub graph: String,
    pub key: Option<String>,
    pub extension: bool,
    pub resolvable: bool,
    /// `resolvable` was written on the subgraph's `@key`: printed even when true (Apollo).
    pub resolvable_explicit: bool,
    pub interface_object: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JoinField {
    /// `None` prints a bare `@join__field` (fields an `@interfaceObject` adds to implementations).
    pub graph: Option<String>,
    pub requires: Option<String>,
    pub provides: Option<String>,
    pub ty: Option<String>,
    pub external: bool,
    pub override_from: Option<String>,
    pub used_overridden: bool,
    pub override_label: Option<String>,
    pub context_arguments: Vec<ContextArg>,
}

#[derive(Debug, Clone)]
pub struct MArg {
    pub name: String,
    pub description: Option<String>,
    pub ty: Type,
    pub default: Option<Value>,
    pub directives: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct MField {
    pub name: String,
    pub description: Option<String>,
    pub ty: Type,
    pub args: Vec<MArg>,
    /// Input fields only.
    pub default: Option<Value>,
    /// `None`: the field needs no `@join__field`.
    pub joins: Option<Vec<JoinField>>,
    pub directives: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct MEnumValue {
    pub name: String,
    pub description: Option<String>,
    pub graphs: Vec<String>,
    pub directives: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct MType {
    pub name: String,
    pub kind: Kind,
    pub description: Option<String>,
    pub join_types: Vec<JoinType>,
    pub implements: Vec<String>,
    pub join_implements: Vec<(String, String)>,
    pub fields: IndexMap<String, MField>,
    pub members: Vec<String>,
    pub join_members: Vec<(String, String)>,
    pub values: IndexMap<String, MEnumValue>,
    pub directives: Vec<String>,
}

impl MType {
    pub fn new(name: &str, kind: Kind) -> Self {
        MType {
            name: name.to_owned(),
            kind,
            description: None,
            join_types: Vec::new(),
            implements: Vec::new(),
            join_implements: Vec::new(),
            fields: IndexMap::new(),
            members: Vec::new(),
            join_members: Vec::new(),
            values: IndexMap::new(),
            directives: Vec::new(),
        }
    }
}

/// A `@link` in the supergraph's schema definition.
#[derive(Debug, Clone)]
pub struct Link {
    pub url: String,
    pub purpose: Option<&'static str>,
    pub import: Option<String>,
}

#[derive(Debug, Default)]
pub struct Supergraph {
    pub join_version: (u32, u32),
    /// (enum value, name, url).
    pub graphs: Vec<(String, String, String)>,
    pub links: Vec<Link>,
    /// Extra directive/type definitions (feature and composed directives), printed verbatim.
    pub extra_definitions: Vec<String>,
    pub roots: Vec<(&'static str, String)>,
    pub types: IndexMap<String, MType>,
    /// The supergraph name of `@inaccessible` (it may be imported under another name).
    pub inaccessible_name: String,
}
