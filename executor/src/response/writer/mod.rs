//! Writes the final response in one pass: field order and aliases from the operation's
//! shapes, null propagation to the nearest nullable parent, errors with paths.

use super::keys::KeyTable;
use super::store::{ObjId, Store, Value};
use crate::memory::{Charge, MEMORY_BUDGET_EXCEEDED, OverBudget};
use apollo_compiler::ast::Type;
use apollo_compiler::response::JsonMap;
use graphfleet_planner::operation::DeferId;
use graphfleet_planner::operation::shape::{ShapeObjectId, Shapes};
use std::rc::Rc;

mod errors;
mod nulls;
mod scalars;

use errors::PathRef;
pub use errors::{Location, PathSeg, ResponseError, UNAUTHORIZED_CODE};
use scalars::{Leaf, Scalar};
pub use scalars::{write_scalar, write_str};

/// The output is charged to the memory budget this far ahead of what is written, so the
/// budget is asked once per step rather than per object.
const CHARGE_STEP: usize = 256 * 1024;

/// Marks a null where the schema promised non-null; bubbles to the nearest nullable parent.
struct NullBubble;

/// An object written in a payload whose deferred fragment `defer` is still to be sent:
/// where it is, and the fragment's shape for it.
#[derive(Debug, Clone)]
pub struct DeferPoint {
    pub defer: DeferId,
    pub path: Vec<PathSeg>,
    pub obj: ObjId,
    pub shape: ShapeObjectId,
    /// Output length when recorded: a null bubbling over the object drops the point.
    at: usize,
}

/// What writing one field of a shape needs beyond the shape itself, worked out the first
/// time the shape is written (a big response writes the same shape thousands of times).
struct FieldPlan {
    /// `"key":`, escaped.
    prefix: Box<[u8]>,
    /// The store's id of the response key (`None`: no subgraph was asked for it).
    key: Option<super::KeyId>,
    typename: bool,
    scalar: Scalar,
}

pub struct Writer<'a> {
    pub store: &'a Store,
    pub keys: &'a KeyTable,
    pub shapes: &'a Shapes,
    pub variables: &'a JsonMap,
    pub errors: &'a mut Vec<ResponseError>,
    out: Vec<u8>,
    /// Where the writer is: borrowed keys, made owned only when an error needs them.
    path: Vec<PathRef<'a>>,
    typename_key: Option<super::KeyId>,
    /// The response is cut once it grows past this many bytes.
    max_bytes: usize,
    too_large: bool,
    /// The request's charge against the gateway's memory budget: the output is charged
    /// to it as it grows, and cut when the budget has no room.
    memory: Option<&'a Charge>,
    /// Output bytes charged to `memory` (ahead of what is written).
    charged: usize,
    /// Past this output length [`Writer::room`] is asked again.
    check_at: usize,
    /// The cut was the memory budget's, not `max_bytes`'.
    over_memory: bool,
    /// Per shape object, by id.
    field_plans: Vec<Option<Rc<[FieldPlan]>>>,
    /// Where the written object is in the whole response (deferred payloads).
    base: Vec<PathSeg>,
    /// Deferred fragments met on objects that stay in the payload.
    points: Vec<DeferPoint>,
    /// `no subgraph answered` errors written: past [`nulls::MAX_LEFT_OUT_ERRORS`] the
    /// rest are nulls without one more (each check scans the errors).
    left_out: usize,
}

impl<'a> Writer<'a> {
    pub fn new(
        store: &'a Store,
        keys: &'a KeyTable,
        shapes: &'a Shapes,
        variables: &'a JsonMap,
        errors: &'a mut Vec<ResponseError>,
    ) -> Self {
        Self {
            store,
            keys,
            shapes,
            variables,
            errors,
            out: Vec::new(),
            path: Vec::new(),
            typename_key: keys.get("__typename"),
            max_bytes: usize::MAX,
            too_large: false,
            memory: None,
            charged: 0,
            check_at: 0,
            over_memory: false,
            field_plans: Vec::new(),
            base: Vec::new(),
            points: Vec::new(),
            left_out: 0,
        }
    }

    /// About as large as the subgraph bodies it comes from: sized once, so a big
    /// response is not copied over and over while it grows. That size is charged to the
    /// memory budget at once: a response the budget has no room for is cut before
    /// anything is written, instead of after most of it.
    fn reserve_for_store(&mut self) {
        let size = self.store.buffers.iter().map(|b| b.len()).sum::<usize>();
        let size = size.clamp(16 * 1024, 64 * 1024 * 1024);
        if !self.charge_up_to(size.min(self.max_bytes)) {
            return;
        }
        if self.out.is_empty() && self.out.capacity() < size {
            // A big one is a buffer an earlier response left (`buffers::into_bytes`
            // gives it back once sent).
            self.out = super::buffers::BYTES.take(size);
        }
    }

    /// The path the writer is at, from the response root.
    fn current_path(&self) -> Vec<PathSeg> {
        let mut path = self.base.clone();
        path.extend(self.path.iter().map(PathRef::owned));
        path
    }

    /// Cuts the output back to `len` (a null replaces what was written from there):
    /// deferred fragments on objects written since are gone with them.
    fn truncate(&mut self, len: usize) {
        self.out.truncate(len);
        if self.points.last().is_some_and(|p| p.at >= len) {
            self.points.retain(|p| p.at < len);
        }
    }

    fn field_plans(&mut self, id: ShapeObjectId) -> Rc<[FieldPlan]> {
        let i = id.0 as usize;
        if let Some(Some(plans)) = self.field_plans.get(i) {
            return plans.clone();
        }
        let plans: Rc<[FieldPlan]> = self
            .shapes
            .object(id)
            .fields
            .iter()
            .map(|field| {
                let mut prefix = Vec::with_capacity(field.key.len() + 3);
                write_str(&mut prefix, &field.key);
                prefix.push(b':');
                FieldPlan {
                    prefix: prefix.into(),
                    key: self.keys.get(&field.key),
                    typename: field.name == "__typename",
                    scalar: match field.child {
                        Some(_) => Scalar::Other,
                        None => Scalar::of(field.ty.inner_named_type()),
                    },
                }
            })
            .collect();
        if self.field_plans.len() <= i {
            self.field_plans.resize(i + 1, None);
        }
        self.field_plans[i] = Some(plans.clone());
        plans
    }

    /// Cut the response (`data: null` and one `RESPONSE_TOO_LARGE` error) once it
    /// grows past `max` bytes, instead of buffering it whole.
    pub fn max_bytes(mut self, max: usize) -> Self {
        self.max_bytes = max;
        self
    }

    /// Charge the output to `memory` as it grows; when the memory budget has no room
    /// the response is cut (`MEMORY_BUDGET_EXCEEDED`).
    pub fn memory(mut self, memory: &'a Charge) -> Self {
        self.memory = Some(memory);
        self
    }

    /// Whether the output may grow on: within `max_bytes`, and charged a step ahead
    /// of what is written. Sets when to ask again.
    fn room(&mut self) -> bool {
        let len = self.out.len();
        if len > self.max_bytes {
            return false;
        }
        if self.memory.is_none() {
            self.check_at = self.max_bytes;
            return true;
        }
        // At `max_bytes` exactly the next check is the cut.
        let target = len.saturating_add(CHARGE_STEP).min(self.max_bytes).max(len);
        if !self.charge_up_to(target) {
            return false;
        }
        self.check_at = self.charged.min(self.max_bytes);
        true
    }

    /// Raise what the output holds charged to `bytes`; false (the response to be cut)
    /// when the budget has no room for it.
    fn charge_up_to(&mut self, bytes: usize) -> bool {
        let Some(memory) = self.memory else {
            return true;
        };
        if bytes <= self.charged {
            return true;
        }
        if memory.try_add(bytes - self.charged).is_err() {
            memory.cut();
            self.over_memory = true;
            self.too_large = true;
            return false;
        }
        self.charged = bytes;
        true
    }

    /// The complete response body: `{"data":…,"errors":[…]}`.
    pub fn write_response(mut self, root: Option<ObjId>) -> Vec<u8> {
        self.reserve_for_store();
        if !self.too_large {
            self.write_data(root);
        }
        if self.too_large {
            return self.cut();
        }
        self.close()
    }

    /// The initial payload of an incremental response, `{"data":…,"errors":[…]` still
    /// open (the caller adds `hasNext`), and the deferred fragments to send later.
    pub fn write_initial(mut self, root: Option<ObjId>) -> (Vec<u8>, Vec<DeferPoint>) {
        self.reserve_for_store();
        if !self.too_large {
            self.write_data(root);
        }
        if self.too_large {
            let mut body = self.cut();
            body.pop();
            return (body, Vec::new());
        }
        let points = std::mem::take(&mut self.points);
        let mut body = self.close();
        body.pop();
        (body, points)
    }

    /// The data of deferred fragment `point` (`{…}`, or `null` when a non-null field in
    /// it is null; the errors say why, with paths from the response root), and the
    /// deferred fragments nested in it.
    pub fn write_deferred(mut self, point: &DeferPoint) -> (Vec<u8>, Vec<DeferPoint>) {
        self.base = point.path.clone();
        if self.write_object(point.obj, point.shape).is_err() || self.too_large {
            self.truncate(0);
            self.out.extend_from_slice(b"null");
            if self.over_memory {
                let error = self.memory_error();
                self.errors.push(ResponseError {
                    path: Some(self.base.clone()),
                    ..error
                });
            }
        }
        (self.out, self.points)
    }

    fn write_data(&mut self, root: Option<ObjId>) {
        self.out.extend_from_slice(b"{\"data\":");
        match (root, self.shapes.root) {
            (Some(root), Some(shape)) => {
                let start = self.out.len();
                if self.write_object(root, shape).is_err() {
                    self.truncate(start);
                    self.out.extend_from_slice(b"null");
                }
            }
            _ => self.out.extend_from_slice(b"null"),
        }
    }

    /// The errors, if any, and the closing brace.
    fn close(mut self) -> Vec<u8> {
        if !self.errors.is_empty() {
            // Error paths name only positions a response can have (issue 14's invariants).
            debug_assert!(
                self.errors
                    .iter()
                    .flat_map(|e| e.path.iter().flatten())
                    .all(|seg| !matches!(seg, PathSeg::Key(k) if k == "@")),
                "an error path names a placeholder: {:?}",
                self.errors
            );
            self.out.extend_from_slice(b",\"errors\":");
            serde_json::to_writer(&mut self.out, &*self.errors)
                .expect("serializing errors into a Vec cannot fail");
        }
        self.out.push(b'}');
        self.out
    }

    /// The whole response replaced by the error saying it was too large.
    fn cut(mut self) -> Vec<u8> {
        self.out.clear();
        self.out.shrink_to(16 * 1024);
        let error = if self.over_memory {
            self.memory_error()
        } else {
            ResponseError {
                extensions: Some(serde_json::json!({ "code": crate::RESPONSE_TOO_LARGE })),
                ..ResponseError::new(format!(
                    "the response exceeds {} bytes (limits.max_response_bytes)",
                    self.max_bytes
                ))
            }
        };
        self.out.extend_from_slice(b"{\"data\":null,\"errors\":[");
        serde_json::to_writer(&mut self.out, &error)
            .expect("serializing an error into a Vec cannot fail");
        self.out.extend_from_slice(b"]}");
        self.out
    }

    /// Why the memory budget cut the response.
    fn memory_error(&self) -> ResponseError {
        let limit = self.memory.map_or(usize::MAX, |m| m.budget().limit());
        ResponseError {
            extensions: Some(serde_json::json!({ "code": MEMORY_BUDGET_EXCEEDED })),
            ..ResponseError::new(format!("writing the response: {}", OverBudget { limit }))
        }
    }

    fn write_object(&mut self, obj: ObjId, shape: ShapeObjectId) -> Result<(), NullBubble> {
        if self.out.len() > self.check_at && !self.room() {
            // Unwinds the whole response (every level sees `too_large` and bubbles).
            self.too_large = true;
            return Err(NullBubble);
        }
        let shapes = self.shapes;
        let plans = self.field_plans(shape);
        let shape = shapes.object(shape);
        let object = self.store.object(obj);
        let mut answered = None;
        self.out.push(b'{');
        let mut first = true;
        for (field, plan) in shape.fields.iter().zip(plans.iter()) {
            if !field.included(self.variables) {
                continue;
            }
            if !first {
                self.out.push(b',');
            }
            first = false;
            self.out.extend_from_slice(&plan.prefix);
            if field.unauthorized {
                self.path.push(PathRef::Key(&field.key));
                self.push_unauthorized();
                self.path.pop();
                if field.ty.is_non_null() {
                    return Err(NullBubble);
                }
                self.out.extend_from_slice(b"null");
                continue;
            }
            if plan.typename {
                if shape.concrete {
                    write_str(&mut self.out, &shape.typename);
                    continue;
                }
                // No subgraph told the concrete type (e.g. only an `@interfaceObject` one).
                self.path.push(PathRef::Key(&field.key));
                self.push_error(format!(
                    "could not determine the concrete type of a {} value",
                    shape.typename
                ));
                self.path.pop();
                return Err(NullBubble);
            }
            let found = plan.key.and_then(|k| object.get(k));
            self.path.push(PathRef::Key(&field.key));
            // Once per object: whether any of its fields came back at all.
            if found.is_none()
                && *answered.get_or_insert_with(|| nulls::answered_some(object, &plans))
            {
                self.left_out(obj, &shape.typename, &field.name);
            }
            let value = found.unwrap_or(&Value::Null);
            let start = self.out.len();
            let leaf = Leaf {
                child: field.child,
                enum_values: field.enum_values.map(|id| shapes.enum_values(id)),
                scalar: plan.scalar,
            };
            let result = self.write_value(value, &field.ty, leaf, &shape.typename, &field.name);
            self.path.pop();
            if result.is_err() {
                if field.ty.is_non_null() {
                    return Err(NullBubble);
                }
                self.truncate(start);
                self.out.extend_from_slice(b"null");
            }
        }
        self.out.push(b'}');
        for (defer, block) in &shape.defers {
            let point = DeferPoint {
                defer: *defer,
                path: self.current_path(),
                obj,
                shape: *block,
                at: self.out.len(),
            };
            self.points.push(point);
        }
        Ok(())
    }

    fn write_value(
        &mut self,
        value: &Value,
        ty: &Type,
        leaf: Leaf<'_>,
        parent: &str,
        field: &str,
    ) -> Result<(), NullBubble> {
        if matches!(value, Value::Null) {
            if ty.is_non_null() {
                self.non_null_error(parent, field);
                return Err(NullBubble);
            }
            self.out.extend_from_slice(b"null");
            return Ok(());
        }
        match ty {
            Type::List(inner) | Type::NonNullList(inner) => {
                let Value::List(items) = value else {
                    return self.invalid(parent, field, ty);
                };
                let store: &'a Store = self.store;
                let items = store.list(*items);
                // Items of a built-in scalar or custom scalar type: a valid one is
                // written here, with no call or path entry of its own.
                let scalars = matches!(**inner, Type::Named(_) | Type::NonNullNamed(_))
                    && leaf.child.is_none()
                    && leaf.enum_values.is_none();
                self.out.push(b'[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        self.out.push(b',');
                    }
                    if scalars && !matches!(item, Value::Null) && leaf.scalar.fits(item, store) {
                        write_scalar(&mut self.out, item, store, self.keys);
                        continue;
                    }
                    self.path.push(PathRef::Index(i));
                    let start = self.out.len();
                    let r = self.write_value(item, inner, leaf, parent, field);
                    self.path.pop();
                    if r.is_err() {
                        if inner.is_non_null() {
                            return Err(NullBubble);
                        }
                        self.truncate(start);
                        self.out.extend_from_slice(b"null");
                    }
                }
                self.out.push(b']');
                Ok(())
            }
            Type::Named(_) | Type::NonNullNamed(_) => match (leaf.child, value) {
                (Some(set), Value::Object(id)) => {
                    match self.shapes.for_type_bytes(set, self.typename_of(*id)) {
                        Some(shape) => self.write_object(*id, shape),
                        None => self.invalid(parent, field, ty),
                    }
                }
                (None, v) if !leaf.scalar.fits(v, self.store) => self.invalid(parent, field, ty),
                (None, v)
                    if leaf.enum_values.is_some_and(|values| {
                        let name = self.store.str_bytes(v);
                        !values.iter().any(|n| Some(n.as_bytes()) == name)
                    }) =>
                {
                    // Not a string, or not one of the enum's values.
                    self.invalid(parent, field, ty)
                }
                (None, v) => {
                    write_scalar(&mut self.out, v, self.store, self.keys);
                    Ok(())
                }
                _ => self.invalid(parent, field, ty),
            },
        }
    }

    fn typename_of(&self, id: ObjId) -> Option<&'a [u8]> {
        let store: &'a Store = self.store;
        // Objects of a statically known type need no __typename.
        self.typename_key
            .and_then(|k| store.object(id).get(k))
            .and_then(|v| store.str_bytes(v))
    }

    fn invalid(&mut self, parent: &str, field: &str, ty: &Type) -> Result<(), NullBubble> {
        self.push_error(format!(
            "subgraph returned a value of the wrong shape for {parent}.{field} (expected {ty})"
        ));
        if ty.is_non_null() {
            Err(NullBubble)
        } else {
            self.out.extend_from_slice(b"null");
            Ok(())
        }
    }

    fn non_null_error(&mut self, parent: &str, field: &str) {
        // A subgraph error at or above this path already explains the null.
        if !self.explained() {
            self.push_error(format!(
                "Cannot return null for non-nullable field {parent}.{field}"
            ));
        }
    }

    /// A field the request may not read (authorization), at the current path.
    fn push_unauthorized(&mut self) {
        self.errors.push(ResponseError {
            path: Some(self.current_path()),
            extensions: Some(serde_json::json!({ "code": UNAUTHORIZED_CODE })),
            ..ResponseError::new("Unauthorized field or type")
        });
    }

    fn push_error(&mut self, message: String) {
        self.errors.push(ResponseError {
            path: Some(self.current_path()),
            ..ResponseError::new(message)
        });
    }
}
