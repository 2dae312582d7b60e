//! Limits an operation must keep to; `None` means unlimited.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OperationLimits {
    /// Deepest field nesting in an operation (fragments expanded).
    pub max_depth: Option<u32>,
    /// Most aliased fields in an operation.
    pub max_aliases: Option<u32>,
    /// Most root fields in the selected operation.
    pub max_root_fields: Option<u32>,
    /// Most lexical tokens in the query document.
    pub max_tokens: Option<u32>,
    /// Most distinct fields once fragments are merged (the planner's budget).
    pub max_height: Option<u32>,
    /// Answer `__schema` / `__type`.
    pub introspection: bool,
    /// Most values (object entries and list items) an introspection answer may hold,
    /// counted before it runs.
    pub max_introspection_values: Option<u32>,
}

impl Default for OperationLimits {
    fn default() -> Self {
        Self {
            max_depth: None,
            max_aliases: None,
            max_root_fields: None,
            max_tokens: None,
            max_height: None,
            introspection: true,
            max_introspection_values: None,
        }
    }
}
