//! Human-readable plans (CLI `plan` command and insta snapshots).

use super::plan::{PathElem, PlanNode, QueryPlan};
use std::fmt::{self, Display, Write};

impl Display for QueryPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("QueryPlan {\n")?;
        if let Some(root) = &self.root {
            self.node(f, root, 1)?;
        }
        f.write_str("}\n")
    }
}

fn path_string(path: &[PathElem]) -> String {
    let mut s = String::new();
    for (i, p) in path.iter().enumerate() {
        match p {
            // Suffix of the previous element: `review|[UserReview].product`.
            PathElem::TypeCond(t) => {
                let _ = write!(s, "|[{t}]");
                continue;
            }
            _ if i > 0 => s.push('.'),
            _ => {}
        }
        match p {
            PathElem::Key(k) => s.push_str(k),
            PathElem::List => s.push('@'),
            PathElem::TypeCond(_) => {}
        }
    }
    s
}

impl QueryPlan {
    fn node(&self, f: &mut fmt::Formatter<'_>, node: &PlanNode, depth: usize) -> fmt::Result {
        let pad = "  ".repeat(depth);
        match node {
            PlanNode::Sequence(nodes) | PlanNode::Parallel(nodes) => {
                let kind = if matches!(node, PlanNode::Sequence(_)) {
                    "Sequence"
                } else {
                    "Parallel"
                };
                writeln!(f, "{pad}{kind} {{")?;
                for n in nodes {
                    self.node(f, n, depth + 1)?;
                }
                writeln!(f, "{pad}}}")
            }
            PlanNode::Fetch(i) => self.fetch(f, *i, depth),
            PlanNode::Flatten { fetch, .. } => {
                let paths = &self.fetches[*fetch].merge_paths;
                let label = if paths.len() == 1 { "path" } else { "paths" };
                writeln!(f, "{pad}Flatten({label}: {}) {{", paths_text(paths))?;
                self.fetch(f, *fetch, depth + 1)?;
                writeln!(f, "{pad}}}")
            }
        }
    }

    fn fetch(&self, f: &mut fmt::Formatter<'_>, i: usize, depth: usize) -> fmt::Result {
        let pad = "  ".repeat(depth);
        let fetch = &self.fetches[i];
        writeln!(f, "{pad}Fetch(service: \"{}\") {{", fetch.subgraph_name)?;
        if fetch.payloads != crate::operation::PRIMARY {
            writeln!(f, "{pad}  payloads: [{}]", payload_names(fetch.payloads))?;
        }
        if let Some(entity) = &fetch.entity {
            if entity.parts.is_empty() {
                writeln!(
                    f,
                    "{pad}  representations: {{{} }}",
                    reps_text(&entity.reps)
                )?;
            }
            for (i, part) in entity.parts.iter().enumerate() {
                writeln!(
                    f,
                    "{pad}  _{i} at {}: representations: {{{} }}",
                    paths_text(&part.merge_paths),
                    reps_text(&part.reps)
                )?;
            }
            for var in &entity.contexts {
                let sources: Vec<String> = var
                    .sources
                    .iter()
                    .map(|s| {
                        let mut selection = String::new();
                        write_tree(&mut selection, &s.selection);
                        let path = fetch.merge_paths.first().map_or(&[][..], |p| p.as_slice());
                        let ancestor = path_string(path.get(..s.depth).unwrap_or(path));
                        format!("\"{ancestor}\" [{}] {{{selection} }}", s.matches.join(", "))
                    })
                    .collect();
                writeln!(f, "{pad}  ${}: {}", var.name, sources.join(" or "))?;
            }
        }
        writeln!(f, "{pad}  {}", fetch.operation)?;
        writeln!(f, "{pad}}}")
    }
}

/// `"a.@", "b"`: each path quoted.
fn paths_text(paths: &[Vec<PathElem>]) -> String {
    let quoted: Vec<String> = paths
        .iter()
        .map(|p| format!("\"{}\"", path_string(p)))
        .collect();
    quoted.join(", ")
}

/// ` ... on T { __typename key }` per representation spec.
fn reps_text(reps: &[super::plan::RepSpec]) -> String {
    let mut out = String::new();
    for rep in reps {
        let _ = write!(out, " ... on {} {{ __typename", rep.type_condition);
        write_tree(&mut out, &rep.fields);
        out.push_str(" }");
    }
    out
}

/// `initial` for the initial payload, the defer's index for each deferred one.
fn payload_names(mask: crate::operation::DeferMask) -> String {
    let mut names = Vec::new();
    for bit in 0..64 {
        if mask & (1 << bit) != 0 {
            names.push(match bit {
                0 => "initial".to_owned(),
                n => format!("defer {}", n - 1),
            });
        }
    }
    names.join(", ")
}

fn write_tree(out: &mut String, tree: &graphfleet_federation::meta::SelTree) {
    use graphfleet_federation::meta::SelTreeItem;
    for item in &tree.items {
        match item {
            SelTreeItem::Field {
                name,
                alias,
                args,
                sub,
            } => {
                let _ = write!(out, " ");
                if let Some(alias) = alias {
                    let _ = write!(out, "{alias}: ");
                }
                let _ = write!(out, "{name}");
                if !args.is_empty() {
                    let args: Vec<String> = args
                        .iter()
                        .map(|a| format!("{}: {}", a.name, a.value))
                        .collect();
                    let _ = write!(out, "({})", args.join(", "));
                }
                if !sub.items.is_empty() {
                    out.push_str(" {");
                    write_tree(out, sub);
                    out.push_str(" }");
                }
            }
            SelTreeItem::Fragment {
                type_condition,
                sub,
            } => {
                let _ = write!(out, " ... on {type_condition} {{");
                write_tree(out, sub);
                out.push_str(" }");
            }
        }
    }
}
