//! Turning the planned groups into the query plan: fetches, the response key table,
//! and the Sequence/Parallel/Flatten tree from the groups' dependency levels.

use super::groups::{GroupId, Planner, SubgraphSelection};
use super::order::compute_levels;
use super::plan::{Fetch, PlanNode, QueryPlan};
use crate::keys::KeyTable;
use crate::operation::OpIr;
use apollo_compiler::ast::OperationType;
use apollo_compiler::{Name, name};

impl<'a> Planner<'a> {
    /// The plan: siblings merged (queries), type conflicts aliased, the groups
    /// printed as fetches, entity fetches of one subgraph batched (queries), and the
    /// fetches ordered by their dependencies (mutations: root by root).
    pub(super) fn finish(mut self, ir: &OpIr) -> QueryPlan {
        if ir.kind() != OperationType::Mutation {
            self.merge_siblings();
        }
        let renames: Vec<Vec<(Name, Name)>> = self
            .groups
            .ids()
            .map(|g| self.alias_type_conflicts(g, ir))
            .collect();
        let mut keys = KeyTable::default();
        keys.intern(&name!("__typename"));
        keys.intern(&name!("_entities"));
        for group in self.groups.iter() {
            intern_keys(&group.selection, &mut keys);
        }
        if self.groups.iter().any(|g| !g.contexts.is_empty()) {
            for i in 0..super::plan::CONTEXT_BATCH {
                keys.intern(&super::plan::context_alias(i));
            }
        }
        // Operation keys too: introspection results are merged into the same store.
        for field in &ir.fields {
            keys.intern(&field.response_key);
        }
        let (mut fetches, selections): (Vec<Fetch>, Vec<String>) = self
            .groups
            .iter()
            .zip(renames)
            .map(|(group, renames)| {
                let mut depends_on: Vec<usize> =
                    group.depends_on.iter().map(|g| g.index()).collect();
                depends_on.sort_unstable();
                depends_on.dedup();
                let (fetch, selection) = self.fetch_of(group, ir);
                let fetch = Fetch {
                    renames,
                    depends_on,
                    ..fetch
                };
                (fetch, selection)
            })
            .unzip();
        self.payloads(&mut fetches);
        if ir.kind() != OperationType::Mutation {
            self.batch_entity_fetches(&mut fetches, &selections, ir, &mut keys);
        }
        // A group's fetch keeps its position in the plan's fetch list.
        let node_of = |g: GroupId| {
            if self.groups[g].is_entity {
                PlanNode::Flatten {
                    path: self.groups[g].merge_paths[0].clone(),
                    fetch: g.index(),
                }
            } else {
                PlanNode::Fetch(g.index())
            }
        };
        let levels = |members: &[GroupId]| -> PlanNode {
            let level = compute_levels(&self.groups, members);
            let max = members.iter().map(|g| level[g.index()]).max().unwrap_or(0);
            let steps: Vec<PlanNode> = (0..=max)
                .map(|l| {
                    let nodes: Vec<PlanNode> = members
                        .iter()
                        .filter(|g| level[g.index()] == l)
                        .map(|g| node_of(*g))
                        .collect();
                    single_or(nodes, PlanNode::Parallel)
                })
                .collect();
            single_or(steps, PlanNode::Sequence)
        };
        let all: Vec<GroupId> = self.groups.ids().collect();
        let root = if self.groups.is_empty() {
            None
        } else if ir.kind() == OperationType::Mutation {
            let root_of = |mut g: GroupId| {
                while let Some(p) = self.groups[g].parent {
                    g = p;
                }
                g
            };
            let roots: Vec<GroupId> = all
                .iter()
                .copied()
                .filter(|i| self.groups[*i].parent.is_none())
                .collect();
            let members: Vec<Vec<GroupId>> = roots
                .iter()
                .map(|r| all.iter().copied().filter(|i| root_of(*i) == *r).collect())
                .collect();
            // Mutation root fields run in order: every fetch of one waits for all fetches
            // of the one before, so the executor needs no other notion of sequence.
            for pair in members.windows(2) {
                for later in &pair[1] {
                    let deps = &mut fetches[later.index()].depends_on;
                    deps.extend(pair[0].iter().map(|g| g.index()));
                    deps.sort_unstable();
                    deps.dedup();
                }
            }
            let parts: Vec<PlanNode> = members.iter().map(|m| levels(m)).collect();
            Some(single_or(parts, PlanNode::Sequence))
        } else {
            Some(levels(&all))
        };
        QueryPlan {
            fetches,
            root,
            keys,
        }
    }
}

impl Planner<'_> {
    /// Each fetch's [`Fetch::payloads`]: what its own fields serve, and what every fetch
    /// depending on it waits for (dependencies are acyclic: this settles within as many
    /// rounds as the plan is deep). A fetch serving nothing counts for the initial one.
    fn payloads(&self, fetches: &mut [Fetch]) {
        for (fetch, group) in fetches.iter_mut().zip(self.groups.iter()) {
            fetch.payloads = match group.serves {
                0 => group.tag,
                serves => serves,
            };
        }
        loop {
            let mut changed = false;
            for i in 0..fetches.len() {
                let wanted = fetches[i].payloads;
                for d in fetches[i].depends_on.clone() {
                    if wanted & !fetches[d].payloads != 0 {
                        fetches[d].payloads |= wanted;
                        changed = true;
                    }
                }
            }
            if !changed {
                break;
            }
        }
    }
}

/// The one node of `nodes`, else `nodes` wrapped.
fn single_or(mut nodes: Vec<PlanNode>, wrap: fn(Vec<PlanNode>) -> PlanNode) -> PlanNode {
    if nodes.len() == 1 {
        nodes.pop().expect("one node")
    } else {
        wrap(nodes)
    }
}

/// Interns every response key of `items`.
fn intern_keys(items: &[SubgraphSelection], keys: &mut KeyTable) {
    for item in items {
        match item {
            SubgraphSelection::Field { key, sub, .. } => {
                keys.intern(key);
                if let Some(sub) = sub {
                    intern_keys(sub, keys);
                }
            }
            SubgraphSelection::Fragment { sub, .. } => intern_keys(sub, keys),
        }
    }
}
