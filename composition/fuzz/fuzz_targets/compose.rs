//! `compose` must answer every input with a supergraph or errors, never a panic.
//! The input is split into up to three subgraph SDLs at NUL bytes; a federation
//! `@link` prefix is added to some so the fuzzer reaches merging, not just parsing.
#![no_main]

use graphfleet_composition::{SubgraphInput, compose};
use libfuzzer_sys::fuzz_target;

const LINK: &str = "extend schema @link(url: \"https://specs.apollo.dev/federation/v2.7\", import: [\"@key\", \"@shareable\", \"@external\", \"@requires\", \"@provides\", \"@override\", \"@inaccessible\", \"@tag\", \"@interfaceObject\"])\n";

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let subgraphs: Vec<SubgraphInput> = text
        .split('\0')
        .take(3)
        .enumerate()
        .map(|(i, sdl)| SubgraphInput {
            name: format!("s{i}"),
            url: format!("http://s{i}"),
            sdl: if i % 2 == 0 {
                format!("{LINK}{sdl}")
            } else {
                sdl.to_owned()
            },
        })
        .collect();
    let _ = compose(&subgraphs);
});
