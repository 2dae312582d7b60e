//! What an in-cluster run is told: the gateways, scenarios, budgets and where the cluster is.

use std::path::PathBuf;
use std::time::Duration;

use super::objects::Images;
use crate::config::CapacityConfig;
use crate::gateway::Gateway;
use crate::scenario::Scenario;

pub struct Config {
    pub repo: PathBuf,
    pub out: PathBuf,
    pub subgraphs_bin: PathBuf,
    pub gateways: Vec<(Gateway, Result<Option<PathBuf>, String>, String)>,
    pub scenarios: Vec<Scenario>,
    pub duration_s: u32,
    pub warmup_s: u32,
    pub rate: Option<u32>,
    pub cpus: f64,
    pub memory: String,
    pub start_timeout: Duration,
    /// `--capacity`: each gateway's capacity searched after its measured run.
    pub capacity: Option<CapacityConfig>,
    pub kubeconfig: Option<PathBuf>,
    pub namespace: String,
    pub images: Images,
}
