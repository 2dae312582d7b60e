//! Reads a subgraph's JSON response straight into the [`Store`]. Strings without
//! escapes and all numbers stay as text in the kept body ([`Value::RawStr`],
//! [`Value::RawNum`]): a big response is then copied to the client without decoding
//! and re-encoding each number, which was a fifth of the CPU of the ~8 MiB benchmark
//! response. Lists and objects go through the store's parse stacks, so each is
//! allocated once at its final size.

use super::keys::{KeyId, KeyTable};
use super::store::{Object, RawStr, Source, Store, Value};
use std::cell::Cell;
use std::fmt;

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

    /// A string at `pos` (its opening quote).
    fn string(&mut self) -> Parsed<Str> {
        let start = self.pos + 1;
        let mut i = start;
        // Eight bytes at a time past plain text; most strings have no escapes.
        while let Some(chunk) = self.bytes.get(i..i + 8) {
            let word = u64::from_le_bytes(chunk.try_into().expect("a slice of eight bytes"));
            if needs_care(word) {
                break;
            }
            i += 8;
        }
        loop {
            match self.bytes.get(i) {
                Some(b'"') => {
                    self.pos = i + 1;
                    return Ok(Str::Raw(start, i));
                }
                Some(b'\\') => return self.escaped(start, i),
                Some(&c) if c < 0x20 => {
                    return Err(self.error_at("control character in a string", i));
                }
                Some(_) => i += 1,
                None => return Err(self.error_at("unterminated string", i)),
            }
        }
    }

    /// The rest of a string from its first escape at `i`, decoded.
    fn escaped(&mut self, start: usize, mut i: usize) -> Parsed<Str> {
        // Cuts fall on ASCII bytes, so every slice below is whole characters.
        let mut out = std::mem::take(&mut self.scratch);
        out.clear();
        out.push_str(&self.text[start..i]);
        loop {
            match self.bytes.get(i) {
                Some(b'"') => {
                    self.pos = i + 1;
                    self.scratch = out;
                    return Ok(Str::Scratch);
                }
                Some(b'\\') => {
                    let c = match self.bytes.get(i + 1) {
                        Some(b'"') => '"',
                        Some(b'\\') => '\\',
                        Some(b'/') => '/',
                        Some(b'b') => '\u{8}',
                        Some(b'f') => '\u{c}',
                        Some(b'n') => '\n',
                        Some(b'r') => '\r',
                        Some(b't') => '\t',
                        Some(b'u') => {
                            let (c, len) = self.unicode_escape(i)?;
                            out.push(c);
                            i += len;
                            continue;
                        }
                        _ => return Err(self.error_at("invalid escape", i)),
                    };
                    out.push(c);
                    i += 2;
                }
                Some(&c) if c < 0x20 => {
                    return Err(self.error_at("control character in a string", i));
                }
                Some(_) => {
                    let run = i;
                    while self
                        .bytes
                        .get(i)
                        .is_some_and(|&c| c != b'"' && c != b'\\' && c >= 0x20)
                    {
                        i += 1;
                    }
                    out.push_str(&self.text[run..i]);
                }
                None => return Err(self.error_at("unterminated string", i)),
            }
        }
    }

    /// `\uXXXX` at `i`, or a surrogate pair of two: the character and the escape's length.
    fn unicode_escape(&self, i: usize) -> Parsed<(char, usize)> {
        let high = self.hex4(i + 2)?;
        if !(0xD800..0xE000).contains(&high) {
            let c = char::from_u32(high).expect("not a surrogate, so a character");
            return Ok((c, 6));
        }
        if high >= 0xDC00 || self.bytes.get(i + 6..i + 8) != Some(b"\\u") {
            return Err(self.error_at("lone surrogate in a \\u escape", i));
        }
        let low = self.hex4(i + 8)?;
        if !(0xDC00..0xE000).contains(&low) {
            return Err(self.error_at("lone surrogate in a \\u escape", i));
        }
        let c = char::from_u32(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
            .expect("a surrogate pair is a character");
        Ok((c, 12))
    }

    fn hex4(&self, at: usize) -> Parsed<u32> {
        let digits = self
            .bytes
            .get(at..at + 4)
            .ok_or_else(|| self.error_at("unterminated \\u escape", at))?;
        digits.iter().try_fold(0u32, |n, &d| {
            let v = (d as char)
                .to_digit(16)
                .ok_or_else(|| self.error_at("invalid \\u escape", at))?;
            Ok(n * 16 + v)
        })
    }

    /// A number at `pos`, checked against JSON's grammar and passed over.
    fn number(&mut self) -> Parsed<()> {
        let mut i = self.pos;
        if self.bytes.get(i) == Some(&b'-') {
            i += 1;
        }
        match self.bytes.get(i) {
            Some(b'0') => i += 1,
            Some(b'1'..=b'9') => i = self.digits(i + 1),
            _ => return Err(self.error_at("invalid number", i)),
        }
        if self.bytes.get(i) == Some(&b'.') {
            i = self.some_digits(i + 1)?;
        }
        if matches!(self.bytes.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(self.bytes.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            i = self.some_digits(i)?;
        }
        self.pos = i;
        Ok(())
    }

    fn digits(&self, mut i: usize) -> usize {
        // Eight bytes at a time: numbers are a good part of a big response.
        while let Some(chunk) = self.bytes.get(i..i + 8) {
            let word = u64::from_le_bytes(chunk.try_into().expect("a slice of eight bytes"));
            let run = leading_digits(word);
            i += run;
            if run < 8 {
                return i;
            }
        }
        while self.bytes.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        i
    }

    fn some_digits(&self, i: usize) -> Parsed<usize> {
        let end = self.digits(i);
        if end == i {
            return Err(self.error_at("invalid number", i));
        }
        Ok(end)
    }

    fn literal(&mut self, word: &[u8]) -> Parsed<()> {
        if !self.bytes[self.pos..].starts_with(word) {
            return Err(self.error("expected a JSON value"));
        }
        self.pos += word.len();
        Ok(())
    }

    fn raw(&self, start: usize, end: usize) -> Parsed<RawStr> {
        self.source
            .at(start, end - start)
            .ok_or_else(|| self.error_at("value beyond 4 GiB", start))
    }

    fn str_text<'s>(&'s self, s: &'s Str) -> &'s str {
        match s {
            Str::Raw(start, end) => &self.text[*start..*end],
            Str::Scratch => &self.scratch,
        }
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

/// How many of the eight bytes, from the first, are ASCII digits.
fn leading_digits(word: u64) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // A digit becomes 0..=9; adding 0x76 sets the high bit of anything above 9. A carry
    // out of a byte only comes from one that is not a digit, so it can only mark bytes
    // after the first non-digit, which are not counted anyway.
    let x = word ^ (ONES * u64::from(b'0'));
    let not_digit = (x | x.wrapping_add(ONES * 0x76)) & HIGH;
    (not_digit.trailing_zeros() / 8) as usize
}

/// Whether any of the eight bytes is a quote, a backslash or a control character.
fn needs_care(word: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let has_zero = |w: u64| w.wrapping_sub(ONES) & !w & HIGH;
    let quote = has_zero(word ^ (ONES * u64::from(b'"')));
    let backslash = has_zero(word ^ (ONES * u64::from(b'\\')));
    // A byte below 0x20 borrows out of its high bit; bytes at or above 0x80 are masked.
    let control = word.wrapping_sub(ONES * 0x20) & !word & HIGH;
    quote | backslash | control != 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use serde_json::{Map, Value as Json, json};

    /// The store's value as serde_json's (numbers read from their text).
    fn to_json(store: &Store, keys: &KeyTable, v: &Value) -> Json {
        match v {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::String(s) => Json::String(store.string(*s).to_string()),
            Value::RawStr(r) => Json::String(
                std::str::from_utf8(store.raw(*r))
                    .expect("raw strings are UTF-8")
                    .to_string(),
            ),
            Value::RawNum(r) => {
                serde_json::from_slice(store.raw(*r)).expect("raw numbers are JSON")
            }
            Value::List(items) => Json::Array(
                store
                    .list(*items)
                    .iter()
                    .map(|i| to_json(store, keys, i))
                    .collect(),
            ),
            Value::Object(id) => {
                let object = store.object(*id);
                let known = object
                    .fields
                    .iter()
                    .map(|(k, v)| (keys.name(*k).to_string(), v));
                let extra = object.extra.iter().map(|(k, v)| (k.to_string(), v));
                let map: Map<String, Json> = known
                    .chain(extra)
                    .map(|(k, v)| (k, to_json(store, keys, v)))
                    .collect();
                Json::Object(map)
            }
            Value::Int(_) | Value::UInt(_) | Value::Float(_) => unreachable!("never parsed"),
        }
    }

    fn keys() -> KeyTable {
        let mut keys = KeyTable::default();
        for k in ["a", "b", "id", "name"] {
            keys.intern(&apollo_compiler::Name::new(k).expect("a name"));
        }
        keys
    }

    fn parse(text: &str) -> Result<(Option<Json>, Option<String>), ParseError> {
        let keys = keys();
        let mut store = Store::with_root();
        let body = Bytes::copy_from_slice(text.as_bytes());
        let source = store.keep(&body);
        let text = std::str::from_utf8(&body).expect("UTF-8");
        let response = response(text, source, &mut store, &keys)?;
        Ok((
            response.data.map(|d| to_json(&store, &keys, &d)),
            response.errors.map(str::to_string),
        ))
    }

    const VALID: &[&str] = &[
        r#"{"a":1}"#,
        r#" { "a" : [ 1 , -0 , 0.5 , -1.25e-3 , 1E+2 , 2e5 , 12345678901234567890 ] } "#,
        r#"{"a":"plain","b":"tab\tnew\nline \"quoted\" back\\slash \/ \b\f\r","name":"\u00e9\u4e2d\ud83d\ude00"}"#,
        r#"{"a":{"b":{"unknown":[{"x":null}],"id":true}},"name":false}"#,
        r#"{"a":[],"b":{},"id":"","name":[[[]]]}"#,
        "{\"a\":\"caf\u{e9} \u{1F600} long enough to take the eight-byte path\"}",
        r#"{"a":"0123456789abcdef0123456789\"x"}"#,
    ];

    #[test]
    fn reads_what_serde_json_reads() {
        for text in VALID {
            let expected: Json = serde_json::from_str(text).expect("valid JSON");
            let (data, errors) = parse(&format!(r#"{{"data":{text},"extensions":{{"k":[1]}}}}"#))
                .unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(data, Some(expected), "{text}");
            assert_eq!(errors, None);
        }
    }

    /// The store `body` parses into, and the items of its `data.a` list.
    fn parse_list_a(body: &[u8]) -> (Store, Vec<Value>) {
        let keys = keys();
        let mut store = Store::with_root();
        let body = Bytes::copy_from_slice(body);
        let source = store.keep(&body);
        let text = std::str::from_utf8(&body).expect("UTF-8");
        let data = response(text, source, &mut store, &keys)
            .expect("valid")
            .data
            .expect("data");
        let Value::Object(id) = data else {
            panic!("an object")
        };
        let Some(Value::List(items)) = store.object(id).get(keys.get("a").expect("a")) else {
            panic!("a list")
        };
        let items = store.list(*items).to_vec();
        (store, items)
    }

    #[test]
    fn numbers_keep_their_text() {
        let (store, items) =
            parse_list_a(br#"{"data":{"a":[-0,1.50,1E+2,12345678901234567890123]}}"#);
        let texts: Vec<&[u8]> = items
            .iter()
            .map(|v| match v {
                Value::RawNum(r) => store.raw(*r),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            texts,
            [&b"-0"[..], b"1.50", b"1E+2", b"12345678901234567890123"]
        );
    }

    #[test]
    fn errors_are_handed_over_as_text() {
        let (data, errors) =
            parse(r#"{"errors":[{"message":"no","path":["a",0]}],"data":null}"#).expect("valid");
        assert_eq!(data, Some(Json::Null));
        let errors: Json = serde_json::from_str(&errors.expect("errors")).expect("JSON");
        assert_eq!(errors, json!([{"message": "no", "path": ["a", 0]}]));
    }

    #[test]
    fn refuses_what_json_refuses() {
        let cases: &[(&str, &str)] = &[
            ("01", "expected `,` or `}` at byte 9"),
            ("1.", "invalid number at byte 10"),
            (".5", "expected a JSON value at byte 8"),
            ("-", "invalid number at byte 9"),
            ("1e", "invalid number at byte 10"),
            ("1e+", "invalid number at byte 11"),
            ("[1,]", "expected a JSON value at byte 11"),
            (r#"{"a":1,}"#, "expected a string key at byte 15"),
            (r#"{"a" 1}"#, "expected `:` at byte 13"),
            ("tru", "expected a JSON value at byte 8"),
            (r#""\x""#, "invalid escape at byte 9"),
            (r#""\ud800""#, "lone surrogate in a \\u escape at byte 9"),
            (
                r#""\udc00\ud800""#,
                "lone surrogate in a \\u escape at byte 9",
            ),
            (r#""\u12""#, "invalid \\u escape at byte 11"),
            ("\"a\u{1}b\"", "control character in a string at byte 10"),
            (r#""abc"#, "unterminated string at byte 13"),
            ("[1 2]", "expected `,` or `]` at byte 11"),
            ("", "expected a JSON value at byte 8"),
        ];
        let mut wrong = Vec::new();
        for (value, message) in cases {
            let text = format!(r#"{{"data":{value}}}"#);
            assert!(
                serde_json::from_str::<Json>(&text).is_err(),
                "{text} is invalid JSON"
            );
            let error = parse(&text).expect_err(&text).to_string();
            if error != *message {
                wrong.push(format!("{text}: {error}"));
            }
        }
        assert!(wrong.is_empty(), "{wrong:#?}");
        for (text, message) in [
            (r#"{"data":1} x"#, "trailing characters at byte 11"),
            ("[]", "expected a JSON object at byte 0"),
            (r#"{"data":1"#, "unexpected end of input at byte 9"),
            (r#"{"data":[1"#, "unexpected end of input at byte 10"),
            (r#"{"data":{"#, "unexpected end of input at byte 9"),
            (r#"{"data":"#, "unexpected end of input at byte 8"),
        ] {
            assert_eq!(parse(text).expect_err(text).to_string(), message);
        }
    }

    #[test]
    fn nesting_is_bounded() {
        let deep = |n: usize| format!(r#"{{"data":{}{}}}"#, "[".repeat(n), "]".repeat(n));
        assert!(parse(&deep(500)).is_ok());
        assert_eq!(
            parse(&deep(600)).expect_err("too deep").to_string(),
            "nested deeper than 512 levels at byte 520"
        );
    }

    #[test]
    fn raw_values_are_written_as_sent_near_and_far_from_the_end() {
        for len in [0, 1, 5, 29, 30, 31, 32, 33, 70] {
            let s = "s".repeat(len);
            let n = "9".repeat(len.max(1));
            // Strings and numbers last in the body (no full window after them) and not.
            for text in [
                format!(r#"{{"data":{{"a":["{s}",{n}],"b":["{s}",{n}]}}}}"#),
                format!(r#"{{"data":{{"b":1,"a":["{s}",{n}]}}}}"#),
            ] {
                let (store, items) = parse_list_a(text.as_bytes());
                let mut out = b"x".to_vec();
                for item in &items {
                    match item {
                        Value::RawStr(r) => store.write_raw(&mut out, *r, true),
                        Value::RawNum(r) => store.write_raw(&mut out, *r, false),
                        other => panic!("{other:?}"),
                    }
                }
                assert_eq!(
                    String::from_utf8(out).expect("UTF-8"),
                    format!("x\"{s}\"{n}")
                );
            }
        }
    }

    #[test]
    fn digit_runs_are_counted_eight_bytes_at_a_time() {
        for byte in 0..=255u8 {
            for at in 0..8 {
                let mut word = *b"01234567";
                word[at] = byte;
                let expected = if byte.is_ascii_digit() { 8 } else { at };
                assert_eq!(
                    leading_digits(u64::from_le_bytes(word)),
                    expected,
                    "{byte:#x} at {at}"
                );
            }
        }
        for number in [
            "1234567890123456789.25e+10",
            "-0.000000001",
            "98765432101234567",
        ] {
            let text = format!(r#"{{"data":{{"a":{number}}}}}"#);
            let expected: Json = serde_json::from_str(&text).expect("valid");
            assert_eq!(
                parse(&text).expect("valid").0,
                Some(expected["data"].clone())
            );
        }
    }

    #[test]
    fn every_byte_position_of_the_fast_path() {
        // A quote, backslash or control character at each offset of an eight-byte word.
        for at in 0..24 {
            for special in ["\\\"", "\\\\", "\\n"] {
                let s = format!("{}{special}{}", "x".repeat(at), "y".repeat(9));
                let text = format!(r#"{{"data":{{"a":"{s}"}}}}"#);
                let expected: Json = serde_json::from_str(&text).expect("valid");
                assert_eq!(
                    parse(&text).expect("valid").0,
                    Some(expected["data"].clone())
                );
            }
            let text = format!("{{\"data\":\"{}\u{1f}\"}}", "x".repeat(at));
            assert!(parse(&text).is_err(), "control character at {at}");
        }
    }
}
