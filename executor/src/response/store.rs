//! The response store: objects in one `Vec`, values inline. Subgraph responses are
//! deserialized straight into it (serde `DeserializeSeed`), never via `serde_json::Value`.

use super::keys::{KeyId, KeyTable};
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
    List(Vec<Value>),
    Object(ObjId),
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
}

impl Store {
    pub fn with_root() -> Self {
        Self {
            objects: vec![Object::default()],
        }
    }

    pub const ROOT: ObjId = ObjId(0);

    pub fn object(&self, id: ObjId) -> &Object {
        &self.objects[id.0 as usize]
    }

    pub fn object_mut(&mut self, id: ObjId) -> &mut Object {
        &mut self.objects[id.0 as usize]
    }

    fn alloc(&mut self, object: Object) -> ObjId {
        let id = ObjId(self.objects.len() as u32);
        self.objects.push(object);
        id
    }

    /// Merge the fields of `src` into `dst` (entity results into the objects they extend).
    pub fn merge_object(&mut self, dst: ObjId, src: ObjId) {
        if dst == src {
            return;
        }
        // Shallow copy: a deduplicated entity result may extend several objects.
        let fields = self.object(src).fields.clone();
        for (key, value) in fields {
            self.merge_field(dst, key, value);
        }
        let extra = self.object(src).extra.clone();
        self.object_mut(dst).extra.extend(extra);
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

/// Deserializes one JSON value into the store; object keys are resolved against the
/// plan's key table and keys the plan never asked for are skipped.
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
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(4));
        while let Some(v) = seq.next_element_seed(ValueSeed {
            store: self.store,
            keys: self.keys,
        })? {
            items.push(v);
        }
        Ok(Value::List(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Object {
            fields: Vec::with_capacity(map.size_hint().unwrap_or(8)),
            extra: Vec::new(),
        };
        while let Some(key) = map.next_key_seed(KeySeed(self.keys))? {
            let v = map.next_value_seed(ValueSeed {
                store: self.store,
                keys: self.keys,
            })?;
            match key {
                Key::Known(k) => object.fields.push((k, v)),
                Key::Unknown(name) => object.extra.push((name, v)),
            }
        }
        Ok(Value::Object(self.store.alloc(object)))
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
