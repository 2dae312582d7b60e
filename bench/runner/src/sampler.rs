//! CPU time and resident memory of a process tree, sampled from /proc every 100 ms.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// One reading: seconds since the start, CPU seconds used so far, resident bytes.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    pub at: f64,
    pub cpu_s: f64,
    pub rss: u64,
}

/// The `ticks per second` of utime/stime (sysconf(_SC_CLK_TCK), 100 on Linux), asked once.
fn clock_ticks() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(100.0)
    })
}

/// (parent pid, utime + stime ticks) of one process.
fn stat(pid: u32) -> Option<(u32, u64)> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// (parent pid, utime + stime ticks) from the text of `/proc/<pid>/stat`.
pub fn parse_stat(text: &str) -> Option<(u32, u64)> {
    // The command name may contain spaces and parentheses: fields start after the last ')'.
    let rest = text.get(text.rfind(')')? + 2..)?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state(3) ppid(4) ... utime(14) stime(15), 1-based in proc(5).
    let ppid = fields.get(1)?.parse().ok()?;
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((ppid, utime + stime))
}

/// A `kB` line of `/proc/<pid>/status` (`VmRSS:`, `VmHWM:`), in bytes.
pub fn status_bytes(status: &str, key: &str) -> Option<u64> {
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// A `kB` line of one process's `/proc/<pid>/status`, in bytes.
pub fn process_status_bytes(pid: u32, key: &str) -> Option<u64> {
    status_bytes(
        &std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?,
        key,
    )
}

fn rss(pid: u32) -> Option<u64> {
    process_status_bytes(pid, "VmRSS")
}

/// CPU seconds (utime + stime) the process tree of `pid` has used so far.
pub fn tree_cpu_seconds(pid: u32) -> Option<f64> {
    read_tree(pid, clock_ticks()).map(|(cpu, _)| cpu)
}

/// `pid` and all its descendants (a node gateway may fork workers).
pub fn descendants(pid: u32) -> Vec<u32> {
    let mut parents: HashMap<u32, Vec<u32>> = HashMap::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let Some(p) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<u32>().ok())
            else {
                continue;
            };
            if let Some((ppid, _)) = stat(p) {
                parents.entry(ppid).or_default().push(p);
            }
        }
    }
    let mut out = vec![pid];
    let mut i = 0;
    // Bounded by the number of processes: each is visited once.
    while i < out.len() {
        if let Some(children) = parents.get(&out[i]) {
            out.extend(
                children
                    .iter()
                    .copied()
                    .filter(|c| !out.contains(c))
                    .collect::<Vec<_>>(),
            );
        }
        i += 1;
    }
    out
}

/// One reading of the whole tree.
fn read_tree(pid: u32, ticks: f64) -> Option<(f64, u64)> {
    let pids = descendants(pid);
    let mut cpu = 0u64;
    let mut mem = 0u64;
    let mut any = false;
    for p in pids {
        if let Some((_, t)) = stat(p) {
            any = true;
            cpu += t;
            mem += rss(p).unwrap_or(0);
        }
    }
    any.then_some((cpu as f64 / ticks, mem))
}

/// Busy and total jiffies of some CPUs, from /proc/stat; two readings give how busy
/// those cores were in between.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CoreTimes {
    busy: u64,
    total: u64,
}

impl CoreTimes {
    /// A reading of `cpus` (core numbers); None when /proc/stat has none of them.
    pub fn read(cpus: &[usize]) -> Option<CoreTimes> {
        let text = std::fs::read_to_string("/proc/stat").ok()?;
        Self::parse(&text, cpus)
    }

    fn parse(stat: &str, cpus: &[usize]) -> Option<CoreTimes> {
        let mut sum = CoreTimes { busy: 0, total: 0 };
        let mut found = false;
        for line in stat.lines() {
            let mut fields = line.split_whitespace();
            let Some(id) = fields
                .next()
                .and_then(|name| name.strip_prefix("cpu"))
                .and_then(|n| n.parse::<usize>().ok())
            else {
                continue;
            };
            if !cpus.contains(&id) {
                continue;
            }
            // user nice system idle iowait irq softirq steal (guest time is inside user).
            let values: Vec<u64> = fields.take(8).filter_map(|v| v.parse().ok()).collect();
            if values.len() < 5 {
                continue;
            }
            let idle = values[3] + values[4];
            let total: u64 = values.iter().sum();
            sum.busy += total - idle;
            sum.total += total;
            found = true;
        }
        found.then_some(sum)
    }

    /// The busy share (0..1) of the cores between `earlier` and this reading.
    pub fn busy_since(&self, earlier: &CoreTimes) -> Option<f64> {
        let total = self.total.checked_sub(earlier.total)?;
        let busy = self.busy.checked_sub(earlier.busy)?;
        (total > 0).then(|| busy as f64 / total as f64)
    }
}

/// A running sampler; [`Sampler::finish`] stops it and returns the readings.
pub struct Sampler {
    stop: oneshot::Sender<()>,
    task: JoinHandle<Vec<Sample>>,
}

impl Sampler {
    pub fn start(pid: u32) -> Sampler {
        let (stop, mut stopped) = oneshot::channel();
        let task = tokio::spawn(async move {
            let ticks = clock_ticks();
            let start = Instant::now();
            let mut out = Vec::new();
            let mut interval = tokio::time::interval(Duration::from_millis(100));
            // Bounded: a run lasts minutes at most; 2 h of samples is the hard cap.
            for _ in 0..72_000 {
                tokio::select! {
                    _ = interval.tick() => {}
                    _ = &mut stopped => break,
                }
                if let Some((cpu_s, rss)) = read_tree(pid, ticks) {
                    out.push(Sample {
                        at: start.elapsed().as_secs_f64(),
                        cpu_s,
                        rss,
                    });
                }
            }
            out
        });
        Sampler { stop, task }
    }

    pub async fn finish(self) -> Vec<Sample> {
        let _ = self.stop.send(());
        self.task.await.unwrap_or_default()
    }
}

/// Resource use over a run.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Usage {
    /// CPU use in cores (1.0 = one core busy), over 1 s windows.
    pub cpu_avg: f64,
    pub cpu_std: f64,
    pub cpu_max: f64,
    /// CPU seconds used during the run.
    pub cpu_seconds: f64,
    pub mem_avg: f64,
    pub mem_std: f64,
    pub mem_max: u64,
    /// Wall seconds covered by the samples.
    pub seconds: f64,
}

pub fn usage(samples: &[Sample]) -> Usage {
    let (Some(first), Some(last)) = (samples.first(), samples.last()) else {
        return Usage::default();
    };
    let mut cpu = Vec::new();
    let mut start = first;
    for s in samples {
        let dt = s.at - start.at;
        if dt >= 0.99 {
            cpu.push((s.cpu_s - start.cpu_s) / dt);
            start = s;
        }
    }
    let seconds = last.at - first.at;
    if cpu.is_empty() && seconds > 0.0 {
        cpu.push((last.cpu_s - first.cpu_s) / seconds);
    }
    let mem: Vec<f64> = samples.iter().map(|s| s.rss as f64).collect();
    let (cpu_avg, cpu_std) = mean_std(&cpu);
    let (mem_avg, mem_std) = mean_std(&mem);
    Usage {
        cpu_avg,
        cpu_std,
        cpu_max: cpu.iter().copied().fold(0.0, f64::max),
        cpu_seconds: last.cpu_s - first.cpu_s,
        mem_avg,
        mem_std,
        mem_max: samples.iter().map(|s| s.rss).max().unwrap_or(0),
        seconds,
    }
}

fn mean_std(xs: &[f64]) -> (f64, f64) {
    if xs.is_empty() {
        return (0.0, 0.0);
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    (mean, var.sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_over_one_second_windows() {
        // Half a core for 2 s, memory growing from 10 to 30 bytes.
        let samples: Vec<Sample> = (0..=20)
            .map(|i| Sample {
                at: i as f64 * 0.1,
                cpu_s: i as f64 * 0.05,
                rss: 10 + i as u64,
            })
            .collect();
        let u = usage(&samples);
        assert!((u.cpu_avg - 0.5).abs() < 1e-9, "{u:?}");
        assert!(u.cpu_std < 1e-9);
        assert!((u.cpu_seconds - 1.0).abs() < 1e-9);
        assert_eq!(u.mem_max, 30);
        assert!((u.mem_avg - 20.0).abs() < 1e-9);
    }

    #[test]
    fn no_samples_no_usage() {
        assert_eq!(usage(&[]).cpu_seconds, 0.0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn samples_this_process() {
        let sampler = Sampler::start(std::process::id());
        let busy = Instant::now();
        let mut x = 0u64;
        while busy.elapsed() < Duration::from_millis(400) {
            x = x.wrapping_add(1);
        }
        std::hint::black_box(x);
        let samples = sampler.finish().await;
        assert!(samples.len() >= 2, "{samples:?}");
        assert!(samples.iter().all(|s| s.rss > 0));
    }

    #[test]
    fn core_times_sum_the_named_cores() {
        let before =
            "cpu  9 9 9 9 9 0 0 0 0 0\ncpu0 10 0 10 80 0 0 0 0 0 0\ncpu1 50 0 0 50 0 0 0 0 0 0\n";
        let after =
            "cpu  9 9 9 9 9 0 0 0 0 0\ncpu0 20 0 10 170 0 0 0 0 0 0\ncpu1 140 0 0 60 0 0 0 0 0 0\n";
        let one = |text: &str| CoreTimes::parse(text, &[1]).expect("cpu1");
        assert_eq!(one(after).busy_since(&one(before)), Some(0.9));
        let both = |text: &str| CoreTimes::parse(text, &[0, 1]).expect("cpu0 and cpu1");
        assert_eq!(both(after).busy_since(&both(before)), Some(0.5));
        assert_eq!(CoreTimes::parse(before, &[7]), None);
    }
}
