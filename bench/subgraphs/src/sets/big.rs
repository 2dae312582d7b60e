//! The big-response set: 1,000 seeded pseudo-random nodes served by `sub0`
//! (payload), `sub1` (`name`, forcing an entity fetch) and `sub2` (`extra`,
//! with a built-in 100 ms latency for long-lived-big-response).

use std::sync::{Arc, LazyLock};

use serde_json::Value;

use crate::engine::{Args, Object, Service, Val, key_string, representation};

const NODE_COUNT: usize = 1000;
const MAX_LIST: u64 = 64;
const MAX_STRING: u64 = 128;
const SEED: u64 = 0x6772_6166_666c_6565; // "graffleet"
/// Bounds `nodes(n)` so a single request cannot ask for unbounded output.
const MAX_N: i64 = 10_000;

pub struct Node {
    id: String,
    floats: Vec<f64>,
    ints: Vec<i64>,
    strings: Vec<String>,
    float: f64,
    int: i64,
    string: String,
    name: String,
    extra: String,
}

/// splitmix64: tiny, deterministic, good enough for benchmark payloads.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> usize {
        usize::try_from(self.next() % n).unwrap_or(0)
    }

    fn float(&mut self) -> f64 {
        // 53 random bits scaled to ±1e6: long, varied decimal representations.
        let unit = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        (unit - 0.5) * 2e6
    }

    fn int(&mut self) -> i64 {
        i64::from(self.next() as i32)
    }

    fn string(&mut self, max_len: u64) -> String {
        const LETTERS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
        let len = self.below(max_len + 1);
        (0..len)
            .map(|_| char::from(LETTERS[self.below(LETTERS.len() as u64)]))
            .collect()
    }
}

fn generate() -> Vec<Node> {
    let mut rng = Rng(SEED);
    (0..NODE_COUNT)
        .map(|i| {
            let floats = (0..rng.below(MAX_LIST + 1)).map(|_| rng.float()).collect();
            let ints = (0..rng.below(MAX_LIST + 1)).map(|_| rng.int()).collect();
            let strings = (0..rng.below(MAX_LIST + 1))
                .map(|_| rng.string(MAX_STRING))
                .collect();
            Node {
                id: i.to_string(),
                floats,
                ints,
                strings,
                float: rng.float(),
                int: rng.int(),
                string: rng.string(MAX_STRING),
                name: format!("node-{i}-{}", rng.string(16)),
                extra: format!("extra-{i}"),
            }
        })
        .collect()
}

static NODES: LazyLock<Arc<Vec<Node>>> = LazyLock::new(|| Arc::new(generate()));

pub fn nodes() -> Arc<Vec<Node>> {
    NODES.clone()
}

fn count(args: &Args<'_>) -> Result<usize, String> {
    match args.int("n")? {
        Some(n) if (0..=MAX_N).contains(&n) => Ok(usize::try_from(n).unwrap_or(0)),
        Some(n) => Err(format!("\"n\" must be between 0 and {MAX_N}, got {n}.")),
        None => Err("\"n\" is required.".into()),
    }
}

/// Which fields an endpoint resolves: the subgraphs each own a part, the monolith all.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Sub0,
    Sub1,
    Sub2,
    All,
}

struct NodeObj<'a> {
    all: &'a [Node],
    node: &'a Node,
    index: usize,
    part: Part,
}

impl<'a> NodeObj<'a> {
    fn list(all: &'a [Node], part: Part, ids: impl Iterator<Item = usize>) -> Val<'a> {
        Val::List(
            ids.map(|i| {
                let index = i % all.len();
                Val::obj(NodeObj {
                    all,
                    node: &all[index],
                    index,
                    part,
                })
            })
            .collect(),
        )
    }
}

impl<'a> Object<'a> for NodeObj<'a> {
    fn typename(&self) -> &'a str {
        "Node"
    }

    fn field(&self, name: &str, args: &Args<'_>) -> Val<'a> {
        let n = self.node;
        let sub0 = matches!(self.part, Part::Sub0 | Part::All);
        match name {
            "id" => Val::Str(&n.id),
            "name" if matches!(self.part, Part::Sub1 | Part::All) => Val::Str(&n.name),
            "extra" if matches!(self.part, Part::Sub2 | Part::All) => Val::Str(&n.extra),
            _ if !sub0 => Val::Null,
            "floats" => Val::Floats(&n.floats),
            "ints" => Val::Ints(&n.ints),
            "strings" => Val::Strs(&n.strings),
            "float" => Val::Float(n.float),
            "int" => Val::Int(n.int),
            "string" => Val::Str(&n.string),
            "nodes" => match count(args) {
                Ok(count) => {
                    let start = self.index * 31 + 1;
                    NodeObj::list(self.all, self.part, (0..count).map(|k| start + k * 17))
                }
                Err(e) => Val::Err(e),
            },
            _ => Val::Null,
        }
    }
}

pub struct BigService {
    pub nodes: Arc<Vec<Node>>,
    pub part: Part,
}

struct BigQuery<'a>(&'a BigService);

impl<'a> Object<'a> for BigQuery<'a> {
    fn typename(&self) -> &'a str {
        "Query"
    }

    fn field(&self, name: &str, args: &Args<'_>) -> Val<'a> {
        match (name, count(args)) {
            ("nodes", Ok(count)) => NodeObj::list(&self.0.nodes, self.0.part, 0..count),
            ("nodes", Err(e)) => Val::Err(e),
            _ => Val::Null,
        }
    }
}

impl Service for BigService {
    fn query(&self) -> Box<dyn Object<'_> + '_> {
        Box::new(BigQuery(self))
    }

    fn entity(&self, rep: &Value) -> Val<'_> {
        let (typename, id) = match representation(rep, "id") {
            Ok(found) => found,
            Err(e) => return Val::Err(e),
        };
        if typename != "Node" {
            return Val::Err(format!("Unknown entity type {typename}."));
        }
        let index = key_string(id).and_then(|id| id.parse::<usize>().ok());
        match index.filter(|i| *i < self.nodes.len()) {
            Some(index) => Val::obj(NodeObj {
                all: &self.nodes,
                node: &self.nodes[index],
                index,
                part: self.part,
            }),
            None => Val::Null,
        }
    }
}
