//! Collecting errors and hints while composing.

use crate::{CompositionError, Hint, Location};

/// Apollo's error and hint codes used by this composer.
pub mod codes {
    pub const INVALID_GRAPHQL: &str = "INVALID_GRAPHQL";
    pub const INVALID_LINK_DIRECTIVE_USAGE: &str = "INVALID_LINK_DIRECTIVE_USAGE";
    pub const INVALID_LINK_IDENTIFIER: &str = "INVALID_LINK_IDENTIFIER";
    pub const UNKNOWN_FEDERATION_LINK_VERSION: &str = "UNKNOWN_FEDERATION_LINK_VERSION";
    pub const INVALID_SUBGRAPH_NAME: &str = "INVALID_SUBGRAPH_NAME";
    pub const NO_QUERIES: &str = "NO_QUERIES";
    pub const TYPE_KIND_MISMATCH: &str = "TYPE_KIND_MISMATCH";
    pub const FIELD_TYPE_MISMATCH: &str = "FIELD_TYPE_MISMATCH";
    pub const FIELD_ARGUMENT_TYPE_MISMATCH: &str = "FIELD_ARGUMENT_TYPE_MISMATCH";
    pub const FIELD_ARGUMENT_DEFAULT_MISMATCH: &str = "FIELD_ARGUMENT_DEFAULT_MISMATCH";
    pub const INPUT_FIELD_DEFAULT_MISMATCH: &str = "INPUT_FIELD_DEFAULT_MISMATCH";
    pub const REQUIRED_ARGUMENT_MISSING_IN_SOME_SUBGRAPH: &str =
        "REQUIRED_ARGUMENT_MISSING_IN_SOME_SUBGRAPH";
    pub const REQUIRED_INPUT_FIELD_MISSING_IN_SOME_SUBGRAPH: &str =
        "REQUIRED_INPUT_FIELD_MISSING_IN_SOME_SUBGRAPH";
    pub const EMPTY_MERGED_INPUT_TYPE: &str = "EMPTY_MERGED_INPUT_TYPE";
    pub const EMPTY_MERGED_ENUM_TYPE: &str = "EMPTY_MERGED_ENUM_TYPE";
    pub const ENUM_VALUE_MISMATCH: &str = "ENUM_VALUE_MISMATCH";
    pub const INVALID_FIELD_SHARING: &str = "INVALID_FIELD_SHARING";
    pub const EXTERNAL_MISSING_ON_BASE: &str = "EXTERNAL_MISSING_ON_BASE";
    pub const EXTERNAL_UNUSED: &str = "EXTERNAL_UNUSED";
    pub const KEY_FIELDS_SELECT_INVALID_TYPE: &str = "KEY_FIELDS_SELECT_INVALID_TYPE";
    pub const KEY_FIELDS_HAS_ARGS: &str = "KEY_FIELDS_HAS_ARGS";
    pub const KEY_INVALID_FIELDS: &str = "KEY_INVALID_FIELDS";
    pub const REQUIRES_INVALID_FIELDS: &str = "REQUIRES_INVALID_FIELDS";
    pub const REQUIRES_FIELDS_MISSING_EXTERNAL: &str = "REQUIRES_FIELDS_MISSING_EXTERNAL";
    pub const PROVIDES_INVALID_FIELDS: &str = "PROVIDES_INVALID_FIELDS";
    pub const PROVIDES_FIELDS_MISSING_EXTERNAL: &str = "PROVIDES_FIELDS_MISSING_EXTERNAL";
    pub const PROVIDES_ON_NON_OBJECT_FIELD: &str = "PROVIDES_ON_NON_OBJECT_FIELD";
    pub const AUTH_REQUIREMENTS_APPLIED_ON_INTERFACE: &str =
        "AUTH_REQUIREMENTS_APPLIED_ON_INTERFACE";
    pub const MISSING_TRANSITIVE_AUTH_REQUIREMENTS: &str = "MISSING_TRANSITIVE_AUTH_REQUIREMENTS";
    pub const OVERRIDE_FROM_SELF_ERROR: &str = "OVERRIDE_FROM_SELF_ERROR";
    pub const OVERRIDE_SOURCE_HAS_OVERRIDE: &str = "OVERRIDE_SOURCE_HAS_OVERRIDE";
    pub const OVERRIDE_COLLISION_WITH_ANOTHER_DIRECTIVE: &str =
        "OVERRIDE_COLLISION_WITH_ANOTHER_DIRECTIVE";
    pub const INTERFACE_OBJECT_USAGE_ERROR: &str = "INTERFACE_OBJECT_USAGE_ERROR";
    pub const INTERFACE_FIELD_NO_IMPLEM: &str = "INTERFACE_FIELD_NO_IMPLEM";
    pub const SATISFIABILITY_ERROR: &str = "SATISFIABILITY_ERROR";
    pub const CONTEXT_NOT_SET: &str = "CONTEXT_NOT_SET";
    pub const CONTEXT_INVALID_SELECTION: &str = "CONTEXT_INVALID_SELECTION";
    pub const NO_CONTEXT_IN_SELECTION: &str = "NO_CONTEXT_IN_SELECTION";
    pub const CONTEXT_NO_RESOLVABLE_KEY: &str = "CONTEXT_NO_RESOLVABLE_KEY";
    pub const CONTEXT_NAME_INVALID: &str = "CONTEXT_NAME_INVALID";
    pub const LINK_IMPORT_NAME_MISMATCH: &str = "LINK_IMPORT_NAME_MISMATCH";
    pub const INVALID_SUPERGRAPH: &str = "INVALID_SUPERGRAPH";

    // Hints.
    pub const INCONSISTENT_BUT_COMPATIBLE_FIELD_TYPE: &str =
        "INCONSISTENT_BUT_COMPATIBLE_FIELD_TYPE";
    pub const INCONSISTENT_ARGUMENT_PRESENCE: &str = "INCONSISTENT_ARGUMENT_PRESENCE";
    pub const INCONSISTENT_INPUT_OBJECT_FIELD: &str = "INCONSISTENT_INPUT_OBJECT_FIELD";
    pub const INCONSISTENT_ENUM_VALUE_FOR_INPUT_ENUM: &str =
        "INCONSISTENT_ENUM_VALUE_FOR_INPUT_ENUM";
    pub const INCONSISTENT_ENUM_VALUE_FOR_OUTPUT_ENUM: &str =
        "INCONSISTENT_ENUM_VALUE_FOR_OUTPUT_ENUM";
    pub const INCONSISTENT_DESCRIPTION: &str = "INCONSISTENT_DESCRIPTION";
    pub const INCONSISTENT_DEFAULT_VALUE_PRESENCE: &str = "INCONSISTENT_DEFAULT_VALUE_PRESENCE";
    pub const OVERRIDE_DIRECTIVE_CAN_BE_REMOVED: &str = "OVERRIDE_DIRECTIVE_CAN_BE_REMOVED";
    pub const FROM_SUBGRAPH_DOES_NOT_EXIST: &str = "FROM_SUBGRAPH_DOES_NOT_EXIST";
    pub const OVERRIDE_MIGRATION_IN_PROGRESS: &str = "OVERRIDE_MIGRATION_IN_PROGRESS";
    pub const INCONSISTENT_UNION_MEMBER: &str = "INCONSISTENT_UNION_MEMBER";
    pub const INCONSISTENT_EXECUTABLE_DIRECTIVE_PRESENCE: &str =
        "INCONSISTENT_EXECUTABLE_DIRECTIVE_PRESENCE";
    pub const INCONSISTENT_EXECUTABLE_DIRECTIVE_LOCATIONS: &str =
        "INCONSISTENT_EXECUTABLE_DIRECTIVE_LOCATIONS";
    pub const INCONSISTENT_INTERFACE_VALUE_TYPE_FIELD: &str =
        "INCONSISTENT_INTERFACE_VALUE_TYPE_FIELD";
    pub const OVERRIDDEN_FIELD_CAN_BE_REMOVED: &str = "OVERRIDDEN_FIELD_CAN_BE_REMOVED";
    pub const INCONSISTENT_ENTITY: &str = "INCONSISTENT_ENTITY";
    pub const COST_APPLIED_TO_INTERFACE_FIELD: &str = "COST_APPLIED_TO_INTERFACE_FIELD";
    pub const LIST_SIZE_APPLIED_TO_NON_LIST: &str = "LIST_SIZE_APPLIED_TO_NON_LIST";
    pub const LIST_SIZE_INVALID_ASSUMED_SIZE: &str = "LIST_SIZE_INVALID_ASSUMED_SIZE";
    pub const LIST_SIZE_INVALID_SLICING_ARGUMENT: &str = "LIST_SIZE_INVALID_SLICING_ARGUMENT";
    pub const LIST_SIZE_INVALID_SIZED_FIELD: &str = "LIST_SIZE_INVALID_SIZED_FIELD";
    pub const MERGED_NON_REPEATABLE_DIRECTIVE_ARGUMENTS: &str =
        "MERGED_NON_REPEATABLE_DIRECTIVE_ARGUMENTS";
    pub const INCONSISTENT_OBJECT_VALUE_TYPE_FIELD: &str = "INCONSISTENT_OBJECT_VALUE_TYPE_FIELD";
}

#[derive(Debug, Default)]
pub struct ErrorSink {
    pub errors: Vec<CompositionError>,
    pub hints: Vec<Hint>,
}

impl ErrorSink {
    pub fn error(&mut self, code: &str, message: String, subgraph: &str) {
        self.error_in(code, message, &[subgraph]);
    }

    pub fn error_in(&mut self, code: &str, message: String, subgraphs: &[&str]) {
        self.errors.push(CompositionError {
            code: code.to_owned(),
            message,
            subgraphs: subgraphs
                .iter()
                .filter(|s| !s.is_empty())
                .map(|s| (*s).to_owned())
                .collect(),
            locations: Vec::new(),
        });
    }

    pub fn error_at(
        &mut self,
        code: &str,
        message: String,
        subgraph: &str,
        loc: Option<(usize, usize)>,
    ) {
        self.error(code, message, subgraph);
        if let (Some((line, column)), Some(last)) = (loc, self.errors.last_mut()) {
            last.locations.push(Location {
                subgraph: subgraph.to_owned(),
                line,
                column,
            });
        }
    }

    /// Adds a source location to the most recent error.
    pub fn locate(&mut self, loc: Option<Location>) {
        if let (Some(loc), Some(last)) = (loc, self.errors.last_mut()) {
            last.locations.push(loc);
        }
    }

    pub fn hint(&mut self, code: &str, message: String) {
        self.hints.push(Hint {
            code: code.to_owned(),
            message,
        });
    }
}

/// `"a"`, `"a" and "b"`, `"a", "b" and "c"` as Apollo words subgraph lists.
fn join_names<S: AsRef<str>>(names: &[S]) -> String {
    let quoted: Vec<String> = names
        .iter()
        .map(|n| format!("\"{}\"", n.as_ref()))
        .collect();
    match quoted.len() {
        0 => String::new(),
        1 => quoted[0].clone(),
        n => format!("{} and {}", quoted[..n - 1].join(", "), quoted[n - 1]),
    }
}

/// `subgraph "a"` or `subgraphs "a" and "b"`.
pub fn subgraphs_phrase<S: AsRef<str>>(names: &[S]) -> String {
    if names.len() == 1 {
        format!("subgraph {}", join_names(names))
    } else {
        format!("subgraphs {}", join_names(names))
    }
}
