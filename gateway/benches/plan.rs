//! Cold planning: one operation prepared (parse, validate, lower) and planned, with no
//! cache, for the benchmark sets' operations. Plans are cached per operation text, so
//! this is what the first request of each distinct operation pays.

use criterion::{Criterion, criterion_group, criterion_main};
use graphfleet_gateway::supergraph::Supergraph;
use graphfleet_gateway::{operation, query_planner};
use std::hint::black_box;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn read(path: &str) -> String {
    let full = format!("{}/../bench/sets/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("read {full}: {e}"))
}

fn bench(c: &mut Criterion) {
    let cases = [
        ("fed/query", "fed", "fed/queries/query.graphql"),
        (
            "many-plans",
            "many-plans",
            "many-plans/queries/many-plans.graphql",
        ),
        ("apollo/chain", "apollo", "apollo/queries/chain.graphql"),
    ];
    let mut group = c.benchmark_group("plan");
    for (name, set, query) in cases {
        let supergraph = Supergraph::parse(&read(&format!("{set}/supergraph.graphql")))
            .expect("benchmark supergraph loads");
        let query = read(query);
        group.bench_function(name, |b| {
            b.iter(|| {
                let prepared = operation::prepare(&supergraph.api_schema, black_box(&query), None)
                    .expect("benchmark operation is valid");
                query_planner::build_plan(&supergraph.meta, &prepared.ir, None)
                    .expect("benchmark operation plans")
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
