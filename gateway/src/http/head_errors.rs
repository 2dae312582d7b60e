//! hyper answers an HTTP/1 request head it cannot take by itself, before any service
//! sees it, with a bodiless status: 414 for a request target over its fixed 65,534
//! bytes (the `http` crate's URI cap too, so no setting lifts it), 431 for a head over
//! its read buffer while still incomplete. A GraphQL client then learns nothing from the empty body, so this
//! wrapper of the connection's plain-text stream (inside TLS) gives those two answers
//! a GraphQL-style JSON error naming the limit. Everything else passes untouched.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The longest request target hyper's HTTP/1 parser takes.
pub const MAX_URI_BYTES: usize = 65_534;
/// The read buffer of an HTTP/1 connection (hyper's default, set explicitly so the
/// error can name it): a request head still incomplete past it is refused.
pub const MAX_HEAD_BYTES: usize = 8192 + 4096 * 100;

pub struct ExplainHeadErrors<I> {
    io: I,
    /// A rewritten answer still to send, and how much of it is sent.
    pending: Vec<u8>,
    sent: usize,
}

impl<I> ExplainHeadErrors<I> {
    pub fn new(io: I) -> Self {
        Self {
            io,
            pending: Vec::new(),
            sent: 0,
        }
    }
}

/// The JSON answer for hyper's bodiless `head` (a whole response head and nothing
/// after it), if it is one of the two this module explains.
fn explained(head: &[u8]) -> Option<Vec<u8>> {
    if !head.starts_with(b"HTTP/1.") {
        return None;
    }
    let (message, code) = if head.starts_with(b"HTTP/1.1 414 ")
        || head.starts_with(b"HTTP/1.0 414 ")
    {
        (
            format!(
                "the request URI is longer than {MAX_URI_BYTES} bytes, the most the HTTP server reads whatever limits.max_body_bytes says; send the operation with POST"
            ),
            "PAYLOAD_TOO_LARGE",
        )
    } else if head.starts_with(b"HTTP/1.1 431 ") || head.starts_with(b"HTTP/1.0 431 ") {
        (
            format!(
                "the request line and headers are larger than the {MAX_HEAD_BYTES} bytes the HTTP server buffers"
            ),
            "REQUEST_HEADERS_TOO_LARGE",
        )
    } else {
        return None;
    };
    let text = std::str::from_utf8(head).ok()?;
    let head = text.strip_suffix("\r\n\r\n")?;
    // Only hyper's own, bodiless: the gateway's own 414 has a body and is left alone.
    let mut lines = head.split("\r\n");
    let status = lines.next()?;
    let mut rest = Vec::new();
    let mut empty = false;
    for line in lines {
        if line.eq_ignore_ascii_case("content-length: 0") {
            empty = true;
        } else {
            rest.push(line);
        }
    }
    if !empty {
        return None;
    }
    let body = serde_json::json!({"errors": [{
        "message": message,
        "extensions": {"code": code},
    }]})
    .to_string();
    let mut out = format!(
        "{status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
        body.len()
    );
    for line in rest {
        out.push_str(line);
        out.push_str("\r\n");
    }
    out.push_str("\r\n");
    out.push_str(&body);
    Some(out.into_bytes())
}

impl<I: AsyncWrite + Unpin> ExplainHeadErrors<I> {
    /// `answer` instead of the `len` bytes hyper wrote, all taken: what the socket does
    /// not take now goes out on the next write, flush or shutdown.
    fn take(
        &mut self,
        cx: &mut Context<'_>,
        answer: Vec<u8>,
        len: usize,
    ) -> Poll<io::Result<usize>> {
        self.pending = answer;
        self.sent = 0;
        if let Poll::Ready(Err(e)) = self.drain(cx) {
            return Poll::Ready(Err(e));
        }
        Poll::Ready(Ok(len))
    }

    /// Send what is left of a rewritten answer.
    fn drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.sent < self.pending.len() {
            let n = ready!(Pin::new(&mut self.io).poll_write(cx, &self.pending[self.sent..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.sent += n;
        }
        Poll::Ready(Ok(()))
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for ExplainHeadErrors<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for ExplainHeadErrors<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        ready!(self.drain(cx))?;
        // hyper writes such an answer whole, first thing after the head it refused.
        if let Some(answer) = explained(buf) {
            return self.take(cx, answer, buf.len());
        }
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        ready!(self.drain(cx))?;
        let mut written = bufs.iter().filter(|b| !b.is_empty());
        if let (Some(only), None) = (written.next(), written.next())
            && let Some(answer) = explained(only)
        {
            return self.take(cx, answer, only.len());
        }
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.drain(cx))?;
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.drain(cx))?;
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::explained;

    #[test]
    fn only_bodiless_414_and_431_are_explained() {
        let hyper = b"HTTP/1.1 414 URI Too Long\r\ncontent-length: 0\r\ndate: x\r\n\r\n";
        let answer = String::from_utf8(explained(hyper).expect("explained")).expect("UTF-8");
        let (head, body) = answer.split_once("\r\n\r\n").expect("a head");
        assert!(head.starts_with("HTTP/1.1 414 URI Too Long\r\n"), "{head}");
        assert!(head.contains("\r\ndate: x"), "{head}");
        assert!(
            head.contains(&format!("content-length: {}", body.len())),
            "{head}"
        );
        assert!(body.contains("PAYLOAD_TOO_LARGE"), "{body}");
        let ours = b"HTTP/1.1 414 URI Too Long\r\ncontent-length: 80\r\n\r\n";
        assert!(explained(ours).is_none());
        let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
        assert!(explained(ok).is_none());
        let with_body = b"HTTP/1.1 431 Too Large\r\ncontent-length: 0\r\n\r\nx";
        assert!(explained(with_body).is_none());
    }
}
