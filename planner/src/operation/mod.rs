//! Operations: parse + validate against the API schema (apollo-compiler), pick the
//! operation, and lower it into a flat IR (fields and selection sets in `Vec`s).

pub mod demand;
pub mod introspection;
mod ir;
pub mod limits;
pub mod shape;

pub use ir::{
    Condition, ConditionValues, Conditions, Defer, DeferId, DeferIf, DeferMask, MAX_DEFERS,
    OpField, OpFieldId, OpIr, OpSel, PRIMARY, SelSetId,
};

use crate::limits::OperationLimits;
use apollo_compiler::executable::ExecutableDocument;
use apollo_compiler::response::{GraphQLError, JsonMap};
use apollo_compiler::validation::Valid;
use apollo_compiler::{Node, Schema};

/// A validated operation, lowered to IR; shared by every request with the same text.
#[derive(Debug)]
pub struct PreparedOperation {
    pub document: Valid<ExecutableDocument>,
    pub operation: Node<apollo_compiler::executable::Operation>,
    pub ir: OpIr,
    pub shapes: shape::Shapes,
}

/// Request errors, already in GraphQL error form.
#[derive(Debug)]
pub struct RequestErrors(pub Vec<GraphQLError>);

impl RequestErrors {
    pub fn message(message: impl Into<String>) -> Self {
        Self(vec![GraphQLError::new(message, None, &Default::default())])
    }
}

/// Parse, validate and lower `query`; `operation_name` selects among several operations.
pub fn prepare(
    schema: &Valid<Schema>,
    query: &str,
    operation_name: Option<&str>,
) -> Result<PreparedOperation, RequestErrors> {
    prepare_with_limits(schema, query, operation_name, &OperationLimits::default())
}

/// [`prepare`] enforcing `limits` (see [`limits`]); a limit error replaces all others.
pub fn prepare_with_limits(
    schema: &Valid<Schema>,
    query: &str,
    operation_name: Option<&str>,
    limits: &OperationLimits,
) -> Result<PreparedOperation, RequestErrors> {
    let document = parse_limited(schema, query, limits)?;
    let operation = document
        .operations
        .get(operation_name)
        .map_err(|e| RequestErrors::message(e.message().to_string()))?
        .clone();
    limits::check(schema, &document, &operation, limits)?;
    let ir = ir::lower(schema, &document, &operation);
    if ir.condition_variables.len() > ConditionValues::MAX {
        return Err(RequestErrors(vec![limits::error(
            "TOO_MANY_CONDITION_VARIABLES",
            format!(
                "the operation reads {} variables in @skip/@include/@defer(if:); at most {} are supported",
                ir.condition_variables.len(),
                ConditionValues::MAX
            ),
        )]));
    }
    let shapes = shape::Shapes::build(schema, &ir, Some(ConditionValues::default()));
    Ok(PreparedOperation {
        document,
        operation,
        ir,
        shapes,
    })
}

/// Parse under the parser limits, then validate.
fn parse_limited(
    schema: &Valid<Schema>,
    query: &str,
    limits: &OperationLimits,
) -> Result<Valid<ExecutableDocument>, RequestErrors> {
    let parsed = {
        let _span = crate::otel_span!("parse").entered();
        limits::parser(limits).parse_executable(schema, query, "query.graphql")
    };
    match parsed {
        Ok(document) => crate::otel_span!("validate").in_scope(|| {
            document
                .validate(schema)
                .map_err(|e| dedup_errors(&e.errors))
        }),
        Err(e) => {
            let hit = e
                .errors
                .iter()
                .find_map(|d| limits::parser_limit_error(&d.error.to_string(), limits));
            if let Some(limit) = hit {
                return Err(RequestErrors(vec![limit]));
            }
            // Syntax errors: report them with the validation errors, as before.
            Err(
                ExecutableDocument::parse_and_validate(schema, query, "query.graphql")
                    .err()
                    .map_or_else(|| dedup_errors(&e.errors), |e| dedup_errors(&e.errors)),
            )
        }
    }
}

fn dedup_errors(list: &apollo_compiler::validation::DiagnosticList) -> RequestErrors {
    // A syntax error can be reported by both parsing passes; report it once.
    let mut errors: Vec<GraphQLError> = Vec::new();
    for error in list.iter().map(|d| d.to_json()) {
        if !errors.contains(&error) {
            errors.push(error);
        }
    }
    RequestErrors(errors)
}

/// Coerce request variables against the operation's definitions (defaults, types).
pub fn coerce_variables(
    schema: &Valid<Schema>,
    prepared: &PreparedOperation,
    variables: &JsonMap,
) -> Result<Valid<JsonMap>, RequestErrors> {
    apollo_compiler::request::coerce_variable_values(schema, &prepared.operation, variables)
        .map_err(|e| RequestErrors(vec![e.to_graphql_error(&prepared.document.sources)]))
}
