//! Pure builders of a LoadTest's objects: its ConfigMap (k6 script and POST body) and one
//! Job per execution segment (k6, or Gatling with `executor: gatling`), plus the spec rules
//! they apply (scenarios, target URL, time limit, what each executor supports). Status from the Jobs' pods is in `status::loadtest`; k6 summaries in `k6_summary`.
//!
//! One module per job, bottom up: `names` (labels, annotations, object names and metadata),
//! `spec` (the spec rules), `config_map`, `jobs`.

mod config_map;
mod jobs;
mod names;
mod spec;

pub use config_map::config_map;
pub use jobs::{THRESHOLDS_ENV, job, jobs, placement_to_record, target_jobs};
pub use names::{
    DEFAULT_GATLING_IMAGE, DEFAULT_K6_IMAGE, GATLING_MAIN, K6_API_PORT, K6_CONTAINER,
    LOADTEST_LABEL, NODE_ANNOTATION, POD_ANNOTATION, SEGMENT_LABEL, TARGET_LABEL, TERMINATION_LOG,
    TERMINATION_MESSAGE_LIMIT, config_map_name, execution_segment, execution_segment_sequence,
    job_name,
};
pub use spec::{
    STARTUP_AND_SUMMARY_MARGIN, SpecError, Target, executor_image, format_duration, scenario_names,
    service_url, target_job_name, target_url, targets, time_limit,
};
