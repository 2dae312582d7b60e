//! Response shapes: the operation's fields collected (CollectFields) once per
//! concrete type at prepare time, so writing a response is a walk over plain `Vec`s.

use super::ir::{Conditions, OpIr, OpSel, SelSetId};
use apollo_compiler::collections::HashMap;
use apollo_compiler::schema::{ExtendedType, Implementers};
use apollo_compiler::{Name, Schema, ast};
use indexmap::IndexMap;
use rustc_hash::FxHashMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShapeSetId(pub u32);
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShapeObjectId(pub u32);

/// The collected fields for one concrete type.
#[derive(Debug)]
pub struct ShapeObject {
    pub typename: Name,
    pub fields: Vec<ShapeField>,
}

#[derive(Debug)]
pub struct ShapeField {
    pub key: Name,
    pub name: Name,
    pub ty: ast::Type,
    /// Included when any conjunction holds; empty means always included.
    pub conditions: Vec<Conditions>,
    pub child: Option<ShapeSetId>,
}

impl ShapeField {
    pub fn included(&self, variables: &apollo_compiler::response::JsonMap) -> bool {
        self.conditions.is_empty() || self.conditions.iter().any(|c| c.evaluate(variables))
    }
}

#[derive(Debug, Default)]
pub struct Shapes {
    /// For each set: one object shape per possible concrete type.
    pub sets: Vec<Vec<(Name, ShapeObjectId)>>,
    pub objects: Vec<ShapeObject>,
    pub root: Option<ShapeObjectId>,
}

impl Shapes {
    pub fn object(&self, id: ShapeObjectId) -> &ShapeObject {
        &self.objects[id.0 as usize]
    }

    /// The shape of a value of concrete type `typename` in set `set`.
    pub fn for_type(&self, set: ShapeSetId, typename: &str) -> Option<ShapeObjectId> {
        let set = &self.sets[set.0 as usize];
        if set.len() == 1 {
            return Some(set[0].1);
        }
        set.iter().find(|(n, _)| n == typename).map(|(_, id)| *id)
    }

    pub fn build(schema: &Schema, ir: &OpIr) -> Self {
        let mut builder = Builder {
            schema,
            ir,
            implementers: schema.implementers_map(),
            shapes: Shapes::default(),
            memo: FxHashMap::default(),
        };
        let root = builder.object(&[ir.root()], ir.root_type());
        builder.shapes.root = Some(root);
        builder.shapes
    }
}

struct Builder<'a> {
    schema: &'a Schema,
    ir: &'a OpIr,
    implementers: HashMap<Name, Implementers>,
    shapes: Shapes,
    memo: FxHashMap<(Vec<SelSetId>, Name), ShapeObjectId>,
}

type Collected = IndexMap<Name, (Vec<super::OpFieldId>, Vec<Conditions>, bool)>;

impl Builder<'_> {
    fn applies(&self, condition: Option<&Name>, typename: &Name) -> bool {
        condition.is_none_or(|c| c == typename || self.schema.is_subtype(c, typename))
    }

    fn collect(&self, set: SelSetId, typename: &Name, cond: &Conditions, out: &mut Collected) {
        for sel in self.ir.selset(set) {
            match sel {
                OpSel::Field(fid) => {
                    let f = self.ir.field(*fid);
                    let c = cond.and(&f.conditions);
                    let entry = out
                        .entry(f.response_key.clone())
                        .or_insert_with(|| (Vec::new(), Vec::new(), false));
                    entry.0.push(*fid);
                    if c.0.is_empty() {
                        entry.2 = true; // unconditionally included
                    } else {
                        entry.1.push(c);
                    }
                }
                OpSel::Fragment {
                    type_condition,
                    conditions,
                    selection,
                } => {
                    if self.applies(type_condition.as_ref(), typename) {
                        self.collect(*selection, typename, &cond.and(conditions), out);
                    }
                }
            }
        }
    }

    fn object(&mut self, sets: &[SelSetId], typename: &Name) -> ShapeObjectId {
        let memo_key = (sets.to_vec(), typename.clone());
        if let Some(id) = self.memo.get(&memo_key) {
            return *id;
        }
        let mut collected = Collected::default();
        for set in sets {
            self.collect(*set, typename, &Conditions::default(), &mut collected);
        }
        let mut fields = Vec::with_capacity(collected.len());
        for (key, (fids, conditions, always)) in collected {
            let first = self.ir.field(fids[0]);
            let child_sets: Vec<SelSetId> = {
                let mut v: Vec<SelSetId> = fids
                    .iter()
                    .filter_map(|f| self.ir.field(*f).selection)
                    .collect();
                v.dedup();
                v
            };
            let child = (!child_sets.is_empty())
                .then(|| self.set(&child_sets, first.ty.inner_named_type()));
            fields.push(ShapeField {
                key,
                name: first.name.clone(),
                ty: first.ty.clone(),
                conditions: if always { Vec::new() } else { conditions },
                child,
            });
        }
        let id = ShapeObjectId(self.shapes.objects.len() as u32);
        self.shapes.objects.push(ShapeObject {
            typename: typename.clone(),
            fields,
        });
        self.memo.insert(memo_key, id);
        id
    }

    fn set(&mut self, sets: &[SelSetId], ty: &Name) -> ShapeSetId {
        let possible: Vec<Name> = match self.schema.types.get(ty) {
            Some(ExtendedType::Object(_)) => vec![ty.clone()],
            Some(ExtendedType::Interface(_)) => self
                .implementers
                .get(ty)
                .map(|i| i.objects.iter().cloned().collect())
                .unwrap_or_default(),
            Some(ExtendedType::Union(u)) => u.members.iter().map(|m| m.name.clone()).collect(),
            _ => Vec::new(),
        };
        let entries = possible
            .iter()
            .map(|t| (t.clone(), self.object(sets, t)))
            .collect();
        let id = ShapeSetId(self.shapes.sets.len() as u32);
        self.shapes.sets.push(entries);
        id
    }
}
