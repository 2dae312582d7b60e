//! The executor: walks a compiled plan against hand-written resolvers and writes
//! compact JSON straight into a buffer (floats and strings formatted by serde_json).

use std::borrow::Cow;

use apollo_compiler::ast::Type;
use serde_json::{Map, Value};

use super::plan::{Arg, Children, Field, Plan, resolve_value};

/// A resolved value. Lists of scalars have borrowed variants so big payloads are
/// written without building a value per element.
pub enum Val<'a> {
    Null,
    /// Null with a field error at this position.
    Err(String),
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(&'a str),
    String(String),
    Obj(Box<dyn Object<'a> + 'a>),
    List(Vec<Val<'a>>),
    Floats(&'a [f64]),
    Ints(&'a [i64]),
    Strs(&'a [String]),
}

impl<'a> Val<'a> {
    pub fn obj(o: impl Object<'a> + 'a) -> Self {
        Val::Obj(Box::new(o))
    }
}

/// An object type's resolver. `field` is only called with names the validated
/// schema allows on `typename()`.
pub trait Object<'a> {
    fn typename(&self) -> &'a str;
    fn field(&self, name: &str, args: &Args<'_>) -> Val<'a>;
}

/// Field arguments, resolved against the request's variables on demand.
pub struct Args<'r> {
    items: &'r [(Box<str>, Arg)],
    vars: &'r Vars<'r>,
}

impl<'r> Args<'r> {
    pub(super) fn new(items: &'r [(Box<str>, Arg)], vars: &'r Vars<'r>) -> Self {
        Self { items, vars }
    }

    pub fn get(&self, name: &str) -> Option<Cow<'r, Value>> {
        let (_, arg) = self.items.iter().find(|(n, _)| &**n == name)?;
        match arg {
            Arg::Literal(v) => Some(Cow::Borrowed(v)),
            Arg::Variable(v) => self.vars.get(v).map(Cow::Borrowed),
            Arg::Nested(v) => Some(Cow::Owned(resolve_value(v, &|n| self.vars.get(n).cloned()))),
        }
    }

    pub fn int(&self, name: &str) -> Result<Option<i64>, String> {
        match self.get(name).as_deref() {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) if n.is_i64() => Ok(n.as_i64()),
            Some(other) => Err(format!("Argument \"{name}\" must be an Int, got {other}.")),
        }
    }

    pub fn string(&self, name: &str) -> Result<Option<String>, String> {
        match self.get(name).as_deref() {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Number(n)) if n.is_i64() => Ok(Some(n.to_string())),
            Some(other) => Err(format!(
                "Argument \"{name}\" must be a String or ID, got {other}."
            )),
        }
    }
}

/// Request variables with the operation's defaults as fallback.
pub struct Vars<'r> {
    pub given: Option<&'r Map<String, Value>>,
    pub defaults: &'r [(Box<str>, Value)],
}

impl Vars<'_> {
    pub(super) fn get(&self, name: &str) -> Option<&Value> {
        self.given.and_then(|g| g.get(name)).or_else(|| {
            self.defaults
                .iter()
                .find(|(n, _)| &**n == name)
                .map(|(_, v)| v)
        })
    }
}

enum Seg<'p> {
    Key(&'p str),
    Index(usize),
}

/// A non-null violation travelling up to the nearest nullable position.
struct Bubble;

pub struct Executor<'p> {
    pub out: Vec<u8>,
    errors: Vec<(String, Vec<PathOwned>)>,
    path: Vec<Seg<'p>>,
    vars: &'p Vars<'p>,
    exhausted: bool,
    max_output: usize,
}

#[derive(Clone)]
enum PathOwned {
    Key(String),
    Index(usize),
}

impl<'p> Executor<'p> {
    /// Executes `plan` on `root` and returns the complete `{"data":…,"errors":…}` body;
    /// output beyond `max_output` bytes is cut off with an error.
    pub fn run<'a>(
        plan: &'p Plan,
        root: &dyn Object<'a>,
        vars: &'p Vars<'p>,
        max_output: usize,
    ) -> Vec<u8> {
        let mut ex = Executor {
            out: Vec::with_capacity(4096),
            errors: Vec::new(),
            path: Vec::new(),
            vars,
            exhausted: false,
            max_output,
        };
        ex.out.extend_from_slice(b"{\"data\":");
        if ex.object(root, &plan.fields).is_err() {
            ex.out.truncate(8);
            ex.out.extend_from_slice(b"null");
        }
        ex.write_errors();
        ex.out.push(b'}');
        ex.out
    }

    fn write_errors(&mut self) {
        if self.errors.is_empty() {
            return;
        }
        self.out.extend_from_slice(b",\"errors\":[");
        for (i, (message, path)) in self.errors.iter().enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            let path: Vec<Value> = path
                .iter()
                .map(|s| match s {
                    PathOwned::Key(k) => Value::String(k.clone()),
                    PathOwned::Index(i) => Value::from(*i),
                })
                .collect();
            let error = serde_json::json!({ "message": message, "path": path });
            write_json(&mut self.out, &error);
        }
        self.out.push(b']');
    }

    fn error(&mut self, message: String) {
        let path = self
            .path
            .iter()
            .map(|s| match s {
                Seg::Key(k) => PathOwned::Key((*k).to_owned()),
                Seg::Index(i) => PathOwned::Index(*i),
            })
            .collect();
        self.errors.push((message, path));
    }

    fn included(&self, field: &Field) -> bool {
        field.conditions.iter().all(|c| {
            let value = self
                .vars
                .get(&c.variable)
                .and_then(Value::as_bool)
                .unwrap_or(false);
            value == c.include_when
        })
    }

    fn object<'a>(&mut self, obj: &dyn Object<'a>, fields: &'p [Field]) -> Result<(), Bubble> {
        if self.exhausted || self.out.len() > self.max_output {
            if !self.exhausted {
                self.exhausted = true;
                self.error(format!("The response exceeds {} bytes.", self.max_output));
            }
            return Err(Bubble);
        }
        self.out.push(b'{');
        let mut first = true;
        for field in fields {
            if !field.conditions.is_empty() && !self.included(field) {
                continue;
            }
            if !first {
                self.out.push(b',');
            }
            first = false;
            self.out.extend_from_slice(&field.key_json);
            if &*field.name == "__typename" {
                write_str(&mut self.out, obj.typename());
                continue;
            }
            let args = Args {
                items: &field.args,
                vars: self.vars,
            };
            let value = obj.field(&field.name, &args);
            self.path.push(Seg::Key(&field.key));
            let result = self.value(&field.ty, value, field.children.as_ref());
            self.path.pop();
            result?;
        }
        self.out.push(b'}');
        Ok(())
    }

    fn null(&mut self, ty: &Type) -> Result<(), Bubble> {
        if ty.is_non_null() {
            return Err(Bubble);
        }
        self.out.extend_from_slice(b"null");
        Ok(())
    }

    fn value<'a>(
        &mut self,
        ty: &Type,
        value: Val<'a>,
        children: Option<&'p Children>,
    ) -> Result<(), Bubble> {
        let mark = self.out.len();
        let result = match value {
            Val::Null => return self.null(ty),
            Val::Err(message) => {
                self.error(message);
                return self.null(ty);
            }
            Val::List(items) => self.list(ty.item_type(), items, children),
            Val::Obj(obj) => match children.and_then(|c| c.for_type(obj.typename())) {
                Some(fields) => self.object(obj.as_ref(), fields),
                None => {
                    let message = format!("Type {} is not a possible type here.", obj.typename());
                    self.error(message);
                    Err(Bubble)
                }
            },
            leaf => {
                self.leaf(leaf);
                Ok(())
            }
        };
        if result.is_err() {
            self.out.truncate(mark);
            return self.null(ty);
        }
        Ok(())
    }

    fn leaf(&mut self, value: Val<'_>) {
        let out = &mut self.out;
        match value {
            Val::Bool(b) => out.extend_from_slice(if b { b"true" } else { b"false" }),
            Val::Int(i) => write_json(out, &i),
            Val::Float(f) => write_json(out, &f),
            Val::Str(s) => write_str(out, s),
            Val::String(s) => write_str(out, &s),
            Val::Floats(items) => scalars(out, items, write_json),
            Val::Ints(items) => scalars(out, items, write_json),
            Val::Strs(items) => scalars(out, items, |out, s: &String| write_str(out, s)),
            Val::Null | Val::Err(_) | Val::List(_) | Val::Obj(_) => out.extend_from_slice(b"null"),
        }
    }

    fn list<'a>(
        &mut self,
        item_ty: &Type,
        items: Vec<Val<'a>>,
        children: Option<&'p Children>,
    ) -> Result<(), Bubble> {
        self.out.push(b'[');
        for (i, item) in items.into_iter().enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            self.path.push(Seg::Index(i));
            let result = self.value(item_ty, item, children);
            self.path.pop();
            result?;
        }
        self.out.push(b']');
        Ok(())
    }
}

fn scalars<T>(out: &mut Vec<u8>, items: &[T], write: impl Fn(&mut Vec<u8>, &T)) {
    out.push(b'[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write(out, item);
    }
    out.push(b']');
}

/// serde_json never fails writing these values into a Vec.
fn write_json<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    if serde_json::to_writer(&mut *out, value).is_err() {
        out.extend_from_slice(b"null");
    }
}

fn write_str(out: &mut Vec<u8>, s: &str) {
    write_json(out, s);
}
