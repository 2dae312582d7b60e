//! `@deprecated` added or removed: safe either way, reported so clients hear of it.

use apollo_compiler::ast::DirectiveList;

use crate::change::{Change, ChangeKind, Severity};

/// The reason `@deprecated` gives when none is written.
const DEFAULT_REASON: &str = "No longer supported";

pub(super) fn compare(
    coordinate: &str,
    old: &DirectiveList,
    new: &DirectiveList,
    out: &mut Vec<Change>,
) {
    match (reason(old), reason(new)) {
        (None, Some(why)) => out.push(Change::new(
            ChangeKind::DeprecationAdded,
            coordinate,
            Severity::Safe,
            format!("`{coordinate}` was deprecated: {why}"),
        )),
        (Some(_), None) => out.push(Change::new(
            ChangeKind::DeprecationRemoved,
            coordinate,
            Severity::Safe,
            format!("`{coordinate}` is no longer deprecated"),
        )),
        _ => {}
    }
}

/// The deprecation reason, `None` when not deprecated.
pub(super) fn reason(directives: &DirectiveList) -> Option<&str> {
    let deprecated = directives.get("deprecated")?;
    Some(
        deprecated
            .specified_argument_by_name("reason")
            .and_then(|v| v.as_str())
            .unwrap_or(DEFAULT_REASON),
    )
}
