//! Pure diagnosis of pods and Deployments from their own state: how far a rollout is, why a
//! gateway pod is not Ready, how a container ended. The words are meant for a human reading `kubectl get -o yaml`: which pod,
//! on which node, what happened, and where its log is.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ContainerStateTerminated, ContainerStatus, Pod, PodCondition};
use kube::ResourceExt;

/// Longest piece of a kubelet or container message quoted in a status message.
const MAX_QUOTED: usize = 400;

/// Container-waiting reasons that mean the image is not there to run.
pub const IMAGE_REASONS: [&str; 4] = [
    "ErrImageNeverPull",
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
];

/// Container-waiting reasons that mean the kubelet cannot create or start the container.
pub const START_REASONS: [&str; 3] = [
    "CreateContainerConfigError",
    "CreateContainerError",
    "RunContainerError",
];

/// Why pods are not Ready: a condition reason (CamelCase) and a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub reason: &'static str,
    pub message: String,
}

/// Characters kept from the start of a long quote; the rest of `MAX_QUOTED` comes from its
/// end, where runtimes put the root cause (`...: network is unreachable`).
const QUOTED_HEAD: usize = 120;

/// `text` on one line, at most `MAX_QUOTED` characters: a long one keeps its start and its
/// end around an ellipsis.
pub fn quote(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let chars: Vec<char> = one_line.chars().collect();
    if chars.len() <= MAX_QUOTED {
        return one_line;
    }
    let head: String = chars[..QUOTED_HEAD].iter().collect();
    let tail: String = chars[chars.len() - (MAX_QUOTED - QUOTED_HEAD)..]
        .iter()
        .collect();
    format!("{head}…{tail}")
}

/// The node a pod was scheduled to, if any.
pub fn node_of(pod: &Pod) -> Option<&str> {
    pod.spec.as_ref()?.node_name.as_deref()
}

/// `pod P on node N` (or `pod P, not scheduled`).
fn pod_and_node(pod: &Pod) -> String {
    match node_of(pod) {
        Some(node) => format!("pod {} on node {node}", pod.name_any()),
        None => format!("pod {} (not scheduled to a node)", pod.name_any()),
    }
}

/// The status of container `name` of `pod`.
pub fn container_status<'a>(pod: &'a Pod, name: &str) -> Option<&'a ContainerStatus> {
    pod.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .iter()
        .find(|c| c.name == name)
}

/// The image container `name` runs (its status, else its spec).
pub fn image_of(pod: &Pod, name: &str) -> Option<String> {
    container_status(pod, name)
        .map(|c| c.image.clone())
        .filter(|i| !i.is_empty())
        .or_else(|| {
            pod.spec
                .as_ref()?
                .containers
                .iter()
                .find(|c| c.name == name)?
                .image
                .clone()
        })
}

fn signal_name(signal: i32) -> Option<&'static str> {
    Some(match signal {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        6 => "SIGABRT",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        15 => "SIGTERM",
        _ => return None,
    })
}

/// How a container ended, e.g. `was OOMKilled (exit code 137)`, `was killed by SIGKILL
/// (exit code 137)`, `exited with code 1 (Error)`. A signal reported by the runtime wins over
/// one read from the shell convention (128 + n).
pub fn describe_exit(t: &ContainerStateTerminated) -> String {
    let code = t.exit_code;
    let reason = t.reason.as_deref().unwrap_or_default();
    let signal = t
        .signal
        .filter(|s| *s > 0)
        .or_else(|| (129..=159).contains(&code).then_some(code - 128));
    match (reason, signal.and_then(signal_name)) {
        ("OOMKilled", _) => {
            format!("was OOMKilled: it went over its memory limit (exit code {code})")
        }
        (_, Some(sig)) => format!("was killed by {sig} (exit code {code})"),
        ("" | "Error" | "Completed", None) => format!("exited with code {code}"),
        (reason, None) => format!("exited with code {code} ({reason})"),
    }
}

/// The termination message, quoted, if there is one.
pub fn termination_message(t: &ContainerStateTerminated) -> Option<String> {
    t.message
        .as_deref()
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .map(quote)
}

/// What an image problem means for the node the pod is on.
pub fn describe_image_problem(image: &str, reason: &str, message: Option<&str>) -> String {
    let what = match reason {
        "ErrImageNeverPull" => {
            format!("image {image} is not present on the node and its pull policy is Never")
        }
        "InvalidImageName" => format!("image {image} is not a valid image reference"),
        _ => format!("image {image} is not present on the node and cannot be pulled"),
    };
    // `Back-off pulling image "X": ErrImagePull: ...` names the image once more.
    let message = message.map(|m| {
        m.strip_prefix("Back-off pulling image \"")
            .and_then(|rest| rest.split_once("\": "))
            .map_or(m, |(_, cause)| cause)
    });
    match message.map(quote).filter(|m| !m.is_empty()) {
        Some(m) => format!("{what} ({reason}: {m})"),
        None => format!("{what} ({reason})"),
    }
}

/// Condition `type_` of the pod.
pub fn condition<'a>(pod: &'a Pod, type_: &str) -> Option<&'a PodCondition> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
}

/// Whether the pod's Ready condition is True.
pub fn is_ready(pod: &Pod) -> bool {
    condition(pod, "Ready").is_some_and(|c| c.status == "True")
}

/// The scheduler's verdict when it found no node for the pod.
pub fn unschedulable(pod: &Pod) -> Option<String> {
    let c = condition(pod, "PodScheduled")?;
    (c.status == "False" && c.reason.as_deref() == Some("Unschedulable")).then(|| {
        c.message
            .as_deref()
            .map(|m| quote(m.trim_end().trim_end_matches('.')))
            .unwrap_or_else(|| "no node fits it".to_owned())
    })
}

fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("Pending")
}

fn readiness_path(pod: &Pod, container: &str) -> Option<String> {
    pod.spec
        .as_ref()?
        .containers
        .iter()
        .find(|c| c.name == container)?
        .readiness_probe
        .as_ref()?
        .http_get
        .as_ref()?
        .path
        .clone()
}

/// Ranks problems: the first in this list is the one worth reading first.
const SEVERITY: [&str; 7] = [
    "ImagePullFailed",
    "ContainerCannotStart",
    "ContainerCrashing",
    "PodFailed",
    "Unschedulable",
    "ContainerNotReady",
    "PodStarting",
];

fn severity(reason: &str) -> usize {
    SEVERITY
        .iter()
        .position(|r| *r == reason)
        .unwrap_or(SEVERITY.len())
}

/// Why one gateway pod is not Ready, or `None` when it is Ready (or on its way out).
fn gateway_pod_problem(pod: &Pod, container: &str) -> Option<Problem> {
    if pod.metadata.deletion_timestamp.is_some() || is_ready(pod) || phase(pod) == "Succeeded" {
        return None;
    }
    let ns = pod.namespace().unwrap_or_else(|| "default".to_owned());
    let name = pod.name_any();
    let at = pod_and_node(pod);
    let problem = |reason, message: String| {
        Some(Problem {
            reason,
            message: format!("{at}: {message}"),
        })
    };
    if let Some(why) = unschedulable(pod) {
        return Some(Problem {
            reason: "Unschedulable",
            message: format!("pod {name} cannot be scheduled: {why}"),
        });
    }
    if phase(pod) == "Failed" {
        let status = pod.status.as_ref();
        let reason = status.and_then(|s| s.reason.as_deref()).unwrap_or("Failed");
        let message = status
            .and_then(|s| s.message.as_deref())
            .unwrap_or_default();
        return problem(
            "PodFailed",
            format!("the pod failed ({reason}: {})", quote(message)),
        );
    }
    let Some(cs) = container_status(pod, container) else {
        return problem(
            "PodStarting",
            format!("container {container} has not been created yet"),
        );
    };
    let image = image_of(pod, container).unwrap_or_else(|| "(unknown image)".to_owned());
    let state = cs.state.clone().unwrap_or_default();
    let last = cs.last_state.as_ref().and_then(|s| s.terminated.as_ref());
    if let Some(w) = &state.waiting {
        let reason = w.reason.as_deref().unwrap_or_default();
        let message = w.message.as_deref();
        if IMAGE_REASONS.contains(&reason) {
            return problem(
                "ImagePullFailed",
                describe_image_problem(&image, reason, message),
            );
        }
        if START_REASONS.contains(&reason) {
            return problem(
                "ContainerCannotStart",
                format!(
                    "container {container} cannot start ({reason}: {})",
                    quote(message.unwrap_or_default())
                ),
            );
        }
        if let Some(t) = last {
            return problem(
                "ContainerCrashing",
                crash(&ns, &name, container, cs, t, reason),
            );
        }
        return problem(
            "PodStarting",
            format!(
                "container {container} is starting ({})",
                if reason.is_empty() { "waiting" } else { reason }
            ),
        );
    }
    if let Some(t) = &state.terminated {
        return problem(
            "ContainerCrashing",
            crash(&ns, &name, container, cs, t, "exited"),
        );
    }
    let probe = readiness_path(pod, container)
        .map(|p| format!("readiness probe GET {p} failing"))
        .unwrap_or_else(|| "readiness probe failing".to_owned());
    let restarted = match (cs.restart_count, last) {
        (0, _) | (_, None) => String::new(),
        (n, Some(t)) => format!("; it restarted {n} times, last it {}", describe_exit(t)),
    };
    problem(
        "ContainerNotReady",
        format!(
            "container {container} is running but not ready ({probe}){restarted}; log: kubectl -n {ns} logs {name} -c {container}"
        ),
    )
}

fn crash(
    ns: &str,
    pod: &str,
    container: &str,
    cs: &ContainerStatus,
    t: &ContainerStateTerminated,
    state: &str,
) -> String {
    let restarts = match (state, cs.restart_count) {
        ("exited", 0) => String::new(),
        ("exited", 1) => " (restarted once before)".to_owned(),
        ("exited", n) => format!(" (restarted {n} times before)"),
        (state, 1) => format!(" and keeps restarting ({state}, 1 restart)"),
        (state, n) => format!(" and keeps restarting ({state}, {n} restarts)"),
    };
    let message = termination_message(t)
        .map(|m| format!("; last termination message: {m}"))
        .unwrap_or_else(|| "; no termination message".to_owned());
    // A container waiting to restart has its log under --previous; one that just ended has
    // not been replaced yet.
    let previous = if state == "exited" { "" } else { " --previous" };
    format!(
        "container {container} {}{restarts}{message}; log: kubectl -n {ns} logs {pod} -c {container}{previous}",
        describe_exit(t)
    )
}

/// Rollout progress of the gateway Deployment, as `kubectl rollout status` judges it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rollout {
    pub desired: i32,
    pub replicas: i32,
    pub updated: i32,
    pub ready: i32,
    pub available: i32,
    pub observed: bool,
}

impl Rollout {
    pub fn of(deployment: &Deployment) -> Self {
        let generation = deployment.metadata.generation;
        let status = deployment.status.clone().unwrap_or_default();
        Self {
            desired: deployment
                .spec
                .as_ref()
                .and_then(|s| s.replicas)
                .unwrap_or(1),
            replicas: status.replicas.unwrap_or(0),
            updated: status.updated_replicas.unwrap_or(0),
            ready: status.ready_replicas.unwrap_or(0),
            available: status.available_replicas.unwrap_or(0),
            observed: status.observed_generation.is_some()
                && status.observed_generation >= generation,
        }
    }

    pub fn complete(&self) -> bool {
        self.observed
            && self.updated >= self.desired
            && self.replicas == self.updated
            && self.available >= self.desired
    }
}

/// What a write the API server refused as invalid (422: a malformed user volume, an
/// env var it rejects) says, for the status: retrying the same objects cannot succeed,
/// only a change of the spec can.
pub fn refused_write(error: &kube::Error) -> Option<Problem> {
    match error {
        kube::Error::Api(e) if e.code == 422 => Some(Problem {
            reason: "WorkloadRefused",
            message: format!(
                "the API server refused the gateway's objects: {}",
                quote(&e.message)
            ),
        }),
        _ => None,
    }
}

/// Why a gateway Deployment's pods are not all Ready, from the pods' own state: the most
/// telling problem first, then how many other pods are not Ready. `None` when the rollout is
/// complete or no pod explains it.
pub fn rollout_problem(deployment: &Deployment, pods: &[Pod], container: &str) -> Option<Problem> {
    if Rollout::of(deployment).complete() {
        return None;
    }
    let selector = deployment
        .spec
        .as_ref()
        .and_then(|s| s.selector.match_labels.clone())
        .unwrap_or_default();
    let mut problems: Vec<Problem> = pods
        .iter()
        .filter(|p| {
            let labels = p.labels();
            selector.iter().all(|(k, v)| labels.get(k) == Some(v))
        })
        .filter_map(|p| gateway_pod_problem(p, container))
        .collect();
    problems.sort_by_key(|p| severity(p.reason));
    let mut iter = problems.into_iter();
    let mut first = iter.next()?;
    let more = iter.count();
    if more > 0 {
        let s = if more == 1 { "" } else { "s" };
        first.message = format!("{} (and {more} more pod{s} not ready)", first.message);
    }
    Some(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ended(code: i32, reason: &str, signal: Option<i32>) -> ContainerStateTerminated {
        ContainerStateTerminated {
            exit_code: code,
            reason: Some(reason.to_owned()),
            signal,
            ..ContainerStateTerminated::default()
        }
    }

    #[test]
    fn exits_are_described_by_signal_reason_or_code() {
        assert_eq!(
            describe_exit(&ended(137, "Error", None)),
            "was killed by SIGKILL (exit code 137)"
        );
        assert_eq!(
            describe_exit(&ended(137, "OOMKilled", None)),
            "was OOMKilled: it went over its memory limit (exit code 137)"
        );
        assert_eq!(
            describe_exit(&ended(143, "Error", None)),
            "was killed by SIGTERM (exit code 143)"
        );
        assert_eq!(
            describe_exit(&ended(2, "Error", Some(9))),
            "was killed by SIGKILL (exit code 2)"
        );
        assert_eq!(
            describe_exit(&ended(1, "Error", None)),
            "exited with code 1"
        );
        assert_eq!(
            describe_exit(&ended(128, "ContainerCannotRun", None)),
            "exited with code 128 (ContainerCannotRun)"
        );
    }

    #[test]
    fn quotes_are_one_line_and_bounded() {
        assert_eq!(quote("a\n  b\tc "), "a b c");
        let long = format!("{}{}", "x".repeat(MAX_QUOTED), "root cause");
        let quoted = quote(&long);
        assert_eq!(quoted.chars().count(), MAX_QUOTED + 1);
        assert!(
            quoted.ends_with("root cause") && quoted.contains('…'),
            "{quoted}"
        );
    }
}
