//! Sizing the tokio runtime: one worker per CPU the container may use.
//!
//! The CPU quota (cgroup v2 `cpu.max`, v1 `cpu.cfs_quota_us`/`cpu.cfs_period_us`) is
//! rounded up, so a 1.5-CPU pod gets 2 workers; the standard library's
//! `available_parallelism` rounds it down, so it is only the fallback for the CPU count.
//! The quota is the smallest one on the way from the process's cgroup up to the
//! hierarchy's mount (a parent's limit binds its children too).

use graphfleet_config::Config;
use std::path::{Path, PathBuf};

/// Worker threads for the gateway's runtime: `config.workers` if set, else the cgroup
/// CPU quota rounded up, capped by the CPUs this process may run on; at least 1.
/// Logs the number and why.
pub fn worker_threads(config: &Config) -> usize {
    let (threads, source) = match config.workers {
        Some(n) => (n.max(1), "workers setting".to_owned()),
        None => from_cpus(cpu_quota(), allowed_cpus()),
    };
    tracing::info!(workers = threads, source = %source, "runtime worker threads");
    threads
}

/// A CPU quota: `quota` µs of CPU time per `period` µs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    pub quota: u64,
    pub period: u64,
}

impl Quota {
    pub fn cpus(self) -> f64 {
        self.quota as f64 / self.period as f64
    }

    /// Whole CPUs, rounded up, at least 1.
    pub fn threads(self) -> usize {
        (self.quota.div_ceil(self.period.max(1)) as usize).max(1)
    }
}

/// Where a quota was found, for the start-up log.
#[derive(Debug, Clone, PartialEq)]
struct FoundQuota {
    pub quota: Quota,
    pub version: u8,
    pub dir: PathBuf,
}

/// Threads from the quota (if any) and the CPU count, with a description of the choice.
fn from_cpus(quota: Option<FoundQuota>, cpus: usize) -> (usize, String) {
    let cpus = cpus.max(1);
    match quota {
        Some(found) if found.quota.threads() < cpus => (
            found.quota.threads(),
            format!(
                "cgroup v{} CPU quota {} CPUs ({}/{} in {})",
                found.version,
                found.quota.cpus(),
                found.quota.quota,
                found.quota.period,
                found.dir.display()
            ),
        ),
        Some(found) => (
            cpus,
            format!(
                "{cpus} allowed CPUs (cgroup v{} quota {} CPUs is not lower)",
                found.version,
                found.quota.cpus()
            ),
        ),
        None => (cpus, format!("{cpus} allowed CPUs (no cgroup CPU quota)")),
    }
}

/// cgroup v2 `cpu.max`: `"max 100000"` (unlimited) or `"150000 100000"`.
fn parse_cpu_max(text: &str) -> Option<Quota> {
    let mut parts = text.split_whitespace();
    let quota = parts.next()?;
    let period = parts.next().map_or(Some(100_000), |p| p.parse().ok())?;
    if quota == "max" {
        return None;
    }
    limited(quota.parse().ok()?, period)
}

/// cgroup v1 `cpu.cfs_quota_us` (`-1` = unlimited) and `cpu.cfs_period_us`.
fn parse_cfs(quota: &str, period: &str) -> Option<Quota> {
    let quota: i64 = quota.trim().parse().ok()?;
    let period: u64 = period.trim().parse().ok()?;
    limited(u64::try_from(quota).ok()?, period)
}

fn limited(quota: u64, period: u64) -> Option<Quota> {
    (quota > 0 && period > 0).then_some(Quota { quota, period })
}

/// The process's cgroup directory for `controller` (`cpu`, `memory`) and the mount point
/// above which the hierarchy is not visible, from `/proc/self/cgroup` and
/// `/proc/self/mountinfo`. v1's controller wins over v2 on hybrid hosts, where the v2
/// tree does not have it.
pub(crate) fn cgroup_dir(
    controller: &str,
    proc_cgroup: &str,
    mountinfo: &str,
) -> Option<(u8, PathBuf, PathBuf)> {
    let mounts: Vec<Mount> = mountinfo.lines().filter_map(parse_mount).collect();
    let entries = proc_cgroup.lines().filter_map(|l| {
        let mut parts = l.splitn(3, ':');
        Some((parts.next()?, parts.next()?, parts.next()?))
    });
    let mut v2 = None;
    for (id, controllers, path) in entries {
        if id == "0" && controllers.is_empty() {
            v2 = mounts
                .iter()
                .find(|m| m.fstype == "cgroup2")
                .and_then(|m| m.dir_of(path))
                .map(|(dir, top)| (2, dir, top));
        } else if controllers.split(',').any(|c| c == controller) {
            let mount = mounts.iter().find(|m| {
                m.fstype == "cgroup" && m.super_options.split(',').any(|o| o == controller)
            });
            if let Some((dir, top)) = mount.and_then(|m| m.dir_of(path)) {
                return Some((1, dir, top));
            }
        }
    }
    v2
}

struct Mount {
    root: String,
    mount_point: String,
    fstype: String,
    super_options: String,
}

impl Mount {
    /// The directory of cgroup `path` under this mount, and the mount point itself.
    fn dir_of(&self, path: &str) -> Option<(PathBuf, PathBuf)> {
        let relative = if self.root == "/" {
            path
        } else {
            let rest = path.strip_prefix(self.root.as_str())?;
            if !(rest.is_empty() || rest.starts_with('/')) {
                return None;
            }
            rest
        };
        let top = PathBuf::from(&self.mount_point);
        Some((top.join(relative.trim_start_matches('/')), top))
    }
}

/// One `/proc/self/mountinfo` line:
/// `id parent maj:min root mount-point options [optional...] - fstype source super-options`.
fn parse_mount(line: &str) -> Option<Mount> {
    let (left, right) = line.split_once(" - ")?;
    let left: Vec<&str> = left.split(' ').collect();
    let mut right = right.split(' ');
    let fstype = right.next()?.to_owned();
    let _source = right.next()?;
    Some(Mount {
        root: unescape(left.get(3)?),
        mount_point: unescape(left.get(4)?),
        fstype,
        super_options: right.next().unwrap_or_default().to_owned(),
    })
}

/// mountinfo writes space, tab, newline and backslash as `\ooo` octal escapes.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).and_then(|d| {
            let s = std::str::from_utf8(d).ok()?;
            u8::from_str_radix(s, 8).ok()
        });
        match (bytes[i], octal) {
            (b'\\', Some(b)) => {
                out.push(b);
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The smallest quota from `dir` up to `top`; `read` returns a control file's text.
fn quota_along(
    version: u8,
    dir: &Path,
    top: &Path,
    read: impl Fn(&Path) -> Option<String>,
) -> Option<FoundQuota> {
    let mut best: Option<FoundQuota> = None;
    for level in dir.ancestors().take_while(|d| d.starts_with(top)) {
        let quota = if version == 2 {
            read(&level.join("cpu.max")).and_then(|t| parse_cpu_max(&t))
        } else {
            let quota = read(&level.join("cpu.cfs_quota_us"));
            let period = read(&level.join("cpu.cfs_period_us"));
            quota.zip(period).and_then(|(q, p)| parse_cfs(&q, &p))
        };
        if let Some(quota) = quota
            && best.as_ref().is_none_or(|b| quota.cpus() < b.quota.cpus())
        {
            best = Some(FoundQuota {
                quota,
                version,
                dir: level.to_owned(),
            });
        }
    }
    best
}

/// This process's CPU quota, if its cgroup (or a parent) has one.
fn cpu_quota() -> Option<FoundQuota> {
    let cgroup = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let (version, dir, top) = cgroup_dir("cpu", &cgroup, &mountinfo)?;
    quota_along(version, &dir, &top, |p| std::fs::read_to_string(p).ok())
}

/// CPUs this process may run on (its affinity mask), from `/proc/self/status`.
pub fn allowed_cpus() -> usize {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .and_then(count_cpu_list)
        })
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Counts a kernel CPU list such as `0-3,8,10-11`.
fn count_cpu_list(list: &str) -> Option<usize> {
    let mut count = 0;
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        count += match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.parse().ok()?, b.parse().ok()?);
                b.checked_sub(a)? + 1
            }
            None => {
                part.parse::<usize>().ok()?;
                1
            }
        };
    }
    (count > 0).then_some(count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    const MOUNTINFO_V2: &str = "\
24 30 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
29 24 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
";
    const MOUNTINFO_V1: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:9 - cgroup cgroup rw,cpu,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn cpu_max_parses_limited_and_unlimited() {
        assert_eq!(parse_cpu_max("max 100000\n"), None);
        let q = parse_cpu_max("150000 100000\n").expect("limited");
        assert_eq!((q.quota, q.period, q.threads()), (150_000, 100_000, 2));
        assert_eq!(parse_cpu_max("50000 100000").expect("limited").threads(), 1);
        assert_eq!(
            parse_cpu_max("200000 100000").expect("limited").threads(),
            2
        );
        assert_eq!(parse_cpu_max("garbage"), None);
        assert_eq!(parse_cpu_max(""), None);
    }

    #[test]
    fn cfs_parses_limited_and_unlimited() {
        assert_eq!(parse_cfs("-1\n", "100000\n"), None);
        let q = parse_cfs("250000\n", "100000\n").expect("limited");
        assert_eq!(q.threads(), 3);
        assert_eq!(parse_cfs("x", "100000"), None);
        assert_eq!(parse_cfs("100000", "0"), None);
    }

    #[test]
    fn v2_nested_path_maps_under_the_mount() {
        let cgroup = "0::/kubepods.slice/kubepods-burstable.slice/cri-containerd-abc.scope\n";
        let (v, dir, top) = cgroup_dir("cpu", cgroup, MOUNTINFO_V2).expect("found");
        assert_eq!(v, 2);
        assert_eq!(top, PathBuf::from("/sys/fs/cgroup"));
        assert_eq!(
            dir,
            PathBuf::from(
                "/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/cri-containerd-abc.scope"
            )
        );
    }

    #[test]
    fn v1_cpu_controller_wins_on_hybrid_hosts() {
        let cgroup = "4:memory:/x\n3:cpu,cpuacct:/docker/abc\n0::/\n";
        let (v, dir, _) = cgroup_dir("cpu", cgroup, MOUNTINFO_V1).expect("found");
        assert_eq!(v, 1);
        assert_eq!(dir, PathBuf::from("/sys/fs/cgroup/cpu,cpuacct/docker/abc"));
    }

    #[test]
    fn a_namespaced_mount_root_is_stripped() {
        // Without a cgroup namespace the container sees its own cgroup as the mount root.
        let mountinfo = "32 31 0:29 /docker/abc /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n";
        let (_, dir, top) = cgroup_dir("cpu", "2:cpu:/docker/abc\n", mountinfo).expect("found");
        assert_eq!(dir, top);
        assert_eq!(cgroup_dir("cpu", "2:cpu:/other\n", mountinfo), None);
    }

    #[test]
    fn escaped_mount_points_are_decoded() {
        let mountinfo = "29 24 0:26 / /sys/fs/cg\\040roup rw - cgroup2 cgroup2 rw\n";
        let (_, dir, _) = cgroup_dir("cpu", "0::/a\n", mountinfo).expect("found");
        assert_eq!(dir, PathBuf::from("/sys/fs/cg roup/a"));
    }

    #[test]
    fn the_tightest_quota_on_the_way_up_wins() {
        let files = HashMap::from([
            ("/cg/pod/cpu.max", "max 100000"),
            ("/cg/pod/ctr/cpu.max", "300000 100000"),
            ("/cg/cpu.max", "150000 100000"),
        ]);
        let read = |p: &Path| files.get(p.to_str()?).map(|s| (*s).to_owned());
        let found =
            quota_along(2, Path::new("/cg/pod/ctr"), Path::new("/cg"), read).expect("found");
        assert_eq!(found.dir, PathBuf::from("/cg"));
        assert_eq!(found.quota.threads(), 2);
        let none = quota_along(2, Path::new("/cg/pod"), Path::new("/cg/pod"), read);
        assert_eq!(none, None, "max is unlimited");
    }

    #[test]
    fn v1_quota_files_are_read_in_pairs() {
        let files = HashMap::from([
            ("/cpu/a/cpu.cfs_quota_us", "-1"),
            ("/cpu/a/cpu.cfs_period_us", "100000"),
            ("/cpu/cpu.cfs_quota_us", "50000"),
            ("/cpu/cpu.cfs_period_us", "100000"),
        ]);
        let read = |p: &Path| files.get(p.to_str()?).map(|s| (*s).to_owned());
        let found = quota_along(1, Path::new("/cpu/a"), Path::new("/cpu"), read).expect("found");
        assert_eq!(found.quota.threads(), 1);
    }

    #[test]
    fn choice_is_capped_by_cpus_and_explained() {
        let found = |quota| FoundQuota {
            quota: Quota {
                quota,
                period: 100_000,
            },
            version: 2,
            dir: PathBuf::from("/sys/fs/cgroup"),
        };
        let (n, why) = from_cpus(Some(found(150_000)), 4);
        assert_eq!(n, 2);
        assert!(why.contains("cgroup v2 CPU quota 1.5 CPUs"), "{why}");
        assert_eq!(from_cpus(Some(found(800_000)), 4).0, 4);
        assert_eq!(from_cpus(None, 3).0, 3);
        assert_eq!(from_cpus(None, 0).0, 1);
    }

    #[test]
    fn cpu_lists_count() {
        assert_eq!(count_cpu_list("0-3,8,10-11\n"), Some(7));
        assert_eq!(count_cpu_list("0"), Some(1));
        assert_eq!(count_cpu_list(""), None);
        assert_eq!(count_cpu_list("3-1"), None);
    }

    #[test]
    fn workers_setting_wins() {
        let config = Config {
            workers: Some(7),
            ..Config::default()
        };
        assert_eq!(worker_threads(&config), 7);
    }
}
