//! `crds/` must be exactly what `crdgen` renders from the Rust types.

use std::path::PathBuf;

#[test]
fn committed_crds_match_the_rust_types() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../crds");
    let mut stale = Vec::new();
    for (stem, crd) in graphfleet_api::all_crds() {
        let path = dir.join(format!("{stem}.yaml"));
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if committed != graphfleet_api::crd_yaml(&crd) {
            stale.push(path.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "stale CRDs {stale:?}: run `cargo run -p graphfleet-api --bin crdgen`"
    );
}

#[test]
fn gateway_crd_has_scale_status_and_printer_columns() {
    let (_, crd) = graphfleet_api::all_crds()
        .into_iter()
        .find(|(stem, _)| *stem == "graphgateways")
        .expect("graphgateways CRD is generated");
    let version = &crd.spec.versions[0];
    let sub = version.subresources.as_ref().expect("subresources");
    assert!(sub.status.is_some());
    let scale = sub.scale.as_ref().expect("scale subresource");
    assert_eq!(scale.spec_replicas_path, ".spec.replicas");
    assert_eq!(
        scale.label_selector_path.as_deref(),
        Some(".status.selector")
    );
    let columns: Vec<_> = version
        .additional_printer_columns
        .iter()
        .flatten()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(
        columns,
        [
            "Ready",
            "Composed",
            "Replicas",
            "Available",
            "Supergraph",
            "Phase",
            "Age"
        ]
    );
}
