//! The overview and the GraphGateway and Subgraph pages (pure: API objects in, HTML out).

use graphfleet_api::{
    CanaryPhase, CanaryStatus, GraphGateway, GraphGatewayStatus, LoadTest, RevisionOutcome,
    Strategy, Subgraph, SupergraphRevision, default_steps,
};
use kube::ResourceExt;
use maud::{Markup, html};

use super::layout::{
    GATEWAYS, LOADTESTS, SUBGRAPHS, condition_cell, conditions_table, num, object_link,
    object_path, page, read_error, time,
};
use super::loadtest_pages::loadtest_row;

/// What one list read gave: the objects, or why there are none to show.
pub type Listed<T> = Result<Vec<T>, String>;

/// Everything the overview shows.
pub struct Fleet {
    pub gateways: Listed<GraphGateway>,
    pub subgraphs: Listed<Subgraph>,
    pub loadtests: Listed<LoadTest>,
}

fn namespace(o: &impl ResourceExt) -> String {
    o.namespace().unwrap_or_default()
}

/// The front page: every GraphGateway, Subgraph and LoadTest the operator can read.
pub fn overview(fleet: &Fleet) -> Markup {
    page(
        "Fleet",
        html! {
            h2 #graphgateways { "GraphGateways" }
            (listed(&fleet.gateways, "GraphGateways", gateways_table))
            h2 #subgraphs { "Subgraphs" }
            (listed(&fleet.subgraphs, "Subgraphs", subgraphs_table))
            h2 #loadtests { "LoadTests" }
            (listed(&fleet.loadtests, "LoadTests", loadtests_table))
        },
    )
}

fn listed<T>(items: &Listed<T>, what: &str, table: fn(&[T]) -> Markup) -> Markup {
    match items {
        Err(why) => read_error(what, why),
        Ok(items) if items.is_empty() => html! { p.muted { "None." } },
        Ok(items) => table(items),
    }
}

fn short(hash: Option<&str>) -> Markup {
    match hash {
        Some(h) => html! { code { (h.get(..12).unwrap_or(h)) } },
        None => html! { span.muted { "–" } },
    }
}

fn canary_words(c: &CanaryStatus) -> String {
    match c.phase {
        CanaryPhase::Progressing => format!("step {} at {}%", c.step + 1, c.share_percent),
        CanaryPhase::Promoting => "promoting".to_owned(),
        CanaryPhase::RolledBack => "rolled back".to_owned(),
    }
}

fn gateways_table(gateways: &[GraphGateway]) -> Markup {
    html! {
        table #graphgateways-table {
            tr {
                th { "Namespace" } th { "Name" } th { "Phase" } th { "Ready pods" }
                th { "Supergraph" } th { "Subgraphs" } th { "Canary" } th { "Ready" } th { "Composed" }
            }
            @for gw in gateways {
                @let status = gw.status.clone().unwrap_or_default();
                tr {
                    td { (namespace(gw)) }
                    td { (object_link(GATEWAYS, &namespace(gw), &gw.name_any())) }
                    td { (status.phase.as_deref().unwrap_or("–")) }
                    td.num { (status.ready_replicas) "/" (status.replicas) }
                    td { (short(status.supergraph_hash.as_deref())) }
                    td.num { (status.subgraphs.len()) }
                    td { (status.canary.as_ref().map(canary_words).unwrap_or_else(|| "–".to_owned())) }
                    td { (condition_cell(&status.conditions, "Ready")) }
                    td { (condition_cell(&status.conditions, "Composed")) }
                }
            }
        }
    }
}

fn subgraphs_table(subgraphs: &[Subgraph]) -> Markup {
    html! {
        table #subgraphs-table {
            tr { th { "Namespace" } th { "Name" } th { "URL" } th { "Schema" } th { "Schema loaded" } }
            @for sg in subgraphs {
                @let status = sg.status.clone().unwrap_or_default();
                tr {
                    td { (namespace(sg)) }
                    td { (object_link(SUBGRAPHS, &namespace(sg), &sg.name_any())) }
                    td { code { (sg.spec.url) } }
                    td { (short(status.schema_hash.as_deref())) }
                    td { (condition_cell(&status.conditions, "SchemaLoaded")) }
                }
            }
        }
    }
}

fn loadtests_table(loadtests: &[LoadTest]) -> Markup {
    html! {
        table #loadtests-table {
            tr {
                th { "Namespace" } th { "Name" } th { "Phase" } th { "Requests" } th { "Failed" }
                th { "Achieved req/s" } th { "p99 ms" } th { "Passed" }
            }
            @for lt in loadtests { (loadtest_row(lt)) }
        }
    }
}

/// One GraphGateway: where its rollout is, its revisions and what their checks found.
pub fn gateway(gw: &GraphGateway, loadtests: &[LoadTest]) -> Markup {
    let ns = namespace(gw);
    let status = gw.status.clone().unwrap_or_default();
    page(
        &format!("GraphGateway {ns}/{}", gw.name_any()),
        html! {
            dl.facts {
                dt { "Phase" } dd { (status.phase.as_deref().unwrap_or("–")) }
                dt { "Pods ready" } dd { (status.ready_replicas) " of " (status.replicas) " (spec: " (gw.spec.replicas) ")" }
                dt { "Serving supergraph" } dd { (short(status.supergraph_hash.as_deref())) }
                dt { "Rollout" } dd { (strategy_words(gw)) }
                dt { "Subgraphs" } dd {
                    @for (i, name) in status.subgraphs.iter().enumerate() {
                        @if i > 0 { ", " }
                        (object_link(SUBGRAPHS, &ns, name))
                    }
                }
            }
            h2 { "Conditions" }
            (conditions_table(&status.conditions))
            (canary_section(gw, &status, loadtests))
            h2 #revisions { "Supergraph revisions" }
            (revisions_table(&status.revisions))
            @if !status.composition_errors.is_empty() {
                h2 { "Composition errors" }
                table {
                    tr { th { "Code" } th { "Message" } th { "Subgraphs" } }
                    @for e in &status.composition_errors {
                        tr { td { code { (e.code) } } td { (e.message) } td { (e.subgraphs.join(", ")) } }
                    }
                }
            }
        },
    )
}

fn strategy_words(gw: &GraphGateway) -> &'static str {
    let canary = gw
        .spec
        .rollout
        .as_ref()
        .and_then(|r| r.strategy.as_ref())
        .is_some_and(|s| matches!(s, Strategy::Canary));
    if canary { "canary" } else { "rolling update" }
}

fn canary_section(
    gw: &GraphGateway,
    status: &GraphGatewayStatus,
    loadtests: &[LoadTest],
) -> Markup {
    let spec = gw.spec.rollout.as_ref().and_then(|r| r.canary.as_ref());
    if spec.is_none() && status.canary.is_none() {
        return html! {};
    }
    let steps = spec
        .map(|c| c.steps.clone())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(default_steps);
    let current = status
        .canary
        .as_ref()
        .filter(|c| c.phase == CanaryPhase::Progressing)
        .map(|c| c.step as usize);
    html! {
        h2 #canary { "Canary" }
        @if let Some(c) = &status.canary {
            dl.facts {
                dt { "Phase" } dd { (format!("{:?}", c.phase)) }
                dt { "Revision" } dd { (short(Some(&c.revision))) }
                dt { "Step" } dd { (c.step + 1) " of " (steps.len()) }
                dt { "Canary share" } dd { (c.share_percent) "% (" (c.canary_pods) " canary, " (c.stable_pods) " stable pods)" }
                @if let Some(at) = &c.step_started_at { dt { "Step watched since" } dd { (time(at)) } }
                @if let Some(lt) = &c.load_test {
                    dt { "LoadTest" }
                    dd {
                        (object_link(LOADTESTS, &namespace(gw), lt))
                        @if let Some(found) = loadtests.iter().find(|l| l.name_any() == *lt) {
                            " " (found.status.as_ref().and_then(|s| s.phase).map(|p| format!("({p:?})")).unwrap_or_default())
                        }
                    }
                }
                dt { "Analysis" } dd.analysis { (if c.message.is_empty() { "–" } else { &c.message }) }
            }
        } @else {
            p.muted { "No canary running." }
        }
        @if let Some(spec) = spec {
            // The defaults are CanarySpec's documented ones.
            p.thresholds {
                "Each step passes with a canary error rate ≤ " (spec.max_error_rate_percent.unwrap_or(1.0)) "%"
                ", subgraph fetch error rate ≤ " (spec.max_fetch_error_rate_percent.unwrap_or(1.0)) "%"
                ", p99 ≤ " (spec.max_p99_ratio.unwrap_or(2.0)) "× the stable pods'"
                " and at least " (spec.min_requests.unwrap_or(20)) " canary requests"
                @if spec.load_test.is_some() { ", and its LoadTest's thresholds" }
                "."
            }
        }
        table #canary-steps {
            tr { th { "Step" } th { "Weight" } th { "Pause" } }
            @for (i, step) in steps.iter().enumerate() {
                tr class=[(current == Some(i)).then_some("current")] {
                    td.num { (i + 1) } td.num { (step.weight) "%" } td { (step.pause) }
                }
            }
        }
    }
}

fn outcome_class(o: RevisionOutcome) -> &'static str {
    match o {
        RevisionOutcome::Serving => "ok",
        RevisionOutcome::Canary => "warn",
        RevisionOutcome::Blocked | RevisionOutcome::RolledBack => "bad",
        RevisionOutcome::Superseded | RevisionOutcome::Composed => "muted",
    }
}

fn bullet_list(items: &[String]) -> Markup {
    html! {
        @if items.is_empty() { span.muted { "none" } }
        @else { ul.plain { @for i in items { li { code { (i) } } } } }
    }
}

fn revisions_table(revisions: &[SupergraphRevision]) -> Markup {
    html! {
        @if revisions.is_empty() {
            p.muted { "Nothing composed yet." }
        } @else {
            table #revisions-table {
                tr {
                    th { "Revision" } th { "Composed" } th { "Outcome" } th { "Subgraph schemas" }
                    th { "Breaking changes" } th { "Dangerous" } th { "Operations checked" }
                    th { "Operations it breaks" } th { "Plans it changes" }
                }
                @for r in revisions.iter().rev() {
                    tr {
                        td { (short(Some(&r.hash))) }
                        td { (time(&r.composed_at)) }
                        td { span class=(outcome_class(r.outcome)) { (format!("{:?}", r.outcome)) } }
                        td { @for s in &r.subgraphs { code { (s.name) "@" (s.sdl_hash.get(..8).unwrap_or(&s.sdl_hash)) } " " } }
                        td { (bullet_list(&r.breaking_changes)) }
                        (num(f64::from(r.dangerous_changes), 0))
                        (num(f64::from(r.operations_checked), 0))
                        td { (bullet_list(&r.invalid_operations)) }
                        td { (bullet_list(&r.changed_plans)) }
                    }
                }
            }
        }
    }
}

/// One Subgraph: its schema state and the GraphGateways composing it.
pub fn subgraph(sg: &Subgraph, gateways: &[GraphGateway]) -> Markup {
    let ns = namespace(sg);
    let name = sg.name_any();
    let status = sg.status.clone().unwrap_or_default();
    let source = if sg.spec.sdl.is_some() {
        "inline SDL (spec.sdl)".to_owned()
    } else if let Some(r) = &sg.spec.config_map_ref {
        format!("ConfigMap {}, key {}", r.name, r.key)
    } else {
        "introspection of the URL".to_owned()
    };
    let composing: Vec<&GraphGateway> = gateways
        .iter()
        .filter(|gw| {
            gw.status
                .as_ref()
                .is_some_and(|s| s.subgraphs.contains(&name))
        })
        .collect();
    page(
        &format!("Subgraph {ns}/{name}"),
        html! {
            dl.facts {
                dt { "URL" } dd { code { (sg.spec.url) } }
                dt { "Schema from" } dd { (source) }
                dt { "Schema hash" } dd { (short(status.schema_hash.as_deref())) }
                dt { "Composed by" } dd {
                    @if composing.is_empty() { span.muted { "no GraphGateway" } }
                    @for (i, gw) in composing.iter().enumerate() {
                        @if i > 0 { ", " }
                        a href=(object_path(GATEWAYS, &ns, &gw.name_any())) { (gw.name_any()) }
                    }
                }
            }
            h2 { "Conditions" }
            (conditions_table(&status.conditions))
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canary_gateway() -> GraphGateway {
        serde_yaml_ng::from_str(include_str!("../../tests/fixtures/web/canary-gateway.yaml"))
            .expect("the fixture is a GraphGateway")
    }

    /// The text between `start` and the next `end` after it.
    fn between<'a>(html: &'a str, start: &str, end: &str) -> &'a str {
        let from = html
            .find(start)
            .unwrap_or_else(|| panic!("{start:?} in {html}"))
            + start.len();
        let to = html[from..].find(end).expect("an end") + from;
        &html[from..to]
    }

    #[test]
    fn the_gateway_page_shows_the_canary_step_its_analysis_and_what_the_checks_found() {
        let html = gateway(&canary_gateway(), &[]).into_string();
        let facts = between(&html, "<h2 id=\"canary\">", "</dl>");
        assert!(facts.contains("<dd>2 of 2</dd>"), "{facts}");
        assert!(facts.contains("33% (2 canary, 4 stable pods)"), "{facts}");
        // The analysis message is text, never markup.
        assert!(
            facts.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{facts}"
        );
        assert!(!html.contains("<script>"), "{html}");
        let thresholds = between(&html, "<p class=\"thresholds\">", "</p>");
        assert_eq!(
            thresholds,
            "Each step passes with a canary error rate ≤ 0.5%, subgraph fetch error rate ≤ 1%, \
             p99 ≤ 2× the stable pods' and at least 100 canary requests."
        );
        let steps = between(&html, "<table id=\"canary-steps\">", "</table>");
        assert!(
            steps.contains("<tr class=\"current\"><td class=\"num\">2</td><td class=\"num\">50%</td><td>2m</td></tr>"),
            "the second step is the current one: {steps}"
        );
        let revisions = between(&html, "<table id=\"revisions-table\">", "</table>");
        // Newest first: the canary's revision, then the blocked one, then the serving one.
        let order: Vec<usize> = ["fedcba987654", "555555555555", "0123456789ab"]
            .iter()
            .map(|h| revisions.find(h).expect("every revision is listed"))
            .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{revisions}");
        assert!(
            revisions.contains("<span class=\"bad\">Blocked</span>"),
            "{revisions}"
        );
        assert!(
            revisions.contains("Product.upc: field removed"),
            "{revisions}"
        );
        assert!(
            revisions.contains("TopProducts (abc123, 40.0% of requests"),
            "{revisions}"
        );
        assert!(revisions.contains("TopProducts: +products"), "{revisions}");
        assert!(revisions.contains("products@dddddddd"), "{revisions}");
        let conditions = between(&html, "<table class=\"conditions\">", "</table>");
        assert!(
            conditions.contains("<td>Degraded</td><td><span class=\"ok\">False</span></td>"),
            "Degraded=False is good news: {conditions}"
        );
    }

    #[test]
    fn the_overview_lists_each_kind_or_says_why_it_cannot() {
        let fleet = Fleet {
            gateways: Ok(vec![canary_gateway()]),
            subgraphs: Ok(Vec::new()),
            loadtests: Err("forbidden by the operator's RBAC (loadtests is forbidden)".to_owned()),
        };
        let html = overview(&fleet).into_string();
        let gateways = between(&html, "<table id=\"graphgateways-table\">", "</table>");
        assert!(
            gateways.contains("href=\"/graphgateways/team-a/shop\""),
            "{gateways}"
        );
        assert!(gateways.contains("step 2 at 33%"), "{gateways}");
        assert!(
            gateways.contains("<td class=\"num\">6/6</td>"),
            "{gateways}"
        );
        assert!(
            between(&html, "id=\"subgraphs\"", "</p>").contains("None."),
            "{html}"
        );
        assert!(
            html.contains("Could not read LoadTests: forbidden by the operator's RBAC"),
            "{html}"
        );
    }

    #[test]
    fn a_subgraph_page_names_the_gateways_composing_it() {
        let sg: Subgraph = serde_yaml_ng::from_str(
            "apiVersion: graphfleet.dev/v1alpha1\nkind: Subgraph\nmetadata: {name: products, namespace: team-a}\n\
             spec: {url: 'http://products/graphql'}\nstatus: {schemaHash: abcdef0123456789}\n",
        )
        .expect("a Subgraph");
        let html = subgraph(&sg, &[canary_gateway()]).into_string();
        assert!(html.contains("introspection of the URL"), "{html}");
        assert!(
            html.contains("<a href=\"/graphgateways/team-a/shop\">shop</a>"),
            "{html}"
        );
        assert!(html.contains("<code>abcdef012345</code>"), "{html}");
    }
}
