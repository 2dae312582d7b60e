//! One field's definitions across the subgraphs defining its type, with the federation
//! properties merging needs (external, shareable, @requires/@provides/@override...).

use apollo_compiler::Node;
use apollo_compiler::ast::Type;
use apollo_compiler::schema::{FieldDefinition, InputValueDefinition};

use super::accessors::{canon_type, implements_of, type_directives, type_fields};
use super::state::{Merger, TypeSource};
use crate::context::ContextArg;
use crate::errors::codes;
use crate::model::Kind;
use crate::specs::FedDirective;
use crate::subgraph::str_arg;

/// One subgraph's definition of a field, with its federation properties.
pub(super) struct FieldSource<'a> {
    pub(super) sg: usize,
    pub(super) def: &'a FieldDefinition,
    pub(super) ty: Type,
    pub(super) external: bool,
    pub(super) provided: bool,
    pub(super) requires: Option<String>,
    pub(super) provides: Option<String>,
    pub(super) shareable: bool,
    /// (from subgraph, label) when this source overrides another.
    pub(super) overrides: Option<(String, Option<String>)>,
    /// The label when another subgraph overrides this source; `Some(None)` without label.
    pub(super) overridden: Option<Option<String>>,
    pub(super) referenced: bool,
    /// Referenced by a field set or implementing an interface field in its subgraph
    /// (Apollo's "used" fields: an overridden one stays, `usedOverridden`).
    pub(super) used: bool,
    /// Arguments set from a context (not part of the supergraph field).
    pub(super) context_args: Vec<ContextArg>,
}

impl FieldSource<'_> {
    /// The arguments the supergraph field keeps (contextual ones are dropped).
    pub(super) fn plain_args(&self) -> impl Iterator<Item = &Node<InputValueDefinition>> {
        self.def
            .arguments
            .iter()
            .filter(|a| !self.context_args.iter().any(|c| c.name == a.name.as_str()))
    }
}

pub(super) fn field_sources<'a>(
    ctx: &mut Merger<'_>,
    tname: &str,
    kind: Kind,
    sources: &[TypeSource<'a>],
    fname: &str,
) -> Vec<FieldSource<'a>> {
    let mut out = Vec::new();
    for src in sources {
        let Some(def) = type_fields(src.ty).and_then(|f| f.get(fname)) else {
            continue;
        };
        let sg = ctx.sg(src.sg);
        let info = &ctx.input.infos[src.sg];
        let coord = (src.local.to_owned(), fname.to_owned());
        let external = info.external.contains(&coord);
        let referenced = info.referenced.contains(&coord);
        let in_interface = implements_of(src.ty).iter().any(|i| {
            sg.schema
                .types
                .get(i.as_str())
                .and_then(type_fields)
                .is_some_and(|f| f.contains_key(fname))
        });
        if external && !referenced {
            if sg.fed1 {
                // Federation 1 upgrade: unused @external fields are dropped.
                continue;
            }
            if !in_interface && kind == Kind::Object {
                ctx.sink.error(
                    codes::EXTERNAL_UNUSED,
                    format!(
                        "[{}] Field \"{tname}.{fname}\" is marked @external but is not used in any federation directive (@key, @provides, @requires) or to satisfy an interface; the field declaration has no use and should be removed (or the field should not be @external).",
                        sg.name
                    ),
                    &sg.name,
                );
                ctx.sink.locate(sg.location(def.name.location()));
            }
        }
        let type_shareable = sg.has(&type_directives(src.ty), FedDirective::Shareable);
        let shareable = sg.fed1
            || type_shareable
            || sg.has(&def.directives, FedDirective::Shareable)
            || info.key_fields.contains(&coord);
        let requires = sg
            .applications(&def.directives, FedDirective::Requires)
            .first()
            .and_then(|d| str_arg(d, "fields"))
            .map(str::to_owned);
        let provides = sg
            .applications(&def.directives, FedDirective::Provides)
            .first()
            .and_then(|d| str_arg(d, "fields"))
            .map(str::to_owned);
        let overrides = sg
            .applications(&def.directives, FedDirective::Override)
            .first()
            .and_then(|d| {
                str_arg(d, "from")
                    .map(|from| (from.to_owned(), str_arg(d, "label").map(str::to_owned)))
            });
        out.push(FieldSource {
            sg: src.sg,
            def,
            ty: canon_type(sg, &def.ty),
            external,
            provided: info.provided.contains(&coord),
            requires,
            provides,
            shareable,
            overrides,
            overridden: None,
            referenced,
            used: referenced || in_interface,
            context_args: info.context_args.get(&coord).cloned().unwrap_or_default(),
        });
    }
    out
}
