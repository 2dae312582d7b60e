use super::answer::{Answer, error_codes, keep, size, tally};
use super::burst::content_length;
use super::table::{Outcome, Row, markdown, notes};
use crate::sampler::{parse_stat, status_bytes};

#[test]
fn reads_error_codes_from_json_text() {
    let body = r#"{"data":null,"errors":[{"message":"m","extensions":{"code":"RESPONSE_TOO_LARGE"}},{"extensions":{"code": "X"}}]}"#;
    assert_eq!(error_codes(body), ["RESPONSE_TOO_LARGE", "X"]);
    assert!(error_codes(r#"{"code":12}"#).is_empty());
    assert!(error_codes(r#"{"code":"cut"#).is_empty());
    let answer = Answer {
        status: 200,
        bytes: 10,
        head: body.to_owned(),
        tail: body.to_owned(),
    };
    assert_eq!(answer.codes(), ["RESPONSE_TOO_LARGE", "X"]);
    assert_eq!(answer.first_message().as_deref(), Some("m"));
}

#[test]
fn keeps_both_ends_of_a_body() {
    let (mut head, mut tail) = (Vec::new(), Vec::new());
    for _ in 0..100 {
        keep(&mut head, &mut tail, &[b'a'; 1000]);
    }
    keep(&mut head, &mut tail, b"END");
    assert_eq!(head.len(), 16 * 1024);
    assert!(tail.ends_with(b"aEND"));
    assert!(tail.len() <= 32 * 1024);
}

#[test]
fn tallies_answers() {
    let ok = |status, codes: &str| {
        Ok(Answer {
            status,
            bytes: 1,
            head: codes.to_owned(),
            tail: String::new(),
        })
    };
    let cut = r#"{"errors":[{"extensions":{"code":"MEMORY_BUDGET_EXCEEDED"}}]}"#;
    let answers = vec![
        ok(503, cut),
        ok(200, "{}"),
        ok(503, cut),
        Err("no answer within 60 s".to_owned()),
    ];
    assert_eq!(
        tally(&answers),
        (
            "200, 503×2, timeout".to_owned(),
            "MEMORY_BUDGET_EXCEEDED×2".to_owned()
        )
    );
    assert_eq!(tally(&[]), ("—".to_owned(), "—".to_owned()));
    assert_eq!(size(812), "812 B");
    assert_eq!(size(61 << 20), "61.0 MiB");
}

#[test]
fn parses_proc_lines() {
    let stat = "4242 (graphfleet (gw)) S 4200 4242 1 0 -1 4194560 100 0 0 0 150 25 0 0 20 0 3";
    assert_eq!(parse_stat(stat), Some((4200, 175)));
    assert_eq!(parse_stat("4242 (x"), None);
    let status = "Name:\tgw\nVmHWM:\t  524288 kB\nVmRSS:\t  1024 kB\n";
    assert_eq!(status_bytes(status, "VmHWM"), Some(512 << 20));
    assert_eq!(status_bytes(status, "VmRSS"), Some(1 << 20));
    assert_eq!(status_bytes(status, "VmSwap"), None);
    assert_eq!(
        content_length(b"POST / HTTP/1.1\r\nContent-Length: 17\r\n\r\n"),
        Some(17)
    );
    assert_eq!(content_length(b"GET / HTTP/1.1\r\n\r\n"), None);
}

fn row(gateway: &str, killed: bool) -> Row {
    Row {
        class: "fan-out".into(),
        case: "fan-out, 250 aliases".into(),
        gateway: gateway.into(),
        settings: vec!["traffic.max_connections=64".into()],
        refused_settings: vec!["limits.x=1".into()],
        outcome: Outcome {
            wall_s: 1.234,
            answer: "200 (1.0 KiB)".into(),
            codes: "RESPONSE_TOO_LARGE".into(),
            note: "a | b".into(),
        },
        cpu_s: 0.5,
        peak_rss_mib: 123.4,
        start_rss_mib: 20.0,
        health_worst_ms: 3.6,
        health_probes: 20,
        health_failures: 0,
        health_on: "the admin listener".into(),
        healthy_after: !killed,
        killed,
    }
}

#[test]
fn renders_the_table_and_notes() {
    let rows = [row("before", true), row("after", false)];
    let table = markdown(&rows);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 4, "{table}");
    assert_eq!(
        lines[2],
        "| fan-out | fan-out, 250 aliases | before | 1.23 | 0.50 | ≥ 123 (killed) | 4 (0/20) | 200 (1.0 KiB) | RESPONSE_TOO_LARGE | **no** |"
    );
    assert!(
        lines[3].contains("| after | 1.23 | 0.50 | 123 | 4 (0/20) |"),
        "{}",
        lines[3]
    );
    let notes = notes(&rows);
    assert!(
        notes.starts_with("- fan-out, 250 aliases / before: traffic.max_connections=64 (refused by this binary, not passed: limits.x=1); health on the admin listener; a \\| b\n"),
        "{notes}"
    );
}
