//! Where a subgraph may apply `@authenticated`, `@requiresScopes` and `@policy`: not on
//! interfaces, interface fields or `@interfaceObject` types (as @apollo/composition
//! refuses them: a requirement there would not hold for the implementations in other
//! subgraphs).

use apollo_compiler::schema::ExtendedType;

use super::Subgraph;
use crate::errors::{ErrorSink, codes};
use crate::specs::FedDirective;

const AUTH: [FedDirective; 3] = [
    FedDirective::Authenticated,
    FedDirective::RequiresScopes,
    FedDirective::Policy,
];

/// Reports each auth directive applied to an interface, an interface field or an
/// interface object.
pub(crate) fn check(sg: &Subgraph, sink: &mut ErrorSink) {
    for feature in AUTH {
        let name = sg.dir_name(feature);
        if name.is_empty() {
            continue;
        }
        for (tname, ty) in &sg.schema.types {
            if ty.is_built_in() || sg.is_internal_type(tname) {
                continue;
            }
            let (kind, directives) = match ty {
                ExtendedType::Interface(i) => ("interface", &i.directives),
                ExtendedType::Object(o) if sg.has(&o.directives, FedDirective::InterfaceObject) => {
                    ("interface object", &o.directives)
                }
                _ => continue,
            };
            if directives.iter().any(|d| d.name == name) {
                report(sg, sink, name, kind, tname);
            }
            let ExtendedType::Interface(i) = ty else {
                continue;
            };
            for (fname, field) in &i.fields {
                if field.directives.iter().any(|d| d.name == name) {
                    report(sg, sink, name, "field", &format!("{tname}.{fname}"));
                }
            }
        }
    }
}

fn report(sg: &Subgraph, sink: &mut ErrorSink, name: &str, kind: &str, coordinate: &str) {
    sink.error(
        codes::AUTH_REQUIREMENTS_APPLIED_ON_INTERFACE,
        format!(
            "[{}] Invalid use of @{name} on {kind} \"{coordinate}\": @{name} cannot be applied on interfaces, interface fields and interface objects",
            sg.name
        ),
        &sg.name,
    );
}
