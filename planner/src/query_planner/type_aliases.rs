//! Response keys selected with different types in one selection set of a subgraph
//! request, aliased apart so the request is valid.

use super::groups::{GroupId, Planner, SubgraphSelection};
use crate::operation::OpIr;
use apollo_compiler::Name;
use apollo_compiler::ast::Type;
use graphfleet_federation::meta::SubgraphId;

impl<'a> Planner<'a> {
    /// A response key selected with different types in one selection set (fields of
    /// sibling type fragments, e.g. `User.id: ID!` and `Admin.id: ID`) is invalid in the
    /// subgraph request: every occurrence whose type is not the key's first one in this
    /// fetch gets the alias `<key>__t<n>` (one per type, so the fields of merged sibling
    /// selections agree too). Returns `(alias, key)` for the response.
    pub(super) fn alias_type_conflicts(&mut self, g: GroupId, ir: &OpIr) -> Vec<(Name, Name)> {
        if !has_repeated_keys(&self.groups[g].selection) {
            // Every key once per selection set: no key can have two types.
            return Vec::new();
        }
        let sg = self.groups[g].subgraph;
        let root = (!self.groups[g].is_entity).then(|| ir.root_type().clone());
        let mut scan = TypeScan::default();
        let mut level = Vec::new();
        let sel = &self.groups[g].selection;
        self.scan_types(sel, root.as_ref(), sg, &mut level, &mut scan);
        if scan.conflicting.is_empty() {
            return Vec::new();
        }
        let mut sel = std::mem::take(&mut self.groups[g].selection);
        let mut renames = Vec::new();
        self.alias_types(&mut sel, root.as_ref(), sg, &scan, &mut renames);
        self.groups[g].selection = sel;
        renames
    }

    /// The type of `parent.name` in `sg` (text) and the type its selection applies to.
    fn sg_field_type(
        &self,
        parent: Option<&Name>,
        name: &Name,
        sg: SubgraphId,
    ) -> (Option<TypeText<'a>>, Option<&'a Name>) {
        let Some(parent) = parent.filter(|_| !name.starts_with("__")) else {
            return (None, None);
        };
        let meta = self.meta;
        let Some(fm) = meta.field_meta(parent, name) else {
            return (None, None);
        };
        let resolver = fm.resolvers.iter().find(|r| r.subgraph == sg);
        let output = resolver
            .and_then(|r| r.output.as_ref())
            .unwrap_or(&fm.output);
        // As `FederationMeta::field_type_in`, without printing the type.
        let text = match resolver.and_then(|r| r.subgraph_type.as_deref()) {
            Some(given) => TypeText::Given(given),
            None => TypeText::Super(&fm.ty),
        };
        (Some(text), Some(output))
    }

    fn scan_types(
        &self,
        items: &[SubgraphSelection],
        parent: Option<&Name>,
        sg: SubgraphId,
        level: &mut Vec<(Name, TypeText<'a>)>,
        scan: &mut TypeScan<'a>,
    ) {
        for item in items {
            match item {
                SubgraphSelection::Field { key, name, sub, .. } => {
                    let (ty, child) = self.sg_field_type(parent, name, sg);
                    if let Some(ty) = ty {
                        match scan.types.iter_mut().find(|(k, _)| k == key) {
                            Some((_, types)) if !types.contains(&ty) => types.push(ty),
                            Some(_) => {}
                            None => scan.types.push((key.clone(), vec![ty])),
                        }
                        let clash = level.iter().any(|(k, t)| k == key && *t != ty);
                        if clash && !scan.conflicting.contains(key) {
                            scan.conflicting.push(key.clone());
                        }
                        level.push((key.clone(), ty));
                    }
                    if let Some(sub) = sub {
                        self.scan_types(sub, child, sg, &mut Vec::new(), scan);
                    }
                }
                // A fragment's fields belong to the enclosing selection set.
                SubgraphSelection::Fragment {
                    type_condition,
                    sub,
                } => self.scan_types(sub, Some(type_condition), sg, level, scan),
            }
        }
    }

    fn alias_types(
        &self,
        items: &mut [SubgraphSelection],
        parent: Option<&Name>,
        sg: SubgraphId,
        scan: &TypeScan<'a>,
        renames: &mut Vec<(Name, Name)>,
    ) {
        for item in items {
            match item {
                SubgraphSelection::Field { key, name, sub, .. } => {
                    let (ty, child) = self.sg_field_type(parent, name, sg);
                    if let Some(sub) = sub {
                        self.alias_types(sub, child, sg, scan, renames);
                    }
                    let Some(ty) = ty.filter(|_| scan.conflicting.contains(key)) else {
                        continue;
                    };
                    let n = scan
                        .types
                        .iter()
                        .find(|(k, _)| k == key)
                        .and_then(|(_, types)| types.iter().position(|t| *t == ty))
                        .unwrap_or(0);
                    if n > 0 {
                        let alias = Name::new(&format!("{key}__t{n}"))
                            .expect("a name with a suffix is a name");
                        if !renames.iter().any(|(a, _)| *a == alias) {
                            renames.push((alias.clone(), key.clone()));
                        }
                        *key = alias;
                    }
                }
                SubgraphSelection::Fragment {
                    type_condition,
                    sub,
                } => {
                    let tc = type_condition.clone();
                    self.alias_types(sub, Some(&tc), sg, scan, renames);
                }
            }
        }
    }
}

/// Whether some selection set of `items` (fragments inlined into it, as
/// `Planner::scan_types` sees it) selects one response key more than once.
fn has_repeated_keys(items: &[SubgraphSelection]) -> bool {
    fn collect<'s>(
        items: &'s [SubgraphSelection],
        keys: &mut Vec<&'s str>,
        subs: &mut Vec<&'s [SubgraphSelection]>,
    ) {
        for item in items {
            match item {
                SubgraphSelection::Field { key, sub, .. } => {
                    keys.push(key.as_str());
                    if let Some(sub) = sub {
                        subs.push(sub);
                    }
                }
                SubgraphSelection::Fragment { sub, .. } => collect(sub, keys, subs),
            }
        }
    }
    let (mut keys, mut subs) = (Vec::new(), Vec::new());
    collect(items, &mut keys, &mut subs);
    keys.sort_unstable();
    keys.windows(2).any(|w| w[0] == w[1]) || subs.into_iter().any(has_repeated_keys)
}

/// A field's type in a subgraph, compared as text: as given by `@join__field(type:)`,
/// else the supergraph's (printed only to compare with a given one).
#[derive(Debug, Clone, Copy)]
enum TypeText<'a> {
    Given(&'a str),
    Super(&'a Type),
}

impl PartialEq for TypeText<'_> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (TypeText::Given(a), TypeText::Given(b)) => a == b,
            // One printed form per type structure.
            (TypeText::Super(a), TypeText::Super(b)) => a == b,
            (TypeText::Given(g), TypeText::Super(t)) | (TypeText::Super(t), TypeText::Given(g)) => {
                *g == t.to_string()
            }
        }
    }
}

/// Response keys of one fetch and the types they are selected with.
#[derive(Default)]
struct TypeScan<'a> {
    /// Every key's distinct types, in selection order.
    types: Vec<(Name, Vec<TypeText<'a>>)>,
    /// Keys selected with two types in one selection set.
    conflicting: Vec<Name>,
}
