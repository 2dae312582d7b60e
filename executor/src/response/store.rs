//! The response store: objects in one `Vec`, values inline. Subgraph responses are
//! deserialized straight into it (serde `DeserializeSeed`), never via `serde_json::Value`.
//! Strings without escapes are not copied: the store keeps the subgraph's response body
//! and a [`RawStr`] points into it, so writing one is a copy of its bytes, with no
//! allocation, no escaping and nothing to free.

use super::keys::{KeyId, KeyTable};
use bytes::Bytes;
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ObjId(pub u32);

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    String(Box<str>),
    /// A string as it appears, between its quotes, in a kept subgraph response body: no
    /// escapes in it (the parser hands those over as owned strings), so it is valid
    /// UTF-8 and valid JSON string content as it is.
    RawStr(RawStr),
    /// A number as the subgraph wrote it (valid JSON number text), in a kept body.
    RawNum(RawStr),
    /// Exactly as long as the list: lists never grow once parsed.
    List(Box<[Value]>),
    Object(ObjId),
}

// Every list item and field holds one: keep it three words.
const _: () = assert!(std::mem::size_of::<Value>() == 24);

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
    /// Items and fields being parsed, nested ones on top, so that each list and object
    /// is allocated once at its final size instead of grown (and copied) from empty.
    pub(super) items: Vec<Value>,
    pub(super) fields: Vec<(KeyId, Value)>,
}

impl Store {
    pub fn with_root() -> Self {
        Self {
            objects: vec![Object::default()],
            ..Self::default()
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

    /// The bytes of a string value, owned or raw (for comparing with known names
    /// without a UTF-8 check); `None` for other values.
    pub fn str_bytes<'s>(&'s self, v: &'s Value) -> Option<&'s [u8]> {
        match v {
            Value::String(s) => Some(s.as_bytes()),
            Value::RawStr(r) => Some(self.raw(*r)),
            _ => None,
        }
    }

    /// The text of a string value, owned or raw; `None` for other values.
    pub fn as_str<'s>(&'s self, v: &'s Value) -> Option<&'s str> {
        match v {
            Value::String(s) => Some(s),
            // Checked again (cheaply: such strings are mostly short type names and enum
            // values) rather than trusted unchecked.
            Value::RawStr(r) => std::str::from_utf8(self.raw(*r)).ok(),
            _ => None,
        }
    }

    pub const ROOT: ObjId = ObjId(0);

    pub fn object(&self, id: ObjId) -> &Object {
        &self.objects[id.0 as usize]
    }

    pub fn object_mut(&mut self, id: ObjId) -> &mut Object {
        &mut self.objects[id.0 as usize]
    }

    pub(super) fn alloc(&mut self, object: Object) -> ObjId {
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
        for i in 0..self.object(src).fields.len() {
            let (key, value) = self.object(src).fields[i].clone();
            self.merge_field(dst, key, value);
        }
        if !self.object(src).extra.is_empty() {
            let extra = self.object(src).extra.clone();
            self.object_mut(dst).extra.extend(extra);
        }
    }

    pub fn merge_field(&mut self, dst: ObjId, key: KeyId, value: Value) {
        let pos = self.object(dst).fields.iter().position(|(k, _)| *k == key);
        let Some(pos) = pos else {
            self.object_mut(dst).fields.push((key, value));
            return;
        };
        let existing = self.object(dst).fields[pos].1.clone();
        match (existing, value) {
            (Value::Object(a), Value::Object(b)) => self.merge_object(a, b),
            (Value::List(a), Value::List(b)) if a.len() == b.len() => {
                for (x, y) in a.into_iter().zip(b) {
                    self.merge_value(x, y);
                }
            }
            (Value::Null, v) | (_, v @ Value::Null) if matches!(v, Value::Null) => {}
            (_, v) => self.object_mut(dst).fields[pos].1 = v,
        }
    }

    fn merge_value(&mut self, a: Value, b: Value) {
        match (a, b) {
            (Value::Object(a), Value::Object(b)) => self.merge_object(a, b),
            (Value::List(a), Value::List(b)) if a.len() == b.len() => {
                for (x, y) in a.into_iter().zip(b) {
                    self.merge_value(x, y);
                }
            }
            _ => {}
        }
    }
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

/// Deserializes one JSON value into the store; object keys are resolved against the
/// plan's key table and keys the plan never asked for are skipped. For JSON the gateway
/// made itself (introspection); subgraph bodies go through [`super::parse`].
pub struct ValueSeed<'a> {
    pub store: &'a mut Store,
    pub keys: &'a KeyTable,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Int(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(match i64::try_from(v) {
            Ok(i) => Value::Int(i),
            Err(_) => Value::UInt(v),
        })
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::Float(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.into()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v.into_boxed_str()))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mark = self.store.items.len();
        loop {
            let seed = ValueSeed {
                store: &mut *self.store,
                keys: self.keys,
            };
            match seq.next_element_seed(seed) {
                Ok(Some(v)) => self.store.items.push(v),
                Ok(None) => break,
                Err(e) => {
                    self.store.items.truncate(mark);
                    return Err(e);
                }
            }
        }
        Ok(Value::List(self.store.items.drain(mark..).collect()))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mark = self.store.fields.len();
        let mut extra = Vec::new();
        let parsed = loop {
            let key = match map.next_key_seed(KeySeed(self.keys)) {
                Ok(Some(key)) => key,
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            };
            let seed = ValueSeed {
                store: &mut *self.store,
                keys: self.keys,
            };
            match (key, map.next_value_seed(seed)) {
                (Key::Known(k), Ok(v)) => self.store.fields.push((k, v)),
                (Key::Unknown(name), Ok(v)) => extra.push((name, v)),
                (_, Err(e)) => break Err(e),
            }
        };
        if let Err(e) = parsed {
            self.store.fields.truncate(mark);
            return Err(e);
        }
        let fields = self.store.fields.drain(mark..).collect();
        Ok(Value::Object(self.store.alloc(Object { fields, extra })))
    }
}

enum Key {
    Known(KeyId),
    Unknown(Box<str>),
}

/// Resolves an object key to its interned id; allocates only for unknown keys.
struct KeySeed<'a>(&'a KeyTable);

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = Key;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed<'_> {
    type Value = Key;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object key")
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(match self.0.get(v) {
            Some(k) => Key::Known(k),
            None => Key::Unknown(v.into()),
        })
    }
}
