//! Printing the merged supergraph in Apollo's format.

use std::fmt::Write as _;

use crate::model::{JoinField, JoinType, Kind, MField, MType, Supergraph};
use crate::specs;

pub fn print(sup: &Supergraph) -> String {
    let mut defs: Vec<String> = vec![schema_definition(sup)];
    let mut spec_defs: Vec<String> = specs::join_definitions(sup.join_version);
    spec_defs.extend(specs::LINK_DEFINITIONS.iter().map(|d| (*d).to_owned()));
    spec_defs.extend(sup.extra_definitions.iter().cloned());
    let (mut directives, others): (Vec<String>, Vec<String>) = spec_defs
        .into_iter()
        .partition(|d| d.starts_with("directive"));
    directives.sort_by(|a, b| spec_def_name(a).cmp(spec_def_name(b)));
    directives.dedup();
    defs.extend(directives);
    let mut types: Vec<(String, String)> = others
        .into_iter()
        .map(|d| (spec_def_name(&d).to_owned(), d))
        .collect();
    types.push(("join__Graph".to_owned(), graph_enum(sup)));
    types.extend(
        sup.types
            .values()
            .map(|t| (t.name.clone(), print_type(t, &sup.inaccessible_name))),
    );
    types.sort_by(|a, b| {
        a.0.to_lowercase()
            .cmp(&b.0.to_lowercase())
            .then(a.0.cmp(&b.0))
    });
    types.dedup_by(|a, b| a.0 == b.0);
    defs.extend(types.into_iter().map(|(_, d)| d));
    let mut out = defs.join("\n\n");
    out.push('\n');
    out
}

/// The defined name of a spec definition (`directive @x(...)`, `scalar x`, `enum x {`).
fn spec_def_name(def: &str) -> &str {
    def.split_whitespace()
        .nth(1)
        .map(|w| {
            w.trim_start_matches('@')
                .split(['(', '{'])
                .next()
                .unwrap_or(w)
        })
        .unwrap_or("")
}

fn schema_definition(sup: &Supergraph) -> String {
    let mut out = String::from("schema\n  @link(url: \"https://specs.apollo.dev/link/v1.0\")\n");
    let (maj, min) = sup.join_version;
    let _ = writeln!(
        out,
        "  @link(url: \"https://specs.apollo.dev/join/v{maj}.{min}\", for: EXECUTION)"
    );
    for link in &sup.links {
        let _ = write!(out, "  @link(url: \"{}\"", link.url);
        if let Some(p) = link.purpose {
            let _ = write!(out, ", for: {p}");
        }
        if let Some(imports) = &link.import {
            let _ = write!(out, ", import: {imports}");
        }
        out.push_str(")\n");
    }
    out.push_str("{\n");
    for (op, name) in &sup.roots {
        let _ = writeln!(out, "  {}: {name}", op.to_ascii_lowercase());
    }
    out.push('}');
    out
}

fn graph_enum(sup: &Supergraph) -> String {
    let mut out = String::from("enum join__Graph {\n");
    for (value, name, url) in &sup.graphs {
        let _ = writeln!(
            out,
            "  {value} @join__graph(name: {}, url: {})",
            quote(name),
            quote(url)
        );
    }
    out.push('}');
    out
}

/// A GraphQL string literal.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn description(out: &mut String, desc: Option<&str>, indent: &str) {
    let Some(d) = desc else {
        return;
    };
    if d.contains('\n') || d.contains('"') || d.contains('\\') || d.ends_with(' ') {
        let _ = writeln!(out, "{indent}{}", quote(d));
    } else {
        let _ = writeln!(out, "{indent}\"\"\"{d}\"\"\"");
    }
}

fn print_type(t: &MType, inaccessible: &str) -> String {
    let mut out = String::new();
    description(&mut out, t.description.as_deref(), "");
    let keyword = match t.kind {
        Kind::Scalar => "scalar",
        Kind::Object => "type",
        Kind::Interface => "interface",
        Kind::Union => "union",
        Kind::Enum => "enum",
        Kind::Input => "input",
    };
    let _ = write!(out, "{keyword} {}", t.name);
    if !t.implements.is_empty() {
        let _ = write!(out, " implements {}", t.implements.join(" & "));
    }
    for (graph, iface) in &t.join_implements {
        let _ = write!(
            out,
            "\n  @join__implements(graph: {graph}, interface: {})",
            quote(iface)
        );
    }
    for j in &t.join_types {
        let _ = write!(out, "\n  {}", join_type(j));
    }
    for (graph, member) in &t.join_members {
        let _ = write!(
            out,
            "\n  @join__unionMember(graph: {graph}, member: {})",
            quote(member)
        );
    }
    for d in &t.directives {
        let _ = write!(out, "\n  {d}");
    }
    match t.kind {
        Kind::Scalar => {}
        Kind::Union => {
            let _ = write!(out, "\n = {}", t.members.join(" | "));
        }
        Kind::Enum => {
            out.push_str("\n{\n");
            for v in t.values.values() {
                description(&mut out, v.description.as_deref(), "  ");
                let _ = write!(out, "  {}", v.name);
                for g in &v.graphs {
                    let _ = write!(out, " @join__enumValue(graph: {g})");
                }
                for d in &v.directives {
                    let _ = write!(out, " {d}");
                }
                out.push('\n');
            }
            out.push('}');
        }
        Kind::Object | Kind::Interface | Kind::Input => {
            out.push_str("\n{\n");
            for f in t.fields.values() {
                print_field(&mut out, f, inaccessible);
            }
            out.push('}');
        }
    }
    out
}

fn print_field(out: &mut String, f: &MField, inaccessible: &str) {
    description(out, f.description.as_deref(), "  ");
    let _ = write!(out, "  {}", f.name);
    if !f.args.is_empty() {
        let multiline = f.args.iter().any(|a| a.description.is_some());
        out.push('(');
        for (i, a) in f.args.iter().enumerate() {
            if multiline {
                out.push('\n');
                description(out, a.description.as_deref(), "    ");
                out.push_str("    ");
            } else if i > 0 {
                out.push_str(", ");
            }
            let _ = write!(out, "{}: {}", a.name, a.ty);
            if let Some(d) = &a.default {
                let _ = write!(out, " = {d}");
            }
            for d in &a.directives {
                let _ = write!(out, " {d}");
            }
        }
        if multiline {
            out.push_str("\n  ");
        }
        out.push(')');
    }
    let _ = write!(out, ": {}", f.ty);
    if let Some(d) = &f.default {
        let _ = write!(out, " = {d}");
    }
    // Apollo prints @inaccessible before the join directives, everything else after.
    let (first, rest): (Vec<&String>, Vec<&String>) = f
        .directives
        .iter()
        .partition(|d| d.strip_prefix('@') == Some(inaccessible));
    for d in first {
        let _ = write!(out, " {d}");
    }
    for j in f.joins.iter().flatten() {
        let _ = write!(out, " {}", join_field(j));
    }
    for d in rest {
        let _ = write!(out, " {d}");
    }
    out.push('\n');
}

fn join_type(j: &JoinType) -> String {
    let mut out = format!("@join__type(graph: {}", j.graph);
    if let Some(k) = &j.key {
        let _ = write!(out, ", key: {}", quote(k));
    }
    if j.extension {
        out.push_str(", extension: true");
    }
    if !j.resolvable || j.resolvable_explicit {
        let _ = write!(out, ", resolvable: {}", j.resolvable);
    }
    if j.interface_object {
        out.push_str(", isInterfaceObject: true");
    }
    out.push(')');
    out
}

fn join_field(j: &JoinField) -> String {
    let Some(graph) = &j.graph else {
        return "@join__field".to_owned();
    };
    let mut out = format!("@join__field(graph: {graph}");
    if let Some(r) = &j.requires {
        let _ = write!(out, ", requires: {}", quote(r));
    }
    if let Some(p) = &j.provides {
        let _ = write!(out, ", provides: {}", quote(p));
    }
    if let Some(o) = &j.override_from {
        let _ = write!(out, ", override: {}", quote(o));
    }
    if let Some(t) = &j.ty {
        let _ = write!(out, ", type: {}", quote(t));
    }
    if j.external {
        out.push_str(", external: true");
    }
    if j.used_overridden {
        out.push_str(", usedOverridden: true");
    }
    if let Some(l) = &j.override_label {
        let _ = write!(out, ", overrideLabel: {}", quote(l));
    }
    if !j.context_arguments.is_empty() {
        let args: Vec<String> = j
            .context_arguments
            .iter()
            .map(|c| {
                format!(
                    "{{context: {}, name: {}, type: {}, selection: {}}}",
                    quote(&c.context),
                    quote(&c.name),
                    quote(&c.ty),
                    quote(&c.selection)
                )
            })
            .collect();
        let _ = write!(out, ", contextArguments: [{}]", args.join(", "));
    }
    out.push(')');
    out
}
