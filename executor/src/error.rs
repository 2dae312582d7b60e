//! The fetch error, shared by the transport and in-flight deduplication (which hands
//! one leader's result to every waiter).

/// Why a subgraph fetch produced no response body; `code` becomes `extensions.code`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct FetchError {
    pub code: &'static str,
    pub message: String,
}

impl FetchError {
    pub const HTTP: &'static str = "SUBREQUEST_HTTP_ERROR";
    pub const TIMEOUT: &'static str = "SUBREQUEST_TIMEOUT";
    pub const RESPONSE_TOO_LARGE: &'static str = "SUBREQUEST_RESPONSE_TOO_LARGE";
    /// The request's responses together passed `limits.max_response_bytes`.
    pub const REQUEST_RESPONSE_TOO_LARGE: &'static str = "RESPONSE_TOO_LARGE";

    pub fn http(message: impl Into<String>) -> Self {
        Self {
            code: Self::HTTP,
            message: message.into(),
        }
    }
}

impl From<String> for FetchError {
    fn from(message: String) -> Self {
        Self::http(message)
    }
}
