//! Pure status of a LoadTest: each segment's phase and message from its Job and the Job's
//! pods (the kubelet's view first, the Job controller's verdict second), a deadline past which
//! a segment fails, the overall phase and results, and which Jobs to stop once it failed.

//!
//! One module per job, bottom up: `job` (what a Job and its pods say), `segment`, `start`
//! and `stop`, then `scheduling` (the `Scheduled` condition) and `observe` (the whole
//! status); `cpu`, the gateway pods' CPU per target.

pub mod cpu;
mod job;
mod observe;
mod scheduling;
mod segment;
mod start;
mod stop;

pub use observe::{Observed, loadtest_status, observe, rejected_status};
pub use segment::{LoggedSummaries, overall_phase, segment_status};
pub use start::{StartStep, next_target, record_resume, start_skew_ms, start_step};
pub use stop::jobs_to_stop;
