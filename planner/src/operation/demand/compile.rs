//! Compiling an operation's estimate: everything that does not depend on the request
//! folded into constants, the rest left as nodes for [`super::eval`].

use super::nodes::{Cond, CostNode, CostPlan, DynArg, Size, Slice};
use super::values::{Input, is_composite, number, reads_variables, score, slicing_size};
use std::ops::Range;

use apollo_compiler::Name;
use apollo_compiler::Node;
use apollo_compiler::ast::Value;
use graphfleet_federation::Supergraph;
use graphfleet_federation::cost::ListSize;
use graphfleet_federation::meta::{FieldId, SelTree, SelTreeItem, TypeId};

use crate::operation::ir::{Condition, Conditions, OpIr, OpSel, SelSetId};

pub(super) struct Compiler<'a> {
    pub(super) sg: &'a Supergraph,
    pub(super) ir: &'a OpIr,
    pub(super) list_size: f64,
    pub(super) plan: CostPlan,
}

/// The size `sizedFields` hand to child fields: their names and the parent's size.
type Sized<'s> = Option<(&'s [Name], &'s Size)>;

impl Compiler<'_> {
    fn push(&mut self, node: CostNode) -> u32 {
        self.plan.nodes.push(node);
        self.plan.nodes.len() as u32 - 1
    }

    fn push_kids(&mut self, kids: Vec<u32>) -> Range<u32> {
        let start = self.plan.kids.len() as u32;
        self.plan.kids.extend(kids);
        start..self.plan.kids.len() as u32
    }

    pub(super) fn push_group(&mut self, cond: Cond, constant: f64, children: Vec<u32>) -> u32 {
        if cond.is_empty() && children.is_empty() {
            return self.push(CostNode::Const(constant));
        }
        let children = self.push_kids(children);
        self.push(CostNode::Group {
            cond,
            constant,
            children,
        })
    }

    /// A selection set: the sum of its constant parts and the nodes of the rest.
    pub(super) fn selset(
        &mut self,
        id: SelSetId,
        parent: Option<TypeId>,
        sized: Sized,
    ) -> (f64, Vec<u32>) {
        let (mut constant, mut nodes) = (0.0, Vec::new());
        for sel in self.ir.selset(id) {
            let node = match sel {
                OpSel::Field(fid) => {
                    let field = self.ir.field(*fid);
                    let Some(cond) = self.cond(&field.conditions) else {
                        continue;
                    };
                    self.field(*fid, parent, cond, sized)
                }
                OpSel::Fragment {
                    type_condition,
                    conditions,
                    selection,
                    ..
                } => {
                    let Some(cond) = self.cond(conditions) else {
                        continue;
                    };
                    let ty = match type_condition {
                        Some(t) => self.sg.meta.type_id(t),
                        None => parent,
                    };
                    let (c, kids) = self.selset(*selection, ty, sized);
                    self.push_group(cond, c, kids)
                }
            };
            match self.plan.nodes[node as usize] {
                CostNode::Const(v) => constant += v,
                _ => nodes.push(node),
            }
        }
        (constant, nodes)
    }

    /// `None`: excluded whatever the request.
    fn cond(&self, conditions: &Conditions) -> Option<Cond> {
        let mut cond = Cond::default();
        for c in &conditions.0 {
            match c {
                Condition::Literal { include, value } if include != value => return None,
                Condition::Literal { .. } => {}
                Condition::Variable { include, name } => {
                    let bit = self
                        .ir
                        .condition_variables
                        .iter()
                        .position(|v| v == name)
                        .map_or(0, |i| 1u64 << i);
                    if *include {
                        cond.must_be_true |= bit;
                    } else {
                        cond.must_be_false |= bit;
                    }
                }
            }
        }
        Some(cond)
    }

    fn field(
        &mut self,
        id: crate::operation::ir::OpFieldId,
        parent: Option<TypeId>,
        cond: Cond,
        sized: Sized,
    ) -> u32 {
        let field = self.ir.field(id);
        let meta = &self.sg.meta;
        // __typename and introspection fields cost nothing.
        let Some(fid) = parent.and_then(|p| meta.field_of(p, &field.name)) else {
            return self.push(CostNode::Const(0.0));
        };
        let cost = &self.sg.cost;
        let out = meta.type_id(field.ty.inner_named_type());
        let own = cost
            .field_weight(fid)
            .or_else(|| out.and_then(|t| cost.type_weight(t)))
            .unwrap_or_else(|| if is_composite(self.sg, out) { 1.0 } else { 0.0 });
        let list_size = cost.list_size(fid);
        let size = match sized {
            Some((names, size)) if field.ty.is_list() && names.contains(&field.name) => {
                size.clone()
            }
            _ if field.ty.is_list() => self.size(fid, &field.arguments, list_size),
            _ => Size::Fixed(1.0),
        };
        // This field's own size, handed to its sized child fields.
        let child_size;
        let child_sized = match list_size.filter(|l| !l.sized_fields.is_empty()) {
            Some(l) => {
                child_size = self.size(fid, &field.arguments, Some(l));
                Some((l.sized_fields.as_slice(), &child_size))
            }
            None => None,
        };
        let (children_const, kids) = match field.selection {
            Some(sel) => self.selset(sel, out, child_sized),
            None => (0.0, Vec::new()),
        };
        let (args_const, dyn_args) = self.arguments(fid, &field.arguments);
        let extra = args_const + self.requires_cost(fid);
        let base = own + children_const;
        if let (true, Size::Fixed(n), true, true) =
            (cond.is_empty(), &size, kids.is_empty(), dyn_args.is_empty())
        {
            return self.push(CostNode::Const(n * base + extra));
        }
        let start = self.plan.args.len() as u32;
        self.plan.args.extend(dyn_args);
        let args = start..self.plan.args.len() as u32;
        let children = self.push_kids(kids);
        self.push(CostNode::Field {
            cond,
            size,
            base,
            extra,
            args,
            children,
        })
    }

    /// The size of list field `fid` given its arguments in the operation.
    fn size(
        &self,
        fid: FieldId,
        arguments: &[Node<apollo_compiler::ast::Argument>],
        list_size: Option<&ListSize>,
    ) -> Size {
        let Some(l) = list_size else {
            return Size::Fixed(self.list_size);
        };
        let fallback = l.assumed_size.map_or(self.list_size, |n| n as f64);
        if l.slicing_arguments.is_empty() {
            return Size::Fixed(fallback);
        }
        let defs = self.sg.cost.arguments(fid);
        let mut given = Vec::new();
        let mut default: Option<f64> = None;
        for name in &l.slicing_arguments {
            match arguments.iter().find(|a| a.name == *name) {
                Some(a) => given.push(match a.value.as_ref() {
                    Value::Variable(v) => Slice::Variable(v.clone()),
                    v => Slice::Literal(number(v)),
                }),
                None => {
                    let d = defs.iter().find(|d| d.name == *name);
                    if let Some(n) = d.and_then(|d| d.default.as_deref()).and_then(number) {
                        default = Some(default.map_or(n, |m: f64| m.max(n)));
                    }
                }
            }
        }
        let parent = &self.sg.meta.ty(self.sg.meta.field(fid).parent).name;
        let size = Size::Slicing {
            field: format!("{parent}.{}", self.sg.meta.field(fid).name),
            given,
            default,
            fallback,
            require_one: l.require_one_slicing_argument,
            names: l.slicing_arguments.clone(),
        };
        // All literal: decide now.
        match &size {
            Size::Slicing { given, .. } if given.iter().all(|s| matches!(s, Slice::Literal(_))) => {
                match slicing_size(&size, |_| None) {
                    Ok(n) => Size::Fixed(n),
                    Err(e) => Size::Invalid(e.0),
                }
            }
            _ => size,
        }
    }

    /// Constant argument costs, and the arguments to score per request.
    fn arguments(
        &self,
        fid: FieldId,
        arguments: &[Node<apollo_compiler::ast::Argument>],
    ) -> (f64, Vec<DynArg>) {
        let defs = self.sg.cost.arguments(fid);
        let (mut constant, mut dynamic) = (0.0, Vec::new());
        for arg in arguments {
            let Some(def) = defs.iter().find(|d| d.name == arg.name) else {
                continue;
            };
            if reads_variables(&arg.value) {
                dynamic.push(DynArg {
                    value: arg.value.clone(),
                    ty: def.ty,
                    weight: def.weight,
                });
            } else {
                constant += score(self.sg, &Input::Ast(&arg.value, None), def.ty, def.weight);
            }
        }
        (constant, dynamic)
    }

    /// The cost of the fields `fid`'s `@requires` selects (the largest over subgraphs).
    fn requires_cost(&self, fid: FieldId) -> f64 {
        let meta = &self.sg.meta;
        let parent = meta.field(fid).parent;
        meta.field(fid)
            .resolvers
            .iter()
            .filter_map(|r| r.requires.as_ref())
            .map(|tree| self.tree_cost(tree, Some(parent)))
            .fold(0.0, f64::max)
    }

    /// A field set's cost: fields as in an operation, lists at their assumed size.
    fn tree_cost(&self, tree: &SelTree, parent: Option<TypeId>) -> f64 {
        let meta = &self.sg.meta;
        let cost = &self.sg.cost;
        tree.items
            .iter()
            .map(|item| match item {
                SelTreeItem::Field { name, sub, .. } => {
                    let Some(fid) = parent.and_then(|p| meta.field_of(p, name)) else {
                        return 0.0;
                    };
                    let def = meta.field(fid);
                    let out = meta.type_id(def.output.as_str());
                    let own = cost
                        .field_weight(fid)
                        .or_else(|| out.and_then(|t| cost.type_weight(t)))
                        .unwrap_or_else(|| if is_composite(self.sg, out) { 1.0 } else { 0.0 });
                    let size = if def.ty.is_list() {
                        cost.list_size(fid)
                            .and_then(|l| l.assumed_size)
                            .map_or(self.list_size, |n| n as f64)
                    } else {
                        1.0
                    };
                    size * (own + self.tree_cost(sub, out))
                }
                SelTreeItem::Fragment {
                    type_condition,
                    sub,
                } => self.tree_cost(sub, meta.type_id(type_condition)),
            })
            .sum()
    }
}
