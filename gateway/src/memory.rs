//! The size of the gateway-wide memory budget ([`crate::executor::memory`]):
//! `limits.max_inflight_bytes`, or when it is 0 half the container's memory limit (the
//! tightest cgroup `memory.max`, v1 `memory.limit_in_bytes`, from the process's cgroup
//! up to the mount), or [`NO_LIMIT_DEFAULT`] without one. Never below twice
//! `limits.max_response_bytes`: one request holds its subgraph responses and the
//! response written from them at once, and alone it must always fit.

use crate::executor::memory::MemoryBudget;
use graphfleet_config::Config;
use std::path::Path;

/// The budget when neither the setting nor a container limit gives one: what a
/// 768Mi container would derive, so a burst of responses at the cap stays under 512 MiB
/// of RSS on a host or VM with no limit (1 GiB let one reach 1.1 GiB).
pub const NO_LIMIT_DEFAULT: usize = 384 * 1024 * 1024;

/// Share of the container's memory limit the budget gets: the rest is the process
/// itself, what the budget does not count (parsed values, plans) and the allocator's
/// slack.
const SHARE_OF_LIMIT: f64 = 0.5;

/// A v1 limit this large means none (the kernel writes about 2^63 rounded to a page).
const V1_UNLIMITED: u64 = 1 << 62;

/// The budget for `config`; logs its size and why.
pub fn budget(config: &Config) -> MemoryBudget {
    let limits = &config.limits;
    let container = (limits.max_inflight_bytes == 0)
        .then(container_limit)
        .flatten();
    let (bytes, source) = size(
        limits.max_inflight_bytes,
        limits.max_response_bytes,
        container,
    );
    tracing::info!(bytes, source = %source, "in-flight memory budget");
    MemoryBudget::new(bytes)
}

/// The budget's size from the setting, `limits.max_response_bytes` and the container's
/// memory limit, with a description of the choice.
fn size(setting: usize, max_response_bytes: usize, container: Option<u64>) -> (usize, String) {
    if setting > 0 {
        // Config validation keeps an explicit one at least the floor.
        return (setting, "limits.max_inflight_bytes".to_owned());
    }
    let floor = max_response_bytes.saturating_mul(2);
    let (derived, why) = match container {
        Some(limit) => {
            let share = (limit as f64 * SHARE_OF_LIMIT) as u64;
            (
                usize::try_from(share).unwrap_or(usize::MAX),
                format!("half the container's memory limit of {limit} bytes"),
            )
        }
        None => (NO_LIMIT_DEFAULT, "no container memory limit".to_owned()),
    };
    if derived < floor {
        let why = format!(
            "{why} is below twice limits.max_response_bytes, which one request may hold; raised to that (lower limits.max_response_bytes for this container)"
        );
        tracing::warn!("in-flight memory budget: {why}");
        return (floor, why);
    }
    (derived, why)
}

/// This process's memory limit, if its cgroup (or a parent) has one.
fn container_limit() -> Option<u64> {
    let cgroup = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let (version, dir, top) = crate::runtime::cgroup_dir("memory", &cgroup, &mountinfo)?;
    limit_along(version, &dir, &top, |p| std::fs::read_to_string(p).ok())
}

/// The smallest memory limit from `dir` up to `top`; `read` returns a control file's text.
fn limit_along(
    version: u8,
    dir: &Path,
    top: &Path,
    read: impl Fn(&Path) -> Option<String>,
) -> Option<u64> {
    let file = if version == 2 {
        "memory.max"
    } else {
        "memory.limit_in_bytes"
    };
    dir.ancestors()
        .take_while(|d| d.starts_with(top))
        .filter_map(|level| read(&level.join(file)))
        .filter_map(|text| parse_limit(&text))
        .min()
}

/// `memory.max` (`max` is none) or `memory.limit_in_bytes` (a huge value is none).
fn parse_limit(text: &str) -> Option<u64> {
    let text = text.trim();
    if text == "max" {
        return None;
    }
    text.parse()
        .ok()
        .filter(|&n: &u64| n > 0 && n < V1_UNLIMITED)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::path::PathBuf;

    const MIB: usize = 1024 * 1024;

    #[test]
    fn limits_parse() {
        assert_eq!(parse_limit("max\n"), None);
        assert_eq!(parse_limit("536870912\n"), Some(512 << 20));
        assert_eq!(parse_limit("9223372036854771712\n"), None, "v1 unlimited");
        assert_eq!(parse_limit("0"), None);
        assert_eq!(parse_limit("garbage"), None);
    }

    #[test]
    fn the_tightest_limit_on_the_way_up_wins() {
        let files = HashMap::from([
            ("/cg/pod/ctr/memory.max", "max"),
            ("/cg/pod/memory.max", "536870912"),
            ("/cg/memory.max", "1073741824"),
        ]);
        let read = |p: &Path| files.get(p.to_str()?).map(|s| (*s).to_owned());
        let found = limit_along(2, Path::new("/cg/pod/ctr"), Path::new("/cg"), read);
        assert_eq!(found, Some(512 << 20));
        let v1 = HashMap::from([("/mem/memory.limit_in_bytes", "268435456")]);
        let read = |p: &Path| v1.get(p.to_str()?).map(|s| (*s).to_owned());
        assert_eq!(
            limit_along(1, Path::new("/mem/a"), Path::new("/mem"), read),
            Some(256 << 20)
        );
        assert_eq!(
            limit_along(2, &PathBuf::from("/none"), Path::new("/none"), |_| None),
            None
        );
    }

    #[test]
    fn v1_memory_controller_is_found() {
        let mountinfo =
            "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n";
        let (v, dir, _) = crate::runtime::cgroup_dir("memory", "4:memory:/docker/abc\n", mountinfo)
            .expect("found");
        assert_eq!(v, 1);
        assert_eq!(dir, PathBuf::from("/sys/fs/cgroup/memory/docker/abc"));
    }

    #[test]
    fn the_size_follows_the_setting_the_container_or_the_default() {
        let (bytes, why) = size(300 * MIB, 64 * MIB, Some(1 << 30));
        assert_eq!(
            (bytes, why.as_str()),
            (300 * MIB, "limits.max_inflight_bytes")
        );
        let (bytes, why) = size(0, 64 * MIB, Some(512 << 20));
        assert_eq!(bytes, 256 * MIB, "half a 512Mi limit");
        assert!(why.contains("536870912"), "{why}");
        assert_eq!(size(0, 64 * MIB, None).0, NO_LIMIT_DEFAULT);
    }

    #[test]
    fn a_derived_size_is_never_below_what_one_request_may_hold() {
        // 128Mi container: half is 64 MiB, but one request may hold 2 × 64 MiB.
        let (bytes, why) = size(0, 64 * MIB, Some(128 << 20));
        assert_eq!(bytes, 128 * MIB);
        assert!(why.contains("raised"), "{why}");
        assert_eq!(size(0, usize::MAX, None).0, usize::MAX, "saturates");
    }
}
