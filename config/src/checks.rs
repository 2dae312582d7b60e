//! Checks several sections share.

/// Headers the gateway's HTTP client manages; copying the client's (or a header rule
/// writing them) would corrupt the subgraph request.
pub(crate) const UNPROPAGATABLE: &[&str] = &[
    "host",
    "content-length",
    "content-type",
    "content-encoding",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "te",
    "trailer",
    "upgrade",
    "proxy-connection",
    "accept-encoding",
];

/// An absolute `http://` or `https://` URL with a host.
pub fn http_url(text: &str) -> Result<(), String> {
    let uri: http::Uri = text
        .parse()
        .map_err(|e| format!("{text:?} is not a URL: {e}"))?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
        Some(other) => return Err(format!("{text:?} has scheme {other:?}; use http or https")),
        None => {
            return Err(format!(
                "{text:?} is not an absolute URL (like http://host:4001/graphql)"
            ));
        }
    }
    match uri.host() {
        Some(host) if !host.is_empty() => Ok(()),
        _ => Err(format!("{text:?} has no host")),
    }
}
