//! Write batches: an ordered list of puts and deletes applied atomically.

use crate::{Durability, Result, StoreError};

/// Longest key any backend accepts (fjall stores key lengths as `u16`).
pub const MAX_KEY_LEN: usize = u16::MAX as usize;

/// Longest value any backend accepts (fjall stores value lengths as `u32`).
pub const MAX_VALUE_LEN: usize = u32::MAX as usize;

/// One write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mutation {
    /// Set `key` to `value`.
    Put {
        /// Key to write.
        key: Vec<u8>,
        /// New value.
        value: Vec<u8>,
    },
    /// Remove `key` (a no-op if absent).
    Delete {
        /// Key to remove.
        key: Vec<u8>,
    },
}

impl Mutation {
    /// The key this mutation touches.
    pub fn key(&self) -> &[u8] {
        match self {
            Mutation::Put { key, .. } | Mutation::Delete { key } => key,
        }
    }
}

/// Mutations applied all-or-nothing by [`crate::KvStore::write`].
///
/// Operations keep their order; when several touch the same key, the later one wins.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteBatch {
    mutations: Vec<Mutation>,
    /// How far the commit is pushed before it returns (None: the store's default).
    durability: Option<Durability>,
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a put.
    pub fn put(&mut self, key: Vec<u8>, value: Vec<u8>) {
        self.mutations.push(Mutation::Put { key, value });
    }

    /// Appends a delete.
    pub fn delete(&mut self, key: Vec<u8>) {
        self.mutations.push(Mutation::Delete { key });
    }

    /// Asks for `durability` instead of the store's default (see [`Durability`]).
    pub fn set_durability(&mut self, durability: Option<Durability>) {
        self.durability = durability;
    }

    /// The durability asked for (None: the store's default).
    pub fn durability(&self) -> Option<Durability> {
        self.durability
    }

    /// Number of mutations (duplicates included).
    pub fn len(&self) -> usize {
        self.mutations.len()
    }

    /// Whether the batch holds no mutations.
    pub fn is_empty(&self) -> bool {
        self.mutations.is_empty()
    }

    /// The mutations in the order they were added.
    pub fn mutations(&self) -> &[Mutation] {
        &self.mutations
    }

    /// The mutations in the order they were added, taken out of the batch (a backend keeps
    /// the keys and values it is given without copying them).
    pub fn into_mutations(self) -> Vec<Mutation> {
        self.mutations
    }

    /// Checks every mutation against the size limits shared by all backends.
    ///
    /// Done before anything is applied so an oversized entry rejects the whole batch instead
    /// of tripping an assertion deep inside the engine halfway through.
    pub(crate) fn validate(&self) -> Result<()> {
        for mutation in &self.mutations {
            let key = mutation.key();
            if key.is_empty() {
                return Err(StoreError::EmptyKey);
            }
            if key.len() > MAX_KEY_LEN {
                return Err(StoreError::KeyTooLarge {
                    len: key.len(),
                    max: MAX_KEY_LEN,
                });
            }
            if let Mutation::Put { value, .. } = mutation
                && value.len() > MAX_VALUE_LEN
            {
                return Err(StoreError::ValueTooLarge {
                    len: value.len(),
                    max: MAX_VALUE_LEN,
                });
            }
        }
        Ok(())
    }
}

impl FromIterator<Mutation> for WriteBatch {
    fn from_iter<T: IntoIterator<Item = Mutation>>(iter: T) -> Self {
        WriteBatch {
            mutations: iter.into_iter().collect(),
            durability: None,
        }
    }
}
