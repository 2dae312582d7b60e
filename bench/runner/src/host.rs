//! Facts about this machine and checkout for the report's "System Information".

use std::path::Path;

use serde::{Deserialize, Serialize};

/// The machine a measurement ran on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    pub cpu: String,
    pub cores: usize,
    pub memory: String,
    pub kernel: String,
}

impl Machine {
    pub fn this() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        Machine {
            cpu: cpu_model(&cpuinfo),
            cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
            memory: memory_total(&meminfo),
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .map_or("unknown".into(), |s| s.trim().to_owned()),
        }
    }
}

fn cpu_model(cpuinfo: &str) -> String {
    cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|l| l.trim_start_matches([' ', '\t', ':']).to_owned())
        .unwrap_or_else(|| "unknown".into())
}

fn memory_total(meminfo: &str) -> String {
    meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or("unknown".into(), |kb| format!("{:.1} GiB", kb / 1048576.0))
}

/// Standard output of a command that succeeded, trimmed.
pub async fn output(program: &str, args: &[&str]) -> Option<String> {
    let out = tokio::process::Command::new(program)
        .args(args)
        .output()
        .await
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// HEAD of the checkout, marked when the working tree has uncommitted changes.
pub async fn git_commit(repo: &Path) -> String {
    let repo = repo.to_string_lossy().into_owned();
    let commit = output("git", &["-C", &repo, "rev-parse", "HEAD"])
        .await
        .unwrap_or_else(|| "unknown".into());
    let dirty = output("git", &["-C", &repo, "status", "--porcelain"])
        .await
        .is_some_and(|s| !s.is_empty());
    if dirty {
        format!("{commit} (working tree has uncommitted changes)")
    } else {
        commit
    }
}

pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// Wall clock, seconds since the Unix epoch.
pub fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_cpu_and_memory() {
        assert_eq!(
            cpu_model("processor\t: 0\nmodel name\t: AMD EPYC 7B13\n"),
            "AMD EPYC 7B13"
        );
        assert_eq!(memory_total("MemTotal:       2097152 kB\n"), "2.0 GiB");
        assert_eq!(memory_total(""), "unknown");
    }
}
