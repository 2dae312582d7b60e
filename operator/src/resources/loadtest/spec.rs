//! The spec rules: which targets and scenario, the target URL, what each executor supports,
//! the duration and the time limit a segment gets.

use super::names::{TARGET_LABEL, job_name};
use std::collections::BTreeMap;
use std::time::Duration;

use graphfleet_bench_model::duration;
use graphfleet_bench_model::duration::DurationError;
use graphfleet_bench_model::scenarios::{self, UniqueQueryError};
use kube::ResourceExt;

use graphfleet_api::{ExpectedResponse, LoadTest, LoadTestExecutor, LoadTestTarget};

/// Why a LoadTest cannot be turned into Jobs (reported in status; retrying will not help).
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SpecError {
    #[error("unknown scenario {0:?}; built-in scenarios: {1}")]
    UnknownScenario(String, String),
    #[error("scenario {0:?}: {1}")]
    BadScenario(String, UniqueQueryError),
    #[error("set exactly one of target or targets, each with exactly one of gatewayRef or url")]
    NoTarget,
    #[error("spec.targets names {0:?} twice; target names must be unique")]
    DuplicateTarget(String),
    #[error("set exactly one of scenario or script")]
    NoScript,
    #[error("spec.duration: {0}")]
    Duration(#[from] DurationError),
    #[error("spec.duration {0:?} is zero; a load test needs a duration above 0")]
    ZeroDuration(String),
    #[error("spec.duration {0:?} is too long")]
    DurationTooLong(String),
    #[error("spec.{0}")]
    Threshold(#[from] crate::thresholds::ThresholdError),
    #[error("spec.{0} is k6-only; executor gatling does not support it")]
    NotForGatling(&'static str),
    #[error("{0}")]
    ReservedKeys(String),
}

impl SpecError {
    /// The reason of the status condition reporting this error.
    pub fn reason(&self) -> &'static str {
        match self {
            SpecError::UnknownScenario(..) | SpecError::BadScenario(..) => "UnknownScenario",
            SpecError::NoTarget => "NoTarget",
            SpecError::DuplicateTarget(_) => "DuplicateTarget",
            SpecError::NoScript => "NoScript",
            SpecError::Duration(_) | SpecError::ZeroDuration(_) | SpecError::DurationTooLong(_) => {
                "InvalidDuration"
            }
            SpecError::Threshold(_) => crate::thresholds::INVALID,
            SpecError::NotForGatling(_) => "UnsupportedByExecutor",
            SpecError::ReservedKeys(_) => "ReservedKeys",
        }
    }
}

/// Names of the built-in scenarios: graphfleet-bench's (`graphfleet_bench_model::scenarios`).
pub fn scenario_names() -> Vec<&'static str> {
    scenarios::names()
}

pub(super) fn scenario(name: &str) -> Result<scenarios::Scenario, SpecError> {
    scenarios::find(name)
        .ok_or_else(|| SpecError::UnknownScenario(name.to_owned(), scenario_names().join(", ")))
}

/// One target of a LoadTest, resolved: `spec.target`, or one of `spec.targets`.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// `None` for `spec.target`: its Jobs are `<loadtest>-<i>` without a target label, as
    /// before `targets` existed.
    pub name: Option<String>,
    /// The GraphQL endpoint under load.
    pub url: String,
    /// The answer each request must get: the target's own `expect`, else the template's.
    pub expect: Option<ExpectedResponse>,
}

impl Target {
    /// The label value its Jobs and pods carry under [`TARGET_LABEL`], if any.
    pub fn label(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// Whether a Job or pod with these labels belongs to this target.
    pub fn owns(&self, labels: &BTreeMap<String, String>) -> bool {
        labels.get(TARGET_LABEL).map(String::as_str) == self.label()
    }
}

/// Every target in the order they run: `spec.target` alone, or each of `spec.targets`.
pub fn targets(lt: &LoadTest) -> Result<Vec<Target>, SpecError> {
    match (&lt.spec.target, &lt.spec.targets) {
        (Some(t), None) => Ok(vec![Target {
            name: None,
            url: resolve_url(lt, t)?,
            expect: lt.spec.expect.clone(),
        }]),
        (None, Some(many)) if !many.is_empty() => {
            let mut out: Vec<Target> = Vec::with_capacity(many.len());
            for t in many {
                if out
                    .iter()
                    .any(|o| o.name.as_deref() == Some(t.name.as_str()))
                {
                    return Err(SpecError::DuplicateTarget(t.name.clone()));
                }
                out.push(Target {
                    name: Some(t.name.clone()),
                    url: resolve_url(lt, &t.target())?,
                    expect: t.expect.clone().or_else(|| lt.spec.expect.clone()),
                });
            }
            Ok(out)
        }
        _ => Err(SpecError::NoTarget),
    }
}

/// The GraphQL endpoint under load with `spec.target`: the URL, or a GraphGateway's Service
/// (port 80). With `spec.targets`, see [`targets`].
pub fn target_url(lt: &LoadTest) -> Result<String, SpecError> {
    resolve_url(lt, lt.spec.target.as_ref().ok_or(SpecError::NoTarget)?)
}

/// The endpoint of one target: the URL, or a GraphGateway's Service (port 80).
fn resolve_url(lt: &LoadTest, target: &LoadTestTarget) -> Result<String, SpecError> {
    match (&target.gateway_ref, &target.url) {
        (Some(gw), None) => {
            let ns = gw
                .namespace
                .clone()
                .or_else(|| lt.namespace())
                .unwrap_or_else(|| "default".to_owned());
            Ok(service_url(&gw.name, &ns))
        }
        (None, Some(url)) => Ok(url.clone()),
        _ => Err(SpecError::NoTarget),
    }
}

/// The in-cluster GraphQL endpoint of a gateway Service `service` in `ns` (a GraphGateway's
/// own, or its canary's).
pub fn service_url(service: &str, ns: &str) -> String {
    let port = crate::resources::gateway::SERVICE_PORT;
    format!("http://{service}.{ns}.svc:{port}/graphql")
}

/// Name of the Job of segment `index` of `target`: `<lt>-<i>`, or `<lt>-<target>-<i>` for
/// one of `spec.targets`.
pub fn target_job_name(lt: &str, target: &Target, index: i32) -> String {
    match target.label() {
        Some(name) => format!("{lt}-{name}-{index}"),
        None => job_name(lt, index),
    }
}

/// What `executor: gatling` cannot do (the CRD's rules say the same; they may be bypassed).
pub(super) fn check_executor(lt: &LoadTest) -> Result<(), SpecError> {
    let spec = &lt.spec;
    if spec.executor.is_k6() {
        return Ok(());
    }
    if spec.script.is_some() {
        return Err(SpecError::NotForGatling("script"));
    }
    if spec.synchronized_start == Some(true) {
        return Err(SpecError::NotForGatling("synchronizedStart"));
    }
    if spec.expect.is_some() || spec.targets.iter().flatten().any(|t| t.expect.is_some()) {
        return Err(SpecError::NotForGatling("expect"));
    }
    if spec.thresholds.as_ref().is_some_and(|t| t.abort_on_fail) {
        return Err(SpecError::NotForGatling("thresholds.abortOnFail"));
    }
    // The simulation sends the scenario's document as it is: no new one per request.
    if let Some(name) = &spec.scenario
        && scenario(name).is_ok_and(|s| s.unique)
    {
        return Err(SpecError::NotForGatling(
            "scenario many-plans-no-cache (a new document per request)",
        ));
    }
    // The simulation posts queries; the fan-out holds WebSocket subscriptions.
    if spec.scenario.as_deref() == Some(scenarios::SUBSCRIPTIONS) {
        return Err(SpecError::NotForGatling(
            "scenario subscriptions (WebSocket subscriptions)",
        ));
    }
    Ok(())
}

/// The pod labels and annotations the operator keeps for itself (the CRD refuses them too).
pub(super) fn check_pod_options(lt: &LoadTest) -> Result<(), SpecError> {
    let problems = crate::resources::pod_options::problems(&lt.spec.pod);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(SpecError::ReservedKeys(problems.join("; ")))
    }
}

/// The image of the LoadTest's executor.
pub fn executor_image<'a>(lt: &LoadTest, k6_image: &'a str, gatling_image: &'a str) -> &'a str {
    match lt.spec.executor {
        LoadTestExecutor::K6 => k6_image,
        LoadTestExecutor::Gatling => gatling_image,
    }
}

/// Time a LoadTest may take beyond its `duration`: pod start-up, k6's graceful stop and the
/// summary. Past `duration` plus this margin the segment fails instead of staying Running.
pub const STARTUP_AND_SUMMARY_MARGIN: Duration = Duration::from_secs(120);

/// A duration as the CRD admits it (`250ms`, `30s`, `1m30s`, `1h2m3.5s`):
/// `graphfleet_bench_model::duration`, the grammar scenario.js and graphfleet-bench read too.
pub(super) fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    duration::parse(text)
}

/// `1m30s`-style rendering of whole seconds.
pub fn format_duration(d: Duration) -> String {
    let secs = d.as_secs();
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    let mut out = String::new();
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if m > 0 {
        out.push_str(&format!("{m}m"));
    }
    if s > 0 || out.is_empty() {
        out.push_str(&format!("{s}s"));
    }
    out
}

/// How long a segment may run, from its Job's start: the LoadTest's duration plus
/// [`STARTUP_AND_SUMMARY_MARGIN`].
pub fn time_limit(lt: &LoadTest) -> Result<Duration, SpecError> {
    let text = &lt.spec.duration;
    let d = parse_duration(text)?;
    if d.is_zero() {
        return Err(SpecError::ZeroDuration(text.clone()));
    }
    // Job deadlines are i64 seconds; far beyond any real test anyway.
    d.checked_add(STARTUP_AND_SUMMARY_MARGIN)
        .filter(|d| d.as_secs() < i64::MAX as u64 / 2)
        .ok_or_else(|| SpecError::DurationTooLong(text.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_as_the_crd_documents_and_print() {
        let ms = |s: &str| parse_duration(s).map(|d| d.as_millis()).ok();
        assert_eq!(ms("30s"), Some(30_000));
        assert_eq!(ms("5m"), Some(300_000));
        assert_eq!(ms("1h30m"), Some(5_400_000));
        assert_eq!(ms("1m500ms"), Some(60_500));
        assert_eq!(ms("1h2m3.5s"), Some(3_723_500));
        assert_eq!(ms("250ms"), Some(250));
        for bad in ["", "30", "s", "1x", "1.s", "1us", "99999999999999999999h"] {
            assert!(parse_duration(bad).is_err(), "{bad:?}");
        }
        assert_eq!(format_duration(Duration::from_secs(150)), "2m30s");
        assert_eq!(format_duration(Duration::from_secs(3600)), "1h");
        assert_eq!(format_duration(Duration::ZERO), "0s");
    }

    #[test]
    fn the_crd_validates_durations_with_the_parsers_pattern() {
        use graphfleet_api::{LoadTest, duration_rule};
        use kube::CustomResourceExt;
        let crd = serde_json::to_value(LoadTest::crd()).expect("CRD serializes");
        let rules = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
            ["properties"]["duration"]["x-kubernetes-validations"];
        assert_eq!(rules[0]["rule"], duration_rule(), "{rules}");
        assert!(duration_rule().contains(duration::PATTERN));
        // CEL string literals have no `\.` escape: the API server would refuse the CRD.
        assert!(!duration_rule().contains('\\'), "{rules}");
        assert_eq!(rules[1]["rule"], graphfleet_api::nonzero_duration_rule());
    }
}
