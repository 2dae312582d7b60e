//! The operation IR: named fragments inlined (each fragment body lowered once and
//! shared), `@skip`/`@include` kept as conditions evaluated per request.

use apollo_compiler::ast::{self, OperationType};
use apollo_compiler::executable::{ExecutableDocument, Operation, Selection, SelectionSet};
use apollo_compiler::response::JsonMap;
use apollo_compiler::{Name, Node, Schema};
use rustc_hash::FxHashMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OpFieldId(pub u32);
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SelSetId(pub u32);

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Condition {
    /// `@include(if:)` when `include`, `@skip(if:)` otherwise.
    Literal {
        include: bool,
        value: bool,
    },
    Variable {
        include: bool,
        name: Name,
    },
}

/// A conjunction of `@skip`/`@include` conditions.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Conditions(pub Vec<Condition>);

impl Conditions {
    fn from_directives(directives: &ast::DirectiveList) -> Self {
        let mut out = Vec::new();
        for d in directives.iter() {
            let include = match d.name.as_str() {
                "include" => true,
                "skip" => false,
                _ => continue,
            };
            match d.specified_argument_by_name("if").map(|v| v.as_ref()) {
                Some(ast::Value::Boolean(value)) => out.push(Condition::Literal {
                    include,
                    value: *value,
                }),
                Some(ast::Value::Variable(name)) => out.push(Condition::Variable {
                    include,
                    name: name.clone(),
                }),
                _ => {}
            }
        }
        Self(out)
    }

    /// Whether these exclude the selection whatever the request: literal arguments,
    /// and variables whose values are known (`values`; without them, variables include).
    pub fn excluded(&self, ir: &OpIr, values: Option<ConditionValues>) -> bool {
        self.0.iter().any(|c| match c {
            Condition::Literal { include, value } => include != value,
            Condition::Variable { include, name } => values
                .and_then(|v| v.get(ir, name))
                .is_some_and(|value| value != *include),
        })
    }

    pub fn and(&self, other: &Conditions) -> Conditions {
        let mut out = self.0.clone();
        out.extend(other.0.iter().cloned());
        Conditions(out)
    }

    /// Whether the selection is included given the coerced variables.
    pub fn evaluate(&self, variables: &JsonMap) -> bool {
        self.0.iter().all(|c| {
            let (include, value) = match c {
                Condition::Literal { include, value } => (*include, *value),
                Condition::Variable { include, name } => (
                    *include,
                    variables
                        .get(name.as_str())
                        .and_then(|v| v.as_bool())
                        .unwrap_or(false),
                ),
            };
            value == include
        })
    }
}

#[derive(Debug, Clone)]
pub struct OpField {
    pub response_key: Name,
    pub name: Name,
    pub arguments: Vec<Node<ast::Argument>>,
    /// The type the field was selected on (object, interface or union).
    pub parent_type: Name,
    pub ty: ast::Type,
    pub conditions: Conditions,
    pub selection: Option<SelSetId>,
}

#[derive(Debug, Clone)]
pub enum OpSel {
    Field(OpFieldId),
    Fragment {
        type_condition: Option<Name>,
        conditions: Conditions,
        selection: SelSetId,
        /// `@defer` on it: delivered in a later payload when the request allows it.
        defer: Option<DeferId>,
    },
}

/// A `@defer`red fragment of the operation, by position in [`OpIr::defers`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeferId(pub u32);

/// Which payloads select something, one bit each: [`PRIMARY`] for the initial
/// payload, [`DeferId::bit`] for each deferred fragment.
pub type DeferMask = u64;

/// The initial payload's bit in a [`DeferMask`].
pub const PRIMARY: DeferMask = 1;

impl DeferId {
    pub fn bit(self) -> DeferMask {
        1 << (self.0 + 1)
    }
}

/// One `@defer` of the operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Defer {
    pub label: Option<String>,
    /// `if:`: a literal, or a variable read per request.
    pub condition: DeferIf,
    /// The deferred fragment it is nested in: its payload comes after that one.
    pub parent: Option<DeferId>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeferIf {
    Literal(bool),
    Variable(Name),
}

/// Most `@defer`s honoured per operation (one [`DeferMask`] bit each besides
/// [`PRIMARY`]); later ones are delivered with their parent payload.
pub const MAX_DEFERS: usize = 63;

#[derive(Debug, Default, Clone)]
pub struct OpIr {
    pub kind: Option<OperationType>,
    pub root_type: Option<Name>,
    pub fields: Vec<OpField>,
    pub selsets: Vec<Vec<OpSel>>,
    pub root: Option<SelSetId>,
    pub variables: Vec<Node<ast::VariableDefinition>>,
    /// The variables `@skip`/`@include` and `@defer(if:)` read, in order of first use:
    /// plans differ by their values (operations with more than [`ConditionValues::MAX`]
    /// are refused).
    pub condition_variables: Vec<Name>,
    /// The `@defer`red fragments, by [`DeferId`].
    pub defers: Vec<Defer>,
}

/// The values of an operation's [`OpIr::condition_variables`] in one request: bit `i`
/// is variable `i`; the top bit says whether the client takes incremental delivery
/// (`@defer` honoured). Plans are made per value, so an excluded field is never fetched.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ConditionValues(pub u64);

impl ConditionValues {
    /// Most condition variables an operation may have (one bit each).
    pub const MAX: usize = 63;
    const INCREMENTAL: u64 = 1 << 63;

    /// These values for a client that takes incremental delivery.
    pub fn with_incremental(self) -> Self {
        Self(self.0 | Self::INCREMENTAL)
    }

    /// Whether `@defer` is honoured (the client takes incremental delivery).
    pub fn incremental(self) -> bool {
        self.0 & Self::INCREMENTAL != 0
    }

    /// The values `ir`'s condition variables take in the coerced `variables`.
    pub fn of(ir: &OpIr, variables: &JsonMap) -> Self {
        let mut bits = 0u64;
        for (i, name) in ir.condition_variables.iter().enumerate() {
            if variables.get(name.as_str()).and_then(|v| v.as_bool()) == Some(true) {
                bits |= 1 << i;
            }
        }
        Self(bits)
    }

    /// The value of variable `name`, when it is one of `ir`'s condition variables.
    pub fn get(self, ir: &OpIr, name: &Name) -> Option<bool> {
        let i = ir.condition_variables.iter().position(|v| v == name)?;
        Some(self.0 & (1 << i) != 0)
    }
}

impl OpIr {
    pub fn field(&self, id: OpFieldId) -> &OpField {
        &self.fields[id.0 as usize]
    }

    pub fn selset(&self, id: SelSetId) -> &[OpSel] {
        &self.selsets[id.0 as usize]
    }

    pub fn root(&self) -> SelSetId {
        self.root.expect("lowered operations always have a root")
    }

    pub fn root_type(&self) -> &Name {
        self.root_type
            .as_ref()
            .expect("lowered operations always have a root type")
    }

    pub fn kind(&self) -> OperationType {
        self.kind.unwrap_or(OperationType::Query)
    }

    pub fn defer(&self, id: DeferId) -> &Defer {
        &self.defers[id.0 as usize]
    }

    /// Whether fragment `defer` is delivered later in a request with `values` (`None`:
    /// never): only queries defer, only for clients taking incremental delivery, and
    /// only when `if:` holds.
    pub fn defer_active(&self, defer: Option<DeferId>, values: Option<ConditionValues>) -> bool {
        let (Some(id), Some(values)) = (defer, values) else {
            return false;
        };
        if !values.incremental() || self.kind() != OperationType::Query {
            return false;
        }
        match &self.defer(id).condition {
            DeferIf::Literal(on) => *on,
            DeferIf::Variable(name) => values.get(self, name) == Some(true),
        }
    }

    /// Whether the operation has a `@defer` a request could honour.
    pub fn can_defer(&self) -> bool {
        self.kind() == OperationType::Query
            && self
                .defers
                .iter()
                .any(|d| d.condition != DeferIf::Literal(false))
    }
}

pub(super) fn lower(_schema: &Schema, doc: &ExecutableDocument, op: &Operation) -> OpIr {
    let mut lowering = Lowering {
        doc,
        ir: OpIr::default(),
        fragments: FxHashMap::default(),
        defer_stack: Vec::new(),
    };
    let root = lowering.selset(&op.selection_set);
    let mut ir = lowering.ir;
    ir.root = Some(root);
    ir.kind = Some(op.operation_type);
    ir.root_type = Some(op.selection_set.ty.clone());
    ir.variables = op.variables.clone();
    ir.condition_variables = condition_variables(&ir);
    ir
}

fn condition_variables(ir: &OpIr) -> Vec<Name> {
    let mut out: Vec<Name> = Vec::new();
    let conditions =
        ir.fields
            .iter()
            .map(|f| &f.conditions)
            .chain(ir.selsets.iter().flatten().filter_map(|s| match s {
                OpSel::Fragment { conditions, .. } => Some(conditions),
                OpSel::Field(_) => None,
            }));
    let defer_ifs = ir.defers.iter().filter_map(|d| match &d.condition {
        DeferIf::Variable(name) => Some(name),
        DeferIf::Literal(_) => None,
    });
    let names = conditions
        .flat_map(|c| &c.0)
        .filter_map(|c| match c {
            Condition::Variable { name, .. } => Some(name),
            Condition::Literal { .. } => None,
        })
        .chain(defer_ifs);
    for name in names {
        if !out.contains(name) {
            out.push(name.clone());
        }
    }
    out
}

struct Lowering<'a> {
    doc: &'a ExecutableDocument,
    ir: OpIr,
    /// Named fragments lowered so far, by name and the `@defer` they are inside (a
    /// fragment's nested defers belong to the payload it is spread in).
    fragments: FxHashMap<(Name, Option<DeferId>), SelSetId>,
    /// The `@defer`red fragments being lowered, innermost last.
    defer_stack: Vec<DeferId>,
}

impl Lowering<'_> {
    fn selset(&mut self, set: &SelectionSet) -> SelSetId {
        let id = SelSetId(self.ir.selsets.len() as u32);
        self.ir.selsets.push(Vec::new());
        let mut items = Vec::with_capacity(set.selections.len());
        for sel in &set.selections {
            items.push(match sel {
                Selection::Field(f) => {
                    let selection = (!f.selection_set.selections.is_empty())
                        .then(|| self.selset(&f.selection_set));
                    let fid = OpFieldId(self.ir.fields.len() as u32);
                    self.ir.fields.push(OpField {
                        response_key: f.response_key().clone(),
                        name: f.name.clone(),
                        arguments: f.arguments.clone(),
                        parent_type: set.ty.clone(),
                        ty: f.definition.ty.clone(),
                        conditions: Conditions::from_directives(&f.directives),
                        selection,
                    });
                    OpSel::Field(fid)
                }
                Selection::InlineFragment(f) => {
                    let defer = self.defer(&f.directives);
                    let selection = self.selset(&f.selection_set);
                    self.end_defer(defer);
                    OpSel::Fragment {
                        type_condition: f.type_condition.clone(),
                        conditions: Conditions::from_directives(&f.directives),
                        selection,
                        defer,
                    }
                }
                Selection::FragmentSpread(spread) => {
                    let Some(fragment) = self.doc.fragments.get(&spread.fragment_name) else {
                        continue; // validation guarantees the fragment exists
                    };
                    let defer = self.defer(&spread.directives);
                    let key = (
                        spread.fragment_name.clone(),
                        self.defer_stack.last().copied(),
                    );
                    let selection = match self.fragments.get(&key) {
                        Some(id) => *id,
                        None => {
                            let id = self.selset(&fragment.selection_set);
                            self.fragments.insert(key, id);
                            id
                        }
                    };
                    self.end_defer(defer);
                    OpSel::Fragment {
                        type_condition: Some(fragment.type_condition().clone()),
                        conditions: Conditions::from_directives(&spread.directives),
                        selection,
                        defer,
                    }
                }
            });
        }
        self.ir.selsets[id.0 as usize] = items;
        id
    }

    /// The `@defer` in `directives`, registered and entered (see [`Self::end_defer`]);
    /// `None` without one, or past [`MAX_DEFERS`] (then delivered with its parent).
    fn defer(&mut self, directives: &ast::DirectiveList) -> Option<DeferId> {
        let d = directives.get("defer")?;
        if self.ir.defers.len() >= MAX_DEFERS {
            return None;
        }
        let condition = match d.specified_argument_by_name("if").map(|v| v.as_ref()) {
            Some(ast::Value::Boolean(on)) => DeferIf::Literal(*on),
            Some(ast::Value::Variable(name)) => DeferIf::Variable(name.clone()),
            _ => DeferIf::Literal(true),
        };
        let label = match d.specified_argument_by_name("label").map(|v| v.as_ref()) {
            Some(ast::Value::String(s)) => Some(s.clone()),
            _ => None,
        };
        let id = DeferId(self.ir.defers.len() as u32);
        self.ir.defers.push(Defer {
            label,
            condition,
            parent: self.defer_stack.last().copied(),
        });
        self.defer_stack.push(id);
        Some(id)
    }

    fn end_defer(&mut self, defer: Option<DeferId>) {
        if defer.is_some() {
            self.defer_stack.pop();
        }
    }
}
