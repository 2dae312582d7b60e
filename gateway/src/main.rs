//! `graphfleet-gateway [--config FILE] [FLAGS]` serves GraphQL;
//! `graphfleet-gateway plan --query FILE [--operation NAME] [FLAGS]` prints a plan;
//! `graphfleet-gateway check [FLAGS]` validates the configuration. See `--help`.

use anyhow::Context;
use graphfleet_gateway::config::{self, Cli, Command, Config, Sources};
use graphfleet_gateway::supergraph::Supergraph;
use std::process::ExitCode;
use std::sync::Arc;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// How long mimalloc keeps freed memory before returning it to the OS. The big buffers
/// of a ~8 MiB response are reused through the executor's buffer pool, so what is left
/// for the allocator to keep is the rest of a request's memory. Measured on the big
/// benchmark responses: 10 s kept peak RSS above Hive Router's (70–77 MiB against
/// 68–80), mimalloc's default 1 s and 250 ms brought it to 56–61 MiB; 250 ms cost the
/// least CPU of the two. `MIMALLOC_PURGE_DELAY` (milliseconds) overrides it.
const PURGE_DELAY_MS: i64 = 250;

/// `mi_option_purge_delay` in mimalloc.h's `mi_option_t` (the same in v2 and v3).
const MI_OPTION_PURGE_DELAY: i32 = 15;

#[allow(unsafe_code)]
fn keep_freed_memory_warm() {
    unsafe extern "C" {
        fn mi_option_set(option: i32, value: std::ffi::c_long);
    }
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: a plain option store in the linked mimalloc, made before any thread
        // other than this one exists.
        unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) };
    }
}

fn main() -> ExitCode {
    keep_freed_memory_warm();
    // clap prints --help and --version (status 0) and usage errors (status 2).
    let Cli {
        command,
        config_file,
        overrides,
    } = config::parse_args(std::env::args_os().skip(1)).unwrap_or_else(|e| e.exit());
    let env: Vec<(String, String)> = std::env::vars_os()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .collect();
    let sources = Sources {
        file: config_file,
        env,
        flags: overrides,
    };
    // The config decides how to log, so its errors go straight to stderr.
    let config = match config::load(&sources) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("graphfleet-gateway: invalid configuration:\n{e}");
            return ExitCode::from(2);
        }
    };
    match run(command, config, &sources.env) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("graphfleet-gateway: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(command: Command, config: Config, env: &[(String, String)]) -> anyhow::Result<()> {
    match command {
        Command::Check => {
            println!("configuration ok");
            Ok(())
        }
        Command::Plan { query, operation } => {
            let path = config
                .supergraph
                .path
                .as_ref()
                .context("no supergraph path")?;
            let supergraph = Supergraph::from_file(path)
                .with_context(|| format!("loading supergraph {}", path.display()))?;
            let text = std::fs::read_to_string(&query)
                .with_context(|| format!("reading {}", query.display()))?;
            print!(
                "{}",
                graphfleet_gateway::plan_text_with_limits(
                    &supergraph,
                    &text,
                    operation.as_deref(),
                    &config.limits,
                )?
            );
            Ok(())
        }
        Command::Serve => {
            // Dropped on the way out, which flushes pending trace spans.
            let _telemetry = graphfleet_gateway::telemetry::init(&config.telemetry)?;
            let ignored = config::ignored_env(env);
            if !ignored.is_empty() {
                tracing::debug!(variables = ?ignored, "GRAPHFLEET_ variables ignored: not gateway settings");
            }
            graphfleet_gateway::http::serve_blocking(Arc::new(config))
        }
    }
}
