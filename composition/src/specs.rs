//! Facts from the federation, link and join specifications: directive definitions and
//! the supergraph preamble for each join version.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

/// Newest federation spec minor version (2.x) this composer accepts.
pub const MAX_FED_MINOR: u32 = 12;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FedDirective {
    Key,
    Requires,
    Provides,
    External,
    Tag,
    Extends,
    Shareable,
    Inaccessible,
    Override,
    ComposeDirective,
    InterfaceObject,
    Authenticated,
    RequiresScopes,
    Policy,
    Context,
    FromContext,
    Cost,
    ListSize,
}

pub const ALL_DIRECTIVES: &[FedDirective] = &[
    FedDirective::Key,
    FedDirective::Requires,
    FedDirective::Provides,
    FedDirective::External,
    FedDirective::Tag,
    FedDirective::Extends,
    FedDirective::Shareable,
    FedDirective::Inaccessible,
    FedDirective::Override,
    FedDirective::ComposeDirective,
    FedDirective::InterfaceObject,
    FedDirective::Authenticated,
    FedDirective::RequiresScopes,
    FedDirective::Policy,
    FedDirective::Context,
    FedDirective::FromContext,
    FedDirective::Cost,
    FedDirective::ListSize,
];

/// Directives a Federation 1 subgraph may use without defining them.
pub const FED1_DIRECTIVES: &[FedDirective] = &[
    FedDirective::Key,
    FedDirective::Requires,
    FedDirective::Provides,
    FedDirective::External,
    FedDirective::Extends,
    FedDirective::Tag,
    FedDirective::Inaccessible,
];

impl FedDirective {
    pub fn name(self) -> &'static str {
        match self {
            Self::Key => "key",
            Self::Requires => "requires",
            Self::Provides => "provides",
            Self::External => "external",
            Self::Tag => "tag",
            Self::Extends => "extends",
            Self::Shareable => "shareable",
            Self::Inaccessible => "inaccessible",
            Self::Override => "override",
            Self::ComposeDirective => "composeDirective",
            Self::InterfaceObject => "interfaceObject",
            Self::Authenticated => "authenticated",
            Self::RequiresScopes => "requiresScopes",
            Self::Policy => "policy",
            Self::Context => "context",
            Self::FromContext => "fromContext",
            Self::Cost => "cost",
            Self::ListSize => "listSize",
        }
    }

    /// The federation 2.x minor version that introduced the directive.
    pub fn min_minor(self) -> u32 {
        match self {
            Self::ComposeDirective => 1,
            Self::InterfaceObject => 3,
            Self::Authenticated | Self::RequiresScopes => 5,
            Self::Policy => 6,
            Self::Context | Self::FromContext => 8,
            Self::Cost | Self::ListSize => 9,
            _ => 0,
        }
    }

    /// Definition with `{D}` for the local name and `{FieldSet}` etc. for type local names.
    fn definition(self) -> &'static str {
        match self {
            Self::Key => {
                "directive @{D}(fields: {FieldSet}!, resolvable: Boolean = true) repeatable on OBJECT | INTERFACE"
            }
            Self::Requires => "directive @{D}(fields: {FieldSet}!) on FIELD_DEFINITION",
            Self::Provides => "directive @{D}(fields: {FieldSet}!) on FIELD_DEFINITION",
            Self::External => "directive @{D}(reason: String) on OBJECT | FIELD_DEFINITION",
            Self::Tag => {
                "directive @{D}(name: String!) repeatable on FIELD_DEFINITION | OBJECT | INTERFACE | UNION | ARGUMENT_DEFINITION | SCALAR | ENUM | ENUM_VALUE | INPUT_OBJECT | INPUT_FIELD_DEFINITION | SCHEMA"
            }
            Self::Extends => "directive @{D} on OBJECT | INTERFACE",
            Self::Shareable => "directive @{D} repeatable on OBJECT | FIELD_DEFINITION",
            Self::Inaccessible => INACCESSIBLE_LOCATIONS,
            Self::Override => "directive @{D}(from: String!, label: String) on FIELD_DEFINITION",
            Self::ComposeDirective => "directive @{D}(name: String!) repeatable on SCHEMA",
            Self::InterfaceObject => "directive @{D} on OBJECT",
            Self::Authenticated => {
                "directive @{D} on FIELD_DEFINITION | OBJECT | INTERFACE | SCALAR | ENUM"
            }
            Self::RequiresScopes => {
                "directive @{D}(scopes: [[{Scope}!]!]!) on FIELD_DEFINITION | OBJECT | INTERFACE | SCALAR | ENUM"
            }
            Self::Policy => {
                "directive @{D}(policies: [[{Policy}!]!]!) on FIELD_DEFINITION | OBJECT | INTERFACE | SCALAR | ENUM"
            }
            Self::Context => {
                "directive @{D}(name: String!) repeatable on INTERFACE | OBJECT | UNION"
            }
            Self::FromContext => {
                "directive @{D}(field: {ContextFieldValue}) on ARGUMENT_DEFINITION"
            }
            Self::Cost => {
                "directive @{D}(weight: Int!) on ARGUMENT_DEFINITION | ENUM | FIELD_DEFINITION | INPUT_FIELD_DEFINITION | OBJECT | SCALAR"
            }
            Self::ListSize => {
                "directive @{D}(assumedSize: Int, slicingArguments: [String!], sizedFields: [String!], requireOneSlicingArgument: Boolean = true) on FIELD_DEFINITION"
            }
        }
    }
}

const INACCESSIBLE_LOCATIONS: &str = "directive @{D} on FIELD_DEFINITION | OBJECT | INTERFACE | UNION | ARGUMENT_DEFINITION | SCALAR | ENUM | ENUM_VALUE | INPUT_OBJECT | INPUT_FIELD_DEFINITION";

/// Definitions the subgraph uses but does not declare itself: federation directives under
/// their local names, their argument scalars and `@link`.
pub fn subgraph_prelude(
    names: &HashMap<FedDirective, String>,
    imported_types: &HashMap<String, String>,
    fed1: bool,
    user_defined: &HashSet<String>,
) -> String {
    let type_name = |spec: &str| -> String {
        if fed1 {
            return "_FieldSet".to_owned();
        }
        imported_types
            .get(spec)
            .cloned()
            .unwrap_or_else(|| format!("federation__{spec}"))
    };
    let field_set = type_name("FieldSet");
    let mut out = String::new();
    let mut defined = user_defined.clone();
    let mut scalar = |out: &mut String, name: &str| {
        if defined.insert(name.to_owned()) {
            let _ = writeln!(out, "scalar {name}");
        }
    };
    for n in [
        field_set.clone(),
        type_name("Scope"),
        type_name("Policy"),
        type_name("ContextFieldValue"),
        "link__Import".to_owned(),
        "_Any".to_owned(),
    ] {
        scalar(&mut out, &n);
    }
    if !user_defined.contains("link__Purpose") {
        out.push_str("enum link__Purpose { SECURITY EXECUTION }\n");
    }
    if !user_defined.contains("link") {
        out.push_str("directive @link(url: String, as: String, for: link__Purpose, import: [link__Import]) repeatable on SCHEMA\n");
    }
    let mut sorted: Vec<_> = names.iter().collect();
    sorted.sort();
    for (d, local) in sorted {
        if user_defined.contains(local.as_str()) {
            continue;
        }
        let def = d
            .definition()
            .replace("{D}", local)
            .replace("{FieldSet}", &field_set)
            .replace("{Scope}", &type_name("Scope"))
            .replace("{Policy}", &type_name("Policy"))
            .replace("{ContextFieldValue}", &type_name("ContextFieldValue"));
        out.push_str(&def);
        out.push('\n');
    }
    out
}

/// The join spec version Apollo emits for the newest federation minor version used.
pub fn join_version(max_fed_minor: u32) -> (u32, u32) {
    match max_fed_minor {
        0..=6 => (0, 3),
        7 => (0, 4),
        _ => (0, 5),
    }
}

/// Supergraph definitions of the join spec (without `join__Graph`) for a version.
pub fn join_definitions(version: (u32, u32)) -> Vec<String> {
    let field_args = match version {
        (0, 3) => "",
        (0, 4) => ", overrideLabel: String",
        _ => ", overrideLabel: String, contextArguments: [join__ContextArgument!]",
    };
    let mut defs = vec![
        "directive @join__enumValue(graph: join__Graph!) repeatable on ENUM_VALUE".to_owned(),
        format!(
            "directive @join__field(graph: join__Graph, requires: join__FieldSet, provides: join__FieldSet, type: String, external: Boolean, override: String, usedOverridden: Boolean{field_args}) repeatable on FIELD_DEFINITION | INPUT_FIELD_DEFINITION"
        ),
        "directive @join__graph(name: String!, url: String!) on ENUM_VALUE".to_owned(),
        "directive @join__implements(graph: join__Graph!, interface: String!) repeatable on OBJECT | INTERFACE".to_owned(),
        "directive @join__type(graph: join__Graph!, key: join__FieldSet, extension: Boolean! = false, resolvable: Boolean! = true, isInterfaceObject: Boolean! = false) repeatable on OBJECT | INTERFACE | UNION | ENUM | INPUT_OBJECT | SCALAR".to_owned(),
        "directive @join__unionMember(graph: join__Graph!, member: String!) repeatable on UNION".to_owned(),
        "scalar join__FieldSet".to_owned(),
    ];
    if version >= (0, 4) {
        defs.push("directive @join__directive(graphs: [join__Graph!], name: String!, args: join__DirectiveArguments) repeatable on SCHEMA | OBJECT | INTERFACE | FIELD_DEFINITION".to_owned());
        defs.push("scalar join__DirectiveArguments".to_owned());
    }
    if version >= (0, 5) {
        defs.push("input join__ContextArgument {\n  name: String!\n  type: String!\n  context: String!\n  selection: join__FieldValue!\n}".to_owned());
        defs.push("scalar join__FieldValue".to_owned());
    }
    defs
}

/// The link spec's own definitions in a supergraph.
pub const LINK_DEFINITIONS: &[&str] = &[
    "directive @link(url: String, as: String, for: link__Purpose, import: [link__Import]) repeatable on SCHEMA",
    "scalar link__Import",
    "enum link__Purpose {\n  \"\"\"\n  `SECURITY` features provide metadata necessary to securely resolve fields.\n  \"\"\"\n  SECURITY\n\n  \"\"\"\n  `EXECUTION` features provide metadata necessary for operation execution.\n  \"\"\"\n  EXECUTION\n}",
];

/// A spec whose directives are carried into the supergraph when used in a subgraph.
pub struct SupergraphFeature {
    pub directive: FedDirective,
    pub url: &'static str,
    pub purpose: Option<&'static str>,
    /// Definitions, `{D}` standing for the directive name in the supergraph.
    pub definitions: &'static [&'static str],
}

pub const SUPERGRAPH_FEATURES: &[SupergraphFeature] = &[
    SupergraphFeature {
        directive: FedDirective::Tag,
        url: "https://specs.apollo.dev/tag/v0.3",
        purpose: None,
        definitions: &[
            "directive @tag(name: String!) repeatable on FIELD_DEFINITION | OBJECT | INTERFACE | UNION | ARGUMENT_DEFINITION | SCALAR | ENUM | ENUM_VALUE | INPUT_OBJECT | INPUT_FIELD_DEFINITION | SCHEMA",
        ],
    },
    SupergraphFeature {
        directive: FedDirective::Inaccessible,
        url: "https://specs.apollo.dev/inaccessible/v0.2",
        purpose: Some("SECURITY"),
        definitions: &[
            "directive @inaccessible on FIELD_DEFINITION | OBJECT | INTERFACE | UNION | ARGUMENT_DEFINITION | SCALAR | ENUM | ENUM_VALUE | INPUT_OBJECT | INPUT_FIELD_DEFINITION",
        ],
    },
    SupergraphFeature {
        directive: FedDirective::Authenticated,
        url: "https://specs.apollo.dev/authenticated/v0.1",
        purpose: Some("SECURITY"),
        definitions: &[
            "directive @authenticated on FIELD_DEFINITION | OBJECT | INTERFACE | SCALAR | ENUM",
        ],
    },
    SupergraphFeature {
        directive: FedDirective::RequiresScopes,
        url: "https://specs.apollo.dev/requiresScopes/v0.1",
        purpose: Some("SECURITY"),
        definitions: &[
            "directive @requiresScopes(scopes: [[requiresScopes__Scope!]!]!) on FIELD_DEFINITION | OBJECT | INTERFACE | SCALAR | ENUM",
            "scalar requiresScopes__Scope",
        ],
    },
    SupergraphFeature {
        directive: FedDirective::Policy,
        url: "https://specs.apollo.dev/policy/v0.1",
        purpose: Some("SECURITY"),
        definitions: &[
            "directive @policy(policies: [[policy__Policy!]!]!) on FIELD_DEFINITION | OBJECT | INTERFACE | SCALAR | ENUM",
            "scalar policy__Policy",
        ],
    },
];

/// The context spec: `@context` is carried; `@fromContext` only through `contextArguments`.
pub const CONTEXT_URL: &str = "https://specs.apollo.dev/context/v0.1";
pub const CONTEXT_DEFINITIONS: &[&str] = &[
    "directive @context(name: String!) repeatable on INTERFACE | OBJECT | UNION",
    "directive @context__fromContext(field: context__ContextFieldValue) on ARGUMENT_DEFINITION",
    "scalar context__ContextFieldValue",
];

/// Names of the supergraph directives of the `@cost`/`@listSize` (demand control) spec.
pub const COST_URL: &str = "https://specs.apollo.dev/cost/v0.1";
pub const COST_DEFINITION: &str = "directive @cost(weight: Int!) on ARGUMENT_DEFINITION | ENUM | FIELD_DEFINITION | INPUT_FIELD_DEFINITION | OBJECT | SCALAR";
pub const LIST_SIZE_DEFINITION: &str = "directive @listSize(assumedSize: Int, slicingArguments: [String!], sizedFields: [String!], requireOneSlicingArgument: Boolean = true) on FIELD_DEFINITION";
