//! Child processes: CPU placement (cgroup quota and taskset), logs, shutdown.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, bail};
use tokio::process::{Child, Command};

/// Quotes `s` for `sh`.
pub fn sh_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c))
    {
        return s.to_owned();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Which cores the gateway and everything else (k6, subgraphs) run on.
#[derive(Debug, Clone)]
pub struct Placement {
    /// The CPU budget of the gateway, in cores.
    pub cpus: f64,
    /// taskset list for the gateway (e.g. "0").
    pub gateway: Option<String>,
    /// taskset list for the load generator and the subgraphs, when cores are left over.
    pub others: Option<String>,
}

impl Placement {
    /// Gives the gateway the first ceil(cpus) allowed cores and the rest to everything else.
    pub fn new(cpus: f64) -> anyhow::Result<Self> {
        if !(cpus.is_finite() && cpus > 0.0) {
            bail!("--cpus must be a positive number of cores, got {cpus}");
        }
        let allowed = allowed_cpus().unwrap_or_default();
        if allowed.len() < 2 {
            return Ok(Placement {
                cpus,
                gateway: None,
                others: None,
            });
        }
        let n = (cpus.ceil() as usize).clamp(1, allowed.len());
        let list = |ids: &[usize]| {
            ids.iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(",")
        };
        let others = (n < allowed.len()).then(|| list(&allowed[n..]));
        Ok(Placement {
            cpus,
            gateway: Some(list(&allowed[..n])),
            others,
        })
    }

    pub fn describe(&self) -> String {
        let g = self.gateway.as_deref().unwrap_or("any");
        let o = self.others.as_deref().unwrap_or("shared");
        format!("gateway on CPU {g}, load generator and subgraphs on CPU {o}")
    }
}

/// The CPUs this process may run on (`Cpus_allowed_list` of /proc/self/status).
fn allowed_cpus() -> Option<Vec<usize>> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?
        .trim();
    parse_cpu_list(list)
}

pub fn parse_cpu_list(list: &str) -> Option<Vec<usize>> {
    let mut out = Vec::new();
    for part in list.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => out.extend(a.trim().parse::<usize>().ok()?..=b.trim().parse().ok()?),
            None => out.push(part.trim().parse().ok()?),
        }
    }
    Some(out)
}

/// A child cgroup with a CPU quota; removed on drop (once empty).
pub struct Cgroup {
    dir: PathBuf,
    pub kind: &'static str,
}

impl Cgroup {
    /// Creates `graphfleet-bench-<pid>-<tag>` with a quota of `cpus` cores: cgroup v2
    /// `cpu.max` when the cpu controller is available there, else v1 `cpu.cfs_quota_us`.
    /// None when neither is writable (the caller falls back to taskset alone).
    pub fn create(tag: &str, cpus: f64) -> Option<Cgroup> {
        let name = format!("graphfleet-bench-{}-{tag}", std::process::id());
        let period: u64 = 100_000;
        let quota = ((cpus * period as f64).round() as u64).max(1000);
        let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        for root in ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"] {
            let root = Path::new(root);
            if !root.join("cgroup.controllers").is_file() {
                continue;
            }
            let Some(rel) = own.lines().find_map(|l| l.strip_prefix("0::")) else {
                continue;
            };
            let parent = root.join(rel.trim_start_matches('/'));
            let _ = std::fs::write(parent.join("cgroup.subtree_control"), "+cpu");
            let dir = parent.join(&name);
            if std::fs::create_dir(&dir).is_err() {
                continue;
            }
            if std::fs::write(dir.join("cpu.max"), format!("{quota} {period}")).is_ok() {
                return Some(Cgroup {
                    dir,
                    kind: "cgroup v2 cpu.max",
                });
            }
            let _ = std::fs::remove_dir(&dir);
        }
        let rel = own.lines().find_map(|l| {
            let mut parts = l.splitn(3, ':');
            let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            controllers.split(',').any(|c| c == "cpu").then_some(path)
        })?;
        let dir = Path::new("/sys/fs/cgroup/cpu")
            .join(rel.trim_start_matches('/'))
            .join(&name);
        std::fs::create_dir(&dir).ok()?;
        let written = std::fs::write(dir.join("cpu.cfs_period_us"), period.to_string())
            .and_then(|()| std::fs::write(dir.join("cpu.cfs_quota_us"), quota.to_string()));
        if written.is_err() {
            let _ = std::fs::remove_dir(&dir);
            return None;
        }
        Some(Cgroup {
            dir,
            kind: "cgroup v1 cpu.cfs_quota_us",
        })
    }

    pub fn procs(&self) -> PathBuf {
        self.dir.join("cgroup.procs")
    }

    /// CFS throttling so far: (periods throttled, seconds throttled), from `cpu.stat`.
    pub fn throttling(&self) -> Option<(u64, f64)> {
        let stat = std::fs::read_to_string(self.dir.join("cpu.stat")).ok()?;
        let value = |key: &str| {
            stat.lines().find_map(|l| {
                l.strip_prefix(key)?
                    .strip_prefix(' ')?
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
        };
        let throttled = match value("throttled_usec") {
            Some(us) => us as f64 / 1e6,
            None => value("throttled_time")? as f64 / 1e9,
        };
        Some((value("nr_throttled")?, throttled))
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        // The members may take a moment to be reaped after they were killed.
        for _ in 0..20 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// What to start: a shell command line, extra environment, where it may run.
pub struct Launch<'a> {
    pub command: String,
    pub env: Vec<(String, String)>,
    pub cwd: Option<&'a Path>,
    pub cpus: Option<&'a str>,
    pub cgroup: Option<&'a Cgroup>,
    pub log: &'a Path,
}

/// Starts `launch.command` under `sh`, joining the cgroup before `exec` (so every thread
/// the program ever creates is inside), pinned with taskset, output appended to the log.
pub fn spawn(launch: &Launch<'_>) -> anyhow::Result<Child> {
    let mut script = String::new();
    if let Some(cg) = launch.cgroup {
        script.push_str(&format!(
            "echo $$ > {} || exit 97; ",
            sh_quote(&cg.procs().to_string_lossy())
        ));
    }
    script.push_str("exec ");
    if let Some(cpus) = launch.cpus {
        script.push_str(&format!("taskset -c {} ", sh_quote(cpus)));
    }
    script.push_str(&launch.command);
    if let Some(dir) = launch.log.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(launch.log)
        .with_context(|| format!("opening {}", launch.log.display()))?;
    let err = log.try_clone().context("duplicating the log handle")?;
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(&script)
        .envs(launch.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err)
        .kill_on_drop(true);
    if let Some(dir) = launch.cwd {
        cmd.current_dir(dir);
    }
    cmd.spawn().with_context(|| format!("starting: {script}"))
}

/// Kills a child and every descendant it started, then reaps it (bounded).
pub async fn stop(child: &mut Child) {
    if let Some(pid) = child.id() {
        for p in crate::sampler::descendants(pid) {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &p.to_string()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
    let _ = child.start_kill();
    let _ = tokio::time::timeout(Duration::from_secs(10), child.wait()).await;
}

/// The last `n` lines of a log file, for error messages.
pub fn log_tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_for_sh() {
        assert_eq!(sh_quote("/a/b-c.graphql"), "/a/b-c.graphql");
        assert_eq!(sh_quote("a b"), "'a b'");
        assert_eq!(sh_quote("it's"), r"'it'\''s'");
        assert_eq!(sh_quote(""), "''");
    }

    #[test]
    fn parses_cpu_lists() {
        assert_eq!(parse_cpu_list("0-1"), Some(vec![0, 1]));
        assert_eq!(parse_cpu_list("0,2-4,7"), Some(vec![0, 2, 3, 4, 7]));
        assert_eq!(parse_cpu_list("x"), None);
    }

    #[test]
    fn rejects_a_non_positive_budget() {
        assert!(Placement::new(0.0).is_err());
        assert!(Placement::new(f64::NAN).is_err());
    }
}
