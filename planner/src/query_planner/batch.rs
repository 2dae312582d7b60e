//! Entity fetches to one subgraph sent as one request. Each keeps its own selection,
//! representations and merge paths as an aliased `_entities` field (`_<i>`), so the
//! subgraph gets one request instead of several while a field one of them asks for can
//! never null or fail another's objects (as merging their selections could).

use super::groups::{GroupId, Planner};
use super::order::compute_levels;
use super::plan::{EntityFetch, EntityPart, Fetch, context_alias};
use super::print::client_variables;
use crate::keys::KeyTable;
use crate::operation::OpIr;
use std::fmt::Write as _;

impl Planner<'_> {
    /// Batches the entity fetches of one subgraph at one level of the plan when one
    /// waits for nothing the other does not (its ancestors, everything that must be
    /// merged before it may start, are a subset of the other's): the batch starts when
    /// the larger set is merged, which in a plan of equally quick subgraphs is when each
    /// would have started alone. `fetches` are the groups' fetches (same positions) and
    /// `selections` their printed selections; batched members are removed from both.
    pub(super) fn batch_entity_fetches(
        &mut self,
        fetches: &mut Vec<Fetch>,
        selections: &[String],
        ir: &OpIr,
        keys: &mut KeyTable,
    ) {
        let n = fetches.len();
        let batchable = |f: &Fetch| {
            f.renames.is_empty()
                && f.entity
                    .as_ref()
                    .is_some_and(|e| e.contexts.is_empty() && e.parts.is_empty())
        };
        // Most plans have no two batchable fetches to one subgraph: skip the level and
        // ancestor walks then (a cold plan pays for them).
        let mut subgraphs: Vec<_> = fetches
            .iter()
            .filter(|f| batchable(f))
            .map(|f| f.subgraph)
            .collect();
        subgraphs.sort_unstable();
        if !subgraphs.windows(2).any(|w| w[0] == w[1]) {
            return;
        }
        let all: Vec<GroupId> = self.groups.ids().collect();
        // Batching keeps every level: a member's dependents now wait for a fetch of the
        // member's level, and its dependencies are below that level.
        let level = compute_levels(&self.groups, &all);
        let mut alive = vec![true; n];
        let mut parts: Vec<Vec<usize>> = (0..n).map(|i| vec![i]).collect();
        for l in 0..=level.iter().copied().max().unwrap_or(0) {
            // Merges at lower levels changed what the fetches here wait for.
            let ancestors = self.ancestors();
            let mut candidates: Vec<usize> = (0..n)
                .filter(|&i| alive[i] && level[i] == l && batchable(&fetches[i]))
                .collect();
            // Leaders first: a subset is never larger than its superset (stable: ties
            // keep the plan's order).
            candidates.sort_by_key(|&i| std::cmp::Reverse(count(&ancestors[i])));
            for (at, &a) in candidates.iter().enumerate() {
                if !alive[a] {
                    continue;
                }
                for &b in &candidates[at + 1..] {
                    if !alive[b]
                        || fetches[b].subgraph != fetches[a].subgraph
                        || fetches[b].payloads != fetches[a].payloads
                        || !subset(&ancestors[b], &ancestors[a])
                    {
                        continue;
                    }
                    alive[b] = false;
                    let moved = std::mem::take(&mut parts[b]);
                    parts[a].extend(moved);
                    let (from, into) = (GroupId::from_index(b), GroupId::from_index(a));
                    let deps = std::mem::take(&mut self.groups[from].depends_on);
                    self.redirect(from, into, deps);
                }
            }
        }
        if alive.iter().all(|a| *a) {
            return;
        }
        let most = parts.iter().map(Vec::len).max().unwrap_or(0);
        for i in 0..most {
            keys.intern(&context_alias(i));
        }
        let batched: Vec<Option<Fetch>> = (0..n)
            .map(|a| {
                (alive[a] && parts[a].len() > 1).then(|| {
                    let members: Vec<(&Fetch, &str)> = parts[a]
                        .iter()
                        .map(|&i| (&fetches[i], selections[i].as_str()))
                        .collect();
                    batch_fetch(&members, ir)
                })
            })
            .collect();
        let old = std::mem::take(fetches);
        for ((fetch, batch), keep) in old.into_iter().zip(batched).zip(&alive) {
            if *keep {
                fetches.push(batch.unwrap_or(fetch));
            }
        }
        self.compact(&alive);
        // What each fetch waits for follows its group's (queries have no other order).
        for (fetch, group) in fetches.iter_mut().zip(self.groups.iter()) {
            fetch.depends_on = group.depends_on.iter().map(|g| g.index()).collect();
        }
    }

    /// For each group, whether each other group must be merged before it may start.
    fn ancestors(&self) -> Vec<Vec<bool>> {
        let n = self.groups.len();
        let mut out: Vec<Option<Vec<bool>>> = vec![None; n];
        // Dependencies may be created after their dependents: resolve depth-first with
        // an explicit stack (the DAG is acyclic: `check_acyclic`).
        for start in 0..n {
            let mut stack = vec![start];
            while let Some(&g) = stack.last() {
                if out[g].is_some() {
                    stack.pop();
                    continue;
                }
                let deps = &self.groups[GroupId::from_index(g)].depends_on;
                let pending: Vec<usize> = deps
                    .iter()
                    .map(|d| d.index())
                    .filter(|d| out[*d].is_none())
                    .collect();
                if !pending.is_empty() {
                    stack.extend(pending);
                    continue;
                }
                let mut set = vec![false; n];
                for d in deps {
                    set[d.index()] = true;
                    let of_d = out[d.index()]
                        .as_ref()
                        .expect("resolved before its dependents");
                    for (s, x) in set.iter_mut().zip(of_d) {
                        *s |= *x;
                    }
                }
                out[g] = Some(set);
                stack.pop();
            }
        }
        out.into_iter()
            .map(|s| s.expect("every group resolved"))
            .collect()
    }
}

fn count(set: &[bool]) -> usize {
    set.iter().filter(|x| **x).count()
}

fn subset(a: &[bool], b: &[bool]) -> bool {
    a.iter().zip(b).all(|(x, y)| !*x || *y)
}

/// One request for `members` (fetch, printed selection), the first leading: part `i`
/// is `_<i>: _entities(representations: $representations_<i>)` with its selection.
fn batch_fetch(members: &[(&Fetch, &str)], ir: &OpIr) -> Fetch {
    let (lead, _) = members[0];
    let mut defs = String::new();
    let mut fields = String::new();
    let mut used = Vec::new();
    let mut entity_parts = Vec::with_capacity(members.len());
    let mut merge_paths = Vec::new();
    for (i, (fetch, selection)) in members.iter().enumerate() {
        if i > 0 {
            defs.push_str(", ");
        }
        let _ = write!(defs, "$representations_{i}: [_Any!]!");
        let _ = write!(
            fields,
            " _{i}: _entities(representations: $representations_{i}) {selection}"
        );
        for v in &fetch.variables {
            if !used.contains(v) {
                used.push(v.clone());
            }
        }
        merge_paths.extend(fetch.merge_paths.iter().cloned());
        entity_parts.push(EntityPart {
            merge_paths: fetch.merge_paths.clone(),
            reps: fetch
                .entity
                .as_ref()
                .map(|e| e.reps.clone())
                .unwrap_or_default(),
        });
    }
    let (client_defs, variables) = client_variables(ir, &used);
    Fetch {
        subgraph: lead.subgraph,
        subgraph_name: lead.subgraph_name.clone(),
        operation: format!("query({defs}{client_defs}) {{{fields} }}"),
        variables,
        merge_paths,
        entity: Some(EntityFetch {
            reps: Vec::new(),
            contexts: Vec::new(),
            batch: None,
            parts: entity_parts,
        }),
        renames: Vec::new(),
        depends_on: Vec::new(),
        payloads: lead.payloads,
    }
}
