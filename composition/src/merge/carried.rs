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
    /// Hints about `@cost`/`@listSize` applications merged from differing arguments,
    /// for the merger to report.
    pub(super) merge_hints: Vec<String>,
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
        let mut list: Vec<String> = out.into_iter().collect();
        for feature in [FedDirective::Cost, FedDirective::ListSize] {
            if let Some(hint) = merge_cost_spec(&mut list, subgraphs, parts, feature) {
                self.merge_hints.push(hint);
            }
        }
        for feature in [FedDirective::RequiresScopes, FedDirective::Policy] {
            if let Some(hint) = merge_auth_spec(&mut list, subgraphs, parts, feature) {
                self.merge_hints.push(hint);
            }
        }
        self.dedupe_non_repeatable(list)
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

/// `@cost` / `@listSize` applied to one element in several subgraphs merge as
/// @apollo/composition merges them: the largest weight; for list sizes the largest
/// `assumedSize`, the union of `slicingArguments` and `sizedFields` (in subgraph order)
/// and `requireOneSlicingArgument` only when every application requires it (then always
/// written out). When the applications differ, the merged one replaces the first in
/// `list` and the hint's message is returned; identical ones stay as written.
fn merge_cost_spec(
    list: &mut [String],
    subgraphs: &[Subgraph],
    parts: &[(usize, Vec<&Directive>)],
    feature: FedDirective,
) -> Option<String> {
    let applied: Vec<&Directive> = parts
        .iter()
        .flat_map(|(sg, dirs)| {
            let name = subgraphs[*sg].dir_name(feature);
            dirs.iter()
                .copied()
                .filter(move |d| d.name.as_str() == name)
        })
        .collect();
    let [first, ..] = applied.as_slice() else {
        return None;
    };
    // Identical applications stay as written (no default made explicit, no hint).
    if applied.iter().all(|d| d.arguments == first.arguments) {
        return None;
    }
    let merged = match feature {
        FedDirective::Cost => {
            let weight = applied.iter().filter_map(|d| int_arg(d, "weight")).max();
            format!("@{}(weight: {})", first.name, weight.unwrap_or(0))
        }
        _ => merged_list_size(&first.name, &applied),
    };
    let prefix = format!("@{}", first.name);
    let is_it = |s: &str| {
        s.strip_prefix(&prefix)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(['(', ' ']))
    };
    let hint = format!(
        "Directive @{} is applied in several subgraphs with different arguments; merged into {merged}",
        first.name
    );
    if let Some(slot) = list.iter_mut().find(|s| is_it(s)) {
        *slot = merged;
    }
    Some(hint)
}

fn merged_list_size(name: &str, applied: &[&Directive]) -> String {
    let assumed = applied
        .iter()
        .filter_map(|d| int_arg(d, "assumedSize"))
        .max();
    let strings = |arg: &str| -> Option<IndexSet<String>> {
        let mut out: Option<IndexSet<String>> = None;
        for d in applied {
            if let Some(Value::List(items)) = d.specified_argument_by_name(arg).map(|v| v.as_ref())
            {
                let set = out.get_or_insert_with(IndexSet::new);
                set.extend(items.iter().filter_map(|i| i.as_str().map(str::to_owned)));
            }
        }
        out
    };
    let require_one = applied.iter().all(|d| {
        d.specified_argument_by_name("requireOneSlicingArgument")
            .and_then(|v| v.to_bool())
            .unwrap_or(true)
    });
    let list_text = |set: IndexSet<String>| {
        let items: Vec<String> = set.iter().map(|s| format!("{s:?}")).collect();
        format!("[{}]", items.join(", "))
    };
    let mut args = Vec::new();
    if let Some(n) = assumed {
        args.push(format!("assumedSize: {n}"));
    }
    if let Some(set) = strings("slicingArguments") {
        args.push(format!("slicingArguments: {}", list_text(set)));
    }
    if let Some(set) = strings("sizedFields") {
        args.push(format!("sizedFields: {}", list_text(set)));
    }
    args.push(format!("requireOneSlicingArgument: {require_one}"));
    format!("@{name}({})", args.join(", "))
}

/// `@requiresScopes` / `@policy` applied to one element in several subgraphs with
/// different arguments merge as @apollo/composition merges them (DNF_CONJUNCTION): a
/// request must meet every subgraph's requirement, so the alternatives are combined
/// pairwise (unions), each sorted, those containing another dropped, and the list sorted.
/// Identical applications stay as written. The merged application replaces the first
/// one in `list`; the hint's message is returned.
fn merge_auth_spec(
    list: &mut [String],
    subgraphs: &[Subgraph],
    parts: &[(usize, Vec<&Directive>)],
    feature: FedDirective,
) -> Option<String> {
    let mut applied: Vec<&Directive> = Vec::new();
    for (sg, dirs) in parts {
        let name = subgraphs[*sg].dir_name(feature);
        for d in dirs.iter().copied().filter(|d| d.name.as_str() == name) {
            if !applied.iter().any(|a| a.arguments == d.arguments) {
                applied.push(d);
            }
        }
    }
    let [first, _, ..] = applied.as_slice() else {
        return None;
    };
    let arg = match feature {
        FedDirective::RequiresScopes => "scopes",
        _ => "policies",
    };
    let mut merged: Vec<Vec<String>> = vec![Vec::new()];
    for d in &applied {
        let alternatives = nested_strings(d, arg);
        let mut next = Vec::new();
        for have in &merged {
            for alt in &alternatives {
                let mut both: Vec<String> = have.iter().chain(alt).cloned().collect();
                both.sort();
                both.dedup();
                next.push(both);
            }
        }
        merged = next;
    }
    merged.sort();
    merged.dedup();
    let minimal: Vec<&Vec<String>> = merged
        .iter()
        .filter(|m| {
            !merged
                .iter()
                .any(|o| o != *m && o.iter().all(|x| m.contains(x)))
        })
        .collect();
    let text: Vec<String> = minimal
        .iter()
        .map(|alt| {
            let items: Vec<String> = alt.iter().map(|s| format!("{s:?}")).collect();
            format!("[{}]", items.join(", "))
        })
        .collect();
    let merged = format!("@{}({arg}: [{}])", first.name, text.join(", "));
    let prefix = format!("@{}", first.name);
    if let Some(slot) = list.iter_mut().find(|s| {
        s.strip_prefix(&prefix)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(['(', ' ']))
    }) {
        *slot = merged.clone();
    }
    Some(format!(
        "Directive @{} is applied in several subgraphs with different arguments; merged into {merged}",
        first.name
    ))
}

/// A `[[String!]!]!` argument's strings (a DNF of scopes or policies).
pub(crate) fn nested_strings(d: &Directive, arg: &str) -> Vec<Vec<String>> {
    let Some(Value::List(outer)) = d.specified_argument_by_name(arg).map(|v| v.as_ref()) else {
        return Vec::new();
    };
    outer
        .iter()
        .map(|inner| match inner.as_ref() {
            Value::List(items) => items
                .iter()
                .filter_map(|i| i.as_str().map(str::to_owned))
                .collect(),
            other => other.as_str().map(str::to_owned).into_iter().collect(),
        })
        .collect()
}

fn int_arg(d: &Directive, arg: &str) -> Option<i64> {
    match d.specified_argument_by_name(arg).map(|v| v.as_ref()) {
        Some(Value::Int(i)) => i.try_to_i32().ok().map(i64::from),
        _ => None,
    }
}
