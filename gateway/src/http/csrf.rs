//! CSRF prevention: refusing a request a browser could have sent from any page without
//! a CORS preflight.

use crate::pipeline::error::RequestError;
use graphfleet_config::CsrfConfig;
use hyper::header::CONTENT_TYPE;
use hyper::{Method, StatusCode};

/// 400 for a GET or POST request that [`csrf_blocked`] refuses.
pub(super) fn check(
    csrf: &CsrfConfig,
    method: &Method,
    headers: &hyper::HeaderMap,
) -> Result<(), RequestError> {
    if matches!(*method, Method::GET | Method::POST) && csrf_blocked(csrf, headers) {
        return Err(RequestError::http(
            StatusCode::BAD_REQUEST,
            Some("CSRF_PREVENTED"),
            &csrf_message(csrf),
        ));
    }
    Ok(())
}

/// Content types a browser sends cross-origin without a CORS preflight.
const SIMPLE_CONTENT_TYPES: [&str; 3] = [
    "text/plain",
    "application/x-www-form-urlencoded",
    "multipart/form-data",
];

/// Whether CSRF prevention refuses a request: a browser could have sent it from any page
/// without a preflight (its `Content-Type` is missing or one a form can send) and it
/// carries none of the headers that only a preflighted request can have.
pub fn csrf_blocked(csrf: &CsrfConfig, headers: &hyper::HeaderMap) -> bool {
    if !csrf.enabled {
        return false;
    }
    if let Some(content_type) = headers.get(CONTENT_TYPE) {
        // Not text, or no media type a form can send: a browser would have preflighted it.
        let Ok(content_type) = content_type.to_str() else {
            return false;
        };
        let essence = content_type.split(';').next().unwrap_or("").trim();
        if !SIMPLE_CONTENT_TYPES
            .iter()
            .any(|simple| essence.eq_ignore_ascii_case(simple))
        {
            return false;
        }
    }
    !csrf
        .required_headers
        .iter()
        .any(|name| headers.contains_key(name.as_str()))
}

/// What a client refused by CSRF prevention must change.
fn csrf_message(csrf: &CsrfConfig) -> String {
    let headers = if csrf.required_headers.is_empty() {
        "(csrf.required_headers is empty, so a GET request cannot pass)".to_owned()
    } else {
        format!(
            "or send one of these headers: {}",
            csrf.required_headers.join(", ")
        )
    };
    format!(
        "this request was blocked as a possible cross-site request forgery (CSRF): send a \
         Content-Type other than {} (e.g. application/json), {headers}",
        SIMPLE_CONTENT_TYPES.join(", ")
    )
}
