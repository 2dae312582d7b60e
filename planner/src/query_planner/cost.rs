//! Estimates that rank candidate subgraphs: how many fields planning a selection in a
//! subgraph would have to fetch elsewhere, without planning it.

use super::groups::Planner;
use super::selection::{SelectedField, Selection, fields_applying_to, narrow_provided};
use apollo_compiler::Name;
use graphfleet_federation::meta::{Resolution, SelTree, SubgraphId, TypeKind};

impl<'a> Planner<'a> {
    /// A bounded estimate of planning `sels` (on `ty`) in subgraph `sg`: the fields that
    /// would need a jump to another subgraph (not followed further), and the fields
    /// resolved there. Linear in the size of the selection. A type condition no object
    /// of which can come from `sg` counts `miss` jumps.
    pub(super) fn cost(
        &self,
        sg: SubgraphId,
        ty: &Name,
        sels: &[Selection],
        provided: Option<&SelTree>,
        miss: usize,
    ) -> (usize, usize) {
        let (direct, deeper, local) = self.cost_level(sg, ty, sels, provided, miss);
        (usize::from(direct) + deeper, local)
    }

    /// [`Self::cost`] of one selection set: whether any of its fields (on whichever type
    /// condition) jumps, counted once since the jumps from objects at one path share a
    /// fetch, the jumps further down, and the fields resolved here.
    fn cost_level(
        &self,
        sg: SubgraphId,
        ty: &Name,
        sels: &[Selection],
        provided: Option<&SelTree>,
        miss: usize,
    ) -> (bool, usize, usize) {
        let meta = self.meta;
        let (mut direct, mut jumps, mut local) = (false, 0, 0);
        let field =
            |this: &Self,
             f: &SelectedField,
             provided: Option<&SelTree>,
             (direct, jumps, local): (&mut bool, &mut usize, &mut usize)| {
                match this.cost_field(sg, ty, f, provided, miss) {
                    // The field itself is elsewhere (see `cost_field`).
                    (1, 0) => *direct = true,
                    (j, l) => {
                        *jumps += j;
                        *local += l;
                    }
                }
            };
        if meta.kind(ty) == Some(TypeKind::Object) {
            let provided = narrow_provided(provided, ty);
            let mut fields = Vec::new();
            fields_applying_to(self.meta, sels, ty, &mut fields);
            for f in fields {
                field(self, f, provided, (&mut direct, &mut jumps, &mut local));
            }
            return (direct, jumps, local);
        }
        for sel in sels {
            match sel {
                // Planned here only if every possible type here resolves it here too
                // (see `plan_selections`); else each concrete type hops.
                Selection::Field(f)
                    if f.name != "__typename"
                        && !meta
                            .possible_types_ref(ty)
                            .iter()
                            .filter(|o| meta.is_possible_in_subgraph(ty, o, sg))
                            .all(|o| self.resolvable_here(o, f, sg, provided)) =>
                {
                    direct = true;
                }
                Selection::Field(f) => {
                    field(self, f, provided, (&mut direct, &mut jumps, &mut local))
                }
                Selection::Fragment(Some(tc), children) if !meta.is_subtype_or_same(tc, ty) => {
                    let possible_here = meta
                        .possible_types_ref(tc)
                        .iter()
                        .any(|o| meta.is_possible_in_subgraph(ty, o, sg));
                    if possible_here {
                        let (d, j, l) = self.cost_level(sg, tc, children, provided, miss);
                        direct |= d;
                        jumps += j;
                        local += l;
                    } else {
                        jumps += miss;
                    }
                }
                Selection::Fragment(_, children) => {
                    let (d, j, l) = self.cost_level(sg, ty, children, provided, miss);
                    direct |= d;
                    jumps += j;
                    local += l;
                }
            }
        }
        (direct, jumps, local)
    }

    /// [`Self::cost`] of one field of `ty` (the same as `cost` of a selection holding
    /// only that field, without building one).
    pub(super) fn cost_field(
        &self,
        sg: SubgraphId,
        ty: &Name,
        f: &SelectedField,
        provided: Option<&SelTree>,
        miss: usize,
    ) -> (usize, usize) {
        if f.name == "__typename" {
            return (0, 0);
        }
        // `resolvable_here`, with the field's metadata from the same lookup.
        let (resolution, fm) = self.meta.resolution_and_meta(ty, &f.name, sg);
        let here = match resolution {
            Resolution::Resolvable(r) => r.is_none_or(|r| !r.needs_inputs()),
            Resolution::External => provided.is_some_and(|p| p.field(&f.name).is_some()),
            Resolution::Absent => false,
        };
        if !here {
            return (1, 0);
        }
        if f.children.is_empty() {
            return (0, 1);
        }
        let Some(fm) = fm else {
            return (0, 1);
        };
        let child_provided = match resolution {
            Resolution::Resolvable(Some(r)) if r.provides.is_some() => r.provides.as_ref(),
            _ => provided.and_then(|p| p.field(&f.name)),
        };
        let (j, l) = self.cost(sg, &fm.output, &f.children, child_provided, miss);
        (j, 1 + l)
    }
}
