//! Planning fields into fetch groups: the root fields, then each selection in the
//! group of its parent when that subgraph resolves it (abstract types per possible
//! type), handing it to `hops` when it does not.

use super::error::PlanError;
use super::groups::EnclosingField;
use super::groups::{GroupId, Planner, SelectionStep, step_into};
use super::plan::PathElem;
use super::selection::{
    Normalizer, SelectedField, Selection, fields_applying_to, list_depth, narrow_provided,
};
use crate::operation::{ConditionValues, OpIr, PRIMARY};
use apollo_compiler::Name;
use apollo_compiler::ast::OperationType;
use graphfleet_federation::meta::{Resolution, SelTree, SubgraphId, TypeKind};

impl<'a> Planner<'a> {
    /// Plans the root fields, each in the root fetch of the subgraph ranked best
    /// for it, trying the next one when planning there fails.
    pub(super) fn plan_root(
        &mut self,
        ir: &OpIr,
        values: Option<ConditionValues>,
    ) -> Result<(), PlanError> {
        let root_type = ir.root_type().clone();
        let merged = self.root_fields(ir, values, &root_type)?;
        // The same fields with every condition holding: ties between subgraphs are broken
        // on them, so a variable's value does not move a root field to a subgraph the
        // whole selection avoids (`... on Book @include(if: $v) { title }` with $v false
        // leaves `{ __typename }`, which any subgraph serves).
        let whole = match values {
            Some(_) => Some(self.root_fields(ir, None, &root_type)?),
            None => None,
        };
        let fields: Vec<&SelectedField> = merged.iter().collect();
        let mutation = ir.kind() == OperationType::Mutation;
        self.is_mutation = mutation;
        let resolvers: Vec<Vec<SubgraphId>> = fields
            .iter()
            .map(|f| self.meta.resolvers_of(&root_type, &f.name))
            .collect();
        // Per root field with a choice, each candidate's estimate (jumps, local fields);
        // one candidate: nothing to rank, so no estimate either.
        let costs: Vec<Vec<(SubgraphId, (usize, usize))>> = fields
            .iter()
            .zip(&resolvers)
            .map(|(f, candidates)| {
                let rank = candidates.len() > 1;
                candidates
                    .iter()
                    .map(|sg| {
                        let cost = if rank {
                            self.cost_field(*sg, &root_type, f, None, 1)
                        } else {
                            (0, 0)
                        };
                        (*sg, cost)
                    })
                    .collect()
            })
            .collect();
        // Per candidate, the jumps it would need for the operation's other root fields
        // (every condition on, each field it resolves): the subgraph serving the rest of
        // the operation best draws a field both serve alike.
        type Estimates = Vec<(SubgraphId, (usize, usize))>;
        let every: Vec<(&Name, Estimates)> = match &whole {
            Some(w) => w
                .iter()
                .map(|f| {
                    let estimates = self
                        .meta
                        .resolvers_of(&root_type, &f.name)
                        .into_iter()
                        .map(|sg| (sg, self.cost_field(sg, &root_type, f, None, 1)))
                        .collect();
                    (&f.key, estimates)
                })
                .collect(),
            None => fields
                .iter()
                .zip(&costs)
                .map(|(f, c)| (&f.key, c.clone()))
                .collect(),
        };
        // Per root field and candidate, the estimate of the whole field (all conditions
        // on): (jumps, fields resolved there).
        let whole_estimates: Vec<Vec<(usize, usize)>> = fields
            .iter()
            .zip(&costs)
            .map(|(f, c)| {
                let all = every.iter().find(|(k, _)| **k == f.key).map(|(_, j)| j);
                c.iter()
                    .map(|(sg, estimate)| {
                        all.and_then(|a| a.iter().find(|(s, _)| s == sg))
                            .map_or(*estimate, |(_, e)| *e)
                    })
                    .collect()
            })
            .collect();
        // The other root fields' estimates there, summed: (jumps, fields resolved there).
        let others = |key: &Name, sg: SubgraphId| -> (usize, usize) {
            every
                .iter()
                .filter(|(k, _)| *k != key)
                .filter_map(|(_, c)| c.iter().find(|(s, _)| *s == sg).map(|(_, e)| *e))
                .fold((0, 0), |(j, l), (dj, dl)| (j + dj, l + dl))
        };
        // The candidates serving each root field without a jump: a later field served so
        // by a candidate draws this one there too (one fetch for both).
        let clean: Vec<Vec<SubgraphId>> = costs
            .iter()
            .map(|c| {
                c.iter()
                    .filter(|(_, (j, _))| *j == 0)
                    .map(|(sg, _)| *sg)
                    .collect()
            })
            .collect();
        for (i, f) in fields.iter().copied().enumerate() {
            let candidates = &resolvers[i];
            if candidates.is_empty() {
                return Err(PlanError::NoResolver {
                    ty: root_type.to_string(),
                    field: f.name.to_string(),
                });
            }
            // A root field only deferred fragments select is fetched apart from the
            // initial payload's fields: by the first payload selecting it.
            let tag = if f.defer & PRIMARY != 0 || f.defer == 0 {
                PRIMARY
            } else {
                1 << f.defer.trailing_zeros()
            };
            let existing_of = |this: &Self, sg: SubgraphId| {
                if mutation {
                    // Mutations run in order: only the latest root fetch may be extended.
                    this.root_groups
                        .last()
                        .copied()
                        .filter(|g| this.groups[*g].subgraph == sg)
                } else {
                    this.root_groups
                        .iter()
                        .copied()
                        .find(|g| this.groups[*g].subgraph == sg && this.groups[*g].tag == tag)
                }
            };
            // Order the candidates by the further fetches planning there would need
            // (a jump costs more than one more parallel root fetch), then by the jumps
            // of the whole field (every condition on), then by how many of the remaining
            // root fields each serves without a jump, then by the jumps the other root
            // fields would need there, then by how many it reaches at all, then by
            // fields resolved locally: its own, then the whole field's (a skipped branch
            // it provides), then the other root fields'.
            let mut order: Vec<_> = costs[i]
                .iter()
                .zip(&whole_estimates[i])
                .map(|((sg, (jumps, local)), (whole, whole_local))| {
                    let (jumps, local) = (*jumps, *local);
                    let new_fetch = usize::from(existing_of(self, *sg).is_none());
                    let served = clean[i..].iter().filter(|r| r.contains(sg)).count();
                    let reached = resolvers[i..].iter().filter(|r| r.contains(sg)).count();
                    let (others_jumps, others_local) = others(&f.key, *sg);
                    (
                        (
                            2 * jumps + new_fetch,
                            *whole,
                            std::cmp::Reverse(served),
                            others_jumps,
                            std::cmp::Reverse(reached),
                            std::cmp::Reverse(local),
                            std::cmp::Reverse(*whole_local),
                            std::cmp::Reverse(others_local),
                            sg.0,
                        ),
                        *sg,
                    )
                })
                .collect();
            order.sort();
            let mut last_err = None;
            for (n, (score, sg)) in order.iter().enumerate() {
                // Planning without jumps does not fail: no state to save then.
                let retry = n + 1 < order.len() && score.0 >= 2;
                let saved = retry.then(|| self.snapshot());
                let g = match existing_of(self, *sg) {
                    Some(g) => g,
                    None => {
                        let g = self.new_group(*sg, Vec::new(), false, None);
                        self.group_mut(g).tag = tag;
                        self.root_groups.push(g);
                        g
                    }
                };
                match self.plan_field(g, &[], &root_type, f, &[], None, false) {
                    Ok(()) => {
                        self.commit();
                        last_err = None;
                        break;
                    }
                    Err(e) => {
                        // Planning failed there: forget that attempt and try the next one.
                        if let Some(saved) = saved {
                            self.restore(saved);
                        }
                        last_err = Some(e);
                    }
                }
            }
            if let Some(e) = last_err {
                return Err(e);
            }
        }
        Ok(())
    }

    /// The operation's root fields under condition `values` (`None`: every condition
    /// holds), one per response key with its selections merged (the spec's field
    /// collection): a key selected twice is still fetched once, from one subgraph.
    fn root_fields(
        &self,
        ir: &OpIr,
        values: Option<ConditionValues>,
        root_type: &Name,
    ) -> Result<Vec<SelectedField>, PlanError> {
        let sels = Normalizer::new(self.meta, ir, values, self.budget)
            .root_selections(ir.root(), root_type)?;
        let mut fields = Vec::new();
        fields_applying_to(self.meta, &sels, root_type, &mut fields);
        let mut merged: Vec<SelectedField> = Vec::with_capacity(fields.len());
        for f in fields.into_iter().filter(|f| !f.name.starts_with("__")) {
            match merged.iter_mut().find(|m| m.key == f.key) {
                Some(m) => {
                    m.children.extend(f.children.iter().cloned());
                    m.defer |= f.defer;
                }
                None => merged.push(f.clone()),
            }
        }
        Ok(merged)
    }

    /// Whether some subgraph resolving `ty.field` knows abstract `ty` as an entity
    /// (a resolvable key on the interface, or an `@interfaceObject`), so the planner can
    /// jump on `ty` itself rather than per concrete type.
    fn abstract_entity_resolver(&self, ty: &str, field: &str) -> bool {
        let meta = self.meta;
        meta.resolvers_of(ty, field).iter().any(|s| {
            meta.type_in_subgraph(ty, *s)
                .is_some_and(|t| t.interface_object || t.keys.iter().any(|k| k.resolvable))
        })
    }

    /// Plans `sels`, selected on `ty` at `steps` of group `g` (response path `rpath`).
    pub(super) fn plan_selections(
        &mut self,
        g: GroupId,
        steps: &[SelectionStep],
        ty: &Name,
        sels: &[Selection],
        rpath: &[PathElem],
        provided: Option<&'a SelTree>,
    ) -> Result<(), PlanError> {
        let meta = self.meta;
        if meta.kind(ty) == Some(TypeKind::Object) {
            // `@provides(fields: "... on T { f }")` on an abstract field.
            let provided = narrow_provided(provided, ty);
            let mut fields = Vec::new();
            fields_applying_to(self.meta, sels, ty, &mut fields);
            for f in fields {
                self.plan_field(g, steps, ty, f, rpath, provided, false)?;
            }
            return Ok(());
        }
        let sg = self.groups[g].subgraph;
        if meta
            .type_in_subgraph(ty, sg)
            .is_some_and(|t| t.interface_object)
        {
            return self.plan_interface_object(g, steps, ty, sels, rpath, provided);
        }
        // Abstract type: the writer needs __typename to pick each object's shape.
        self.add_typename(g, steps);
        // Only the runtime types every subgraph that could produce this value knows:
        // another plan may fetch it elsewhere, and the answer must not depend on that.
        let producers = self.producers(ty);
        let possible_here: Vec<Name> = meta
            .possible_types(ty)
            .into_iter()
            .filter(|o| meta.is_possible_in_subgraph(ty, o, sg))
            .filter(|o| {
                producers
                    .iter()
                    .all(|p| meta.is_possible_in_subgraph(ty, o, *p))
            })
            .collect();
        for sel in sels {
            match sel {
                Selection::Field(f) if f.name == "__typename" => {
                    self.plan_field(g, steps, ty, f, rpath, provided, false)?;
                }
                Selection::Field(f) => {
                    // An interface field stays here only if every possible type here
                    // resolves it here too (a concrete field may be overridden away).
                    let here = self.resolvable_here(ty, f, sg, provided)
                        && possible_here
                            .iter()
                            .all(|o| self.resolvable_here(o, f, sg, provided));
                    if here {
                        self.plan_field(g, steps, ty, f, rpath, provided, false)?;
                    } else if !self.resolvable_here(ty, f, sg, provided)
                        && self.abstract_entity_resolver(ty, &f.name)
                    {
                        // The interface itself is an entity elsewhere (@key on the
                        // interface, or @interfaceObject).
                        self.jump(g, steps, ty, f, rpath, provided)?;
                    } else {
                        // Keyless abstract type: each concrete type jumps with its own key.
                        for o in &possible_here {
                            self.add_fragment(g, steps, o);
                            let inner = step_into(steps, SelectionStep::Fragment(o.clone()));
                            let opath = typed_path(rpath, o);
                            self.plan_field(g, &inner, o, f, &opath, provided, false)?;
                        }
                    }
                }
                Selection::Fragment(tc, children) => match tc {
                    Some(tc) if !meta.is_subtype_or_same(tc, ty) => {
                        let targets = meta.possible_types_ref(tc);
                        for o in possible_here.iter().filter(|o| targets.contains(o)) {
                            self.add_fragment(g, steps, o);
                            let inner = step_into(steps, SelectionStep::Fragment(o.clone()));
                            let opath = typed_path(rpath, o);
                            self.plan_selections(g, &inner, o, children, &opath, provided)?;
                        }
                    }
                    _ => self.plan_selections(g, steps, ty, children, rpath, provided)?,
                },
            }
        }
        Ok(())
    }

    /// The subgraphs that could resolve the value of abstract type `ty` being planned:
    /// those resolving each field on the way from the root, where an entity on the way
    /// may be re-entered in any subgraph with a resolvable key of it. Empty when the
    /// innermost field does not return `ty` (nothing to narrow by).
    fn producers(&self, ty: &Name) -> Vec<SubgraphId> {
        let meta = self.meta;
        let returns_ty = self.enclosing_fields.last().is_some_and(|ctx| {
            meta.resolution_and_meta(&ctx.ty, &ctx.field.name, self.groups[ctx.group].subgraph)
                .1
                .is_some_and(|f| &f.output == ty)
        });
        if !returns_ty {
            return Vec::new();
        }
        let mut reach: Option<Vec<SubgraphId>> = None;
        for ctx in &self.enclosing_fields {
            let Some(tid) = meta.type_id(&ctx.ty) else {
                return Vec::new();
            };
            let t = meta.ty(tid);
            let mut here: Vec<SubgraphId> = match reach {
                Some(r) => r,
                None => t.subgraphs.iter().map(|s| s.subgraph).collect(),
            };
            for s in &t.subgraphs {
                if s.keys.iter().any(|k| k.resolvable) && !here.contains(&s.subgraph) {
                    here.push(s.subgraph);
                }
            }
            let resolvers = meta.resolvers_of(&ctx.ty, &ctx.field.name);
            here.retain(|s| resolvers.contains(s));
            reach = Some(here);
        }
        let mut reach = reach.unwrap_or_default();
        // An `@interfaceObject` subgraph knows no concrete types: the type is learned
        // from a subgraph owning the interface, which is planned for anyway.
        reach.retain(|s| {
            meta.type_in_subgraph(ty, *s)
                .is_some_and(|t| !t.interface_object)
        });
        reach
    }

    /// Whether `ty.f` can be fetched from `sg` without anything fetched first.
    pub(super) fn resolvable_here(
        &self,
        ty: &str,
        f: &SelectedField,
        sg: SubgraphId,
        provided: Option<&SelTree>,
    ) -> bool {
        if f.name == "__typename" {
            return true;
        }
        match self.meta.resolution(ty, &f.name, sg) {
            Resolution::Resolvable(r) => r.is_none_or(|r| !r.needs_inputs()),
            Resolution::External => provided.is_some_and(|p| p.field(&f.name).is_some()),
            Resolution::Absent => false,
        }
    }

    /// Plans field `f` of `ty` in group `g`, or elsewhere when `g` cannot fetch it.
    /// `requires_satisfied`: its `@requires` fields are in the representation.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn plan_field(
        &mut self,
        g: GroupId,
        steps: &[SelectionStep],
        ty: &Name,
        f: &SelectedField,
        rpath: &[PathElem],
        provided: Option<&'a SelTree>,
        requires_satisfied: bool,
    ) -> Result<(), PlanError> {
        let meta = self.meta;
        if f.name == "__typename" {
            self.add_field(g, steps, f, false);
            return Ok(());
        }
        self.budget.check_deadline()?;
        let sg = self.groups[g].subgraph;
        let provided_sub = provided.and_then(|p| p.field(&f.name));
        let (resolution, field_meta) = meta.resolution_and_meta(ty, &f.name, sg);
        let here = match resolution {
            // A field with contextual arguments is only fetched through `_entities`,
            // where the gateway passes their values (planned in `jump`).
            Resolution::Resolvable(r) => requires_satisfied || r.is_none_or(|r| !r.needs_inputs()),
            Resolution::External => provided_sub.is_some(),
            Resolution::Absent => false,
        };
        if !here || self.better_elsewhere(sg, ty, f, provided) {
            return self.jump(g, steps, ty, f, rpath, provided);
        }
        // Only a later payload selects it (`@defer`): fetched apart when it can be.
        if self.tag_of(g, f) != self.groups[g].tag
            && self.defer_apart(g, steps, ty, f, rpath, provided)?
        {
            return Ok(());
        }
        let field_meta = field_meta.ok_or_else(|| PlanError::UnknownField {
            ty: ty.to_string(),
            field: f.name.to_string(),
        })?;
        let composite = !f.children.is_empty();
        self.add_field(g, steps, f, composite);
        if composite {
            let child_provided = match resolution {
                Resolution::Resolvable(Some(r)) if r.provides.is_some() => r.provides.as_ref(),
                _ => provided_sub,
            };
            let mut child_path = rpath.to_vec();
            child_path.push(PathElem::Key(f.key.clone()));
            child_path.extend(std::iter::repeat_n(
                PathElem::List,
                list_depth(&field_meta.ty),
            ));
            let inner = step_into(steps, SelectionStep::Field(f.key.clone()));
            // Plan against the field's type in this subgraph (`@join__field(type:)`):
            // type conditions that cannot apply there are dropped.
            let child_ty = match resolution {
                Resolution::Resolvable(Some(r)) => r.output.clone(),
                _ => None,
            }
            .unwrap_or_else(|| field_meta.output.clone());
            if child_ty != field_meta.output
                && meta.kind(&field_meta.output) != Some(TypeKind::Object)
            {
                // The response shape is still abstract: the writer needs the typename.
                self.add_typename(g, &inner);
            }
            self.enclosing_fields.push(EnclosingField {
                group: g,
                steps: steps.to_vec(),
                ty: ty.clone(),
                field: SelectedField {
                    key: f.key.clone(),
                    name: f.name.clone(),
                    args: f.args.clone(),
                    children: Vec::new(),
                    defer: f.defer,
                },
                response_path: rpath.to_vec(),
                provided,
            });
            let planned = self.plan_selections(
                g,
                &inner,
                &child_ty,
                &f.children,
                &child_path,
                child_provided,
            );
            self.enclosing_fields.pop();
            planned?;
        }
        Ok(())
    }
}

/// `rpath` narrowed to objects of type `o` (fetches planned under `... on o`).
fn typed_path(rpath: &[PathElem], o: &Name) -> Vec<PathElem> {
    let mut v = rpath.to_vec();
    v.push(PathElem::TypeCond(o.clone()));
    v
}
