//! What a diff reports: one [`Change`] per difference, its kind, coordinate and severity.

use std::fmt;

use serde::{Serialize, Serializer};

/// How a change affects existing clients, ordered from harmless to harmful.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// No valid operation changes meaning or stops validating.
    Safe,
    /// Every operation still validates, but responses may hold what clients never saw.
    Dangerous,
    /// Some operation that validated before no longer does, or gets a type it cannot read.
    Breaking,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Safe => "safe",
            Self::Dangerous => "dangerous",
            Self::Breaking => "breaking",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Declares [`ChangeKind`] with its stable name (the JSON value and the table's column),
/// so the two can never disagree.
macro_rules! change_kinds {
    ($($(#[$doc:meta])* $variant:ident => $name:literal,)*) => {
        /// What changed. Argument kinds cover both field and directive arguments.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ChangeKind {
            $($(#[$doc])* $variant,)*
        }

        impl ChangeKind {
            /// The stable `SCREAMING_SNAKE_CASE` name.
            pub fn name(self) -> &'static str {
                match self {
                    $(Self::$variant => $name,)*
                }
            }
        }
    };
}

change_kinds! {
    TypeAdded => "TYPE_ADDED",
    TypeRemoved => "TYPE_REMOVED",
    /// e.g. an object type became an interface.
    TypeKindChanged => "TYPE_KIND_CHANGED",
    /// A field of an object or interface type.
    FieldAdded => "FIELD_ADDED",
    FieldRemoved => "FIELD_REMOVED",
    FieldTypeChanged => "FIELD_TYPE_CHANGED",
    RequiredArgumentAdded => "REQUIRED_ARGUMENT_ADDED",
    OptionalArgumentAdded => "OPTIONAL_ARGUMENT_ADDED",
    ArgumentRemoved => "ARGUMENT_REMOVED",
    ArgumentTypeChanged => "ARGUMENT_TYPE_CHANGED",
    /// Added, removed or changed: clients that omit the argument get other behaviour.
    ArgumentDefaultChanged => "ARGUMENT_DEFAULT_CHANGED",
    EnumValueAdded => "ENUM_VALUE_ADDED",
    EnumValueRemoved => "ENUM_VALUE_REMOVED",
    UnionMemberAdded => "UNION_MEMBER_ADDED",
    UnionMemberRemoved => "UNION_MEMBER_REMOVED",
    /// An object or interface type now implements an interface.
    ImplementedInterfaceAdded => "IMPLEMENTED_INTERFACE_ADDED",
    ImplementedInterfaceRemoved => "IMPLEMENTED_INTERFACE_REMOVED",
    RequiredInputFieldAdded => "REQUIRED_INPUT_FIELD_ADDED",
    OptionalInputFieldAdded => "OPTIONAL_INPUT_FIELD_ADDED",
    InputFieldRemoved => "INPUT_FIELD_REMOVED",
    InputFieldTypeChanged => "INPUT_FIELD_TYPE_CHANGED",
    InputFieldDefaultChanged => "INPUT_FIELD_DEFAULT_CHANGED",
    DirectiveAdded => "DIRECTIVE_ADDED",
    DirectiveRemoved => "DIRECTIVE_REMOVED",
    DirectiveLocationAdded => "DIRECTIVE_LOCATION_ADDED",
    DirectiveLocationRemoved => "DIRECTIVE_LOCATION_REMOVED",
    DirectiveRepeatableAdded => "DIRECTIVE_REPEATABLE_ADDED",
    DirectiveRepeatableRemoved => "DIRECTIVE_REPEATABLE_REMOVED",
    /// `@deprecated` on a field, argument, input field or enum value.
    DeprecationAdded => "DEPRECATION_ADDED",
    DeprecationRemoved => "DEPRECATION_REMOVED",
}

impl fmt::Display for ChangeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for ChangeKind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// One difference between the old and the new API schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    pub kind: ChangeKind,
    /// The schema coordinate of the changed element: `Query.products(first:)`,
    /// `Color.RED`, `@auth(role:)`; the union, object or directive for member,
    /// interface and location changes.
    pub coordinate: String,
    pub severity: Severity,
    /// One line for a human.
    pub message: String,
}

impl Change {
    pub fn new(
        kind: ChangeKind,
        coordinate: impl Into<String>,
        severity: Severity,
        message: impl Into<String>,
    ) -> Self {
        Self {
            kind,
            coordinate: coordinate.into(),
            severity,
            message: message.into(),
        }
    }

    pub fn is_breaking(&self) -> bool {
        self.severity == Severity::Breaking
    }
}

/// The most severe change, `None` when there are no changes.
pub fn max_severity(changes: &[Change]) -> Option<Severity> {
    changes.iter().map(|c| c.severity).max()
}

/// Sorts by coordinate, then kind and message, so the order never depends on the input's.
pub(crate) fn sort(changes: &mut [Change]) {
    changes.sort_by(|a, b| {
        (a.coordinate.as_str(), a.kind.name(), a.message.as_str()).cmp(&(
            b.coordinate.as_str(),
            b.kind.name(),
            b.message.as_str(),
        ))
    });
}

/// A table with one row per change and a count line, stable for snapshots and CI logs.
pub fn render(changes: &[Change]) -> String {
    if changes.is_empty() {
        return "No changes.\n".to_string();
    }
    let header = ["SEVERITY", "KIND", "COORDINATE", "MESSAGE"];
    let rows: Vec<[&str; 4]> = changes
        .iter()
        .map(|c| {
            [
                c.severity.as_str(),
                c.kind.name(),
                &c.coordinate,
                &c.message,
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        push_row(&mut out, row, &widths);
    }
    out.push_str(&summary(changes));
    out
}

fn push_row(out: &mut String, row: &[&str; 4], widths: &[usize; 4]) {
    let last = row.len() - 1;
    for (i, cell) in row.iter().enumerate() {
        if i == last {
            out.push_str(cell);
        } else {
            let pad = widths[i] - cell.chars().count();
            out.push_str(cell);
            out.push_str(&" ".repeat(pad + 2));
        }
    }
    out.push('\n');
}

fn summary(changes: &[Change]) -> String {
    let count = |s: Severity| changes.iter().filter(|c| c.severity == s).count();
    let plural = if changes.len() == 1 { "" } else { "s" };
    format!(
        "\n{} change{plural}: {} breaking, {} dangerous, {} safe\n",
        changes.len(),
        count(Severity::Breaking),
        count(Severity::Dangerous),
        count(Severity::Safe),
    )
}
