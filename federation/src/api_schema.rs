//! The API schema: the supergraph minus `@inaccessible` elements and minus all
//! link/join machinery; what clients validate and introspect against.

use super::{Features, SupergraphError, is_machinery};
use apollo_compiler::schema::{DirectiveList, ExtendedType};
use apollo_compiler::validation::Valid;
use apollo_compiler::{Name, Schema, ast};

pub(super) fn build(
    supergraph: &Valid<Schema>,
    features: &Features,
) -> Result<Valid<Schema>, SupergraphError> {
    let mut schema: Schema = supergraph.as_ref().clone();
    let inaccessible = features.inaccessible.as_deref();
    let hidden = |names: &mut dyn Iterator<Item = &Name>| {
        inaccessible.is_some_and(|i| {
            let mut found = false;
            for n in names {
                found |= n == i;
            }
            found
        })
    };
    let hidden_s = |d: &DirectiveList| hidden(&mut d.iter().map(|d| &d.name));
    let hidden_a = |d: &ast::DirectiveList| hidden(&mut d.iter().map(|d| &d.name));
    let strip = |d: &mut DirectiveList| d.0.retain(|d| !is_machinery(&d.name, features));
    let strip_a = |d: &mut ast::DirectiveList| d.0.retain(|d| !is_machinery(&d.name, features));

    schema
        .directive_definitions
        .retain(|name, _| !is_machinery(name, features));
    strip(&mut schema.schema_definition.make_mut().directives);
    let inaccessible_types: Vec<_> = schema
        .types
        .iter()
        .filter(|(name, ty)| is_machinery(name, features) || hidden_s(ty.directives()))
        .map(|(name, _)| name.clone())
        .collect();
    schema
        .types
        .retain(|name, _| !inaccessible_types.contains(name));
    let is_gone = |name: &str| inaccessible_types.iter().any(|n| n == name);

    for ty in schema.types.values_mut() {
        match ty {
            ExtendedType::Object(o) => {
                let o = o.make_mut();
                strip(&mut o.directives);
                o.implements_interfaces.retain(|i| !is_gone(i));
                o.fields.retain(|_, f| !hidden_a(&f.directives));
                for f in o.fields.values_mut() {
                    clean_field(f.make_mut(), &hidden_a, &strip_a);
                }
            }
            ExtendedType::Interface(i) => {
                let i = i.make_mut();
                strip(&mut i.directives);
                i.implements_interfaces.retain(|n| !is_gone(n));
                i.fields.retain(|_, f| !hidden_a(&f.directives));
                for f in i.fields.values_mut() {
                    clean_field(f.make_mut(), &hidden_a, &strip_a);
                }
            }
            ExtendedType::Union(u) => {
                let u = u.make_mut();
                strip(&mut u.directives);
                u.members.retain(|m| !is_gone(m));
            }
            ExtendedType::Enum(e) => {
                let e = e.make_mut();
                strip(&mut e.directives);
                e.values.retain(|_, v| !hidden_a(&v.directives));
                for v in e.values.values_mut() {
                    strip_a(&mut v.make_mut().directives);
                }
            }
            ExtendedType::InputObject(io) => {
                let io = io.make_mut();
                strip(&mut io.directives);
                io.fields.retain(|_, f| !hidden_a(&f.directives));
                for f in io.fields.values_mut() {
                    strip_a(&mut f.make_mut().directives);
                }
            }
            ExtendedType::Scalar(s) => strip(&mut s.make_mut().directives),
        }
    }
    add_defer(&mut schema);
    schema
        .validate()
        .map_err(|e| SupergraphError::InvalidApiSchema(e.errors.to_string()))
}

/// `@defer` (incremental delivery), which clients may use on any fragment, as Apollo
/// Router's API schema declares it; a supergraph that defines its own keeps that one.
fn add_defer(schema: &mut Schema) {
    const DEFER: &str =
        "directive @defer(label: String, if: Boolean! = true) on FRAGMENT_SPREAD | INLINE_FRAGMENT";
    if schema.directive_definitions.contains_key("defer") {
        return;
    }
    let doc = ast::Document::parse(DEFER, "defer.graphql").expect("the @defer definition parses");
    for def in doc.definitions {
        if let ast::Definition::DirectiveDefinition(d) = def {
            schema.directive_definitions.insert(d.name.clone(), d);
        }
    }
}

fn clean_field(
    f: &mut ast::FieldDefinition,
    hidden: &impl Fn(&ast::DirectiveList) -> bool,
    strip: &impl Fn(&mut ast::DirectiveList),
) {
    strip(&mut f.directives);
    f.arguments.retain(|a| !hidden(&a.directives));
    for a in &mut f.arguments {
        strip(&mut a.make_mut().directives);
    }
}
