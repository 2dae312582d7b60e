//! Writes every CRD to `crds/<plural>.yaml` (default directory: the workspace's `crds/`).

use std::path::PathBuf;

use anyhow::Context;

fn main() -> anyhow::Result<()> {
    let dir = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../crds"));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    for (stem, crd) in graphfleet_api::all_crds() {
        let path = dir.join(format!("{stem}.yaml"));
        std::fs::write(&path, graphfleet_api::crd_yaml(&crd))
            .with_context(|| format!("writing {}", path.display()))?;
        println!("wrote {}", path.display());
    }
    Ok(())
}
