//! Entity hops: leaving a subgraph for another through an entity key (fetching the
//! key, or first another subgraph's key, here), `@interfaceObject` types, and the
//! `_entities` group a hop lands in.

use super::error::PlanError;
use super::groups::{GroupId, MAX_HOPS, Planner, SelectionStep};
use super::plan::PathElem;
use super::selection::{SelectedField, Selection, list_depth, selections_from_tree};
use crate::operation::DeferMask;
use apollo_compiler::Name;
use graphfleet_federation::meta::{
    FederationMeta, Resolution, SelTree, SelTreeItem, SubgraphId, TypeKind,
};

impl<'a> Planner<'a> {
    /// `ty` is an `@interfaceObject` in this subgraph: its `__typename` is the interface
    /// name, so the concrete type and concrete-only fields come from a subgraph that owns
    /// the interface, through an `_entities` fetch keyed by the interface's key.
    pub(super) fn plan_interface_object(
        &mut self,
        g: GroupId,
        steps: &[SelectionStep],
        ty: &Name,
        sels: &[Selection],
        rpath: &[PathElem],
        provided: Option<&'a SelTree>,
    ) -> Result<(), PlanError> {
        let meta = self.meta;
        let sg = self.groups[g].subgraph;
        // Fragments that always apply (`... on <the interface>`, no condition) are
        // their fields: only concrete type conditions need the owner.
        let mut flat = Vec::with_capacity(sels.len());
        inline_always_applying(meta, ty, sels, &mut flat);
        let mut remote = Vec::new();
        for sel in &flat {
            match sel {
                Selection::Field(f)
                    if f.name != "__typename" && self.resolvable_here(ty, f, sg, provided) =>
                {
                    self.plan_field(g, steps, ty, f, rpath, provided, false)?;
                }
                // Another `@interfaceObject` subgraph resolves it: a hop there with the
                // interface's key; the owner is needed only for concrete types.
                Selection::Field(f)
                    if f.name != "__typename" && self.other_interface_object(ty, f, sg) =>
                {
                    self.jump(g, steps, ty, f, rpath, provided)?;
                }
                other => remote.push(other.clone()),
            }
        }
        if remote.is_empty() {
            return Ok(());
        }
        let owner = meta
            .ty(meta.type_id(ty).expect("planned types exist"))
            .subgraphs
            .iter()
            .find_map(|t| {
                (!t.interface_object)
                    .then(|| {
                        self.usable_key(ty, t.subgraph, sg, provided)
                            .map(|k| (t.subgraph, k))
                    })
                    .flatten()
            });
        let Some((owner, key)) = owner else {
            return Err(PlanError::NoKey {
                ty: ty.to_string(),
                field: "__typename".to_string(),
                from: meta.subgraph(sg).name.clone(),
            });
        };
        self.add_typename(g, steps);
        self.plan_selections(g, steps, ty, &selections_from_tree(key), rpath, provided)?;
        let child_key = (g, owner, rpath.to_vec());
        let g2 = match self.child_groups.get(&child_key) {
            Some(g2) => *g2,
            None => {
                let g2 = self.new_group(owner, rpath.to_vec(), true, Some(g));
                self.child_groups.insert(child_key, g2);
                g2
            }
        };
        // The objects carry the interface name as __typename until the owner answers.
        self.add_rep_matching(g2, ty, std::slice::from_ref(ty), None, key.clone());
        self.add_fragment(g2, &[], ty);
        self.plan_selections(
            g2,
            &[SelectionStep::Fragment(ty.clone())],
            ty,
            &remote,
            rpath,
            None,
        )?;
        self.created_entity_groups.push(g2);
        Ok(())
    }

    /// Whether every subgraph resolving `ty.f` sees `ty` as an `@interfaceObject` too
    /// (so a representation naming the interface suffices there).
    fn other_interface_object(&self, ty: &str, f: &SelectedField, sg: SubgraphId) -> bool {
        let resolvers = self.meta.resolvers_of(ty, &f.name);
        !resolvers.is_empty()
            && resolvers.iter().all(|s| {
                *s != sg
                    && self
                        .meta
                        .type_in_subgraph(ty, *s)
                        .is_some_and(|t| t.interface_object)
            })
    }

    /// Whether composite field `ty.f`, resolvable in `sg` but with parts of its
    /// selection only elsewhere, is better fetched whole from another subgraph reached
    /// through a key of entity `ty`: one hop at the parent instead of hops for the
    /// objects below it (a list's items, each a representation). Sets
    /// `next_jump_avoids`, so `jump` skips `sg` and prefers where the field is resolved
    /// whole.
    pub(super) fn better_elsewhere(
        &mut self,
        sg: SubgraphId,
        ty: &Name,
        f: &SelectedField,
        provided: Option<&SelTree>,
    ) -> bool {
        // Type conditions that cannot occur in a subgraph cost nothing here: no
        // object of theirs comes from there, wherever the field is fetched.
        // Only a list's items multiply hops; for a single object it is one hop either way.
        let list = self
            .meta
            .field_meta(ty, &f.name)
            .is_some_and(|fm| list_depth(&fm.ty) > 0);
        if !list || f.children.is_empty() || self.cost_field(sg, ty, f, provided, 0).0 == 0 {
            return false;
        }
        // A field `sg` has only through `@provides` stays here: the subgraph says it gives
        // it with the parent (its entities may not be resolvable elsewhere by this path,
        // e.g. nested-provides), and the hop below goes from what it provided.
        if matches!(self.meta.resolution(ty, &f.name, sg), Resolution::External) {
            return false;
        }
        let whole = self.meta.resolvers_of(ty, &f.name).into_iter().any(|t| {
            t != sg
                && self.usable_key(ty, t, sg, provided).is_some()
                && self.cost_field(t, ty, f, None, 0).0 == 0
        });
        if whole {
            self.next_jump_avoids = Some(sg);
        }
        whole
    }

    /// A key of `ty` in `target` whose fields subgraph `from` can resolve.
    fn usable_key(
        &self,
        ty: &str,
        target: SubgraphId,
        from: SubgraphId,
        provided: Option<&SelTree>,
    ) -> Option<&'a SelTree> {
        let meta = self.meta;
        let keys = &meta.type_in_subgraph(ty, target)?.keys;
        keys.iter()
            .filter(|k| k.resolvable)
            .map(|k| &k.fields)
            .find(|k| self.available(ty, k, from, provided))
    }

    /// Whether subgraph `sg` can resolve every field of `tree` on `ty` by itself.
    fn available(
        &self,
        ty: &str,
        tree: &SelTree,
        sg: SubgraphId,
        provided: Option<&SelTree>,
    ) -> bool {
        tree.items.iter().all(|item| match item {
            SelTreeItem::Field { name, sub, .. } => {
                let ok = match self.meta.resolution(ty, name, sg) {
                    Resolution::Resolvable(r) => r.is_none_or(|r| !r.needs_inputs()),
                    Resolution::External => provided.is_some_and(|p| p.field(name).is_some()),
                    Resolution::Absent => false,
                };
                ok && (sub.items.is_empty()
                    || self.meta.field_meta(ty, name).is_some_and(|fm| {
                        self.available(&fm.output, sub, sg, provided.and_then(|p| p.field(name)))
                    }))
            }
            SelTreeItem::Fragment { .. } => true,
        })
    }

    /// Plans `f` of `ty` in another subgraph: the entity's key (and `@requires` fields)
    /// fetched in group `g`, the field in an `_entities` group below it.
    pub(super) fn jump(
        &mut self,
        g: GroupId,
        steps: &[SelectionStep],
        ty: &Name,
        f: &SelectedField,
        rpath: &[PathElem],
        provided: Option<&'a SelTree>,
    ) -> Result<(), PlanError> {
        let meta = self.meta;
        let from = self.groups[g].subgraph;
        // Where the entity group merges: a trailing type condition is redundant there
        // (representations already match `ty` only), so `... on A` and `... on B` jumps
        // at one path share a fetch; fields below keep the typed `rpath`.
        let mpath = trim_type_conds(rpath);
        let mut candidates = meta.resolvers_of(ty, &f.name);
        if let Some(avoid) = self.next_jump_avoids.take() {
            // Re-planning a wrapped field: elsewhere, preferring where it is resolved whole.
            candidates.retain(|s| *s != avoid);
            candidates.sort_by_cached_key(|s| self.cost_field(*s, ty, f, None, 1).0);
        }
        if candidates.is_empty() {
            // A concrete type's field contributed by an @interfaceObject: jump as the interface.
            let via = meta.types.iter().find(|t| {
                t.kind == TypeKind::Interface
                    && t.possible_types.contains(ty)
                    && !meta.resolvers_of(&t.name, &f.name).is_empty()
            });
            if let Some(interface) = via {
                let interface = interface.name.clone();
                return self.jump(g, steps, &interface, f, rpath, provided);
            }
            return Err(PlanError::NoResolver {
                ty: ty.to_string(),
                field: f.name.to_string(),
            });
        }
        // Each candidate's usable key, computed at most once.
        let mut usable: Vec<Option<Option<&'a SelTree>>> = vec![None; candidates.len()];
        let mut usable_at = |this: &Self, i: usize| {
            *usable[i].get_or_insert_with(|| this.usable_key(ty, candidates[i], from, provided))
        };
        let existing = (0..candidates.len()).find(|i| {
            self.child_groups
                .contains_key(&(g, candidates[*i], mpath.to_vec()))
                && usable_at(self, *i).is_some()
        });
        let target =
            existing.or_else(|| (0..candidates.len()).find(|i| usable_at(self, *i).is_some()));
        // No key of the target is available here: fetch one first from yet another
        // subgraph (like a @requires), then jump.
        let (target, key, key_hop) = match target {
            Some(i) => {
                let key = usable_at(self, i).expect("target was chosen for having a usable key");
                (candidates[i], key, false)
            }
            None => {
                let indirect = candidates.iter().copied().find_map(|s| {
                    let keys = &meta.type_in_subgraph(ty, s)?.keys;
                    // A key containing the field itself cannot be fetched first.
                    keys.iter()
                        .find(|k| k.resolvable && k.fields.field(&f.name).is_none())
                        .map(|k| (s, &k.fields))
                });
                let Some((t, key)) = indirect.filter(|_| self.hop_depth < MAX_HOPS) else {
                    let err = PlanError::NoKey {
                        ty: ty.to_string(),
                        field: f.name.to_string(),
                        from: meta.subgraph(from).name.clone(),
                    };
                    // Where the type is a value type (no key), it is reached through its
                    // parent field; an entity whose keys cannot be had stays unreachable.
                    let keyless = candidates.iter().any(|s| {
                        meta.type_in_subgraph(ty, *s)
                            .is_none_or(|t| !t.keys.iter().any(|k| k.resolvable))
                    });
                    if !keyless {
                        return Err(err);
                    }
                    return self.wrap_in_parent(g, steps, f, err);
                };
                (t, key, true)
            }
        };
        self.add_typename(g, steps);
        let before_key = self.created_entity_groups.len();
        self.hop_depth += 1;
        let planned_key =
            self.plan_selections(g, steps, ty, &selections_from_tree(key), rpath, provided);
        self.hop_depth -= 1;
        planned_key?;
        let key_groups: Vec<GroupId> = if key_hop {
            self.created_entity_groups[before_key..].to_vec()
        } else {
            Vec::new()
        };

        let mut needed = key_groups;
        let mut rep_fields = key.clone();
        let requires = match meta.resolution(ty, &f.name, target) {
            Resolution::Resolvable(Some(r)) => r.requires.as_ref(),
            _ => None,
        };
        if let Some(requires) = requires {
            let requires = self.alias_requires(requires);
            let before = self.created_entity_groups.len();
            self.plan_selections(
                g,
                steps,
                ty,
                &selections_from_tree(&requires),
                rpath,
                provided,
            )?;
            needed.extend_from_slice(&self.created_entity_groups[before..]);
            rep_fields.merge(&requires);
        }
        let context_arguments = match meta.resolution(ty, &f.name, target) {
            Resolution::Resolvable(Some(r)) => r.context_arguments.as_slice(),
            _ => &[],
        };
        let mut contextual = None;
        if !context_arguments.is_empty() {
            let before = self.created_entity_groups.len();
            contextual = Some(self.plan_contexts(f, context_arguments)?);
            needed.extend_from_slice(&self.created_entity_groups[before..]);
        }
        // Planned after what it needs, so a group that needs none of its own results.
        let tag = self.tag_of(g, f);
        let g2 = self.entity_group(g, target, ty, mpath, &rep_fields, &needed, tag);
        for d in needed {
            self.add_dependency(g2, d);
        }
        self.add_rep(g2, ty, target, rep_fields);
        self.add_fragment(g2, &[], ty);
        let sent = match contextual {
            Some((sent, variables)) => {
                self.group_mut(g2).contexts.extend(variables);
                std::borrow::Cow::Owned(sent)
            }
            None => std::borrow::Cow::Borrowed(f),
        };
        self.plan_field(
            g2,
            &[SelectionStep::Fragment(ty.clone())],
            ty,
            &sent,
            rpath,
            None,
            true,
        )?;
        self.created_entity_groups.push(g2);
        Ok(())
    }

    /// The `_entities` group below `g` for `target` at `rpath` that can take a field
    /// needing groups `needed` first: not one of them nor a group they wait for (that
    /// would be a cycle: e.g. a `@requires` field fetched from the same subgraph as the
    /// field requiring it), and with a representation of `ty` compatible with `rep`.
    /// A new group when none fits. Only a group made for payload `tag` fits (`@defer`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn entity_group(
        &mut self,
        g: GroupId,
        target: SubgraphId,
        ty: &Name,
        rpath: &[PathElem],
        rep: &SelTree,
        needed: &[GroupId],
        tag: DeferMask,
    ) -> GroupId {
        let child_key = (g, target, rpath.to_vec());
        let first = self.child_groups.get(&child_key).copied();
        let others = self.groups.ids().filter(|i| {
            let gr = &self.groups[*i];
            Some(*i) != first
                && gr.is_entity
                && gr.parent == Some(g)
                && gr.subgraph == target
                && gr.merge_paths.len() == 1
                && gr.merge_paths[0] == rpath
        });
        let candidates: Vec<GroupId> = first.into_iter().chain(others).collect();
        let fits = |this: &Self, c: GroupId| {
            this.groups[c].tag == tag
                && !needed.iter().any(|n| this.waits_for(*n, c))
                && this.groups[c]
                    .representations
                    .iter()
                    .all(|r| &r.type_condition != ty || !r.fields.conflicts_with(rep))
        };
        if let Some(c) = candidates.into_iter().find(|c| fits(self, *c)) {
            return c;
        }
        let g2 = self.new_group(target, rpath.to_vec(), true, Some(g));
        self.group_mut(g2).tag = tag;
        self.child_groups.entry(child_key).or_insert(g2);
        g2
    }

    /// The payload whose fetch `f` belongs in when planned from group `g`: `g`'s own
    /// when `g`'s payload selects it (or it is a key or `@requires` field, which serve
    /// whatever needs them), else the first payload selecting it.
    pub(super) fn tag_of(&self, g: GroupId, f: &SelectedField) -> DeferMask {
        let tag = self.groups[g].tag;
        if f.defer == 0 || f.defer & tag != 0 {
            tag
        } else {
            1 << f.defer.trailing_zeros()
        }
    }

    /// Plans `f`, which group `g`'s subgraph resolves but only later payloads select
    /// (`@defer`), in an `_entities` fetch of its own to the same subgraph through the
    /// entity's key, so `g`'s payload does not wait for it. False (nothing planned)
    /// where that cannot be done: no key of `ty` there, a field needing inputs, or a
    /// mutation.
    pub(super) fn defer_apart(
        &mut self,
        g: GroupId,
        steps: &[SelectionStep],
        ty: &Name,
        f: &SelectedField,
        rpath: &[PathElem],
        provided: Option<&'a SelTree>,
    ) -> Result<bool, PlanError> {
        let meta = self.meta;
        let sg = self.groups[g].subgraph;
        if self.is_mutation || self.hop_depth >= MAX_HOPS {
            return Ok(false);
        }
        if let Resolution::Resolvable(Some(r)) = meta.resolution(ty, &f.name, sg)
            && r.needs_inputs()
        {
            return Ok(false);
        }
        let Some(key) = self.usable_key(ty, sg, sg, provided) else {
            return Ok(false);
        };
        let mpath = trim_type_conds(rpath);
        self.add_typename(g, steps);
        self.hop_depth += 1;
        let planned_key =
            self.plan_selections(g, steps, ty, &selections_from_tree(key), rpath, provided);
        self.hop_depth -= 1;
        planned_key?;
        let tag = self.tag_of(g, f);
        let g2 = self.entity_group(g, sg, ty, mpath, key, &[], tag);
        self.add_rep(g2, ty, sg, key.clone());
        self.add_fragment(g2, &[], ty);
        self.plan_field(
            g2,
            &[SelectionStep::Fragment(ty.clone())],
            ty,
            f,
            rpath,
            None,
            false,
        )?;
        self.created_entity_groups.push(g2);
        Ok(true)
    }
}

/// `path` without its trailing type conditions.
fn trim_type_conds(path: &[PathElem]) -> &[PathElem] {
    let end = path
        .iter()
        .rposition(|p| !matches!(p, PathElem::TypeCond(_)))
        .map_or(0, |i| i + 1);
    &path[..end]
}

/// `sels` with every fragment whose condition `ty` always meets replaced by its
/// selections (recursively), into `out`.
fn inline_always_applying(
    meta: &FederationMeta,
    ty: &Name,
    sels: &[Selection],
    out: &mut Vec<Selection>,
) {
    for sel in sels {
        match sel {
            Selection::Fragment(tc, children)
                if tc.as_ref().is_none_or(|tc| meta.is_subtype_or_same(tc, ty)) =>
            {
                inline_always_applying(meta, ty, children, out);
            }
            other => out.push(other.clone()),
        }
    }
}
