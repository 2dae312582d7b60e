//! The request pipeline, one stage per module, in the order a request goes through
//! them; [`crate::gateway`] runs them. A stage uses the shared modules and the stages
//! before it, never the orchestrator.
//!
//! Shared by the stages:
//! - [`request`]: the GraphQL request, what the HTTP layer knows besides it, the media type
//! - [`error`]: [`error::RequestError`], the one error a request is refused with
//! - [`operation`]: the prepared operation (the plan cache's entry) and a request of it
//!   ready to execute
//!
//! The stages:
//! 1. [`limit`]: the request takes a rate limit token, or is refused
//! 1. [`persisted`]: a persisted document's id becomes its text
//! 2. [`progressive_override`]: the request's `percent(N)` override labels are drawn
//! 3. [`plan_cache`]: the operation from the cache, or parsed, validated, held to the
//!    limits and planned now ([`plan`]: off the async workers, by the deadline)
//! 4. [`validate`]: the operation's kind allowed here, the variables coerced
//! 5. [`demand`]: the cost estimate, recorded and enforced
//! 6. [`authorize`]: the fields the claims may not read
//! 7. [`plan`]: the plan variant for the condition values and denied fields
//! 8. [`reserve`]: an operation known to take much memory reserves it, or is refused
//! 9. [`execute`]: the whole response, an incremental one, or a subscription
//! 10. [`respond`]: the [`respond::Outcome`] the transport writes

pub mod authorize;
pub mod demand;
pub mod error;
pub mod execute;
pub mod limit;
pub mod operation;
pub mod persisted;
pub mod plan;
pub mod plan_cache;
pub mod progressive_override;
pub mod request;
pub mod reserve;
pub mod respond;
pub mod validate;
