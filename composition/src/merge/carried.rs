//! Directive applications the supergraph keeps from the subgraphs (@tag, @inaccessible,
//! auth, @context, cost, @composeDirective ones), and which names each feature is used
//! under (the supergraph's feature links import them under those names).

use std::collections::HashSet;

use apollo_compiler::Node;
use apollo_compiler::ast::{Directive, Value};
use indexmap::{IndexMap, IndexSet};

use crate::specs::FedDirective;
use crate::subgraph::Subgraph;

/// Federation directives whose applications the supergraph keeps.
const CARRIED_FEATURES: &[FedDirective] = &[
    FedDirective::Tag,
    FedDirective::Inaccessible,
    FedDirective::Authenticated,
    FedDirective::RequiresScopes,
    FedDirective::Policy,
    FedDirective::Context,
    FedDirective::Cost,
    FedDirective::ListSize,
];

#[derive(Default)]
pub(super) struct CarriedDirectives {
    /// Feature directives carried into the supergraph: local name → subgraphs using it.
    pub(super) used_features: IndexMap<FedDirective, IndexMap<String, Vec<String>>>,
}

impl CarriedDirectives {
    /// The carried directives of one subgraph's element, under their local names: the
    /// supergraph imports them under the name the subgraphs use.
    fn carry(&mut self, sg: &Subgraph, directives: &[&Directive]) -> Vec<String> {
        let mut out = Vec::new();
        for d in directives {
            let feature = CARRIED_FEATURES
                .iter()
                .copied()
                .find(|f| sg.dir_name(*f) == d.name.as_str());
            match feature {
                Some(f) => {
                    self.used_features
                        .entry(f)
                        .or_default()
                        .entry(d.name.to_string())
                        .or_default()
                        .push(sg.name.clone());
                }
                None if sg.composed_directives.iter().any(|c| c == d.name.as_str()) => {}
                None => continue,
            }
            let mut carried = (*d).clone();
            if feature == Some(FedDirective::Context) {
                // Context names are per subgraph in the supergraph.
                for arg in &mut carried.arguments {
                    if let (true, Value::String(n)) = (arg.name == "name", arg.value.as_ref()) {
                        let prefixed = format!("{}__{n}", sg.name);
                        arg.make_mut().value = Node::new(Value::String(prefixed));
                    }
                }
            }
            out.push(carried.to_string());
        }
        out
    }

    /// The carried directives of an element over its subgraph definitions
    /// (subgraph index, directives), each once.
    pub(super) fn union(
        &mut self,
        subgraphs: &[Subgraph],
        parts: &[(usize, Vec<&Directive>)],
    ) -> Vec<String> {
        let mut out: IndexSet<String> = IndexSet::new();
        for (sg, dirs) in parts {
            out.extend(self.carry(&subgraphs[*sg], dirs));
        }
        self.dedupe_non_repeatable(out.into_iter().collect())
    }

    /// Non-repeatable directives appear once: the first application wins.
    fn dedupe_non_repeatable(&self, list: Vec<String>) -> Vec<String> {
        const SINGLE: &[FedDirective] = &[
            FedDirective::Inaccessible,
            FedDirective::Authenticated,
            FedDirective::RequiresScopes,
            FedDirective::Policy,
            FedDirective::Cost,
            FedDirective::ListSize,
        ];
        let single: HashSet<&str> = SINGLE
            .iter()
            .filter_map(|f| self.used_features.get(f))
            .flat_map(|names| names.keys().map(String::as_str))
            .collect();
        let mut seen = HashSet::new();
        list.into_iter()
            .filter(|d| {
                let name: String = d
                    .trim_start_matches('@')
                    .chars()
                    .take_while(|c| *c != '(' && *c != ' ')
                    .collect();
                !single.contains(name.as_str()) || seen.insert(name)
            })
            .collect()
    }
}
