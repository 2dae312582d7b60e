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
    fn fields(fields: &mut [apollo_compiler::Node<apollo_compiler::ast::FieldDefinition>]) {
        for field in fields {
            let field = field.make_mut();
            field.directives.clear();
            for arg in &mut field.arguments {
                arg.make_mut().directives.clear();
            }
        }
    }
    match def {
        Definition::ObjectTypeDefinition(obj) => {
            let obj = obj.make_mut();
            obj.directives.clear();
            fields(&mut obj.fields);
        }
        Definition::ObjectTypeExtension(obj) => {
            let obj = obj.make_mut();
            obj.directives.clear();
            fields(&mut obj.fields);
        }
        Definition::InterfaceTypeDefinition(obj) => {
            let obj = obj.make_mut();
            obj.directives.clear();
            fields(&mut obj.fields);
        }
        Definition::InterfaceTypeExtension(obj) => {
            let obj = obj.make_mut();
            obj.directives.clear();
            fields(&mut obj.fields);
        }
        Definition::UnionTypeDefinition(u) => u.make_mut().directives.clear(),
        Definition::UnionTypeExtension(u) => u.make_mut().directives.clear(),
        Definition::EnumTypeDefinition(e) => {
            let e = e.make_mut();
            e.directives.clear();
            for v in &mut e.values {
                v.make_mut().directives.clear();
            }
        }
        Definition::EnumTypeExtension(e) => {
            let e = e.make_mut();
            e.directives.clear();
            for v in &mut e.values {
                v.make_mut().directives.clear();
            }
        }
        Definition::ScalarTypeDefinition(s) => s.make_mut().directives.clear(),
        Definition::ScalarTypeExtension(s) => s.make_mut().directives.clear(),
        Definition::InputObjectTypeDefinition(i) => {
            let i = i.make_mut();
            i.directives.clear();
            for f in &mut i.fields {
                f.make_mut().directives.clear();
            }
        }
        Definition::InputObjectTypeExtension(i) => {
            let i = i.make_mut();
            i.directives.clear();
            for f in &mut i.fields {
                f.make_mut().directives.clear();
            }
        }
        _ => {}
    }
}

/// Directives a subgraph library defines itself; an SDL (Federation 1 style) may
/// declare them too, and their definitions have no place in the executable schema.
const FEDERATION_DIRECTIVES: &[&str] = &[
    "key",
    "external",
    "requires",
    "provides",
    "extends",
    "shareable",
    "inaccessible",
    "override",
    "tag",
    "link",
    "composeDirective",
    "interfaceObject",
    "authenticated",
    "requiresScopes",
    "policy",
    "context",
    "fromContext",
    "cost",
    "listSize",
];

/// The object type an entity `@key` makes resolvable through `_entities`: an object
/// type (definition or extension) with a `@key` that is not `resolvable: false`.
fn has_key(def: &Definition) -> Option<String> {
    let (name, directives) = match def {
        Definition::ObjectTypeDefinition(obj) => (&obj.name, &obj.directives),
        Definition::ObjectTypeExtension(obj) => (&obj.name, &obj.directives),
        _ => return None,
    };
    let resolvable = directives.get_all("key").any(|key| {
        key.specified_argument_by_name("resolvable")
            .is_none_or(|v| v.to_bool() != Some(false))
    });
    resolvable.then(|| name.to_string())
}

/// An extension of a type the SDL never defines becomes its definition, as subgraph
/// libraries read Federation 1 `extend type` (the schema builder rejects it otherwise).
fn extension_as_definition(def: Definition) -> Definition {
    use apollo_compiler::Node;
    use apollo_compiler::ast;
    match def {
        Definition::ObjectTypeExtension(e) => {
            let e = (*e).clone();
            Definition::ObjectTypeDefinition(Node::new(ast::ObjectTypeDefinition {
                description: None,
                name: e.name,
                implements_interfaces: e.implements_interfaces,
                directives: e.directives,
                fields: e.fields,
            }))
        }
        Definition::InterfaceTypeExtension(e) => {
            let e = (*e).clone();
            Definition::InterfaceTypeDefinition(Node::new(ast::InterfaceTypeDefinition {
                description: None,
                name: e.name,
                implements_interfaces: e.implements_interfaces,
                directives: e.directives,
                fields: e.fields,
            }))
        }
        Definition::UnionTypeExtension(e) => {
            let e = (*e).clone();
            Definition::UnionTypeDefinition(Node::new(ast::UnionTypeDefinition {
                description: None,
                name: e.name,
                directives: e.directives,
                members: e.members,
            }))
        }
        Definition::EnumTypeExtension(e) => {
            let e = (*e).clone();
            Definition::EnumTypeDefinition(Node::new(ast::EnumTypeDefinition {
                description: None,
                name: e.name,
                directives: e.directives,
                values: e.values,
            }))
        }
        Definition::InputObjectTypeExtension(e) => {
            let e = (*e).clone();
            Definition::InputObjectTypeDefinition(Node::new(ast::InputObjectTypeDefinition {
                description: None,
                name: e.name,
                directives: e.directives,
                fields: e.fields,
            }))
        }
        Definition::ScalarTypeExtension(e) => {
            let e = (*e).clone();
            Definition::ScalarTypeDefinition(Node::new(ast::ScalarTypeDefinition {
                description: None,
                name: e.name,
                directives: e.directives,
            }))
        }
        other => other,
    }
}

/// The schema a subgraph executes against: its SDL without directive applications
/// (executable directives it defines are kept), type extensions of undefined types
/// read as definitions, plus `_Any`, `_Service`, `_Entity` (the object types with a
/// resolvable `@key`) and the `_service`/`_entities` root fields.
pub fn subgraph_schema(name: &str, sdl: &str) -> Result<Valid<Schema>, SchemaError> {
    let doc = Document::parse(sdl, format!("{name}.graphql")).map_err(|e| schema_error(name, e))?;
    let mut defined: std::collections::HashSet<String> = doc
        .definitions
        .iter()
        .filter(|d| !d.is_extension_definition())
        .filter_map(|d| d.name().map(|n| n.to_string()))
        .collect();
    let mut defs = Vec::new();
    let mut entities = Vec::new();
    for mut def in doc.definitions.iter().cloned() {
        match &def {
            Definition::SchemaDefinition(_) | Definition::SchemaExtension(_) => continue,
            Definition::DirectiveDefinition(d)
                if FEDERATION_DIRECTIVES.contains(&d.name.as_str()) =>
            {
                continue;
            }
            _ => {}
        }
        if let Some(entity) = has_key(&def)
            && !entities.contains(&entity)
        {
            entities.push(entity);
        }
        if def.is_extension_definition()
            && let Some(type_name) = def.name().map(|n| n.to_string())
            && defined.insert(type_name)
        {
            def = extension_as_definition(def);
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
    if !defined.contains("Query") {
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
