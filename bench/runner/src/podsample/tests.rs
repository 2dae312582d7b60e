use super::*;

fn tempdir(tag: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("graphfleet-bench-cg-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

#[test]
fn finds_and_reads_a_v1_pod_cgroup() {
    let sys = tempdir("v1");
    let uid = "0f6b3c1e-1111-2222-3333-444455556666";
    let rel = format!("gf-abc-router/kubepods/pod{uid}");
    write(&sys.join("cpuacct/cpuacct.usage"), "1\n");
    write(&sys.join("cpuacct/gf-abc-router/kubepods/besteffort/x"), "");
    write(
        &sys.join(format!("cpuacct/{rel}/cpuacct.usage")),
        "2500000000\n",
    );
    write(
        &sys.join(format!("memory/{rel}/memory.usage_in_bytes")),
        "50000000\n",
    );
    write(
        &sys.join(format!("memory/{rel}/memory.max_usage_in_bytes")),
        "70000000\n",
    );
    write(
        &sys.join(format!("memory/{rel}/memory.stat")),
        "cache 10\ninactive_file 1\ntotal_inactive_file 10000000\n",
    );
    write(&sys.join("cpuset/gf-abc-router/cpuset.cpus"), "0\n");
    let cg = PodCgroup::find(&sys, uid).expect("found");
    assert_eq!(
        cg,
        PodCgroup::V1 {
            cpuacct: sys.join(format!("cpuacct/{rel}")),
            memory: sys.join(format!("memory/{rel}")),
        }
    );
    assert_eq!(cg.read(), Some((2.5, 40_000_000)));
    assert_eq!(cg.peak(), Some(70_000_000));
    assert_eq!(cg.node_cpus(&sys).as_deref(), Some("0"));
    write(
        &sys.join(format!("cpu/{rel}/cpu.stat")),
        "nr_periods 100\nnr_throttled 7\nthrottled_time 350000000\n",
    );
    assert_eq!(cg.throttling(&sys), Some((7, 0.35)));
    let err = PodCgroup::find(&sys, "nope").expect_err("absent");
    assert!(err.to_string().contains("no cgroup podnope"), "{err}");
    let _ = std::fs::remove_dir_all(&sys);
}

#[test]
fn finds_a_v2_systemd_slice() {
    let sys = tempdir("v2");
    let uid = "aa-bb";
    write(&sys.join("cgroup.controllers"), "cpu memory\n");
    let dir = sys.join("kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podaa_bb.slice");
    write(&dir.join("cpu.stat"), "usage_usec 1500000\nuser_usec 1\n");
    write(&dir.join("memory.current"), "3000\n");
    write(&dir.join("memory.stat"), "anon 1\ninactive_file 1000\n");
    let cg = PodCgroup::find(&sys, uid).expect("found");
    assert_eq!(cg, PodCgroup::V2 { dir });
    assert_eq!(cg.read(), Some((1.5, 2000)));
    let _ = std::fs::remove_dir_all(&sys);
}

fn cg(n: &str) -> PodCgroup {
    PodCgroup::V2 {
        dir: PathBuf::from(n),
    }
}

#[test]
fn a_rollout_replacing_pods_keeps_the_cpu_they_used() {
    let mut t = Tracker::default();
    t.add("a", "ua", Some("router-0".into()), cg("a"));
    // a: 10 s of CPU already used before sampling began: not counted.
    let k0 = t.fold(0.0, &[("ua".into(), Some((10.0, 100)))]);
    assert_eq!((k0.cpu_s, k0.mem, k0.pods), (0.0, 100, 1));
    let k1 = t.fold(1.0, &[("ua".into(), Some((10.5, 120)))]);
    assert_eq!((k1.cpu_s, k1.mem), (0.5, 120));
    // b appears; a is gone at the next tick.
    t.add("b", "ub", None, cg("b"));
    let k2 = t.fold(
        2.0,
        &[
            ("ua".into(), Some((11.0, 130))),
            ("ub".into(), Some((3.0, 50))),
        ],
    );
    assert_eq!((k2.cpu_s, k2.mem, k2.pods), (1.0, 180, 2));
    let k3 = t.fold(3.0, &[("ua".into(), None), ("ub".into(), Some((3.25, 60)))]);
    assert_eq!((k3.cpu_s, k3.mem, k3.pods), (1.25, 60, 1));
    let records = t.records();
    assert_eq!(records[0].cpu_seconds, 1.0);
    assert_eq!(records[0].mem_max, 130);
    assert_eq!((records[0].first_at, records[0].last_at), (0.0, 2.0));
    assert_eq!(records[1].cpu_seconds, 0.25);
    // A window of the series: the sampler's usage over 1 s windows.
    let ticks = [k0, k1, k2, k3];
    let u = usage_in(&ticks, 1.0, 3.0).expect("usage");
    assert!((u.cpu_seconds - 0.75).abs() < 1e-9, "{u:?}");
    assert_eq!(u.mem_max, 180);
    assert!(usage_in(&ticks, 5.0, 9.0).is_none());
}

#[test]
fn stat_lines() {
    assert_eq!(stat_value("a 1\ntotal_a 2\n", "total_a"), Some(2));
    assert_eq!(stat_value("a 1\n", "b"), None);
}
