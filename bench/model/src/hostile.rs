//! Operations only an attacker writes, shared by the gateway's tests (which assert how each
//! is answered) and `graphfleet-bench hostile` (which measures it against release binaries),
//! so both speak of the same requests. All are against the `fed` set unless noted.

/// A supergraph of one subgraph, `big` at `SUBGRAPH_URL`, serving `blob: [String!]!`: what
/// the memory-budget attacks are answered from (a subgraph answering every request with
/// the same big body).
pub const BIG_SUPERGRAPH: &str = include_str!("hostile-big.graphql");

/// `n` fragments on `Review` under `topProducts { reviews { … } }`, `F0` selecting `body`
/// and `F<i>` selecting `field(i)` (which spreads `F<i-1>`).
pub fn doubling(n: usize, field: impl Fn(usize) -> String) -> String {
    let mut text = format!("query {{ topProducts {{ reviews {{ ...F{n} }} }} }}\n");
    text.push_str("fragment F0 on Review { body }\n");
    for i in 1..=n {
        text.push_str(&format!("fragment F{i} on Review {{ {} }}\n", field(i)));
    }
    text
}

/// [`doubling`] where each fragment selects the previous one under two aliases: it
/// really selects 2^n fields, and its plan prints subgraph queries fifty times its text.
pub fn doubling_aliases(n: usize) -> String {
    doubling(n, |i| {
        let prev = i - 1;
        format!("a: author {{ reviews {{ ...F{prev} }} }} b: author {{ reviews {{ ...F{prev} }} }}")
    })
}

/// `aliases` aliases of `name` on every `User` reached through `hops` times
/// `reviews { product { reviews { author {`: one accounts answer per distinct user,
/// copied into each of the many objects that asked for it (three hops: 5,632 objects).
pub fn fan_out(hops: usize, aliases: usize) -> String {
    let names: Vec<String> = (0..aliases).map(|i| format!("n{i}: name")).collect();
    let mut user = format!("id {}", names.join(" "));
    for _ in 0..hops {
        user = format!("id reviews {{ product {{ reviews {{ author {{ {user} }} }} }} }}");
    }
    format!("{{ topProducts(first: 9) {{ reviews {{ author {{ {user} }} }} }} }}")
}

/// `__type(name: "__Type")` with `levels` nested `fields { name type { name … } }`, the
/// last one `fields { name }`: 2 * `levels` + 1 deep. `__Type.ofType` is a nullable
/// `__Type`, so the answer really nests that deep (three JSON levels per level).
pub fn nested_introspection(levels: usize) -> String {
    let mut selection = "fields { name }".to_owned();
    for _ in 1..levels {
        selection = format!("fields {{ name type {{ name {selection} }} }}");
    }
    format!("{{ __type(name: \"__Type\") {{ name {selection} }} }}")
}

/// A fragment chain of `levels` on `__Type`: each level reaches every object type the
/// last one's fields return (`__Type`, `__Field`, `__InputValue`, `__EnumValue`,
/// unwrapping up to three list and non-null wrappers), so the answer grows about sixfold
/// a level while the text grows by one fragment.
pub fn exponential_introspection(levels: usize) -> String {
    let mut text = format!("{{ __type(name: \"__Type\") {{ ...L{levels} }} }}\n");
    text.push_str("fragment L0 on __Type { name }\n");
    for i in 1..=levels {
        let p = i - 1;
        text.push_str(&format!(
            "fragment L{i} on __Type {{ name fields {{ type {{ ...L{p} ofType {{ ...L{p} ofType {{ ...L{p} ofType {{ ...L{p} }} }} }} }} }} }}\n"
        ));
    }
    text
}

/// A GET target of `/graphql` whose query string is `len` bytes: `{ users { name } }`
/// (a query of the `keys` fixture and of `fed`) and padding.
pub fn long_get_target(len: usize) -> String {
    let mut query = "query=%7B%20users%20%7B%20name%20%7D%20%7D&pad=".to_owned();
    query.extend(std::iter::repeat_n('x', len.saturating_sub(query.len())));
    format!("/graphql?{query}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_grow_as_documented() {
        assert_eq!(
            fan_out(0, 2),
            "{ topProducts(first: 9) { reviews { author { id n0: name n1: name } } } }"
        );
        assert_eq!(fan_out(1, 1).matches("reviews {").count(), 3);
        assert_eq!(doubling_aliases(3).matches("fragment").count(), 4);
        assert_eq!(nested_introspection(3).matches("fields {").count(), 3);
        assert_eq!(exponential_introspection(2).lines().count(), 4);
        let target = long_get_target(70_000);
        assert_eq!(target.len(), "/graphql?".len() + 70_000);
    }
}
