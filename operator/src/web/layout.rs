//! The frame every page shares and the small pieces the pages repeat: conditions, times,
//! links. Plain HTML and one inline stylesheet: no script, nothing loaded from elsewhere
//! (the Content-Security-Policy in `web::serve` forbids both).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use maud::{DOCTYPE, Markup, PreEscaped, html};

/// Path segments of the object pages.
pub const GATEWAYS: &str = "graphgateways";
pub const SUBGRAPHS: &str = "subgraphs";
pub const LOADTESTS: &str = "loadtests";

const STYLE: &str = r#"
body { font: 14px/1.45 system-ui, sans-serif; margin: 0; color: #1d2330; background: #f6f7f9; }
header { background: #1d2330; color: #fff; padding: 10px 24px; display: flex; gap: 24px; align-items: baseline; }
header a { color: #cfe0ff; text-decoration: none; }
header .brand { font-weight: 600; color: #fff; }
main { padding: 16px 24px 40px; max-width: 1400px; }
h1 { font-size: 22px; margin: 8px 0 12px; }
h2 { font-size: 17px; margin: 24px 0 8px; }
table { border-collapse: collapse; background: #fff; margin: 4px 0 12px; }
th, td { border: 1px solid #d9dde5; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #eef1f6; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
code { font: 12px ui-monospace, monospace; }
.ok { color: #17692b; font-weight: 600; }
.bad { color: #a3161b; font-weight: 600; }
.warn { color: #8a5a00; font-weight: 600; }
.muted { color: #6b7385; }
.error { background: #fde8e8; border: 1px solid #e3a6a6; padding: 6px 10px; }
dl.facts { display: grid; grid-template-columns: max-content auto; gap: 2px 16px; }
dl.facts dt { color: #6b7385; }
dl.facts dd { margin: 0; }
ul.plain { margin: 0; padding-left: 18px; }
.report table { font-size: 13px; }
.chart img { background: #fff; border: 1px solid #d9dde5; max-width: 100%; }
tr.current td { background: #fff7d6; }
"#;

/// A whole page: `title` in the tab and as the heading.
pub fn page(title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · graphfleet" }
                style { (PreEscaped(STYLE)) }
            }
            body {
                header {
                    a.brand href="/" { "graphfleet operator" }
                    a href="/#graphgateways" { "GraphGateways" }
                    a href="/#subgraphs" { "Subgraphs" }
                    a href="/#loadtests" { "LoadTests" }
                }
                main {
                    h1 { (title) }
                    (body)
                }
            }
        }
    }
}

/// A read the API server refused or failed, shown where its table would be.
pub fn read_error(what: &str, why: &str) -> Markup {
    html! { p.error { "Could not read " (what) ": " (why) } }
}

/// `True`/`False`/`Unknown` coloured by whether that is good news for this condition.
pub fn condition_status(c: &Condition) -> Markup {
    // Degraded's True is bad news; Progressing is neither (a rollout, or none); for the
    // others True is good.
    let class = match (c.type_.as_str(), c.status.as_str()) {
        (_, "Unknown") => "warn",
        ("Progressing", _) => "muted",
        ("Degraded", "False") => "ok",
        ("Degraded", _) => "bad",
        (_, "True") => "ok",
        _ => "bad",
    };
    html! { span class=(class) { (c.status) } }
}

/// The status of the condition named `type_`, or a muted dash.
pub fn condition_cell(conditions: &[Condition], type_: &str) -> Markup {
    match conditions.iter().find(|c| c.type_ == type_) {
        Some(c) => html! { (condition_status(c)) " " span.muted { (c.reason) } },
        None => html! { span.muted { "–" } },
    }
}

/// Every condition, a row each.
pub fn conditions_table(conditions: &[Condition]) -> Markup {
    html! {
        @if conditions.is_empty() {
            p.muted { "No conditions yet." }
        } @else {
            table.conditions {
                tr { th { "Type" } th { "Status" } th { "Reason" } th { "Message" } th { "Since" } }
                @for c in conditions {
                    tr {
                        td { (c.type_) }
                        td { (condition_status(c)) }
                        td { (c.reason) }
                        td { (c.message) }
                        td { (time(&c.last_transition_time)) }
                    }
                }
            }
        }
    }
}

/// A timestamp as the API server wrote it (RFC 3339, UTC).
pub fn time(t: &Time) -> String {
    t.0.strftime("%Y-%m-%d %H:%M:%S UTC").to_string()
}

/// A link to an object's page; the segments are percent-encoded by `object_path`.
pub fn object_link(kind: &str, namespace: &str, name: &str) -> Markup {
    html! { a href=(object_path(kind, namespace, name)) { (name) } }
}

/// `/<kind>/<namespace>/<name>`: Kubernetes names are DNS labels or subdomains, so they
/// need no encoding; anything else is refused by the router before it gets here.
pub fn object_path(kind: &str, namespace: &str, name: &str) -> String {
    format!("/{kind}/{namespace}/{name}")
}

/// A number with a fixed count of decimals, right-aligned.
pub fn num(v: f64, decimals: usize) -> Markup {
    html! { td.num { (format!("{v:.decimals$}")) } }
}
