//! The planner's state: fetch groups addressed by [`GroupId`], the index of entity
//! groups below each group, and snapshot/undo for trying one candidate subgraph after
//! another. Also how a group's subgraph selection is extended.

use super::plan::{ContextVariable, PathElem, RepSpec};
use super::selection::SelectedField;
use apollo_compiler::ast::Argument;
use apollo_compiler::{Name, Node};
use graphfleet_federation::meta::{FederationMeta, SelTree, SubgraphId};
use rustc_hash::FxHashMap;
use std::ops::{Index, IndexMut};

/// Nesting bound for key hops and wrapping, so cyclic key graphs end in an error.
pub(super) const MAX_HOPS: usize = 8;

/// A fetch group's position in [`Groups`]; its fetch keeps that position in the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) struct GroupId(u32);

impl GroupId {
    pub(super) fn index(self) -> usize {
        self.0 as usize
    }

    pub(super) fn from_index(index: usize) -> Self {
        GroupId(u32::try_from(index).expect("a plan has fewer than 2^32 fetch groups"))
    }
}

/// The fetch groups in creation order.
#[derive(Debug, Default)]
pub(super) struct Groups(Vec<Group>);

impl Groups {
    pub(super) fn push(&mut self, group: Group) -> GroupId {
        self.0.push(group);
        GroupId::from_index(self.0.len() - 1)
    }

    pub(super) fn len(&self) -> usize {
        self.0.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(super) fn ids(&self) -> impl Iterator<Item = GroupId> + use<> {
        (0..self.0.len()).map(GroupId::from_index)
    }

    pub(super) fn iter(&self) -> std::slice::Iter<'_, Group> {
        self.0.iter()
    }

    pub(super) fn iter_mut(&mut self) -> std::slice::IterMut<'_, Group> {
        self.0.iter_mut()
    }

    pub(super) fn into_vec(self) -> Vec<Group> {
        self.0
    }

    /// Forgets the groups created after the first `len`.
    fn truncate(&mut self, len: usize) {
        self.0.truncate(len);
    }
}

impl Index<GroupId> for Groups {
    type Output = Group;

    fn index(&self, id: GroupId) -> &Group {
        &self.0[id.index()]
    }
}

impl IndexMut<GroupId> for Groups {
    fn index_mut(&mut self, id: GroupId) -> &mut Group {
        &mut self.0[id.index()]
    }
}

/// One subgraph request being built: a root fetch or an `_entities` fetch.
#[derive(Debug, Clone)]
pub(super) struct Group {
    pub(super) subgraph: SubgraphId,
    /// Where results merge; several when sibling fetches were combined.
    pub(super) merge_paths: Vec<Vec<PathElem>>,
    pub(super) is_entity: bool,
    pub(super) selection: Vec<SubgraphSelection>,
    pub(super) representations: Vec<RepSpec>,
    pub(super) depends_on: Vec<GroupId>,
    /// The group whose results an entity group's representations come from.
    pub(super) parent: Option<GroupId>,
    /// Contextual arguments of its fields, passed as variables (entity groups).
    pub(super) contexts: Vec<ContextVariable>,
    /// The payloads whose fields it fetches (`@defer`; see [`super::plan::Fetch::payloads`]).
    pub(super) serves: crate::operation::DeferMask,
    /// The payload a root group was made for: fields only a deferred fragment selects
    /// get root fetches of their own, so the initial payload never waits for them.
    pub(super) tag: crate::operation::DeferMask,
}

/// A selection in a subgraph query being built.
#[derive(Debug, Clone)]
pub(super) enum SubgraphSelection {
    Field {
        key: Name,
        name: Name,
        args: Vec<Node<Argument>>,
        sub: Option<Vec<SubgraphSelection>>,
    },
    Fragment {
        type_condition: Name,
        sub: Vec<SubgraphSelection>,
    },
}

/// One step from a group's selection root down to a nested selection set: into the
/// field with this response key, or into the fragment on this type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum SelectionStep {
    Field(Name),
    Fragment(Name),
}

/// `steps` followed by `step`.
pub(super) fn step_into(steps: &[SelectionStep], step: SelectionStep) -> Vec<SelectionStep> {
    let mut v = steps.to_vec();
    v.push(step);
    v
}

/// The planning state of one operation.
pub(super) struct Planner<'a> {
    pub(super) meta: &'a FederationMeta,
    pub(super) budget: &'a super::PlanBudget,
    pub(super) groups: Groups,
    /// Entity groups in creation order, to learn which groups a `@requires` needed.
    pub(super) created_entity_groups: Vec<GroupId>,
    /// The entity group below a group for a subgraph at a merge path (the first one
    /// made; `entity_group` may add others there).
    pub(super) child_groups: FxHashMap<(GroupId, SubgraphId, Vec<PathElem>), GroupId>,
    /// Nesting of key hops, bounded so cyclic key graphs end in an error.
    pub(super) hop_depth: usize,
    /// Root fetches (queries: one per subgraph; mutations: in order).
    pub(super) root_groups: Vec<GroupId>,
    /// Composite fields being planned, innermost last: where a field that cannot be
    /// reached from a keyless type is re-planned wrapped in its parent field.
    pub(super) enclosing_fields: Vec<EnclosingField<'a>>,
    /// The subgraph the next `jump` must not pick: set right before a field is
    /// re-planned elsewhere (wrapped in its parent, or better fetched whole there).
    pub(super) next_jump_avoids: Option<SubgraphId>,
    pub(super) is_mutation: bool,
    /// `@requires` fields with arguments, fetched under an alias (the index) so they
    /// never merge with a client field of the same name and other arguments.
    pub(super) requires_aliases: Vec<(Name, Vec<Node<Argument>>)>,
    /// Contextual-argument variables named so far (each gets the next number).
    pub(super) context_variables: usize,
    /// While a [`Snapshot`] is held: per group existing then, its state before its
    /// first change since (`group_mut`).
    undo: Option<Vec<Option<Group>>>,
}

/// A composite field whose children are being planned in `group`.
#[derive(Debug, Clone)]
pub(super) struct EnclosingField<'a> {
    pub(super) group: GroupId,
    pub(super) steps: Vec<SelectionStep>,
    pub(super) ty: Name,
    /// The field without its children.
    pub(super) field: SelectedField,
    pub(super) response_path: Vec<PathElem>,
    pub(super) provided: Option<&'a SelTree>,
}

/// Planner state saved before trying one of several candidate subgraphs. Planning
/// only appends groups, created entity groups, root groups and `child_groups` entries
/// (always for new groups), so their lengths say what to forget; groups that existed
/// before are copied on their first change (`Planner::undo`).
pub(super) struct Snapshot {
    group_count: usize,
    created_entity_group_count: usize,
    hop_depth: usize,
    root_group_count: usize,
}

impl<'a> Planner<'a> {
    pub(super) fn new(meta: &'a FederationMeta, budget: &'a super::PlanBudget) -> Self {
        Planner {
            meta,
            budget,
            groups: Groups::default(),
            created_entity_groups: Vec::new(),
            child_groups: FxHashMap::default(),
            hop_depth: 0,
            root_groups: Vec::new(),
            enclosing_fields: Vec::new(),
            next_jump_avoids: None,
            is_mutation: false,
            requires_aliases: Vec::new(),
            context_variables: 0,
            undo: None,
        }
    }

    pub(super) fn snapshot(&mut self) -> Snapshot {
        self.undo = Some(vec![None; self.groups.len()]);
        Snapshot {
            group_count: self.groups.len(),
            created_entity_group_count: self.created_entity_groups.len(),
            hop_depth: self.hop_depth,
            root_group_count: self.root_groups.len(),
        }
    }

    pub(super) fn restore(&mut self, saved: Snapshot) {
        let undo = self.undo.take().unwrap_or_default();
        self.groups.truncate(saved.group_count);
        for (g, before) in undo.into_iter().enumerate() {
            if let Some(before) = before {
                self.groups[GroupId::from_index(g)] = before;
            }
        }
        self.created_entity_groups
            .truncate(saved.created_entity_group_count);
        self.child_groups
            .retain(|_, g| g.index() < saved.group_count);
        self.hop_depth = saved.hop_depth;
        self.root_groups.truncate(saved.root_group_count);
        self.enclosing_fields.clear();
        self.next_jump_avoids = None;
    }

    /// Planning is settled: no snapshot to restore any more.
    pub(super) fn commit(&mut self) {
        self.undo = None;
    }

    pub(super) fn new_group(
        &mut self,
        subgraph: SubgraphId,
        merge_path: Vec<PathElem>,
        is_entity: bool,
        parent: Option<GroupId>,
    ) -> GroupId {
        self.groups.push(Group {
            subgraph,
            merge_paths: vec![merge_path],
            is_entity,
            selection: Vec::new(),
            representations: Vec::new(),
            depends_on: parent.into_iter().collect(),
            parent,
            contexts: Vec::new(),
            serves: 0,
            tag: crate::operation::PRIMARY,
        })
    }

    /// Group `g`, to change: saved first when a snapshot is held (`undo`).
    pub(super) fn group_mut(&mut self, g: GroupId) -> &mut Group {
        if let Some(undo) = &mut self.undo
            && let Some(slot) = undo.get_mut(g.index())
            && slot.is_none()
        {
            *slot = Some(self.groups[g].clone());
        }
        &mut self.groups[g]
    }

    /// Makes `g` wait for `dep` too (never for itself).
    pub(super) fn add_dependency(&mut self, g: GroupId, dep: GroupId) {
        if dep != g && !self.groups[g].depends_on.contains(&dep) {
            self.group_mut(g).depends_on.push(dep);
        }
    }

    fn selection_at(&mut self, g: GroupId, steps: &[SelectionStep]) -> &mut Vec<SubgraphSelection> {
        let mut cur = &mut self.group_mut(g).selection;
        for step in steps {
            let pos = cur.iter().position(|item| match (item, step) {
                (SubgraphSelection::Field { key, .. }, SelectionStep::Field(k)) => key == k,
                (
                    SubgraphSelection::Fragment { type_condition, .. },
                    SelectionStep::Fragment(t),
                ) => type_condition == t,
                _ => false,
            });
            let pos = pos.expect("planner steps always point at existing selections");
            cur = match &mut cur[pos] {
                SubgraphSelection::Field { sub, .. } => sub.get_or_insert_with(Vec::new),
                SubgraphSelection::Fragment { sub, .. } => sub,
            };
        }
        cur
    }

    pub(super) fn add_field(
        &mut self,
        g: GroupId,
        steps: &[SelectionStep],
        f: &SelectedField,
        composite: bool,
    ) {
        if f.defer & !self.groups[g].serves != 0 {
            self.group_mut(g).serves |= f.defer;
        }
        let sel = self.selection_at(g, steps);
        let exists = sel
            .iter()
            .any(|item| matches!(item, SubgraphSelection::Field { key, .. } if *key == f.key));
        if !exists {
            sel.push(SubgraphSelection::Field {
                key: f.key.clone(),
                name: f.name.clone(),
                args: f.args.clone(),
                sub: composite.then(Vec::new),
            });
        }
    }

    pub(super) fn add_typename(&mut self, g: GroupId, steps: &[SelectionStep]) {
        self.add_field(g, steps, &SelectedField::typename(), false);
    }

    pub(super) fn add_fragment(&mut self, g: GroupId, steps: &[SelectionStep], ty: &Name) {
        let sel = self.selection_at(g, steps);
        let exists = sel.iter().any(
            |item| matches!(item, SubgraphSelection::Fragment { type_condition, .. } if type_condition == ty),
        );
        if !exists {
            sel.push(SubgraphSelection::Fragment {
                type_condition: ty.clone(),
                sub: Vec::new(),
            });
        }
    }
}
