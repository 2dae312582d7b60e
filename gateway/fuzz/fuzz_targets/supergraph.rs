//! Supergraph loading: arbitrary text through `Supergraph::parse`, the loader hot
//! reload runs on. It must answer with a value or an error, never panic: a panic
//! there would stop reloads while the gateway keeps serving the old supergraph.
#![no_main]

use graphfleet_gateway::supergraph::Supergraph;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = Supergraph::parse(text);
    }
});
