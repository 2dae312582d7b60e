//! Wrapping: a field no key can reach from its group (its type is keyless there) is
//! re-planned inside its parent field, fetched from another subgraph that resolves the
//! parent: beside a root fetch, beside an entity fetch, or through a hop further up.

use super::error::PlanError;
use super::groups::{GroupId, MAX_HOPS, Planner, SelectionStep};
use super::plan::PathElem;
use super::selection::{SelectedField, Selection};
use apollo_compiler::Name;
use graphfleet_federation::meta::{Resolution, SelTree, SelTreeItem, SubgraphId};

impl<'a> Planner<'a> {
    /// `f` cannot be reached from group `g` (its type has no key usable here): re-plan it
    /// wrapped in its parent field, fetched from another subgraph that resolves the parent.
    /// Recursion through `jump` wraps further up while the parents are keyless too.
    pub(super) fn wrap_in_parent(
        &mut self,
        g: GroupId,
        steps: &[SelectionStep],
        f: &SelectedField,
        err: PlanError,
    ) -> Result<(), PlanError> {
        if self.hop_depth >= MAX_HOPS {
            return Err(err);
        }
        let Some(ctx) = self
            .enclosing_fields
            .iter()
            .rev()
            .find(|c| {
                c.group == g
                    && steps.len() > c.steps.len()
                    && steps.starts_with(&c.steps)
                    && steps[c.steps.len()] == SelectionStep::Field(c.field.key.clone())
            })
            .cloned()
        else {
            return Err(err);
        };
        let mut inner = vec![Selection::Field(f.clone())];
        for step in steps[ctx.steps.len() + 1..].iter().rev() {
            match step {
                SelectionStep::Fragment(t) => {
                    inner = vec![Selection::Fragment(Some(t.clone()), inner)]
                }
                SelectionStep::Field(_) => return Err(err),
            }
        }
        let wrapped = SelectedField {
            key: ctx.field.key.clone(),
            name: ctx.field.name.clone(),
            args: ctx.field.args.clone(),
            children: inner,
            defer: f.defer,
        };
        let from = self.groups[g].subgraph;
        let entity_root = matches!(ctx.steps.as_slice(),
            [SelectionStep::Fragment(t)] if self.groups[g].is_entity && *t == ctx.ty);
        self.hop_depth += 1;
        let planned = if ctx.steps.is_empty() && !self.groups[g].is_entity {
            self.wrap_root(from, &ctx.ty, &wrapped)
        } else if entity_root && self.wrap_entity_root(g, &ctx.ty, &wrapped, &ctx.response_path)? {
            Ok(())
        } else {
            self.next_jump_avoids = Some(from);
            self.jump(
                ctx.group,
                &ctx.steps,
                &ctx.ty,
                &wrapped,
                &ctx.response_path,
                ctx.provided,
            )
        };
        self.next_jump_avoids = None;
        self.hop_depth -= 1;
        planned.map_err(|_| err)
    }

    /// Wrapping at a root field: another root fetch of the field (queries only; the
    /// results merge into the same response object).
    fn wrap_root(
        &mut self,
        from: SubgraphId,
        root: &Name,
        wrapped: &SelectedField,
    ) -> Result<(), PlanError> {
        let no_resolver = || PlanError::NoResolver {
            ty: root.to_string(),
            field: wrapped.name.to_string(),
        };
        if self.is_mutation {
            return Err(no_resolver());
        }
        let target = self
            .meta
            .resolvers_of(root, &wrapped.name)
            .into_iter()
            .filter(|s| *s != from)
            .min_by_key(|s| self.cost_field(*s, root, wrapped, None, 1).0)
            .ok_or_else(no_resolver)?;
        let existing = self
            .root_groups
            .iter()
            .copied()
            .find(|r| self.groups[*r].subgraph == target);
        let gr = match existing {
            Some(gr) => gr,
            None => {
                let gr = self.new_group(target, Vec::new(), false, None);
                self.root_groups.push(gr);
                gr
            }
        };
        self.plan_field(gr, &[], root, wrapped, &[], None, false)
    }

    /// Wrapping at the top of entity group `g`: its representation fields are already in
    /// the response, so another subgraph whose key they contain is fetched beside `g`
    /// (after the same dependencies). False when no such subgraph exists.
    fn wrap_entity_root(
        &mut self,
        g: GroupId,
        ty: &Name,
        wrapped: &SelectedField,
        rpath: &[PathElem],
    ) -> Result<bool, PlanError> {
        let meta = self.meta;
        let from = self.groups[g].subgraph;
        let Some(parent) = self.groups[g].parent else {
            return Ok(false);
        };
        let Some(have) = self.groups[g]
            .representations
            .iter()
            .find(|r| &r.type_condition == ty)
            .map(|r| r.fields.clone())
        else {
            return Ok(false);
        };
        let mut candidates: Vec<SubgraphId> = meta
            .resolvers_of(ty, &wrapped.name)
            .into_iter()
            .filter(|s| *s != from)
            .filter(|s| {
                matches!(meta.resolution(ty, &wrapped.name, *s),
                    Resolution::Resolvable(r) if r.is_none_or(|r| !r.needs_inputs()))
            })
            .collect();
        candidates.sort_by_cached_key(|s| self.cost_field(*s, ty, wrapped, None, 1).0);
        let found = candidates.into_iter().find_map(|s| {
            let keys = &meta.type_in_subgraph(ty, s)?.keys;
            keys.iter()
                .find(|k| k.resolvable && tree_contains(&have, &k.fields))
                .map(|k| (s, k.fields.clone()))
        });
        let Some((target, key)) = found else {
            return Ok(false);
        };
        let child_key = (parent, target, rpath.to_vec());
        let g3 = match self.child_groups.get(&child_key) {
            Some(g3) => *g3,
            None => {
                let g3 = self.new_group(target, rpath.to_vec(), true, Some(parent));
                self.child_groups.insert(child_key, g3);
                g3
            }
        };
        let deps = self.groups[g].depends_on.clone();
        for d in deps {
            self.add_dependency(g3, d);
        }
        self.add_rep(g3, ty, target, key);
        self.add_fragment(g3, &[], ty);
        self.plan_field(
            g3,
            &[SelectionStep::Fragment(ty.clone())],
            ty,
            wrapped,
            rpath,
            None,
            false,
        )?;
        self.created_entity_groups.push(g3);
        Ok(true)
    }
}

/// Whether every field selected by `small` is selected by `big`.
fn tree_contains(big: &SelTree, small: &SelTree) -> bool {
    small.items.iter().all(|item| match item {
        SelTreeItem::Field { name, sub, .. } => {
            big.field(name).is_some_and(|b| tree_contains(b, sub))
        }
        SelTreeItem::Fragment { .. } => false,
    })
}
