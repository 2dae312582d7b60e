//! The operation as the planner sees it: fields and fragments whose condition
//! variables may include them, and federation selections (`@key`, `@requires`) in
//! the same shape.

use super::PlanBudget;
use super::error::PlanError;
use crate::operation::{ConditionValues, DeferMask, OpFieldId, OpIr, OpSel, PRIMARY, SelSetId};
use apollo_compiler::ast::{Argument, Type};
use apollo_compiler::{Name, Node, name};
use graphfleet_federation::meta::{FederationMeta, SelTree, SelTreeItem};
use rustc_hash::{FxHashMap, FxHashSet};

/// A field as the planner sees it (operation fields and `@key`/`@requires` fields alike).
#[derive(Debug, Clone)]
pub(super) struct SelectedField {
    pub(super) key: Name,
    pub(super) name: Name,
    pub(super) args: Vec<Node<Argument>>,
    pub(super) children: Vec<Selection>,
    /// The payloads selecting it (`@defer`); 0 for fields the planner adds (keys,
    /// `@requires`), which serve whatever needs them.
    pub(super) defer: DeferMask,
}

/// A selection to plan: a field, or the selections under an optional type condition.
#[derive(Debug, Clone)]
pub(super) enum Selection {
    Field(SelectedField),
    Fragment(Option<Name>, Vec<Selection>),
}

impl SelectedField {
    pub(super) fn typename() -> Self {
        SelectedField {
            key: name!("__typename"),
            name: name!("__typename"),
            args: Vec::new(),
            children: Vec::new(),
            defer: 0,
        }
    }
}

/// The selections of the operation that condition variables `values` may include,
/// merged the way GraphQL's field collection merges them: in each selection set,
/// fields with one response key become one field (their sub-selections collected
/// together), fragments that apply to the whole set are inlined, fragments on one type
/// condition become one, and a selection set reached twice is collected once. So a
/// fragment spread many times is planned once, and the tree is as large as the merged
/// operation, never as its expansion (which doubles with each fragment spreading the
/// previous one twice).
pub(super) struct Normalizer<'a> {
    meta: &'a FederationMeta,
    ir: &'a OpIr,
    values: Option<ConditionValues>,
    budget: &'a PlanBudget,
    /// Fields made so far: the operation's height.
    fields: u32,
}

/// What is being collected for one merged selection set.
#[derive(Default)]
struct Collected {
    entries: Vec<Entry>,
    index: FxHashMap<EntryKey, usize>,
    seen: FxHashSet<(SelSetId, DeferMask)>,
}

#[derive(PartialEq, Eq, Hash)]
enum EntryKey {
    Field(Name),
    Fragment(Name),
}

/// A selection set reached under the payloads of a mask.
type Reached = (SelSetId, DeferMask);

enum Entry {
    /// The first field with this response key, the payloads selecting it, and every
    /// sub-selection set of it.
    Field(OpFieldId, DeferMask, Vec<Reached>),
    Fragment(Name, Vec<Reached>),
}

impl<'a> Normalizer<'a> {
    pub(super) fn new(
        meta: &'a FederationMeta,
        ir: &'a OpIr,
        values: Option<ConditionValues>,
        budget: &'a PlanBudget,
    ) -> Self {
        Self {
            meta,
            ir,
            values,
            budget,
            fields: 0,
        }
    }

    /// The merged selections of the operation's root selection set.
    pub(super) fn root_selections(
        &mut self,
        root: SelSetId,
        scope: &Name,
    ) -> Result<Vec<Selection>, PlanError> {
        self.selections(&[(root, PRIMARY)], scope)
    }

    /// The merged selections of `sets`, all selected on `scope`.
    fn selections(&mut self, sets: &[Reached], scope: &Name) -> Result<Vec<Selection>, PlanError> {
        let mut collected = Collected::default();
        for (set, mask) in sets {
            self.collect(*set, *mask, scope, &mut collected);
        }
        let mut out = Vec::with_capacity(collected.entries.len());
        for entry in collected.entries {
            out.push(match entry {
                Entry::Field(fid, mask, sets) => Selection::Field(self.field(fid, mask, &sets)?),
                Entry::Fragment(tc, sets) => {
                    let children = self.selections(&sets, &tc)?;
                    Selection::Fragment(Some(tc), children)
                }
            });
        }
        Ok(out)
    }

    fn field(
        &mut self,
        fid: OpFieldId,
        defer: DeferMask,
        sets: &[Reached],
    ) -> Result<SelectedField, PlanError> {
        self.fields += 1;
        self.budget.check(self.fields)?;
        let f = self.ir.field(fid);
        let mut children = if f.selection.is_some() {
            self.selections(sets, f.ty.inner_named_type())?
        } else {
            Vec::new()
        };
        if f.selection.is_some() && children.is_empty() {
            // Everything below was excluded: subgraphs still need a selection.
            children.push(Selection::Field(SelectedField::typename()));
        }
        Ok(SelectedField {
            key: f.response_key.clone(),
            name: f.name.clone(),
            args: f.arguments.clone(),
            children,
            defer,
        })
    }

    /// Collects `set`, selected by the payloads of `mask`, into `out`; the fields of a
    /// fragment deferred in this request are selected by its payload instead.
    fn collect(&self, set: SelSetId, mask: DeferMask, scope: &Name, out: &mut Collected) {
        if !out.seen.insert((set, mask)) {
            return; // merging a selection set twice adds nothing
        }
        for sel in self.ir.selset(set) {
            match sel {
                OpSel::Field(fid) => {
                    let f = self.ir.field(*fid);
                    if f.conditions.excluded(self.ir, self.values) {
                        continue;
                    }
                    let key = EntryKey::Field(f.response_key.clone());
                    let at = *out.index.entry(key).or_insert_with(|| {
                        out.entries.push(Entry::Field(*fid, 0, Vec::new()));
                        out.entries.len() - 1
                    });
                    if let Entry::Field(_, reached, sets) = &mut out.entries[at] {
                        *reached |= mask;
                        if let Some(sub) = f.selection
                            && !sets.contains(&(sub, mask))
                        {
                            sets.push((sub, mask));
                        }
                    }
                }
                OpSel::Fragment {
                    type_condition,
                    conditions,
                    selection,
                    defer,
                } => {
                    if conditions.excluded(self.ir, self.values) {
                        continue;
                    }
                    let mask = match defer {
                        Some(d) if self.ir.defer_active(Some(*d), self.values) => d.bit(),
                        _ => mask,
                    };
                    match type_condition {
                        Some(tc) if !self.meta.is_subtype_or_same(tc, scope) => {
                            let key = EntryKey::Fragment(tc.clone());
                            let at = *out.index.entry(key).or_insert_with(|| {
                                out.entries.push(Entry::Fragment(tc.clone(), Vec::new()));
                                out.entries.len() - 1
                            });
                            if let Entry::Fragment(_, sets) = &mut out.entries[at]
                                && !sets.contains(&(*selection, mask))
                            {
                                sets.push((*selection, mask));
                            }
                        }
                        // Applies to every value of `scope`: its selections are ours.
                        _ => self.collect(*selection, mask, scope, out),
                    }
                }
            }
        }
    }
}

/// A federation selection (`@key`, `@requires`) as selections to plan.
pub(super) fn selections_from_tree(tree: &SelTree) -> Vec<Selection> {
    tree.items
        .iter()
        .map(|item| match item {
            SelTreeItem::Field {
                name,
                alias,
                args,
                sub,
            } => Selection::Field(SelectedField {
                key: alias.clone().unwrap_or_else(|| name.clone()),
                name: name.clone(),
                args: args.clone(),
                children: selections_from_tree(sub),
                defer: 0,
            }),
            SelTreeItem::Fragment {
                type_condition,
                sub,
            } => Selection::Fragment(Some(type_condition.clone()), selections_from_tree(sub)),
        })
        .collect()
}

/// How many lists `ty` nests.
pub(super) fn list_depth(ty: &Type) -> usize {
    match ty {
        Type::Named(_) | Type::NonNullNamed(_) => 0,
        Type::List(inner) | Type::NonNullList(inner) => 1 + list_depth(inner),
    }
}

/// The fields of `sels` for an object of type `ty`: the fragments that apply to it inlined.
pub(super) fn fields_applying_to<'s>(
    meta: &FederationMeta,
    sels: &'s [Selection],
    ty: &Name,
    out: &mut Vec<&'s SelectedField>,
) {
    for sel in sels {
        match sel {
            Selection::Field(f) => out.push(f),
            Selection::Fragment(tc, children) => {
                let applies = tc.as_ref().is_none_or(|tc| {
                    tc == ty || meta.possible_types_ref(tc).iter().any(|p| p == ty)
                });
                if applies {
                    fields_applying_to(meta, children, ty, out);
                }
            }
        }
    }
}

/// The part of a `@provides` selection that applies under type condition `tc`: the
/// fragment on `tc` when the selection is made of type conditions only.
pub(super) fn narrow_provided<'t>(provided: Option<&'t SelTree>, tc: &str) -> Option<&'t SelTree> {
    let p = provided?;
    let has_fields = p
        .items
        .iter()
        .any(|i| matches!(i, SelTreeItem::Field { .. }));
    let on_tc = p.items.iter().find_map(|i| match i {
        SelTreeItem::Fragment {
            type_condition,
            sub,
        } if type_condition == tc => Some(sub),
        _ => None,
    });
    match on_tc {
        Some(sub) if !has_fields => Some(sub),
        _ => Some(p),
    }
}
