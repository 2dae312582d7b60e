//! Loading: the YAML (or JSON) file, then `GRAPHFLEET_*` environment overrides, then
//! CLI flags, layered with figment and deserialized once. Each variable and flag is its
//! own figment provider, so figment's provenance of a value names the exact file,
//! variable or flag to fix. Values are read as YAML (serde_yaml_ng, the maintained fork
//! the rest of the project uses) rather than by figment's own env value syntax.

use super::Config;
use super::startup::startup_checks;
use figment::error::{Actual, Kind};
use figment::value::{Dict, Map, Value as FigValue};
use figment::{Figment, Metadata, Profile, Provider};
use graphfleet_config::validate;
use serde_yaml_ng::Value;
use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// Environment variable naming the config file (`--config` wins over it).
pub const CONFIG_ENV: &str = "GRAPHFLEET_CONFIG";
/// Prefix of environment overrides: `GRAPHFLEET_<KEY>` and `GRAPHFLEET_<KEY>__<SUB>...`.
pub const ENV_PREFIX: &str = "GRAPHFLEET_";

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
    let mut layers = Vec::new();
    if let Some(path) = config_file(sources) {
        layers.push(Layer::file(&path)?);
    }
    for over in env_overrides(&sources.env)?.iter().chain(&sources.flags) {
        layers.push(Layer::setting(over)?);
    }
    let figment = layers
        .iter()
        .fold(Figment::new(), |figment, layer| figment.merge(layer));
    let provenance = Provenance {
        figment: &figment,
        layers: &layers,
    };
    let mut config: Config = figment.extract().map_err(|err| provenance.error(err))?;
    resolve_relative_paths(&mut config, &provenance);
    let problems: Vec<Problem> = validate(&config)
        .into_iter()
        .chain(startup_checks(&config))
        .map(|(path, message)| Problem {
            source: provenance.source_of(&path).cloned(),
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

/// The config schema's top-level keys. A `GRAPHFLEET_` variable is a setting only when
/// its first key is one of them: the project's other tools and the service links
/// Kubernetes injects (`GRAPHFLEET_TRAFFIC_SERVICE_HOST`) share the prefix, not the keys.
fn top_level_keys() -> &'static BTreeSet<String> {
    static KEYS: LazyLock<BTreeSet<String>> = LazyLock::new(|| {
        schemars::schema_for!(Config)
            .get("properties")
            .and_then(serde_json::Value::as_object)
            .expect("the config schema lists its properties")
            .keys()
            .cloned()
            .collect()
    });
    &KEYS
}

/// The keys a variable sets, lowercased, or `None` when it is not a gateway setting.
fn setting_path(name: &str) -> Option<Vec<String>> {
    let rest = name.strip_prefix(ENV_PREFIX)?;
    let path: Vec<String> = rest.split("__").map(str::to_ascii_lowercase).collect();
    top_level_keys().contains(&path[0]).then_some(path)
}

/// The `GRAPHFLEET_` variables that are neither the config file nor a setting, sorted:
/// the gateway does not read them.
pub fn ignored_env(env: &[(String, String)]) -> Vec<&str> {
    let mut names: Vec<&str> = env
        .iter()
        .map(|(name, _)| name.as_str())
        .filter(|name| name.starts_with(ENV_PREFIX) && *name != CONFIG_ENV)
        .filter(|name| setting_path(name).is_none())
        .collect();
    names.sort_unstable();
    names
}

/// The `GRAPHFLEET_<KEY>__<SUB>...` variables as overrides, sorted by name so the result
/// does not depend on the environment's order.
pub fn env_overrides(env: &[(String, String)]) -> Result<Vec<Override>, ConfigError> {
    let mut vars: Vec<(&String, Vec<String>, &String)> = env
        .iter()
        .filter(|(name, _)| name != CONFIG_ENV)
        .filter_map(|(name, value)| Some((name, setting_path(name)?, value)))
        .collect();
    vars.sort();
    vars.into_iter()
        .map(|(name, path, value)| {
            let source = Source::Env(name.clone());
            if path.iter().any(String::is_empty) {
                return Err(ConfigError::one(
                    Some(source),
                    "",
                    "not a setting: use GRAPHFLEET_<KEY>__<SUB> with non-empty parts, \
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

/// One source's settings as a figment provider, named after the source.
struct Layer {
    source: Source,
    /// `source` as text: the figment metadata name, which maps a value back to it.
    name: String,
    dict: Dict,
}

impl Layer {
    fn new(source: Source, value: &Value) -> Result<Self, ConfigError> {
        let value = FigValue::serialize(value).map_err(|e| {
            ConfigError::one(Some(source.clone()), "", format!("unusable value: {e}"))
        })?;
        let FigValue::Dict(_, dict) = value else {
            // Files are checked to be mappings, overrides are nested under their path.
            let message = "expected a mapping of settings";
            return Err(ConfigError::one(Some(source), "", message));
        };
        Ok(Self {
            name: source.to_string(),
            source,
            dict,
        })
    }

    fn file(path: &Path) -> Result<Self, ConfigError> {
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
            Value::Null => Self::new(source, &Value::Mapping(Default::default())),
            Value::Mapping(_) => Self::new(source, &value),
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

    /// An override as the nested mapping it writes, e.g. `{limits: {max_depth: 3}}`.
    fn setting(over: &Override) -> Result<Self, ConfigError> {
        let nested = over
            .path
            .iter()
            .rev()
            .fold(over.value.clone(), |inner, key| {
                let mut map = serde_yaml_ng::Mapping::new();
                map.insert(Value::String(key.clone()), inner);
                Value::Mapping(map)
            });
        Self::new(over.source.clone(), &nested)
    }
}

impl Provider for &Layer {
    fn metadata(&self) -> Metadata {
        Metadata::named(self.name.clone())
    }

    fn data(&self) -> Result<Map<Profile, Dict>, figment::Error> {
        Ok(Profile::Default.collect(self.dict.clone()))
    }
}

/// Which source wrote a merged value, from figment's metadata.
struct Provenance<'a> {
    figment: &'a Figment,
    layers: &'a [Layer],
}

impl Provenance<'_> {
    /// The source that decided the value at `path`: its writer, or the writer of the
    /// list or scalar above it that replaced the mapping it would be in (`None` for a
    /// default).
    fn source_of(&self, path: &[String]) -> Option<&Source> {
        (1..=path.len()).rev().find_map(|len| {
            let key = path[..len].join(".");
            let value = self.figment.find_value(&key).ok()?;
            // A mapping above the path was written by someone else than the missing leaf.
            if len < path.len() && matches!(value, FigValue::Dict(..)) {
                return None;
            }
            let name = &self.figment.find_metadata(&key)?.name;
            self.layers
                .iter()
                .find(|l| l.name == *name)
                .map(|l| &l.source)
        })
    }

    /// A deserialization error, located and attributed.
    fn error(&self, err: figment::Error) -> ConfigError {
        let mut path = err.path.clone();
        let message = match &err.kind {
            // serde reports an unknown key at its parent; the key itself belongs in the path.
            Kind::UnknownField(field, expected) => {
                if path.last() != Some(field) {
                    path.push(field.clone());
                }
                format!("unknown field, expected {}", one_of(expected))
            }
            Kind::InvalidType(actual, expected) => {
                format!("invalid type: {}, expected {expected}", describe(actual))
            }
            Kind::InvalidValue(actual, expected) => {
                format!("invalid value: {}, expected {expected}", describe(actual))
            }
            other => other.to_string(),
        };
        ConfigError::one(
            self.source_of(&path).cloned(),
            &path.join("."),
            tidy(&message),
        )
    }
}

/// A relative file path (`supergraph.path`, the TLS files) in a config file is relative
/// to that file, so a file and what it names can move together (as in the operator's
/// ConfigMap mount).
fn resolve_relative_paths(config: &mut Config, provenance: &Provenance<'_>) {
    let resolve = |key: &[&str], value: &mut Option<PathBuf>| {
        let key: Vec<String> = key.iter().map(|k| (*k).to_owned()).collect();
        let Some(Source::File(file)) = provenance.source_of(&key) else {
            return;
        };
        let Some(base) = file.parent() else { return };
        if let Some(path) = value
            && path.is_relative()
        {
            *path = base.join(&*path);
        }
    };
    resolve(&["supergraph", "path"], &mut config.supergraph.path);
    resolve(&["tls", "cert_file"], &mut config.tls.cert_file);
    resolve(&["tls", "key_file"], &mut config.tls.key_file);
    resolve(
        &["persisted_documents", "path"],
        &mut config.persisted_documents.path,
    );
    let subgraph_tls = config
        .subgraphs
        .iter_mut()
        .filter_map(|(name, sg)| Some((vec!["subgraphs", name.as_str(), "tls"], sg.tls.as_mut()?)));
    for (prefix, tls) in
        std::iter::once((vec!["traffic", "tls"], &mut config.traffic.tls)).chain(subgraph_tls)
    {
        for (key, value) in [
            ("ca_file", &mut tls.ca_file),
            ("client_cert_file", &mut tls.client_cert_file),
            ("client_key_file", &mut tls.client_key_file),
        ] {
            let path: Vec<&str> = prefix.iter().copied().chain([key]).collect();
            resolve(&path, value);
        }
    }
}

/// serde's wording for the value found (figment words it differently).
fn describe(actual: &Actual) -> String {
    match actual {
        Actual::Bool(v) => format!("boolean `{v}`"),
        Actual::Unsigned(v) => format!("integer `{v}`"),
        Actual::Signed(v) => format!("integer `{v}`"),
        Actual::Float(v) => format!("floating point `{v}`"),
        Actual::Str(v) => format!("string {v:?}"),
        Actual::Unit => "unit value".to_owned(),
        other => other.to_string(),
    }
}

fn one_of(names: &[&str]) -> String {
    match names {
        [] => "no fields".to_owned(),
        [one] => one.to_string(),
        [a, b] => format!("{a} or {b}"),
        _ => format!("one of {}", names.join(", ")),
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

/// Messages made to read well after the path, with examples for durations.
fn tidy(message: &str) -> String {
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
    fn only_variables_under_a_top_level_key_are_settings() {
        let keys = top_level_keys();
        for key in ["listen", "limits", "subgraphs", "workers"] {
            assert!(keys.contains(key), "{key} in {keys:?}");
        }
        // `GRAPHFLEET_CONFIG` names the file; a `config` key could never be set from env.
        assert!(!keys.contains("config"), "{keys:?}");
        let env: Vec<(String, String)> = [
            ("GRAPHFLEET_LISTEN", "0.0.0.0:4000"),
            ("GRAPHFLEET_LIMITS__MAX_DEPHT", "3"),
            ("GRAPHFLEET_limits__max_depth", "4"),
            ("GRAPHFLEET_CONFIG", "gateway.yaml"),
            ("GRAPHFLEET_LISTNE", "typo"),
            ("GRAPHFLEET_CACHE", "/tmp/cache"),
            ("GRAPHFLEET_TRAFFIC_SERVICE_HOST", "10.0.0.1"),
            ("GRAPHFLEET_TRAFFIC_PORT_8080_TCP_ADDR", "10.0.0.1"),
            ("GRAPHFLEET_LIMITS", ""),
            ("RUST_LOG", "debug"),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        let overrides = env_overrides(&env).expect("well-formed names");
        let read: Vec<String> = overrides
            .iter()
            .map(|o| format!("{}: {}", o.source, o.path.join(".")))
            .collect();
        assert_eq!(
            read,
            [
                "env GRAPHFLEET_LIMITS: limits",
                "env GRAPHFLEET_LIMITS__MAX_DEPHT: limits.max_depht",
                "env GRAPHFLEET_LISTEN: listen",
                "env GRAPHFLEET_limits__max_depth: limits.max_depth",
            ]
        );
        assert_eq!(
            ignored_env(&env),
            [
                "GRAPHFLEET_CACHE",
                "GRAPHFLEET_LISTNE",
                "GRAPHFLEET_TRAFFIC_PORT_8080_TCP_ADDR",
                "GRAPHFLEET_TRAFFIC_SERVICE_HOST",
            ]
        );
    }

    #[test]
    fn the_last_writer_of_a_path_or_the_scalar_above_it_is_its_source() {
        let over = |path: &str, value: Value, name: &str| Override {
            path: path.split('.').map(str::to_owned).collect(),
            value,
            source: Source::Env(name.to_owned()),
        };
        let layers = [
            over("limits.max_depth", Value::from(1), "A"),
            over("limits.max_aliases", Value::from(2), "B"),
            over("headers.propagate", parse_scalar("[x-a, x-b]"), "C"),
            over("traffic", Value::from(1), "D"),
        ]
        .iter()
        .map(Layer::setting)
        .collect::<Result<Vec<_>, _>>()
        .expect("layers");
        let figment = layers.iter().fold(Figment::new(), |f, l| f.merge(l));
        let provenance = Provenance {
            figment: &figment,
            layers: &layers,
        };
        let source = |p: &str| {
            let path: Vec<String> = p.split('.').map(str::to_owned).collect();
            provenance.source_of(&path).cloned()
        };
        assert_eq!(source("limits.max_depth"), Some(Source::Env("A".into())));
        assert_eq!(source("limits.max_aliases"), Some(Source::Env("B".into())));
        assert_eq!(source("headers.propagate.1"), Some(Source::Env("C".into())));
        assert_eq!(
            source("traffic.request_timeout"),
            Some(Source::Env("D".into()))
        );
        // Unset under a mapping someone wrote: a default, from no source.
        assert_eq!(source("limits.max_tokens"), None);
        assert_eq!(source("listen"), None);
    }
}
