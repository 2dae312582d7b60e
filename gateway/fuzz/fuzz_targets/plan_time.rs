//! Planning cost: an operation built from the fuzz bytes by `fragment_program` (the
//! fragment families that once made planning exponential) is prepared and planned
//! against the fed supergraph under the gateway's default limits. Answered or refused,
//! it must be done in 100 ms; a slower input is a finding (its text is printed).
#![no_main]

use graphfleet_gateway::config::LimitsConfig;
use graphfleet_gateway::pipeline::plan_cache::State;
use graphfleet_gateway_fuzz::{fragment_program, supergraph};
use libfuzzer_sys::fuzz_target;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

/// Generous for linear work on a shared, instrumented build; far below the seconds an
/// exponential family takes at 20 fragments.
const BUDGET: Duration = Duration::from_millis(100);

static STATE: LazyLock<State> =
    LazyLock::new(|| State::with_limits(supergraph(), LimitsConfig::default()));

fuzz_target!(|data: &[u8]| {
    let query = fragment_program(data);
    let started = Instant::now();
    // A new text each time, so the plan cache never answers.
    let key = State::cache_key(&query, None);
    let _ = STATE.prepare_new(key, &query, None, Default::default(), None);
    let took = started.elapsed();
    assert!(took <= BUDGET, "planning took {took:?}:\n{query}");
});
