//! The static cost estimate (`operation::demand`) over the cases in tests/demand: each
//! case's title states the expected cost (worked out by hand from the rules) or
//! `error`, and the estimate must equal it.

use apollo_compiler::response::JsonMap;
use graphfleet_federation::Supergraph;
use graphfleet_planner::operation::demand::CostPlan;
use graphfleet_planner::operation::{self, ConditionValues};

const DEFAULT_LIST_SIZE: u64 = 10;

struct Case {
    title: String,
    variables: Option<String>,
    query: String,
}

fn cases() -> Vec<Case> {
    let text = include_str!("demand/cases.graphql");
    let mut out: Vec<Case> = Vec::new();
    for line in text.lines() {
        if let Some(title) = line.strip_prefix("### ") {
            out.push(Case {
                title: title.to_owned(),
                variables: None,
                query: String::new(),
            });
        } else if let Some(vars) = line.strip_prefix("# variables: ") {
            out.last_mut().expect("a case").variables = Some(vars.to_owned());
        } else {
            let case = out.last_mut().expect("a case");
            case.query.push_str(line);
            case.query.push('\n');
        }
    }
    out
}

fn supergraph() -> Supergraph {
    Supergraph::parse(include_str!("demand/supergraph.graphql")).expect("fixture loads")
}

/// The estimate of one case, as text: the cost, or `error: <message>`.
fn run(sg: &Supergraph, case: &Case) -> (String, bool) {
    let prepared = operation::prepare(&sg.api_schema, &case.query, None)
        .unwrap_or_else(|e| panic!("{}: {e:?}", case.title));
    let vars: JsonMap = case
        .variables
        .as_deref()
        .map(|v| serde_json::from_str(v).expect("variables are JSON"))
        .unwrap_or_default();
    let vars = operation::coerce_variables(&sg.api_schema, &prepared, &vars)
        .unwrap_or_else(|e| panic!("{}: {e:?}", case.title));
    let plan = CostPlan::compile(sg, &prepared.ir, DEFAULT_LIST_SIZE);
    let values = ConditionValues::of(&prepared.ir, &vars);
    let text = match plan.estimate(sg, &vars, values) {
        Ok(cost) => {
            if let Some(fixed) = plan.fixed() {
                assert_eq!(fixed, cost, "{}: the folded estimate", case.title);
            }
            format!("{cost}")
        }
        Err(e) => format!("error: {e}"),
    };
    (text, plan.fixed().is_some())
}

#[test]
fn estimates_follow_the_rules() {
    let sg = supergraph();
    let mut table = String::new();
    let mut wrong = Vec::new();
    for case in cases() {
        let (result, fixed) = run(&sg, &case);
        // The title ends with "= N" or "error".
        let expected = case
            .title
            .rsplit_once("= ")
            .map(|(_, n)| n.to_owned())
            .or_else(|| case.title.ends_with(": error").then(|| "error".to_owned()))
            .or_else(|| case.title.rsplit_once(": ").map(|(_, n)| n.to_owned()))
            .expect("the title states the expected result");
        let got = result.split(':').next().expect("non-empty");
        if got != expected {
            wrong.push(format!("{}: got {result}", case.title));
        }
        let kind = if fixed { "fixed" } else { "per request" };
        table.push_str(&format!("{} [{kind}]\n  {result}\n", case.title));
    }
    assert!(wrong.is_empty(), "{}\n\nall:\n{table}", wrong.join("\n"));
    assert!(table.lines().count() >= 60, "every case ran");
}

#[test]
fn operations_without_variables_fold_to_one_constant() {
    let sg = supergraph();
    for case in cases().iter().filter(|c| !c.query.contains('$')) {
        let prepared = operation::prepare(&sg.api_schema, &case.query, None).expect("valid");
        let plan = CostPlan::compile(&sg, &prepared.ir, DEFAULT_LIST_SIZE);
        let invalid = case.title.ends_with("error");
        assert_eq!(plan.fixed().is_some(), !invalid, "{}", case.title);
    }
}

#[test]
fn the_default_list_size_is_configurable() {
    let sg = supergraph();
    let prepared = operation::prepare(&sg.api_schema, "{ plain { id } }", None).expect("valid");
    let plan = CostPlan::compile(&sg, &prepared.ir, 3);
    assert_eq!(plan.fixed(), Some(18.0), "3 x Product 6");
}
