//! Incremental delivery over HTTP: `multipart/mixed; deferSpec=20220824` (the format
//! Apollo Client and Apollo Router use), one JSON part per payload, each sent as soon
//! as the executor writes it. Every other answer is one buffered body.

use crate::executor::Part;
use crate::pipeline::respond::Incremental;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::{Body, Frame, SizeHint};
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Response, StatusCode};
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::mpsc::UnboundedReceiver;

/// The boundary between parts, as Apollo Router names it.
const BOUNDARY: &str = "graphql";
const CONTENT_TYPE_VALUE: &str = "multipart/mixed;boundary=\"graphql\";deferSpec=20220824";
/// Each part ends with the delimiter of the next, so a client reading up to a
/// delimiter has the part in full as soon as it is sent, not when the next one is.
const DELIMITER: &[u8] = b"\r\n--graphql";
const PART_HEADER: &[u8] = b"\r\ncontent-type: application/json; charset=utf-8\r\n\r\n";
/// After the last part's delimiter: it closes the body.
const END: &[u8] = b"--\r\n";

/// Whether `Accept` takes incremental delivery: a `multipart/mixed` range whose
/// `deferSpec` (if any) is the one we speak, with a weight above zero.
pub(super) fn accepts_defer(accept: Option<&HeaderValue>) -> bool {
    let Some(accept) = accept.and_then(|a| a.to_str().ok()) else {
        return false;
    };
    accept.split(',').any(|range| {
        let mut params = range.split(';');
        let media = params.next().map(str::trim).unwrap_or("");
        if !media.eq_ignore_ascii_case("multipart/mixed") {
            return false;
        }
        params.all(|p| match p.split_once('=') {
            Some((name, value)) => {
                let (name, value) = (name.trim(), value.trim().trim_matches('"'));
                if name.eq_ignore_ascii_case("deferSpec") {
                    value == "20220824"
                } else if name.eq_ignore_ascii_case("q") {
                    value.parse::<f32>().is_ok_and(|q| q > 0.0)
                } else {
                    true
                }
            }
            None => true,
        })
    })
}

/// The streamed answer: the initial payload now, the others as they come.
pub(super) fn response(incremental: Incremental) -> Response<HandlerBody> {
    let Incremental { first, rest } = incremental;
    let last = first.last;
    let mut head = DELIMITER.to_vec();
    head.extend_from_slice(&frame(first));
    let body = HandlerBody(Inner::Parts {
        next: Some(Bytes::from(head)),
        rest: (!last).then_some(rest),
        ended: last,
    });
    let mut r = Response::new(body);
    *r.status_mut() = StatusCode::OK;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE_VALUE));
    debug_assert!(CONTENT_TYPE_VALUE.contains(BOUNDARY));
    r
}

/// One part, framed up to the next delimiter; the last one closes the body too. Its
/// memory charge goes with the bytes, released once they are written.
fn frame(part: Part) -> Bytes {
    let mut out =
        Vec::with_capacity(PART_HEADER.len() + part.body.len() + DELIMITER.len() + END.len());
    out.extend_from_slice(PART_HEADER);
    out.extend_from_slice(&part.body);
    out.extend_from_slice(DELIMITER);
    if part.last {
        out.extend_from_slice(END);
    }
    match part.memory {
        Some(charge) => crate::executor::response::buffers::charged(Bytes::from(out), charge),
        None => Bytes::from(out),
    }
}

/// The body the GraphQL handler answers with: whole, or a stream of parts.
#[derive(Debug)]
pub struct HandlerBody(Inner);

#[derive(Debug)]
enum Inner {
    Full(Full<Bytes>),
    Parts {
        next: Option<Bytes>,
        rest: Option<UnboundedReceiver<Part>>,
        /// The closing boundary is written (or was, with the last part).
        ended: bool,
    },
    /// Chunks written by a task (subscriptions); ends when the task drops its sender.
    Stream(tokio::sync::mpsc::Receiver<Bytes>),
}

impl HandlerBody {
    pub fn full(body: impl Into<Bytes>) -> Self {
        Self(Inner::Full(Full::new(body.into())))
    }

    /// Whether the body is one whole buffer (not parts or a stream).
    pub(super) fn is_full(&self) -> bool {
        matches!(self.0, Inner::Full(_))
    }

    /// A body of the chunks sent on `rx`, as they come.
    pub fn stream(rx: tokio::sync::mpsc::Receiver<Bytes>) -> Self {
        Self(Inner::Stream(rx))
    }
}

/// Empty (what CORS answers a preflight with).
impl Default for HandlerBody {
    fn default() -> Self {
        Self::full(Bytes::new())
    }
}

impl From<Full<Bytes>> for HandlerBody {
    fn from(body: Full<Bytes>) -> Self {
        Self(Inner::Full(body))
    }
}

impl Body for HandlerBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match &mut self.get_mut().0 {
            Inner::Full(full) => Pin::new(full).poll_frame(cx),
            Inner::Stream(rx) => rx
                .poll_recv(cx)
                .map(|chunk| chunk.map(|c| Ok(Frame::data(c)))),
            Inner::Parts { next, rest, ended } => {
                if let Some(bytes) = next.take() {
                    return Poll::Ready(Some(Ok(Frame::data(bytes))));
                }
                let Some(receiver) = rest else {
                    return Poll::Ready(None);
                };
                match receiver.poll_recv(cx) {
                    Poll::Pending => Poll::Pending,
                    Poll::Ready(Some(part)) => {
                        if part.last {
                            *ended = true;
                            *rest = None;
                        }
                        Poll::Ready(Some(Ok(Frame::data(frame(part)))))
                    }
                    // The execution stopped without a last payload: close the body.
                    Poll::Ready(None) => {
                        *rest = None;
                        if std::mem::replace(ended, true) {
                            Poll::Ready(None)
                        } else {
                            Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(END)))))
                        }
                    }
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.0 {
            Inner::Full(full) => full.is_end_stream(),
            Inner::Stream(_) => false,
            Inner::Parts { next, rest, .. } => next.is_none() && rest.is_none(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.0 {
            Inner::Full(full) => full.size_hint(),
            Inner::Parts { .. } | Inner::Stream(_) => SizeHint::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::accepts_defer;
    use hyper::header::HeaderValue;

    fn takes(accept: &str) -> bool {
        accepts_defer(Some(&HeaderValue::from_str(accept).expect("header value")))
    }

    #[test]
    fn multipart_with_our_defer_spec_is_incremental() {
        // What Apollo Client sends for an operation with @defer.
        assert!(takes(
            "multipart/mixed;deferSpec=20220824,application/json;q=0.9"
        ));
        assert!(takes("application/json, multipart/mixed"));
        assert!(takes("Multipart/Mixed; deferSpec=\"20220824\""));
        assert!(!takes("multipart/mixed;deferSpec=20230101"));
        assert!(!takes("multipart/mixed;q=0"));
        assert!(!takes("application/json"));
        assert!(!takes("*/*"));
        assert!(!accepts_defer(None));
    }

    #[test]
    fn a_framed_part_holds_its_memory_charge_until_its_bytes_are_dropped() {
        let budget = crate::executor::memory::MemoryBudget::new(1 << 20);
        let charge = budget.charge();
        charge.try_add(1000).expect("room");
        let part = super::Part {
            body: vec![b'x'; 1000],
            field_errors: false,
            last: false,
            memory: Some(charge),
        };
        let bytes = super::frame(part);
        assert_eq!(
            budget.held(),
            1000,
            "held while the part waits to be written"
        );
        drop(bytes);
        assert_eq!(budget.held(), 0);
    }
}
