//! `graphfleet`: command-line tools; `graphfleet compose` composes a rover-style config.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use graphfleet_composition::{compose, config::load_config};

#[derive(Parser)]
#[command(name = "graphfleet", version, about = "graphfleet command-line tools")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Compose subgraphs into an Apollo-format supergraph.
    Compose {
        /// Rover-style supergraph config (YAML).
        #[arg(long)]
        config: PathBuf,
        /// Write the supergraph here instead of stdout.
        #[arg(long)]
        output: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<ExitCode> {
    match Cli::parse().command {
        Command::Compose { config, output } => run_compose(&config, output.as_deref()),
    }
}

/// Supergraph to stdout or `output`, hints on stderr; errors one per line on stderr, exit 1.
fn run_compose(config: &Path, output: Option<&Path>) -> Result<ExitCode> {
    let subgraphs = load_config(config)?;
    match compose(&subgraphs) {
        Ok(composed) => {
            for hint in &composed.hints {
                eprintln!("hint: {hint}");
            }
            match output {
                Some(path) => std::fs::write(path, &composed.supergraph_sdl)
                    .with_context(|| format!("writing {}", path.display()))?,
                None => print!("{}", composed.supergraph_sdl),
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(errors) => {
            for e in &errors.0 {
                eprintln!("{e}");
            }
            Ok(ExitCode::FAILURE)
        }
    }
}
