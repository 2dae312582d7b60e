use super::*;
use crate::k6::Check;
use crate::scenario::TOKEN_ZERO;
use std::sync::Arc;

/// A local server answering `{"data":{}}` one request at a time, each after `delay`:
/// requests arriving faster than that queue up in it. Stops when the sender is dropped.
fn slow_server(delay: Duration) -> (String, tokio::sync::oneshot::Sender<()>) {
    let (url, stop, _) = counting_slow_server(delay);
    (url, stop)
}

/// [`slow_server`], also counting the requests it answered.
fn counting_slow_server(
    delay: Duration,
) -> (
    String,
    tokio::sync::oneshot::Sender<()>,
    Arc<std::sync::atomic::AtomicU64>,
) {
    let served = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counter = Arc::clone(&served);
    use hyper::server::conn::http1;
    use hyper::service::service_fn;
    use hyper_util::rt::TokioIo;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let url = format!("http://{}/graphql", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("server runtime");
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            let one_at_a_time = Arc::new(tokio::sync::Mutex::new(()));
            let accept = async {
                // Bounded by the test: it drops `stop` when done.
                loop {
                    let Ok((stream, _)) = listener.accept().await else {
                        continue;
                    };
                    let gate = Arc::clone(&one_at_a_time);
                    let counter = Arc::clone(&counter);
                    tokio::spawn(async move {
                        let service = service_fn(move |_req| {
                            let gate = Arc::clone(&gate);
                            let counter = Arc::clone(&counter);
                            async move {
                                counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                                let _turn = gate.lock().await;
                                tokio::time::sleep(delay).await;
                                Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(
                                    Bytes::from_static(br#"{"data":{}}"#),
                                )))
                            }
                        });
                        let _ = http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                }
            };
            tokio::select! {
                () = accept => {}
                _ = stopped => {}
            }
        });
    });
    (url, stop, served)
}

fn slow_load(url: &str, rate: u32, max_in_flight: u32, expected: &[u8]) -> Load {
    Load {
        url: url.parse().expect("url"),
        payload: Payload::new(br#"{"query":"{ __typename }"}"#, None).expect("payload"),
        expected: Arc::new(ExpectedBody::new(expected.to_vec())),
        check: Check::Full,
        rate,
        duration: Duration::from_secs(1),
        max_in_flight,
        cpus: None,
        ramp: None,
    }
}

/// 50 req/s against a server that serves one request per 40 ms: request i waits for
/// the i before it, so it completes near 40·(i+1) ms after the start while it was due
/// at 20·i ms. Latency from the schedule must show that queue (~40 ms for the first,
/// ~1 s for the last), not the 40 ms each request spends being served.
#[test]
fn latency_counts_from_the_scheduled_time_and_includes_queueing() {
    let (url, _stop) = slow_server(Duration::from_millis(40));
    let outcome = slow_load(&url, 50, 100, br#"{"data":{}}"#)
        .run()
        .expect("run");
    let s = &outcome.summary;
    assert_eq!(
        (s.requests, s.ok, s.failures, s.dropped_iterations),
        (50, 50, 0, 0),
        "{outcome:?}"
    );
    assert!((s.achieved_rate.expect("rate") - 50.0).abs() < 1e-9);
    let l = s.latency_ms.expect("latency");
    assert!(l.min >= 39.0 && l.min < 200.0, "{l:?}");
    assert!(
        l.med > 400.0,
        "the median must include ~0.5 s of queueing: {l:?}"
    );
    assert!(l.max > 900.0 && l.max < 3000.0, "{l:?}");
    // The lateness is the server's queue, not the generator's: its own send lag stays
    // a small part of it. (How small on a quiet machine is a benchmark's figure,
    // printed by graphfleet-bench; a busy CI machine showed 53 ms here.)
    assert!(outcome.send_lag_p99_ms < l.med / 2.0, "{outcome:?}");
}

/// With at most 2 requests outstanding and 40 ms each, most of 100 req/s cannot start:
/// they are dropped, not delayed; every response is checked (here against the wrong
/// answer, so each one fails).
#[test]
fn requests_beyond_max_in_flight_are_dropped_and_wrong_answers_fail() {
    let (url, _stop) = slow_server(Duration::from_millis(40));
    let outcome = slow_load(&url, 100, 2, br#"{"data":{"x":1}}"#)
        .run()
        .expect("run");
    let s = &outcome.summary;
    assert_eq!(s.requests + s.dropped_iterations, 100, "{outcome:?}");
    assert!(s.dropped_iterations >= 60, "{outcome:?}");
    assert!(s.requests >= 10, "{outcome:?}");
    assert_eq!((s.ok, s.failures), (0, s.requests), "{outcome:?}");
    assert!(outcome.peak_in_flight <= 2, "{outcome:?}");
    assert!(
        outcome.failure_samples[0].contains("not the expected answer"),
        "{outcome:?}"
    );
}

fn schedule(from: u32, rate: u32, over_ms: u64) -> Schedule {
    let mut load = slow_load("http://127.0.0.1:1/", rate, 10, b"");
    load.ramp = Some(Ramp {
        from,
        over: Duration::from_millis(over_ms),
    });
    Schedule::new(&load)
}

/// A ramp from 100 to 300 req/s over 2 s holds (100 + 300) / 2 · 2 = 400 requests,
/// due ever closer together, the measured ones following at 300 req/s from 2 s on.
#[test]
fn a_ramp_comes_first_with_its_rate_rising_linearly() {
    let s = schedule(100, 300, 2000);
    assert_eq!((s.ramp_requests, s.measured, s.len()), (400, 300, 700));
    assert!(!s.measured(399) && s.measured(400));
    let at = |i| s.offset(i).as_secs_f64();
    // At t the ramp has sent 100·t + 50·t² requests: 150 by 1 s.
    assert!((at(150) - 1.0).abs() < 1e-6, "{}", at(150));
    assert!(at(1) > at(399) - at(398), "gaps shrink as the rate rises");
    assert!((at(400) - 2.0).abs() < 1e-9);
    assert!((at(700) - 3.0).abs() < 1e-9);
    let due: Vec<f64> = (0..s.len()).map(at).collect();
    assert!(
        due.windows(2).all(|w| w[0] <= w[1]),
        "due times never go back"
    );
    // A falling ramp and a flat one schedule as the count says too.
    let down = schedule(300, 100, 2000);
    assert!((down.offset(250).as_secs_f64() - 1.0).abs() < 1e-6);
    let flat = schedule(200, 200, 1000);
    assert_eq!(flat.ramp_requests, 200);
    assert_eq!(flat.offset(50), Duration::from_millis(250));
    // From zero the first gap is the longest, and nothing divides by zero.
    let cold = schedule(0, 100, 1000);
    assert!((cold.offset(50).as_secs_f64() - 1.0).abs() < 1e-6);
    assert_eq!(cold.offset(0), Duration::ZERO);
}

/// The ramp's requests reach the server but none is counted: the summary holds the
/// measured second's 50 requests only, with their latencies.
#[test]
fn ramp_requests_load_the_server_but_are_not_counted() {
    let (url, _stop, served) = counting_slow_server(Duration::from_millis(1));
    let mut load = slow_load(&url, 50, 100, br#"{"data":{"x":1}}"#);
    load.ramp = Some(Ramp {
        from: 10,
        over: Duration::from_secs(1),
    });
    // Ramp answers are wrong too (the expected body differs), yet none fails.
    let outcome = load.run().expect("run");
    let s = &outcome.summary;
    assert_eq!(
        (s.requests, s.failures, s.dropped_iterations),
        (50, 50, 0),
        "{outcome:?}"
    );
    assert!((s.achieved_rate.expect("rate") - 50.0).abs() < 1e-9);
    // (10 + 50) / 2 · 1 s = 30 ramp requests went out first.
    let served = served.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(served, 80, "{outcome:?}");
}

#[test]
fn the_payload_carries_each_request_its_own_token() {
    let raw = format!(r#"{{"query":"query Q_{TOKEN_ZERO} {{ f_{TOKEN_ZERO}: f }}"}}"#);
    let p = Payload::new(raw.as_bytes(), Some(42)).expect("payload");
    let (b7, t7) = p.body(7);
    let (b8, t8) = p.body(8);
    let t7 = t7.expect("token");
    assert_eq!(t7, "gfnc000042000000007");
    assert_eq!(t8.as_deref(), Some("gfnc000042000000008"));
    assert_eq!(b7.len(), raw.len());
    assert_eq!(
        std::str::from_utf8(&b7).expect("utf8"),
        raw.replace(TOKEN_ZERO, &t7)
    );
    assert_ne!(b7, b8);
    // Without a nonce the payload goes out as it is.
    let plain = Payload::new(raw.as_bytes(), None).expect("plain");
    assert_eq!(plain.body(3), (Bytes::from(raw.clone()), None));
    assert!(Payload::new(b"{}", Some(1)).is_err());
}

#[test]
fn responses_are_checked_like_the_k6_script() {
    let want = format!(r#"{{"data":{{"f_{TOKEN_ZERO}":[1,2]}}}}"#);
    let e = ExpectedBody::new(want.clone().into_bytes());
    let token = "gfnc000042000000007";
    let own = want.replace(TOKEN_ZERO, token);
    assert!(e.accepts(Check::Full, own.as_bytes(), Some(token.as_bytes())));
    assert!(e.accepts(Check::Length, own.as_bytes(), Some(token.as_bytes())));
    // Another request's token is another document's answer.
    let other = want.replace(TOKEN_ZERO, "gfnc000042000000008");
    assert!(!e.accepts(Check::Full, other.as_bytes(), Some(token.as_bytes())));
    // Same data, formatted differently: passes; errors or other data: fails.
    let spaced = format!(r#"{{ "data": {{ "f_{token}": [1, 2] }} }}"#);
    assert!(e.accepts(Check::Full, spaced.as_bytes(), Some(token.as_bytes())));
    let errors = format!(r#"{{"data":{{"f_{token}":[1,2]}},"errors":[]}}"#);
    assert!(!e.accepts(Check::Full, errors.as_bytes(), Some(token.as_bytes())));
    let wrong = format!(r#"{{"data":{{"f_{token}":[1,23]}}}}"#);
    assert!(!e.accepts(Check::Length, wrong.as_bytes(), Some(token.as_bytes())));
    assert!(!e.accepts(Check::Full, wrong.as_bytes(), Some(token.as_bytes())));
    assert!(e.accepts(Check::None, b"anything", None));
}
