use super::*;

#[test]
fn time_flags_take_seconds_or_durations() {
    assert_eq!(whole_seconds("30"), Ok(30));
    assert_eq!(whole_seconds("0"), Ok(0));
    assert_eq!(whole_seconds("30s"), Ok(30));
    assert_eq!(whole_seconds("1m30s"), Ok(90));
    assert_eq!(whole_seconds("1h2m3s"), Ok(3723));
    assert_eq!(
        whole_seconds("1500ms"),
        Err("1500ms is not a whole number of seconds; the runner measures in seconds".to_owned())
    );
    for bad in ["", "1x", "30 s", "-1", "1m30", "99999999999"] {
        assert!(whole_seconds(bad).is_err(), "{bad:?}");
    }
    let err = whole_seconds("1m30x").expect_err("bad unit");
    assert!(err.contains("expected a unit h, m, s or ms"), "{err}");
    let cli = Cli::try_parse_from(["graphfleet-bench", "--duration", "1m30s", "--warmup", "2s"])
        .expect("durations parse");
    assert_eq!(
        (cli.duration, cli.warmup, cli.capacity_duration),
        (90, 2, 15)
    );
    assert!(Cli::try_parse_from(["graphfleet-bench", "--duration", "1.5s"]).is_err());
}

#[test]
fn the_warm_up_burst_is_bounded() {
    let cli = Cli::try_parse_from(["graphfleet-bench", "warm-up", "--seconds", "10s"])
        .expect("a warm-up run parses");
    let Some(Command::WarmUp {
        operations,
        rate,
        seconds,
        runs,
        ..
    }) = cli.command
    else {
        panic!("not the warm-up subcommand");
    };
    assert_eq!((operations, rate, seconds, runs), (100, 100, 10, 3));
    for bad in [
        ["--seconds", "0"],
        ["--seconds", "2m"],
        ["--rate", "0"],
        ["--operations", "20000"],
    ] {
        let args = ["graphfleet-bench", "warm-up", bad[0], bad[1]];
        assert!(Cli::try_parse_from(args).is_err(), "{bad:?}");
    }
}
