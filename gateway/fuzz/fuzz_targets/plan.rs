//! The planner over every federation audit supergraph (`tests/audit/*/`) and then every
//! gateway fixture's (`tests/fixtures/*/`): the first byte picks the supergraph, the rest is the operation, prepared and planned by
//! `State::prepare` under strict limits. No execution. Any panic is a bug.
#![no_main]

use graphfleet_gateway::pipeline::plan_cache::State;
use graphfleet_gateway::supergraph::Supergraph;
use graphfleet_gateway_fuzz::strict_config;
use libfuzzer_sys::fuzz_target;
use std::sync::LazyLock;

static STATES: LazyLock<Vec<State>> = LazyLock::new(|| {
    graphfleet_gateway_fuzz::audit_supergraphs()
        .into_iter()
        .chain(graphfleet_gateway_fuzz::fixture_supergraphs())
        .map(|text| {
            let supergraph = Supergraph::parse(&text).expect("audit and fixture supergraphs load");
            State::with_limits(supergraph, strict_config().limits)
        })
        .collect()
});

fuzz_target!(|data: &[u8]| {
    let Some((pick, query)) = data.split_first() else {
        return;
    };
    let state = &STATES[usize::from(*pick) % STATES.len()];
    let _ = state.prepare(&String::from_utf8_lossy(query), None);
});
