//! The operation as the planner sees it: fields and fragments whose condition
//! variables may include them, and federation selections (`@key`, `@requires`) in
//! the same shape.

use crate::operation::{ConditionValues, OpIr, OpSel, SelSetId};
use apollo_compiler::ast::{Argument, Type};
use apollo_compiler::{Name, Node, name};
use graphfleet_federation::meta::{FederationMeta, SelTree, SelTreeItem};

/// A field as the planner sees it (operation fields and `@key`/`@requires` fields alike).
#[derive(Debug, Clone)]
pub(super) struct SelectedField {
    pub(super) key: Name,
    pub(super) name: Name,
    pub(super) args: Vec<Node<Argument>>,
    pub(super) children: Vec<Selection>,
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
        }
    }
}

/// The selections of `set` that condition variables `values` may include.
pub(super) fn selections_from_operation(
    ir: &OpIr,
    set: SelSetId,
    values: Option<ConditionValues>,
) -> Vec<Selection> {
    ir.selset(set)
        .iter()
        .filter_map(|sel| match sel {
            OpSel::Field(fid) => {
                let f = ir.field(*fid);
                if f.conditions.excluded(ir, values) {
                    return None;
                }
                let mut children = f
                    .selection
                    .map(|s| selections_from_operation(ir, s, values))
                    .unwrap_or_default();
                if f.selection.is_some() && children.is_empty() {
                    // Everything below was excluded: subgraphs still need a selection.
                    children.push(Selection::Field(SelectedField::typename()));
                }
                Some(Selection::Field(SelectedField {
                    key: f.response_key.clone(),
                    name: f.name.clone(),
                    args: f.arguments.clone(),
                    children,
                }))
            }
            OpSel::Fragment {
                type_condition,
                conditions,
                selection,
            } => (!conditions.excluded(ir, values)).then(|| {
                Selection::Fragment(
                    type_condition.clone(),
                    selections_from_operation(ir, *selection, values),
                )
            }),
        })
        .collect()
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
