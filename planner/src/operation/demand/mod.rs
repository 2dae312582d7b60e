//! Demand control: the static cost estimate of an operation, after the published
//! rules of Apollo's demand control (the IBM GraphQL cost directive specification).
//!
//! - A mutation costs 10 to start with; queries 0.
//! - A field returning an object, interface or union costs 1, a scalar or enum 0;
//!   `@cost(weight:)` on the field, else on its type, replaces that.
//! - A list field multiplies its own cost plus its selection's by the list size: the
//!   largest slicing argument the request gives (`@listSize(slicingArguments:)`,
//!   literal or variable; schema defaults when it gives none), else `assumedSize`, else
//!   the configured default. `sizedFields` hand the size to the named child fields of
//!   a connection-like type. `requireOneSlicingArgument` (true unless set false)
//!   makes any other number of slicing arguments an error.
//! - Arguments the request gives add their cost once (outside the list multiplier): a
//!   leaf value its definition's `@cost` (else its type's), an input object 1 (or its
//!   `@cost`) plus its fields', a list the sum of its items; null costs nothing.
//! - Fragments add their selection's cost (summed, as Apollo does, not the maximum over
//!   type conditions); `@skip`/`@include` leave out what they exclude.
//! - A field with `@requires` adds the cost of the required fields once (the largest
//!   over the subgraphs that require something), as Apollo does.
//!
//! The walk is compiled once per cached operation: everything that does not depend on
//! the request folds into constants, so an operation without variable-dependent parts
//! costs one read per request, and the rest is evaluated without allocating.

mod compile;
mod eval;
mod nodes;
mod values;

use compile::Compiler;
use eval::Eval;
use nodes::{Cond, CostNode};
pub use nodes::{CostError, CostPlan};

use apollo_compiler::ast::OperationType;
use apollo_compiler::response::JsonMap;
use graphfleet_federation::Supergraph;

use super::ir::{ConditionValues, OpIr};

/// What a mutation costs before its fields.
const MUTATION_BASE_COST: f64 = 10.0;

/// The `extensions.code` of an estimate over the limit (Apollo's).
pub const TOO_EXPENSIVE: &str = "COST_ESTIMATED_TOO_EXPENSIVE";
/// The `extensions.code` of a request breaking a `@listSize` rule (Apollo's).
pub const INVALID_LIST_SIZE: &str = "COST_QUERY_PARSE_FAILURE";

impl CostPlan {
    /// Compile `ir`'s estimate against `supergraph` with `list_size` items assumed for
    /// lists without `@listSize`.
    pub fn compile(supergraph: &Supergraph, ir: &OpIr, list_size: u64) -> Self {
        let mut c = Compiler {
            sg: supergraph,
            ir,
            list_size: list_size as f64,
            plan: CostPlan {
                nodes: Vec::new(),
                kids: Vec::new(),
                args: Vec::new(),
                root: 0,
            },
        };
        let base = if ir.kind() == OperationType::Mutation {
            MUTATION_BASE_COST
        } else {
            0.0
        };
        let root_ty = supergraph.meta.type_id(ir.root_type());
        let (constant, children) = c.selset(ir.root(), root_ty, None);
        let root = c.push_group(Cond::default(), base + constant, children);
        c.plan.root = root;
        c.plan
    }

    /// The estimate when it does not depend on the request.
    pub fn fixed(&self) -> Option<f64> {
        match self.nodes[self.root as usize] {
            CostNode::Const(v) => Some(v),
            _ => None,
        }
    }

    /// The estimate for one request: its coerced `variables` and the values of the
    /// operation's condition variables.
    pub fn estimate(
        &self,
        supergraph: &Supergraph,
        variables: &JsonMap,
        values: ConditionValues,
    ) -> Result<f64, CostError> {
        let eval = Eval {
            plan: self,
            sg: supergraph,
            variables,
            values,
        };
        eval.node(self.root)
    }
}
