//! Flat federation metadata: every type, field and subgraph lives in a `Vec` and is
//! referred to by a typed index, so planning walks plain slices instead of ASTs.

use apollo_compiler::ast::Argument;
use apollo_compiler::{Name, Node};
use rustc_hash::FxHashMap;

macro_rules! id_type {
    ($name:ident) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub u32);
        impl $name {
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }
    };
}
id_type!(SubgraphId);
id_type!(TypeId);
id_type!(FieldId);

/// A parsed field set (`@key`, `@requires`, `@provides` argument).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct SelTree {
    pub items: Vec<SelTreeItem>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SelTreeItem {
    Field {
        name: Name,
        /// Response key in the subgraph request when it differs from `name` (a
        /// `@requires` field with arguments); representations still use `name`.
        alias: Option<Name>,
        args: Vec<Node<Argument>>,
        sub: SelTree,
    },
    Fragment {
        type_condition: Name,
        sub: SelTree,
    },
}

impl SelTree {
    /// The sub-tree selected under field `name`, if this tree selects it.
    pub fn field(&self, name: &str) -> Option<&SelTree> {
        self.items.iter().find_map(|item| match item {
            SelTreeItem::Field { name: n, sub, .. } if n == name => Some(sub),
            _ => None,
        })
    }

    /// Whether the union of the two trees would hold one field name twice (same name,
    /// different alias or arguments): such trees cannot share a representation.
    pub fn conflicts_with(&self, other: &SelTree) -> bool {
        other.items.iter().any(|item| match item {
            SelTreeItem::Field {
                name,
                alias,
                args,
                sub,
            } => self.items.iter().any(|i| match i {
                SelTreeItem::Field {
                    name: n,
                    alias: al,
                    args: a,
                    sub: s,
                } if n == name => al != alias || a != args || s.conflicts_with(sub),
                _ => false,
            }),
            SelTreeItem::Fragment {
                type_condition,
                sub,
            } => self.items.iter().any(|i| match i {
                SelTreeItem::Fragment {
                    type_condition: t,
                    sub: s,
                } if t == type_condition => s.conflicts_with(sub),
                _ => false,
            }),
        })
    }

    /// Union of two trees (used to build representation selections: key ∪ requires).
    pub fn merge(&mut self, other: &SelTree) {
        for item in &other.items {
            match item {
                SelTreeItem::Field {
                    name,
                    alias,
                    args,
                    sub,
                } => {
                    let existing = self.items.iter_mut().find_map(|i| match i {
                        SelTreeItem::Field {
                            name: n,
                            alias: al,
                            args: a,
                            sub: s,
                        } if n == name && al == alias && a == args => Some(s),
                        _ => None,
                    });
                    match existing {
                        Some(s) => s.merge(sub),
                        None => self.items.push(item.clone()),
                    }
                }
                SelTreeItem::Fragment {
                    type_condition,
                    sub,
                } => {
                    let existing = self.items.iter_mut().find_map(|i| match i {
                        SelTreeItem::Fragment {
                            type_condition: t,
                            sub: s,
                        } if t == type_condition => Some(s),
                        _ => None,
                    });
                    match existing {
                        Some(s) => s.merge(sub),
                        None => self.items.push(item.clone()),
                    }
                }
            }
        }
    }
}

#[derive(Debug, Clone)]
pub struct Subgraph {
    pub name: String,
    pub url: String,
    /// The `join__Graph` enum value naming this subgraph.
    pub enum_value: Name,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeKind {
    Object,
    Interface,
    Union,
    Enum,
    InputObject,
    Scalar,
}

#[derive(Debug, Clone)]
pub struct Key {
    pub fields: SelTree,
    pub resolvable: bool,
}

/// What one subgraph knows of a type (`@join__type`).
#[derive(Debug, Clone)]
pub struct TypeInSubgraph {
    pub subgraph: SubgraphId,
    pub keys: Vec<Key>,
    pub interface_object: bool,
}

#[derive(Debug, Clone)]
pub struct TypeMeta {
    pub name: Name,
    pub kind: TypeKind,
    pub subgraphs: Vec<TypeInSubgraph>,
    /// Fields of this type: `fields[first..first+len]` of [`FederationMeta::fields`].
    pub fields: std::ops::Range<u32>,
    /// `(subgraph, interface)` pairs from `@join__implements`.
    pub implements: Vec<(SubgraphId, Name)>,
    /// `(subgraph, member)` pairs from `@join__unionMember`.
    pub union_members: Vec<(SubgraphId, Name)>,
    /// Object types that belong to this abstract type in the supergraph.
    pub possible_types: Vec<Name>,
    /// The contexts this type sets (`@context(name:)`, supergraph names).
    pub contexts: Vec<String>,
}

/// One `@join__field` entry.
#[derive(Debug, Clone)]
pub struct FieldResolver {
    pub subgraph: SubgraphId,
    pub external: bool,
    pub requires: Option<SelTree>,
    pub provides: Option<SelTree>,
    pub override_from: Option<String>,
    pub override_label: Option<String>,
    pub used_overridden: bool,
    /// Named output type in this subgraph when it differs from the supergraph's
    /// (`@join__field(type:)`, e.g. `Book` in a subgraph where the supergraph says `Media`).
    pub output: Option<Name>,
    /// The full type in this subgraph as written in `@join__field(type:)` (e.g. `ID!`
    /// where the supergraph says `ID`), when given.
    pub subgraph_type: Option<String>,
    /// Arguments whose values come from a context (`@fromContext` in the subgraph):
    /// the field is only ever fetched through `_entities`, with them as variables.
    pub context_arguments: Vec<ContextArgument>,
}

impl FieldResolver {
    /// Whether the field needs anything fetched before it (`@requires` fields, or
    /// contextual arguments read from an ancestor), so it is fetched through `_entities`.
    pub fn needs_inputs(&self) -> bool {
        self.requires.is_some() || !self.context_arguments.is_empty()
    }
}

/// One argument of a field whose value comes from a context, in one subgraph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextArgument {
    /// The argument's name in the subgraph (absent from the API schema).
    pub name: Name,
    /// Its type in the subgraph, as text (`String!`): the variable's type.
    pub ty: String,
    /// The context, as named in the supergraph (`<subgraph>__<name>`).
    pub context: String,
    /// What to read from the object that set the context: one field (per type
    /// condition), whose value is the argument's.
    pub selection: SelTree,
}

#[derive(Debug, Clone)]
pub struct FieldMeta {
    pub parent: TypeId,
    pub name: Name,
    /// Named output type.
    pub output: Name,
    /// Full output type (list and non-null wrappers).
    pub ty: apollo_compiler::ast::Type,
    /// Empty: resolvable in every subgraph that defines the parent type.
    pub resolvers: Vec<FieldResolver>,
    /// Only reachable through an `@interfaceObject` of one of the type's interfaces.
    pub via_interface_object: bool,
}

/// How a subgraph relates to a field.
#[derive(Debug, Clone, Copy)]
pub enum Resolution<'a> {
    /// The subgraph resolves the field itself.
    Resolvable(Option<&'a FieldResolver>),
    /// The subgraph knows the field only as `@external` (or overridden).
    External,
    /// The subgraph does not know the field at all.
    Absent,
}

#[derive(Debug, Default, Clone)]
pub struct FederationMeta {
    pub subgraphs: Vec<Subgraph>,
    pub types: Vec<TypeMeta>,
    pub fields: Vec<FieldMeta>,
    pub type_by_name: FxHashMap<Name, TypeId>,
    pub field_by_name: FxHashMap<(TypeId, Name), FieldId>,
    /// Progressive-override labels treated as enabled (the default: none).
    pub enabled_override_labels: Vec<String>,
    /// Per type (by [`TypeId`]), its fields by name, built on the first lookup in a
    /// large type: found from a `&str` without allocating a `Name` key.
    field_index: std::sync::OnceLock<Vec<FxHashMap<Name, FieldId>>>,
}

impl FederationMeta {
    /// Every progressive-override label in the supergraph, each once, in field order.
    pub fn override_labels(&self) -> Vec<&str> {
        let mut labels: Vec<&str> = Vec::new();
        let all = self.fields.iter().flat_map(|f| &f.resolvers);
        for label in all.filter_map(|r| r.override_label.as_deref()) {
            if !labels.contains(&label) {
                labels.push(label);
            }
        }
        labels
    }

    pub fn type_id(&self, name: &str) -> Option<TypeId> {
        self.type_by_name.get(name).copied()
    }

    pub fn ty(&self, id: TypeId) -> &TypeMeta {
        &self.types[id.index()]
    }

    pub fn field(&self, id: FieldId) -> &FieldMeta {
        &self.fields[id.index()]
    }

    pub fn subgraph(&self, id: SubgraphId) -> &Subgraph {
        &self.subgraphs[id.index()]
    }

    pub fn field_id(&self, ty: &str, field: &str) -> Option<FieldId> {
        self.field_of(self.type_id(ty)?, field)
    }

    /// Field `field` of type `ty`. The planner looks fields up by text for every
    /// selection: small types are scanned in place, large ones go through an index
    /// keyed by name alone (no `Name` allocated for a `field_by_name` key).
    pub fn field_of(&self, ty: TypeId, field: &str) -> Option<FieldId> {
        let range = self.ty(ty).fields.clone();
        if range.len() <= 8 {
            let first = range.start;
            return self.fields[range.start as usize..range.end as usize]
                .iter()
                .position(|f| f.name.as_str() == field)
                .map(|i| FieldId(first + i as u32));
        }
        let index = self.field_index.get_or_init(|| {
            self.types
                .iter()
                .map(|t| {
                    t.fields
                        .clone()
                        .map(|i| (self.fields[i as usize].name.clone(), FieldId(i)))
                        .collect()
                })
                .collect()
        });
        match index.get(ty.index()) {
            // Built before this type was added (metadata is not changed after loading).
            None => {
                let name = Name::new(field).ok()?;
                self.field_by_name.get(&(ty, name)).copied()
            }
            Some(fields) => fields.get(field).copied(),
        }
    }

    pub fn type_in_subgraph(&self, ty: &str, sg: SubgraphId) -> Option<&TypeInSubgraph> {
        let id = self.type_id(ty)?;
        self.ty(id).subgraphs.iter().find(|t| t.subgraph == sg)
    }

    /// How subgraph `sg` relates to field `ty.field`.
    pub fn resolution(&self, ty: &str, field: &str, sg: SubgraphId) -> Resolution<'_> {
        let Some(tid) = self.type_id(ty) else {
            return Resolution::Absent;
        };
        if !self.ty(tid).subgraphs.iter().any(|t| t.subgraph == sg) {
            return Resolution::Absent;
        }
        match self.field_of(tid, field) {
            Some(fid) => self.resolution_of(fid, sg),
            None => Resolution::Absent,
        }
    }

    /// [`Self::resolution`] and [`Self::field_meta`] with one lookup.
    pub fn resolution_and_meta(
        &self,
        ty: &str,
        field: &str,
        sg: SubgraphId,
    ) -> (Resolution<'_>, Option<&FieldMeta>) {
        let Some(tid) = self.type_id(ty) else {
            return (Resolution::Absent, None);
        };
        let Some(fid) = self.field_of(tid, field) else {
            return (Resolution::Absent, None);
        };
        let resolution = if self.ty(tid).subgraphs.iter().any(|t| t.subgraph == sg) {
            self.resolution_of(fid, sg)
        } else {
            Resolution::Absent
        };
        (resolution, Some(self.field(fid)))
    }

    /// [`Self::resolution`] for a field already looked up, in a subgraph known to
    /// define its parent type.
    fn resolution_of(&self, fid: FieldId, sg: SubgraphId) -> Resolution<'_> {
        let meta = self.field(fid);
        if meta.via_interface_object {
            return Resolution::Absent;
        }
        if meta.resolvers.is_empty() {
            return Resolution::Resolvable(None);
        }
        match meta.resolvers.iter().find(|r| r.subgraph == sg) {
            None => Resolution::Absent,
            Some(r) if r.external || r.used_overridden => Resolution::External,
            Some(r) => {
                let label_enabled = |label: &String| self.enabled_override_labels.contains(label);
                match (&r.override_from, &r.override_label) {
                    // Progressive override not enabled: the overriding side does not resolve yet.
                    (Some(_), Some(label)) if !label_enabled(label) => Resolution::External,
                    // The overridden side keeps resolving until the label is enabled.
                    (None, Some(label)) if label_enabled(label) => Resolution::External,
                    _ => Resolution::Resolvable(Some(r)),
                }
            }
        }
    }

    /// Subgraphs that resolve `ty.field`, in supergraph order.
    pub fn resolvers_of(&self, ty: &str, field: &str) -> Vec<SubgraphId> {
        let Some(tid) = self.type_id(ty) else {
            return Vec::new();
        };
        let Some(fid) = self.field_of(tid, field) else {
            return Vec::new();
        };
        self.ty(tid)
            .subgraphs
            .iter()
            .map(|t| t.subgraph)
            .filter(|sg| matches!(self.resolution_of(fid, *sg), Resolution::Resolvable(_)))
            .collect()
    }

    /// Whether `sg` knows that object `member` belongs to abstract type `abstract_ty`.
    pub fn is_possible_in_subgraph(&self, abstract_ty: &str, member: &str, sg: SubgraphId) -> bool {
        if abstract_ty == member {
            return true;
        }
        let Some(aid) = self.type_id(abstract_ty) else {
            return false;
        };
        let abs = self.ty(aid);
        match abs.kind {
            // join v0.2 has no @join__unionMember: any member the subgraph knows.
            TypeKind::Union if abs.union_members.is_empty() => {
                abs.possible_types.iter().any(|p| p == member)
                    && self.type_in_subgraph(member, sg).is_some()
            }
            TypeKind::Union => abs
                .union_members
                .iter()
                .any(|(s, m)| *s == sg && m == member),
            TypeKind::Interface => self.type_id(member).is_some_and(|mid| {
                self.ty(mid)
                    .implements
                    .iter()
                    .any(|(s, i)| *s == sg && i == abstract_ty)
            }),
            _ => false,
        }
    }
}

impl FederationMeta {
    pub fn kind(&self, ty: &str) -> Option<TypeKind> {
        self.type_id(ty).map(|id| self.ty(id).kind)
    }

    pub fn field_meta(&self, ty: &str, field: &str) -> Option<&FieldMeta> {
        self.field_id(ty, field).map(|id| self.field(id))
    }

    /// Object types of `ty`: itself for an object, its members/implementers otherwise.
    pub fn possible_types(&self, ty: &str) -> Vec<Name> {
        match self.type_id(ty) {
            Some(id) if self.ty(id).kind == TypeKind::Object => vec![self.ty(id).name.clone()],
            Some(id) => self.ty(id).possible_types.clone(),
            None => Vec::new(),
        }
    }

    /// [`Self::possible_types`] without copying the names.
    pub fn possible_types_ref(&self, ty: &str) -> &[Name] {
        match self.type_id(ty) {
            Some(id) if self.ty(id).kind == TypeKind::Object => {
                std::slice::from_ref(&self.ty(id).name)
            }
            Some(id) => &self.ty(id).possible_types,
            None => &[],
        }
    }

    /// The object types whose objects carry `context`: those setting it, and the
    /// members and implementers of abstract types setting it.
    pub fn context_setters(&self, context: &str) -> Vec<Name> {
        let mut out: Vec<Name> = Vec::new();
        for t in self
            .types
            .iter()
            .filter(|t| t.contexts.iter().any(|c| c == context))
        {
            for o in self.possible_types_ref(&t.name) {
                if !out.contains(o) {
                    out.push(o.clone());
                }
            }
        }
        out
    }

    /// Whether a value of object/interface `sub` is always a `sup`.
    pub fn is_subtype_or_same(&self, sup: &str, sub: &str) -> bool {
        if sup == sub {
            return true;
        }
        let sub_possible = self.possible_types_ref(sub);
        let sup_possible = self.possible_types_ref(sup);
        !sub_possible.is_empty() && sub_possible.iter().all(|p| sup_possible.contains(p))
    }
}

#[cfg(test)]
mod tests {
    use super::{SelTree, SelTreeItem};
    use apollo_compiler::ast::{Argument, Value};
    use apollo_compiler::{Name, Node, name};

    fn field(name: Name, alias: Option<Name>, currency: Option<&str>) -> SelTreeItem {
        let args = currency
            .map(|c| {
                vec![Node::new(Argument {
                    name: name!("currency"),
                    value: Node::new(Value::String(c.to_string())),
                })]
            })
            .unwrap_or_default();
        SelTreeItem::Field {
            name,
            alias,
            args,
            sub: SelTree::default(),
        }
    }

    #[test]
    fn requires_fields_with_other_arguments_conflict() {
        let key = SelTree {
            items: vec![field(name!("upc"), None, None)],
        };
        let usd = SelTree {
            items: vec![
                field(name!("upc"), None, None),
                field(name!("price"), Some(name!("price__req_0")), Some("USD")),
            ],
        };
        let eur = SelTree {
            items: vec![field(
                name!("price"),
                Some(name!("price__req_1")),
                Some("EUR"),
            )],
        };
        assert!(!key.conflicts_with(&usd));
        assert!(!usd.conflicts_with(&usd));
        assert!(usd.conflicts_with(&eur));
        let mut merged = key.clone();
        merged.merge(&usd);
        merged.merge(&usd);
        assert_eq!(merged, usd, "the same aliased field merges into one");
    }
}
