//! Reads a subgraph's JSON response straight into the [`Store`]. Strings without
//! escapes and all numbers stay as text in the kept body ([`Value::RawStr`],
//! [`Value::RawNum`]): a big response is then copied to the client without decoding
//! and re-encoding each number, which was a fifth of the CPU of the ~8 MiB benchmark
//! response. Lists and objects go through the store's parse stacks, so each is
//! allocated once at its final size.

use super::keys::{KeyId, KeyTable};
use super::store::{Object, Source, Store, Value};
use std::cell::Cell;
use std::fmt;

mod tokens;

/// Deeper nesting is refused rather than risking the stack.
const MAX_DEPTH: u32 = 512;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseError {
    what: &'static str,
    at: usize,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{} at byte {}", self.what, self.at)
    }
}

impl std::error::Error for ParseError {}

/// A parse failed; the reader holds the [`ParseError`]. Keeps results small enough to
/// come back in registers: a `Value` returned through memory (written in pieces, read
/// back whole) stalled store forwarding on every list item.
#[derive(Debug)]
struct Failed;

type Parsed<T> = Result<T, Failed>;

/// A GraphQL response: its `data` in the store and the text of its `errors`, if any.
pub struct Response<'de> {
    pub data: Option<Value>,
    pub errors: Option<&'de str>,
}

/// Parses `text`, the whole body kept as `source`, as a GraphQL response object.
pub fn response<'de>(
    text: &'de str,
    source: Source<'de>,
    store: &mut Store,
    keys: &KeyTable,
) -> Result<Response<'de>, ParseError> {
    let mut reader = Reader {
        text,
        bytes: text.as_bytes(),
        pos: 0,
        depth: 0,
        store,
        keys,
        source,
        scratch: String::new(),
        failure: Cell::new(None),
    };
    reader.response().map_err(|Failed| {
        reader.failure.get().unwrap_or(ParseError {
            what: "invalid JSON",
            at: reader.pos,
        })
    })
}

struct Reader<'a, 'de> {
    text: &'de str,
    bytes: &'de [u8],
    pos: usize,
    depth: u32,
    store: &'a mut Store,
    keys: &'a KeyTable,
    source: Source<'de>,
    /// The last string with escapes, decoded.
    scratch: String,
    /// Why the parse failed, once it has.
    failure: Cell<Option<ParseError>>,
}

/// Where [`Reader::value`] stores what it reads.
#[derive(Clone, Copy)]
enum Dest {
    /// On the parse stack's items (a list's, or one taken off again).
    Item,
    /// On the parse stack's fields, under this key.
    Field(KeyId),
}

/// A string token: a range of the body, or decoded into the reader's scratch text when
/// it had escapes.
enum Str {
    Raw(usize, usize),
    Scratch,
}

impl<'de> Reader<'_, 'de> {
    fn response(&mut self) -> Parsed<Response<'de>> {
        let mut response = Response {
            data: None,
            errors: None,
        };
        self.skip_ws();
        if !self.eat(b'{') {
            return Err(self.error("expected a JSON object"));
        }
        self.skip_ws();
        if !self.eat(b'}') {
            loop {
                let key = self.key()?;
                match self.str_text(&key) {
                    "data" => response.data = Some(self.value_here()?),
                    "errors" => {
                        self.skip_ws();
                        let start = self.pos;
                        self.skip_value()?;
                        response.errors = Some(&self.text[start..self.pos]);
                    }
                    _ => self.skip_value()?,
                }
                if self.after_member()? {
                    break;
                }
            }
        }
        self.skip_ws();
        if self.pos < self.bytes.len() {
            return Err(self.error("trailing characters"));
        }
        Ok(response)
    }

    /// A value, returned (for the few not stored in a list or under a known key).
    fn value_here(&mut self) -> Parsed<Value> {
        let mark = self.store.items.len();
        self.value(Dest::Item)?;
        let value = self.store.items.pop();
        debug_assert_eq!(self.store.items.len(), mark);
        Ok(value.unwrap_or(Value::Null))
    }

    /// A value, stored at `to` where it is made: a `Value` returned through memory
    /// (written in pieces, read back whole) stalled store forwarding on every item.
    fn value(&mut self, to: Dest) -> Parsed<()> {
        self.skip_ws();
        match self.peek() {
            Some(b'{') => {
                let object = self.object()?;
                self.put(to, object);
            }
            Some(b'[') => {
                let list = self.list()?;
                self.put(to, list);
            }
            Some(b'"') => match self.string()? {
                Str::Raw(start, end) => {
                    let raw = self.raw(start, end)?;
                    self.put(to, Value::RawStr(raw));
                }
                Str::Scratch => {
                    let at = self.pos;
                    let text = self
                        .store
                        .add_string(&self.scratch)
                        .map_err(|_| self.error_at("more than 4 GiB of decoded text", at))?;
                    self.put(to, text);
                }
            },
            Some(b't') => {
                self.literal(b"true")?;
                self.put(to, Value::Bool(true));
            }
            Some(b'f') => {
                self.literal(b"false")?;
                self.put(to, Value::Bool(false));
            }
            Some(b'n') => {
                self.literal(b"null")?;
                self.put(to, Value::Null);
            }
            Some(b'-' | b'0'..=b'9') => {
                let start = self.pos;
                self.number()?;
                let raw = self.raw(start, self.pos)?;
                self.put(to, Value::RawNum(raw));
            }
            Some(_) => return Err(self.error("expected a JSON value")),
            None => return Err(self.error("unexpected end of input")),
        }
        Ok(())
    }

    #[inline(always)]
    fn put(&mut self, to: Dest, value: Value) {
        match to {
            Dest::Item => self.store.items.push(value),
            Dest::Field(key) => self.store.fields.push((key, value)),
        }
    }

    fn list(&mut self) -> Parsed<Value> {
        self.enter()?;
        let mark = self.store.items.len();
        let read = self.list_items();
        self.depth -= 1;
        if let Err(e) = read {
            self.store.items.truncate(mark);
            return Err(e);
        }
        // One copy of the items into the list arena.
        let at = self.pos;
        self.store
            .list_from_stack(mark)
            .map_err(|_| self.error_at("more than 2^32 list items", at))
    }

    fn list_items(&mut self) -> Parsed<()> {
        self.skip_ws();
        if self.eat(b']') {
            return Ok(());
        }
        loop {
            self.value(Dest::Item)?;
            self.skip_ws();
            match self.next() {
                Some(b',') => {}
                Some(b']') => return Ok(()),
                _ => return Err(self.error_before("expected `,` or `]`")),
            }
        }
    }

    fn object(&mut self) -> Parsed<Value> {
        self.enter()?;
        let mark = self.store.fields.len();
        let mut extra = Vec::new();
        let read = self.members(&mut extra);
        self.depth -= 1;
        if let Err(e) = read {
            self.store.fields.truncate(mark);
            return Err(e);
        }
        let fields = self.store.fields.split_off(mark);
        Ok(Value::Object(self.store.alloc(Object { fields, extra })))
    }

    /// Keys the plan knows go to `fields` by id; others (inside custom scalars) are
    /// kept by name in `extra`.
    fn members(&mut self, extra: &mut Vec<(Box<str>, Value)>) -> Parsed<()> {
        self.skip_ws();
        if self.eat(b'}') {
            return Ok(());
        }
        loop {
            let key = self.key()?;
            // Resolved before the value is read: reading it may reuse the scratch text.
            let name = self.str_text(&key);
            match self.keys.get(name) {
                Some(id) => self.value(Dest::Field(id))?,
                None => {
                    let name: Box<str> = name.into();
                    let value = self.value_here()?;
                    extra.push((name, value));
                }
            }
            if self.after_member()? {
                return Ok(());
            }
        }
    }

    /// `"key":`
    fn key(&mut self) -> Parsed<Str> {
        self.skip_ws();
        match self.peek() {
            Some(b'"') => {}
            Some(_) => return Err(self.error("expected a string key")),
            None => return Err(self.error("unexpected end of input")),
        }
        let key = self.string()?;
        self.skip_ws();
        if !self.eat(b':') {
            return Err(self.error("expected `:`"));
        }
        Ok(key)
    }

    /// After an object member: `true` at the closing brace, `false` after a comma.
    fn after_member(&mut self) -> Parsed<bool> {
        self.skip_ws();
        match self.next() {
            Some(b',') => Ok(false),
            Some(b'}') => Ok(true),
            _ => Err(self.error_before("expected `,` or `}`")),
        }
    }

    /// A value checked and passed over without storing it.
    fn skip_value(&mut self) -> Parsed<()> {
        self.skip_ws();
        match self.peek() {
            Some(b'{') => {
                self.enter()?;
                self.skip_ws();
                if !self.eat(b'}') {
                    loop {
                        self.key()?;
                        self.skip_value()?;
                        if self.after_member()? {
                            break;
                        }
                    }
                }
                self.depth -= 1;
                Ok(())
            }
            Some(b'[') => {
                self.enter()?;
                self.skip_ws();
                if !self.eat(b']') {
                    loop {
                        self.skip_value()?;
                        self.skip_ws();
                        match self.next() {
                            Some(b',') => {}
                            Some(b']') => break,
                            _ => return Err(self.error_before("expected `,` or `]`")),
                        }
                    }
                }
                self.depth -= 1;
                Ok(())
            }
            Some(b'"') => self.string().map(drop),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            Some(_) => Err(self.error("expected a JSON value")),
            None => Err(self.error("unexpected end of input")),
        }
    }

    /// Past the opening bracket, one level deeper.
    fn enter(&mut self) -> Parsed<()> {
        if self.depth == MAX_DEPTH {
            return Err(self.error("nested deeper than 512 levels"));
        }
        self.depth += 1;
        self.pos += 1;
        Ok(())
    }

    fn skip_ws(&mut self) {
        while matches!(self.bytes.get(self.pos), Some(b' ' | b'\n' | b'\r' | b'\t')) {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek();
        self.pos += 1;
        b
    }

    fn eat(&mut self, b: u8) -> bool {
        let hit = self.peek() == Some(b);
        self.pos += usize::from(hit);
        hit
    }

    fn error(&self, what: &'static str) -> Failed {
        self.error_at(what, self.pos)
    }

    /// At the byte just consumed (or the end, when there was none).
    fn error_before(&self, what: &'static str) -> Failed {
        if self.pos > self.bytes.len() {
            return self.error_at("unexpected end of input", self.bytes.len());
        }
        self.error_at(what, self.pos.saturating_sub(1))
    }

    fn error_at(&self, what: &'static str, at: usize) -> Failed {
        self.failure.set(Some(ParseError { what, at }));
        Failed
    }
}

#[cfg(test)]
mod tests;
