//! Composition speed on the benchmark sets (target: many-plans, 7 subgraphs, < 50 ms).
//! Compare with @apollo/composition: `node composition/benches/apollo-timing.mjs CONFIG`.

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use graphfleet_composition::{compose, config::load_config};

fn bench_sets(c: &mut Criterion) {
    let sets = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/sets");
    for set in ["many-plans", "fed", "apollo"] {
        let config = sets.join(set).join("supergraph.yaml");
        if !config.is_file() {
            eprintln!("skipping {set}: {} not found", config.display());
            continue;
        }
        let subgraphs = load_config(&config).expect("benchmark set config loads");
        compose(&subgraphs).expect("benchmark set composes");
        c.bench_function(&format!("compose/{set}"), |b| {
            b.iter(|| compose(black_box(&subgraphs)).expect("composes"))
        });
    }
}

criterion_group!(benches, bench_sets);
criterion_main!(benches);
