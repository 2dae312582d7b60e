//! Plan construction. Fields are assigned to fetch groups while walking the operation:
//! a field stays in the current subgraph when it can, otherwise the planner fetches the
//! entity's key (plus `@requires` fields) here and continues in an `_entities` group.

use super::plan::{EntityFetch, Fetch, PathElem, PlanNode, QueryPlan, RepSpec};
use crate::operation::{OpIr, OpSel, SelSetId};
use crate::response::KeyTable;
use crate::supergraph::meta::{
    FederationMeta, Resolution, SelTree, SelTreeItem, SubgraphId, TypeKind,
};
use apollo_compiler::ast::{Argument, OperationType, Type, Value};
use apollo_compiler::{Name, Node, name};
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

fn from_ir(ir: &OpIr, set: SelSetId) -> Vec<PSel> {
    ir.selset(set)
        .iter()
        .map(|sel| match sel {
            OpSel::Field(fid) => {
                let f = ir.field(*fid);
                PSel::Field(PField {
                    key: f.response_key.clone(),
                    name: f.name.clone(),
                    args: f.arguments.clone(),
                    children: f.selection.map(|s| from_ir(ir, s)).unwrap_or_default(),
                })
            }
            OpSel::Fragment {
                type_condition,
                selection,
                ..
            } => PSel::Frag(type_condition.clone(), from_ir(ir, *selection)),
        })
        .collect()
}

fn from_tree(tree: &SelTree) -> Vec<PSel> {
    tree.items
        .iter()
        .map(|item| match item {
            SelTreeItem::Field { name, sub } => PSel::Field(PField {
                key: name.clone(),
                name: name.clone(),
                args: Vec::new(),
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

#[derive(Debug)]
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
}

const MAX_HOPS: usize = 8;

pub fn build_plan(meta: &FederationMeta, ir: &OpIr) -> Result<QueryPlan, PlanError> {
    let mut planner = Planner {
        meta,
        groups: Vec::new(),
        touched: Vec::new(),
        children: FxHashMap::default(),
        depth: 0,
    };
    planner.plan_root(ir)?;
    Ok(planner.finish(ir))
}

fn list_depth(ty: &Type) -> usize {
    match ty {
        Type::Named(_) | Type::NonNullNamed(_) => 0,
        Type::List(inner) | Type::NonNullList(inner) => 1 + list_depth(inner),
    }
}

impl<'a> Planner<'a> {
    fn plan_root(&mut self, ir: &OpIr) -> Result<(), PlanError> {
        let root_type = ir.root_type().clone();
        let mut fields = Vec::new();
        self.flatten(&from_ir(ir, ir.root()), &root_type, &mut fields);
        let fields: Vec<PField> = fields
            .into_iter()
            .filter(|f| !f.name.starts_with("__"))
            .collect();
        let mutation = ir.kind() == OperationType::Mutation;
        let mut roots: Vec<usize> = Vec::new();
        for (i, f) in fields.iter().enumerate() {
            let candidates = self.meta.resolvers_of(&root_type, &f.name);
            if candidates.is_empty() {
                return Err(PlanError::NoResolver {
                    ty: root_type.to_string(),
                    field: f.name.to_string(),
                });
            }
            let existing = if mutation {
                // Mutations run in order: only the latest root fetch may be extended.
                roots
                    .last()
                    .copied()
                    .filter(|g| candidates.contains(&self.groups[*g].subgraph))
            } else {
                roots
                    .iter()
                    .copied()
                    .find(|g| candidates.contains(&self.groups[*g].subgraph))
            };
            let g = match existing {
                Some(g) => g,
                None => {
                    // The candidate that can serve the most of the remaining root fields.
                    let best = candidates
                        .iter()
                        .copied()
                        .max_by_key(|sg| {
                            let served = fields[i..]
                                .iter()
                                .filter(|f| {
                                    self.meta.resolvers_of(&root_type, &f.name).contains(sg)
                                })
                                .count();
                            (served, std::cmp::Reverse(sg.0))
                        })
                        .expect("candidates is not empty");
                    let g = self.new_group(best, Vec::new(), false, None);
                    roots.push(g);
                    g
                }
            };
            self.plan_field(g, &[], &root_type, f, &[], None, false)?;
        }
        Ok(())
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
    fn flatten(&self, sels: &[PSel], ty: &Name, out: &mut Vec<PField>) {
        for sel in sels {
            match sel {
                PSel::Field(f) => out.push(f.clone()),
                PSel::Frag(tc, children) => {
                    let applies = tc.as_ref().is_none_or(|tc| {
                        tc == ty || self.meta.possible_types(tc).iter().any(|p| p == ty)
                    });
                    if applies {
                        self.flatten(children, ty, out);
                    }
                }
            }
        }
    }

    fn sel_at(&mut self, g: usize, steps: &[Step]) -> &mut Vec<SgItem> {
        let mut cur = &mut self.groups[g].sel;
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
            let mut fields = Vec::new();
            self.flatten(sels, ty, &mut fields);
            for f in &fields {
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
        let possible_here: Vec<Name> = meta
            .possible_types(ty)
            .into_iter()
            .filter(|o| meta.is_possible_in_subgraph(ty, o, sg))
            .collect();
        for sel in sels {
            match sel {
                PSel::Field(f) if f.name == "__typename" => {
                    self.plan_field(g, steps, ty, f, rpath, provided, false)?;
                }
                PSel::Field(f) => {
                    if self.resolvable_here(ty, f, sg, provided) {
                        self.plan_field(g, steps, ty, f, rpath, provided, false)?;
                    } else if !meta.resolvers_of(ty, &f.name).is_empty() {
                        // The interface itself is an entity elsewhere (@interfaceObject).
                        self.jump(g, steps, ty, f, rpath, provided)?;
                    } else {
                        for o in &possible_here {
                            self.add_frag(g, steps, o);
                            let inner = Self::with(steps, Step::Frag(o.clone()));
                            self.plan_field(g, &inner, o, f, rpath, provided, false)?;
                        }
                    }
                }
                PSel::Frag(tc, children) => match tc {
                    Some(tc) if !meta.is_subtype_or_same(tc, ty) => {
                        let targets = meta.possible_types(tc);
                        for o in possible_here.iter().filter(|o| targets.contains(o)) {
                            self.add_frag(g, steps, o);
                            let inner = Self::with(steps, Step::Frag(o.clone()));
                            self.plan_sels(g, &inner, o, children, rpath, provided)?;
                        }
                    }
                    _ => self.plan_sels(g, steps, ty, children, rpath, provided)?,
                },
            }
        }
        Ok(())
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
        self.add_rep_matching(g2, ty, vec![ty.clone()], None, key.clone());
        self.add_frag(g2, &[], ty);
        self.plan_sels(g2, &[Step::Frag(ty.clone())], ty, &remote, rpath, None)?;
        self.touched.push(g2);
        Ok(())
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
        let resolution = meta.resolution(ty, &f.name, sg);
        let here = match resolution {
            Resolution::Resolvable(r) => {
                requires_satisfied || r.is_none_or(|r| r.requires.is_none())
            }
            Resolution::External => provided_sub.is_some(),
            Resolution::Absent => false,
        };
        if !here {
            return self.jump(g, steps, ty, f, rpath, provided);
        }
        let field_meta = meta
            .field_meta(ty, &f.name)
            .ok_or_else(|| PlanError::UnknownField {
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
            let child_ty = field_meta.output.clone();
            self.plan_sels(
                g,
                &inner,
                &child_ty,
                &f.children,
                &child_path,
                child_provided,
            )?;
        }
        Ok(())
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
            SelTreeItem::Field { name, sub } => {
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
        let candidates = meta.resolvers_of(ty, &f.name);
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
        let existing = candidates.iter().copied().find(|s| {
            self.children.contains_key(&(g, *s, rpath.to_vec()))
                && self.usable_key(ty, *s, from, provided).is_some()
        });
        let target = existing.or_else(|| {
            candidates
                .iter()
                .copied()
                .find(|s| self.usable_key(ty, *s, from, provided).is_some())
        });
        // No key of the target is available here: fetch one first from yet another
        // subgraph (like a @requires), then jump.
        let (target, key, key_hop) = match target {
            Some(t) => {
                let key = self
                    .usable_key(ty, t, from, provided)
                    .expect("target was chosen for having a usable key");
                (t, key, false)
            }
            None => {
                let indirect = candidates.iter().copied().find_map(|s| {
                    let keys = &meta.type_in_subgraph(ty, s)?.keys;
                    keys.iter().find(|k| k.resolvable).map(|k| (s, &k.fields))
                });
                let Some((t, key)) = indirect.filter(|_| self.depth < MAX_HOPS) else {
                    return Err(PlanError::NoKey {
                        ty: ty.to_string(),
                        field: f.name.to_string(),
                        from: meta.subgraph(from).name.clone(),
                    });
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

        let child_key = (g, target, rpath.to_vec());
        let g2 = match self.children.get(&child_key) {
            Some(g2) => *g2,
            None => {
                let g2 = self.new_group(target, rpath.to_vec(), true, Some(g));
                self.children.insert(child_key, g2);
                g2
            }
        };
        for d in key_groups {
            if d != g2 && !self.groups[g2].deps.contains(&d) {
                self.groups[g2].deps.push(d);
            }
        }
        let mut rep_fields = key.clone();
        let requires = match meta.resolution(ty, &f.name, target) {
            Resolution::Resolvable(Some(r)) => r.requires.as_ref(),
            _ => None,
        };
        if let Some(requires) = requires {
            let before = self.touched.len();
            self.plan_sels(g, steps, ty, &from_tree(requires), rpath, provided)?;
            let needed: Vec<usize> = self.touched[before..]
                .iter()
                .copied()
                .filter(|d| *d != g2)
                .collect();
            for d in needed {
                if !self.groups[g2].deps.contains(&d) {
                    self.groups[g2].deps.push(d);
                }
            }
            rep_fields.merge(requires);
        }
        self.add_rep(g2, ty, target, rep_fields);
        self.add_frag(g2, &[], ty);
        self.plan_field(g2, &[Step::Frag(ty.clone())], ty, f, rpath, None, true)?;
        self.touched.push(g2);
        Ok(())
    }

    fn add_rep(&mut self, g: usize, ty: &Name, target: SubgraphId, fields: SelTree) {
        let meta = self.meta;
        let interface_object = meta
            .type_in_subgraph(ty, target)
            .is_some_and(|t| t.interface_object);
        let mut matches = meta.possible_types(ty);
        if matches.is_empty() {
            matches.push(ty.clone());
        }
        let send = interface_object.then(|| ty.clone());
        self.add_rep_matching(g, ty, matches, send, fields);
    }

    fn add_rep_matching(
        &mut self,
        g: usize,
        ty: &Name,
        matches: Vec<Name>,
        send_typename: Option<Name>,
        fields: SelTree,
    ) {
        let reps = &mut self.groups[g].reps;
        if let Some(rep) = reps.iter_mut().find(|r| &r.type_condition == ty) {
            rep.fields.merge(&fields);
            for m in matches {
                if !rep.matches.contains(&m) {
                    rep.matches.push(m);
                }
            }
            return;
        }
        reps.push(RepSpec {
            type_condition: ty.clone(),
            matches,
            send_typename,
            fields,
        });
    }

    fn finish(mut self, ir: &OpIr) -> QueryPlan {
        if ir.kind() != OperationType::Mutation {
            self.merge_siblings();
        }
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
            .map(|group| self.fetch(group, ir))
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
                let same_typename = b.reps.iter().all(|rb| {
                    a.reps.iter().all(|ra| {
                        ra.type_condition != rb.type_condition
                            || ra.send_typename == rb.send_typename
                    })
                });
                let mut sel = a.sel.clone();
                if !same_typename || !merge_items(&mut sel, &b.sel) {
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
                        rep.matches,
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
        Fetch {
            subgraph: group.subgraph,
            subgraph_name: self.meta.subgraph(group.subgraph).name.clone(),
            operation,
            variables,
            merge_paths: group.merge_paths.clone(),
            entity: group.entity.then(|| EntityFetch {
                reps: group.reps.clone(),
            }),
        }
    }
}

/// Level of each member in the dependency DAG (0: no dependencies among `members`).
fn compute_levels(groups: &[Group], members: &[usize]) -> Vec<usize> {
    let mut level = vec![0usize; groups.len()];
    // Dependencies may be created after their dependents (@requires), so relax until
    // stable; a dependency chain is at most `members.len()` long.
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

fn print_sel(items: &[SgItem], out: &mut String) {
    out.push('{');
    for item in items {
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
