//! Building a subgraph: parse, resolve its links, add the federation prelude, validate.

use std::collections::{HashMap, HashSet};

use apollo_compiler::ast::{self, Definition};
use apollo_compiler::schema::Schema;

use super::links::resolve_links;
use super::{FedVersion, Subgraph};
use crate::errors::{ErrorSink, codes};
use crate::specs;

/// Parses and validates one subgraph; errors go to `sink`.
pub fn build(
    name: &str,
    url: &str,
    graph: String,
    sdl: &str,
    sink: &mut ErrorSink,
) -> Option<Subgraph> {
    let path = format!("{name}.graphql");
    let doc = match ast::Document::parse(sdl, &path) {
        Ok(doc) => doc,
        Err(with) => {
            report_diagnostics(name, &with.errors, sink);
            return None;
        }
    };
    let link = resolve_links(name, &doc, sink)?;
    let fed1 = link.fed1;
    let version = link.version.unwrap_or(FedVersion { major: 1, minor: 0 });
    let user_defined: HashSet<String> = doc
        .definitions
        .iter()
        .filter_map(|d| match d {
            Definition::DirectiveDefinition(x) => Some(x.name.to_string()),
            _ => d.name().map(|n| n.to_string()),
        })
        .collect();
    let mut prelude =
        specs::subgraph_prelude(&link.names, &link.imported_types, fed1, &user_defined);
    if !declares_query(&doc, &user_defined) {
        // Every subgraph serves `_service`, so every subgraph has a query root.
        prelude.push_str("type Query { _service: _Service! }\n");
        if !user_defined.contains("_Service") {
            prelude.push_str("type _Service { sdl: String }\n");
        }
    }
    let built = Schema::builder()
        .adopt_orphan_extensions()
        .add_ast(&doc)
        .parse(prelude, "federation-prelude.graphql")
        .build();
    let built = match built {
        Ok(s) => s,
        Err(with) => {
            report_diagnostics(name, &with.errors, sink);
            return None;
        }
    };
    let schema = match built.validate() {
        Ok(s) => s,
        Err(with) => {
            report_diagnostics(name, &with.errors, sink);
            return None;
        }
    };
    let mut internal_types: HashSet<String> = [
        "_Any",
        "_Entity",
        "_Service",
        "_FieldSet",
        "FieldSet",
        "Import",
        "Purpose",
        "ContextFieldValue",
        "Scope",
        "Policy",
    ]
    .into_iter()
    .filter(|n| !user_defined.contains(*n) || n.starts_with('_'))
    .map(str::to_owned)
    .collect();
    internal_types.extend(link.imported_types.values().cloned());
    let root_names = root_names(&schema);
    Some(Subgraph {
        name: name.to_owned(),
        url: url.to_owned(),
        graph,
        fed1,
        version,
        schema,
        names: link.names,
        root_names,
        custom_links: link.custom_links,
        composed_directives: link.composed,
        internal_types,
    })
}

fn declares_query(doc: &ast::Document, user_defined: &HashSet<String>) -> bool {
    user_defined.contains("Query")
        || doc.definitions.iter().any(|d| match d {
            Definition::SchemaDefinition(s) => !s.root_operations.is_empty(),
            Definition::SchemaExtension(s) => !s.root_operations.is_empty(),
            _ => false,
        })
}

fn report_diagnostics(
    name: &str,
    errors: &apollo_compiler::validation::DiagnosticList,
    sink: &mut ErrorSink,
) {
    for diag in errors.iter() {
        let loc = diag.line_column_range().map(|r| r.start);
        sink.error_at(
            codes::INVALID_GRAPHQL,
            format!("[{name}] {}", diag.error),
            name,
            loc.map(|l| (l.line, l.column)),
        );
    }
}

fn root_names(schema: &Schema) -> HashMap<String, String> {
    let def = &schema.schema_definition;
    let mut out = HashMap::new();
    for (op, local) in [
        ("Query", &def.query),
        ("Mutation", &def.mutation),
        ("Subscription", &def.subscription),
    ] {
        if let Some(local) = local {
            out.insert(local.name.to_string(), op.to_owned());
        }
    }
    out
}
