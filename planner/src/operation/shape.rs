//! Response shapes: the operation's fields collected (CollectFields) once per
//! concrete type at prepare time, so writing a response is a walk over plain `Vec`s.

use super::ir::{ConditionValues, Conditions, DeferId, OpIr, OpSel, SelSetId};
use apollo_compiler::collections::HashMap;
use apollo_compiler::schema::{ExtendedType, Implementers};
use apollo_compiler::{Name, Schema, ast};
use indexmap::IndexMap;
use rustc_hash::{FxHashMap, FxHashSet};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShapeSetId(pub u32);
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShapeObjectId(pub u32);

/// The collected fields for one concrete type, or for an abstract type whose concrete
/// type is not known (see [`ShapeSet::unresolved`]).
#[derive(Debug)]
pub struct ShapeObject {
    pub typename: Name,
    /// Whether `typename` is an object type, i.e. a valid `__typename` to write.
    pub concrete: bool,
    pub fields: Vec<ShapeField>,
    /// Fragments deferred in this request that apply to the object: each is written
    /// later, in its own payload, with its own shape.
    pub defers: Vec<(DeferId, ShapeObjectId)>,
}

#[derive(Debug)]
pub struct ShapeField {
    pub key: Name,
    pub name: Name,
    pub ty: ast::Type,
    /// Included when any conjunction holds; empty means always included.
    pub conditions: Vec<Conditions>,
    pub child: Option<ShapeSetId>,
    /// For an enum leaf: its values in the API schema (index into [`Shapes::enums`]), so a
    /// value hidden by `@inaccessible` or unknown to the schema is not passed on.
    pub enum_values: Option<EnumValuesId>,
    /// Denied by authorization in this request: answered with `null` and an error, its
    /// sub-selections are not fetched.
    pub unauthorized: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnumValuesId(pub u32);

impl ShapeField {
    pub fn included(&self, variables: &apollo_compiler::response::JsonMap) -> bool {
        self.conditions.is_empty() || self.conditions.iter().any(|c| c.evaluate(variables))
    }
}

/// The shapes a value of one field's (named) type may take.
#[derive(Debug)]
pub struct ShapeSet {
    /// One object shape per possible concrete type of the API schema.
    pub by_type: Vec<(Name, ShapeObjectId)>,
    /// For a value whose concrete type is not known: the only possible type's shape,
    /// else the abstract type's own (fields outside concrete type conditions).
    pub unresolved: ShapeObjectId,
    /// `__typename`s that name no concrete type yet fit the field: its type and the
    /// interfaces related to it, as sent by `@interfaceObject` subgraphs.
    pub abstract_names: Vec<Name>,
}

#[derive(Debug, Default)]
pub struct Shapes {
    pub sets: Vec<ShapeSet>,
    pub objects: Vec<ShapeObject>,
    pub root: Option<ShapeObjectId>,
    /// The values of each enum type the operation selects, from the API schema.
    pub enums: Vec<Vec<Name>>,
}

impl Shapes {
    pub fn object(&self, id: ShapeObjectId) -> &ShapeObject {
        &self.objects[id.0 as usize]
    }

    pub fn enum_values(&self, id: EnumValuesId) -> &[Name] {
        &self.enums[id.0 as usize]
    }

    /// The shape of a value in set `set` whose `__typename` is `typename` (`None`: not
    /// sent). `None` when the value is of a type that the field cannot have in the API
    /// schema (e.g. an `@inaccessible` one): it must not be written as another type.
    pub fn for_type(&self, set: ShapeSetId, typename: Option<&str>) -> Option<ShapeObjectId> {
        self.for_type_bytes(set, typename.map(str::as_bytes))
    }

    /// [`Self::for_type`] for a `__typename` as the subgraph's bytes (compared as they
    /// are: equal bytes to a type name are that name, no UTF-8 check needed).
    pub fn for_type_bytes(
        &self,
        set: ShapeSetId,
        typename: Option<&[u8]>,
    ) -> Option<ShapeObjectId> {
        let set = &self.sets[set.0 as usize];
        let Some(typename) = typename else {
            return Some(set.unresolved);
        };
        if let Some((_, id)) = set.by_type.iter().find(|(n, _)| n.as_bytes() == typename) {
            return Some(*id);
        }
        set.abstract_names
            .iter()
            .any(|n| n.as_bytes() == typename)
            .then_some(set.unresolved)
    }

    /// The shapes of `ir` for requests whose condition variables take `values` (`None`:
    /// any values; the writer checks each field's conditions either way). A field
    /// excluded there never contributes its sub-selection to a same-named one.
    pub fn build(schema: &Schema, ir: &OpIr, values: Option<ConditionValues>) -> Self {
        Self::build_authorized(schema, ir, values, &[])
    }

    /// [`Self::build`] for a request that may not read the fields marked in `denied`
    /// (by [`super::OpFieldId`]; shorter than the field list: the rest are allowed).
    pub fn build_authorized(
        schema: &Schema,
        ir: &OpIr,
        values: Option<ConditionValues>,
        denied: &[bool],
    ) -> Self {
        let mut builder = Builder {
            schema,
            ir,
            values,
            denied,
            implementers: schema.implementers_map(),
            shapes: Shapes::default(),
            memo: FxHashMap::default(),
            enum_ids: FxHashMap::default(),
        };
        let root = builder.object(&[ir.root()], ir.root_type());
        builder.shapes.root = Some(root);
        builder.shapes
    }
}

struct Builder<'a> {
    schema: &'a Schema,
    ir: &'a OpIr,
    values: Option<ConditionValues>,
    denied: &'a [bool],
    implementers: HashMap<Name, Implementers>,
    shapes: Shapes,
    memo: FxHashMap<(Vec<SelSetId>, Name), ShapeObjectId>,
    enum_ids: FxHashMap<Name, EnumValuesId>,
}

type Collected = IndexMap<Name, (Vec<super::OpFieldId>, Vec<Conditions>, bool)>;

/// The deferred fragments met while collecting, and their selection sets.
type Deferred = Vec<(DeferId, Vec<SelSetId>)>;

impl Builder<'_> {
    /// `cond` and `more`, as far as the request can still decide them: with the
    /// condition values known every condition left is true (the false ones excluded
    /// the selection), so none is kept and conditions never pile up along paths.
    fn live(&self, cond: &Conditions, more: &Conditions) -> Conditions {
        if self.values.is_some() {
            Conditions::default()
        } else {
            cond.and(more)
        }
    }

    fn applies(&self, condition: Option<&Name>, typename: &Name) -> bool {
        condition.is_none_or(|c| c == typename || self.schema.is_subtype(c, typename))
    }

    /// Collects the fields of `set` on `typename` into `out`. A selection set reached
    /// again under the same conditions adds nothing, so it is walked once (`seen`):
    /// fragments spreading one fragment many times cost once, not once per path.
    fn collect(
        &self,
        set: SelSetId,
        typename: &Name,
        cond: &Conditions,
        out: &mut (Collected, Deferred),
        seen: &mut FxHashSet<(SelSetId, Conditions)>,
    ) {
        if !seen.insert((set, cond.clone())) {
            return;
        }
        for sel in self.ir.selset(set) {
            match sel {
                OpSel::Field(fid) => {
                    let f = self.ir.field(*fid);
                    if f.conditions.excluded(self.ir, self.values) {
                        continue;
                    }
                    let c = self.live(cond, &f.conditions);
                    let entry = out
                        .0
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
                    defer,
                } => {
                    if !self.applies(type_condition.as_ref(), typename)
                        || conditions.excluded(self.ir, self.values)
                    {
                        continue;
                    }
                    match defer {
                        // Conditions are all decided when defers are honoured.
                        Some(d) if self.ir.defer_active(Some(*d), self.values) => {
                            match out.1.iter_mut().find(|(id, _)| id == d) {
                                Some((_, sets)) if !sets.contains(selection) => {
                                    sets.push(*selection)
                                }
                                Some(_) => {}
                                None => out.1.push((*d, vec![*selection])),
                            }
                        }
                        _ => {
                            let c = self.live(cond, conditions);
                            self.collect(*selection, typename, &c, out, seen);
                        }
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
        let mut out = (Collected::default(), Deferred::new());
        let mut seen = FxHashSet::default();
        for set in sets {
            self.collect(*set, typename, &Conditions::default(), &mut out, &mut seen);
        }
        let (collected, deferred) = out;
        let mut fields = Vec::with_capacity(collected.len());
        for (key, (fids, conditions, always)) in collected {
            let first = self.ir.field(fids[0]);
            let unauthorized = fids
                .iter()
                .any(|f| self.denied.get(f.0 as usize).copied().unwrap_or(false));
            let child_sets: Vec<SelSetId> = {
                let mut v: Vec<SelSetId> = Vec::new();
                for set in fids.iter().filter_map(|f| self.ir.field(*f).selection) {
                    if !v.contains(&set) {
                        v.push(set);
                    }
                }
                v
            };
            let child = (!child_sets.is_empty() && !unauthorized)
                .then(|| self.set(&child_sets, first.ty.inner_named_type()));
            let enum_values = self.enum_values(first.ty.inner_named_type());
            fields.push(ShapeField {
                key,
                name: first.name.clone(),
                ty: first.ty.clone(),
                conditions: if always { Vec::new() } else { conditions },
                child,
                enum_values,
                unauthorized,
            });
        }
        let defers = deferred
            .into_iter()
            .map(|(d, sets)| (d, self.object(&sets, typename)))
            .collect();
        let id = ShapeObjectId(self.shapes.objects.len() as u32);
        self.shapes.objects.push(ShapeObject {
            typename: typename.clone(),
            concrete: matches!(
                self.schema.types.get(typename),
                Some(ExtendedType::Object(_))
            ),
            fields,
            defers,
        });
        self.memo.insert(memo_key, id);
        id
    }

    /// The value list of enum `ty` (shared by every field of that type), `None` if not an enum.
    fn enum_values(&mut self, ty: &Name) -> Option<EnumValuesId> {
        let Some(ExtendedType::Enum(e)) = self.schema.types.get(ty) else {
            return None;
        };
        if let Some(id) = self.enum_ids.get(ty) {
            return Some(*id);
        }
        let id = EnumValuesId(self.shapes.enums.len() as u32);
        self.shapes.enums.push(e.values.keys().cloned().collect());
        self.enum_ids.insert(ty.clone(), id);
        Some(id)
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
        let by_type: Vec<(Name, ShapeObjectId)> = possible
            .iter()
            .map(|t| (t.clone(), self.object(sets, t)))
            .collect();
        let unresolved = match by_type.as_slice() {
            [(_, only)] => *only,
            _ => self.object(sets, ty),
        };
        let id = ShapeSetId(self.shapes.sets.len() as u32);
        self.shapes.sets.push(ShapeSet {
            by_type,
            unresolved,
            abstract_names: self.abstract_names(ty),
        });
        id
    }

    /// `ty` if abstract, the interfaces it implements and the interfaces implementing it.
    fn abstract_names(&self, ty: &Name) -> Vec<Name> {
        let mut names = Vec::new();
        match self.schema.types.get(ty) {
            Some(ExtendedType::Object(o)) => {
                names.extend(o.implements_interfaces.iter().map(|i| i.name.clone()));
            }
            Some(ExtendedType::Interface(i)) => {
                names.push(ty.clone());
                names.extend(i.implements_interfaces.iter().map(|i| i.name.clone()));
                if let Some(implementers) = self.implementers.get(ty) {
                    names.extend(implementers.interfaces.iter().cloned());
                }
            }
            Some(ExtendedType::Union(_)) => names.push(ty.clone()),
            _ => {}
        }
        names
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SDL: &str = r#"
        type Query { account: Account, admin: Admin, node: Node }
        interface Node { id: ID! }
        interface Account implements Node { id: ID! name: String }
        type Admin implements Account & Node { id: ID! name: String isMain: Boolean }
        type Regular implements Account & Node { id: ID! name: String }
    "#;

    fn shapes(query: &str) -> (Shapes, Vec<ShapeSetId>) {
        let schema = Schema::parse_and_validate(SDL, "schema.graphql").expect("valid schema");
        let op = crate::operation::prepare(&schema, query, None).expect("valid operation");
        let root = op.shapes.object(op.shapes.root.expect("root shape"));
        let sets = root
            .fields
            .iter()
            .map(|f| f.child.expect("object field"))
            .collect();
        (op.shapes, sets)
    }

    fn keys(shapes: &Shapes, id: Option<ShapeObjectId>) -> Vec<String> {
        let object = shapes.object(id.expect("a shape"));
        object.fields.iter().map(|f| f.key.to_string()).collect()
    }

    #[test]
    fn unknown_concrete_type_gets_the_abstract_shape() {
        let (shapes, sets) =
            shapes("{ account { name ... on Admin { isMain } __typename } node { id } }");
        let (account, node) = (sets[0], sets[1]);
        assert_eq!(
            keys(&shapes, shapes.for_type(account, Some("Admin"))),
            ["name", "isMain", "__typename"]
        );
        // No __typename, or the interface's own name (an @interfaceObject subgraph).
        for typename in [None, Some("Account")] {
            let id = shapes.for_type(account, typename);
            assert_eq!(keys(&shapes, id), ["name", "__typename"]);
            assert!(!shapes.object(id.expect("a shape")).concrete);
        }
        assert_eq!(keys(&shapes, shapes.for_type(node, None)), ["id"]);
        assert_eq!(
            keys(&shapes, shapes.for_type(node, Some("Account"))),
            ["id"]
        );
    }

    #[test]
    fn type_outside_the_api_schema_has_no_shape() {
        let (shapes, sets) = shapes("{ admin { id } account { id } }");
        let (admin, account) = (sets[0], sets[1]);
        assert!(shapes.for_type(admin, None).is_some());
        assert!(shapes.for_type(admin, Some("Admin")).is_some());
        // An interface of Admin (an @interfaceObject entity answer) says nothing new.
        assert!(shapes.for_type(admin, Some("Account")).is_some());
        assert!(shapes.for_type(admin, Some("Hidden")).is_none());
        assert!(shapes.for_type(admin, Some("Regular")).is_none());
        assert!(shapes.for_type(account, Some("Hidden")).is_none());
    }
}
