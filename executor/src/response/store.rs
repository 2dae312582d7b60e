//! The response store: objects in one `Vec`, values inline. Subgraph responses are
//! read straight into it, never via `serde_json::Value`.
//! Strings without escapes are not copied: the store keeps the subgraph's response body
//! and a [`RawStr`] points into it, so writing one is a copy of its bytes, with no
//! allocation, no escaping and nothing to free. List items and decoded strings live in
//! arenas of the store, so a [`Value`] owns nothing: values are copied freely and a
//! request's store is freed in a few large pieces, not item by item.

use super::buffers::Pool;
use super::keys::{KeyId, KeyTable};
use apollo_compiler::response::JsonValue;
use bytes::Bytes;
use rustc_hash::FxHashMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ObjId(pub u32);

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    /// Decoded text (a string that had escapes): [`Store::string`].
    String(Span),
    /// A string as it appears, between its quotes, in a kept subgraph response body: no
    /// escapes in it (the parser hands those over as owned strings), so it is valid
    /// UTF-8 and valid JSON string content as it is.
    RawStr(RawStr),
    /// A number as the subgraph wrote it (valid JSON number text), in a kept body.
    RawNum(RawStr),
    /// Its items, one run of [`Store::list`]: lists never grow once parsed.
    List(Span),
    Object(ObjId),
}

// Every list item and field holds one: keep it two words.
const _: () = assert!(std::mem::size_of::<Value>() == 16);

/// `len` entries from `start` of one of the store's arenas (list items, decoded text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    start: u32,
    len: u32,
}

impl Span {
    pub fn len(self) -> usize {
        self.len as usize
    }

    pub fn is_empty(self) -> bool {
        self.len == 0
    }

    fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.start as usize + self.len as usize
    }
}

/// An arena passed 2^32 entries (a response of more than 4 GiB).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArenaFull;

/// Where a [`Value::RawStr`] lies: `len` bytes at `start` in [`Store::buffers`]`[buf]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawStr {
    buf: u32,
    start: u32,
    len: u32,
}

#[derive(Debug, Default, Clone)]
pub struct Object {
    pub fields: Vec<(KeyId, Value)>,
    /// Keys no selection asked for: only inside custom scalars (e.g. JSON), kept
    /// verbatim so such values pass through unchanged.
    pub extra: Vec<(Box<str>, Value)>,
}

impl Object {
    pub fn get(&self, key: KeyId) -> Option<&Value> {
        self.fields.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }
}

#[derive(Debug, Default)]
pub struct Store {
    pub objects: Vec<Object>,
    /// Subgraph response bodies that [`Value::RawStr`]s point into.
    pub buffers: Vec<Bytes>,
    /// The items of every list, each list one run ([`Value::List`]).
    lists: Vec<Value>,
    /// The text of decoded strings ([`Value::String`]).
    text: String,
    /// Items and fields being parsed, nested ones on top, so that each list and object
    /// is stored once at its final size instead of grown (and copied) from empty.
    pub(super) items: Vec<Value>,
    pub(super) fields: Vec<(KeyId, Value)>,
    /// Objects a subgraph answered null for (an `_entities` item that is null): their
    /// missing fields are the subgraph's null, not a silent one (debug builds check
    /// every other missing field, see the writer).
    #[cfg(debug_assertions)]
    answered_null: rustc_hash::FxHashSet<ObjId>,
    /// Field slots allocated for objects as they were stored (parsed): with the
    /// arenas, what [`Self::heap_bytes`] counts. Merges are charged by what they copy.
    stored_fields: usize,
}

impl Store {
    pub fn with_root() -> Self {
        let mut store = Self::default();
        store.objects.push(Object::default());
        store
    }

    /// Record that a subgraph answered `obj` with null (debug builds; nothing otherwise).
    pub fn mark_answered_null(&mut self, obj: ObjId) {
        #[cfg(debug_assertions)]
        self.answered_null.insert(obj);
        #[cfg(not(debug_assertions))]
        let _ = obj;
    }

    /// Whether a subgraph answered `obj` with null (always false in release builds,
    /// which keep no record).
    pub fn answered_null(&self, obj: ObjId) -> bool {
        #[cfg(debug_assertions)]
        return self.answered_null.contains(&obj);
        #[cfg(not(debug_assertions))]
        {
            let _ = obj;
            false
        }
    }

    /// Keep `body` for the strings deserialized from it: the [`Source`] to hand the seed.
    pub fn keep<'de>(&mut self, body: &'de Bytes) -> Source<'de> {
        let buf = u32::try_from(self.buffers.len()).expect("fewer than 2^32 fetches");
        self.buffers.push(body.clone());
        Source { buf, body }
    }

    /// The bytes of a raw string (valid UTF-8, no escapes).
    pub fn raw(&self, s: RawStr) -> &[u8] {
        let start = s.start as usize;
        &self.buffers[s.buf as usize][start..start + s.len as usize]
    }

    /// Appends a raw string (with its quotes, `quoted`) or number as the subgraph
    /// wrote it. A short one is one fixed-size copy from the body, not a `memcpy`
    /// call: a big response is some 250,000 short strings and numbers.
    pub fn write_raw(&self, out: &mut Vec<u8>, s: RawStr, quoted: bool) {
        const WINDOW: usize = 32;
        let body = &self.buffers[s.buf as usize];
        let (mut start, mut len) = (s.start as usize, s.len as usize);
        if quoted {
            // The reader makes raw strings of text between quotes: take them along.
            let around = start > 0
                && body.get(start - 1) == Some(&b'"')
                && body.get(start + len) == Some(&b'"');
            if !around {
                out.push(b'"');
                out.extend_from_slice(&body[start..start + len]);
                out.push(b'"');
                return;
            }
            start -= 1;
            len += 2;
        }
        if len <= WINDOW
            && let Some(window) = body
                .get(start..)
                .and_then(|rest| rest.first_chunk::<WINDOW>())
        {
            out.extend_from_slice(window);
            out.truncate(out.len() - (WINDOW - len));
            return;
        }
        out.extend_from_slice(&body[start..start + len]);
    }

    /// The items of a list value.
    pub fn list(&self, items: Span) -> &[Value] {
        &self.lists[items.range()]
    }

    /// The text of a decoded string value.
    pub fn string(&self, text: Span) -> &str {
        &self.text[text.range()]
    }

    /// A decoded string's value.
    pub fn add_string(&mut self, text: &str) -> Result<Value, ArenaFull> {
        let span = span(self.text.len(), text.len())?;
        self.text.push_str(text);
        Ok(Value::String(span))
    }

    /// A list of the parse stack's items from `mark` on (taken off the stack).
    pub(super) fn list_from_stack(&mut self, mark: usize) -> Result<Value, ArenaFull> {
        let span = span(self.lists.len(), self.items.len() - mark);
        let span = match span {
            Ok(span) => span,
            Err(full) => {
                self.items.truncate(mark);
                return Err(full);
            }
        };
        self.reserve_lists(span.len());
        self.lists.extend_from_slice(&self.items[mark..]);
        self.items.truncate(mark);
        Ok(Value::List(span))
    }

    /// Room for `more` list items; a big arena grows into a kept buffer.
    fn reserve_lists(&mut self, more: usize) {
        let needed = self.lists.len() + more;
        if needed <= self.lists.capacity() {
            return;
        }
        let mut grown = LISTS.take(needed.max(2 * self.lists.capacity()).max(64));
        grown.extend_from_slice(&self.lists);
        LISTS.give(std::mem::replace(&mut self.lists, grown));
    }

    /// The bytes of a string value, owned or raw (for comparing with known names
    /// without a UTF-8 check); `None` for other values.
    pub fn str_bytes(&self, v: &Value) -> Option<&[u8]> {
        match v {
            Value::String(s) => Some(self.string(*s).as_bytes()),
            Value::RawStr(r) => Some(self.raw(*r)),
            _ => None,
        }
    }

    /// The text of a string value, owned or raw; `None` for other values.
    pub fn as_str(&self, v: &Value) -> Option<&str> {
        match v {
            Value::String(s) => Some(self.string(*s)),
            // Checked again (cheaply: such strings are mostly short type names and enum
            // values) rather than trusted unchecked.
            Value::RawStr(r) => std::str::from_utf8(self.raw(*r)).ok(),
            _ => None,
        }
    }

    pub const ROOT: ObjId = ObjId(0);

    /// Heap bytes of the parsed values: the object table, the fields objects were
    /// stored with, list items and decoded text (the kept bodies are charged apart, as
    /// they are read). A sum of a few capacities, so cheap to ask after every fetch.
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        self.objects.capacity() * size_of::<Object>()
            + self.stored_fields * size_of::<(KeyId, Value)>()
            + (self.lists.capacity() + self.items.capacity()) * size_of::<Value>()
            + self.fields.capacity() * size_of::<(KeyId, Value)>()
            + self.text.capacity()
    }

    pub fn object(&self, id: ObjId) -> &Object {
        &self.objects[id.0 as usize]
    }

    pub fn object_mut(&mut self, id: ObjId) -> &mut Object {
        &mut self.objects[id.0 as usize]
    }

    pub(super) fn alloc(&mut self, object: Object) -> ObjId {
        self.stored_fields += object.fields.capacity() + object.extra.capacity();
        let id = ObjId(self.objects.len() as u32);
        self.objects.push(object);
        id
    }

    /// Merge the fields of `src` into `dst` (entity results into the objects they extend).
    pub fn merge_object(&mut self, dst: ObjId, src: ObjId) {
        if dst == src {
            return;
        }
        // Field by field (a deduplicated entity result may extend several objects):
        // copies of scalars and object ids, no copy of the field list.
        let fields = self.object(src).fields.len();
        if fields > LINEAR_MERGE_FIELDS {
            self.merge_object_indexed(dst, src);
        } else {
            for i in 0..fields {
                let (key, value) = self.object(src).fields[i];
                self.merge_field(dst, key, value);
            }
        }
        if !self.object(src).extra.is_empty() {
            let extra = self.object(src).extra.clone();
            self.object_mut(dst).extra.extend(extra);
        }
    }

    /// [`Self::merge_object`] for wide objects: each field is found through an index of
    /// `dst`'s fields, not a scan of them, so many aliases merge in linear time.
    fn merge_object_indexed(&mut self, dst: ObjId, src: ObjId) {
        let mut at: FxHashMap<KeyId, usize> = FxHashMap::default();
        for (i, (key, _)) in self.object(dst).fields.iter().enumerate() {
            // The first of equal keys, as a scan finds it.
            at.entry(*key).or_insert(i);
        }
        for i in 0..self.object(src).fields.len() {
            let (key, value) = self.object(src).fields[i];
            let pos = at.get(&key).copied();
            if let Some(new) = self.merge_at(dst, pos, key, value) {
                at.insert(key, new);
            }
        }
    }

    pub fn merge_field(&mut self, dst: ObjId, key: KeyId, value: Value) {
        let pos = self.object(dst).fields.iter().position(|(k, _)| *k == key);
        self.merge_at(dst, pos, key, value);
    }

    /// Merge `value` into `dst`'s field `key`, found at `pos` (or absent); the position
    /// of the field when it was added.
    fn merge_at(
        &mut self,
        dst: ObjId,
        pos: Option<usize>,
        key: KeyId,
        value: Value,
    ) -> Option<usize> {
        let Some(pos) = pos else {
            let fields = &mut self.object_mut(dst).fields;
            fields.push((key, value));
            return Some(fields.len() - 1);
        };
        let existing = self.object(dst).fields[pos].1;
        match (existing, value) {
            (Value::Object(a), Value::Object(b)) => self.merge_object(a, b),
            (Value::List(a), Value::List(b)) if a.len() == b.len() => self.merge_lists(a, b),
            (Value::Null, v) | (_, v @ Value::Null) if matches!(v, Value::Null) => {}
            (_, v) => self.object_mut(dst).fields[pos].1 = v,
        }
        None
    }

    /// How many field entries merging `src` into an object can add at most: its fields
    /// and, where they meet objects already there, their fields, all the way down.
    pub fn merge_cost(&self, value: Value) -> usize {
        match value {
            Value::Object(id) => {
                let object = self.object(id);
                object.fields.len()
                    + object.extra.len()
                    + object
                        .fields
                        .iter()
                        .map(|(_, v)| self.merge_cost(*v))
                        .sum::<usize>()
            }
            Value::List(items) => self.list(items).iter().map(|v| self.merge_cost(*v)).sum(),
            _ => 0,
        }
    }

    fn merge_lists(&mut self, a: Span, b: Span) {
        for i in 0..a.len().min(b.len()) {
            let (x, y) = (self.list(a)[i], self.list(b)[i]);
            self.merge_value(x, y);
        }
    }

    fn merge_value(&mut self, a: Value, b: Value) {
        match (a, b) {
            (Value::Object(a), Value::Object(b)) => self.merge_object(a, b),
            (Value::List(a), Value::List(b)) if a.len() == b.len() => self.merge_lists(a, b),
            _ => {}
        }
    }
}

/// Objects with more fields than this merge through an index of the target's fields.
const LINEAR_MERGE_FIELDS: usize = 16;

/// What one field entry of a merged object holds, for the response budget.
pub const FIELD_ENTRY_BYTES: usize = std::mem::size_of::<(KeyId, Value)>();

/// List arenas of big responses, for the next ones.
static LISTS: Pool<Value> = Pool::new();

impl Drop for Store {
    fn drop(&mut self) {
        LISTS.give(std::mem::take(&mut self.lists));
    }
}

/// `len` entries at `start` of an arena, if both fit in 32 bits.
fn span(start: usize, len: usize) -> Result<Span, ArenaFull> {
    let end = start.checked_add(len).ok_or(ArenaFull)?;
    u32::try_from(end).map_err(|_| ArenaFull)?;
    Ok(Span {
        start: start as u32,
        len: len as u32,
    })
}

/// A kept response body: the reader points raw strings and numbers into it.
#[derive(Clone, Copy)]
pub struct Source<'de> {
    buf: u32,
    body: &'de [u8],
}

impl Source<'_> {
    /// `len` bytes at `start` of this body.
    pub(super) fn at(self, start: usize, len: usize) -> Option<RawStr> {
        if start.checked_add(len)? > self.body.len() {
            return None;
        }
        Some(RawStr {
            buf: self.buf,
            start: u32::try_from(start).ok()?,
            len: u32::try_from(len).ok()?,
        })
    }
}

impl Store {
    /// Stores a JSON value the gateway made itself (introspection) by walking it: object
    /// keys are resolved against the plan's key table, and keys the plan never asked
    /// for are kept aside as in a subgraph answer. No text is re-read, so the nesting
    /// has no parser's limit: the operation's depth limit bounds it.
    pub fn add_json(&mut self, value: &JsonValue, keys: &KeyTable) -> Result<Value, ArenaFull> {
        Ok(match value {
            JsonValue::Null => Value::Null,
            JsonValue::Bool(b) => Value::Bool(*b),
            JsonValue::Number(n) => {
                if let Some(i) = n.as_i64() {
                    Value::Int(i)
                } else if let Some(u) = n.as_u64() {
                    Value::UInt(u)
                } else {
                    Value::Float(n.as_f64().unwrap_or(f64::NAN))
                }
            }
            JsonValue::String(s) => self.add_string(s.as_str())?,
            JsonValue::Array(items) => {
                let mark = self.items.len();
                for item in items {
                    match self.add_json(item, keys) {
                        Ok(v) => self.items.push(v),
                        Err(full) => {
                            self.items.truncate(mark);
                            return Err(full);
                        }
                    }
                }
                self.list_from_stack(mark)?
            }
            JsonValue::Object(map) => {
                let mark = self.fields.len();
                let mut extra = Vec::new();
                for (key, item) in map {
                    let v = match self.add_json(item, keys) {
                        Ok(v) => v,
                        Err(full) => {
                            self.fields.truncate(mark);
                            return Err(full);
                        }
                    };
                    match keys.get(key.as_str()) {
                        Some(k) => self.fields.push((k, v)),
                        None => extra.push((key.as_str().into(), v)),
                    }
                }
                let fields = self.fields.drain(mark..).collect();
                Value::Object(self.alloc(Object { fields, extra }))
            }
        })
    }
}
