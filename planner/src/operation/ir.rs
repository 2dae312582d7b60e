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
    },
}

#[derive(Debug, Default, Clone)]
pub struct OpIr {
    pub kind: Option<OperationType>,
    pub root_type: Option<Name>,
    pub fields: Vec<OpField>,
    pub selsets: Vec<Vec<OpSel>>,
    pub root: Option<SelSetId>,
    pub variables: Vec<Node<ast::VariableDefinition>>,
    /// The variables `@skip`/`@include` read, in order of first use: plans differ by
    /// their values (operations with more than [`ConditionValues::MAX`] are refused).
    pub condition_variables: Vec<Name>,
}

/// The values of an operation's [`OpIr::condition_variables`] in one request: bit `i`
/// is variable `i`. Plans are made per value, so an excluded field is never fetched.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ConditionValues(pub u64);

impl ConditionValues {
    /// Most condition variables an operation may have (one bit each).
    pub const MAX: usize = 64;

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
}

pub(super) fn lower(_schema: &Schema, doc: &ExecutableDocument, op: &Operation) -> OpIr {
    let mut lowering = Lowering {
        doc,
        ir: OpIr::default(),
        fragments: FxHashMap::default(),
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
    for c in conditions.flat_map(|c| &c.0) {
        if let Condition::Variable { name, .. } = c
            && !out.contains(name)
        {
            out.push(name.clone());
        }
    }
    out
}

struct Lowering<'a> {
    doc: &'a ExecutableDocument,
    ir: OpIr,
    fragments: FxHashMap<Name, SelSetId>,
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
                Selection::InlineFragment(f) => OpSel::Fragment {
                    type_condition: f.type_condition.clone(),
                    conditions: Conditions::from_directives(&f.directives),
                    selection: self.selset(&f.selection_set),
                },
                Selection::FragmentSpread(spread) => {
                    let Some(fragment) = self.doc.fragments.get(&spread.fragment_name) else {
                        continue; // validation guarantees the fragment exists
                    };
                    let selection = match self.fragments.get(&spread.fragment_name) {
                        Some(id) => *id,
                        None => {
                            let id = self.selset(&fragment.selection_set);
                            self.fragments.insert(spread.fragment_name.clone(), id);
                            id
                        }
                    };
                    OpSel::Fragment {
                        type_condition: Some(fragment.type_condition().clone()),
                        conditions: Conditions::from_directives(&spread.directives),
                        selection,
                    }
                }
            });
        }
        self.ir.selsets[id.0 as usize] = items;
        id
    }
}
