//! Executable schemas derived from the committed SDL files: a subgraph's schema plus
//! the federation additions (`_service`, `_entities`), and the API schema of a supergraph.

use apollo_compiler::Schema;
use apollo_compiler::ast::{Definition, Document};
use apollo_compiler::validation::Valid;

/// A schema could not be built from an SDL text (a bug in a committed file).
#[derive(Debug, thiserror::Error)]
#[error("invalid schema {name}: {message}")]
pub struct SchemaError {
    name: String,
    message: String,
}

fn schema_error(name: &str, message: impl ToString) -> SchemaError {
    SchemaError {
        name: name.to_owned(),
        message: message.to_string(),
    }
}

/// Drops every directive application: execution here never needs them, and
/// the federation directives are not defined in the plain schema.
fn strip_directives(def: &mut Definition) {
    match def {
        Definition::ObjectTypeDefinition(obj) => {
            let obj = obj.make_mut();
            obj.directives.clear();
            for field in &mut obj.fields {
                field.make_mut().directives.clear();
            }
        }
        Definition::InterfaceTypeDefinition(obj) => {
            let obj = obj.make_mut();
            obj.directives.clear();
            for field in &mut obj.fields {
                field.make_mut().directives.clear();
            }
        }
        Definition::UnionTypeDefinition(u) => u.make_mut().directives.clear(),
        Definition::EnumTypeDefinition(e) => {
            let e = e.make_mut();
            e.directives.clear();
            for v in &mut e.values {
                v.make_mut().directives.clear();
            }
        }
        Definition::ScalarTypeDefinition(s) => s.make_mut().directives.clear(),
        Definition::InputObjectTypeDefinition(i) => {
            let i = i.make_mut();
            i.directives.clear();
            for f in &mut i.fields {
                f.make_mut().directives.clear();
            }
        }
        _ => {}
    }
}

fn has_key(def: &Definition) -> Option<String> {
    match def {
        Definition::ObjectTypeDefinition(obj) if obj.directives.get("key").is_some() => {
            Some(obj.name.to_string())
        }
        _ => None,
    }
}

/// The schema a subgraph executes against: its SDL without directives, plus
/// `_Any`, `_Service`, `_Entity` and the `_service`/`_entities` root fields.
pub fn subgraph_schema(name: &str, sdl: &str) -> Result<Valid<Schema>, SchemaError> {
    let doc = Document::parse(sdl, format!("{name}.graphql")).map_err(|e| schema_error(name, e))?;
    let mut defs = Vec::new();
    let mut entities = Vec::new();
    let mut has_query = false;
    for mut def in doc.definitions.iter().cloned() {
        if matches!(
            def,
            Definition::SchemaDefinition(_) | Definition::SchemaExtension(_)
        ) {
            continue;
        }
        if let Some(entity) = has_key(&def) {
            entities.push(entity);
        }
        if let Definition::ObjectTypeDefinition(obj) = &def {
            has_query |= obj.name == "Query";
        }
        strip_directives(&mut def);
        defs.push(def);
    }
    let mut text = Document {
        sources: Default::default(),
        definitions: defs,
    }
    .to_string();
    text.push_str("\nscalar _Any\ntype _Service { sdl: String }\n");
    if !has_query {
        text.push_str("type Query\n");
    }
    if entities.is_empty() {
        text.push_str("extend type Query { _service: _Service! }\n");
    } else {
        text.push_str(&format!(
            "union _Entity = {}\nextend type Query {{ _service: _Service! _entities(representations: [_Any!]!): [_Entity]! }}\n",
            entities.join(" | ")
        ));
    }
    Schema::parse_and_validate(text, format!("{name}.graphql"))
        .map_err(|e| schema_error(name, e.errors))
}

fn is_composition_machinery(def: &Definition) -> bool {
    let name = match def {
        Definition::SchemaDefinition(_)
        | Definition::SchemaExtension(_)
        | Definition::DirectiveDefinition(_) => return true,
        Definition::ScalarTypeDefinition(s) => &s.name,
        Definition::EnumTypeDefinition(e) => &e.name,
        Definition::InputObjectTypeDefinition(i) => &i.name,
        _ => return false,
    };
    name.starts_with("join__") || name.starts_with("link__")
}

/// The API schema of a composed supergraph: what a monolith serves, and what a
/// gateway exposes. (The sets use no `@inaccessible`.)
pub fn api_schema(name: &str, supergraph: &str) -> Result<Valid<Schema>, SchemaError> {
    let doc = Document::parse(supergraph, format!("{name}.graphql"))
        .map_err(|e| schema_error(name, e))?;
    let defs = doc
        .definitions
        .iter()
        .filter(|def| !is_composition_machinery(def))
        .cloned()
        .map(|mut def| {
            strip_directives(&mut def);
            def
        })
        .collect();
    let text = Document {
        sources: Default::default(),
        definitions: defs,
    }
    .to_string();
    Schema::parse_and_validate(text, format!("{name}.graphql"))
        .map_err(|e| schema_error(name, e.errors))
}
