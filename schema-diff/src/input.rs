//! SDL text → the schema clients see: a supergraph's API schema, any other schema as is.

use apollo_compiler::Schema;
use apollo_compiler::schema::ExtendedType;
use apollo_compiler::validation::Valid;
use graphfleet_federation::{Supergraph, SupergraphError};

/// Why an SDL text cannot be diffed; each names the text (a file name for the CLI).
#[derive(Debug, thiserror::Error)]
pub enum DiffError {
    #[error("{name} is not valid GraphQL SDL:\n{errors}")]
    InvalidSdl { name: String, errors: String },
    #[error("{name} looks like a supergraph but has no API schema: {error}")]
    InvalidSupergraph {
        name: String,
        error: SupergraphError,
    },
}

/// The client-visible schema of `sdl`; `name` labels errors and diagnostics.
///
/// A Federation supergraph (it declares `join__Graph` or links the join spec) becomes its
/// API schema as the gateway derives it (`graphfleet_federation`): no `@inaccessible`
/// elements, no link/join machinery. A subgraph SDL (it links the federation spec) is
/// only parsed, not validated: `@key` and the other federation directives it uses are
/// declared by the spec, not in the text. Any other SDL must be a valid schema.
pub fn api_schema(sdl: &str, name: &str) -> Result<Schema, DiffError> {
    let schema = Schema::parse(sdl, name).map_err(|e| DiffError::InvalidSdl {
        name: name.to_string(),
        errors: e.errors.to_string(),
    })?;
    if is_supergraph(&schema) {
        return Supergraph::parse(sdl)
            .map(|s| s.api_schema.into_inner())
            .map_err(|error| DiffError::InvalidSupergraph {
                name: name.to_string(),
                error,
            });
    }
    if links_spec(&schema, "/federation/") {
        return Ok(schema);
    }
    schema
        .validate()
        .map(Valid::into_inner)
        .map_err(|e| DiffError::InvalidSdl {
            name: name.to_string(),
            errors: e.errors.to_string(),
        })
}

fn is_supergraph(schema: &Schema) -> bool {
    matches!(schema.types.get("join__Graph"), Some(ExtendedType::Enum(_)))
        || links_spec(schema, "/join/")
}

/// Whether a schema-level directive has a `url:` naming an Apollo spec (`@link` may be
/// renamed, so any directive name counts).
fn links_spec(schema: &Schema, spec: &str) -> bool {
    schema.schema_definition.directives.iter().any(|d| {
        d.specified_argument_by_name("url")
            .and_then(|v| v.as_str())
            .is_some_and(|url| url.starts_with("https://specs.apollo.dev") && url.contains(spec))
    })
}
