//! Content negotiation: the media type and the way of delivery a client takes, from its
//! `Accept` header.

use super::{multipart, stream};
use crate::pipeline::error::RequestError;
use crate::pipeline::request::Media;
use hyper::StatusCode;
use hyper::header::{ACCEPT, HeaderMap, HeaderValue};

/// How the client takes its answer.
#[derive(Debug, Clone, Copy)]
pub(super) struct Accepts {
    /// The media type of a JSON answer (and of the errors before a stream starts).
    pub media: Media,
    /// A stream of results (SSE, multipart subscriptions), when asked for.
    pub stream: Option<stream::StreamKind>,
    /// Incremental delivery of `@defer` payloads (`multipart/mixed`).
    pub incremental: bool,
}

/// What `headers` accept, or 406 when neither JSON media type is acceptable.
pub(super) fn accepts(headers: &HeaderMap) -> Result<Accepts, RequestError> {
    let accept = headers.get(ACCEPT);
    let stream = stream::stream_kind(accept);
    let media = match stream {
        // Errors before the stream starts are JSON.
        Some(_) => Some(Media::Json),
        None => negotiate(accept),
    };
    let Some(media) = media else {
        return Err(RequestError::http(
            StatusCode::NOT_ACCEPTABLE,
            None,
            "Accept must allow application/graphql-response+json or application/json",
        ));
    };
    Ok(Accepts {
        media,
        stream,
        incremental: stream.is_none() && multipart::accepts_defer(accept),
    })
}

/// Which media type to answer with, per the Accept header (None: 406): of the two we
/// offer, the one the client weighs highest (`q`, taken from the most specific range
/// naming it; `q=0` refuses it). On a tie, the one named more specifically; when both
/// are named outright, `application/graphql-response+json`; when only wildcards match,
/// `application/json` (what clients predating the GraphQL media type expect).
fn negotiate(accept: Option<&HeaderValue>) -> Option<Media> {
    let Some(accept) = accept.and_then(|a| a.to_str().ok()) else {
        return Some(Media::Json);
    };
    let ranges: Vec<(&str, f32)> = accept.split(',').filter_map(media_range).collect();
    let weight = |offer: &str| -> (f32, u8) {
        let (kind, _) = offer.split_once('/').unwrap_or((offer, ""));
        let specificity = |range: &str| {
            if range.eq_ignore_ascii_case(offer) {
                Some(3)
            } else if range
                .strip_suffix("/*")
                .is_some_and(|k| k.eq_ignore_ascii_case(kind))
            {
                Some(2)
            } else if range == "*/*" {
                Some(1)
            } else {
                None
            }
        };
        ranges
            .iter()
            .filter_map(|(range, q)| specificity(range).map(|s| (s, *q)))
            .max_by_key(|(s, _)| *s)
            .map_or((0.0, 0), |(s, q)| (q, s))
    };
    let graphql = weight(Media::GraphQLResponse.as_str());
    let ((gq, gs), (jq, js)) = (graphql, weight(Media::Json.as_str()));
    let graphql_wins = gq > jq || (gq == jq && (gs > js || (gs == 3 && js == 3)));
    if gq > 0.0 && graphql_wins {
        Some(Media::GraphQLResponse)
    } else if jq > 0.0 {
        Some(Media::Json)
    } else {
        None
    }
}

/// One `type/subtype;params` range of an Accept header and its weight (`q`, default
/// 1); a range with a malformed weight is ignored.
fn media_range(part: &str) -> Option<(&str, f32)> {
    let mut params = part.split(';');
    let media = params.next()?.trim();
    if media.is_empty() {
        return None;
    }
    let mut q = 1.0;
    for param in params {
        if let Some((name, value)) = param.split_once('=')
            && name.trim().eq_ignore_ascii_case("q")
        {
            q = value
                .trim()
                .parse::<f32>()
                .ok()
                .filter(|q| (0.0..=1.0).contains(q))?;
        }
    }
    Some((media, q))
}

#[cfg(test)]
mod tests {
    use super::negotiate;
    use crate::pipeline::request::Media;
    use http::HeaderValue;

    fn chosen(accept: &str) -> Option<Media> {
        negotiate(Some(&HeaderValue::from_str(accept).expect("header value")))
    }

    #[test]
    fn accept_weights_choose_the_media_type() {
        assert_eq!(negotiate(None), Some(Media::Json));
        assert_eq!(chosen("application/json"), Some(Media::Json));
        assert_eq!(
            chosen("application/graphql-response+json"),
            Some(Media::GraphQLResponse)
        );
        // Both acceptable with equal weight: the GraphQL media type.
        assert_eq!(
            chosen("application/json, application/graphql-response+json"),
            Some(Media::GraphQLResponse)
        );
        // The client prefers JSON.
        assert_eq!(
            chosen("application/graphql-response+json;q=0.5, application/json"),
            Some(Media::Json)
        );
        // q=0 refuses a type even where a wildcard allows others.
        assert_eq!(
            chosen("application/graphql-response+json;q=0, */*;q=0.1"),
            Some(Media::Json)
        );
        assert_eq!(
            chosen("application/json;q=0, application/*;q=0.8"),
            Some(Media::GraphQLResponse)
        );
        assert_eq!(chosen("text/html, application/json;q=0"), None);
        assert_eq!(chosen("*/*"), Some(Media::Json));
        assert_eq!(chosen("application/*"), Some(Media::Json));
        // A malformed weight drops that range only.
        assert_eq!(
            chosen("application/graphql-response+json;q=x, application/json"),
            Some(Media::Json)
        );
        assert_eq!(chosen("text/plain"), None);
    }
}
