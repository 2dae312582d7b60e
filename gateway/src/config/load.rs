//! Loading: the YAML (or JSON) file, then `GRAPHFLEET_*` environment overrides, then
//! CLI flags, merged as YAML values and deserialized once. Every setting remembers
//! which source wrote it last, so an error names the file, variable or flag to fix.

use super::Config;
use super::validate::validate;
use serde_yaml_ng::{Mapping, Value};
use std::fmt;
use std::path::{Path, PathBuf};

/// Environment variable naming the config file (`--config` wins over it).
pub const CONFIG_ENV: &str = "GRAPHFLEET_CONFIG";
/// Prefix of environment overrides: `GRAPHFLEET_<SECTION>__<KEY>`.
pub const ENV_PREFIX: &str = "GRAPHFLEET_";

/// `GRAPHFLEET_` variables that belong to the project's other tools (operator, load test,
/// scripts), not to the gateway: a shell or pod that has them still starts the gateway.
pub const FOREIGN_ENV: &[&str] = &[
    "GRAPHFLEET_APT_SOURCES",
    "GRAPHFLEET_CACHE",
    "GRAPHFLEET_CAPACITY",
    "GRAPHFLEET_CONCURRENCY",
    "GRAPHFLEET_DEBOUNCE_MS",
    "GRAPHFLEET_DURATION",
    "GRAPHFLEET_GATEWAY_IMAGE",
    "GRAPHFLEET_IMAGE_PROFILE",
    "GRAPHFLEET_K6_IMAGE",
    "GRAPHFLEET_KUBELET_ARGS",
    "GRAPHFLEET_KUBELET_ARGS_CLIENT",
    "GRAPHFLEET_KUBELET_ARGS_ROUTER",
    "GRAPHFLEET_KUBELET_ARGS_SUBGRAPH",
    "GRAPHFLEET_LEADER_ELECTION",
    "GRAPHFLEET_LEASE_DURATION_SECONDS",
    "GRAPHFLEET_LEASE_NAME",
    "GRAPHFLEET_LOG_FORMAT",
    "GRAPHFLEET_OPERATOR_BIN",
    "GRAPHFLEET_OPS_ADDR",
    "GRAPHFLEET_PEERS",
    "GRAPHFLEET_PREBUILT",
    "GRAPHFLEET_RATE",
    "GRAPHFLEET_RESYNC_SECONDS",
    "GRAPHFLEET_STATE",
    "GRAPHFLEET_TEST_KUBECONFIG",
    "GRAPHFLEET_TEST_REAL_STATE",
];

/// Where a setting came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    File(PathBuf),
    /// The environment variable's name.
    Env(String),
    /// The flag as the user would recognise it, e.g. `--set limits.max_depth`.
    Flag(String),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::File(path) => write!(f, "config file {}", path.display()),
            Source::Env(name) => write!(f, "env {name}"),
            Source::Flag(flag) => write!(f, "flag {flag}"),
        }
    }
}

/// One setting written by the environment or a flag.
#[derive(Debug, Clone, PartialEq)]
pub struct Override {
    /// Keys from the root, e.g. `["limits", "max_depth"]`.
    pub path: Vec<String>,
    pub value: Value,
    pub source: Source,
}

/// Everything the loader reads, so tests can feed it without touching the process.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    /// `--config FILE`; else `GRAPHFLEET_CONFIG` from `env`; else no file.
    pub file: Option<PathBuf>,
    /// The process environment (only `GRAPHFLEET_*` variables are read).
    pub env: Vec<(String, String)>,
    /// CLI overrides in command-line order.
    pub flags: Vec<Override>,
}

/// One thing wrong with the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The source that wrote the offending setting; `None` for a default.
    pub source: Option<Source>,
    /// Dotted path of the setting (empty for a whole source).
    pub path: String,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(source) = &self.source {
            write!(f, "{source}: ")?;
        }
        if !self.path.is_empty() {
            write!(f, "{}: ", self.path)?;
        }
        f.write_str(&self.message)
    }
}

/// A configuration that cannot be used; lists every problem found, one per line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigError {
    pub problems: Vec<Problem>,
}

impl ConfigError {
    pub(crate) fn one(source: Option<Source>, path: &str, message: impl Into<String>) -> Self {
        Self {
            problems: vec![Problem {
                source,
                path: path.to_owned(),
                message: message.into(),
            }],
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lines: Vec<String> = self.problems.iter().map(Problem::to_string).collect();
        f.write_str(&lines.join("\n"))
    }
}

/// Load, merge, deserialize and validate the configuration.
pub fn load(sources: &Sources) -> Result<Config, ConfigError> {
    let mut tree = Tree::default();
    if let Some(path) = config_file(sources) {
        tree.apply_file(&path)?;
    }
    for over in env_overrides(&sources.env)? {
        tree.set(over);
    }
    for over in &sources.flags {
        tree.set(over.clone());
    }
    tree.resolve_relative_supergraph_path();
    let config = tree.deserialize()?;
    let problems: Vec<Problem> = validate(&config)
        .into_iter()
        .map(|(path, message)| Problem {
            source: tree.source_of(&path).cloned(),
            path: path.join("."),
            message,
        })
        .collect();
    if problems.is_empty() {
        Ok(config)
    } else {
        Err(ConfigError { problems })
    }
}

fn config_file(sources: &Sources) -> Option<PathBuf> {
    sources.file.clone().or_else(|| {
        sources
            .env
            .iter()
            .find(|(k, v)| k == CONFIG_ENV && !v.is_empty())
            .map(|(_, v)| PathBuf::from(v))
    })
}

/// A command-line or environment value read as a YAML scalar (`12` → number, `true` →
/// bool, `[a, b]` → list); anything that is not valid YAML, or reads as a mapping, stays a
/// string. An empty value is null, i.e. "unset" for optional settings.
pub fn parse_scalar(text: &str) -> Value {
    match serde_yaml_ng::from_str::<Value>(text) {
        Ok(Value::Mapping(_)) | Ok(Value::Tagged(_)) | Err(_) => Value::String(text.to_owned()),
        Ok(value) => value,
    }
}

/// Whether Kubernetes injected `name=value` for a Service whose name starts with
/// `graphfleet` (`GRAPHFLEET_OPERATOR_SERVICE_HOST`, `..._PORT=tcp://...`,
/// `..._PORT_8080_TCP_ADDR`): never ours, since our nested keys use `__`.
fn is_service_link(name: &str, value: &str) -> bool {
    if name.contains("__") {
        return false;
    }
    let docker_link = ["tcp://", "udp://", "sctp://"];
    name.ends_with("_SERVICE_HOST")
        || name.contains("_SERVICE_PORT")
        || (name.ends_with("_PORT") && docker_link.iter().any(|p| value.starts_with(p)))
        || name
            .split_once("_PORT_")
            .is_some_and(|(_, rest)| rest.starts_with(|c: char| c.is_ascii_digit()))
}

/// The `GRAPHFLEET_<SECTION>__<KEY>` variables as overrides, sorted by name so the
/// result does not depend on the environment's order.
pub fn env_overrides(env: &[(String, String)]) -> Result<Vec<Override>, ConfigError> {
    let mut vars: Vec<&(String, String)> = env
        .iter()
        .filter(|(k, _)| k.starts_with(ENV_PREFIX) && k != CONFIG_ENV)
        .filter(|(k, v)| !FOREIGN_ENV.contains(&k.as_str()) && !is_service_link(k, v))
        .collect();
    vars.sort();
    vars.into_iter()
        .map(|(name, value)| {
            let source = Source::Env(name.clone());
            let rest = &name[ENV_PREFIX.len()..];
            let path: Vec<String> = rest.split("__").map(str::to_ascii_lowercase).collect();
            if path.iter().any(String::is_empty) {
                return Err(ConfigError::one(
                    Some(source),
                    "",
                    "not a setting: use GRAPHFLEET_<SECTION>__<KEY> with non-empty parts, \
                     e.g. GRAPHFLEET_LIMITS__MAX_DEPTH",
                ));
            }
            Ok(Override {
                path,
                value: parse_scalar(value),
                source,
            })
        })
        .collect()
}

/// The merged settings and, per written path, its last writer (in write order).
#[derive(Default)]
struct Tree {
    root: Mapping,
    written: Vec<(Vec<String>, Source)>,
}

impl Tree {
    fn apply_file(&mut self, path: &Path) -> Result<(), ConfigError> {
        let source = Source::File(path.to_owned());
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError::one(Some(source.clone()), "", format!("cannot read: {e}")))?;
        let value: Value = serde_yaml_ng::from_str(&text).map_err(|e| {
            ConfigError::one(
                Some(source.clone()),
                "",
                format!("not valid YAML/JSON: {e}"),
            )
        })?;
        match value {
            Value::Null => Ok(()),
            Value::Mapping(map) => {
                let mut leaves = Vec::new();
                collect_leaves(&map, &mut Vec::new(), &mut leaves);
                self.written
                    .extend(leaves.into_iter().map(|p| (p, source.clone())));
                self.root = map;
                Ok(())
            }
            other => Err(ConfigError::one(
                Some(source),
                "",
                format!(
                    "expected a mapping of settings at the top level, found {}",
                    kind(&other)
                ),
            )),
        }
    }

    fn set(&mut self, over: Override) {
        let Some((last, parents)) = over.path.split_last() else {
            return;
        };
        let mut map = &mut self.root;
        for key in parents {
            let slot = map
                .entry(Value::String(key.clone()))
                .or_insert_with(|| Value::Mapping(Mapping::new()));
            if !slot.is_mapping() {
                *slot = Value::Mapping(Mapping::new());
            }
            map = slot.as_mapping_mut().expect("made a mapping just above");
        }
        map.insert(Value::String(last.clone()), over.value);
        self.written.push((over.path, over.source));
    }

    /// The source that decided the value at `path`: the last writer of it, of a parent, or
    /// of something inside it.
    fn source_of(&self, path: &[String]) -> Option<&Source> {
        let related = |p: &[String]| p.starts_with(path) || path.starts_with(p);
        self.written
            .iter()
            .rev()
            .find(|(p, _)| related(p))
            .map(|(_, s)| s)
    }

    /// A relative `supergraph.path` in a config file is relative to that file, so a file
    /// and its supergraph can move together (as in the operator's ConfigMap mount).
    fn resolve_relative_supergraph_path(&mut self) {
        let key = ["supergraph".to_owned(), "path".to_owned()];
        let Some(Source::File(file)) = self.source_of(&key).cloned() else {
            return;
        };
        let Some(base) = file.parent() else { return };
        let slot = self
            .root
            .get_mut("supergraph")
            .and_then(|s| s.as_mapping_mut())
            .and_then(|s| s.get_mut("path"));
        if let Some(Value::String(path)) = slot
            && Path::new(path.as_str()).is_relative()
        {
            *path = base.join(&*path).to_string_lossy().into_owned();
        }
    }

    fn deserialize(&self) -> Result<Config, ConfigError> {
        let value = Value::Mapping(self.root.clone());
        serde_path_to_error::deserialize(value).map_err(|err| {
            let mut path: Vec<String> = err.path().iter().map(|s| s.to_string()).collect();
            let inner = err.into_inner().to_string();
            // serde reports an unknown key at its parent; the key itself is in the message.
            if let Some(field) = unknown_field(&inner)
                && path.last().map(String::as_str) != Some(field)
            {
                path.push(field.to_owned());
            }
            let source = self.source_of(&path).cloned();
            ConfigError::one(source, &path.join("."), tidy(&inner))
        })
    }
}

fn collect_leaves(map: &Mapping, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    for (key, value) in map {
        prefix.push(key_text(key));
        match value {
            Value::Mapping(inner) if !inner.is_empty() => collect_leaves(inner, prefix, out),
            _ => out.push(prefix.clone()),
        }
        prefix.pop();
    }
}

fn key_text(key: &Value) -> String {
    match key {
        Value::String(s) => s.clone(),
        other => serde_yaml_ng::to_string(other)
            .map(|s| s.trim_end().to_owned())
            .unwrap_or_else(|_| format!("{other:?}")),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

fn unknown_field(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("unknown field `")?;
    rest.split('`').next()
}

/// serde's messages, made to read well after the path: the unknown key is already in the
/// path, and serde_yaml_ng appends locations that are meaningless for merged values.
fn tidy(message: &str) -> String {
    if let Some(field) = unknown_field(message) {
        let rest = &message["unknown field `".len() + field.len() + 1..];
        let expected = rest.trim_start_matches(", ").replace('`', "");
        return if expected.is_empty() {
            "unknown field".to_owned()
        } else {
            format!("unknown field, {expected}")
        };
    }
    if let Some(rest) = message.strip_prefix("invalid value: string ")
        && let Some(text) = rest.strip_suffix(", expected a duration")
    {
        return format!("invalid duration {text} (write e.g. 500ms, 10s, 1m 30s)");
    }
    if message.starts_with("invalid type: ") && message.ends_with(", expected a duration") {
        return format!("{message} with a unit, e.g. \"10s\" or \"500ms\"");
    }
    message.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_parse_like_yaml_and_fall_back_to_strings() {
        assert_eq!(parse_scalar("12"), Value::from(12));
        assert_eq!(parse_scalar("true"), Value::Bool(true));
        assert_eq!(parse_scalar("0.0.0.0:4000"), Value::from("0.0.0.0:4000"));
        assert_eq!(parse_scalar("a: b"), Value::from("a: b"));
        assert_eq!(parse_scalar(""), Value::Null);
        assert_eq!(
            parse_scalar("[x-a, x-b]"),
            Value::Sequence(vec![Value::from("x-a"), Value::from("x-b")])
        );
    }

    #[test]
    fn kubernetes_service_links_are_not_settings() {
        for (name, value) in [
            ("GRAPHFLEET_OPERATOR_SERVICE_HOST", "10.0.0.1"),
            ("GRAPHFLEET_OPERATOR_SERVICE_PORT", "8080"),
            ("GRAPHFLEET_OPERATOR_SERVICE_PORT_HTTP", "8080"),
            ("GRAPHFLEET_OPERATOR_PORT", "tcp://10.0.0.1:8080"),
            ("GRAPHFLEET_OPERATOR_PORT_8080_TCP_ADDR", "10.0.0.1"),
        ] {
            assert!(is_service_link(name, value), "{name}");
        }
        for (name, value) in [
            ("GRAPHFLEET_LISTEN", "0.0.0.0:4000"),
            ("GRAPHFLEET_LIMITS__MAX_DEPTH", "3"),
            ("GRAPHFLEET_LISTEN_PORT", "4000"),
            ("GRAPHFLEET_X_PORTAL", "1"),
        ] {
            assert!(!is_service_link(name, value), "{name}");
        }
    }

    #[test]
    fn the_last_writer_of_a_path_or_its_parent_is_its_source() {
        let mut tree = Tree::default();
        let over = |path: &str, name: &str| Override {
            path: path.split('.').map(str::to_owned).collect(),
            value: Value::from(1),
            source: Source::Env(name.to_owned()),
        };
        tree.set(over("limits.max_depth", "A"));
        tree.set(over("limits", "B"));
        let path = |p: &str| p.split('.').map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(
            tree.source_of(&path("limits.max_depth")),
            Some(&Source::Env("B".into()))
        );
        assert_eq!(tree.source_of(&path("traffic")), None);
    }
}
