//! Evaluating a compiled estimate for one request, without allocating.

use super::nodes::{CostError, CostNode, CostPlan, Size};
use super::values::{Input, json_number, score, slicing_size};
use std::ops::Range;

use apollo_compiler::response::JsonMap;
use graphfleet_federation::Supergraph;

use crate::operation::ir::ConditionValues;

pub(super) struct Eval<'a> {
    pub(super) plan: &'a CostPlan,
    pub(super) sg: &'a Supergraph,
    pub(super) variables: &'a JsonMap,
    pub(super) values: ConditionValues,
}

impl Eval<'_> {
    pub(super) fn node(&self, id: u32) -> Result<f64, CostError> {
        match &self.plan.nodes[id as usize] {
            CostNode::Const(v) => Ok(*v),
            CostNode::Group {
                cond,
                constant,
                children,
            } => {
                if !cond.holds(self.values) {
                    return Ok(0.0);
                }
                Ok(constant + self.children(children.clone())?)
            }
            CostNode::Field {
                cond,
                size,
                base,
                extra,
                args,
                children,
            } => {
                if !cond.holds(self.values) {
                    return Ok(0.0);
                }
                let n = match size {
                    Size::Fixed(n) => *n,
                    Size::Invalid(message) => return Err(CostError(message.clone())),
                    slicing => slicing_size(slicing, |v| {
                        self.variables.get(v.as_str()).and_then(json_number)
                    })?,
                };
                let per_item = base + self.children(children.clone())?;
                let args: f64 = self.plan.args[args.start as usize..args.end as usize]
                    .iter()
                    .map(|a| {
                        let value = Input::Ast(&a.value, Some(self.variables));
                        score(self.sg, &value, a.ty, a.weight)
                    })
                    .sum();
                Ok(n * per_item + extra + args)
            }
        }
    }

    fn children(&self, range: Range<u32>) -> Result<f64, CostError> {
        let mut sum = 0.0;
        for &kid in &self.plan.kids[range.start as usize..range.end as usize] {
            sum += self.node(kid)?;
        }
        Ok(sum)
    }
}
