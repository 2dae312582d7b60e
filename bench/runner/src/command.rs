//! A gateway's start as a command: the placeholder values of one start and the
//! command line, environment and directory they produce (built-in peers and
//! user-given commands alike), ready for [`crate::process::spawn`].

use std::path::{Path, PathBuf};

/// Values for the placeholders of one start.
pub struct Slots<'a> {
    pub supergraph: &'a Path,
    pub host: &'a str,
    pub port: u16,
    pub set: &'a str,
}

/// A command ready for [`crate::process::spawn`].
pub struct Command {
    pub line: String,
    pub env: Vec<(String, String)>,
    pub cwd: Option<PathBuf>,
}
