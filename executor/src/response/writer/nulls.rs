//! Where a null comes from: errors at, above or below a path, and the check that no field
//! comes back null without one (see [`Writer::left_out`]).

use super::{FieldPlan, Writer};
use crate::response::store::{ObjId, Object};

/// Most `no subgraph answered` errors one response gets.
pub(super) const MAX_LEFT_OUT_ERRORS: usize = 100;

impl Writer<'_> {
    /// Whether an error at or above the current path (or one without a path) explains
    /// a null here.
    pub(super) fn explained(&self) -> bool {
        self.errors.iter().any(|e| match &e.path {
            None => true,
            Some(p) => {
                let (base, rest) = p.split_at(p.len().min(self.base.len()));
                base == self.base.as_slice()
                    && rest.len() <= self.path.len()
                    && rest.iter().zip(&self.path).all(|(a, b)| b.is(a))
            }
        })
    }

    /// Whether an error lies below the current path: a subgraph that nulled a non-null
    /// field there nulled its parents up to this one itself (even its whole `data`).
    fn error_below(&self) -> bool {
        self.errors.iter().any(|e| {
            e.path.as_ref().is_some_and(|p| {
                let (base, rest) = p.split_at(p.len().min(self.base.len()));
                base == self.base.as_slice()
                    && rest.len() > self.path.len()
                    && rest.iter().zip(&self.path).all(|(a, b)| b.is(a))
            })
        })
    }

    /// A field no subgraph answered (absent from its object, not null) comes back null
    /// only with an error saying why (at, above or below it), or where a subgraph
    /// answered the whole object null: never a silent null. Else debug builds (every
    /// test) stop here: it is the silent-null class of planner bug (a field fetched from
    /// nowhere, or from a subgraph that does not resolve it), which no check of the
    /// response can see afterwards. Release builds add the error (a subgraph that left
    /// out a field it was asked for does the same).
    pub(super) fn left_out(&mut self, obj: ObjId, parent: &str, field: &str) {
        // A subgraph leaving out field after field: the first errors say so; checking
        // each further one against every error would make the writer quadratic.
        if self.left_out >= MAX_LEFT_OUT_ERRORS && !cfg!(debug_assertions) {
            return;
        }
        if self.explained() || self.error_below() || self.store.answered_null(obj) {
            return;
        }
        debug_assert!(
            false,
            "silent null: {parent}.{field} at {:?} was answered by no subgraph, and no error says why (errors: {:?})",
            self.current_path(),
            self.errors
        );
        self.left_out += 1;
        self.push_error(format!("no subgraph answered {parent}.{field}"));
    }
}

/// Whether a subgraph answered any field of `object`'s shape (its `__typename`s aside).
/// An object with none is one whose type's selection the planner left out by design (a
/// runtime type not every subgraph producing the value knows: the planner's
/// `possible_here`), so its fields' nulls are not checked.
pub(super) fn answered_some(object: &Object, plans: &[FieldPlan]) -> bool {
    plans
        .iter()
        .any(|p| !p.typename && p.key.is_some_and(|k| object.get(k).is_some()))
}
