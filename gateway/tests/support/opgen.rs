//! A seeded generator of valid operations over a suite's API schema (issue 14): random
//! walks from `Query` to depth 4 with aliases (the same field under two aliases, the same
//! response key with different sub-selections), inline fragments on every possible type
//! of abstract fields, named fragments, `@skip`/`@include` with literals and with
//! variables (defaults, supplied or not), `__typename`, and arguments taken from the
//! suite's `data.json` where it answers them. Every operation is validated against the
//! API schema before it is handed out, so the generator cannot drift into invalid ones.
//!
//! Validity of field merging is kept by construction: per response path, a response key
//! stands for one field name, one argument list and one type; a selection that would
//! break that gets a fresh alias instead.

use apollo_compiler::ast::{self, Type};
use apollo_compiler::schema::{ExtendedType, InputValueDefinition};
use apollo_compiler::validation::Valid;
use apollo_compiler::{ExecutableDocument, Node, Schema};
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

/// Response depth of the deepest selection set (the root selection set is depth 0).
const MAX_DEPTH: usize = 4;
/// Fields per operation beyond which only leaves and `__typename` are added.
const FIELD_BUDGET: usize = 30;
/// Fragments nested in fragments at one response path.
const MAX_FRAGMENT_NESTING: usize = 2;

/// One generated request.
#[derive(Debug, Clone)]
pub struct Generated {
    pub query: String,
    pub variables: Value,
}

/// Values the suite's data answers: the `__byArgs` argument sets per field name and the
/// scalar values stored under each key (ids that exist), for filling arguments.
#[derive(Debug, Default)]
pub struct Hints {
    by_args: BTreeMap<String, Vec<Map<String, Value>>>,
    scalars: BTreeMap<String, Vec<Value>>,
}

impl Hints {
    /// Hints from a `data.json` (format in `json_subgraph.rs`).
    pub fn from_data(data: &Value) -> Self {
        let mut hints = Hints::default();
        hints.walk(data);
        hints
    }

    fn walk(&mut self, v: &Value) {
        match v {
            Value::Object(map) => {
                for (k, v) in map {
                    if let Some(entries) = v.get("__byArgs").and_then(Value::as_array) {
                        for e in entries {
                            if let Some(args) = e.get("args").and_then(Value::as_object) {
                                let list = self.by_args.entry(k.clone()).or_default();
                                if !list.contains(args) {
                                    list.push(args.clone());
                                }
                            }
                        }
                    }
                    if !k.starts_with("__") && (v.is_string() || v.is_number()) {
                        let list = self.scalars.entry(k.clone()).or_default();
                        if list.len() < 20 && !list.contains(v) {
                            list.push(v.clone());
                        }
                    }
                    self.walk(v);
                }
            }
            Value::Array(items) => items.iter().for_each(|i| self.walk(i)),
            _ => {}
        }
    }
}

/// A field already selected in one selection set, for the duplicate selections.
#[derive(Clone)]
struct Pick {
    key: String,
    name: String,
    args: String,
    ty: Type,
}

/// Per response path: response key → (field name, arguments, type); see the module doc.
type Shapes = HashMap<String, BTreeMap<String, (String, String, String)>>;

/// The operation being built.
#[derive(Default)]
struct Op {
    var_defs: Vec<String>,
    values: Map<String, Value>,
    /// Boolean variables usable in `@skip`/`@include`.
    bool_vars: Vec<String>,
    fragments: Vec<String>,
    counter: usize,
    fields: usize,
    shapes: Shapes,
}

impl Op {
    fn next(&mut self) -> usize {
        self.counter += 1;
        self.counter
    }
}

pub struct Generator<'a> {
    schema: &'a Valid<Schema>,
    hints: &'a Hints,
    rng: ChaCha8Rng,
    /// Object types of each abstract type, in schema order.
    possible: HashMap<String, Vec<String>>,
}

impl<'a> Generator<'a> {
    pub fn new(schema: &'a Valid<Schema>, hints: &'a Hints, seed: u64) -> Self {
        let mut possible: HashMap<String, Vec<String>> = HashMap::new();
        for (name, ty) in &schema.types {
            match ty {
                ExtendedType::Object(o) => {
                    for i in &o.implements_interfaces {
                        possible
                            .entry(i.name.to_string())
                            .or_default()
                            .push(name.to_string());
                    }
                }
                ExtendedType::Union(u) => {
                    possible.entry(name.to_string()).or_default().extend(
                        u.members
                            .iter()
                            .filter(|m| schema.get_object(m.name.as_str()).is_some())
                            .map(|m| m.name.to_string()),
                    );
                }
                _ => {}
            }
        }
        Self {
            schema,
            hints,
            rng: ChaCha8Rng::seed_from_u64(seed),
            possible,
        }
    }

    /// The next operation; panics when it is not valid against the API schema.
    pub fn operation(&mut self) -> Generated {
        let mut op = Op::default();
        let root = self
            .schema
            .schema_definition
            .query
            .as_ref()
            .expect("the API schema has a query type")
            .name
            .to_string();
        let body = self.selection_set(&mut op, &root, "", 0, 0, 0);
        let mut query = String::from("query");
        if self.rng.random_bool(0.3) {
            query.push_str(" Generated");
        }
        if !op.var_defs.is_empty() {
            write!(query, "({})", op.var_defs.join(", ")).expect("write to a String");
        }
        write!(query, " {body}").expect("write to a String");
        for f in &op.fragments {
            write!(query, "\n\n{f}").expect("write to a String");
        }
        query.push('\n');
        if let Err(e) =
            ExecutableDocument::parse_and_validate(self.schema, &query, "generated.graphql")
        {
            panic!(
                "the generator produced an invalid operation:\n{query}\n{}",
                e.errors
            );
        }
        Generated {
            query,
            variables: Value::Object(op.values),
        }
    }

    fn possible_types(&self, ty: &str) -> Vec<String> {
        match self.schema.types.get(ty) {
            Some(ExtendedType::Object(_)) => vec![ty.to_owned()],
            _ => self.possible.get(ty).cloned().unwrap_or_default(),
        }
    }

    fn is_composite(&self, ty: &str) -> bool {
        matches!(
            self.schema.types.get(ty),
            Some(ExtendedType::Object(_) | ExtendedType::Interface(_) | ExtendedType::Union(_))
        )
    }

    /// `{ ... }` for an object of type `ty` at response path `path`.
    fn selection_set(
        &mut self,
        op: &mut Op,
        ty: &str,
        path: &str,
        depth: usize,
        nesting: usize,
        indent: usize,
    ) -> String {
        let items = self.selections(op, ty, path, depth, nesting, indent + 1);
        let pad = "  ".repeat(indent);
        format!("{{\n{}\n{pad}}}", items.join("\n"))
    }

    fn selections(
        &mut self,
        op: &mut Op,
        ty: &str,
        path: &str,
        depth: usize,
        nesting: usize,
        indent: usize,
    ) -> Vec<String> {
        let pad = "  ".repeat(indent);
        let count = self.rng.random_range(1..=if depth == 0 { 3 } else { 4 });
        let mut out = Vec::new();
        let mut picks: Vec<Pick> = Vec::new();
        let fields: Vec<String> = match self.schema.types.get(ty) {
            Some(ExtendedType::Object(o)) => o.fields.keys().map(|k| k.to_string()).collect(),
            Some(ExtendedType::Interface(i)) => i.fields.keys().map(|k| k.to_string()).collect(),
            _ => Vec::new(),
        };
        for _ in 0..count {
            let roll = self.rng.random_range(0..100);
            let text = match roll {
                0..10 => Some(self.typename(op, path)),
                10..24 if nesting < MAX_FRAGMENT_NESTING => {
                    Some(self.inline_fragments(op, ty, path, depth, nesting, indent))
                }
                24..30 if nesting < MAX_FRAGMENT_NESTING => {
                    Some(self.named_fragment(op, ty, path, depth, nesting))
                }
                30..42 if !picks.is_empty() => {
                    let pick = picks.choose(&mut self.rng).expect("non-empty").clone();
                    self.duplicate(op, ty, &pick, path, depth, indent)
                }
                _ => match fields.choose(&mut self.rng).cloned() {
                    Some(name) => self
                        .field(op, ty, &name, path, depth, indent)
                        .map(|(t, p)| {
                            picks.push(p);
                            t
                        }),
                    None => Some(self.typename(op, path)),
                },
            };
            if let Some(text) = text {
                out.push(format!("{pad}{text}"));
            }
        }
        if out.is_empty() {
            out.push(format!("{pad}{}", self.typename(op, path)));
        }
        out
    }

    /// `__typename`, sometimes aliased, sometimes with a directive.
    fn typename(&mut self, op: &mut Op, path: &str) -> String {
        let mut key = "__typename".to_owned();
        if self.rng.random_bool(0.3) {
            key = format!("t{}", op.next());
        }
        let key = self.claim(
            op,
            path,
            key,
            "__typename",
            "",
            &Type::Named(name("String")).non_null(),
        );
        let alias = if key == "__typename" {
            String::new()
        } else {
            format!("{key}: ")
        };
        let directives = self.directives(op);
        format!("{alias}__typename{directives}")
    }

    /// `key`, or a fresh alias when `key` already stands for another field at `path`.
    fn claim(
        &mut self,
        op: &mut Op,
        path: &str,
        key: String,
        field: &str,
        args: &str,
        ty: &Type,
    ) -> String {
        let shape = (field.to_owned(), args.to_owned(), ty.to_string());
        let mut key = key;
        loop {
            let scope = op.shapes.entry(path.to_owned()).or_default();
            match scope.get(&key) {
                None => {
                    scope.insert(key.clone(), shape);
                    return key;
                }
                Some(existing) if *existing == shape => return key,
                Some(_) => {
                    let n = op.next();
                    key = format!("{field}{n}").trim_start_matches('_').to_owned();
                }
            }
        }
    }

    /// A selection of field `name` of `parent`, with a generated key, arguments and sub-selection.
    fn field(
        &mut self,
        op: &mut Op,
        parent: &str,
        name: &str,
        path: &str,
        depth: usize,
        indent: usize,
    ) -> Option<(String, Pick)> {
        let def = self.schema.type_field(parent, name).ok()?.clone();
        let inner = def.ty.inner_named_type().to_string();
        let composite = self.is_composite(&inner);
        if composite && (depth + 1 > MAX_DEPTH || op.fields >= FIELD_BUDGET) {
            return None;
        }
        op.fields += 1;
        let args = self.arguments(op, name, &def.arguments);
        let wanted = if self.rng.random_bool(0.2) {
            format!("{name}{}", op.next())
        } else {
            name.to_owned()
        };
        let key = self.claim(op, path, wanted, name, &args, &def.ty);
        let pick = Pick {
            key,
            name: name.to_owned(),
            args,
            ty: def.ty.clone(),
        };
        Some((self.print_field(op, &pick, path, depth, indent), pick))
    }

    /// `alias: name(args) @dirs { sub }` for `pick`, with a fresh sub-selection.
    fn print_field(
        &mut self,
        op: &mut Op,
        pick: &Pick,
        path: &str,
        depth: usize,
        indent: usize,
    ) -> String {
        let alias = if pick.key == pick.name {
            String::new()
        } else {
            format!("{}: ", pick.key)
        };
        let directives = self.directives(op);
        let inner = pick.ty.inner_named_type().to_string();
        let sub = if self.is_composite(&inner) {
            let child = format!("{path}/{}", pick.key);
            format!(
                " {}",
                self.selection_set(op, &inner, &child, depth + 1, 0, indent)
            )
        } else {
            String::new()
        };
        format!("{alias}{}{}{directives}{sub}", pick.name, pick.args)
    }

    /// The same field again: under another alias (arguments drawn anew), or under the
    /// same key with another sub-selection (merged by the executor).
    fn duplicate(
        &mut self,
        op: &mut Op,
        parent: &str,
        pick: &Pick,
        path: &str,
        depth: usize,
        indent: usize,
    ) -> Option<String> {
        let composite = self.is_composite(pick.ty.inner_named_type());
        if self.rng.random_bool(if composite { 0.6 } else { 0.3 }) {
            return Some(self.print_field(op, pick, path, depth, indent));
        }
        let def = self.schema.type_field(parent, &pick.name).ok()?.clone();
        let args = self.arguments(op, &pick.name, &def.arguments);
        let wanted = format!("{}{}", pick.name, op.next());
        let key = self.claim(op, path, wanted, &pick.name, &args, &def.ty);
        let again = Pick {
            key,
            args,
            ..pick.clone()
        };
        Some(self.print_field(op, &again, path, depth, indent))
    }

    /// Inline fragments: on every possible type of an abstract type, or one of them, or
    /// on the type itself, or without a type condition.
    fn inline_fragments(
        &mut self,
        op: &mut Op,
        ty: &str,
        path: &str,
        depth: usize,
        nesting: usize,
        indent: usize,
    ) -> String {
        let possible = self.possible_types(ty);
        let abstract_ty = !matches!(self.schema.types.get(ty), Some(ExtendedType::Object(_)));
        let conditions: Vec<Option<String>> =
            if abstract_ty && !possible.is_empty() && self.rng.random_bool(0.5) {
                possible.into_iter().map(Some).collect()
            } else {
                match self.rng.random_range(0..4) {
                    0 => vec![None],
                    1 => vec![Some(ty.to_owned())],
                    _ => vec![Some(
                        possible
                            .choose(&mut self.rng)
                            .cloned()
                            .unwrap_or_else(|| ty.to_owned()),
                    )],
                }
            };
        let pad = "  ".repeat(indent);
        let mut parts = Vec::new();
        for (i, condition) in conditions.iter().enumerate() {
            let on = condition.as_deref().unwrap_or(ty);
            let directives = self.directives(op);
            let body = self.selection_set(op, on, path, depth, nesting + 1, indent);
            let cond = condition
                .as_ref()
                .map(|c| format!(" on {c}"))
                .unwrap_or_default();
            let lead = if i == 0 { String::new() } else { pad.clone() };
            parts.push(format!("{lead}...{cond}{directives} {body}"));
        }
        parts.join("\n")
    }

    /// A named fragment on `ty` or one of its possible types, spread once or twice.
    fn named_fragment(
        &mut self,
        op: &mut Op,
        ty: &str,
        path: &str,
        depth: usize,
        nesting: usize,
    ) -> String {
        let mut on = ty.to_owned();
        if self.rng.random_bool(0.5)
            && let Some(p) = self.possible_types(ty).choose(&mut self.rng)
        {
            on = p.clone();
        }
        let name = format!("F{}", op.next());
        let body = self.selection_set(op, &on, path, depth, nesting + 1, 0);
        op.fragments.push(format!("fragment {name} on {on} {body}"));
        let directives = self.directives(op);
        if self.rng.random_bool(0.2) {
            let again = self.directives(op);
            format!("...{name}{directives} ...{name}{again}")
        } else {
            format!("...{name}{directives}")
        }
    }

    /// Mostly nothing; else `@skip`, `@include` or both, with a literal or a Boolean variable.
    fn directives(&mut self, op: &mut Op) -> String {
        if self.rng.random_bool(0.75) {
            return String::new();
        }
        let which: &[&str] = match self.rng.random_range(0..20) {
            0..3 => &["skip", "include"],
            3..11 => &["skip"],
            _ => &["include"],
        };
        let mut out = String::new();
        for name in which {
            let condition = match self.rng.random_range(0..10) {
                0..3 => self.rng.random_bool(0.5).to_string(),
                3..5 if !op.bool_vars.is_empty() => {
                    format!(
                        "${}",
                        op.bool_vars.choose(&mut self.rng).expect("non-empty")
                    )
                }
                _ => self.bool_variable(op),
            };
            write!(out, " @{name}(if: {condition})").expect("write to a String");
        }
        out
    }

    /// A new Boolean variable: `Boolean = default` (supplied or not) or `Boolean!`.
    fn bool_variable(&mut self, op: &mut Op) -> String {
        let name = format!("v{}", op.next());
        if self.rng.random_bool(0.75) {
            let default = self.rng.random_bool(0.5);
            op.var_defs.push(format!("${name}: Boolean = {default}"));
            if self.rng.random_bool(0.4) {
                op.values
                    .insert(name.clone(), json!(self.rng.random_bool(0.5)));
            }
        } else {
            op.var_defs.push(format!("${name}: Boolean!"));
            op.values
                .insert(name.clone(), json!(self.rng.random_bool(0.5)));
        }
        op.bool_vars.push(name.clone());
        format!("${name}")
    }

    /// `(a: v, ...)` for a field named `field`, or "" when it takes none (or none chosen).
    fn arguments(
        &mut self,
        op: &mut Op,
        field: &str,
        defs: &[Node<InputValueDefinition>],
    ) -> String {
        if defs.is_empty() {
            return String::new();
        }
        let mut chosen: Vec<(String, Type, Value)> = Vec::new();
        if let Some(sets) = self.hints.by_args.get(field)
            && self.rng.random_bool(0.8)
            && let Some(set) = sets.choose(&mut self.rng)
            && let Some(args) = self.hinted(defs, set)
        {
            chosen = args;
        } else {
            for def in defs {
                let required = def.ty.is_non_null() && def.default_value.is_none();
                if required || self.rng.random_bool(0.4) {
                    let value = self.value(&def.ty, def.name.as_str(), 0);
                    chosen.push((def.name.to_string(), (*def.ty).clone(), value));
                }
            }
        }
        if chosen.is_empty() {
            return String::new();
        }
        let mut parts = Vec::new();
        for (name, ty, value) in chosen {
            let literal = self.literal(&ty, &value).expect("generated values print");
            let text = match self.rng.random_range(0..10) {
                0..2 => {
                    let var = format!("a{}", op.next());
                    op.var_defs.push(format!("${var}: {ty}"));
                    op.values.insert(var.clone(), value);
                    format!("${var}")
                }
                // A default instead of a supplied value; the nullable type is allowed
                // where a non-null one is expected because the default is there.
                2 => {
                    let var = format!("a{}", op.next());
                    let nullable = ty.clone().nullable();
                    op.var_defs.push(format!("${var}: {nullable} = {literal}"));
                    format!("${var}")
                }
                _ => literal,
            };
            parts.push(format!("{name}: {text}"));
        }
        format!("({})", parts.join(", "))
    }

    /// The arguments of a `__byArgs` entry, when they fit the field's definitions.
    fn hinted(
        &self,
        defs: &[Node<InputValueDefinition>],
        set: &Map<String, Value>,
    ) -> Option<Vec<(String, Type, Value)>> {
        let mut out = Vec::new();
        for def in defs {
            match set.get(def.name.as_str()) {
                Some(v) => {
                    self.literal(&def.ty, v)?;
                    out.push((def.name.to_string(), (*def.ty).clone(), v.clone()));
                }
                None if def.ty.is_non_null() && def.default_value.is_none() => return None,
                None => {}
            }
        }
        let known = set
            .keys()
            .all(|k| defs.iter().any(|d| d.name == k.as_str()));
        known.then_some(out)
    }

    /// A JSON value of input type `ty` (argument named `arg`).
    fn value(&mut self, ty: &Type, arg: &str, depth: usize) -> Value {
        match ty {
            Type::List(item) | Type::NonNullList(item) => {
                let n = self.rng.random_range(0..=2);
                Value::Array((0..n).map(|_| self.value(item, arg, depth + 1)).collect())
            }
            Type::Named(n) | Type::NonNullNamed(n) => {
                let hinted: Vec<Value> = self.hints.scalars.get(arg).cloned().unwrap_or_default();
                let hint = |rng: &mut ChaCha8Rng, want: fn(&Value) -> bool| {
                    let fit: Vec<&Value> = hinted.iter().filter(|v| want(v)).collect();
                    fit.choose(rng).map(|v| (*v).clone())
                };
                match self.schema.types.get(n.as_str()) {
                    Some(ExtendedType::Enum(e)) => {
                        let values: Vec<String> = e.values.keys().map(|k| k.to_string()).collect();
                        json!(values.choose(&mut self.rng).expect("an enum has values"))
                    }
                    Some(ExtendedType::InputObject(io)) => {
                        let mut map = Map::new();
                        for (name, f) in &io.fields {
                            let required = f.ty.is_non_null() && f.default_value.is_none();
                            if required || (depth < 2 && self.rng.random_bool(0.3)) {
                                map.insert(
                                    name.to_string(),
                                    self.value(&f.ty, name.as_str(), depth + 1),
                                );
                            }
                        }
                        Value::Object(map)
                    }
                    _ => match n.as_str() {
                        "Int" => hint(&mut self.rng, |v| v.is_i64())
                            .unwrap_or_else(|| json!(self.rng.random_range(0..5))),
                        "Float" => json!(f64::from(self.rng.random_range(0..20)) / 2.0),
                        "Boolean" => json!(self.rng.random_bool(0.5)),
                        "String" => hint(&mut self.rng, Value::is_string).unwrap_or_else(|| {
                            json!(["a", "1", "x y"].choose(&mut self.rng).expect("non-empty"))
                        }),
                        // ID and custom scalars: a stored value, else a short string.
                        _ => hint(&mut self.rng, |v| v.is_string() || v.is_i64())
                            .unwrap_or_else(|| json!("1")),
                    },
                }
            }
        }
    }

    /// `value` as a GraphQL literal of type `ty`, if it is one.
    fn literal(&self, ty: &Type, value: &Value) -> Option<String> {
        match (ty, value) {
            (Type::Named(_) | Type::List(_), Value::Null) => Some("null".into()),
            (Type::List(item) | Type::NonNullList(item), Value::Array(items)) => {
                let parts: Option<Vec<String>> =
                    items.iter().map(|i| self.literal(item, i)).collect();
                Some(format!("[{}]", parts?.join(", ")))
            }
            (Type::Named(n) | Type::NonNullNamed(n), v) => {
                match (self.schema.types.get(n.as_str()), v) {
                    (Some(ExtendedType::Enum(e)), Value::String(s)) => {
                        e.values.contains_key(s.as_str()).then(|| s.clone())
                    }
                    (Some(ExtendedType::InputObject(io)), Value::Object(map)) => {
                        let mut parts = Vec::new();
                        for (k, v) in map {
                            let f = io.fields.get(k.as_str())?;
                            parts.push(format!("{k}: {}", self.literal(&f.ty, v)?));
                        }
                        let missing = io.fields.iter().any(|(k, f)| {
                            f.ty.is_non_null()
                                && f.default_value.is_none()
                                && !map.contains_key(k.as_str())
                        });
                        (!missing).then(|| format!("{{{}}}", parts.join(", ")))
                    }
                    (Some(ExtendedType::Scalar(_)), v) => match (n.as_str(), v) {
                        ("Int", Value::Number(x)) if x.is_i64() => Some(x.to_string()),
                        ("Float", Value::Number(x)) => Some(x.to_string()),
                        ("Boolean", Value::Bool(b)) => Some(b.to_string()),
                        ("String", Value::String(s)) => Some(Value::String(s.clone()).to_string()),
                        ("ID", Value::String(s)) => Some(Value::String(s.clone()).to_string()),
                        ("ID", Value::Number(x)) if x.is_i64() => Some(x.to_string()),
                        ("Int" | "Float" | "Boolean" | "String" | "ID", _) => None,
                        (_, Value::String(s)) => Some(Value::String(s.clone()).to_string()),
                        (_, Value::Number(x)) => Some(x.to_string()),
                        (_, Value::Bool(b)) => Some(b.to_string()),
                        _ => None,
                    },
                    _ => None,
                }
            }
            _ => None,
        }
    }
}

fn name(s: &str) -> apollo_compiler::Name {
    apollo_compiler::Name::new(s).expect("a valid GraphQL name")
}

/// Every valid operation one step simpler than `query`: one selection, directive or alias
/// removed (largest selections first), an inline fragment replaced by its selections, or
/// a fragment spread by the fragment's selections inline; then unused fragments and
/// variables dropped. For shrinking a failing operation to one that shows the failure
/// with less noise.
pub fn reductions(schema: &Valid<Schema>, query: &str, variables: &Value) -> Vec<Generated> {
    let Ok(doc) = ast::Document::parse(query, "operation.graphql") else {
        return Vec::new();
    };
    let fragments: HashMap<String, ast::Selection> = doc
        .definitions
        .iter()
        .filter_map(|d| match d {
            ast::Definition::FragmentDefinition(f) => Some((
                f.name.to_string(),
                ast::Selection::InlineFragment(Node::new(ast::InlineFragment {
                    type_condition: Some(f.type_condition.clone()),
                    directives: ast::DirectiveList::new(),
                    selection_set: f.selection_set.clone(),
                })),
            )),
            _ => None,
        })
        .collect();
    let mut out = Vec::new();
    let edits = [
        Edit::Selection,
        Edit::Unwrap,
        Edit::Inline,
        Edit::Directive,
        Edit::Alias,
    ];
    for edit in edits {
        let mut n = 0;
        loop {
            let mut candidate = doc.clone();
            let mut left = n;
            let changed = candidate
                .definitions
                .iter_mut()
                .any(|d| edit_definition(d, edit, &mut left, &fragments));
            if !changed {
                break;
            }
            n += 1;
            if let Some(g) = tidy(schema, candidate, variables) {
                out.push(g);
            }
        }
    }
    out
}

#[derive(Clone, Copy)]
enum Edit {
    Selection,
    /// An inline fragment replaced by its selections.
    Unwrap,
    /// A fragment spread replaced by an inline fragment with the fragment's selections.
    Inline,
    Directive,
    Alias,
}

type Fragments = HashMap<String, ast::Selection>;

fn edit_definition(
    d: &mut ast::Definition,
    edit: Edit,
    n: &mut usize,
    fragments: &Fragments,
) -> bool {
    match d {
        ast::Definition::OperationDefinition(op) => {
            edit_set(&mut op.make_mut().selection_set, edit, n, fragments)
        }
        ast::Definition::FragmentDefinition(f) => {
            edit_set(&mut f.make_mut().selection_set, edit, n, fragments)
        }
        _ => false,
    }
}

/// Applies the `n`th edit of its kind in pre-order; false when there are fewer.
fn edit_set(
    set: &mut Vec<ast::Selection>,
    edit: Edit,
    n: &mut usize,
    fragments: &Fragments,
) -> bool {
    let mut i = 0;
    while i < set.len() {
        let applies = match (&set[i], edit) {
            (_, Edit::Selection) => true,
            (ast::Selection::InlineFragment(_), Edit::Unwrap) => true,
            (ast::Selection::FragmentSpread(f), Edit::Inline) => {
                fragments.contains_key(f.fragment_name.as_str())
            }
            (s, Edit::Directive) => !directives_of(s).is_empty(),
            (ast::Selection::Field(f), Edit::Alias) => f.alias.is_some(),
            _ => false,
        };
        if applies {
            if *n == 0 {
                match (&mut set[i], edit) {
                    (_, Edit::Selection) => {
                        set.remove(i);
                    }
                    (ast::Selection::InlineFragment(f), Edit::Unwrap) => {
                        let inner = f.selection_set.clone();
                        set.splice(i..=i, inner);
                    }
                    (ast::Selection::FragmentSpread(f), Edit::Inline) => {
                        let mut inline = fragments[f.fragment_name.as_str()].clone();
                        if let ast::Selection::InlineFragment(i) = &mut inline {
                            i.make_mut().directives = f.directives.clone();
                        }
                        set[i] = inline;
                    }
                    (ast::Selection::Field(f), Edit::Directive) => {
                        f.make_mut().directives.0.remove(0);
                    }
                    (ast::Selection::InlineFragment(f), Edit::Directive) => {
                        f.make_mut().directives.0.remove(0);
                    }
                    (ast::Selection::FragmentSpread(f), Edit::Directive) => {
                        f.make_mut().directives.0.remove(0);
                    }
                    (ast::Selection::Field(f), Edit::Alias) => f.make_mut().alias = None,
                    _ => {}
                }
                return true;
            }
            *n -= 1;
        }
        let children = match &mut set[i] {
            ast::Selection::Field(f) => &mut f.make_mut().selection_set,
            ast::Selection::InlineFragment(f) => &mut f.make_mut().selection_set,
            ast::Selection::FragmentSpread(_) => {
                i += 1;
                continue;
            }
        };
        if edit_set(children, edit, n, fragments) {
            return true;
        }
        i += 1;
    }
    false
}

fn directives_of(s: &ast::Selection) -> &ast::DirectiveList {
    match s {
        ast::Selection::Field(f) => &f.directives,
        ast::Selection::InlineFragment(f) => &f.directives,
        ast::Selection::FragmentSpread(f) => &f.directives,
    }
}

/// `doc` without unused fragments and variables, if it is valid.
fn tidy(schema: &Valid<Schema>, mut doc: ast::Document, variables: &Value) -> Option<Generated> {
    loop {
        let mut spread = Vec::new();
        for d in &doc.definitions {
            match d {
                ast::Definition::OperationDefinition(op) => spreads(&op.selection_set, &mut spread),
                ast::Definition::FragmentDefinition(f) => spreads(&f.selection_set, &mut spread),
                _ => {}
            }
        }
        let before = doc.definitions.len();
        doc.definitions.retain(|d| match d {
            ast::Definition::FragmentDefinition(f) => spread.contains(&f.name.to_string()),
            _ => true,
        });
        if doc.definitions.len() == before {
            break;
        }
    }
    let mut used = Vec::new();
    for d in &doc.definitions {
        match d {
            ast::Definition::OperationDefinition(op) => variables_in(&op.selection_set, &mut used),
            ast::Definition::FragmentDefinition(f) => variables_in(&f.selection_set, &mut used),
            _ => {}
        }
    }
    let mut values = Map::new();
    for d in &mut doc.definitions {
        if let ast::Definition::OperationDefinition(op) = d {
            let op = op.make_mut();
            op.variables.retain(|v| used.contains(&v.name.to_string()));
            for v in &op.variables {
                if let Some(value) = variables.get(v.name.as_str()) {
                    values.insert(v.name.to_string(), value.clone());
                }
            }
        }
    }
    let query = doc.to_string();
    ExecutableDocument::parse_and_validate(schema, &query, "operation.graphql").ok()?;
    Some(Generated {
        query,
        variables: Value::Object(values),
    })
}

fn spreads(set: &[ast::Selection], out: &mut Vec<String>) {
    for s in set {
        match s {
            ast::Selection::Field(f) => spreads(&f.selection_set, out),
            ast::Selection::InlineFragment(f) => spreads(&f.selection_set, out),
            ast::Selection::FragmentSpread(f) => out.push(f.fragment_name.to_string()),
        }
    }
}

fn variables_in(set: &[ast::Selection], out: &mut Vec<String>) {
    for s in set {
        for d in directives_of(s).iter() {
            for a in &d.arguments {
                value_variables(&a.value, out);
            }
        }
        match s {
            ast::Selection::Field(f) => {
                for a in &f.arguments {
                    value_variables(&a.value, out);
                }
                variables_in(&f.selection_set, out);
            }
            ast::Selection::InlineFragment(f) => variables_in(&f.selection_set, out),
            ast::Selection::FragmentSpread(_) => {}
        }
    }
}

fn value_variables(v: &ast::Value, out: &mut Vec<String>) {
    match v {
        ast::Value::Variable(name) => out.push(name.to_string()),
        ast::Value::List(items) => items.iter().for_each(|i| value_variables(i, out)),
        ast::Value::Object(fields) => fields.iter().for_each(|(_, v)| value_variables(v, out)),
        _ => {}
    }
}
