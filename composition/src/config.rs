//! Rover-style `supergraph.yaml` configs: `subgraphs: {name: {routing_url, schema: {file|sdl}}}`.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::SubgraphInput;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("reading {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("parsing {path}: {source}")]
    Parse {
        path: PathBuf,
        source: serde_yaml_ng::Error,
    },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
}

#[derive(Deserialize)]
struct Config {
    #[serde(default)]
    federation_version: Option<serde_yaml_ng::Value>,
    /// A mapping, not a map type, to keep the file's subgraph order.
    subgraphs: serde_yaml_ng::Mapping,
}

#[derive(Deserialize)]
struct SubgraphConfig {
    routing_url: Option<String>,
    schema: SchemaSource,
}

#[derive(Deserialize)]
struct SchemaSource {
    file: Option<PathBuf>,
    sdl: Option<String>,
}

/// Reads a config and every subgraph schema it names (paths relative to the config file).
pub fn load_config(path: &Path) -> Result<Vec<SubgraphInput>, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_owned(),
        source,
    })?;
    let base = path.parent().unwrap_or(Path::new("."));
    parse_config(&text, base).map_err(|e| match e {
        ConfigError::Parse { source, .. } => ConfigError::Parse {
            path: path.to_owned(),
            source,
        },
        ConfigError::Invalid { message, .. } => ConfigError::Invalid {
            path: path.to_owned(),
            message,
        },
        other => other,
    })
}

/// Parses config text; schema files are resolved against `base`.
pub fn parse_config(text: &str, base: &Path) -> Result<Vec<SubgraphInput>, ConfigError> {
    let invalid = |message: String| ConfigError::Invalid {
        path: PathBuf::new(),
        message,
    };
    let config: Config = serde_yaml_ng::from_str(text).map_err(|source| ConfigError::Parse {
        path: PathBuf::new(),
        source,
    })?;
    check_federation_version(config.federation_version.as_ref()).map_err(invalid)?;
    let mut out = Vec::new();
    for (name, value) in config.subgraphs {
        let name = name
            .as_str()
            .ok_or_else(|| invalid("subgraph names must be strings".to_owned()))?
            .to_owned();
        let sg: SubgraphConfig = serde_yaml_ng::from_value(value)
            .map_err(|e| invalid(format!("subgraph \"{name}\": {e}")))?;
        let sdl = match (sg.schema.sdl, sg.schema.file) {
            (Some(sdl), _) => sdl,
            (None, Some(file)) => {
                let file = base.join(file);
                std::fs::read_to_string(&file)
                    .map_err(|source| ConfigError::Read { path: file, source })?
            }
            (None, None) => {
                return Err(invalid(format!(
                    "subgraph \"{name}\": schema needs `file` or `sdl`"
                )));
            }
        };
        let url = sg
            .routing_url
            .ok_or_else(|| invalid(format!("subgraph \"{name}\" has no routing_url")))?;
        out.push(SubgraphInput { name, url, sdl });
    }
    Ok(out)
}

/// Accepts rover's `federation_version` forms (`2`, `=2.3.2`, `2.9`); Federation 2 only.
fn check_federation_version(v: Option<&serde_yaml_ng::Value>) -> Result<(), String> {
    let text = match v {
        None => return Ok(()),
        Some(serde_yaml_ng::Value::String(s)) => s.clone(),
        Some(serde_yaml_ng::Value::Number(n)) => n.to_string(),
        Some(_) => return Err("federation_version must be a string or number".to_owned()),
    };
    let trimmed = text.trim_start_matches('=').trim_start_matches('v');
    if trimmed == "2" || trimmed.starts_with("2.") {
        Ok(())
    } else {
        Err(format!(
            "unsupported federation_version \"{text}\": only Federation 2 composition is supported"
        ))
    }
}
