//! Stage 9, respond: what a request ends in, for the transport to write. Every stage
//! before may end it with a [`RequestError`]; execution ends it with a body, the start
//! of an incremental response, or a subscription.

use super::error::RequestError;
use crate::executor::Part;
use crate::subscription::Subscription;
use crate::telemetry::RequestOutcome;

#[derive(Debug)]
pub enum Outcome {
    /// Execution happened; the body carries field errors when `field_errors`.
    Executed { body: Vec<u8>, field_errors: bool },
    /// Refused before execution: no `data` in the body.
    Refused(RequestError),
    /// `@defer` honoured: the initial payload, and the later ones as they are written.
    Incremental(Incremental),
    /// A subscription started: its events follow.
    Subscribed(Subscription),
}

/// An incremental response under way (see [`crate::executor::execute_incremental`]).
#[derive(Debug)]
pub struct Incremental {
    pub first: Part,
    /// The later payloads; closed after the last one (or when execution ends early).
    pub rest: tokio::sync::mpsc::UnboundedReceiver<Part>,
}

impl From<RequestError> for Outcome {
    fn from(error: RequestError) -> Self {
        Outcome::Refused(error)
    }
}

impl Outcome {
    pub fn body(&self) -> &[u8] {
        match self {
            Outcome::Executed { body, .. } => body,
            Outcome::Refused(error) => error.body(),
            Outcome::Incremental(i) => &i.first.body,
            Outcome::Subscribed(_) => &[],
        }
    }

    /// The body; of an incremental response, only its initial payload.
    pub fn into_body(self) -> Vec<u8> {
        match self {
            Outcome::Executed { body, .. } => body,
            Outcome::Refused(error) => error.into_body(),
            Outcome::Incremental(i) => i.first.body,
            Outcome::Subscribed(_) => Vec::new(),
        }
    }

    /// How the request metrics count this outcome.
    pub(crate) fn classify(&self) -> RequestOutcome {
        match self {
            Outcome::Executed {
                field_errors: true, ..
            } => RequestOutcome::FieldErrors,
            Outcome::Executed { .. } => RequestOutcome::Ok,
            Outcome::Incremental(i) if i.first.field_errors => RequestOutcome::FieldErrors,
            Outcome::Incremental(_) | Outcome::Subscribed(_) => RequestOutcome::Ok,
            Outcome::Refused(error) if error.is_not_ready() => RequestOutcome::NotReady,
            Outcome::Refused(_) => RequestOutcome::RequestError,
        }
    }
}
