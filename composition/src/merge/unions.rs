//! Merging union types: the members of all subgraphs.

use apollo_compiler::schema::ExtendedType;

use super::common_parts::type_with_common_parts;
use super::state::{Merger, TypeSource};
use crate::errors::{codes, subgraphs_phrase};
use crate::model::MType;

pub(super) fn merge_union(
    ctx: &mut Merger<'_>,
    name: &str,
    sources: &[TypeSource<'_>],
) -> Option<MType> {
    let mut t = type_with_common_parts(ctx, name, sources);
    for src in sources {
        let ExtendedType::Union(u) = src.ty else {
            continue;
        };
        let sg = ctx.sg(src.sg);
        for m in &u.members {
            let member = sg.canonical(m).to_owned();
            if !t.members.contains(&member) {
                t.members.push(member.clone());
            }
            t.join_members.push((sg.graph.clone(), member));
        }
    }
    for member in &t.members {
        let (have, missing): (Vec<&TypeSource<'_>>, Vec<&TypeSource<'_>>) =
            sources.iter().partition(|src| {
                let graph = &ctx.sg(src.sg).graph;
                t.join_members
                    .iter()
                    .any(|(g, m)| g == graph && m == member)
            });
        if missing.is_empty() {
            continue;
        }
        let names = |v: &[&TypeSource<'_>]| -> Vec<String> {
            v.iter().map(|s| ctx.sg(s.sg).name.clone()).collect()
        };
        ctx.sink.hint(
            codes::INCONSISTENT_UNION_MEMBER,
            format!(
                "Union type \"{name}\" includes member type \"{member}\" in some but not all defining subgraphs: \"{member}\" is defined in {} but not in {}.",
                subgraphs_phrase(&names(&have)),
                subgraphs_phrase(&names(&missing))
            ),
        );
    }
    Some(t)
}
