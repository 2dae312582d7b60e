//! Checks on a GraphQL response that need no expected data (issue 14), given the
//! operation, its variables and the API schema:
//!
//! - (a) every object has exactly the response keys the operation selects for it, after
//!   `@skip`/`@include` (with the effective variable values, defaults included) and
//!   fragment type conditions against the object's type (its `__typename` when selected;
//!   else any possible type whose selection fits);
//! - (b) no `null` where the API schema says non-null (a failing non-null field nulls its
//!   nearest nullable parent instead), no null propagated past a nullable position on an
//!   error's path, and leaf values of their type's JSON kind;
//! - (c) every error `path` names only response keys the operation selects there and list
//!   indices within the lists, and does not point at a leaf that has a value;
//! - (d) response keys come in the operation's selection order.
//!
//! The body is parsed keeping object key order and duplicate keys, which
//! `serde_json::Value` (without `preserve_order`) would lose.

use apollo_compiler::ast::{Type, Value as AstValue};
use apollo_compiler::executable::{Field, Selection, SelectionSet};
use apollo_compiler::schema::ExtendedType;
use apollo_compiler::validation::Valid;
use apollo_compiler::{ExecutableDocument, Node, Schema};
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Map;
use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::sync::{Arc, LazyLock, Mutex};

/// One broken invariant: `class` names the kind (for grouping), `detail` the place.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Violation {
    pub class: String,
    pub detail: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.class, self.detail)
    }
}

fn violation(class: &str, detail: impl Into<String>) -> Violation {
    Violation {
        class: class.to_owned(),
        detail: detail.into(),
    }
}

/// JSON that keeps object key order and duplicate keys.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    fn is_leaf(&self) -> bool {
        !matches!(self, Json::Null | Json::Array(_) | Json::Object(_))
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Json;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("JSON")
            }
            fn visit_unit<E>(self) -> Result<Json, E> {
                Ok(Json::Null)
            }
            fn visit_none<E>(self) -> Result<Json, E> {
                Ok(Json::Null)
            }
            fn visit_bool<E>(self, b: bool) -> Result<Json, E> {
                Ok(Json::Bool(b))
            }
            fn visit_i64<E>(self, n: i64) -> Result<Json, E> {
                Ok(Json::Number(n.into()))
            }
            fn visit_u64<E>(self, n: u64) -> Result<Json, E> {
                Ok(Json::Number(n.into()))
            }
            fn visit_f64<E>(self, n: f64) -> Result<Json, E> {
                Ok(serde_json::Number::from_f64(n).map_or(Json::Null, Json::Number))
            }
            fn visit_str<E>(self, s: &str) -> Result<Json, E> {
                Ok(Json::String(s.to_owned()))
            }
            fn visit_string<E>(self, s: String) -> Result<Json, E> {
                Ok(Json::String(s))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Json::Array(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
                let mut entries = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, Json>()? {
                    entries.push((k, v));
                }
                Ok(Json::Object(entries))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Seg {
    Key(String),
    Index(usize),
}

fn show(path: &[Seg]) -> String {
    let mut out = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) if out.is_empty() => out.push_str(k),
            Seg::Key(k) => {
                out.push('.');
                out.push_str(k);
            }
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    if out.is_empty() { "data".into() } else { out }
}

fn child(path: &[Seg], seg: Seg) -> Vec<Seg> {
    let mut p = path.to_vec();
    p.push(seg);
    p
}

/// Which rules `collect` applies: the executor's (both), or one relaxed to explain an
/// extra key.
#[derive(Clone, Copy)]
struct Mode {
    directives: bool,
    conditions: bool,
}

const EXECUTE: Mode = Mode {
    directives: true,
    conditions: true,
};

type Grouped<'d> = Vec<(String, Vec<&'d Node<Field>>)>;

/// Violations of the invariants by the response `body` to `query` with `variables`.
/// An operation that does not validate against `schema` is not judged.
pub fn check(
    schema: &Valid<Schema>,
    query: &str,
    variables: &serde_json::Value,
    body: &[u8],
) -> Vec<Violation> {
    let Ok(doc) = ExecutableDocument::parse_and_validate(schema, query, "operation.graphql") else {
        return Vec::new();
    };
    let response: Json = match serde_json::from_slice(body) {
        Ok(r) => r,
        Err(e) => return vec![violation("body is not JSON", e.to_string())],
    };
    let Ok(op) = doc.operations.get(None) else {
        return Vec::new();
    };
    let mut vars = Map::new();
    for def in &op.variables {
        if let Some(v) = variables.get(def.name.as_str()) {
            vars.insert(def.name.to_string(), v.clone());
        } else if let Some(d) = &def.default_value {
            vars.insert(def.name.to_string(), ast_to_json(d));
        }
    }
    let mut checker = Checker {
        schema,
        doc: &doc,
        vars,
        out: Vec::new(),
    };
    let Json::Object(top) = &response else {
        return vec![violation(
            "response is not a JSON object",
            format!("{response:?}"),
        )];
    };
    let mut seen = HashSet::new();
    for (k, _) in top {
        if !["data", "errors", "extensions"].contains(&k.as_str()) {
            checker
                .out
                .push(violation("unexpected top-level key", k.clone()));
        }
        if !seen.insert(k.as_str()) {
            checker
                .out
                .push(violation("duplicate key in a response object", k.clone()));
        }
    }
    let root = op.object_type().to_string();
    let sets = [&op.selection_set];
    let errors = response.get("errors");
    let has_errors = matches!(errors, Some(Json::Array(e)) if !e.is_empty());
    match response.get("data") {
        None => checker.out.push(violation(
            "no data (a request error) for a valid operation",
            format!("errors: {}", short(errors)),
        )),
        Some(Json::Null) if !has_errors => {
            checker
                .out
                .push(violation("data is null without errors", ""));
        }
        Some(Json::Null) => {}
        Some(data @ Json::Object(_)) => checker.object(&root, &sets, &sets, data, &[]),
        Some(other) => checker
            .out
            .push(violation("data is not an object", format!("{other:?}"))),
    }
    if let Some(errors) = errors {
        checker.errors(&root, &sets, errors, response.get("data"));
    }
    checker.out.sort();
    checker.out.dedup();
    checker.out
}

/// [`check`] for an audit case (no variables), with the API schema of the supergraph
/// `text` (parsed once per text): the violations as one message, if any.
pub fn audit_case(supergraph: &str, query: &str, body: &[u8]) -> Option<String> {
    type Cache = Mutex<BTreeMap<String, Arc<Valid<Schema>>>>;
    static SCHEMAS: LazyLock<Cache> = LazyLock::new(Cache::default);
    let schema = {
        let mut cache = SCHEMAS.lock().expect("schema cache lock");
        match cache.get(supergraph) {
            Some(s) => s.clone(),
            None => {
                let parsed = graphfleet_gateway::supergraph::Supergraph::parse(supergraph).ok()?;
                let s = Arc::new(parsed.api_schema);
                cache.insert(supergraph.to_owned(), s.clone());
                s
            }
        }
    };
    let found = check(&schema, query, &serde_json::json!({}), body);
    (!found.is_empty()).then(|| {
        let lines: Vec<String> = found.iter().map(|v| format!("  invariant: {v}")).collect();
        format!("response invariants broken\n{}", lines.join("\n"))
    })
}

fn short(v: Option<&Json>) -> String {
    let text = format!("{v:?}");
    if text.len() > 300 {
        format!("{}…", &text[..text.floor_char_boundary(300)])
    } else {
        text
    }
}

fn ast_to_json(v: &AstValue) -> serde_json::Value {
    match v {
        AstValue::Null | AstValue::Variable(_) => serde_json::Value::Null,
        AstValue::Boolean(b) => (*b).into(),
        AstValue::Enum(e) => e.as_str().into(),
        AstValue::String(s) => s.as_str().into(),
        AstValue::Int(i) => serde_json::from_str(i.as_str()).unwrap_or_default(),
        AstValue::Float(f) => serde_json::from_str(f.as_str()).unwrap_or_default(),
        AstValue::List(items) => items.iter().map(|i| ast_to_json(i)).collect(),
        AstValue::Object(fields) => serde_json::Value::Object(
            fields
                .iter()
                .map(|(k, v)| (k.to_string(), ast_to_json(v)))
                .collect(),
        ),
    }
}

struct Checker<'a> {
    schema: &'a Valid<Schema>,
    doc: &'a Valid<ExecutableDocument>,
    /// Effective variable values: supplied, else the default.
    vars: Map<String, serde_json::Value>,
    out: Vec<Violation>,
}

/// One position on an error's path: whether the schema lets it be null and whether the
/// response holds a null there (positions below the first null hold nothing).
struct Position {
    nullable: bool,
    null: bool,
}

impl<'a> Checker<'a> {
    /// Whether `@skip`/`@include` keep a selection.
    fn included(&self, directives: &apollo_compiler::executable::DirectiveList) -> bool {
        directives.iter().all(|d| {
            let value = d.specified_argument_by_name("if");
            let flag = match value.map(|v| &**v) {
                Some(AstValue::Boolean(b)) => Some(*b),
                Some(AstValue::Variable(v)) => self.vars.get(v.as_str()).and_then(|v| v.as_bool()),
                _ => None,
            };
            !matches!(
                (d.name.as_str(), flag),
                ("skip", Some(true)) | ("include", Some(false))
            )
        })
    }

    fn applies(&self, condition: &str, runtime: &str) -> bool {
        condition == runtime || self.schema.is_subtype(condition, runtime)
    }

    /// The spec's CollectFields over `sets` for an object of type `runtime`.
    fn collect<'d>(&self, runtime: &str, sets: &[&'d SelectionSet], mode: Mode) -> Grouped<'d>
    where
        'a: 'd,
    {
        let mut out = Vec::new();
        for set in sets {
            let mut visited = HashSet::new();
            self.collect_into(runtime, set, mode, &mut out, &mut visited);
        }
        out
    }

    fn collect_into<'d>(
        &self,
        runtime: &str,
        set: &'d SelectionSet,
        mode: Mode,
        out: &mut Grouped<'d>,
        visited: &mut HashSet<&'d str>,
    ) where
        'a: 'd,
    {
        for sel in &set.selections {
            if mode.directives && !self.included(sel.directives()) {
                continue;
            }
            match sel {
                Selection::Field(f) => {
                    let key = f.response_key().to_string();
                    match out.iter_mut().find(|(k, _)| *k == key) {
                        Some((_, fields)) => fields.push(f),
                        None => out.push((key, vec![f])),
                    }
                }
                Selection::FragmentSpread(s) => {
                    if !visited.insert(s.fragment_name.as_str()) {
                        continue;
                    }
                    let Some(fragment) = self.doc.fragments.get(&s.fragment_name) else {
                        continue;
                    };
                    if mode.conditions && !self.applies(fragment.type_condition(), runtime) {
                        continue;
                    }
                    self.collect_into(runtime, &fragment.selection_set, mode, out, visited);
                }
                Selection::InlineFragment(i) => {
                    if let Some(tc) = &i.type_condition
                        && mode.conditions
                        && !self.applies(tc, runtime)
                    {
                        continue;
                    }
                    self.collect_into(runtime, &i.selection_set, mode, out, visited);
                }
            }
        }
    }

    /// Object types a value of type `ty` can have, in schema order; the type itself for
    /// an interface without object types in the API schema (an `@interfaceObject`).
    fn possible(&self, ty: &str) -> Vec<String> {
        let found = self.possible_objects(ty);
        if found.is_empty() {
            vec![ty.to_owned()]
        } else {
            found
        }
    }

    fn possible_objects(&self, ty: &str) -> Vec<String> {
        match self.schema.types.get(ty) {
            Some(ExtendedType::Object(_)) => vec![ty.to_owned()],
            Some(ExtendedType::Union(u)) => u.members.iter().map(|m| m.name.to_string()).collect(),
            Some(ExtendedType::Interface(_)) => self
                .schema
                .types
                .iter()
                .filter(|(_, t)| {
                    matches!(t, ExtendedType::Object(o) if o.implements_interfaces.contains(ty))
                })
                .map(|(n, _)| n.to_string())
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The object type of `obj` at static type `ty`: its selected `__typename`, else the
    /// first possible type whose selection fits the keys present (exactly, then as a
    /// set, then most closely).
    /// Every type tied for best (more than one when the keys present cannot tell, e.g.
    /// only fields every candidate selects: the object is checked as each).
    fn runtime(&self, ty: &str, sets: &[&SelectionSet], obj: &[(String, Json)]) -> Vec<String> {
        let candidates = self.possible(ty);
        if candidates.len() <= 1 {
            return vec![
                candidates
                    .into_iter()
                    .next()
                    .unwrap_or_else(|| ty.to_owned()),
            ];
        }
        let keys: Vec<&str> = obj.iter().map(|(k, _)| k.as_str()).collect();
        let mut scored = Vec::new();
        for c in &candidates {
            let grouped = self.collect(c, sets, EXECUTE);
            for (key, fields) in &grouped {
                let named = obj.iter().find(|(k, _)| k == key).map(|(_, v)| v);
                if fields[0].name == "__typename" && named == Some(&Json::String(c.clone())) {
                    return vec![c.clone()];
                }
            }
            let want: Vec<&str> = grouped.iter().map(|(k, _)| k.as_str()).collect();
            let set_want: HashSet<&str> = want.iter().copied().collect();
            let set_have: HashSet<&str> = keys.iter().copied().collect();
            let score = if want == keys {
                0
            } else if set_want == set_have {
                1
            } else {
                2 + set_want.symmetric_difference(&set_have).count()
            };
            scored.push((score, c.clone()));
        }
        let best = scored.iter().map(|(s, _)| *s).min();
        let tied: Vec<String> = scored
            .into_iter()
            .filter(|(s, _)| Some(*s) == best)
            .map(|(_, c)| c)
            .collect();
        if tied.is_empty() {
            vec![ty.to_owned()]
        } else {
            tied
        }
    }

    fn field_type(&self, runtime: &str, field: &Field) -> Type {
        self.schema
            .type_field(runtime, &field.name)
            .map(|d| d.ty.clone())
            .unwrap_or_else(|_| field.definition.ty.clone())
    }

    /// Why `key` is not among the keys `sets` select on a `runtime` object; `all_sets`
    /// are the selection sets of every field at this position, excluded ones too.
    fn why_unselected(
        &self,
        runtime: &str,
        sets: &[&SelectionSet],
        all_sets: &[&SelectionSet],
        key: &str,
    ) -> &'static str {
        let has = |grouped: Grouped| grouped.iter().any(|(g, _)| g == key);
        let mode = |directives, conditions| Mode {
            directives,
            conditions,
        };
        if has(self.collect(runtime, sets, mode(false, true))) {
            "excluded by @skip/@include"
        } else if has(self.collect(runtime, all_sets, mode(false, true))) {
            "selected only under a field excluded by @skip/@include"
        } else if has(self.collect(runtime, all_sets, mode(false, false))) {
            "selected only in a fragment whose type condition does not apply"
        } else {
            "not selected"
        }
    }

    /// The selection sets of every field under `key`, excluded ones too.
    fn all_subsets<'d>(
        &self,
        runtime: &str,
        all_sets: &[&'d SelectionSet],
        key: &str,
    ) -> Vec<&'d SelectionSet>
    where
        'a: 'd,
    {
        let mode = Mode {
            directives: false,
            conditions: true,
        };
        self.collect(runtime, all_sets, mode)
            .into_iter()
            .find(|(k, _)| k == key)
            .map(|(_, fields)| fields.iter().map(|f| &f.selection_set).collect())
            .unwrap_or_default()
    }

    /// (a), (b) and (d) for an object of static type `ty` selected by `sets`
    /// (`all_sets`: see [`Self::why_unselected`]).
    fn object(
        &mut self,
        ty: &str,
        sets: &[&SelectionSet],
        all_sets: &[&SelectionSet],
        value: &Json,
        path: &[Seg],
    ) {
        let Json::Object(entries) = value else {
            return;
        };
        let candidates = self.runtime(ty, sets, entries);
        if candidates.len() == 1 {
            return self.object_as(&candidates[0], sets, all_sets, value, entries, path);
        }
        // Unknown type: it passes as any candidate it fits, else fails as the first.
        let outer = std::mem::take(&mut self.out);
        let mut first = None;
        for c in &candidates {
            self.object_as(c, sets, all_sets, value, entries, path);
            let found = std::mem::take(&mut self.out);
            if found.is_empty() {
                first = Some(found);
                break;
            }
            first.get_or_insert(found);
        }
        self.out = outer;
        self.out.extend(first.unwrap_or_default());
    }

    /// [`Self::object`] for an object of type `runtime`.
    fn object_as(
        &mut self,
        runtime: &str,
        sets: &[&SelectionSet],
        all_sets: &[&SelectionSet],
        value: &Json,
        entries: &[(String, Json)],
        path: &[Seg],
    ) {
        let runtime = runtime.to_owned();
        let expected = self.collect(&runtime, sets, EXECUTE);
        let want: Vec<&str> = expected.iter().map(|(k, _)| k.as_str()).collect();
        let have: Vec<&str> = entries.iter().map(|(k, _)| k.as_str()).collect();
        let at = show(path);
        let mut seen = HashSet::new();
        for k in &have {
            if !seen.insert(*k) {
                self.out.push(violation(
                    "duplicate key in a response object",
                    format!("{k} in {at}"),
                ));
            }
        }
        for k in have.iter().filter(|k| !want.contains(k)) {
            let why = self.why_unselected(&runtime, sets, all_sets, k);
            self.out.push(violation(
                &format!("extra key: {why}"),
                format!("{k} in {at} ({runtime})"),
            ));
        }
        for k in want.iter().filter(|k| !have.contains(k)) {
            self.out.push(violation(
                "missing key",
                format!("{k} in {at} ({runtime}), present: {have:?}"),
            ));
        }
        let ordered: Vec<&str> = have.iter().copied().filter(|k| want.contains(k)).collect();
        let expected_order: Vec<&str> = want.iter().copied().filter(|k| have.contains(k)).collect();
        if ordered != expected_order && seen.len() == have.len() {
            self.out.push(violation(
                "key order differs from the selection order",
                format!("{at}: {have:?}, selected: {want:?}"),
            ));
        }
        for (key, fields) in &expected {
            let Some(v) = value.get(key) else { continue };
            let p = child(path, Seg::Key(key.clone()));
            if fields[0].name == "__typename" {
                let known = self.schema.get_object(&runtime).is_some();
                if known && *v != Json::String(runtime.clone()) {
                    self.out.push(violation(
                        "wrong __typename",
                        format!("{} is {v:?}, the object is a {runtime}", show(&p)),
                    ));
                }
                continue;
            }
            let field_ty = self.field_type(&runtime, fields[0]);
            let subs: Vec<&SelectionSet> = fields.iter().map(|f| &f.selection_set).collect();
            let all_subs = self.all_subsets(&runtime, all_sets, key);
            self.value(&field_ty, &subs, &all_subs, v, &p);
        }
    }

    fn value(
        &mut self,
        ty: &Type,
        sets: &[&SelectionSet],
        all_sets: &[&SelectionSet],
        v: &Json,
        path: &[Seg],
    ) {
        if *v == Json::Null {
            if ty.is_non_null() {
                self.out.push(violation(
                    "null at a non-null position",
                    format!("{} ({ty})", show(path)),
                ));
            }
            return;
        }
        match ty {
            Type::List(item) | Type::NonNullList(item) => match v {
                Json::Array(items) => {
                    for (i, x) in items.iter().enumerate() {
                        self.value(item, sets, all_sets, x, &child(path, Seg::Index(i)));
                    }
                }
                other => self.out.push(violation(
                    "not a list at a list position",
                    format!("{} ({ty}): {}", show(path), short(Some(other))),
                )),
            },
            Type::Named(n) | Type::NonNullNamed(n) => match self.schema.types.get(n.as_str()) {
                Some(
                    ExtendedType::Object(_) | ExtendedType::Interface(_) | ExtendedType::Union(_),
                ) => {
                    if matches!(v, Json::Object(_)) {
                        self.object(n, sets, all_sets, v, path);
                    } else {
                        self.out.push(violation(
                            "not an object at an object position",
                            format!("{} ({ty}): {}", show(path), short(Some(v))),
                        ));
                    }
                }
                Some(ExtendedType::Enum(e)) => {
                    let known = matches!(v, Json::String(s) if e.values.contains_key(s.as_str()));
                    if !known {
                        self.out.push(violation(
                            "enum value not in the API schema",
                            format!("{} ({ty}): {}", show(path), short(Some(v))),
                        ));
                    }
                }
                _ => {
                    let fits = match (n.as_str(), v) {
                        ("Int", Json::Number(x)) => {
                            x.as_i64().is_some_and(|i| i32::try_from(i).is_ok())
                        }
                        ("Float", Json::Number(_)) => true,
                        ("String", Json::String(_)) | ("Boolean", Json::Bool(_)) => true,
                        ("ID", Json::String(_) | Json::Number(_)) => true,
                        ("Int" | "Float" | "String" | "Boolean" | "ID", _) => false,
                        _ => true,
                    };
                    if !fits {
                        self.out.push(violation(
                            "leaf value of the wrong kind",
                            format!("{} ({ty}): {}", show(path), short(Some(v))),
                        ));
                    }
                }
            },
        }
    }

    /// (c) for every error, and the null-propagation part of (b) along error paths.
    fn errors(&mut self, root: &str, sets: &[&SelectionSet], errors: &Json, data: Option<&Json>) {
        let Json::Array(list) = errors else {
            self.out
                .push(violation("errors is not a list", short(Some(errors))));
            return;
        };
        if list.is_empty() {
            self.out.push(violation("errors is an empty list", ""));
        }
        let mut walks: Vec<(Vec<Seg>, Vec<Position>)> = Vec::new();
        for e in list {
            if !matches!(e.get("message"), Some(Json::String(_))) {
                self.out
                    .push(violation("error without a message", short(Some(e))));
            }
            let Some(path) = e.get("path") else { continue };
            let Json::Array(raw) = path else {
                self.out
                    .push(violation("error path is not a list", short(Some(path))));
                continue;
            };
            let mut segs = Vec::new();
            for s in raw {
                match s {
                    Json::String(k) => segs.push(Seg::Key(k.clone())),
                    Json::Number(n) if n.as_u64().is_some() => {
                        segs.push(Seg::Index(n.as_u64().expect("checked") as usize));
                    }
                    other => {
                        self.out.push(violation(
                            "error path segment is neither a key nor an index",
                            format!("{other:?} in {raw:?}"),
                        ));
                        segs.clear();
                        break;
                    }
                }
            }
            if segs.is_empty() {
                continue;
            }
            if let Some(positions) = self.error_path(root, sets, &segs, data, e) {
                walks.push((segs, positions));
            }
        }
        // A null on an error's path that has a nullable position below it (down to the
        // error) should have stopped there, unless another error's nulls stop at it.
        let first_null = |positions: &[Position]| positions.iter().position(|p| p.null);
        let stops_at = |positions: &[Position], at: usize| {
            positions.len() > at && positions[at + 1..].iter().all(|p| !p.nullable)
        };
        for (segs, positions) in &walks {
            let Some(at) = first_null(positions) else {
                continue;
            };
            if stops_at(positions, at) {
                continue;
            }
            let explained = walks.iter().any(|(other, op)| {
                other.len() >= at
                    && other[..at] == segs[..at]
                    && first_null(op) == Some(at)
                    && stops_at(op, at)
            });
            if !explained {
                let below = positions[at + 1..]
                    .iter()
                    .position(|p| p.nullable)
                    .map(|i| show(&segs[..at + 1 + i]))
                    .unwrap_or_default();
                self.out.push(violation(
                    "null propagated past a nullable position",
                    format!(
                        "{} is null for the error at {}, whose nearest nullable position is {below}",
                        show(&segs[..at]),
                        show(segs)
                    ),
                ));
            }
        }
    }

    /// Follows an error path through the operation (and the data, where present); the
    /// positions from the data root to the path's end, or None when the path is broken.
    fn error_path(
        &mut self,
        root: &str,
        sets: &[&SelectionSet],
        segs: &[Seg],
        data: Option<&Json>,
        error: &Json,
    ) -> Option<Vec<Position>> {
        let mut ty = Type::Named(apollo_compiler::Name::new(root).expect("a type name"));
        let mut sets: Vec<&SelectionSet> = sets.to_vec();
        let mut all_sets = sets.clone();
        let mut cur = data;
        let mut positions = vec![Position {
            nullable: true,
            null: matches!(cur, None | Some(Json::Null)),
        }];
        let broken = |class: &str, i: usize, why: String| {
            violation(
                class,
                format!("{} at {}: {why}", show(segs), show(&segs[..i])),
            )
        };
        for (i, seg) in segs.iter().enumerate() {
            let below_null = positions.iter().any(|p| p.null);
            match (&ty, seg) {
                (Type::List(item) | Type::NonNullList(item), Seg::Index(n)) => {
                    if let Some(Json::Array(items)) = cur
                        && *n >= items.len()
                    {
                        self.out.push(broken(
                            "error path index out of range",
                            i,
                            format!("{n} in a list of {}", items.len()),
                        ));
                        return None;
                    }
                    cur = match cur {
                        Some(Json::Array(items)) => items.get(*n),
                        _ => None,
                    };
                    ty = (**item).clone();
                }
                (Type::Named(n) | Type::NonNullNamed(n), Seg::Key(k)) if !self.is_leaf(n) => {
                    let candidates = match cur {
                        Some(Json::Object(entries)) => self.runtime(n, &sets, entries),
                        _ => self.possible(n),
                    };
                    let found = candidates.iter().find_map(|c| {
                        self.collect(c, &sets, EXECUTE)
                            .into_iter()
                            .find(|(key, _)| key == k)
                            .map(|(_, fields)| (c.clone(), fields))
                    });
                    let Some((runtime, fields)) = found else {
                        let runtime = candidates.first().map_or(n.as_str(), |c| c.as_str());
                        let why = self.why_unselected(runtime, &sets, &all_sets, k);
                        self.out.push(broken(
                            &format!("error path names a key {why}"),
                            i,
                            format!("{k:?}; error: {}", short(Some(error))),
                        ));
                        return None;
                    };
                    all_sets = self.all_subsets(&runtime, &all_sets, k);
                    ty = if fields[0].name == "__typename" {
                        Type::Named(apollo_compiler::Name::new("String").expect("a type name"))
                            .non_null()
                    } else {
                        self.field_type(&runtime, fields[0])
                    };
                    sets = fields.iter().map(|f| &f.selection_set).collect();
                    cur = cur.and_then(|c| c.get(k));
                }
                (_, seg) => {
                    self.out.push(broken(
                        "error path does not fit the selection's shape",
                        i,
                        format!("{seg:?} at a {ty} position"),
                    ));
                    return None;
                }
            }
            positions.push(Position {
                nullable: !ty.is_non_null(),
                null: !below_null && matches!(cur, None | Some(Json::Null)),
            });
        }
        if let Some(v) = cur
            && v.is_leaf()
        {
            self.out.push(violation(
                "error path points at a leaf that has a value",
                format!("{} = {v:?}", show(segs)),
            ));
        }
        Some(positions)
    }

    fn is_leaf(&self, ty: &str) -> bool {
        matches!(
            self.schema.types.get(ty),
            None | Some(ExtendedType::Scalar(_) | ExtendedType::Enum(_))
        )
    }
}
