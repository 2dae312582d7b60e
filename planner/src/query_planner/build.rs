//! Plan construction. Fields are assigned to fetch groups while walking the operation:
//! a field stays in the current subgraph when it can, otherwise the planner fetches the
//! entity's key (plus `@requires` fields) here and continues in an `_entities` group.

use super::plan::{EntityFetch, Fetch, PathElem, PlanNode, QueryPlan, RepSpec};
use crate::keys::KeyTable;
use crate::operation::{ConditionValues, OpIr, OpSel, SelSetId};
use apollo_compiler::ast::{Argument, OperationType, Type, Value};
use apollo_compiler::{Name, Node, name};
use graphfleet_federation::meta::{
    FederationMeta, Resolution, SelTree, SelTreeItem, SubgraphId, TypeKind,
};
use rustc_hash::FxHashMap;
use std::fmt::Write;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PlanError {
    #[error("no subgraph resolves {ty}.{field}")]
    NoResolver { ty: String, field: String },
    #[error(
        "cannot reach {ty}.{field}: no subgraph resolving it has a key that subgraph {from} can provide"
    )]
    NoKey {
        ty: String,
        field: String,
        from: String,
    },
    #[error("unknown field {ty}.{field} in the supergraph")]
    UnknownField { ty: String, field: String },
    #[error("the fetches to subgraph {subgraph} depend on each other in a cycle")]
    Cycle { subgraph: String },
}

/// A field as the planner sees it (operation fields and `@key`/`@requires` fields alike).
#[derive(Debug, Clone)]
struct PField {
    key: Name,
    name: Name,
    args: Vec<Node<Argument>>,
    children: Vec<PSel>,
}

#[derive(Debug, Clone)]
enum PSel {
    Field(PField),
    Frag(Option<Name>, Vec<PSel>),
}

fn from_ir(ir: &OpIr, set: SelSetId, values: Option<ConditionValues>) -> Vec<PSel> {
    ir.selset(set)
        .iter()
        .filter_map(|sel| match sel {
            OpSel::Field(fid) => {
                let f = ir.field(*fid);
                if f.conditions.excluded(ir, values) {
                    return None;
                }
                let mut children = f
                    .selection
                    .map(|s| from_ir(ir, s, values))
                    .unwrap_or_default();
                if f.selection.is_some() && children.is_empty() {
                    // Everything below was excluded: subgraphs still need a selection.
                    children.push(PSel::Field(PField {
                        key: name!("__typename"),
                        name: name!("__typename"),
                        args: Vec::new(),
                        children: Vec::new(),
                    }));
                }
                Some(PSel::Field(PField {
                    key: f.response_key.clone(),
                    name: f.name.clone(),
                    args: f.arguments.clone(),
                    children,
                }))
            }
            OpSel::Fragment {
                type_condition,
                conditions,
                selection,
            } => (!conditions.excluded(ir, values))
                .then(|| PSel::Frag(type_condition.clone(), from_ir(ir, *selection, values))),
        })
        .collect()
}

fn from_tree(tree: &SelTree) -> Vec<PSel> {
    tree.items
        .iter()
        .map(|item| match item {
            SelTreeItem::Field {
                name,
                alias,
                args,
                sub,
            } => PSel::Field(PField {
                key: alias.clone().unwrap_or_else(|| name.clone()),
                name: name.clone(),
                args: args.clone(),
                children: from_tree(sub),
            }),
            SelTreeItem::Fragment {
                type_condition,
                sub,
            } => PSel::Frag(Some(type_condition.clone()), from_tree(sub)),
        })
        .collect()
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Field(Name),
    Frag(Name),
}

/// A selection in a subgraph query being built.
#[derive(Debug, Clone)]
enum SgItem {
    Field {
        key: Name,
        name: Name,
        args: Vec<Node<Argument>>,
        sub: Option<Vec<SgItem>>,
    },
    Frag {
        type_condition: Name,
        sub: Vec<SgItem>,
    },
}

#[derive(Debug, Clone)]
struct Group {
    subgraph: SubgraphId,
    /// Where results merge; several when sibling fetches were combined.
    merge_paths: Vec<Vec<PathElem>>,
    entity: bool,
    sel: Vec<SgItem>,
    reps: Vec<RepSpec>,
    deps: Vec<usize>,
    parent: Option<usize>,
}

struct Planner<'a> {
    meta: &'a FederationMeta,
    groups: Vec<Group>,
    /// Entity groups in creation order, to learn which groups a `@requires` needed.
    touched: Vec<usize>,
    children: FxHashMap<(usize, SubgraphId, Vec<PathElem>), usize>,
    /// Nesting of key hops, bounded so cyclic key graphs end in an error.
    depth: usize,
    /// Root fetches (queries: one per subgraph; mutations: in order).
    roots: Vec<usize>,
    /// Composite fields being planned, innermost last: where a field that cannot be
    /// reached from a keyless type is re-planned wrapped in its parent field.
    parents: Vec<ParentCtx<'a>>,
    /// Set right before `jump` re-plans a wrapped field: the subgraph it came from.
    wrap_from: Option<SubgraphId>,
    mutation: bool,
    /// `@requires` fields with arguments, fetched under an alias (the index) so they
    /// never merge with a client field of the same name and other arguments.
    req_aliases: Vec<(Name, Vec<Node<Argument>>)>,
    /// While a [`Snapshot`] is held: per group existing then, its state before its
    /// first change since (`group_mut`).
    undo: Option<Vec<Option<Group>>>,
}

/// A composite field whose children are being planned in group `g`.
#[derive(Debug, Clone)]
struct ParentCtx<'a> {
    g: usize,
    steps: Vec<Step>,
    ty: Name,
    /// The field without its children.
    field: PField,
    rpath: Vec<PathElem>,
    provided: Option<&'a SelTree>,
}

/// Planner state saved before trying one of several candidate subgraphs. Planning
/// only appends groups, touched groups, roots and `children` entries (always for new
/// groups), so their lengths say what to forget; groups that existed before are
/// copied on their first change (`Planner::undo`).
struct Snapshot {
    groups: usize,
    touched: usize,
    depth: usize,
    roots: usize,
}

const MAX_HOPS: usize = 8;

/// The plan of `ir` for requests whose condition variables take `values` (`None`:
/// fetch what any values could include, the response writer drops the rest).
pub fn build_plan(
    meta: &FederationMeta,
    ir: &OpIr,
    values: Option<ConditionValues>,
) -> Result<QueryPlan, PlanError> {
    let mut planner = Planner {
        meta,
        groups: Vec::new(),
        touched: Vec::new(),
        children: FxHashMap::default(),
        depth: 0,
        roots: Vec::new(),
        parents: Vec::new(),
        wrap_from: None,
        mutation: false,
        req_aliases: Vec::new(),
        undo: None,
    };
    planner.plan_root(ir, values)?;
    check_acyclic(meta, &planner.groups)?;
    Ok(planner.finish(ir))
}

fn list_depth(ty: &Type) -> usize {
    match ty {
        Type::Named(_) | Type::NonNullNamed(_) => 0,
        Type::List(inner) | Type::NonNullList(inner) => 1 + list_depth(inner),
    }
}

impl<'a> Planner<'a> {
    fn plan_root(&mut self, ir: &OpIr, values: Option<ConditionValues>) -> Result<(), PlanError> {
        let root_type = ir.root_type().clone();
        let sels = from_ir(ir, ir.root(), values);
        let mut fields = Vec::new();
        self.flatten(&sels, &root_type, &mut fields);
        let fields: Vec<&PField> = fields
            .into_iter()
            .filter(|f| !f.name.starts_with("__"))
            .collect();
        let mutation = ir.kind() == OperationType::Mutation;
        self.mutation = mutation;
        let resolvers: Vec<Vec<SubgraphId>> = fields
            .iter()
            .map(|f| self.meta.resolvers_of(&root_type, &f.name))
            .collect();
        for (i, f) in fields.iter().copied().enumerate() {
            let candidates = &resolvers[i];
            if candidates.is_empty() {
                return Err(PlanError::NoResolver {
                    ty: root_type.to_string(),
                    field: f.name.to_string(),
                });
            }
            let existing_of = |this: &Self, sg: SubgraphId| {
                if mutation {
                    // Mutations run in order: only the latest root fetch may be extended.
                    this.roots
                        .last()
                        .copied()
                        .filter(|g| this.groups[*g].subgraph == sg)
                } else {
                    this.roots
                        .iter()
                        .copied()
                        .find(|g| this.groups[*g].subgraph == sg)
                }
            };
            // Order the candidates by the further fetches planning there would need
            // (a jump costs more than one more parallel root fetch), then by how many
            // of the remaining root fields each serves, then by fields resolved locally.
            // One candidate: nothing to rank (and no retry), so no estimate either.
            let rank = candidates.len() > 1;
            let mut order: Vec<_> = candidates
                .iter()
                .map(|sg| {
                    let (jumps, local) = if rank {
                        self.cost_field(*sg, &root_type, f, None, 1)
                    } else {
                        (0, 0)
                    };
                    let new_fetch = usize::from(existing_of(self, *sg).is_none());
                    let served = resolvers[i..].iter().filter(|r| r.contains(sg)).count();
                    (
                        (
                            2 * jumps + new_fetch,
                            std::cmp::Reverse(served),
                            std::cmp::Reverse(local),
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
                        self.roots.push(g);
                        g
                    }
                };
                match self.plan_field(g, &[], &root_type, f, &[], None, false) {
                    Ok(()) => {
                        self.undo = None;
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

    fn snapshot(&mut self) -> Snapshot {
        self.undo = Some(vec![None; self.groups.len()]);
        Snapshot {
            groups: self.groups.len(),
            touched: self.touched.len(),
            depth: self.depth,
            roots: self.roots.len(),
        }
    }

    fn restore(&mut self, saved: Snapshot) {
        let undo = self.undo.take().unwrap_or_default();
        self.groups.truncate(saved.groups);
        for (g, before) in undo.into_iter().enumerate() {
            if let Some(before) = before {
                self.groups[g] = before;
            }
        }
        self.touched.truncate(saved.touched);
        self.children.retain(|_, g| *g < saved.groups);
        self.depth = saved.depth;
        self.roots.truncate(saved.roots);
        self.parents.clear();
        self.wrap_from = None;
    }

    /// A bounded estimate of planning `sels` (on `ty`) in subgraph `sg`: the fields that
    /// would need a jump to another subgraph (not followed further), and the fields
    /// resolved there. Linear in the size of the selection. A type condition no object
    /// of which can come from `sg` counts `miss` jumps.
    fn cost(
        &self,
        sg: SubgraphId,
        ty: &Name,
        sels: &[PSel],
        provided: Option<&SelTree>,
        miss: usize,
    ) -> (usize, usize) {
        let meta = self.meta;
        let (mut jumps, mut local) = (0, 0);
        let field = |this: &Self,
                     f: &PField,
                     provided: Option<&SelTree>,
                     jumps: &mut usize,
                     local: &mut usize| {
            let (j, l) = this.cost_field(sg, ty, f, provided, miss);
            *jumps += j;
            *local += l;
        };
        if meta.kind(ty) == Some(TypeKind::Object) {
            let provided = narrow_provided(provided, ty);
            let mut fields = Vec::new();
            self.flatten(sels, ty, &mut fields);
            for f in fields {
                field(self, f, provided, &mut jumps, &mut local);
            }
            return (jumps, local);
        }
        for sel in sels {
            match sel {
                PSel::Field(f) => field(self, f, provided, &mut jumps, &mut local),
                PSel::Frag(Some(tc), children) if !meta.is_subtype_or_same(tc, ty) => {
                    let possible_here = meta
                        .possible_types_ref(tc)
                        .iter()
                        .any(|o| meta.is_possible_in_subgraph(ty, o, sg));
                    if possible_here {
                        let (j, l) = self.cost(sg, tc, children, provided, miss);
                        jumps += j;
                        local += l;
                    } else {
                        jumps += miss;
                    }
                }
                PSel::Frag(_, children) => {
                    let (j, l) = self.cost(sg, ty, children, provided, miss);
                    jumps += j;
                    local += l;
                }
            }
        }
        (jumps, local)
    }

    /// [`Self::cost`] of one field of `ty` (the same as `cost` of a selection holding
    /// only that field, without building one).
    fn cost_field(
        &self,
        sg: SubgraphId,
        ty: &Name,
        f: &PField,
        provided: Option<&SelTree>,
        miss: usize,
    ) -> (usize, usize) {
        if f.name == "__typename" {
            return (0, 0);
        }
        // `resolvable_here`, with the field's metadata from the same lookup.
        let (resolution, fm) = self.meta.resolution_and_meta(ty, &f.name, sg);
        let here = match resolution {
            Resolution::Resolvable(r) => r.is_none_or(|r| r.requires.is_none()),
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

    fn new_group(
        &mut self,
        subgraph: SubgraphId,
        merge_path: Vec<PathElem>,
        entity: bool,
        parent: Option<usize>,
    ) -> usize {
        self.groups.push(Group {
            subgraph,
            merge_paths: vec![merge_path],
            entity,
            sel: Vec::new(),
            reps: Vec::new(),
            deps: parent.into_iter().collect(),
            parent,
        });
        self.groups.len() - 1
    }

    /// Inline the fragments that apply to object type `ty`.
    fn flatten<'s>(&self, sels: &'s [PSel], ty: &Name, out: &mut Vec<&'s PField>) {
        for sel in sels {
            match sel {
                PSel::Field(f) => out.push(f),
                PSel::Frag(tc, children) => {
                    let applies = tc.as_ref().is_none_or(|tc| {
                        tc == ty || self.meta.possible_types_ref(tc).iter().any(|p| p == ty)
                    });
                    if applies {
                        self.flatten(children, ty, out);
                    }
                }
            }
        }
    }

    /// Group `g`, to change: saved first when a snapshot is held (`undo`).
    fn group_mut(&mut self, g: usize) -> &mut Group {
        if let Some(undo) = &mut self.undo
            && let Some(slot) = undo.get_mut(g)
            && slot.is_none()
        {
            *slot = Some(self.groups[g].clone());
        }
        &mut self.groups[g]
    }

    fn sel_at(&mut self, g: usize, steps: &[Step]) -> &mut Vec<SgItem> {
        let mut cur = &mut self.group_mut(g).sel;
        for step in steps {
            let pos = cur.iter().position(|item| match (item, step) {
                (SgItem::Field { key, .. }, Step::Field(k)) => key == k,
                (SgItem::Frag { type_condition, .. }, Step::Frag(t)) => type_condition == t,
                _ => false,
            });
            let pos = pos.expect("planner steps always point at existing selections");
            cur = match &mut cur[pos] {
                SgItem::Field { sub, .. } => sub.get_or_insert_with(Vec::new),
                SgItem::Frag { sub, .. } => sub,
            };
        }
        cur
    }

    fn add_field(&mut self, g: usize, steps: &[Step], f: &PField, composite: bool) {
        let sel = self.sel_at(g, steps);
        let exists = sel
            .iter()
            .any(|item| matches!(item, SgItem::Field { key, .. } if *key == f.key));
        if !exists {
            sel.push(SgItem::Field {
                key: f.key.clone(),
                name: f.name.clone(),
                args: f.args.clone(),
                sub: composite.then(Vec::new),
            });
        }
    }

    fn add_typename(&mut self, g: usize, steps: &[Step]) {
        let f = PField {
            key: name!("__typename"),
            name: name!("__typename"),
            args: Vec::new(),
            children: Vec::new(),
        };
        self.add_field(g, steps, &f, false);
    }

    fn add_frag(&mut self, g: usize, steps: &[Step], ty: &Name) {
        let sel = self.sel_at(g, steps);
        let exists = sel.iter().any(
            |item| matches!(item, SgItem::Frag { type_condition, .. } if type_condition == ty),
        );
        if !exists {
            sel.push(SgItem::Frag {
                type_condition: ty.clone(),
                sub: Vec::new(),
            });
        }
    }

    /// `rpath` narrowed to objects of type `o` (fetches planned under `... on o`).
    fn typed_path(rpath: &[PathElem], o: &Name) -> Vec<PathElem> {
        let mut v = rpath.to_vec();
        v.push(PathElem::TypeCond(o.clone()));
        v
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

    fn with(steps: &[Step], step: Step) -> Vec<Step> {
        let mut v = steps.to_vec();
        v.push(step);
        v
    }

    fn plan_sels(
        &mut self,
        g: usize,
        steps: &[Step],
        ty: &Name,
        sels: &[PSel],
        rpath: &[PathElem],
        provided: Option<&'a SelTree>,
    ) -> Result<(), PlanError> {
        let meta = self.meta;
        if meta.kind(ty) == Some(TypeKind::Object) {
            // `@provides(fields: "... on T { f }")` on an abstract field.
            let provided = narrow_provided(provided, ty);
            let mut fields = Vec::new();
            self.flatten(sels, ty, &mut fields);
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
                PSel::Field(f) if f.name == "__typename" => {
                    self.plan_field(g, steps, ty, f, rpath, provided, false)?;
                }
                PSel::Field(f) => {
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
                            self.add_frag(g, steps, o);
                            let inner = Self::with(steps, Step::Frag(o.clone()));
                            let opath = Self::typed_path(rpath, o);
                            self.plan_field(g, &inner, o, f, &opath, provided, false)?;
                        }
                    }
                }
                PSel::Frag(tc, children) => match tc {
                    Some(tc) if !meta.is_subtype_or_same(tc, ty) => {
                        let targets = meta.possible_types_ref(tc);
                        for o in possible_here.iter().filter(|o| targets.contains(o)) {
                            self.add_frag(g, steps, o);
                            let inner = Self::with(steps, Step::Frag(o.clone()));
                            let opath = Self::typed_path(rpath, o);
                            self.plan_sels(g, &inner, o, children, &opath, provided)?;
                        }
                    }
                    _ => self.plan_sels(g, steps, ty, children, rpath, provided)?,
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
        let returns_ty = self.parents.last().is_some_and(|ctx| {
            meta.resolution_and_meta(&ctx.ty, &ctx.field.name, self.groups[ctx.g].subgraph)
                .1
                .is_some_and(|f| &f.output == ty)
        });
        if !returns_ty {
            return Vec::new();
        }
        let mut reach: Option<Vec<SubgraphId>> = None;
        for ctx in &self.parents {
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

    /// `ty` is an `@interfaceObject` in this subgraph: its `__typename` is the interface
    /// name, so the concrete type and concrete-only fields come from a subgraph that owns
    /// the interface, through an `_entities` fetch keyed by the interface's key.
    fn plan_interface_object(
        &mut self,
        g: usize,
        steps: &[Step],
        ty: &Name,
        sels: &[PSel],
        rpath: &[PathElem],
        provided: Option<&'a SelTree>,
    ) -> Result<(), PlanError> {
        let meta = self.meta;
        let sg = self.groups[g].subgraph;
        let mut remote = Vec::new();
        for sel in sels {
            match sel {
                PSel::Field(f)
                    if f.name != "__typename" && self.resolvable_here(ty, f, sg, provided) =>
                {
                    self.plan_field(g, steps, ty, f, rpath, provided, false)?;
                }
                // Another `@interfaceObject` subgraph resolves it: a hop there with the
                // interface's key; the owner is needed only for concrete types.
                PSel::Field(f)
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
        self.plan_sels(g, steps, ty, &from_tree(key), rpath, provided)?;
        let child_key = (g, owner, rpath.to_vec());
        let g2 = match self.children.get(&child_key) {
            Some(g2) => *g2,
            None => {
                let g2 = self.new_group(owner, rpath.to_vec(), true, Some(g));
                self.children.insert(child_key, g2);
                g2
            }
        };
        // The objects carry the interface name as __typename until the owner answers.
        self.add_rep_matching(g2, ty, std::slice::from_ref(ty), None, key.clone());
        self.add_frag(g2, &[], ty);
        self.plan_sels(g2, &[Step::Frag(ty.clone())], ty, &remote, rpath, None)?;
        self.touched.push(g2);
        Ok(())
    }

    /// Whether every subgraph resolving `ty.f` sees `ty` as an `@interfaceObject` too
    /// (so a representation naming the interface suffices there).
    fn other_interface_object(&self, ty: &str, f: &PField, sg: SubgraphId) -> bool {
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

    fn resolvable_here(
        &self,
        ty: &str,
        f: &PField,
        sg: SubgraphId,
        provided: Option<&SelTree>,
    ) -> bool {
        if f.name == "__typename" {
            return true;
        }
        match self.meta.resolution(ty, &f.name, sg) {
            Resolution::Resolvable(r) => r.is_none_or(|r| r.requires.is_none()),
            Resolution::External => provided.is_some_and(|p| p.field(&f.name).is_some()),
            Resolution::Absent => false,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn plan_field(
        &mut self,
        g: usize,
        steps: &[Step],
        ty: &Name,
        f: &PField,
        rpath: &[PathElem],
        provided: Option<&'a SelTree>,
        requires_satisfied: bool,
    ) -> Result<(), PlanError> {
        let meta = self.meta;
        if f.name == "__typename" {
            self.add_field(g, steps, f, false);
            return Ok(());
        }
        let sg = self.groups[g].subgraph;
        let provided_sub = provided.and_then(|p| p.field(&f.name));
        let (resolution, field_meta) = meta.resolution_and_meta(ty, &f.name, sg);
        let here = match resolution {
            Resolution::Resolvable(r) => {
                requires_satisfied || r.is_none_or(|r| r.requires.is_none())
            }
            Resolution::External => provided_sub.is_some(),
            Resolution::Absent => false,
        };
        if !here || self.better_elsewhere(sg, ty, f, provided) {
            return self.jump(g, steps, ty, f, rpath, provided);
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
            let inner = Self::with(steps, Step::Field(f.key.clone()));
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
            self.parents.push(ParentCtx {
                g,
                steps: steps.to_vec(),
                ty: ty.clone(),
                field: PField {
                    key: f.key.clone(),
                    name: f.name.clone(),
                    args: f.args.clone(),
                    children: Vec::new(),
                },
                rpath: rpath.to_vec(),
                provided,
            });
            let planned = self.plan_sels(
                g,
                &inner,
                &child_ty,
                &f.children,
                &child_path,
                child_provided,
            );
            self.parents.pop();
            planned?;
        }
        Ok(())
    }

    /// Whether composite field `ty.f`, resolvable in `sg` but with parts of its
    /// selection only elsewhere, is better fetched whole from another subgraph reached
    /// through a key of entity `ty`: one hop at the parent instead of hops for the
    /// objects below it (a list's items, each a representation). Sets `wrap_from`, so
    /// `jump` skips `sg` and prefers where the field is resolved whole.
    fn better_elsewhere(
        &mut self,
        sg: SubgraphId,
        ty: &Name,
        f: &PField,
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
        let whole = self.meta.resolvers_of(ty, &f.name).into_iter().any(|t| {
            t != sg
                && self.usable_key(ty, t, sg, provided).is_some()
                && self.cost_field(t, ty, f, None, 0).0 == 0
        });
        if whole {
            self.wrap_from = Some(sg);
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
                    Resolution::Resolvable(r) => r.is_none_or(|r| r.requires.is_none()),
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

    fn jump(
        &mut self,
        g: usize,
        steps: &[Step],
        ty: &Name,
        f: &PField,
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
        if let Some(avoid) = self.wrap_from.take() {
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
            self.children
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
                let Some((t, key)) = indirect.filter(|_| self.depth < MAX_HOPS) else {
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
                    return self.wrap(g, steps, f, err);
                };
                (t, key, true)
            }
        };
        self.add_typename(g, steps);
        let before_key = self.touched.len();
        self.depth += 1;
        let planned_key = self.plan_sels(g, steps, ty, &from_tree(key), rpath, provided);
        self.depth -= 1;
        planned_key?;
        let key_groups: Vec<usize> = if key_hop {
            self.touched[before_key..].to_vec()
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
            let before = self.touched.len();
            self.plan_sels(g, steps, ty, &from_tree(&requires), rpath, provided)?;
            needed.extend_from_slice(&self.touched[before..]);
            rep_fields.merge(&requires);
        }
        // Planned after what it needs, so a group that needs none of its own results.
        let g2 = self.entity_group(g, target, ty, mpath, &rep_fields, &needed);
        for d in needed {
            if d != g2 && !self.groups[g2].deps.contains(&d) {
                self.group_mut(g2).deps.push(d);
            }
        }
        self.add_rep(g2, ty, target, rep_fields);
        self.add_frag(g2, &[], ty);
        self.plan_field(g2, &[Step::Frag(ty.clone())], ty, f, rpath, None, true)?;
        self.touched.push(g2);
        Ok(())
    }

    /// `f` cannot be reached from group `g` (its type has no key usable here): re-plan it
    /// wrapped in its parent field, fetched from another subgraph that resolves the parent.
    /// Recursion through `jump` wraps further up while the parents are keyless too.
    fn wrap(
        &mut self,
        g: usize,
        steps: &[Step],
        f: &PField,
        err: PlanError,
    ) -> Result<(), PlanError> {
        if self.depth >= MAX_HOPS {
            return Err(err);
        }
        let Some(ctx) = self
            .parents
            .iter()
            .rev()
            .find(|c| {
                c.g == g
                    && steps.len() > c.steps.len()
                    && steps.starts_with(&c.steps)
                    && steps[c.steps.len()] == Step::Field(c.field.key.clone())
            })
            .cloned()
        else {
            return Err(err);
        };
        let mut inner = vec![PSel::Field(f.clone())];
        for step in steps[ctx.steps.len() + 1..].iter().rev() {
            match step {
                Step::Frag(t) => inner = vec![PSel::Frag(Some(t.clone()), inner)],
                Step::Field(_) => return Err(err),
            }
        }
        let wrapped = PField {
            key: ctx.field.key.clone(),
            name: ctx.field.name.clone(),
            args: ctx.field.args.clone(),
            children: inner,
        };
        let from = self.groups[g].subgraph;
        let entity_root = matches!(ctx.steps.as_slice(),
            [Step::Frag(t)] if self.groups[g].entity && *t == ctx.ty);
        self.depth += 1;
        let planned = if ctx.steps.is_empty() && !self.groups[g].entity {
            self.wrap_root(from, &ctx.ty, &wrapped)
        } else if entity_root && self.wrap_entity_root(g, &ctx.ty, &wrapped, &ctx.rpath)? {
            Ok(())
        } else {
            self.wrap_from = Some(from);
            self.jump(
                ctx.g,
                &ctx.steps,
                &ctx.ty,
                &wrapped,
                &ctx.rpath,
                ctx.provided,
            )
        };
        self.wrap_from = None;
        self.depth -= 1;
        planned.map_err(|_| err)
    }

    /// Wrapping at a root field: another root fetch of the field (queries only; the
    /// results merge into the same response object).
    fn wrap_root(
        &mut self,
        from: SubgraphId,
        root: &Name,
        wrapped: &PField,
    ) -> Result<(), PlanError> {
        let no_resolver = || PlanError::NoResolver {
            ty: root.to_string(),
            field: wrapped.name.to_string(),
        };
        if self.mutation {
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
            .roots
            .iter()
            .copied()
            .find(|r| self.groups[*r].subgraph == target);
        let gr = match existing {
            Some(gr) => gr,
            None => {
                let gr = self.new_group(target, Vec::new(), false, None);
                self.roots.push(gr);
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
        g: usize,
        ty: &Name,
        wrapped: &PField,
        rpath: &[PathElem],
    ) -> Result<bool, PlanError> {
        let meta = self.meta;
        let from = self.groups[g].subgraph;
        let Some(parent) = self.groups[g].parent else {
            return Ok(false);
        };
        let Some(have) = self.groups[g]
            .reps
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
                    Resolution::Resolvable(r) if r.is_none_or(|r| r.requires.is_none()))
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
        let g3 = match self.children.get(&child_key) {
            Some(g3) => *g3,
            None => {
                let g3 = self.new_group(target, rpath.to_vec(), true, Some(parent));
                self.children.insert(child_key, g3);
                g3
            }
        };
        let deps = self.groups[g].deps.clone();
        for d in deps {
            if d != g3 && !self.groups[g3].deps.contains(&d) {
                self.group_mut(g3).deps.push(d);
            }
        }
        self.add_rep(g3, ty, target, key);
        self.add_frag(g3, &[], ty);
        self.plan_field(
            g3,
            &[Step::Frag(ty.clone())],
            ty,
            wrapped,
            rpath,
            None,
            false,
        )?;
        self.touched.push(g3);
        Ok(true)
    }

    /// The `_entities` group below `g` for `target` at `rpath` that can take a field
    /// needing groups `needed` first: not one of them nor a group they wait for (that
    /// would be a cycle: e.g. a `@requires` field fetched from the same subgraph as the
    /// field requiring it), and with a representation of `ty` compatible with `rep`.
    /// A new group when none fits.
    fn entity_group(
        &mut self,
        g: usize,
        target: SubgraphId,
        ty: &Name,
        rpath: &[PathElem],
        rep: &SelTree,
        needed: &[usize],
    ) -> usize {
        let child_key = (g, target, rpath.to_vec());
        let first = self.children.get(&child_key).copied();
        let others = (0..self.groups.len()).filter(|i| {
            let gr = &self.groups[*i];
            Some(*i) != first
                && gr.entity
                && gr.parent == Some(g)
                && gr.subgraph == target
                && gr.merge_paths.len() == 1
                && gr.merge_paths[0] == rpath
        });
        let candidates: Vec<usize> = first.into_iter().chain(others).collect();
        let fits = |this: &Self, c: usize| {
            !needed.iter().any(|n| this.waits_for(*n, c))
                && this.groups[c]
                    .reps
                    .iter()
                    .all(|r| &r.type_condition != ty || !r.fields.conflicts_with(rep))
        };
        if let Some(c) = candidates.into_iter().find(|c| fits(self, *c)) {
            return c;
        }
        let g2 = self.new_group(target, rpath.to_vec(), true, Some(g));
        self.children.entry(child_key).or_insert(g2);
        g2
    }

    /// Whether group `from` is `to` or depends on it, directly or not.
    fn waits_for(&self, from: usize, to: usize) -> bool {
        let mut seen = vec![false; self.groups.len()];
        let mut stack = vec![from];
        while let Some(i) = stack.pop() {
            if i == to {
                return true;
            }
            if std::mem::replace(&mut seen[i], true) {
                continue;
            }
            stack.extend(self.groups[i].deps.iter().copied());
        }
        false
    }

    /// `@requires` fields with arguments get an alias (the same one for the same field
    /// and arguments), so they are fetched apart from a client field of the same name.
    fn alias_requires(&mut self, tree: &SelTree) -> SelTree {
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
                            .req_aliases
                            .iter()
                            .position(|(n, a)| n == name && a == args)
                        {
                            Some(n) => n,
                            None => {
                                self.req_aliases.push((name.clone(), args.clone()));
                                self.req_aliases.len() - 1
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

    fn add_rep(&mut self, g: usize, ty: &Name, target: SubgraphId, fields: SelTree) {
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

    fn add_rep_matching(
        &mut self,
        g: usize,
        ty: &Name,
        matches: &[Name],
        send_typename: Option<Name>,
        fields: SelTree,
    ) {
        let fields = concrete_fragments(self.meta, fields);
        let reps = &mut self.group_mut(g).reps;
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

    fn finish(mut self, ir: &OpIr) -> QueryPlan {
        if ir.kind() != OperationType::Mutation {
            self.merge_siblings();
        }
        let renames: Vec<Vec<(Name, Name)>> = (0..self.groups.len())
            .map(|i| self.alias_type_conflicts(i, ir))
            .collect();
        let mut keys = KeyTable::default();
        keys.intern(&name!("__typename"));
        keys.intern(&name!("_entities"));
        for group in &self.groups {
            intern_keys(&group.sel, &mut keys);
        }
        // Operation keys too: introspection results are merged into the same store.
        for field in &ir.fields {
            keys.intern(&field.response_key);
        }
        let fetches: Vec<Fetch> = self
            .groups
            .iter()
            .zip(renames)
            .map(|(group, renames)| Fetch {
                renames,
                ..self.fetch(group, ir)
            })
            .collect();
        let node_of = |i: usize| {
            if self.groups[i].entity {
                PlanNode::Flatten {
                    path: self.groups[i].merge_paths[0].clone(),
                    fetch: i,
                }
            } else {
                PlanNode::Fetch(i)
            }
        };
        let levels = |members: &[usize]| -> PlanNode {
            let level = compute_levels(&self.groups, members);
            let max = members.iter().map(|i| level[*i]).max().unwrap_or(0);
            let steps: Vec<PlanNode> = (0..=max)
                .map(|l| {
                    let nodes: Vec<PlanNode> = members
                        .iter()
                        .filter(|i| level[**i] == l)
                        .map(|i| node_of(*i))
                        .collect();
                    single_or(nodes, PlanNode::Parallel)
                })
                .collect();
            single_or(steps, PlanNode::Sequence)
        };
        let all: Vec<usize> = (0..self.groups.len()).collect();
        let root = if self.groups.is_empty() {
            None
        } else if ir.kind() == OperationType::Mutation {
            let root_of = |mut i: usize| {
                while let Some(p) = self.groups[i].parent {
                    i = p;
                }
                i
            };
            let roots: Vec<usize> = all
                .iter()
                .copied()
                .filter(|i| self.groups[*i].parent.is_none())
                .collect();
            let parts: Vec<PlanNode> = roots
                .iter()
                .map(|r| {
                    let members: Vec<usize> =
                        all.iter().copied().filter(|i| root_of(*i) == *r).collect();
                    levels(&members)
                })
                .collect();
            Some(single_or(parts, PlanNode::Sequence))
        } else {
            Some(levels(&all))
        };
        QueryPlan {
            fetches,
            root,
            keys,
        }
    }

    /// A response key selected with different types in one selection set (fields of
    /// sibling type fragments, e.g. `User.id: ID!` and `Admin.id: ID`) is invalid in the
    /// subgraph request: every occurrence whose type is not the key's first one in this
    /// fetch gets the alias `<key>__t<n>` (one per type, so the fields of merged sibling
    /// selections agree too). Returns `(alias, key)` for the response.
    fn alias_type_conflicts(&mut self, g: usize, ir: &OpIr) -> Vec<(Name, Name)> {
        if !has_repeated_keys(&self.groups[g].sel) {
            // Every key once per selection set: no key can have two types.
            return Vec::new();
        }
        let sg = self.groups[g].subgraph;
        let root = (!self.groups[g].entity).then(|| ir.root_type().clone());
        let mut scan = TypeScan::default();
        let mut level = Vec::new();
        let sel = &self.groups[g].sel;
        self.scan_types(sel, root.as_ref(), sg, &mut level, &mut scan);
        if scan.conflicting.is_empty() {
            return Vec::new();
        }
        let mut sel = std::mem::take(&mut self.groups[g].sel);
        let mut renames = Vec::new();
        self.alias_types(&mut sel, root.as_ref(), sg, &scan, &mut renames);
        self.groups[g].sel = sel;
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
        items: &[SgItem],
        parent: Option<&Name>,
        sg: SubgraphId,
        level: &mut Vec<(Name, TypeText<'a>)>,
        scan: &mut TypeScan<'a>,
    ) {
        for item in items {
            match item {
                SgItem::Field { key, name, sub, .. } => {
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
                SgItem::Frag {
                    type_condition,
                    sub,
                } => self.scan_types(sub, Some(type_condition), sg, level, scan),
            }
        }
    }

    fn alias_types(
        &self,
        items: &mut [SgItem],
        parent: Option<&Name>,
        sg: SubgraphId,
        scan: &TypeScan<'a>,
        renames: &mut Vec<(Name, Name)>,
    ) {
        for item in items {
            match item {
                SgItem::Field { key, name, sub, .. } => {
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
                SgItem::Frag {
                    type_condition,
                    sub,
                } => {
                    let tc = type_condition.clone();
                    self.alias_types(sub, Some(&tc), sg, scan, renames);
                }
            }
        }
    }

    /// Entity fetches to one subgraph at one level of the DAG become one request:
    /// their representations are deduplicated together and sent once.
    fn merge_siblings(&mut self) {
        let n = self.groups.len();
        let all: Vec<usize> = (0..n).collect();
        let level = compute_levels(&self.groups, &all);
        let mut alive = vec![true; n];
        for i in 0..n {
            if !alive[i] || !self.groups[i].entity {
                continue;
            }
            for j in i + 1..n {
                let (a, b) = (&self.groups[i], &self.groups[j]);
                if !alive[j] || !b.entity || a.subgraph != b.subgraph || level[i] != level[j] {
                    continue;
                }
                // One representation per type: same typename sent, and no field name
                // wanted with two arguments (aliased @requires fields).
                let same_typename = b.reps.iter().all(|rb| {
                    a.reps.iter().all(|ra| {
                        ra.type_condition != rb.type_condition
                            || (ra.send_typename == rb.send_typename
                                && !ra.fields.conflicts_with(&rb.fields))
                    })
                });
                // Only fetches asking the same: with different selections, a field one
                // path did not ask for could fail and null the other path's objects.
                let mut sel = a.sel.clone();
                if !same_typename
                    || !same_selection(&a.sel, &b.sel)
                    || !merge_items(&mut sel, &b.sel)
                {
                    continue;
                }
                let subgraph = b.subgraph;
                let b = std::mem::replace(
                    &mut self.groups[j],
                    Group {
                        subgraph,
                        merge_paths: Vec::new(),
                        entity: true,
                        sel: Vec::new(),
                        reps: Vec::new(),
                        deps: Vec::new(),
                        parent: None,
                    },
                );
                alive[j] = false;
                self.groups[i].sel = sel;
                self.groups[i].merge_paths.extend(b.merge_paths);
                for rep in b.reps {
                    self.add_rep_matching(
                        i,
                        &rep.type_condition,
                        &rep.matches,
                        rep.send_typename,
                        rep.fields,
                    );
                }
                for d in b.deps {
                    if d != i && !self.groups[i].deps.contains(&d) {
                        self.groups[i].deps.push(d);
                    }
                }
                for g in &mut self.groups {
                    for d in &mut g.deps {
                        if *d == j {
                            *d = i;
                        }
                    }
                    if g.parent == Some(j) {
                        g.parent = Some(i);
                    }
                }
            }
        }
        // Compact, renumbering dependencies.
        let mut index = vec![usize::MAX; n];
        let mut next = 0;
        for (i, a) in alive.iter().enumerate() {
            if *a {
                index[i] = next;
                next += 1;
            }
        }
        let groups = std::mem::take(&mut self.groups);
        for (i, mut g) in groups.into_iter().enumerate() {
            if !alive[i] {
                continue;
            }
            let me = index[i];
            let mut deps: Vec<usize> = g
                .deps
                .iter()
                .map(|d| index[*d])
                .filter(|d| *d != me)
                .collect();
            deps.sort_unstable();
            deps.dedup();
            g.deps = deps;
            g.parent = g.parent.map(|p| index[p]);
            self.groups.push(g);
        }
    }

    fn fetch(&self, group: &Group, ir: &OpIr) -> Fetch {
        let mut body = String::new();
        print_sel(&group.sel, &mut body);
        let mut used = Vec::new();
        collect_variables(&group.sel, &mut used);
        let mut defs = String::new();
        if group.entity {
            defs.push_str("$representations: [_Any!]!");
        }
        let mut variables = Vec::new();
        for def in &ir.variables {
            if used.contains(&def.name) {
                if !defs.is_empty() {
                    defs.push_str(", ");
                }
                let _ = write!(defs, "${}: {}", def.name, def.ty);
                // The default matters to the subgraph's validation too: a nullable
                // variable with one may stand where a non-null argument is expected.
                if let Some(default) = &def.default_value {
                    let _ = write!(defs, " = {default}");
                }
                variables.push(def.name.clone());
            }
        }
        let kind = if group.parent.is_none() && ir.kind() == OperationType::Mutation {
            "mutation"
        } else {
            "query"
        };
        let defs = if defs.is_empty() {
            String::new()
        } else {
            format!("({defs})")
        };
        let operation = if group.entity {
            format!("{kind}{defs} {{ _entities(representations: $representations) {body} }}")
        } else {
            format!("{kind}{defs} {body}")
        };
        // Subgraphs reject an empty selection set (issue 14's invariants).
        debug_assert!(!operation.contains("{ }"), "empty selection: {operation}");
        Fetch {
            subgraph: group.subgraph,
            subgraph_name: self.meta.subgraph(group.subgraph).name.clone(),
            operation,
            variables,
            merge_paths: group.merge_paths.clone(),
            entity: group.entity.then(|| EntityFetch {
                reps: group.reps.clone(),
            }),
            renames: Vec::new(),
        }
    }
}

/// The part of a `@provides` selection that applies under type condition `tc`: the
/// fragment on `tc` when the selection is made of type conditions only.
fn narrow_provided<'t>(provided: Option<&'t SelTree>, tc: &str) -> Option<&'t SelTree> {
    let p = provided?;
    let has_fields = p
        .items
        .iter()
        .any(|i| matches!(i, SelTreeItem::Field { .. }));
    let on_tc = p.items.iter().find_map(|i| match i {
        SelTreeItem::Fragment {
            type_condition,
            sub,
        } if type_condition == tc => Some(sub),
        _ => None,
    });
    match on_tc {
        Some(sub) if !has_fields => Some(sub),
        _ => Some(p),
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

/// Whether some selection set of `items` (fragments inlined into it, as
/// `Planner::scan_types` sees it) selects one response key more than once.
fn has_repeated_keys(items: &[SgItem]) -> bool {
    fn collect<'s>(items: &'s [SgItem], keys: &mut Vec<&'s str>, subs: &mut Vec<&'s [SgItem]>) {
        for item in items {
            match item {
                SgItem::Field { key, sub, .. } => {
                    keys.push(key.as_str());
                    if let Some(sub) = sub {
                        subs.push(sub);
                    }
                }
                SgItem::Frag { sub, .. } => collect(sub, keys, subs),
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

/// A plan whose fetches depend on each other in a cycle cannot run: an error, never
/// a silently broken order.
fn check_acyclic(meta: &FederationMeta, groups: &[Group]) -> Result<(), PlanError> {
    let deps: Vec<&[usize]> = groups.iter().map(|g| g.deps.as_slice()).collect();
    match on_cycle(&deps) {
        None => Ok(()),
        Some(i) => Err(PlanError::Cycle {
            subgraph: meta.subgraph(groups[i].subgraph).name.clone(),
        }),
    }
}

/// A node that cannot be ordered after its dependencies (on or behind a cycle).
fn on_cycle(deps: &[&[usize]]) -> Option<usize> {
    // Kahn's algorithm: count unmet dependencies, release nodes as they reach zero.
    let n = deps.len();
    let mut pending: Vec<usize> = deps
        .iter()
        .map(|d| d.iter().filter(|d| **d < n).count())
        .collect();
    let mut ready: Vec<usize> = (0..n).filter(|i| pending[*i] == 0).collect();
    while let Some(i) = ready.pop() {
        for (j, d) in deps.iter().enumerate() {
            for _ in d.iter().filter(|d| **d == i) {
                pending[j] -= 1;
                if pending[j] == 0 {
                    ready.push(j);
                }
            }
        }
    }
    (0..n).find(|i| pending[*i] > 0)
}

/// `path` without its trailing type conditions.
fn trim_type_conds(path: &[PathElem]) -> &[PathElem] {
    let end = path
        .iter()
        .rposition(|p| !matches!(p, PathElem::TypeCond(_)))
        .map_or(0, |i| i + 1);
    &path[..end]
}

/// Level of each member in the dependency DAG (0: no dependencies among `members`).
fn compute_levels(groups: &[Group], members: &[usize]) -> Vec<usize> {
    let mut level = vec![0usize; groups.len()];
    // Dependencies may be created after their dependents, so relax until stable; a
    // dependency chain is at most `members.len()` long (cycles were rejected before:
    // `check_acyclic`).
    for _ in 0..members.len() {
        let mut changed = false;
        for &i in members {
            let l = groups[i]
                .deps
                .iter()
                .filter(|d| members.contains(d))
                .map(|d| level[*d] + 1)
                .max()
                .unwrap_or(0);
            if l != level[i] {
                level[i] = l;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    level
}

/// Union of two subgraph selections; false when a response key would mean two fields.
fn merge_items(into: &mut Vec<SgItem>, from: &[SgItem]) -> bool {
    for item in from {
        match item {
            SgItem::Field {
                key,
                name,
                args,
                sub,
            } => {
                let existing = into.iter_mut().find_map(|i| match i {
                    SgItem::Field {
                        key: k,
                        name: n,
                        args: a,
                        sub: s,
                    } if k == key => Some((n, a, s)),
                    _ => None,
                });
                match existing {
                    None => into.push(item.clone()),
                    Some((n, a, s)) => {
                        if n != name || a != args {
                            return false;
                        }
                        match (s, sub) {
                            (Some(s), Some(sub)) => {
                                if !merge_items(s, sub) {
                                    return false;
                                }
                            }
                            (None, None) => {}
                            _ => return false,
                        }
                    }
                }
            }
            SgItem::Frag {
                type_condition,
                sub,
            } => {
                let existing = into.iter_mut().find_map(|i| match i {
                    SgItem::Frag {
                        type_condition: t,
                        sub: s,
                    } if t == type_condition => Some(s),
                    _ => None,
                });
                match existing {
                    None => into.push(item.clone()),
                    Some(s) => {
                        if !merge_items(s, sub) {
                            return false;
                        }
                    }
                }
            }
        }
    }
    true
}

fn single_or(mut nodes: Vec<PlanNode>, wrap: fn(Vec<PlanNode>) -> PlanNode) -> PlanNode {
    if nodes.len() == 1 {
        nodes.pop().expect("one node")
    } else {
        wrap(nodes)
    }
}

fn intern_keys(items: &[SgItem], keys: &mut KeyTable) {
    for item in items {
        match item {
            SgItem::Field { key, sub, .. } => {
                keys.intern(key);
                if let Some(sub) = sub {
                    intern_keys(sub, keys);
                }
            }
            SgItem::Frag { sub, .. } => intern_keys(sub, keys),
        }
    }
}

/// `tree` with each type condition on an abstract type replaced by one per possible
/// object type, so a representation includes a fragment's fields only for objects
/// whose `__typename` is its type condition.
fn concrete_fragments(meta: &FederationMeta, tree: SelTree) -> SelTree {
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

/// Whether two entity fetches ask the same of every type both select: then merged,
/// each object still gets exactly its own path's selection (fragments on other types
/// apply only to their own representations).
fn same_selection(a: &[SgItem], b: &[SgItem]) -> bool {
    let printed = |items: &[SgItem]| {
        let mut out = String::new();
        print_sel(items, &mut out);
        out
    };
    let fragments = |items: &[SgItem]| -> Option<Vec<(Name, String)>> {
        items
            .iter()
            .map(|i| match i {
                SgItem::Frag {
                    type_condition,
                    sub,
                } => Some((type_condition.clone(), printed(sub))),
                SgItem::Field { .. } => None,
            })
            .collect()
    };
    match (fragments(a), fragments(b)) {
        (Some(fa), Some(fb)) => fa
            .iter()
            .all(|(ta, sa)| fb.iter().all(|(tb, sb)| ta != tb || sa == sb)),
        _ => printed(a) == printed(b),
    }
}

/// Whether `items` ask for nothing: only fragments that themselves ask for nothing
/// (every field in them dropped by a literal `@skip`/`@include`, or a type condition
/// with nothing left to fetch there). A subgraph rejects an empty selection set.
fn selects_nothing(items: &[SgItem]) -> bool {
    items
        .iter()
        .all(|i| matches!(i, SgItem::Frag { sub, .. } if selects_nothing(sub)))
}

fn print_sel(items: &[SgItem], out: &mut String) {
    if selects_nothing(items) {
        // The object still has to be told from null.
        out.push_str("{ __typename }");
        return;
    }
    out.push('{');
    for item in items {
        if let SgItem::Frag { sub, .. } = item
            && selects_nothing(sub)
        {
            continue;
        }
        out.push(' ');
        match item {
            SgItem::Field {
                key,
                name,
                args,
                sub,
            } => {
                if key != name {
                    let _ = write!(out, "{key}: ");
                }
                out.push_str(name);
                if !args.is_empty() {
                    out.push('(');
                    for (i, a) in args.iter().enumerate() {
                        if i > 0 {
                            out.push_str(", ");
                        }
                        let _ = write!(out, "{}: {}", a.name, a.value);
                    }
                    out.push(')');
                }
                if let Some(sub) = sub {
                    out.push(' ');
                    print_sel(sub, out);
                }
            }
            SgItem::Frag {
                type_condition,
                sub,
            } => {
                let _ = write!(out, "... on {type_condition} ");
                print_sel(sub, out);
            }
        }
    }
    out.push_str(" }");
}

fn collect_variables(items: &[SgItem], out: &mut Vec<Name>) {
    fn value(v: &Value, out: &mut Vec<Name>) {
        match v {
            Value::Variable(n) if !out.contains(n) => out.push(n.clone()),
            Value::List(items) => items.iter().for_each(|i| value(i, out)),
            Value::Object(fields) => fields.iter().for_each(|(_, v)| value(v, out)),
            _ => {}
        }
    }
    for item in items {
        match item {
            SgItem::Field { args, sub, .. } => {
                args.iter().for_each(|a| value(&a.value, out));
                if let Some(sub) = sub {
                    collect_variables(sub, out);
                }
            }
            SgItem::Frag { sub, .. } => collect_variables(sub, out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::on_cycle;

    #[test]
    fn fetch_cycles_are_found() {
        // 0 <- 1 <- 2: a plan.
        assert_eq!(on_cycle(&[&[], &[0], &[1]]), None);
        // 1 and 2 wait for each other: no order runs them.
        assert_eq!(on_cycle(&[&[], &[0, 2], &[1]]), Some(1));
        // Duplicated dependencies are not a cycle.
        assert_eq!(on_cycle(&[&[], &[0, 0]]), None);
    }
}
