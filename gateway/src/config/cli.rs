//! The command line (clap): a command plus config flags, turned into loader overrides in
//! command-line order (so a later flag wins over an earlier one for the same key).

use super::load::{Override, Source, parse_scalar};
use clap::{ArgMatches, CommandFactory, FromArgMatches, Parser, Subcommand};
use serde_yaml_ng::Value;
use std::ffi::OsString;
use std::path::PathBuf;

const BIN: &str = "graphfleet-gateway";

const AFTER_HELP: &str = "\
SOURCES (later wins): defaults < config file < environment < flags in command-line order.
Flags also take the form --flag=VALUE; config flags go before or after the command.

ENVIRONMENT:
  GRAPHFLEET_CONFIG=FILE            the config file (--config wins)
  GRAPHFLEET_<KEY>=VALUE            a top-level setting, e.g. GRAPHFLEET_LISTEN=0.0.0.0:4000
  GRAPHFLEET_<KEY>__<SUB>=VALUE     a nested one; `__` separates keys, e.g.
                                    GRAPHFLEET_LIMITS__MAX_DEPTH=12
                                    GRAPHFLEET_SUBGRAPHS__PRODUCTS__URL=http://products:4001
  Names are lowercased and VALUE is read as YAML. <KEY> is a top-level key of the
  config (listen, limits, traffic, ...); other GRAPHFLEET_ variables are ignored.
  RUST_LOG filters log lines (default info).

Every setting is described in gateway/README.md.";

/// A GraphQL federation gateway: serves GraphQL unless a command is given.
#[derive(Debug, Parser)]
#[command(name = BIN, version, after_help = AFTER_HELP, args_override_self = true)]
#[command(disable_help_subcommand = true)]
struct Args {
    #[command(subcommand)]
    command: Option<Sub>,
    #[command(flatten)]
    flags: Flags,
}

#[derive(Debug, Subcommand)]
enum Sub {
    /// Print the query plan of an operation.
    #[command(after_help = AFTER_HELP)]
    Plan {
        /// GraphQL document holding the operation.
        #[arg(long, value_name = "FILE")]
        query: PathBuf,
        /// Operation to plan when the document has several.
        #[arg(long, value_name = "NAME")]
        operation: Option<String>,
        #[command(flatten)]
        flags: Flags,
    },
    /// Validate the configuration and exit.
    #[command(after_help = AFTER_HELP)]
    Check {
        #[command(flatten)]
        flags: Flags,
    },
}

/// The config flags, accepted before the command and after it.
#[derive(Debug, clap::Args)]
struct Flags {
    /// YAML or JSON config file (else $GRAPHFLEET_CONFIG).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Supergraph SDL file (supergraph.path).
    #[arg(long, value_name = "PATH", value_parser = supergraph)]
    supergraph: Vec<Override>,
    /// Listen address, e.g. 0.0.0.0:4000 (listen).
    #[arg(long, value_name = "ADDR", value_parser = listen)]
    listen: Vec<Override>,
    /// Routing URL of subgraph NAME (subgraphs.NAME.url).
    #[arg(long, value_name = "NAME=URL", value_parser = subgraph_url)]
    subgraph_url: Vec<Override>,
    /// Any setting by dotted key, e.g. limits.max_depth=12; VALUE is YAML (12, true, [a, b]).
    #[arg(long, value_name = "KEY=VALUE", value_parser = set)]
    set: Vec<Override>,
}

impl Flags {
    /// The overrides in command-line order. clap keeps each flag's values apart, so they
    /// are merged by their positions on the command line (`matches` is where `self` was
    /// read from).
    fn overrides(self, matches: &ArgMatches) -> Vec<Override> {
        let mut placed: Vec<(usize, Override)> = [
            ("supergraph", self.supergraph),
            ("listen", self.listen),
            ("subgraph_url", self.subgraph_url),
            ("set", self.set),
        ]
        .into_iter()
        .flat_map(|(id, values)| matches.indices_of(id).into_iter().flatten().zip(values))
        .collect();
        placed.sort_by_key(|(index, _)| *index);
        placed.into_iter().map(|(_, over)| over).collect()
    }
}

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
}

#[derive(Debug, Clone, PartialEq)]
pub struct Cli {
    pub command: Command,
    /// `--config FILE`.
    pub config_file: Option<PathBuf>,
    /// Config flags in command-line order.
    pub overrides: Vec<Override>,
}

impl Cli {
    /// Adds flags that come after the ones already taken.
    fn take(&mut self, mut flags: Flags, matches: &ArgMatches) {
        if let Some(file) = flags.config.take() {
            self.config_file = Some(file);
        }
        self.overrides.extend(flags.overrides(matches));
    }
}

/// Parse the arguments after the program name. `--help`, `--version` and usage errors
/// are clap errors: `Error::exit` prints them (help and version to stdout, with status 0).
pub fn parse_args<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString>,
{
    let argv = std::iter::once(OsString::from(BIN)).chain(args.into_iter().map(Into::into));
    let matches = Args::command().try_get_matches_from(argv)?;
    let args = Args::from_arg_matches(&matches)?;
    let mut cli = Cli {
        command: Command::Serve,
        config_file: None,
        overrides: Vec::new(),
    };
    cli.take(args.flags, &matches);
    if let (Some(sub), Some((_, sub_matches))) = (args.command, matches.subcommand()) {
        let flags = match sub {
            Sub::Plan {
                query,
                operation,
                flags,
            } => {
                cli.command = Command::Plan { query, operation };
                flags
            }
            Sub::Check { flags } => {
                cli.command = Command::Check;
                flags
            }
        };
        cli.take(flags, sub_matches);
    }
    Ok(cli)
}

fn string_flag(flag: &str, path: &[&str], value: &str) -> Override {
    Override {
        path: path.iter().map(|s| (*s).to_owned()).collect(),
        value: Value::String(value.to_owned()),
        source: Source::Flag(flag.to_owned()),
    }
}

// The value parsers: clap names the flag and the value in their errors.

fn supergraph(arg: &str) -> Result<Override, String> {
    Ok(string_flag("--supergraph", &["supergraph", "path"], arg))
}

fn listen(arg: &str) -> Result<Override, String> {
    Ok(string_flag("--listen", &["listen"], arg))
}

fn subgraph_url(arg: &str) -> Result<Override, String> {
    let (name, url) = arg
        .split_once('=')
        .filter(|(name, _)| !name.is_empty())
        .ok_or("expected NAME=URL")?;
    Ok(Override {
        path: vec!["subgraphs".to_owned(), name.to_owned(), "url".to_owned()],
        value: Value::String(url.to_owned()),
        source: Source::Flag(format!("--subgraph-url {name}")),
    })
}

fn set(arg: &str) -> Result<Override, String> {
    let (key, value) = arg.split_once('=').ok_or("expected KEY=VALUE")?;
    let path: Vec<String> = key.split('.').map(str::to_owned).collect();
    if path.iter().any(String::is_empty) {
        return Err(format!("{key:?} is not a dotted key like limits.max_depth"));
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
    use clap::error::ErrorKind;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        parse_args(args)
    }

    fn error(args: &[&str]) -> String {
        parse(args).expect_err("invalid").to_string()
    }

    fn written(cli: &Cli) -> Vec<String> {
        cli.overrides
            .iter()
            .map(|o| format!("{}={}", o.source, o.path.join(".")))
            .collect()
    }

    #[test]
    fn flags_become_overrides_in_command_line_order() {
        let cli = parse(&[
            "--set",
            "limits.max_depth=3",
            "--listen=0.0.0.0:1",
            "--subgraph-url",
            "products=http://p:1",
            "--config",
            "f",
            "--set=listen=0.0.0.0:2",
            "--supergraph",
            "s.graphql",
            "--config=g",
        ])
        .expect("valid");
        assert_eq!(cli.command, Command::Serve);
        assert_eq!(cli.config_file, Some(PathBuf::from("g")));
        assert_eq!(
            written(&cli),
            [
                "flag --set limits.max_depth=limits.max_depth",
                "flag --listen=listen",
                "flag --subgraph-url products=subgraphs.products.url",
                "flag --set listen=listen",
                "flag --supergraph=supergraph.path",
            ]
        );
        assert_eq!(cli.overrides[0].value, Value::from(3));
        assert_eq!(cli.overrides[2].value, Value::from("http://p:1"));
    }

    #[test]
    fn flags_after_the_command_follow_the_ones_before_it() {
        let cli = parse(&[
            "--config",
            "a",
            "--listen",
            "0.0.0.0:1",
            "plan",
            "--set",
            "listen=0.0.0.0:2",
            "--query",
            "q.graphql",
            "--config",
            "b",
        ])
        .expect("valid");
        let query = PathBuf::from("q.graphql");
        assert_eq!(
            cli.command,
            Command::Plan {
                query,
                operation: None
            }
        );
        assert_eq!(cli.config_file, Some(PathBuf::from("b")));
        assert_eq!(
            written(&cli),
            ["flag --listen=listen", "flag --set listen=listen"]
        );
        let check = parse(&["check", "--supergraph", "s"]).expect("valid");
        assert_eq!(check.command, Command::Check);
        assert_eq!(written(&check), ["flag --supergraph=supergraph.path"]);
    }

    #[test]
    fn bad_arguments_are_named() {
        assert!(error(&["plan"]).contains("--query <FILE>"));
        let unknown = error(&["--lisen", "x"]);
        assert!(unknown.contains("'--lisen'"), "{unknown}");
        let set = error(&["--set", "novalue"]);
        assert!(
            set.contains("'novalue' for '--set <KEY=VALUE>': expected KEY=VALUE"),
            "{set}"
        );
        let dotted = error(&["--set=limits..x=1"]);
        assert!(dotted.contains("'--set <KEY=VALUE>'"), "{dotted}");
        let url = error(&["--subgraph-url", "=http://x"]);
        assert!(url.contains("'--subgraph-url <NAME=URL>'"), "{url}");
        assert!(error(&["--listen"]).contains("--listen <ADDR>"));
        assert!(error(&["--query", "q.graphql"]).contains("'--query'"));
    }

    #[test]
    fn help_and_version_are_answers_not_failures() {
        for (args, kind) in [
            (&["--help"][..], ErrorKind::DisplayHelp),
            (&["-h"], ErrorKind::DisplayHelp),
            (&["plan", "--help"], ErrorKind::DisplayHelp),
            (&["--version"], ErrorKind::DisplayVersion),
        ] {
            let answer = parse(args).expect_err("not a run");
            assert_eq!(answer.kind(), kind, "{args:?}");
            assert_eq!(answer.exit_code(), 0, "{args:?}");
        }
        let help = Args::command().render_long_help().to_string();
        for needle in ["SOURCES (later wins)", "ENVIRONMENT:", "--set <KEY=VALUE>"] {
            assert!(help.contains(needle), "{needle:?} not in:\n{help}");
        }
    }

    #[test]
    fn the_command_line_definition_is_consistent() {
        Args::command().debug_assert();
    }
}
