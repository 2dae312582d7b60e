//! The order of fetch groups: dependency checks, the cycle check, and each group's
//! level (how many dependencies must run before it).

use super::error::PlanError;
use super::groups::{GroupId, Groups, Planner};
use graphfleet_federation::meta::FederationMeta;

impl Planner<'_> {
    /// Whether group `from` is `to` or depends on it, directly or not.
    pub(super) fn waits_for(&self, from: GroupId, to: GroupId) -> bool {
        let mut seen = vec![false; self.groups.len()];
        let mut stack = vec![from];
        while let Some(g) = stack.pop() {
            if g == to {
                return true;
            }
            if std::mem::replace(&mut seen[g.index()], true) {
                continue;
            }
            stack.extend(self.groups[g].depends_on.iter().copied());
        }
        false
    }
}

/// A plan whose fetches depend on each other in a cycle cannot run: an error, never
/// a silently broken order.
pub(super) fn check_acyclic(meta: &FederationMeta, groups: &Groups) -> Result<(), PlanError> {
    let deps: Vec<&[GroupId]> = groups.iter().map(|g| g.depends_on.as_slice()).collect();
    match on_cycle(&deps) {
        None => Ok(()),
        Some(g) => Err(PlanError::Cycle {
            subgraph: meta.subgraph(groups[g].subgraph).name.clone(),
        }),
    }
}

/// A group that cannot be ordered after its dependencies (on or behind a cycle);
/// `deps[i]`: what group `i` depends on.
fn on_cycle(deps: &[&[GroupId]]) -> Option<GroupId> {
    // Kahn's algorithm: count unmet dependencies, release groups as they reach zero.
    let n = deps.len();
    let mut pending: Vec<usize> = deps
        .iter()
        .map(|d| d.iter().filter(|d| d.index() < n).count())
        .collect();
    let mut ready: Vec<usize> = (0..n).filter(|i| pending[*i] == 0).collect();
    while let Some(i) = ready.pop() {
        for (j, d) in deps.iter().enumerate() {
            for _ in d.iter().filter(|d| d.index() == i) {
                pending[j] -= 1;
                if pending[j] == 0 {
                    ready.push(j);
                }
            }
        }
    }
    (0..n).find(|i| pending[*i] > 0).map(GroupId::from_index)
}

/// Level of each member in the dependency DAG (0: no dependencies among `members`).
/// Indexed by [`GroupId::index`].
pub(super) fn compute_levels(groups: &Groups, members: &[GroupId]) -> Vec<usize> {
    let mut level = vec![0usize; groups.len()];
    // Dependencies may be created after their dependents, so relax until stable; a
    // dependency chain is at most `members.len()` long (cycles were rejected before:
    // `check_acyclic`).
    for _ in 0..members.len() {
        let mut changed = false;
        for &g in members {
            let l = groups[g]
                .depends_on
                .iter()
                .filter(|d| members.contains(d))
                .map(|d| level[d.index()] + 1)
                .max()
                .unwrap_or(0);
            if l != level[g.index()] {
                level[g.index()] = l;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    level
}

#[cfg(test)]
mod tests {
    use super::{GroupId, on_cycle};

    #[test]
    fn fetch_cycles_are_found() {
        let [g0, g1, g2] = [0, 1, 2].map(GroupId::from_index);
        // 0 <- 1 <- 2: a plan.
        assert_eq!(on_cycle(&[&[], &[g0], &[g1]]), None);
        // 1 and 2 wait for each other: no order runs them.
        assert_eq!(on_cycle(&[&[], &[g0, g2], &[g1]]), Some(g1));
        // Duplicated dependencies are not a cycle.
        assert_eq!(on_cycle(&[&[], &[g0, g0]]), None);
    }
}
