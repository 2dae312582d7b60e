//! CPU and memory of Kubernetes pods, read on the node's host from their cgroups: the pods
//! of the local cluster run on this machine, so `cpuacct.usage` (nanoseconds) and the
//! memory controller give exact numbers without metrics-server.
//!
//! A [`Tracker`] follows a changing set of pods (a rollout replaces them) and folds them into
//! one series: CPU seconds used since each pod was first seen, summed, and the memory
//! working set of the pods present, summed. `graphfleet-bench sample-pods` writes that series
//! with wall-clock timestamps ([`Resources`]), so a report can cut out any LoadTest's window.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

use crate::host::Machine;
use crate::sampler::{Sample, Usage};

/// What the memory numbers are.
pub const MEMORY_METRIC: &str = "cgroup working set (memory usage − inactive file cache, as kubelet and `kubectl top` count it)";

/// Where one pod's counters are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "version", rename_all = "lowercase")]
pub enum PodCgroup {
    /// cgroup v1: the pod's directory in the cpuacct and memory hierarchies.
    V1 { cpuacct: PathBuf, memory: PathBuf },
    /// cgroup v2: one directory.
    V2 { dir: PathBuf },
}

/// The directory names a pod's cgroup may have: `pod<uid>` (cgroupfs driver) or
/// `kubepods-<qos>-pod<uid with _>.slice` (systemd driver).
fn is_pod_dir(name: &str, uid: &str) -> bool {
    name == format!("pod{uid}")
        || (name.ends_with(".slice") && name.contains(&format!("pod{}", uid.replace('-', "_"))))
}

/// Finds the directory of pod `uid` below `root` (depth-first, at most 6 levels: node root,
/// kubepods, qos class, pod, plus slack for nested cgroup roots).
fn find_pod_dir(root: &Path, uid: &str) -> Option<PathBuf> {
    fn walk(dir: &Path, uid: &str, depth: usize) -> Option<PathBuf> {
        if depth == 0 {
            return None;
        }
        let mut subdirs: Vec<PathBuf> = std::fs::read_dir(dir)
            .ok()?
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.path())
            .collect();
        subdirs.sort();
        for sub in &subdirs {
            if sub
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| is_pod_dir(n, uid))
            {
                return Some(sub.clone());
            }
        }
        subdirs.iter().find_map(|sub| walk(sub, uid, depth - 1))
    }
    walk(root, uid, 6)
}

impl PodCgroup {
    /// The cgroup of pod `uid` on this machine, under `sys` (normally `/sys/fs/cgroup`).
    pub fn find(sys: &Path, uid: &str) -> anyhow::Result<PodCgroup> {
        let cpuacct = sys.join("cpuacct");
        if cpuacct.join("cpuacct.usage").is_file() {
            let dir = find_pod_dir(&cpuacct, uid).with_context(|| {
                format!(
                    "no cgroup pod{uid} under {} (does the pod run on this machine?)",
                    cpuacct.display()
                )
            })?;
            let rel = dir.strip_prefix(&cpuacct).context("cgroup path")?;
            let memory = sys.join("memory").join(rel);
            if !memory.is_dir() {
                bail!("{} has no memory counterpart", dir.display());
            }
            return Ok(PodCgroup::V1 {
                cpuacct: dir,
                memory,
            });
        }
        if sys.join("cgroup.controllers").is_file() {
            let dir = find_pod_dir(sys, uid).with_context(|| {
                format!(
                    "no cgroup for pod {uid} under {} (does the pod run on this machine?)",
                    sys.display()
                )
            })?;
            return Ok(PodCgroup::V2 { dir });
        }
        bail!(
            "{} has neither cgroup v1 cpuacct nor cgroup v2",
            sys.display()
        )
    }

    /// (CPU seconds used so far, memory working set in bytes); None once the pod is gone.
    pub fn read(&self) -> Option<(f64, u64)> {
        match self {
            PodCgroup::V1 { cpuacct, memory } => {
                let ns: u64 = read_number(&cpuacct.join("cpuacct.usage"))?;
                let usage: u64 = read_number(&memory.join("memory.usage_in_bytes"))?;
                let stat = std::fs::read_to_string(memory.join("memory.stat")).ok()?;
                let inactive = stat_value(&stat, "total_inactive_file").unwrap_or(0);
                Some((ns as f64 / 1e9, usage.saturating_sub(inactive)))
            }
            PodCgroup::V2 { dir } => {
                let cpu = std::fs::read_to_string(dir.join("cpu.stat")).ok()?;
                let usec = stat_value(&cpu, "usage_usec")?;
                let current: u64 = read_number(&dir.join("memory.current"))?;
                let stat = std::fs::read_to_string(dir.join("memory.stat")).ok()?;
                let inactive = stat_value(&stat, "inactive_file").unwrap_or(0);
                Some((usec as f64 / 1e6, current.saturating_sub(inactive)))
            }
        }
    }

    /// The kernel's high-water mark of the pod's memory (page cache included), if kept.
    pub fn peak(&self) -> Option<u64> {
        match self {
            PodCgroup::V1 { memory, .. } => read_number(&memory.join("memory.max_usage_in_bytes")),
            PodCgroup::V2 { dir } => read_number(&dir.join("memory.peak")),
        }
    }

    /// CFS throttling so far: (periods throttled, seconds throttled), from the cpu
    /// controller's `cpu.stat` (v1: the pod's directory in the cpu hierarchy).
    pub fn throttling(&self, sys: &Path) -> Option<(u64, f64)> {
        match self {
            PodCgroup::V1 { cpuacct, .. } => {
                let rel = cpuacct.strip_prefix(sys.join("cpuacct")).ok()?;
                let stat =
                    std::fs::read_to_string(sys.join("cpu").join(rel).join("cpu.stat")).ok()?;
                Some((
                    stat_value(&stat, "nr_throttled")?,
                    stat_value(&stat, "throttled_time")? as f64 / 1e9,
                ))
            }
            PodCgroup::V2 { dir } => {
                let stat = std::fs::read_to_string(dir.join("cpu.stat")).ok()?;
                Some((
                    stat_value(&stat, "nr_throttled")?,
                    stat_value(&stat, "throttled_usec")? as f64 / 1e6,
                ))
            }
        }
    }

    /// The CPUs the pod's node may use: the `cpuset.cpus` of the nearest ancestor that
    /// sets it (the node's cgroup root pins it), v1 only.
    pub fn node_cpus(&self, sys: &Path) -> Option<String> {
        let PodCgroup::V1 { cpuacct, .. } = self else {
            return None;
        };
        let rel = cpuacct.strip_prefix(sys.join("cpuacct")).ok()?;
        let cpuset = sys.join("cpuset");
        let mut dir = cpuset.join(rel);
        // The node root is the first path component; pods inherit its cpus.
        if let Some(first) = rel.components().next() {
            dir = cpuset.join(first);
        }
        let cpus = std::fs::read_to_string(dir.join("cpuset.cpus")).ok()?;
        Some(cpus.trim().to_owned()).filter(|c| !c.is_empty())
    }

    pub fn describe(&self) -> String {
        match self {
            PodCgroup::V1 { cpuacct, .. } => cpuacct.display().to_string(),
            PodCgroup::V2 { dir } => dir.display().to_string(),
        }
    }
}

fn read_number(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// A `key value` line of memory.stat / cpu.stat.
fn stat_value(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok())?
    })
}

/// One reading of every tracked pod.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Tick {
    /// Wall clock, seconds since the Unix epoch.
    pub at: f64,
    /// CPU seconds the pods used since each was first seen, summed.
    pub cpu_s: f64,
    /// Memory working set of the pods present, summed (bytes).
    pub mem: u64,
    /// Pods read at this tick.
    pub pods: usize,
}

/// One pod a tracker followed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PodRecord {
    pub name: String,
    pub uid: String,
    pub node: Option<String>,
    pub cgroup: String,
    /// CPU seconds used while tracked.
    pub cpu_seconds: f64,
    /// Largest working set read.
    pub mem_max: u64,
    /// The kernel's high-water mark (page cache included) at the last reading.
    pub mem_peak_cgroup: Option<u64>,
    pub first_at: f64,
    pub last_at: f64,
}

struct Tracked {
    record: PodRecord,
    cgroup: Option<PodCgroup>,
    first_cpu: Option<f64>,
    last_cpu: f64,
}

/// Follows pods by uid; pods may come and go between ticks.
#[derive(Default)]
pub struct Tracker {
    pods: BTreeMap<String, Tracked>,
}

impl Tracker {
    /// Starts following a pod (no-op when it is followed already).
    pub fn add(&mut self, name: &str, uid: &str, node: Option<String>, cgroup: PodCgroup) {
        self.pods.entry(uid.to_owned()).or_insert_with(|| Tracked {
            record: PodRecord {
                name: name.to_owned(),
                uid: uid.to_owned(),
                node,
                cgroup: cgroup.describe(),
                cpu_seconds: 0.0,
                mem_max: 0,
                mem_peak_cgroup: None,
                first_at: 0.0,
                last_at: 0.0,
            },
            cgroup: Some(cgroup),
            first_cpu: None,
            last_cpu: 0.0,
        });
    }

    fn follows(&self, uid: &str) -> bool {
        self.pods.contains_key(uid)
    }

    /// Reads every pod still present and folds the readings into one tick.
    pub fn tick(&mut self, at: f64) -> Tick {
        let readings: Vec<(String, Option<(f64, u64)>)> = self
            .pods
            .iter()
            .map(|(uid, t)| (uid.clone(), t.cgroup.as_ref().and_then(PodCgroup::read)))
            .collect();
        self.fold(at, &readings)
    }

    /// The pure part of [`Tracker::tick`]: readings by uid (None: the pod is gone).
    fn fold(&mut self, at: f64, readings: &[(String, Option<(f64, u64)>)]) -> Tick {
        let mut mem = 0u64;
        let mut present = 0usize;
        for (uid, reading) in readings {
            let Some(t) = self.pods.get_mut(uid) else {
                continue;
            };
            match reading {
                Some((cpu, m)) => {
                    present += 1;
                    mem += m;
                    if t.first_cpu.is_none() {
                        t.first_cpu = Some(*cpu);
                        t.record.first_at = at;
                    }
                    // The counter never goes back; a torn read must not subtract.
                    t.last_cpu = t.last_cpu.max(*cpu);
                    t.record.last_at = at;
                    t.record.mem_max = t.record.mem_max.max(*m);
                    t.record.cpu_seconds = t.last_cpu - t.first_cpu.unwrap_or(t.last_cpu);
                }
                // Gone: keep what it used, stop reading it.
                None => t.cgroup = None,
            }
        }
        let cpu_s = self.pods.values().map(|t| t.record.cpu_seconds).sum();
        Tick {
            at,
            cpu_s,
            mem,
            pods: present,
        }
    }

    /// Records the kernel's memory high-water marks of the pods still present.
    fn read_peaks(&mut self) {
        for t in self.pods.values_mut() {
            if let Some(peak) = t.cgroup.as_ref().and_then(PodCgroup::peak) {
                t.record.mem_peak_cgroup = Some(peak);
            }
        }
    }

    pub fn records(&self) -> Vec<PodRecord> {
        self.pods.values().map(|t| t.record.clone()).collect()
    }
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Ticks inside `[from, to]` (Unix seconds) as sampler samples.
pub fn window(ticks: &[Tick], from: f64, to: f64) -> Vec<Sample> {
    ticks
        .iter()
        .filter(|t| t.at >= from && t.at <= to && t.pods > 0)
        .map(|t| Sample {
            at: t.at,
            cpu_s: t.cpu_s,
            rss: t.mem,
        })
        .collect()
}

/// Usage over `[from, to]`, when at least two ticks with pods fall inside.
pub fn usage_in(ticks: &[Tick], from: f64, to: f64) -> Option<Usage> {
    let samples = window(ticks, from, to);
    (samples.len() >= 2).then(|| crate::sampler::usage(&samples))
}

/// The file `sample-pods` writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resources {
    pub namespace: String,
    pub selector: String,
    /// The machine the pods (and the sampler) ran on.
    pub machine: Machine,
    pub interval_ms: u64,
    pub memory_metric: String,
    /// CPUs each node's cgroup root is pinned to, by node name.
    #[serde(default)]
    pub node_cpus: BTreeMap<String, String>,
    pub pods: Vec<PodRecord>,
    pub ticks: Vec<Tick>,
}

impl Resources {
    pub fn read(path: &Path) -> anyhow::Result<Resources> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        serde_json::from_str(&text)
            .with_context(|| format!("{} is not a sample-pods resources file", path.display()))
    }
}

/// Options of `graphfleet-bench sample-pods`.
pub struct SampleOptions {
    pub kubeconfig: Option<PathBuf>,
    pub namespace: String,
    pub selector: String,
    pub seconds: u64,
    pub interval: Duration,
    pub out: PathBuf,
}

/// Samples every pod matching the selector (re-listed every second, so pods a rollout
/// creates are picked up) for `seconds`, then writes the [`Resources`] file.
pub async fn sample_pods(opts: &SampleOptions) -> anyhow::Result<()> {
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::{Api, ListParams};

    let client = crate::kube_io::client(opts.kubeconfig.as_deref()).await?;
    let pods: Api<Pod> = Api::namespaced(client, &opts.namespace);
    let sys = Path::new("/sys/fs/cgroup");
    let mut tracker = Tracker::default();
    let mut ticks = Vec::new();
    let mut node_cpus = BTreeMap::new();
    let mut unreadable: BTreeMap<String, String> = BTreeMap::new();
    let start = std::time::Instant::now();
    let total = Duration::from_secs(opts.seconds);
    let mut interval = tokio::time::interval(opts.interval);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut last_list: Option<std::time::Instant> = None;
    eprintln!(
        "[sample-pods] pods {:?} in {} for {} s",
        opts.selector, opts.namespace, opts.seconds
    );
    while start.elapsed() < total {
        interval.tick().await;
        if last_list.is_none_or(|t| t.elapsed() >= Duration::from_secs(1)) {
            last_list = Some(std::time::Instant::now());
            match pods
                .list(&ListParams::default().labels(&opts.selector))
                .await
            {
                Ok(list) => {
                    for pod in list.items {
                        let (Some(name), Some(uid)) =
                            (pod.metadata.name.clone(), pod.metadata.uid.clone())
                        else {
                            continue;
                        };
                        if tracker.follows(&uid) {
                            continue;
                        }
                        let phase = pod
                            .status
                            .as_ref()
                            .and_then(|s| s.phase.clone())
                            .unwrap_or_default();
                        if phase != "Running" {
                            // No containers (yet, or any more): looked at again next second.
                            unreadable.insert(name, format!("phase {phase}"));
                            continue;
                        }
                        let node = pod.spec.as_ref().and_then(|s| s.node_name.clone());
                        match PodCgroup::find(sys, &uid) {
                            Ok(cg) => {
                                if let (Some(n), Some(cpus)) = (&node, cg.node_cpus(sys)) {
                                    node_cpus.insert(n.clone(), cpus);
                                }
                                eprintln!("[sample-pods] {name}: {}", cg.describe());
                                tracker.add(&name, &uid, node, cg);
                                unreadable.remove(&name);
                            }
                            // Not started yet (no cgroup) or not on this machine.
                            Err(e) => {
                                unreadable.insert(name, format!("{e:#}"));
                            }
                        }
                    }
                }
                Err(e) => eprintln!("[sample-pods] listing pods: {e}"),
            }
        }
        ticks.push(tracker.tick(unix_now()));
    }
    tracker.read_peaks();
    for (name, why) in &unreadable {
        eprintln!("[sample-pods] {name} was never sampled: {why}");
    }
    let resources = Resources {
        namespace: opts.namespace.clone(),
        selector: opts.selector.clone(),
        machine: Machine::this(),
        interval_ms: opts.interval.as_millis() as u64,
        memory_metric: MEMORY_METRIC.to_owned(),
        node_cpus,
        pods: tracker.records(),
        ticks,
    };
    if resources.pods.is_empty() {
        bail!(
            "no pod matching {:?} in {} could be sampled",
            opts.selector,
            opts.namespace
        );
    }
    if let Some(dir) = opts.out.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let json = serde_json::to_string(&resources).context("serialising the samples")?;
    std::fs::write(&opts.out, json).with_context(|| format!("writing {}", opts.out.display()))?;
    eprintln!(
        "[sample-pods] {} pods, {} samples → {}",
        resources.pods.len(),
        resources.ticks.len(),
        opts.out.display()
    );
    Ok(())
}

/// Samples one pod's cgroup every 100 ms in the background (the in-cluster mode).
pub struct PodSampler {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<(Vec<Tick>, Vec<PodRecord>)>,
}

impl PodSampler {
    pub fn start(name: &str, uid: &str, node: Option<String>, cgroup: PodCgroup) -> PodSampler {
        let (stop, mut stopped) = tokio::sync::oneshot::channel();
        let mut tracker = Tracker::default();
        tracker.add(name, uid, node, cgroup);
        let task = tokio::spawn(async move {
            let mut ticks = Vec::new();
            let mut interval = tokio::time::interval(Duration::from_millis(100));
            // Bounded: 2 h of samples at most.
            for _ in 0..72_000 {
                tokio::select! {
                    _ = interval.tick() => {}
                    _ = &mut stopped => break,
                }
                ticks.push(tracker.tick(unix_now()));
            }
            tracker.read_peaks();
            (ticks, tracker.records())
        });
        PodSampler { stop, task }
    }

    pub async fn finish(self) -> (Vec<Tick>, Vec<PodRecord>) {
        let _ = self.stop.send(());
        self.task.await.unwrap_or_default()
    }
}

#[cfg(test)]
mod tests;
