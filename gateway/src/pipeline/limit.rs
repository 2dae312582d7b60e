//! Stage 1a, rate limit: a request takes a token from the gateway's bucket and its
//! client's (see [`crate::rate_limit`]) before anything else is done for it, or, with
//! buckets per operation, once the plan cache has named its operation; without one it
//! is refused with 429 and `Retry-After` (503 while Redis cannot be asked and
//! `fail_open` is off).

use super::error::RequestError;
use super::request::RequestMeta;
use crate::rate_limit::{RATE_LIMITED, RateLimiter, STORE_UNAVAILABLE, Verdict};
use http::{HeaderValue, StatusCode};

/// Refuses the request when `limiter` has no token for it.
pub async fn check(
    limiter: &RateLimiter,
    meta: &RequestMeta,
    operation_name: Option<&str>,
) -> Result<(), RequestError> {
    let retry_after = |seconds: u64| {
        HeaderValue::from_str(&seconds.to_string()).expect("digits are a header value")
    };
    match limiter
        .check(meta.rate_key.as_deref(), operation_name)
        .await
    {
        Verdict::Allowed => Ok(()),
        Verdict::Limited(wait) => {
            // Whole seconds, at least one: what Retry-After can say.
            let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            let seconds = seconds.max(1);
            let message = format!("too many requests: retry in {seconds}s (rate_limit)");
            let error =
                RequestError::http(StatusCode::TOO_MANY_REQUESTS, Some(RATE_LIMITED), &message);
            Err(error.with_header_value(http::header::RETRY_AFTER, retry_after(seconds)))
        }
        Verdict::StoreDown(why) => {
            let message = format!("the rate limit store cannot be asked ({why}); retry shortly");
            let error = RequestError::http(
                StatusCode::SERVICE_UNAVAILABLE,
                Some(STORE_UNAVAILABLE),
                &message,
            );
            Err(error.with_header_value(http::header::RETRY_AFTER, retry_after(1)))
        }
    }
}
