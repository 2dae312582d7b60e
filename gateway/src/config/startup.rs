//! Start-up checks beyond the schema's own (`graphfleet_config::validate`).

use super::tls;
use graphfleet_config::{Config, Problems};

/// What only the running gateway can check: a supergraph to serve, and the files the
/// settings name (TLS PEMs, the persisted document list) readable and usable.
pub(super) fn startup_checks(config: &Config) -> Problems {
    let mut out = Problems::new();
    let mut report = |path: &[&str], message: String| {
        out.push((path.iter().map(|s| (*s).to_owned()).collect(), message));
    };
    if config.supergraph.path.is_none() {
        report(
            &["supergraph", "path"],
            "required: set it in the config file, as GRAPHFLEET_SUPERGRAPH__PATH, or with \
             --supergraph PATH"
                .to_owned(),
        );
    }
    tls::validate(config, &mut report);
    let docs = &config.persisted_documents;
    if let Some(path) = &docs.path
        && let Err(e) = crate::persisted::manifest::load(path, docs.format)
    {
        report(&["persisted_documents", "path"], e.to_string());
    }
    out
}
