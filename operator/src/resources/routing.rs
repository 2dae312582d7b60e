//! The GraphGateway's header rules and progressive override labels, in the gateway
//! config file's key names (`headers.rules`, `subgraphs.<name>.headers`,
//! `progressive_override`).

use serde_json::{Map, Value, json};

use crate::crd::{GatewayConfig, HeaderRuleSpec};

/// Add the routing settings `c` sets to the gateway config `root`.
pub(super) fn routing_sections(root: &mut Map<String, Value>, c: &GatewayConfig) {
    if !c.header_rules.is_empty() {
        object(root, "headers").insert("rules".to_owned(), rules(&c.header_rules));
    }
    for own in &c.subgraph_header_rules {
        let subgraphs = object(root, "subgraphs");
        object(subgraphs, &own.subgraph).insert("headers".to_owned(), rules(&own.rules));
    }
    if let Some(po) = &c.progressive_override {
        let mut section = Map::new();
        for (key, labels) in [
            ("enabled_labels", &po.enabled_labels),
            ("disabled_labels", &po.disabled_labels),
        ] {
            if !labels.is_empty() {
                section.insert(key.to_owned(), Value::from(labels.clone()));
            }
        }
        if !section.is_empty() {
            root.insert("progressive_override".to_owned(), Value::Object(section));
        }
    }
}

/// `parent[key]` as an object, made empty when absent.
pub(super) fn object<'a>(
    parent: &'a mut Map<String, Value>,
    key: &str,
) -> &'a mut Map<String, Value> {
    parent
        .entry(key.to_owned())
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .expect("routing sections are only ever objects")
}

fn rules(specs: &[HeaderRuleSpec]) -> Value {
    Value::Array(specs.iter().map(rule).collect())
}

/// One rule; only the set keys, so the gateway's own checks see what the user wrote.
fn rule(spec: &HeaderRuleSpec) -> Value {
    let set = |pairs: &[(&str, &Option<String>)]| {
        let map: Map<String, Value> = pairs
            .iter()
            .filter_map(|(k, v)| {
                v.as_ref()
                    .map(|v| ((*k).to_owned(), Value::from(v.clone())))
            })
            .collect();
        Value::Object(map)
    };
    let mut out = Map::new();
    if let Some(p) = &spec.propagate {
        let keys = [
            ("named", &p.named),
            ("matching", &p.matching),
            ("rename", &p.rename),
            ("default", &p.default),
        ];
        out.insert("propagate".to_owned(), set(&keys));
    }
    if let Some(i) = &spec.insert {
        let mut insert = set(&[("value", &i.value), ("from_claim", &i.from_claim)]);
        insert["name"] = json!(i.name);
        out.insert("insert".to_owned(), insert);
    }
    if let Some(r) = &spec.remove {
        let keys = [("named", &r.named), ("matching", &r.matching)];
        out.insert("remove".to_owned(), set(&keys));
    }
    Value::Object(out)
}
