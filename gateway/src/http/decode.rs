//! Decoding the GraphQL request: a POST body of JSON, or a GET request's parameters.

use super::body::Payload;
use crate::pipeline::error::RequestError;
use crate::pipeline::request::GraphQLRequest;
use hyper::StatusCode;

/// The GraphQL request `payload` carries; 400 when it is not one.
pub(super) fn decode(payload: &Payload) -> Result<GraphQLRequest, RequestError> {
    let bad_request = |message: &str| RequestError::http(StatusCode::BAD_REQUEST, None, message);
    match payload {
        Payload::Body(body) => serde_json::from_slice(body)
            .map_err(|e| bad_request(&format!("request body is not a GraphQL request: {e}"))),
        Payload::Query(uri) => parse_get(uri.query().unwrap_or("")).map_err(|m| bad_request(&m)),
    }
}

/// The GET parameters, decoded as `application/x-www-form-urlencoded` (keys too): `+` is a
/// space, `%XX` a byte, and a `%` not followed by two hex digits stays as written (as
/// browsers and the `url` crate do). Unknown parameters are ignored.
fn parse_get(query: &str) -> Result<GraphQLRequest, String> {
    let mut request = GraphQLRequest::default();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let k = form_decode(k)?;
        let v = form_decode(v)?;
        match k.as_str() {
            "query" => request.query = Some(v),
            "operationName" => request.operation_name = Some(v).filter(|v| !v.is_empty()),
            "variables" if !v.is_empty() => {
                request.variables = Some(
                    serde_json::from_str(&v)
                        .map_err(|e| format!("variables is not a JSON object: {e}"))?,
                );
            }
            "extensions" if !v.is_empty() => {
                request.extensions = Some(
                    serde_json::from_str(&v)
                        .map_err(|e| format!("extensions is not a JSON object: {e}"))?,
                );
            }
            "documentId" | "doc_id" => request.document_id = Some(v).filter(|v| !v.is_empty()),
            _ => {}
        }
    }
    Ok(request)
}

/// One form-encoded key or value; invalid UTF-8 is an error rather than replaced, so a
/// query is never run with characters the client did not send.
fn form_decode(text: &str) -> Result<String, String> {
    let spaced = text.replace('+', " ");
    percent_encoding::percent_decode_str(&spaced)
        .decode_utf8()
        .map(std::borrow::Cow::into_owned)
        .map_err(|e| format!("the query string is not valid UTF-8 once percent-decoded: {e}"))
}

#[cfg(test)]
mod tests {
    use super::parse_get;

    #[test]
    fn plus_is_a_space_and_escapes_are_bytes() {
        let r = parse_get("query=%7B+me+%7B+name+%7D+%7D&operationName=Me").expect("valid");
        assert_eq!(r.query.as_deref(), Some("{ me { name } }"));
        assert_eq!(r.operation_name.as_deref(), Some("Me"));
        let r = parse_get("query=%C3%A9t%C3%A9").expect("UTF-8 escapes");
        assert_eq!(r.query.as_deref(), Some("été"));
    }

    #[test]
    fn keys_are_decoded_too() {
        let r = parse_get("%71uery=%7Ba%7D&operation%4Eame=A&variables=%7B%22x%22%3A1%7D")
            .expect("valid");
        assert_eq!(r.query.as_deref(), Some("{a}"));
        assert_eq!(r.operation_name.as_deref(), Some("A"));
        let variables = r.variables.expect("variables");
        assert_eq!(variables.get("x"), Some(&serde_json_bytes::json!(1)));
    }

    #[test]
    fn a_percent_without_two_hex_digits_stays_as_written() {
        // `%+f` used to decode as 0x0F; a form decoder keeps it (and `+` is a space).
        let r = parse_get("query=a%+f&operationName=%4").expect("kept, not rejected");
        assert_eq!(r.query.as_deref(), Some("a% f"));
        assert_eq!(r.operation_name.as_deref(), Some("%4"));
        let r = parse_get("query=100%").expect("trailing percent");
        assert_eq!(r.query.as_deref(), Some("100%"));
    }

    #[test]
    fn invalid_utf8_is_a_clear_error() {
        let error = parse_get("query=%FF%FE").expect_err("not UTF-8");
        assert!(error.contains("not valid UTF-8"), "{error}");
        let error = parse_get("%FF=1").expect_err("key not UTF-8");
        assert!(error.contains("not valid UTF-8"), "{error}");
    }
}
