//! Contextual arguments (`@fromContext`): a field taking one is fetched through
//! `_entities` with the argument as a variable, whose value the executor reads per
//! entity from the nearest ancestor object carrying the context. Planning one fetches
//! the context's selection on every ancestor that may carry it.

use super::error::PlanError;
use super::groups::Planner;
use super::plan::{ContextSource, ContextVariable};
use super::requires::concrete_fragments;
use super::selection::{SelectedField, selections_from_tree};
use apollo_compiler::ast::{Argument, Value};
use apollo_compiler::{Name, Node};
use graphfleet_federation::meta::ContextArgument;

impl<'a> Planner<'a> {
    /// `f` with its contextual arguments `args` passed as new variables, and those
    /// variables; each context's selection is planned on the ancestors that may carry it.
    pub(super) fn plan_contexts(
        &mut self,
        f: &SelectedField,
        args: &'a [ContextArgument],
    ) -> Result<(SelectedField, Vec<ContextVariable>), PlanError> {
        let mut sent = f.clone();
        let mut variables = Vec::with_capacity(args.len());
        for arg in args {
            let variable = self.plan_context(arg)?;
            sent.args.push(Node::new(Argument {
                name: arg.name.clone(),
                value: Node::new(Value::Variable(variable.name.clone())),
            }));
            variables.push(variable);
        }
        Ok((sent, variables))
    }

    /// The variable of one contextual argument. Its sources are the enclosing objects,
    /// innermost first, down to the first that always carries the context (an ancestor
    /// of an abstract type may carry it only for some of its types).
    fn plan_context(&mut self, arg: &'a ContextArgument) -> Result<ContextVariable, PlanError> {
        let meta = self.meta;
        let setters = meta.context_setters(&arg.context);
        let name = Name::new(&format!("__contextArgument_{}", self.context_variables))
            .expect("a name with a number is a name");
        self.context_variables += 1;
        let selection = concrete_fragments(meta, arg.selection.clone());
        let ancestors: Vec<_> = self.enclosing_fields.iter().rev().cloned().collect();
        let mut sources = Vec::new();
        for ancestor in ancestors {
            let possible = meta.possible_types_ref(&ancestor.ty);
            let matches: Vec<Name> = possible
                .iter()
                .filter(|o| setters.contains(o))
                .cloned()
                .collect();
            if matches.is_empty() {
                continue;
            }
            // The executor tells by `__typename` whether the object carries the context.
            self.add_typename(ancestor.group, &ancestor.steps);
            self.plan_selections(
                ancestor.group,
                &ancestor.steps,
                &ancestor.ty,
                &selections_from_tree(&arg.selection),
                &ancestor.response_path,
                ancestor.provided,
            )?;
            let always = matches.len() == possible.len();
            sources.push(ContextSource {
                depth: ancestor.response_path.len(),
                matches,
                selection: selection.clone(),
            });
            if always {
                break;
            }
        }
        Ok(ContextVariable {
            name,
            ty: arg.ty.clone(),
            sources,
        })
    }
}
