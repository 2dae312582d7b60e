//! Operations compiled once into a flat form the executor walks without looking
//! anything up: fields collected per concrete type (fragments inlined, same
//! response keys merged), arguments as JSON, response keys pre-escaped.

use apollo_compiler::ast::{OperationType, Type, Value as AstValue};
use apollo_compiler::executable::{ExecutableDocument, Selection, SelectionSet};
use apollo_compiler::schema::ExtendedType;
use apollo_compiler::validation::Valid;
use apollo_compiler::{Name, Node, Schema};
use serde_json::Value;

/// Deeper operations are refused instead of recursing without bound.
const MAX_DEPTH: usize = 64;
/// Selections visited while compiling one document: bounds fragment fan-out
/// (`...A ...A` nested many times expands exponentially).
const MAX_SELECTIONS: usize = 200_000;

/// An argument: a literal (converted once) or a variable reference.
#[derive(Debug)]
pub enum Arg {
    Literal(Value),
    Variable(Box<str>),
    /// A literal list/object containing variables, resolved per request.
    Nested(AstValue),
}

/// A `@skip`/`@include` condition depending on a variable.
#[derive(Debug)]
pub struct Condition {
    pub variable: Box<str>,
    /// Included when the variable equals this value (`@include` → true, `@skip` → false).
    pub include_when: bool,
}

#[derive(Debug)]
pub struct Field {
    /// `"key":` as JSON bytes.
    pub key_json: Box<[u8]>,
    pub key: Box<str>,
    pub name: Box<str>,
    pub args: Vec<(Box<str>, Arg)>,
    pub ty: Type,
    pub conditions: Vec<Condition>,
    pub children: Option<Children>,
}

/// A sub-selection, collected once per concrete type it may resolve to.
#[derive(Debug, Default)]
pub struct Children {
    pub per_type: Vec<(Name, Vec<Field>)>,
}

impl Children {
    pub fn for_type(&self, typename: &str) -> Option<&[Field]> {
        self.per_type
            .iter()
            .find(|(name, _)| name == typename)
            .map(|(_, fields)| fields.as_slice())
    }
}

#[derive(Debug)]
pub struct Plan {
    pub name: Option<Name>,
    pub kind: OperationType,
    pub fields: Vec<Field>,
    pub variable_defaults: Vec<(Box<str>, Value)>,
}

/// All operations of one document.
#[derive(Debug)]
pub struct Compiled {
    pub operations: Vec<Plan>,
}

impl Compiled {
    pub fn operation(&self, name: Option<&str>) -> Result<&Plan, String> {
        match name {
            Some(name) => self
                .operations
                .iter()
                .find(|op| op.name.as_deref() == Some(name))
                .ok_or_else(|| format!("Unknown operation named \"{name}\".")),
            None if self.operations.len() == 1 => Ok(&self.operations[0]),
            None => {
                Err("Must provide operation name if query contains multiple operations.".into())
            }
        }
    }
}

pub fn compile(
    schema: &Valid<Schema>,
    doc: &Valid<ExecutableDocument>,
) -> Result<Compiled, String> {
    let compiler = Compiler {
        schema,
        doc,
        visited: std::cell::Cell::new(0),
    };
    let operations = doc
        .operations
        .iter()
        .map(|op| {
            let root_type = &op.selection_set.ty;
            let fields = compiler.collect(&[&op.selection_set], root_type, 0)?;
            let variable_defaults = op
                .variables
                .iter()
                .filter_map(|v| {
                    v.default_value
                        .as_ref()
                        .map(|d| (v.name.as_str().into(), literal(d)))
                })
                .collect();
            Ok(Plan {
                name: op.name.clone(),
                kind: op.operation_type,
                fields,
                variable_defaults,
            })
        })
        .collect::<Result<_, String>>()?;
    Ok(Compiled { operations })
}

struct Compiler<'a> {
    schema: &'a Valid<Schema>,
    doc: &'a Valid<ExecutableDocument>,
    visited: std::cell::Cell<usize>,
}

/// A field being collected: its first occurrence plus every sub-selection merged into it.
struct Pending<'a> {
    field: &'a Node<apollo_compiler::executable::Field>,
    conditions: Vec<Condition>,
    sets: Vec<&'a SelectionSet>,
}

impl<'a> Compiler<'a> {
    fn applies(&self, condition: Option<&Name>, concrete: &Name) -> bool {
        condition.is_none_or(|c| c == concrete || self.schema.is_subtype(c, concrete))
    }

    fn collect(
        &self,
        sets: &[&'a SelectionSet],
        concrete: &Name,
        depth: usize,
    ) -> Result<Vec<Field>, String> {
        if depth > MAX_DEPTH {
            return Err(format!(
                "Operation is nested deeper than {MAX_DEPTH} levels."
            ));
        }
        let mut pending: Vec<Pending<'a>> = Vec::new();
        for set in sets {
            self.gather(set, concrete, &mut pending, &mut Vec::new(), depth)?;
        }
        pending.into_iter().map(|p| self.finish(p, depth)).collect()
    }

    fn gather(
        &self,
        set: &'a SelectionSet,
        concrete: &Name,
        pending: &mut Vec<Pending<'a>>,
        inherited: &mut Vec<(Box<str>, bool)>,
        depth: usize,
    ) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!(
                "Operation is nested deeper than {MAX_DEPTH} levels."
            ));
        }
        self.visited.set(self.visited.get() + set.selections.len());
        if self.visited.get() > MAX_SELECTIONS {
            return Err(format!(
                "Operation expands to more than {MAX_SELECTIONS} selections."
            ));
        }
        for selection in &set.selections {
            let (directives, nested, condition) = match selection {
                Selection::Field(f) => (&f.directives, None, None),
                Selection::FragmentSpread(s) => {
                    let fragment = self
                        .doc
                        .fragments
                        .get(&s.fragment_name)
                        .ok_or_else(|| format!("Unknown fragment \"{}\".", s.fragment_name))?;
                    (
                        &s.directives,
                        Some(&fragment.selection_set),
                        Some(fragment.type_condition()),
                    )
                }
                Selection::InlineFragment(i) => (
                    &i.directives,
                    Some(&i.selection_set),
                    i.type_condition.as_ref(),
                ),
            };
            let Some(mut conds) = static_conditions(directives) else {
                continue;
            };
            if !self.applies(condition, concrete) {
                continue;
            }
            let mark = inherited.len();
            inherited.append(&mut conds);
            match (selection, nested) {
                (Selection::Field(f), _) => merge(pending, f, inherited),
                (_, Some(nested)) => {
                    self.gather(nested, concrete, pending, inherited, depth + 1)?
                }
                _ => {}
            }
            inherited.truncate(mark);
        }
        Ok(())
    }

    fn finish(&self, p: Pending<'a>, depth: usize) -> Result<Field, String> {
        let f = p.field;
        let key = f.response_key().as_str();
        let mut key_json = serde_json::to_vec(key).map_err(|e| e.to_string())?;
        key_json.push(b':');
        let children = if p.sets.is_empty() || f.name == "__typename" {
            None
        } else {
            let named = f.definition.ty.inner_named_type();
            let mut per_type = Vec::new();
            for concrete in self.possible_types(named) {
                let fields = self.collect(&p.sets, &concrete, depth + 1)?;
                per_type.push((concrete, fields));
            }
            Some(Children { per_type })
        };
        Ok(Field {
            key_json: key_json.into(),
            key: key.into(),
            name: f.name.as_str().into(),
            args: f
                .arguments
                .iter()
                .map(|a| (a.name.as_str().into(), arg(&a.value)))
                .collect(),
            ty: f.definition.ty.clone(),
            conditions: p.conditions,
            children,
        })
    }

    fn possible_types(&self, named: &Name) -> Vec<Name> {
        match self.schema.types.get(named) {
            Some(ExtendedType::Object(_)) => vec![named.clone()],
            Some(ExtendedType::Union(u)) => u.members.iter().map(|m| m.name.clone()).collect(),
            Some(ExtendedType::Interface(_)) => self
                .schema
                .types
                .iter()
                .filter(|(name, ty)| ty.is_object() && self.schema.is_subtype(named, name))
                .map(|(name, _)| name.clone())
                .collect(),
            _ => Vec::new(),
        }
    }
}

fn merge<'a>(
    pending: &mut Vec<Pending<'a>>,
    f: &'a Node<apollo_compiler::executable::Field>,
    inherited: &[(Box<str>, bool)],
) {
    let key = f.response_key();
    if let Some(existing) = pending.iter_mut().find(|p| p.field.response_key() == key) {
        // An unconditional occurrence makes the merged field unconditional.
        if inherited.is_empty() {
            existing.conditions.clear();
        }
        existing.sets.push(&f.selection_set);
        return;
    }
    pending.push(Pending {
        field: f,
        conditions: inherited
            .iter()
            .map(|(variable, include_when)| Condition {
                variable: variable.clone(),
                include_when: *include_when,
            })
            .collect(),
        sets: if f.selection_set.selections.is_empty() {
            Vec::new()
        } else {
            vec![&f.selection_set]
        },
    });
}

/// Literal `@skip`/`@include` decided now (None = excluded); variable ones returned as conditions.
fn static_conditions(
    directives: &apollo_compiler::executable::DirectiveList,
) -> Option<Vec<(Box<str>, bool)>> {
    let mut conds = Vec::new();
    for (directive, include_when) in [("include", true), ("skip", false)] {
        let Some(d) = directives.get(directive) else {
            continue;
        };
        match d.specified_argument_by_name("if").map(|v| v.as_ref()) {
            Some(AstValue::Boolean(b)) if *b != include_when => return None,
            Some(AstValue::Variable(v)) => conds.push((v.as_str().into(), include_when)),
            _ => {}
        }
    }
    Some(conds)
}

fn arg(value: &AstValue) -> Arg {
    match value {
        AstValue::Variable(v) => Arg::Variable(v.as_str().into()),
        v if has_variable(v) => Arg::Nested(v.clone()),
        v => Arg::Literal(literal(v)),
    }
}

fn has_variable(value: &AstValue) -> bool {
    match value {
        AstValue::Variable(_) => true,
        AstValue::List(items) => items.iter().any(|i| has_variable(i)),
        AstValue::Object(fields) => fields.iter().any(|(_, v)| has_variable(v)),
        _ => false,
    }
}

/// Converts a literal to JSON; variables resolve through `vars` (null when absent).
pub fn resolve_value(value: &AstValue, vars: &dyn Fn(&str) -> Option<Value>) -> Value {
    match value {
        AstValue::Null => Value::Null,
        AstValue::Enum(e) => Value::String(e.to_string()),
        AstValue::Variable(v) => vars(v).unwrap_or(Value::Null),
        AstValue::String(s) => Value::String(s.clone()),
        AstValue::Float(f) => f
            .try_to_f64()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map_or(Value::Null, Value::Number),
        AstValue::Int(i) => i
            .try_to_i32()
            .map(|i| Value::from(i64::from(i)))
            .or_else(|_| i.try_to_f64().map(Value::from))
            .unwrap_or(Value::Null),
        AstValue::Boolean(b) => Value::Bool(*b),
        AstValue::List(items) => {
            Value::Array(items.iter().map(|i| resolve_value(i, vars)).collect())
        }
        AstValue::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(k, v)| (k.to_string(), resolve_value(v, vars)))
                .collect(),
        ),
    }
}

fn literal(value: &AstValue) -> Value {
    resolve_value(value, &|_| None)
}
