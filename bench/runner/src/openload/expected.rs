//! What the generator sends and expects: each request's body (a no-cache scenario's nonce
//! and token spliced in) and the answer responses are checked against, as scenario.js does.

use anyhow::bail;
use bytes::Bytes;

use crate::k6::Check;
use crate::scenario::{TOKEN_ZERO, request_token};

/// Bodies above this are not re-parsed to compare `data` when their bytes differ (as k6).
const REPARSE_LIMIT: usize = 1 << 20;

/// The answer responses are compared with (the monolith's, or the gateway's own bytes when
/// it formats the same data differently; see `oracle::judge`).
pub struct ExpectedBody {
    pub bytes: Vec<u8>,
    /// `data` of the answer, parsed on the first byte mismatch.
    data: std::sync::OnceLock<Option<serde_json::Value>>,
}

impl ExpectedBody {
    pub fn new(bytes: Vec<u8>) -> Self {
        ExpectedBody {
            bytes,
            data: std::sync::OnceLock::new(),
        }
    }

    fn data(&self) -> Option<&serde_json::Value> {
        self.data
            .get_or_init(|| {
                serde_json::from_slice::<serde_json::Value>(&self.bytes)
                    .ok()
                    .map(|mut v| v["data"].take())
            })
            .as_ref()
    }

    /// Whether `body` passes `check` (scenario.js's `bodyOk`): `length` compares the byte
    /// length, `full` the bytes, and a body that differs in bytes still passes when it has
    /// no `errors` and the same `data`. `token` is the request's no-cache token, put back to
    /// [`TOKEN_ZERO`] before comparing.
    pub fn accepts(&self, check: Check, body: &[u8], token: Option<&[u8]>) -> bool {
        let same = match check {
            Check::None => return true,
            Check::Length => body.len() == self.bytes.len(),
            Check::Full => match token {
                Some(t) if body.len() == self.bytes.len() => {
                    let mut own = body.to_vec();
                    replace_all(&mut own, t, TOKEN_ZERO.as_bytes());
                    own == self.bytes
                }
                _ => body == self.bytes.as_slice(),
            },
        };
        same || self.same_data(body, token)
    }

    fn same_data(&self, body: &[u8], token: Option<&[u8]>) -> bool {
        if body.len() > REPARSE_LIMIT {
            return false;
        }
        let mut own = body.to_vec();
        if let Some(t) = token {
            replace_all(&mut own, t, TOKEN_ZERO.as_bytes());
        }
        let Ok(mut got) = serde_json::from_slice::<serde_json::Value>(&own) else {
            return false;
        };
        got.get("errors").is_none()
            && self
                .data()
                .is_some_and(|want| want.is_object() && got["data"].take() == *want)
    }
}

/// Replaces every occurrence of `from` in `buf` with `to`, which has the same length.
fn replace_all(buf: &mut [u8], from: &[u8], to: &[u8]) {
    debug_assert_eq!(from.len(), to.len());
    if from.is_empty() || buf.len() < from.len() {
        return;
    }
    let mut i = 0;
    while i + from.len() <= buf.len() {
        if &buf[i..i + from.len()] == from {
            buf[i..i + from.len()].copy_from_slice(to);
            i += from.len();
        } else {
            i += 1;
        }
    }
}

/// The request body: the payload, or for a no-cache run the payload split at each
/// [`TOKEN_ZERO`] so every request joins it with its own token.
#[derive(Clone)]
pub struct Payload {
    parts: Vec<Bytes>,
    nonce: Option<u32>,
}

impl Payload {
    /// `nonce`: a no-cache run's nonce (the payload must carry the zero token).
    pub fn new(payload: &[u8], nonce: Option<u32>) -> anyhow::Result<Self> {
        let zero = TOKEN_ZERO.as_bytes();
        let mut parts = Vec::new();
        let mut rest = payload;
        if nonce.is_some() {
            while let Some(at) = rest.windows(zero.len()).position(|w| w == zero) {
                parts.push(Bytes::copy_from_slice(&rest[..at]));
                rest = &rest[at + zero.len()..];
            }
            if parts.is_empty() {
                bail!("a no-cache payload must carry {TOKEN_ZERO}");
            }
        }
        parts.push(Bytes::copy_from_slice(rest));
        Ok(Payload { parts, nonce })
    }

    /// The body of request `index` and the token it carries.
    pub fn body(&self, index: u64) -> (Bytes, Option<String>) {
        let Some(nonce) = self.nonce else {
            return (self.parts[0].clone(), None);
        };
        let token = request_token(nonce, index);
        let len =
            self.parts.iter().map(Bytes::len).sum::<usize>() + token.len() * (self.parts.len() - 1);
        let mut body = Vec::with_capacity(len);
        for (i, part) in self.parts.iter().enumerate() {
            if i > 0 {
                body.extend_from_slice(token.as_bytes());
            }
            body.extend_from_slice(part);
        }
        (Bytes::from(body), Some(token))
    }
}
