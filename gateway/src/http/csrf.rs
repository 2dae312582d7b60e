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
    // A media type a form cannot send: a browser would have preflighted it. One that is
    // not visible ASCII cannot be judged, so it is held to the headers (fail closed).
    if let Some(Ok(content_type)) = headers.get(CONTENT_TYPE).map(|c| c.to_str()) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::HeaderValue;

    fn blocked(content_type: HeaderValue, extra: Option<(&'static str, &'static str)>) -> bool {
        let mut headers = hyper::HeaderMap::new();
        headers.insert(CONTENT_TYPE, content_type);
        if let Some((name, value)) = extra {
            headers.insert(name, HeaderValue::from_static(value));
        }
        let csrf = CsrfConfig {
            enabled: true,
            required_headers: vec!["x-apollo-operation-name".to_owned()],
        };
        csrf_blocked(&csrf, &headers)
    }

    #[test]
    fn a_content_type_that_is_not_visible_ascii_is_held_to_the_headers() {
        let odd = HeaderValue::from_bytes(b"text/plain\xff").expect("obs-text is a valid value");
        assert!(blocked(odd.clone(), None));
        assert!(!blocked(odd, Some(("x-apollo-operation-name", "Q"))));
        assert!(!blocked(HeaderValue::from_static("application/json"), None));
        assert!(blocked(
            HeaderValue::from_static("text/plain; charset=utf-8"),
            None
        ));
    }
}
