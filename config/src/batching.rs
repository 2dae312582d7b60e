//! `batching`: a POST body that is a JSON array of GraphQL requests (Apollo Client's
//! `BatchHttpLink`, Apollo Router's and Cosmo's batching), answered with the array of
//! their responses in order. Off by default: a batch multiplies what one request may
//! cost, so a gateway takes one only when told to.

use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct BatchingConfig {
    /// Take JSON-array bodies; off, they get 400 `BATCHING_NOT_ENABLED`.
    pub enabled: bool,
    /// Most operations in one batch; a bigger batch gets 400 `BATCH_LIMIT_EXCEEDED`
    /// before any of it runs.
    #[schemars(range(min = 1, max = 1000))]
    pub max_size: usize,
}

impl Default for BatchingConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            max_size: 16,
        }
    }
}
