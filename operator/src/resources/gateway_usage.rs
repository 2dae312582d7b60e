//! The fleet's usage for plan warm-up: `<gateway>-usage`, a ConfigMap holding the
//! operations every gateway pod has served, merged, in the `/usage/operations` report
//! format the gateway's `usage.warm_up_file` reads. Every pod (stable and canary) mounts
//! it, optionally, at a fixed path, so a new pod plans the fleet's operations before it
//! reports ready while its template stays the same whatever the usage is: a change of
//! usage never rolls a pod or starts a canary.
//!
//! A ConfigMap holds at most 1 MiB, so the report keeps the most requested operations
//! within a byte budget. Its order (and so whether it needs writing again) changes only
//! when an operation's traffic doubles or another one comes or goes, not with every
//! request: operations are ranked by the power of two of their count, then by id.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, ConfigMapVolumeSource, Volume, VolumeMount};
use kube::ResourceExt;

use super::gateway_meta::{COMPONENT_LABEL, meta};
use super::short_hash;
use graphfleet_admin_api::{FleetOperation, FleetUsage, OperationUsage, UsageReport};
use graphfleet_api::GraphGateway;

/// What the usage ConfigMap is to its gateway.
pub const USAGE_COMPONENT: &str = "fleet-usage";
/// The key holding the report.
pub const USAGE_KEY: &str = "operations.json";
/// Where the pods mount it (the directory stays empty while the ConfigMap does not exist).
pub const USAGE_DIR: &str = "/etc/graphfleet/usage";
/// The pods' volume of it.
pub const USAGE_VOLUME: &str = "usage";
/// On the ConfigMap: the hash of the operations it holds, in order, so the operator
/// writes it only when they change.
pub const USAGE_HASH_ANNOTATION: &str = "graphfleet.dev/usage-hash";
/// Most bytes of report text kept (a ConfigMap holds at most 1 MiB, metadata included).
pub const USAGE_BUDGET_BYTES: usize = 768 << 10;

/// `<gateway>-usage`.
pub fn usage_config_map_name(gateway: &str) -> String {
    format!("{gateway}-usage")
}

/// The file the pods' `usage.warm_up_file` names.
pub fn warm_up_file() -> String {
    format!("{USAGE_DIR}/{USAGE_KEY}")
}

/// The pods' volume of the usage ConfigMap: optional, so a pod starting before the
/// operator first wrote it starts all the same (without warm-up).
pub fn usage_volume(gw: &GraphGateway) -> Volume {
    Volume {
        name: USAGE_VOLUME.to_owned(),
        config_map: Some(ConfigMapVolumeSource {
            name: usage_config_map_name(&gw.name_any()),
            optional: Some(true),
            ..ConfigMapVolumeSource::default()
        }),
        ..Volume::default()
    }
}

pub fn usage_volume_mount() -> VolumeMount {
    VolumeMount {
        name: USAGE_VOLUME.to_owned(),
        mount_path: USAGE_DIR.to_owned(),
        read_only: Some(true),
        ..VolumeMount::default()
    }
}

/// The rank of an operation: the power of two of its count, most requested first.
fn rank(op: &FleetOperation) -> std::cmp::Reverse<u32> {
    std::cmp::Reverse(op.count.checked_ilog2().unwrap_or(0))
}

/// The fleet's operations as a warm-up report of at most `budget` bytes of JSON: ranked
/// (see the module doc), an operation that does not fit left out and the next tried.
/// Clients are left out (the warm-up does not read them); `last_seen` is against `now`.
pub fn warm_up_report(fleet: &FleetUsage, now: u64, budget: usize) -> UsageReport {
    let mut ranked: Vec<(&String, &FleetOperation)> = fleet.operations.iter().collect();
    // `operations` is a map by id, so equal ranks are in id order already.
    ranked.sort_by_key(|(_, op)| rank(op));
    let mut report = UsageReport {
        now,
        requests: fleet.requests,
        ..UsageReport::default()
    };
    let mut size = json_len(&report);
    for (id, op) in ranked {
        let entry = OperationUsage {
            id: id.clone(),
            name: op.name.clone(),
            document: op.document.clone(),
            count: op.count,
            // Not merged across pods (nor read by the warm-up).
            first_seen: 0,
            last_seen: now.saturating_sub(op.last_seen_ago),
            clients: Vec::new(),
        };
        // One more entry costs its text and a comma.
        let cost = json_len(&entry) + usize::from(!report.operations.is_empty());
        if size + cost <= budget {
            size += cost;
            report.operations.push(entry);
        }
    }
    report
}

fn json_len<T: serde::Serialize>(value: &T) -> usize {
    serde_json::to_vec(value)
        .expect("a usage report serializes")
        .len()
}

/// The hash of what the warm-up reads from a report: its operations, in order. Counts
/// and times are left out, so more traffic of the same operations writes nothing.
pub fn usage_hash(report: &UsageReport) -> String {
    let ids: Vec<&str> = report.operations.iter().map(|o| o.id.as_str()).collect();
    short_hash(ids.join("\n").as_bytes())
}

/// The usage ConfigMap of `gw` holding `report`, its hash annotated.
pub fn usage_config_map(gw: &GraphGateway, report: &UsageReport) -> ConfigMap {
    let mut meta = meta(gw, usage_config_map_name(&gw.name_any()));
    meta.labels
        .get_or_insert_with(BTreeMap::new)
        .insert(COMPONENT_LABEL.to_owned(), USAGE_COMPONENT.to_owned());
    meta.annotations = Some(BTreeMap::from([(
        USAGE_HASH_ANNOTATION.to_owned(),
        usage_hash(report),
    )]));
    let text = serde_json::to_string(report).expect("a usage report serializes");
    ConfigMap {
        metadata: meta,
        data: Some(BTreeMap::from([(USAGE_KEY.to_owned(), text)])),
        ..ConfigMap::default()
    }
}

/// The hash a live usage ConfigMap was written with.
pub fn written_hash(config_map: &ConfigMap) -> Option<&str> {
    config_map
        .metadata
        .annotations
        .as_ref()?
        .get(USAGE_HASH_ANNOTATION)
        .map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use graphfleet_admin_api::ClientUsage;

    fn fleet(ops: &[(&str, u64, usize)]) -> FleetUsage {
        let mut fleet = FleetUsage::default();
        for (name, count, padding) in ops {
            fleet.requests += count;
            fleet.operations.insert(
                format!("id-{name}"),
                FleetOperation {
                    name: Some((*name).to_owned()),
                    document: format!("query {name} {{ a }}{}", " ".repeat(*padding)),
                    count: *count,
                    last_seen_ago: 5,
                    clients: vec![ClientUsage {
                        name: "web".to_owned(),
                        version: None,
                        count: *count,
                    }],
                },
            );
        }
        fleet
    }

    fn names(report: &UsageReport) -> Vec<&str> {
        report
            .operations
            .iter()
            .map(|o| o.name.as_deref().expect("named"))
            .collect()
    }

    fn gateway() -> GraphGateway {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "graphfleet.dev/v1alpha1",
            "kind": "GraphGateway",
            "metadata": { "name": "shop", "namespace": "prod", "uid": "0000-gw" },
            "spec": {},
        }))
        .expect("valid GraphGateway")
    }

    #[test]
    fn the_most_requested_come_first_ranked_by_powers_of_two() {
        let report = warm_up_report(
            &fleet(&[
                ("Rare", 1, 0),
                ("Top", 900, 0),
                ("Mid", 40, 0),
                ("Near", 600, 0),
            ]),
            1_000,
            USAGE_BUDGET_BYTES,
        );
        // 900 and 600 share a power of two (512..1023): by id then.
        assert_eq!(names(&report), ["Near", "Top", "Mid", "Rare"]);
        assert_eq!(report.requests, 1_541);
        assert_eq!(report.operations[0].last_seen, 995);
        assert!(report.operations.iter().all(|o| o.clients.is_empty()));
    }

    #[test]
    fn the_report_fits_its_budget_leaving_out_what_does_not_fit() {
        let usage = fleet(&[
            ("A", 100, 300),
            ("Big", 50, 5_000),
            ("B", 10, 300),
            ("C", 1, 300),
        ]);
        let all = warm_up_report(&usage, 0, usize::MAX);
        assert_eq!(names(&all), ["A", "Big", "B", "C"]);
        // Room for A, B and C but not Big: Big is left out, the smaller ones after it kept.
        let budget = json_len(&all) - 4_000;
        let bounded = warm_up_report(&usage, 0, budget);
        assert_eq!(names(&bounded), ["A", "B", "C"]);
        assert!(json_len(&bounded) <= budget);
        // The size is counted exactly: one byte less drops the last that fitted.
        let exact = warm_up_report(&usage, 0, json_len(&bounded));
        assert_eq!(exact, bounded);
        let short = warm_up_report(&usage, 0, json_len(&bounded) - 1);
        assert_eq!(names(&short), ["A", "B"]);
        assert!(warm_up_report(&usage, 0, 10).operations.is_empty());
    }

    #[test]
    fn a_budget_of_many_operations_stays_within_a_config_map() {
        let ops: Vec<(String, u64)> = (0..5_000).map(|i| (format!("Op{i}"), i)).collect();
        let ops: Vec<(&str, u64, usize)> = ops.iter().map(|(n, c)| (n.as_str(), *c, 400)).collect();
        let usage = fleet(&ops);
        let report = warm_up_report(&usage, 0, USAGE_BUDGET_BYTES);
        let config_map = usage_config_map(&gateway(), &report);
        let text = &config_map.data.as_ref().expect("data")[USAGE_KEY];
        assert!(text.len() <= USAGE_BUDGET_BYTES);
        assert!(report.operations.len() > 1_000 && report.operations.len() < 5_000);
        // The kept ones are the most requested.
        assert!(report.operations.iter().all(|o| o.count >= 2_048));
    }

    #[test]
    fn the_hash_follows_the_operations_and_their_order_not_their_counts() {
        let before = warm_up_report(&fleet(&[("A", 100, 0), ("B", 10, 0)]), 0, usize::MAX);
        let more = warm_up_report(&fleet(&[("A", 120, 0), ("B", 12, 0)]), 60, usize::MAX);
        assert_eq!(usage_hash(&before), usage_hash(&more));
        let overtaken = warm_up_report(&fleet(&[("A", 100, 0), ("B", 300, 0)]), 0, usize::MAX);
        assert_ne!(usage_hash(&before), usage_hash(&overtaken));
        let new = warm_up_report(
            &fleet(&[("A", 100, 0), ("B", 10, 0), ("C", 1, 0)]),
            0,
            usize::MAX,
        );
        assert_ne!(usage_hash(&before), usage_hash(&new));
    }

    #[test]
    fn the_config_map_is_the_report_the_gateway_reads() {
        let report = warm_up_report(
            &fleet(&[("Top", 9, 0), ("Me", 3, 0)]),
            1_000,
            USAGE_BUDGET_BYTES,
        );
        let config_map = usage_config_map(&gateway(), &report);
        assert_eq!(
            written_hash(&config_map),
            Some(usage_hash(&report).as_str())
        );
        let text = &config_map.data.as_ref().expect("data")[USAGE_KEY];
        let read: UsageReport = serde_json::from_str(text).expect("the gateway's format");
        assert_eq!(read, report);
        insta::assert_yaml_snapshot!(config_map);
    }

    #[test]
    fn the_volume_is_optional_and_its_file_is_where_the_config_says() {
        let volume = usage_volume(&gateway());
        let source = volume.config_map.expect("a ConfigMap volume");
        assert_eq!(source.name, "shop-usage");
        assert_eq!(source.optional, Some(true));
        let mount = usage_volume_mount();
        assert_eq!(mount.name, volume.name);
        assert_eq!(format!("{}/{USAGE_KEY}", mount.mount_path), warm_up_file());
    }
}
