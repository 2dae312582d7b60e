//! `graphfleet_process_cpu_seconds_total`: the process's user + system CPU time at the
//! kernel's tick resolution (10 ms), read when scraped. The process collector's own
//! `process_cpu_seconds_total` counts whole seconds, too coarse for the operator's
//! requests-per-CPU-second figure of a LoadTest of a few seconds.

use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{Counter, Opts};
use std::sync::Mutex;

pub const NAME: &str = "graphfleet_process_cpu_seconds_total";

pub struct ProcessCpu {
    counter: Counter,
    /// One scrape at a time moves the counter up to the kernel's figure.
    advance: Mutex<()>,
}

impl ProcessCpu {
    pub fn new() -> Self {
        let opts = Opts::new(
            NAME,
            "User and system CPU time of the gateway process, seconds (10 ms resolution).",
        );
        Self {
            counter: Counter::with_opts(opts).expect("a valid counter name"),
            advance: Mutex::new(()),
        }
    }
}

impl Collector for ProcessCpu {
    fn desc(&self) -> Vec<&Desc> {
        self.counter.desc()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let _one = self.advance.lock().expect("CPU counter lock");
        if let Some(now) = cpu_seconds() {
            let delta = now - self.counter.get();
            if delta > 0.0 {
                self.counter.inc_by(delta);
            }
        }
        self.counter.collect()
    }
}

fn cpu_seconds() -> Option<f64> {
    let stat = procfs::process::Process::myself().ok()?.stat().ok()?;
    let ticks = procfs::ticks_per_second() as f64;
    Some((stat.utime + stat.stime) as f64 / ticks)
}
