//! One subgraph: parsed, its `@link`s resolved to local directive names, Federation 1
//! schemas upgraded, and validated with apollo-compiler.

use std::collections::{HashMap, HashSet};

use apollo_compiler::ast::{self, Definition, Directive, Value};
use apollo_compiler::schema::Schema;
use apollo_compiler::validation::Valid;

use crate::Location;
use crate::errors::{ErrorSink, codes};
use crate::specs::{self, FedDirective};

/// The federation spec a subgraph links (Federation 1 subgraphs have no `@link`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct FedVersion {
    pub major: u32,
    pub minor: u32,
}

/// A custom spec linked with `@link`, possibly composed through `@composeDirective`.
#[derive(Debug, Clone)]
pub struct CustomLink {
    pub url: String,
    /// Imported directive local names, with the original `import` element text.
    pub imports: Vec<(String, Value)>,
    /// Local names of all directives this link provides (imports and namespaced ones).
    pub namespace: String,
}

#[derive(Debug)]
pub struct Subgraph {
    pub name: String,
    pub url: String,
    /// The `join__Graph` value name.
    pub graph: String,
    pub fed1: bool,
    pub version: FedVersion,
    pub schema: Valid<Schema>,
    /// Federation directive → local name in this subgraph.
    names: HashMap<FedDirective, String>,
    /// Root type local name → canonical name (`Query`, `Mutation`, `Subscription`).
    root_names: HashMap<String, String>,
    pub custom_links: Vec<CustomLink>,
    /// Local names of directives composed with `@composeDirective`.
    pub composed_directives: Vec<String>,
    /// Definitions that are federation machinery, not part of the user's schema.
    internal_types: HashSet<String>,
}

const FED_URL_PREFIX: &str = "https://specs.apollo.dev/federation/v";
const LINK_URL_PREFIX: &str = "https://specs.apollo.dev/link/v";

impl Subgraph {
    /// Local name of a federation directive (without `@`).
    pub fn dir_name(&self, d: FedDirective) -> &str {
        self.names.get(&d).map(String::as_str).unwrap_or("")
    }

    /// Canonical (supergraph) name of a type named `local` in this subgraph.
    pub fn canonical<'a>(&'a self, local: &'a str) -> &'a str {
        self.root_names
            .get(local)
            .map(String::as_str)
            .unwrap_or(local)
    }

    /// Whether a type or directive definition belongs to federation machinery.
    pub fn is_internal_type(&self, name: &str) -> bool {
        self.internal_types.contains(name)
            || name.starts_with("federation__")
            || name.starts_with("link__")
            || name.starts_with("join__")
    }

    /// Line and column of a node of this subgraph's SDL.
    pub fn location(&self, span: Option<apollo_compiler::parser::SourceSpan>) -> Option<Location> {
        let start = span?.line_column_range(&self.schema.sources)?.start;
        Some(Location {
            subgraph: self.name.clone(),
            line: start.line,
            column: start.column,
        })
    }

    /// The applications of a federation directive in a directive list.
    pub fn applications<'a>(
        &self,
        directives: &'a impl DirSource,
        d: FedDirective,
    ) -> Vec<&'a Directive> {
        let name = self.dir_name(d);
        directives
            .dirs()
            .into_iter()
            .filter(|x| x.name == name)
            .collect()
    }

    pub fn has(&self, directives: &impl DirSource, d: FedDirective) -> bool {
        !self.applications(directives, d).is_empty()
    }
}

/// Directive lists of both the AST and the schema representation.
pub trait DirSource {
    fn dirs(&self) -> Vec<&Directive>;
}

impl DirSource for ast::DirectiveList {
    fn dirs(&self) -> Vec<&Directive> {
        self.iter().map(|d| &**d).collect()
    }
}

impl DirSource for apollo_compiler::schema::DirectiveList {
    fn dirs(&self) -> Vec<&Directive> {
        self.iter().map(|d| &***d).collect()
    }
}

impl DirSource for Vec<&Directive> {
    fn dirs(&self) -> Vec<&Directive> {
        self.clone()
    }
}

/// String argument of a directive application.
pub fn str_arg<'a>(d: &'a Directive, name: &str) -> Option<&'a str> {
    match d.specified_argument_by_name(name).map(|v| v.as_ref()) {
        Some(Value::String(s)) => Some(s.as_str()),
        _ => None,
    }
}

pub fn bool_arg(d: &Directive, name: &str) -> Option<bool> {
    match d.specified_argument_by_name(name).map(|v| v.as_ref()) {
        Some(Value::Boolean(b)) => Some(*b),
        _ => None,
    }
}

/// The `join__Graph` enum value for a subgraph name.
pub fn graph_enum_name(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    if out.starts_with(|c: char| c.is_ascii_digit()) || out.is_empty() {
        out.insert(0, '_');
    }
    out
}

struct LinkInfo {
    version: Option<FedVersion>,
    fed1: bool,
    names: HashMap<FedDirective, String>,
    imported_types: HashMap<String, String>,
    custom_links: Vec<CustomLink>,
    composed: Vec<String>,
}

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

fn schema_directives(
    doc: &ast::Document,
) -> impl Iterator<Item = &apollo_compiler::Node<Directive>> {
    doc.definitions.iter().flat_map(|d| match d {
        Definition::SchemaDefinition(s) => s.directives.iter().collect::<Vec<_>>(),
        Definition::SchemaExtension(s) => s.directives.iter().collect(),
        _ => Vec::new(),
    })
}

fn parse_fed_version(url: &str) -> Option<FedVersion> {
    let rest = url.strip_prefix(FED_URL_PREFIX)?;
    let (major, minor) = rest.trim_end_matches('/').split_once('.')?;
    Some(FedVersion {
        major: major.parse().ok()?,
        minor: minor.parse().ok()?,
    })
}

/// Resolves `@link`s: federation directive local names, imported types, custom links.
fn resolve_links(name: &str, doc: &ast::Document, sink: &mut ErrorSink) -> Option<LinkInfo> {
    let mut info = LinkInfo {
        version: None,
        fed1: true,
        names: HashMap::new(),
        imported_types: HashMap::new(),
        custom_links: Vec::new(),
        composed: Vec::new(),
    };
    let mut ok = true;
    for d in schema_directives(doc) {
        if d.name == "composeDirective" || d.name == "federation__composeDirective" {
            continue;
        }
        if d.name != "link" {
            continue;
        }
        let Some(url) = str_arg(d, "url") else {
            sink.error(
                codes::INVALID_LINK_DIRECTIVE_USAGE,
                format!("[{name}] @link requires a string \"url\" argument"),
                name,
            );
            ok = false;
            continue;
        };
        let alias = str_arg(d, "as");
        let imports = import_list(d);
        if url.starts_with(FED_URL_PREFIX) {
            let Some(v) = parse_fed_version(url) else {
                sink.error(
                    codes::INVALID_LINK_IDENTIFIER,
                    format!("[{name}] Invalid federation link url \"{url}\""),
                    name,
                );
                ok = false;
                continue;
            };
            if v.major != 2 || v.minor > specs::MAX_FED_MINOR {
                sink.error(
                    codes::UNKNOWN_FEDERATION_LINK_VERSION,
                    format!(
                        "[{name}] Invalid version v{}.{} for the federation feature in @link direction on schema",
                        v.major, v.minor
                    ),
                    name,
                );
                ok = false;
                continue;
            }
            info.version = Some(v);
            info.fed1 = false;
            let ns = alias.unwrap_or("federation");
            for fd in specs::ALL_DIRECTIVES {
                info.names.insert(*fd, format!("{ns}__{}", fd.name()));
            }
            for (imported, local, _) in &imports {
                if let Some(dname) = imported.strip_prefix('@') {
                    match specs::ALL_DIRECTIVES.iter().find(|fd| fd.name() == dname) {
                        Some(fd) if fd.min_minor() <= v.minor => {
                            let local = local.trim_start_matches('@').to_owned();
                            info.names.insert(*fd, local);
                        }
                        _ => {
                            sink.error(
                                codes::INVALID_LINK_DIRECTIVE_USAGE,
                                format!("[{name}] Cannot import unknown element \"{imported}\"."),
                                name,
                            );
                            ok = false;
                        }
                    }
                } else {
                    info.imported_types.insert(imported.clone(), local.clone());
                }
            }
        } else if url.starts_with(LINK_URL_PREFIX) {
            continue;
        } else {
            let namespace = alias
                .map(str::to_owned)
                .or_else(|| spec_name_from_url(url))
                .unwrap_or_default();
            info.custom_links.push(CustomLink {
                url: url.to_owned(),
                imports: imports
                    .into_iter()
                    .map(|(_, local, raw)| (local.trim_start_matches('@').to_owned(), raw))
                    .collect(),
                namespace,
            });
        }
    }
    if info.fed1 {
        for fd in specs::FED1_DIRECTIVES {
            info.names.insert(*fd, fd.name().to_owned());
        }
    }
    let compose_name = info
        .names
        .get(&FedDirective::ComposeDirective)
        .cloned()
        .unwrap_or_default();
    for d in schema_directives(doc) {
        if d.name == compose_name.as_str()
            && let Some(n) = str_arg(d, "name")
        {
            info.composed.push(n.trim_start_matches('@').to_owned());
        }
    }
    ok.then_some(info)
}

/// `https://example.com/myspec/v1.0` → `myspec`.
fn spec_name_from_url(url: &str) -> Option<String> {
    let mut parts = url.trim_end_matches('/').rsplit('/');
    let last = parts.next()?;
    if last.starts_with('v') && last[1..].contains('.') {
        parts.next().map(str::to_owned)
    } else {
        Some(last.to_owned())
    }
}

/// `import:` elements as (imported name, local name, raw value).
fn import_list(d: &Directive) -> Vec<(String, String, Value)> {
    let Some(Value::List(items)) = d.specified_argument_by_name("import").map(|v| v.as_ref())
    else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|item| match item.as_ref() {
            Value::String(s) => Some((s.to_string(), s.to_string(), item.as_ref().clone())),
            Value::Object(fields) => {
                let get = |k: &str| {
                    fields
                        .iter()
                        .find(|(n, _)| n == k)
                        .and_then(|(_, v)| match v.as_ref() {
                            Value::String(s) => Some(s.to_string()),
                            _ => None,
                        })
                };
                let imported = get("name")?;
                let local = get("as").unwrap_or_else(|| imported.clone());
                Some((imported, local, item.as_ref().clone()))
            }
            _ => None,
        })
        .collect()
}
