//! Interned response keys: objects in the store hold `KeyId`s, not strings.

use apollo_compiler::Name;
use rustc_hash::FxHashMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyId(pub u32);

#[derive(Debug, Clone, Default)]
pub struct KeyTable {
    names: Vec<Name>,
    ids: FxHashMap<Name, KeyId>,
}

impl KeyTable {
    pub fn intern(&mut self, name: &Name) -> KeyId {
        if let Some(id) = self.ids.get(name) {
            return *id;
        }
        let id = KeyId(self.names.len() as u32);
        self.names.push(name.clone());
        self.ids.insert(name.clone(), id);
        id
    }

    pub fn get(&self, name: &str) -> Option<KeyId> {
        self.ids.get(name).copied()
    }

    pub fn name(&self, id: KeyId) -> &str {
        self.names[id.0 as usize].as_str()
    }
}
