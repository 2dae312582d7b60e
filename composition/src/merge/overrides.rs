//! `@override`: which field sources are overridden, and its misuse.

use super::field_sources::FieldSource;
use super::state::Merger;
use crate::errors::codes;

/// Marks the sources other subgraphs `@override`, reporting misuse.
pub(super) fn resolve_overrides(
    ctx: &mut Merger<'_>,
    tname: &str,
    fname: &str,
    srcs: &mut [FieldSource<'_>],
) {
    let mut marks = Vec::new();
    let mut unknown_from = Vec::new();
    for (i, s) in srcs.iter().enumerate() {
        let Some((from, label)) = &s.overrides else {
            continue;
        };
        let me = &ctx.sg(s.sg).name;
        if from == me {
            ctx.sink.error(
                codes::OVERRIDE_FROM_SELF_ERROR,
                format!("Source and destination subgraphs \"{from}\" are the same for overridden field \"{tname}.{fname}\""),
                me,
            );
            continue;
        }
        if !ctx.input.subgraphs.iter().any(|g| &g.name == from) {
            ctx.sink.hint(
                codes::FROM_SUBGRAPH_DOES_NOT_EXIST,
                format!("Source subgraph \"{from}\" for field \"{tname}.{fname}\" on subgraph \"{me}\" does not exist. Did you mean \"{me}\"?"),
            );
            // No overriding then: the supergraph does not mention it (Apollo).
            unknown_from.push(i);
            continue;
        }
        let target = srcs.iter().position(|o| &ctx.sg(o.sg).name == from);
        match target {
            None => ctx.sink.hint(
                codes::OVERRIDE_DIRECTIVE_CAN_BE_REMOVED,
                format!("Field \"{tname}.{fname}\" on subgraph \"{me}\" no longer exists in the from subgraph. The @override directive can be removed."),
            ),
            Some(j) if srcs[j].overrides.is_some() => ctx.sink.error_in(
                codes::OVERRIDE_SOURCE_HAS_OVERRIDE,
                format!("Field \"{tname}.{fname}\" on subgraph \"{me}\" is also marked with directive @override in subgraph \"{from}\". Only one @override directive is allowed per field."),
                &[me, from],
            ),
            Some(j) => {
                if s.external {
                    ctx.sink.error(
                        codes::OVERRIDE_COLLISION_WITH_ANOTHER_DIRECTIVE,
                        format!("@override cannot be used on field \"{tname}.{fname}\" on subgraph \"{me}\" since \"{tname}.{fname}\" on \"{me}\" is marked with directive \"@external\""),
                        me,
                    );
                    continue;
                }
                if label.is_none() && srcs[j].external {
                    // The from field is @external there: nothing is overridden.
                    ctx.sink.hint(
                        codes::OVERRIDE_DIRECTIVE_CAN_BE_REMOVED,
                        format!("Field \"{tname}.{fname}\" on subgraph \"{me}\" is not resolved anymore by the from subgraph (it is marked \"@external\" in \"{from}\"). The @override directive can be removed."),
                    );
                    continue;
                }
                if label.is_some() {
                    ctx.sink.hint(
                        codes::OVERRIDE_MIGRATION_IN_PROGRESS,
                        format!("Field \"{tname}.{fname}\" is currently being migrated with progressive @override. Once the migration is complete, remove the field from subgraph \"{from}\"."),
                    );
                }
                marks.push((i, j, label.clone()));
            }
        }
    }
    for i in unknown_from {
        srcs[i].overrides = None;
    }
    for (_, j, label) in marks {
        // Apollo hints even when the field implements an interface field (`usedOverridden`).
        if label.is_none() && !srcs[j].referenced {
            let from = &ctx.sg(srcs[j].sg).name;
            ctx.sink.hint(
                codes::OVERRIDDEN_FIELD_CAN_BE_REMOVED,
                format!("Field \"{tname}.{fname}\" on subgraph \"{from}\" is overridden. Consider removing it."),
            );
        }
        srcs[j].overridden = Some(label);
    }
}
