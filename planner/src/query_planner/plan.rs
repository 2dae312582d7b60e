//! The query plan, as executed and as printed.

use crate::keys::KeyTable;
use apollo_compiler::Name;
use graphfleet_federation::meta::{SelTree, SubgraphId};

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PathElem {
    Key(Name),
    /// Every element of a list.
    List,
    /// Only objects whose `__typename` is this type (a fetch planned under `... on T`).
    TypeCond(Name),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanNode {
    Sequence(Vec<PlanNode>),
    Parallel(Vec<PlanNode>),
    Fetch(usize),
    Flatten { path: Vec<PathElem>, fetch: usize },
}

/// How to build one representation: for objects whose `__typename` is in `matches`,
/// send `fields` (key ∪ requires), with `__typename` replaced by `send_typename`
/// when the target subgraph sees the type as an `@interfaceObject`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepSpec {
    pub type_condition: Name,
    pub matches: Vec<Name>,
    pub send_typename: Option<Name>,
    pub fields: SelTree,
}

#[derive(Debug, Clone)]
pub struct EntityFetch {
    /// Empty when [`EntityFetch::parts`] is not: each part has its own.
    pub reps: Vec<RepSpec>,
    /// Contextual arguments (`@fromContext`) the subgraph operation takes as
    /// variables: their values differ per entity, so entities are sent in one request
    /// per distinct set of values.
    pub contexts: Vec<ContextVariable>,
    /// With contexts: the parts of the operation, to ask for several sets of values
    /// in one request (an aliased `_entities` field per set).
    pub batch: Option<ContextBatch>,
    /// Entity fetches of one subgraph sent as one request: part `i` is the aliased
    /// field `_<i>: _entities(representations: $representations_<i>)` with its own
    /// selection, representations and merge paths (so a field one part asks for never
    /// nulls or fails another part's objects). Empty: one `_entities` field.
    pub parts: Vec<EntityPart>,
}

/// One `_entities` field of a batched request (see [`EntityFetch::parts`]).
#[derive(Debug, Clone)]
pub struct EntityPart {
    pub merge_paths: Vec<Vec<PathElem>>,
    pub reps: Vec<RepSpec>,
}

/// Most sets of context values asked for in one request; more take more requests.
pub const CONTEXT_BATCH: usize = 32;

/// The response key of the `i`th `_entities` field of a request asking for several:
/// set `i` of a batched context request, or part `i` of [`EntityFetch::parts`].
pub fn context_alias(i: usize) -> Name {
    Name::new(&format!("_{i}")).expect("an underscore and digits make a name")
}

/// An entity operation taken apart, for [`EntityFetch::contexts`]: the executor writes
/// `<kind>(<one $representations and context variables per set><client_defs>)
/// { _<i>: _entities(representations: $representations_<i>) <selection> ... }`, the
/// context variables renamed per set.
#[derive(Debug, Clone)]
pub struct ContextBatch {
    pub kind: &'static str,
    /// The client variables' definitions, each after `, `.
    pub client_defs: String,
    /// The selection on the entities (using `$__contextArgument_<n>`).
    pub selection: String,
}

/// A variable of an `_entities` operation holding a contextual argument's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextVariable {
    pub name: Name,
    /// Its type in the subgraph (`String!`).
    pub ty: String,
    /// Where the value comes from, innermost ancestor first: the first whose object
    /// carries the context gives it; none gives null.
    pub sources: Vec<ContextSource>,
}

/// One ancestor of the fetch's entities that may carry a context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextSource {
    /// The ancestor is the object reached after this many elements of the fetch's
    /// merge path (0: the root).
    pub depth: usize,
    /// The `__typename`s of objects that carry the context there.
    pub matches: Vec<Name>,
    /// What to read from it: one field (per type condition, on object types).
    pub selection: SelTree,
}

#[derive(Debug, Clone)]
pub struct Fetch {
    pub subgraph: SubgraphId,
    pub subgraph_name: String,
    /// The GraphQL document sent to the subgraph.
    pub operation: String,
    /// Client variables forwarded to the subgraph.
    pub variables: Vec<Name>,
    /// Where the results merge (entity fetches); several when siblings were combined.
    pub merge_paths: Vec<Vec<PathElem>>,
    pub entity: Option<EntityFetch>,
    /// `(alias, key)`: fields the request aliases (sibling fragments selecting one
    /// response key with different types) are stored under `key` again.
    pub renames: Vec<(Name, Name)>,
    /// The fetches (indices in [`QueryPlan::fetches`]) whose results this one needs
    /// first: its representations' sources and `@requires` inputs. A query's fetch may
    /// start as soon as these are merged.
    pub depends_on: Vec<usize>,
    /// The payloads waiting for it (`@defer`; [`crate::operation::PRIMARY`]: the
    /// initial one): those whose fields it fetches, and those of every fetch that needs
    /// its results. A payload is sent once all its fetches are merged.
    pub payloads: crate::operation::DeferMask,
}

#[derive(Debug)]
pub struct QueryPlan {
    pub fetches: Vec<Fetch>,
    pub root: Option<PlanNode>,
    /// All response keys the plan's fetches can return (the store's key table).
    pub keys: KeyTable,
}

impl QueryPlan {
    /// A subscription's root fetch (the one sending `subscription { ... }` to the
    /// subgraph owning the root field): its results come as events, each completed by
    /// the other fetches. `None` for queries and mutations.
    pub fn subscription_fetch(&self) -> Option<usize> {
        self.fetches
            .iter()
            .position(|f| f.entity.is_none() && f.operation.starts_with("subscription"))
    }
}
