//! The command line: a command plus config flags, turned into loader overrides in
//! command-line order (so a later flag wins over an earlier one for the same key).

use super::load::{ConfigError, Override, Source, parse_scalar};
use serde_yaml_ng::Value;
use std::path::PathBuf;

pub const HELP: &str = "\
graphfleet-gateway: a GraphQL federation gateway

USAGE:
  graphfleet-gateway [FLAGS]                                serve GraphQL
  graphfleet-gateway plan --query FILE [--operation NAME] [FLAGS]
                                                            print the query plan
  graphfleet-gateway check [FLAGS]                          validate the config and exit

FLAGS:
  --config FILE            YAML or JSON config file (else $GRAPHFLEET_CONFIG)
  --supergraph PATH        supergraph SDL file (supergraph.path)
  --listen ADDR            listen address, e.g. 0.0.0.0:4000 (listen)
  --subgraph-url NAME=URL  routing URL override of subgraph NAME (subgraphs.NAME.url)
  --set KEY=VALUE          any setting by dotted key, e.g. --set limits.max_depth=12;
                           VALUE is read as YAML (12, true, 1500ms, [a, b])
  -h, --help               this text
  Flags also take the form --flag=VALUE.

SOURCES (later wins): defaults < config file < environment < flags.

ENVIRONMENT:
  GRAPHFLEET_CONFIG=FILE            the config file (--config wins)
  GRAPHFLEET_<SECTION>__<KEY>=VALUE  one setting; `__` separates keys, names are
                                    lowercased, VALUE is read as YAML, e.g.
                                    GRAPHFLEET_LISTEN=0.0.0.0:4000
                                    GRAPHFLEET_LIMITS__MAX_DEPTH=12
                                    GRAPHFLEET_SUBGRAPHS__PRODUCTS__URL=http://products:4001
  Any other GRAPHFLEET_ variable is an error, except the project's tool variables
  (GRAPHFLEET_CACHE, GRAPHFLEET_LOG_FORMAT, ...) and Kubernetes service links.
  RUST_LOG filters log lines (default info).

Every setting is described in gateway/README.md.
";

/// What to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Serve,
    Plan {
        query: PathBuf,
        operation: Option<String>,
    },
    /// Load and validate the config, then exit.
    Check,
    Help,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Cli {
    pub command: Command,
    /// `--config FILE`.
    pub config_file: Option<PathBuf>,
    /// Config flags in command-line order.
    pub overrides: Vec<Override>,
}

fn usage(message: String) -> ConfigError {
    ConfigError::one(None, "", format!("{message} (see --help)"))
}

/// Parse the arguments after the program name.
pub fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Cli, ConfigError> {
    let mut command = None;
    let mut query = None;
    let mut operation = None;
    let mut config_file = None;
    let mut overrides = Vec::new();
    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_owned(), Some(v.to_owned())),
            _ => (arg.clone(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| it.next())
                .ok_or_else(|| usage(format!("{flag} needs a value")))
        };
        match flag.as_str() {
            "plan" | "check" if command.is_none() => command = Some(flag.clone()),
            "-h" | "--help" => command = Some("help".to_owned()),
            "--query" => query = Some(PathBuf::from(value()?)),
            "--operation" => operation = Some(value()?),
            "--config" => config_file = Some(PathBuf::from(value()?)),
            "--listen" => overrides.push(string_flag(&flag, &["listen"], value()?)),
            "--supergraph" => {
                overrides.push(string_flag(&flag, &["supergraph", "path"], value()?));
            }
            "--subgraph-url" => overrides.push(subgraph_url(&value()?)?),
            "--set" => overrides.push(set(&value()?)?),
            _ => return Err(usage(format!("unknown argument {arg:?}"))),
        }
    }
    let plan = command.as_deref() == Some("plan");
    if !plan && (query.is_some() || operation.is_some()) {
        return Err(usage(
            "--query and --operation only go with plan".to_owned(),
        ));
    }
    let command = match command.as_deref() {
        None => Command::Serve,
        Some("help") => Command::Help,
        Some("check") => Command::Check,
        Some(_) => Command::Plan {
            query: query.ok_or_else(|| usage("plan needs --query FILE".to_owned()))?,
            operation,
        },
    };
    Ok(Cli {
        command,
        config_file,
        overrides,
    })
}

fn string_flag(flag: &str, path: &[&str], value: String) -> Override {
    Override {
        path: path.iter().map(|s| (*s).to_owned()).collect(),
        value: Value::String(value),
        source: Source::Flag(flag.to_owned()),
    }
}

fn subgraph_url(arg: &str) -> Result<Override, ConfigError> {
    let (name, url) = arg
        .split_once('=')
        .filter(|(name, _)| !name.is_empty())
        .ok_or_else(|| usage(format!("--subgraph-url needs NAME=URL, got {arg:?}")))?;
    Ok(Override {
        path: vec!["subgraphs".to_owned(), name.to_owned(), "url".to_owned()],
        value: Value::String(url.to_owned()),
        source: Source::Flag(format!("--subgraph-url {name}")),
    })
}

fn set(arg: &str) -> Result<Override, ConfigError> {
    let (key, value) = arg
        .split_once('=')
        .ok_or_else(|| usage(format!("--set needs KEY=VALUE, got {arg:?}")))?;
    let path: Vec<String> = key.split('.').map(str::to_owned).collect();
    if path.iter().any(String::is_empty) {
        return Err(usage(format!(
            "--set key {key:?} is not a dotted path like limits.max_depth"
        )));
    }
    Ok(Override {
        path,
        value: parse_scalar(value),
        source: Source::Flag(format!("--set {key}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, ConfigError> {
        parse_args(args.iter().map(|s| (*s).to_owned()))
    }

    #[test]
    fn flags_become_ordered_overrides() {
        let cli = parse(&[
            "--listen=0.0.0.0:1",
            "--set",
            "limits.max_depth=3",
            "--config",
            "f",
        ])
        .expect("valid");
        assert_eq!(cli.command, Command::Serve);
        assert_eq!(cli.config_file, Some(PathBuf::from("f")));
        let paths: Vec<_> = cli.overrides.iter().map(|o| o.path.join(".")).collect();
        assert_eq!(paths, ["listen", "limits.max_depth"]);
        assert_eq!(cli.overrides[1].value, Value::from(3));
    }

    #[test]
    fn plan_needs_a_query_and_bad_flags_are_named() {
        let plan = parse(&["plan", "--query", "q.graphql"]).expect("valid");
        assert!(matches!(plan.command, Command::Plan { .. }));
        assert!(parse(&["plan"]).is_err());
        let err = parse(&["--lisen", "x"]).expect_err("unknown flag");
        assert!(err.to_string().contains("\"--lisen\""), "{err}");
        assert!(parse(&["--set", "novalue"]).is_err());
        assert!(parse(&["--subgraph-url", "=http://x"]).is_err());
        assert!(parse(&["--listen"]).is_err());
    }
}
