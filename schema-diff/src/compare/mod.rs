//! Two schemas → every change between them, classified.

mod deprecation;
mod directives;
mod fields;
mod inputs;
mod types;

use apollo_compiler::Schema;

use crate::change::{self, Change};

/// Every change from `old` to `new`, sorted by coordinate. Built-in scalars, introspection
/// types and built-in directives are left out: no schema can change them.
pub fn diff(old: &Schema, new: &Schema) -> Vec<Change> {
    let mut out = Vec::new();
    types::compare(old, new, &mut out);
    directives::compare(old, new, &mut out);
    change::sort(&mut out);
    out
}
