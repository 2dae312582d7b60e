//! Demand control: the static cost estimate of an operation, after the published
//! rules of Apollo's demand control (the IBM GraphQL cost directive specification).
//!
//! - A mutation costs 10 to start with; queries 0.
//! - A field returning an object, interface or union costs 1, a scalar or enum 0;
//!   `@cost(weight:)` on the field, else on its type, replaces that.
//! - A list field multiplies its own cost plus its selection's by the list size: the
//!   largest slicing argument the request gives (`@listSize(slicingArguments:)`,
//!   literal or variable; schema defaults when it gives none), else `assumedSize`, else
//!   the configured default. `sizedFields` hand the size to the named child fields of
//!   a connection-like type. `requireOneSlicingArgument` (true unless set false)
//!   makes any other number of slicing arguments an error.
//! - Arguments the request gives add their cost once (outside the list multiplier): a
//!   leaf value its definition's `@cost` (else its type's), an input object 1 (or its
//!   `@cost`) plus its fields', a list the sum of its items; null costs nothing.
//! - Fragments add their selection's cost (summed, as Apollo does, not the maximum over
//!   type conditions); `@skip`/`@include` leave out what they exclude.
//! - A field with `@requires` adds the cost of the required fields once (the largest
//!   over the subgraphs that require something), as Apollo does.
//!
//! The walk is compiled once per cached operation: everything that does not depend on
//! the request folds into constants, so an operation without variable-dependent parts
//! costs one read per request, and the rest is evaluated without allocating.

use std::ops::Range;

use apollo_compiler::Name;
use apollo_compiler::Node;
use apollo_compiler::ast::{OperationType, Value};
use apollo_compiler::response::{JsonMap, JsonValue};
use graphfleet_federation::Supergraph;
use graphfleet_federation::cost::{InputValueCost, ListSize};
use graphfleet_federation::meta::{FieldId, SelTree, SelTreeItem, TypeId, TypeKind};

use super::ir::{Condition, ConditionValues, Conditions, OpIr, OpSel, SelSetId};

/// What a mutation costs before its fields.
pub const MUTATION_BASE_COST: f64 = 10.0;

/// The `extensions.code` of an estimate over the limit (Apollo's).
pub const TOO_EXPENSIVE: &str = "COST_ESTIMATED_TOO_EXPENSIVE";
/// The `extensions.code` of a request breaking a `@listSize` rule (Apollo's).
pub const INVALID_LIST_SIZE: &str = "COST_QUERY_PARSE_FAILURE";

/// A request the estimate cannot score: `@listSize(requireOneSlicingArgument:)` broken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CostError(pub String);

/// `@skip`/`@include` on variables, as bits of [`ConditionValues`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Cond {
    must_be_true: u64,
    must_be_false: u64,
}

impl Cond {
    fn is_empty(self) -> bool {
        self.must_be_true == 0 && self.must_be_false == 0
    }

    fn holds(self, values: ConditionValues) -> bool {
        values.0 & self.must_be_true == self.must_be_true && values.0 & self.must_be_false == 0
    }
}

/// One slicing argument of a field in the operation.
#[derive(Debug, Clone)]
enum Slice {
    /// A literal value (or null).
    Literal(Option<f64>),
    /// A variable, with the argument's schema default when the variable is null.
    Variable(Name),
}

/// How many items a list field is taken to return.
#[derive(Debug, Clone)]
enum Size {
    Fixed(f64),
    /// Slicing arguments given through variables, decided per request.
    Slicing {
        field: String,
        given: Vec<Slice>,
        /// The largest schema default, used when the request gives none.
        default: Option<f64>,
        fallback: f64,
        require_one: bool,
        names: Vec<Name>,
    },
    /// Known at compile time to break `requireOneSlicingArgument`.
    Invalid(String),
}

#[derive(Debug, Clone)]
enum CostNode {
    Const(f64),
    Field {
        cond: Cond,
        size: Size,
        /// The field's own cost plus its constant children, per item.
        base: f64,
        /// Arguments and requirements: added once.
        extra: f64,
        /// Arguments whose value reads variables.
        args: Range<u32>,
        children: Range<u32>,
    },
    Group {
        cond: Cond,
        constant: f64,
        children: Range<u32>,
    },
}

/// An argument scored per request (its value reads variables).
#[derive(Debug, Clone)]
struct DynArg {
    value: Node<Value>,
    ty: Option<TypeId>,
    weight: Option<f64>,
}

/// An operation's cost, compiled once (see the module docs).
#[derive(Debug, Clone)]
pub struct CostPlan {
    nodes: Vec<CostNode>,
    kids: Vec<u32>,
    args: Vec<DynArg>,
    root: u32,
}

impl CostPlan {
    /// Compile `ir`'s estimate against `supergraph` with `list_size` items assumed for
    /// lists without `@listSize`.
    pub fn compile(supergraph: &Supergraph, ir: &OpIr, list_size: u64) -> Self {
        let mut c = Compiler {
            sg: supergraph,
            ir,
            list_size: list_size as f64,
            plan: CostPlan {
                nodes: Vec::new(),
                kids: Vec::new(),
                args: Vec::new(),
                root: 0,
            },
        };
        let base = if ir.kind() == OperationType::Mutation {
            MUTATION_BASE_COST
        } else {
            0.0
        };
        let root_ty = supergraph.meta.type_id(ir.root_type());
        let (constant, children) = c.selset(ir.root(), root_ty, None);
        let root = c.push_group(Cond::default(), base + constant, children);
        c.plan.root = root;
        c.plan
    }

    /// The estimate when it does not depend on the request.
    pub fn fixed(&self) -> Option<f64> {
        match self.nodes[self.root as usize] {
            CostNode::Const(v) => Some(v),
            _ => None,
        }
    }

    /// The estimate for one request: its coerced `variables` and the values of the
    /// operation's condition variables.
    pub fn estimate(
        &self,
        supergraph: &Supergraph,
        variables: &JsonMap,
        values: ConditionValues,
    ) -> Result<f64, CostError> {
        let eval = Eval {
            plan: self,
            sg: supergraph,
            variables,
            values,
        };
        eval.node(self.root)
    }
}

struct Compiler<'a> {
    sg: &'a Supergraph,
    ir: &'a OpIr,
    list_size: f64,
    plan: CostPlan,
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

    fn push_group(&mut self, cond: Cond, constant: f64, children: Vec<u32>) -> u32 {
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
    fn selset(&mut self, id: SelSetId, parent: Option<TypeId>, sized: Sized) -> (f64, Vec<u32>) {
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
        id: super::ir::OpFieldId,
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

fn is_composite(sg: &Supergraph, ty: Option<TypeId>) -> bool {
    ty.is_some_and(|t| {
        matches!(
            sg.meta.ty(t).kind,
            TypeKind::Object | TypeKind::Interface | TypeKind::Union
        )
    })
}

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => i.try_to_i32().ok().map(f64::from),
        Value::Float(f) => f.try_to_f64().ok(),
        _ => None,
    }
}

fn json_number(v: &JsonValue) -> Option<f64> {
    v.as_f64()
}

fn reads_variables(v: &Value) -> bool {
    match v {
        Value::Variable(_) => true,
        Value::List(items) => items.iter().any(|i| reads_variables(i)),
        Value::Object(fields) => fields.iter().any(|(_, v)| reads_variables(v)),
        _ => false,
    }
}

/// A list size from slicing arguments; `variable` resolves a variable's number.
fn slicing_size(size: &Size, variable: impl Fn(&Name) -> Option<f64>) -> Result<f64, CostError> {
    let Size::Slicing {
        field,
        given,
        default,
        fallback,
        require_one,
        names,
    } = size
    else {
        return Ok(0.0);
    };
    let (mut count, mut largest) = (0usize, None::<f64>);
    for slice in given {
        let n = match slice {
            Slice::Literal(n) => *n,
            Slice::Variable(v) => variable(v),
        };
        if let Some(n) = n {
            count += 1;
            largest = Some(largest.map_or(n, |m| m.max(n)));
        }
    }
    if count == 0 && default.is_some() {
        count = 1;
        largest = *default;
    }
    if *require_one && count != 1 {
        let list: Vec<&str> = names.iter().map(Name::as_str).collect();
        return Err(CostError(format!(
            "{field} needs exactly one of its slicing arguments ({}); the request gives {count}",
            list.join(", ")
        )));
    }
    Ok(largest.map_or(*fallback, |n| n.max(0.0)))
}

/// An argument value: from the document (variables resolved through the map) or
/// from a variable's JSON.
enum Input<'v> {
    Ast(&'v Value, Option<&'v JsonMap>),
    Json(&'v JsonValue),
}

/// What one argument or input-field value costs (see the module docs).
fn score(sg: &Supergraph, value: &Input, ty: Option<TypeId>, weight: Option<f64>) -> f64 {
    let input_object = ty.filter(|t| sg.meta.ty(*t).kind == TypeKind::InputObject);
    let leaf = || {
        weight
            .or_else(|| ty.and_then(|t| sg.cost.type_weight(t)))
            .unwrap_or(0.0)
    };
    let field_cost = |defs: &[InputValueCost], name: &str, v: Input| {
        defs.iter()
            .find(|d| d.name == name)
            .map_or(0.0, |d| score(sg, &v, d.ty, d.weight))
    };
    match value {
        Input::Ast(Value::Null, _) | Input::Json(JsonValue::Null) => 0.0,
        Input::Ast(Value::Variable(name), vars) => vars
            .and_then(|m| m.get(name.as_str()))
            .map_or(0.0, |j| score(sg, &Input::Json(j), ty, weight)),
        Input::Ast(Value::List(items), vars) => items
            .iter()
            .map(|i| score(sg, &Input::Ast(i, *vars), ty, weight))
            .sum(),
        Input::Json(JsonValue::Array(items)) => items
            .iter()
            .map(|i| score(sg, &Input::Json(i), ty, weight))
            .sum(),
        Input::Ast(Value::Object(fields), vars) => match input_object {
            Some(t) => {
                let defs = sg.cost.input_fields(t);
                let inner: f64 = fields
                    .iter()
                    .map(|(k, v)| field_cost(defs, k, Input::Ast(v, *vars)))
                    .sum();
                weight.unwrap_or(1.0) + inner
            }
            None => leaf(),
        },
        Input::Json(JsonValue::Object(fields)) => match input_object {
            Some(t) => {
                let defs = sg.cost.input_fields(t);
                let inner: f64 = fields
                    .iter()
                    .map(|(k, v)| field_cost(defs, k.as_str(), Input::Json(v)))
                    .sum();
                weight.unwrap_or(1.0) + inner
            }
            None => leaf(),
        },
        _ => leaf(),
    }
}

struct Eval<'a> {
    plan: &'a CostPlan,
    sg: &'a Supergraph,
    variables: &'a JsonMap,
    values: ConditionValues,
}

impl Eval<'_> {
    fn node(&self, id: u32) -> Result<f64, CostError> {
        match &self.plan.nodes[id as usize] {
            CostNode::Const(v) => Ok(*v),
            CostNode::Group {
                cond,
                constant,
                children,
            } => {
                if !cond.holds(self.values) {
                    return Ok(0.0);
                }
                Ok(constant + self.children(children.clone())?)
            }
            CostNode::Field {
                cond,
                size,
                base,
                extra,
                args,
                children,
            } => {
                if !cond.holds(self.values) {
                    return Ok(0.0);
                }
                let n = match size {
                    Size::Fixed(n) => *n,
                    Size::Invalid(message) => return Err(CostError(message.clone())),
                    slicing => slicing_size(slicing, |v| {
                        self.variables.get(v.as_str()).and_then(json_number)
                    })?,
                };
                let per_item = base + self.children(children.clone())?;
                let args: f64 = self.plan.args[args.start as usize..args.end as usize]
                    .iter()
                    .map(|a| {
                        let value = Input::Ast(&a.value, Some(self.variables));
                        score(self.sg, &value, a.ty, a.weight)
                    })
                    .sum();
                Ok(n * per_item + extra + args)
            }
        }
    }

    fn children(&self, range: Range<u32>) -> Result<f64, CostError> {
        let mut sum = 0.0;
        for &kid in &self.plan.kids[range.start as usize..range.end as usize] {
            sum += self.node(kid)?;
        }
        Ok(sum)
    }
}
