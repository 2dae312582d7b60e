//! Supergraph loading: the Apollo supergraph format (`@link` + `join__*`) becomes an
//! API schema (for validation and introspection) plus flat federation metadata.

mod api_schema;
pub mod auth;
pub mod context;
pub mod cost;
pub mod field_set;
pub mod meta;

use apollo_compiler::ast::{Directive, Value};
use apollo_compiler::executable::{Selection, SelectionSet};
use apollo_compiler::schema::ExtendedType;
use apollo_compiler::validation::Valid;
use apollo_compiler::{Name, Schema};
use meta::{
    FederationMeta, FieldMeta, FieldResolver, Key, SelTree, SelTreeItem, Subgraph, SubgraphId,
    TypeId, TypeInSubgraph, TypeKind, TypeMeta,
};
use sha2::{Digest, Sha256};

/// Join spec versions this gateway understands.
const SUPPORTED_JOIN: &[&str] = &["v0.2", "v0.3", "v0.4", "v0.5"];
const JOIN_URL: &str = "https://specs.apollo.dev/join/";

#[derive(Debug, thiserror::Error)]
pub enum SupergraphError {
    #[error("cannot read supergraph file {path}: {reason}")]
    Io {
        path: String,
        reason: std::io::Error,
    },
    #[error("supergraph is not a valid GraphQL schema:\n{0}")]
    Invalid(String),
    #[error(
        "supergraph has no @link to the join spec ({JOIN_URL}vX.Y); is this a federation 2 supergraph?"
    )]
    MissingJoinLink,
    #[error("unsupported join spec version {found} (supported: {})", SUPPORTED_JOIN.join(", "))]
    UnsupportedJoinVersion { found: String },
    #[error("supergraph declares no `{0}` enum listing the subgraphs")]
    MissingGraphEnum(String),
    #[error("join__Graph value {value} has no @join__graph(name:, url:) directive")]
    MissingGraphDirective { value: String },
    #[error("@{directive} on {location} names unknown subgraph {graph}")]
    UnknownGraph {
        directive: String,
        location: String,
        graph: String,
    },
    #[error("invalid field set \"{fields}\" in @{directive} on {location}: {message}")]
    InvalidFieldSet {
        directive: String,
        location: String,
        fields: String,
        message: String,
    },
    #[error("API schema derived from the supergraph is invalid:\n{0}")]
    InvalidApiSchema(String),
}

/// A loaded supergraph: API schema, federation metadata and a content hash.
#[derive(Debug)]
pub struct Supergraph {
    pub api_schema: Valid<Schema>,
    pub meta: FederationMeta,
    /// SHA-256 of the supergraph text; part of every plan-cache key.
    pub hash: [u8; 32],
    /// `@authenticated`, `@requiresScopes` and `@policy`, by type and field.
    pub auth: auth::AuthDirectives,
    /// `@cost` and `@listSize` (demand control), by type and field.
    pub cost: cost::CostDirectives,
    /// API schema implementers, computed once for introspection.
    pub implementers:
        apollo_compiler::collections::HashMap<Name, apollo_compiler::schema::Implementers>,
    /// The supergraph text as loaded (a coprocessor may ask for it).
    pub sdl: std::sync::Arc<str>,
}

impl Supergraph {
    pub fn from_file(path: &std::path::Path) -> Result<Self, SupergraphError> {
        let text = std::fs::read_to_string(path).map_err(|reason| SupergraphError::Io {
            path: path.display().to_string(),
            reason,
        })?;
        Self::parse(&text)
    }

    /// [`Self::hash`] as lowercase hex, how logs, metrics and status name a supergraph.
    pub fn hash_hex(&self) -> String {
        hex(&self.hash)
    }

    pub fn parse(text: &str) -> Result<Self, SupergraphError> {
        let schema = Schema::parse(text, "supergraph.graphql")
            .map_err(|e| SupergraphError::Invalid(e.errors.to_string()))?;
        // Federation-level problems first: they explain more than GraphQL validation would.
        let features = Features::from_schema(&schema)?;
        let graph_enum = features.join("Graph");
        if !matches!(
            schema.types.get(graph_enum.as_str()),
            Some(ExtendedType::Enum(_))
        ) {
            return Err(SupergraphError::MissingGraphEnum(graph_enum));
        }
        let schema = schema
            .validate()
            .map_err(|e| SupergraphError::Invalid(e.errors.to_string()))?;
        let meta = build_meta(&schema, &features)?;
        let auth = auth::AuthDirectives::read(&schema, &meta);
        let cost = cost::CostDirectives::read(&schema, &meta);
        let api_schema = api_schema::build(&schema, &features)?;
        let hash = Sha256::digest(text.as_bytes()).into();
        Ok(Self {
            implementers: api_schema.implementers_map(),
            api_schema,
            meta,
            hash,
            auth,
            cost,
            sdl: text.into(),
        })
    }
}

/// Local names of the core features linked by the supergraph.
#[derive(Debug)]
pub(crate) struct Features {
    /// Local prefix of the join spec (`join` unless renamed with `as:`).
    pub join: String,
    pub link: String,
    pub inaccessible: Option<String>,
    /// Prefixes of all linked specs from specs.apollo.dev, stripped from the API schema.
    pub machinery: Vec<String>,
    /// Names those specs' elements are imported under (`import: [{name: "@cost", as:
    /// "@price"}]` → `price`), stripped too.
    pub imported: Vec<String>,
}

impl Features {
    fn from_schema(schema: &Schema) -> Result<Self, SupergraphError> {
        let mut join = None;
        let mut link = "link".to_string();
        let mut inaccessible = None;
        let mut machinery = Vec::new();
        let mut imported = Vec::new();
        for directive in schema.schema_definition.directives.iter() {
            // `@link` may itself be renamed, but its url always names the link spec.
            let Some(url) = directive
                .specified_argument_by_name("url")
                .and_then(|v| v.as_str())
            else {
                continue;
            };
            let Some((spec, version)) = parse_spec_url(url) else {
                continue;
            };
            let local = directive
                .specified_argument_by_name("as")
                .and_then(|v| v.as_str())
                .map(str::to_string)
                .unwrap_or_else(|| spec.clone());
            if url.starts_with("https://specs.apollo.dev/") {
                machinery.push(local.clone());
                imported.extend(imported_names(directive));
            }
            match spec.as_str() {
                "join" => {
                    if !SUPPORTED_JOIN.contains(&version.as_str()) {
                        return Err(SupergraphError::UnsupportedJoinVersion { found: version });
                    }
                    join = Some(local);
                }
                "link" => link = directive.name.to_string(),
                "inaccessible" => inaccessible = Some(local),
                _ => {}
            }
        }
        let join = join.ok_or(SupergraphError::MissingJoinLink)?;
        Ok(Self {
            join,
            link,
            inaccessible,
            machinery,
            imported,
        })
    }

    fn join(&self, suffix: &str) -> String {
        format!("{}__{suffix}", self.join)
    }
}

/// The local names of a `@link`'s `import:` entries (`"@tag"` → `tag`, `{name: "@cost",
/// as: "@price"}` → `price`).
fn imported_names(link: &Directive) -> Vec<String> {
    let Some(Value::List(imports)) = link
        .specified_argument_by_name("import")
        .map(|v| v.as_ref())
    else {
        return Vec::new();
    };
    let local = |v: &Value| -> Option<String> {
        match v {
            Value::String(name) => Some(name.clone()),
            Value::Object(entries) => {
                let get = |key: &str| {
                    entries
                        .iter()
                        .find(|(k, _)| k == key)
                        .and_then(|(_, v)| v.as_str())
                };
                get("as").or_else(|| get("name")).map(str::to_owned)
            }
            _ => None,
        }
    };
    imports
        .iter()
        .filter_map(|i| local(i))
        .map(|n| n.trim_start_matches('@').to_owned())
        .collect()
}

/// `https://specs.apollo.dev/join/v0.3` → (`join`, `v0.3`).
fn parse_spec_url(url: &str) -> Option<(String, String)> {
    let mut parts = url.trim_end_matches('/').rsplit('/');
    let version = parts.next()?;
    let name = parts.next()?;
    version
        .starts_with('v')
        .then(|| (name.to_string(), version.to_string()))
}

fn arg_str<'a>(d: &'a Directive, name: &str) -> Option<&'a str> {
    d.specified_argument_by_name(name).and_then(|v| v.as_str())
}

fn arg_bool(d: &Directive, name: &str) -> bool {
    d.specified_argument_by_name(name)
        .and_then(|v| v.to_bool())
        .unwrap_or(false)
}

fn arg_enum<'a>(d: &'a Directive, name: &str) -> Option<&'a Name> {
    d.specified_argument_by_name(name)
        .and_then(|v| match v.as_ref() {
            Value::Enum(e) => Some(e),
            _ => None,
        })
}

fn build_meta(
    schema: &Valid<Schema>,
    features: &Features,
) -> Result<FederationMeta, SupergraphError> {
    let mut meta = FederationMeta::default();
    let graph_enum = features.join("Graph");
    let Some(ExtendedType::Enum(graphs)) = schema.types.get(graph_enum.as_str()) else {
        return Err(SupergraphError::MissingGraphEnum(graph_enum));
    };
    let graph_directive = features.join("graph");
    for (value, def) in &graphs.values {
        let d = def.directives.get(&graph_directive).ok_or_else(|| {
            SupergraphError::MissingGraphDirective {
                value: value.to_string(),
            }
        })?;
        meta.subgraphs.push(Subgraph {
            name: arg_str(d, "name").unwrap_or(value.as_str()).to_string(),
            url: arg_str(d, "url").unwrap_or_default().to_string(),
            enum_value: value.clone(),
        });
    }
    let graph_of = |d: &Directive, location: &str| -> Result<Option<SubgraphId>, SupergraphError> {
        let Some(value) = arg_enum(d, "graph") else {
            return Ok(None);
        };
        meta.subgraphs
            .iter()
            .position(|s| &s.enum_value == value)
            .map(|i| Some(SubgraphId(i as u32)))
            .ok_or_else(|| SupergraphError::UnknownGraph {
                directive: d.name.to_string(),
                location: location.to_string(),
                graph: value.to_string(),
            })
    };

    let join_type = features.join("type");
    let join_field = features.join("field");
    let join_implements = features.join("implements");
    let join_union_member = features.join("unionMember");
    let context_directive = context::directive_name(schema);
    let mut types = Vec::new();
    let mut fields = Vec::new();
    let implementers = schema.implementers_map();
    for (name, ty) in &schema.types {
        if ty.is_built_in() || is_machinery(name, features) {
            continue;
        }
        let kind = match ty {
            ExtendedType::Object(_) => TypeKind::Object,
            ExtendedType::Interface(_) => TypeKind::Interface,
            ExtendedType::Union(_) => TypeKind::Union,
            ExtendedType::Enum(_) => TypeKind::Enum,
            ExtendedType::InputObject(_) => TypeKind::InputObject,
            ExtendedType::Scalar(_) => TypeKind::Scalar,
        };
        let type_id = TypeId(types.len() as u32);
        let mut subgraphs: Vec<TypeInSubgraph> = Vec::new();
        let mut implements = Vec::new();
        let mut union_members = Vec::new();
        for d in ty.directives().iter() {
            if d.name.as_str() == join_type {
                let Some(sg) = graph_of(d, name)? else {
                    continue;
                };
                let key = arg_str(d, "key")
                    .map(|k| parse_field_set(schema, name, k, "key", name))
                    .transpose()?;
                let entry = match subgraphs.iter_mut().position(|t| t.subgraph == sg) {
                    Some(i) => &mut subgraphs[i],
                    None => {
                        subgraphs.push(TypeInSubgraph {
                            subgraph: sg,
                            keys: Vec::new(),
                            interface_object: false,
                        });
                        subgraphs.last_mut().expect("just pushed")
                    }
                };
                entry.interface_object |= arg_bool(d, "isInterfaceObject");
                if let Some(fields) = key {
                    let resolvable = d
                        .specified_argument_by_name("resolvable")
                        .and_then(|v| v.to_bool())
                        .unwrap_or(true);
                    entry.keys.push(Key { fields, resolvable });
                }
            } else if d.name.as_str() == join_implements {
                if let (Some(sg), Some(i)) = (graph_of(d, name)?, arg_str(d, "interface")) {
                    implements.push((sg, Name::new(i).map_err(|e| invalid_name(name, &e))?));
                }
            } else if d.name.as_str() == join_union_member
                && let (Some(sg), Some(m)) = (graph_of(d, name)?, arg_str(d, "member"))
            {
                union_members.push((sg, Name::new(m).map_err(|e| invalid_name(name, &e))?));
            }
        }
        let first = fields.len() as u32;
        let field_defs: Vec<_> = match ty {
            ExtendedType::Object(o) => o.fields.values().collect(),
            ExtendedType::Interface(i) => i.fields.values().collect(),
            _ => Vec::new(),
        };
        for def in field_defs {
            let location = format!("{name}.{}", def.name);
            let mut resolvers = Vec::new();
            let mut via_interface_object = false;
            for d in def.directives.get_all(&join_field) {
                let Some(sg) = graph_of(d, &location)? else {
                    // `@join__field` without a graph: served through an @interfaceObject.
                    via_interface_object = true;
                    continue;
                };
                let output_name = def.ty.inner_named_type().as_str();
                let requires = arg_str(d, "requires")
                    .map(|f| parse_field_set(schema, name, f, "requires", &location))
                    .transpose()?;
                let provides = arg_str(d, "provides")
                    .map(|f| parse_field_set(schema, output_name, f, "provides", &location))
                    .transpose()?;
                resolvers.push(FieldResolver {
                    subgraph: sg,
                    external: arg_bool(d, "external"),
                    requires,
                    provides,
                    override_from: arg_str(d, "override").map(str::to_string),
                    override_label: arg_str(d, "overrideLabel").map(str::to_string),
                    used_overridden: arg_bool(d, "usedOverridden"),
                    output: arg_str(d, "type")
                        .map(|t| t.trim_matches(|c| matches!(c, '[' | ']' | '!' | ' ')))
                        .filter(|t| *t != output_name && schema.types.contains_key(*t))
                        .and_then(|t| Name::new(t).ok()),
                    subgraph_type: arg_str(d, "type").map(str::to_string),
                    context_arguments: context::arguments(d, &location)?,
                });
            }
            meta.field_by_name.insert(
                (type_id, def.name.clone()),
                crate::meta::FieldId(fields.len() as u32),
            );
            fields.push(FieldMeta {
                parent: type_id,
                name: def.name.clone(),
                output: def.ty.inner_named_type().clone(),
                ty: def.ty.clone(),
                resolvers,
                via_interface_object,
            });
        }
        meta.type_by_name.insert(name.clone(), type_id);
        types.push(TypeMeta {
            name: name.clone(),
            kind,
            subgraphs,
            fields: first..fields.len() as u32,
            implements,
            union_members,
            possible_types: possible_types(schema, &implementers, name, ty),
            contexts: context::contexts_set(
                context_directive.as_deref(),
                ty.directives().iter().map(|d| &d.node),
            ),
        });
    }
    meta.types = types;
    meta.fields = fields;
    Ok(meta)
}

fn invalid_name(location: &str, e: &impl std::fmt::Display) -> SupergraphError {
    SupergraphError::Invalid(format!("{location}: {e}"))
}

pub(crate) fn is_machinery(name: &str, features: &Features) -> bool {
    features.imported.iter().any(|n| n == name)
        || features
            .machinery
            .iter()
            .chain(std::iter::once(&features.link))
            .any(|prefix| {
                name.strip_prefix(prefix.as_str())
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with("__"))
            })
}

fn parse_field_set(
    schema: &Valid<Schema>,
    type_name: &str,
    source: &str,
    directive: &str,
    location: &str,
) -> Result<SelTree, SupergraphError> {
    let err = |message: String| SupergraphError::InvalidFieldSet {
        directive: directive.to_string(),
        location: location.to_string(),
        fields: source.to_string(),
        message,
    };
    let set = field_set::parse(schema, type_name, source).map_err(|e| err(e.to_string()))?;
    Ok(sel_tree(&set.selection_set))
}

fn sel_tree(set: &SelectionSet) -> SelTree {
    let mut tree = SelTree::default();
    for sel in &set.selections {
        match sel {
            Selection::Field(f) => tree.items.push(SelTreeItem::Field {
                name: f.name.clone(),
                alias: None,
                args: f.arguments.clone(),
                sub: sel_tree(&f.selection_set),
            }),
            Selection::InlineFragment(f) => match &f.type_condition {
                Some(tc) => tree.items.push(SelTreeItem::Fragment {
                    type_condition: tc.clone(),
                    sub: sel_tree(&f.selection_set),
                }),
                None => tree.merge(&sel_tree(&f.selection_set)),
            },
            Selection::FragmentSpread(_) => {}
        }
    }
    tree
}

fn possible_types(
    schema: &Schema,
    implementers: &apollo_compiler::collections::HashMap<
        Name,
        apollo_compiler::schema::Implementers,
    >,
    name: &Name,
    ty: &ExtendedType,
) -> Vec<Name> {
    match ty {
        ExtendedType::Interface(_) => {
            let mut v: Vec<Name> = implementers
                .get(name)
                .map(|i| i.objects.iter().cloned().collect())
                .unwrap_or_default();
            // Keep supergraph declaration order for stable plans.
            v.sort_by_key(|n| schema.types.get_index_of(n));
            v
        }
        ExtendedType::Union(u) => u.members.iter().map(|m| m.name.clone()).collect(),
        _ => Vec::new(),
    }
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}
