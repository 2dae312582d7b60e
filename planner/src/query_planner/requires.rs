//! `@requires` and representations: aliasing required fields that take arguments,
//! and the representation each `_entities` group sends per entity type.

use super::groups::{GroupId, Planner};
use super::plan::RepSpec;
use apollo_compiler::Name;
use graphfleet_federation::meta::{FederationMeta, SelTree, SelTreeItem, SubgraphId, TypeKind};

impl<'a> Planner<'a> {
    /// `@requires` fields with arguments get an alias (the same one for the same field
    /// and arguments), so they are fetched apart from a client field of the same name.
    pub(super) fn alias_requires(&mut self, tree: &SelTree) -> SelTree {
        let items = tree
            .items
            .iter()
            .map(|item| match item {
                SelTreeItem::Field {
                    name,
                    alias,
                    args,
                    sub,
                } => {
                    let alias = if args.is_empty() {
                        alias.clone()
                    } else {
                        let n = match self
                            .requires_aliases
                            .iter()
                            .position(|(n, a)| n == name && a == args)
                        {
                            Some(n) => n,
                            None => {
                                self.requires_aliases.push((name.clone(), args.clone()));
                                self.requires_aliases.len() - 1
                            }
                        };
                        Some(
                            Name::new(&format!("{name}__req_{n}"))
                                .expect("a name with a suffix is a name"),
                        )
                    };
                    SelTreeItem::Field {
                        name: name.clone(),
                        alias,
                        args: args.clone(),
                        sub: self.alias_requires(sub),
                    }
                }
                SelTreeItem::Fragment {
                    type_condition,
                    sub,
                } => SelTreeItem::Fragment {
                    type_condition: type_condition.clone(),
                    sub: self.alias_requires(sub),
                },
            })
            .collect();
        SelTree { items }
    }

    /// Adds to group `g` the representation of `ty` for `target` with `fields`.
    pub(super) fn add_rep(&mut self, g: GroupId, ty: &Name, target: SubgraphId, fields: SelTree) {
        let meta = self.meta;
        let interface_object = meta
            .type_in_subgraph(ty, target)
            .is_some_and(|t| t.interface_object);
        // Objects from an `@interfaceObject` subgraph carry the interface's name.
        let mut matches = meta.possible_types(ty);
        if !matches.contains(ty) && meta.kind(ty) != Some(TypeKind::Object) {
            matches.push(ty.clone());
        }
        let send = interface_object.then(|| ty.clone());
        self.add_rep_matching(g, ty, &matches, send, fields);
    }

    /// Adds `fields` to group `g`'s representation of `ty` (sent for objects whose
    /// `__typename` is in `matches`), creating it if needed.
    pub(super) fn add_rep_matching(
        &mut self,
        g: GroupId,
        ty: &Name,
        matches: &[Name],
        send_typename: Option<Name>,
        fields: SelTree,
    ) {
        let fields = concrete_fragments(self.meta, fields);
        let reps = &mut self.group_mut(g).representations;
        if let Some(rep) = reps.iter_mut().find(|r| &r.type_condition == ty) {
            rep.fields.merge(&fields);
            for m in matches {
                if !rep.matches.contains(m) {
                    rep.matches.push(m.clone());
                }
            }
            return;
        }
        reps.push(RepSpec {
            type_condition: ty.clone(),
            matches: matches.to_vec(),
            send_typename,
            fields,
        });
    }
}

/// `tree` with each type condition on an abstract type replaced by one per possible
/// object type, so a representation includes a fragment's fields only for objects
/// whose `__typename` is its type condition.
pub(super) fn concrete_fragments(meta: &FederationMeta, tree: SelTree) -> SelTree {
    let mut items = Vec::with_capacity(tree.items.len());
    for item in tree.items {
        match item {
            SelTreeItem::Field {
                name,
                alias,
                args,
                sub,
            } => items.push(SelTreeItem::Field {
                name,
                alias,
                args,
                sub: concrete_fragments(meta, sub),
            }),
            SelTreeItem::Fragment {
                type_condition,
                sub,
            } => {
                let sub = concrete_fragments(meta, sub);
                for o in meta.possible_types(&type_condition) {
                    items.push(SelTreeItem::Fragment {
                        type_condition: o,
                        sub: sub.clone(),
                    });
                }
            }
        }
    }
    SelTree { items }
}
