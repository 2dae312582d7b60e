//! How big an introspection answer can get, known before it runs. The introspection
//! schema is recursive (`fields { type { fields { type … } } }`), so a short operation
//! can ask for an answer exponential in its depth; this counts the values it would hold
//! (every object entry and list item) against the schema, stopping once past a limit.
//!
//! The count is an upper bound: `@skip`/`@include` are taken as included, deprecated
//! fields, enum values and arguments as asked for, and `__type(name: $var)` as the
//! largest type. Fields of one response key are merged as execution merges them, and a
//! named type's count is memoized per merged selection, so the work follows the
//! document and the schema, never the size of the answer.

use apollo_compiler::ast::{DirectiveDefinition, FieldDefinition, InputValueDefinition, Type};
use apollo_compiler::collections::HashMap;
use apollo_compiler::executable::{ExecutableDocument, Field, Operation, Selection, SelectionSet};
use apollo_compiler::schema::{ExtendedType, Implementers};
use apollo_compiler::{Name, Node, Schema};
use rustc_hash::{FxHashMap, FxHashSet};
use std::rc::Rc;

/// Values (object entries and list items) the introspection part of `operation` would
/// answer at most; counting stops soon after passing `max`, so a result over `max` says
/// only "too many".
pub fn introspection_values(
    schema: &Schema,
    document: &ExecutableDocument,
    operation: &Operation,
    max: u64,
) -> u64 {
    let mut counter = Counter {
        schema,
        document,
        max,
        implementers: None,
        merged: FxHashMap::default(),
        named: FxHashMap::default(),
    };
    let mut total = 0u64;
    for group in counter.merge(&[&operation.selection_set]).iter() {
        let value = match group.name.as_str() {
            "__schema" => counter.object(Obj::Schema, &group.sets),
            "__type" => counter.type_by_name(group.field, &group.sets),
            // Concrete root fields come from subgraphs, bounded by the response budget.
            _ => continue,
        };
        total = total.saturating_add(1).saturating_add(value);
        if total > max {
            break;
        }
    }
    total
}

/// What an introspection object stands for.
#[derive(Clone, Copy)]
enum Obj<'s> {
    Schema,
    Named(&'s ExtendedType),
    /// A list or non-null wrapper; `true` once the outer non-null is unwrapped.
    Wrapper(&'s Type, bool),
    Field(&'s FieldDefinition),
    InputValue(&'s InputValueDefinition),
    EnumValue,
    Directive(&'s DirectiveDefinition),
}

/// The fields of one response key, merged: their selection sets together.
struct Group<'d> {
    name: &'d Name,
    field: &'d Field,
    sets: Vec<&'d SelectionSet>,
}

/// A merged selection's identity: its selection sets' addresses, sorted.
type SetsKey = Vec<usize>;

struct Counter<'s, 'd> {
    schema: &'s Schema,
    document: &'d ExecutableDocument,
    max: u64,
    implementers: Option<HashMap<Name, Implementers>>,
    merged: FxHashMap<SetsKey, Rc<[Group<'d>]>>,
    named: FxHashMap<(usize, SetsKey), u64>,
}

fn key(sets: &[&SelectionSet]) -> SetsKey {
    let mut key: SetsKey = sets
        .iter()
        .map(|s| std::ptr::from_ref(*s) as usize)
        .collect();
    key.sort_unstable();
    key.dedup();
    key
}

impl<'s, 'd> Counter<'s, 'd> {
    /// The response keys of `sets` in order, fragments expanded once each.
    fn merge(&mut self, sets: &[&'d SelectionSet]) -> Rc<[Group<'d>]> {
        let key = key(sets);
        if let Some(groups) = self.merged.get(&key) {
            return Rc::clone(groups);
        }
        let mut groups: Vec<Group<'d>> = Vec::new();
        let mut index: FxHashMap<&'d str, usize> = FxHashMap::default();
        let mut seen_sets = FxHashSet::default();
        let mut stack: Vec<&'d SelectionSet> = sets.iter().rev().copied().collect();
        while let Some(set) = stack.pop() {
            // A fragment spread twice adds nothing the first spread did not.
            if !seen_sets.insert(std::ptr::from_ref(set) as usize) {
                continue;
            }
            for selection in set.selections.iter().rev() {
                match selection {
                    Selection::Field(field) => {
                        let at = *index
                            .entry(field.response_key().as_str())
                            .or_insert_with(|| {
                                groups.push(Group {
                                    name: &field.name,
                                    field,
                                    sets: Vec::new(),
                                });
                                groups.len() - 1
                            });
                        groups[at].sets.push(&field.selection_set);
                    }
                    Selection::InlineFragment(inline) => stack.push(&inline.selection_set),
                    Selection::FragmentSpread(spread) => {
                        if let Some(fragment) = self.document.fragments.get(&spread.fragment_name) {
                            stack.push(&fragment.selection_set);
                        }
                    }
                }
            }
        }
        // Fields were pushed last first within each set; restore document order.
        groups.reverse();
        let groups: Rc<[Group<'d>]> = groups.into();
        self.merged.insert(key, Rc::clone(&groups));
        groups
    }

    /// Values of one object answering `sets`: one per response key plus what they hold.
    fn object(&mut self, obj: Obj<'s>, sets: &[&'d SelectionSet]) -> u64 {
        if let Obj::Named(def) = obj {
            let memo = (std::ptr::from_ref(def) as usize, key(sets));
            if let Some(count) = self.named.get(&memo) {
                return *count;
            }
            let count = self.fields(obj, sets);
            self.named.insert(memo, count);
            return count;
        }
        self.fields(obj, sets)
    }

    fn fields(&mut self, obj: Obj<'s>, sets: &[&'d SelectionSet]) -> u64 {
        let mut total = 0u64;
        for group in self.merge(sets).iter() {
            let value = self.field(obj, group.name.as_str(), &group.sets);
            total = total.saturating_add(1).saturating_add(value);
            if total > self.max {
                break;
            }
        }
        total
    }

    /// A list of objects: one value per item plus each item's own.
    fn list<I>(&mut self, items: I, sets: &[&'d SelectionSet]) -> u64
    where
        I: IntoIterator<Item = Obj<'s>>,
    {
        let mut total = 0u64;
        for item in items {
            total = total
                .saturating_add(1)
                .saturating_add(self.object(item, sets));
            if total > self.max {
                break;
            }
        }
        total
    }

    fn named(&self, name: &str) -> Option<Obj<'s>> {
        self.schema.types.get(name).map(Obj::Named)
    }

    /// Values below field `name` of `obj` (0 for leaves and nulls).
    fn field(&mut self, obj: Obj<'s>, name: &str, sets: &[&'d SelectionSet]) -> u64 {
        let schema = self.schema;
        match (obj, name) {
            (Obj::Schema, "types") => self.list(schema.types.values().map(Obj::Named), sets),
            (Obj::Schema, "directives") => self.list(
                schema
                    .directive_definitions
                    .values()
                    .map(|d| Obj::Directive(d)),
                sets,
            ),
            (Obj::Schema, "queryType" | "mutationType" | "subscriptionType") => {
                let root = match name {
                    "queryType" => &schema.schema_definition.query,
                    "mutationType" => &schema.schema_definition.mutation,
                    _ => &schema.schema_definition.subscription,
                };
                match root.as_ref().and_then(|n| self.named(n.name.as_str())) {
                    Some(t) => self.object(t, sets),
                    None => 0,
                }
            }
            (Obj::Named(def), _) => self.named_type_field(def, name, sets),
            (Obj::Wrapper(ty, unwrapped), "ofType") => {
                let inner = match ty {
                    Type::NonNullNamed(_) | Type::NonNullList(_) if !unwrapped => {
                        return self.type_ref(ty, true, sets);
                    }
                    Type::List(inner) | Type::NonNullList(inner) => inner,
                    Type::Named(_) | Type::NonNullNamed(_) => return self.type_ref(ty, true, sets),
                };
                self.type_ref(inner, false, sets)
            }
            (Obj::Field(def), "args") => self.input_values(&def.arguments, sets),
            (Obj::Directive(def), "args") => self.input_values(&def.arguments, sets),
            (Obj::Directive(def), "locations") => def.locations.len() as u64,
            (Obj::Field(def), "type") => self.type_ref(&def.ty, false, sets),
            (Obj::InputValue(def), "type") => self.type_ref(&def.ty, false, sets),
            _ => 0,
        }
    }

    fn named_type_field(
        &mut self,
        def: &'s ExtendedType,
        name: &str,
        sets: &[&'d SelectionSet],
    ) -> u64 {
        let schema = self.schema;
        match (def, name) {
            (ExtendedType::Object(o), "fields") => {
                self.list(o.fields.values().map(|f| Obj::Field(f)), sets)
            }
            (ExtendedType::Interface(i), "fields") => {
                self.list(i.fields.values().map(|f| Obj::Field(f)), sets)
            }
            (ExtendedType::Object(o), "interfaces") => self.list(
                o.implements_interfaces
                    .iter()
                    .filter_map(|n| schema.types.get(n.name.as_str()).map(Obj::Named)),
                sets,
            ),
            (ExtendedType::Interface(i), "interfaces") => self.list(
                i.implements_interfaces
                    .iter()
                    .filter_map(|n| schema.types.get(n.name.as_str()).map(Obj::Named)),
                sets,
            ),
            (ExtendedType::Interface(i), "possibleTypes") => {
                let implementers = self
                    .implementers
                    .get_or_insert_with(|| schema.implementers_map());
                let objects: Vec<Obj<'s>> = implementers
                    .get(&i.name)
                    .into_iter()
                    .flat_map(|imp| imp.objects.iter())
                    .filter_map(|n| schema.types.get(n.as_str()).map(Obj::Named))
                    .collect();
                self.list(objects, sets)
            }
            (ExtendedType::Union(u), "possibleTypes") => self.list(
                u.members
                    .iter()
                    .filter_map(|n| schema.types.get(n.name.as_str()).map(Obj::Named)),
                sets,
            ),
            (ExtendedType::Enum(e), "enumValues") => {
                self.list(e.values.values().map(|_| Obj::EnumValue), sets)
            }
            (ExtendedType::InputObject(i), "inputFields") => {
                self.list(i.fields.values().map(|f| Obj::InputValue(f)), sets)
            }
            _ => 0,
        }
    }

    fn input_values(
        &mut self,
        values: &'s [Node<InputValueDefinition>],
        sets: &[&'d SelectionSet],
    ) -> u64 {
        self.list(values.iter().map(|v| Obj::InputValue(v)), sets)
    }

    /// The `__Type` object of a type reference; `unwrapped` once its outer non-null is.
    fn type_ref(&mut self, ty: &'s Type, unwrapped: bool, sets: &[&'d SelectionSet]) -> u64 {
        match ty {
            Type::Named(n) => self.named_or_nothing(n.as_str(), sets),
            Type::NonNullNamed(n) if unwrapped => self.named_or_nothing(n.as_str(), sets),
            _ => self.object(Obj::Wrapper(ty, unwrapped), sets),
        }
    }

    fn named_or_nothing(&mut self, name: &str, sets: &[&'d SelectionSet]) -> u64 {
        match self.named(name) {
            Some(t) => self.object(t, sets),
            None => 0,
        }
    }

    /// `__type(name:)`: that type, or the largest one when the name is a variable.
    fn type_by_name(&mut self, field: &'d Field, sets: &[&'d SelectionSet]) -> u64 {
        let literal = field
            .arguments
            .iter()
            .find(|a| a.name == "name")
            .and_then(|a| a.value.as_str());
        if let Some(name) = literal {
            return self.named_or_nothing(name, sets);
        }
        let schema = self.schema;
        let mut largest = 0;
        for def in schema.types.values() {
            largest = largest.max(self.object(Obj::Named(def), sets));
            if largest > self.max {
                break;
            }
        }
        largest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SDL: &str = "type Query { me: User } \
        type User { name: String friend: User boss: User friends: [User!]! old: Int @deprecated } \
        enum Color { RED GREEN }";

    fn count(query: &str) -> u64 {
        let schema = Schema::parse_and_validate(SDL, "s.graphql").expect("valid schema");
        let doc = ExecutableDocument::parse_and_validate(&schema, query, "q.graphql")
            .expect("valid query");
        let op = doc.operations.get(None).expect("one operation");
        introspection_values(&schema, &doc, op, u64::MAX)
    }

    #[test]
    fn counts_entries_and_items() {
        // __type + name + fields (5 items, each with its name).
        assert_eq!(
            count(r#"{ __type(name: "User") { name fields { name } } }"#),
            1 + 1 + 1 + 5 * 2
        );
        // Wrappers: friends is [User!]!: NON_NULL → LIST → NON_NULL → User.
        assert_eq!(
            count(
                r#"{ __type(name: "User") { fields { type { kind ofType { kind ofType { kind ofType { name } } } } } } }"#
            ),
            // __type, fields: per field 1 item + type (1) + the type's entries.
            1 + 1
                + 3 * (1 + 1 + 2) // name, friend, boss: {kind, ofType: null}
                + (1 + 1 + 2 + 2 + 2 + 1) // friends: [User!]!, three wrappers
                + (1 + 1 + 2) // old: Int
        );
    }

    #[test]
    fn merged_fields_and_repeated_fragments_count_once() {
        let plain = count(r#"{ __type(name: "User") { name } }"#);
        let spread = count(
            r#"{ __type(name: "User") { ...A ...A name ... on __Type { ...A } } }
               fragment A on __Type { name }"#,
        );
        assert_eq!(plain, spread);
    }

    #[test]
    fn nesting_multiplies() {
        let mut selection = "name".to_owned();
        for _ in 0..25 {
            selection = format!("fields {{ type {{ {selection} }} }}");
        }
        let query = format!(r#"{{ __type(name: "User") {{ {selection} }} }}"#);
        let schema = Schema::parse_and_validate(SDL, "s.graphql").expect("valid schema");
        let doc = ExecutableDocument::parse_and_validate(&schema, &query, "q.graphql")
            .expect("valid query");
        let op = doc.operations.get(None).expect("one operation");
        // friend and boss both recurse: 2^25 objects, found without building them.
        assert!(introspection_values(&schema, &doc, op, 1_000_000) > 1_000_000);
    }

    #[test]
    fn a_variable_name_counts_the_largest_type() {
        let by_var = count(r#"query($t: String!) { __type(name: $t) { fields { name } } }"#);
        // The introspection types are types too: __Type has the most fields here.
        let largest = count(r#"{ __type(name: "__Type") { fields { name } } }"#);
        assert!(by_var > count(r#"{ __type(name: "User") { fields { name } } }"#));
        assert_eq!(by_var, largest);
    }
}
