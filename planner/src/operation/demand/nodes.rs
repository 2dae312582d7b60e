//! The compiled estimate's parts: the plan (a flat arena of nodes), its nodes and the
//! error a request can meet, shared by the compiler and the evaluator.

use std::ops::Range;

use apollo_compiler::Name;
use apollo_compiler::Node;
use apollo_compiler::ast::Value;
use graphfleet_federation::meta::TypeId;

use crate::operation::ir::ConditionValues;

/// A request the estimate cannot score: `@listSize(requireOneSlicingArgument:)` broken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CostError(pub String);

/// `@skip`/`@include` on variables, as bits of [`ConditionValues`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Cond {
    pub(super) must_be_true: u64,
    pub(super) must_be_false: u64,
}

impl Cond {
    pub(super) fn is_empty(self) -> bool {
        self.must_be_true == 0 && self.must_be_false == 0
    }

    pub(super) fn holds(self, values: ConditionValues) -> bool {
        values.0 & self.must_be_true == self.must_be_true && values.0 & self.must_be_false == 0
    }
}

/// One slicing argument of a field in the operation.
#[derive(Debug, Clone)]
pub(super) enum Slice {
    /// A literal value (or null).
    Literal(Option<f64>),
    /// A variable, with the argument's schema default when the variable is null.
    Variable(Name),
}

/// How many items a list field is taken to return.
#[derive(Debug, Clone)]
pub(super) enum Size {
    Fixed(f64),
    /// Slicing arguments given through variables, decided per request.
    Slicing {
        field: String,
        given: Vec<Slice>,
        /// The largest schema default, used when the request gives none.
        default: Option<f64>,
        fallback: f64,
        require_one: bool,
        names: Vec<Name>,
    },
    /// Known at compile time to break `requireOneSlicingArgument`.
    Invalid(String),
}

#[derive(Debug, Clone)]
pub(super) enum CostNode {
    Const(f64),
    Field {
        cond: Cond,
        size: Size,
        /// The field's own cost plus its constant children, per item.
        base: f64,
        /// Arguments and requirements: added once.
        extra: f64,
        /// Arguments whose value reads variables.
        args: Range<u32>,
        children: Range<u32>,
    },
    Group {
        cond: Cond,
        constant: f64,
        children: Range<u32>,
    },
}

/// An argument scored per request (its value reads variables).
#[derive(Debug, Clone)]
pub(super) struct DynArg {
    pub(super) value: Node<Value>,
    pub(super) ty: Option<TypeId>,
    pub(super) weight: Option<f64>,
}

/// An operation's cost, compiled once (see the module docs).
#[derive(Debug, Clone)]
pub struct CostPlan {
    pub(super) nodes: Vec<CostNode>,
    pub(super) kids: Vec<u32>,
    pub(super) args: Vec<DynArg>,
    pub(super) root: u32,
}
