//! Stage 9, respond: what a request ends in, for the transport to write. Every stage
//! before may end it with a [`RequestError`]; execution ends it with a body, the start
//! of an incremental response, or a subscription.

use super::error::RequestError;
use crate::executor::Part;
use crate::executor::memory::Charge;
use crate::subscription::Subscription;
use crate::telemetry::RequestOutcome;

#[derive(Debug)]
pub enum Outcome {
    /// Execution happened; the body carries field errors when `field_errors`. `memory`
    /// is the request's charge against the memory budget, to be held until the body is
    /// sent.
    Executed {
        body: Vec<u8>,
        field_errors: bool,
        memory: Option<Charge>,
        /// Headers for the client's response, from the subgraphs' (response header
        /// rules, `Cache-Control` merge); empty when none apply.
        headers: http::HeaderMap,
    },
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

    /// The same outcome, an executed body holding `memory` (its charge) until sent.
    pub fn holding(self, memory: Charge) -> Self {
        match self {
            Outcome::Executed {
                body,
                field_errors,
                headers,
                ..
            } => Outcome::Executed {
                body,
                field_errors,
                memory: Some(memory),
                headers,
            },
            other => other,
        }
    }

    /// The body and the charge it holds against the memory budget, if any.
    pub fn into_charged_body(self) -> (Vec<u8>, Option<Charge>) {
        match self {
            Outcome::Executed { body, memory, .. } => (body, memory),
            other => (other.into_body(), None),
        }
    }

    /// [`Self::into_charged_body`], with the headers the client's response gets.
    pub fn into_parts(self) -> (Vec<u8>, Option<Charge>, http::HeaderMap) {
        match self {
            Outcome::Executed {
                body,
                memory,
                headers,
                ..
            } => (body, memory, headers),
            other => (other.into_body(), None, http::HeaderMap::new()),
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
