//! Sibling merging: entity fetches to one subgraph at one level of the plan that ask
//! the same become one request.

use super::groups::{Group, GroupId, Planner, SubgraphSelection};
use super::order::compute_levels;
use super::print::print_sel;
use apollo_compiler::Name;

impl<'a> Planner<'a> {
    /// Entity fetches to one subgraph at one level of the DAG become one request:
    /// their representations are deduplicated together and sent once.
    pub(super) fn merge_siblings(&mut self) {
        let n = self.groups.len();
        let all: Vec<GroupId> = self.groups.ids().collect();
        let level = compute_levels(&self.groups, &all);
        let mut alive = vec![true; n];
        for &i in &all {
            if !alive[i.index()] || !self.groups[i].is_entity {
                continue;
            }
            for &j in &all[i.index() + 1..] {
                let (a, b) = (&self.groups[i], &self.groups[j]);
                // Context sources are depths into one merge path: never combined.
                if !alive[j.index()]
                    || !b.is_entity
                    || !a.contexts.is_empty()
                    || !b.contexts.is_empty()
                    || a.subgraph != b.subgraph
                    || level[i.index()] != level[j.index()]
                {
                    continue;
                }
                // One representation per type: same typename sent, and no field name
                // wanted with two arguments (aliased @requires fields).
                let same_typename = b.representations.iter().all(|rb| {
                    a.representations.iter().all(|ra| {
                        ra.type_condition != rb.type_condition
                            || (ra.send_typename == rb.send_typename
                                && !ra.fields.conflicts_with(&rb.fields))
                    })
                });
                // Only fetches asking the same: with different selections, a field one
                // path did not ask for could fail and null the other path's objects.
                let mut selection = a.selection.clone();
                if !same_typename
                    || !same_selection(&a.selection, &b.selection)
                    || !merge_items(&mut selection, &b.selection)
                {
                    continue;
                }
                let subgraph = b.subgraph;
                let b = std::mem::replace(
                    &mut self.groups[j],
                    Group {
                        subgraph,
                        merge_paths: Vec::new(),
                        is_entity: true,
                        selection: Vec::new(),
                        representations: Vec::new(),
                        depends_on: Vec::new(),
                        parent: None,
                        contexts: Vec::new(),
                        serves: 0,
                        tag: 0,
                    },
                );
                alive[j.index()] = false;
                self.groups[i].selection = selection;
                self.groups[i].serves |= b.serves;
                self.groups[i].merge_paths.extend(b.merge_paths);
                for rep in b.representations {
                    self.add_rep_matching(
                        i,
                        &rep.type_condition,
                        &rep.matches,
                        rep.send_typename,
                        rep.fields,
                    );
                }
                self.redirect(j, i, b.depends_on);
            }
        }
        self.compact(&alive);
    }

    /// Group `from` is now part of `into`: `into` also waits for `from_deps`, and what
    /// waited for or hung below `from` now does so for `into`.
    pub(super) fn redirect(&mut self, from: GroupId, into: GroupId, from_deps: Vec<GroupId>) {
        for d in from_deps {
            if d != into && !self.groups[into].depends_on.contains(&d) {
                self.groups[into].depends_on.push(d);
            }
        }
        for g in self.groups.iter_mut() {
            for d in &mut g.depends_on {
                if *d == from {
                    *d = into;
                }
            }
            if g.parent == Some(from) {
                g.parent = Some(into);
            }
        }
    }

    /// Drops the groups not `alive`, renumbering dependencies and parents.
    pub(super) fn compact(&mut self, alive: &[bool]) {
        let n = self.groups.len();
        // Compact, renumbering dependencies: each surviving group's new id.
        let mut new_id: Vec<Option<GroupId>> = vec![None; n];
        let mut next = 0;
        for (i, a) in alive.iter().enumerate() {
            if *a {
                new_id[i] = Some(GroupId::from_index(next));
                next += 1;
            }
        }
        let renumber =
            |g: GroupId| new_id[g.index()].expect("merged groups are no longer referenced");
        let groups = std::mem::take(&mut self.groups).into_vec();
        for (i, mut g) in groups.into_iter().enumerate() {
            if !alive[i] {
                continue;
            }
            let me = renumber(GroupId::from_index(i));
            let mut depends_on: Vec<GroupId> = g
                .depends_on
                .iter()
                .map(|d| renumber(*d))
                .filter(|d| *d != me)
                .collect();
            depends_on.sort_unstable();
            depends_on.dedup();
            g.depends_on = depends_on;
            g.parent = g.parent.map(renumber);
            self.groups.push(g);
        }
    }
}

/// Union of two subgraph selections; false when a response key would mean two fields.
fn merge_items(into: &mut Vec<SubgraphSelection>, from: &[SubgraphSelection]) -> bool {
    for item in from {
        match item {
            SubgraphSelection::Field {
                key,
                name,
                args,
                sub,
            } => {
                let existing = into.iter_mut().find_map(|i| match i {
                    SubgraphSelection::Field {
                        key: k,
                        name: n,
                        args: a,
                        sub: s,
                    } if k == key => Some((n, a, s)),
                    _ => None,
                });
                match existing {
                    None => into.push(item.clone()),
                    Some((n, a, s)) => {
                        if n != name || a != args {
                            return false;
                        }
                        match (s, sub) {
                            (Some(s), Some(sub)) => {
                                if !merge_items(s, sub) {
                                    return false;
                                }
                            }
                            (None, None) => {}
                            _ => return false,
                        }
                    }
                }
            }
            SubgraphSelection::Fragment {
                type_condition,
                sub,
            } => {
                let existing = into.iter_mut().find_map(|i| match i {
                    SubgraphSelection::Fragment {
                        type_condition: t,
                        sub: s,
                    } if t == type_condition => Some(s),
                    _ => None,
                });
                match existing {
                    None => into.push(item.clone()),
                    Some(s) => {
                        if !merge_items(s, sub) {
                            return false;
                        }
                    }
                }
            }
        }
    }
    true
}

/// Whether two entity fetches ask the same of every type both select: then merged,
/// each object still gets exactly its own path's selection (fragments on other types
/// apply only to their own representations).
fn same_selection(a: &[SubgraphSelection], b: &[SubgraphSelection]) -> bool {
    let printed = |items: &[SubgraphSelection]| {
        let mut out = String::new();
        print_sel(items, &mut out);
        out
    };
    let fragments = |items: &[SubgraphSelection]| -> Option<Vec<(Name, String)>> {
        items
            .iter()
            .map(|i| match i {
                SubgraphSelection::Fragment {
                    type_condition,
                    sub,
                } => Some((type_condition.clone(), printed(sub))),
                SubgraphSelection::Field { .. } => None,
            })
            .collect()
    };
    match (fragments(a), fragments(b)) {
        (Some(fa), Some(fb)) => fa
            .iter()
            .all(|(ta, sa)| fb.iter().all(|(tb, sb)| ta != tb || sa == sb)),
        _ => printed(a) == printed(b),
    }
}
