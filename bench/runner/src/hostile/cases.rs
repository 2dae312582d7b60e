//! The attacks measured, by class: what each sends, against which subgraphs, with which
//! settings on top of the defaults, and how long it may take.

use std::time::Duration;

/// Which subgraphs a gateway is put in front of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Graph {
    /// The `fed` set's subgraphs, a `graphfleet-subgraphs` process.
    Fed,
    /// The `fed` supergraph with every subgraph at a closed port: each fetch fails at
    /// once, so only planning and the plan cache are at work.
    FedUnreachable,
    /// The runner's own subgraph answering every request with a big body.
    Big,
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum Attack {
    /// One request of `hostile::fan_out(3, aliases)`.
    FanOut { aliases: usize },
    /// `clients` requests at once, each answered from the big subgraph's body.
    MemoryBurst { clients: usize },
    /// `connections` silent TCP connections, then a query timed.
    Silent { connections: usize },
    /// At most `messages` subscribes on one socket that never reads.
    Flood { messages: usize },
    /// `operations` distinct `doubling_aliases(levels)` operations.
    PlanCache { operations: usize, levels: usize },
    /// `nested_introspection(levels)`: an answer deeper than serde_json reads.
    DeepIntrospection { levels: usize },
    /// `exponential_introspection(levels)`: an answer growing sixfold a level.
    ExponentialIntrospection { levels: usize },
    /// A GET with a query string of `bytes`.
    LongGet { bytes: usize },
}

pub(crate) struct Case {
    pub(crate) class: &'static str,
    pub(crate) name: String,
    pub(crate) graph: Graph,
    /// Settings every binary must accept (the attack needs them).
    pub(crate) required: Vec<String>,
    /// Settings passed to the binaries that accept them (a hardening's own keys).
    pub(crate) optional: Vec<String>,
    pub(crate) attack: Attack,
    /// The most the attack may take; past it, it is reported as a timeout.
    pub(crate) bound: Duration,
}

/// The class names, in the order they run.
pub(crate) const CLASSES: &[&str] = &[
    "fan-out",
    "memory-burst",
    "silent-connections",
    "websocket-flood",
    "plan-cache",
    "introspection",
    "long-get",
];

fn settings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

/// Every case, in class order.
pub(crate) fn all() -> Vec<Case> {
    let case = |class, name: &str, graph, attack, bound_s| Case {
        class,
        name: name.to_owned(),
        graph,
        required: Vec::new(),
        optional: Vec::new(),
        attack,
        bound: Duration::from_secs(bound_s),
    };
    let mut out = Vec::new();
    for aliases in [250, 500, 1000] {
        out.push(case(
            "fan-out",
            &format!("fan-out, {aliases} aliases"),
            Graph::Fed,
            Attack::FanOut { aliases },
            90,
        ));
    }
    // What a 512Mi container derives (half its limit), and the default derived here.
    for (name, budget) in [
        (
            "32 × 60 MiB, 256 MiB budget",
            &["limits.max_inflight_bytes=256MiB"][..],
        ),
        ("32 × 60 MiB, derived budget", &[]),
    ] {
        let mut burst = case(
            "memory-burst",
            name,
            Graph::Big,
            Attack::MemoryBurst { clients: 32 },
            90,
        );
        // Deduplication would answer the 32 identical requests from one subgraph body.
        burst.required = settings(&["traffic.deduplicate=false"]);
        burst.optional = settings(budget);
        out.push(burst);
    }
    let mut silent = case(
        "silent-connections",
        "200 silent connections, max 64",
        Graph::Fed,
        Attack::Silent { connections: 200 },
        30,
    );
    silent.required = settings(&["traffic.max_connections=64"]);
    // A quarter of max_connections, the defaults' ratio (2,500 of 10,000).
    silent.optional = settings(&["traffic.max_connections_per_client=16"]);
    out.push(silent);
    out.push(case(
        "websocket-flood",
        "1,000,000 subscribes, never read",
        Graph::Fed,
        Attack::Flood {
            messages: 1_000_000,
        },
        40,
    ));
    // 400 fit either cache's 16 MiB; by 2,000 the old weight (the text) keeps them all.
    for operations in [400, 2000] {
        out.push(case(
            "plan-cache",
            &format!("{operations} operations of 8 doubling fragments"),
            Graph::FedUnreachable,
            Attack::PlanCache {
                operations,
                levels: 8,
            },
            120,
        ));
    }
    out.push(case(
        "introspection",
        "fields { type { … } } 95 deep",
        Graph::Fed,
        Attack::DeepIntrospection { levels: 47 },
        60,
    ));
    out.push(case(
        "introspection",
        "10 fragments growing sixfold",
        Graph::Fed,
        Attack::ExponentialIntrospection { levels: 10 },
        60,
    ));
    out.push(case(
        "long-get",
        "GET with a 70 KiB query string",
        Graph::Fed,
        Attack::LongGet { bytes: 70 * 1024 },
        30,
    ));
    out
}

/// The cases of `classes` (all when empty); an unknown class is an error.
pub(crate) fn select(classes: &[String]) -> anyhow::Result<Vec<Case>> {
    for class in classes {
        if !CLASSES.contains(&class.as_str()) {
            anyhow::bail!(
                "unknown class {class:?}; the classes are {}",
                CLASSES.join(", ")
            );
        }
    }
    Ok(all()
        .into_iter()
        .filter(|c| classes.is_empty() || classes.iter().any(|k| k == c.class))
        .collect())
}
