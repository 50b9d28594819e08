//! Secondary index definitions and the key layout of index entries.
//!
//! An index entry key is `0x20 ‖ index id (u32 BE) ‖ [salt byte] ‖ encoded indexed values ‖
//! encoded primary key`. A salted index (`SALT_BUCKETS`) hashes the encoded indexed values, so
//! the entries of one value tuple stay together, in primary-key order, in one bucket. The primary-key suffix ("id redundancy") makes every entry unique even when values
//! repeat, and sorts the entries of one value tuple by primary key, which is what lets several
//! indexes be intersected by a streaming merge. The entry value holds the INCLUDE columns as
//! cells, like a row value.

use serde::{Deserialize, Serialize};

use crate::column::KeyColumn;
use crate::index_filter::IndexFilter;
use crate::keyspace;

/// Whether queries may read an index yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum IndexState {
    /// Writers maintain it, a backfill is filling it in; queries ignore it.
    Building,
    /// Complete: writers maintain it and queries use it.
    Ready,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexDef {
    /// Catalog object id (shared id space with tables, never reused).
    pub id: u32,
    pub name: String,
    /// Indexed columns in key order (positions in the table's columns, with DESC flags).
    pub columns: Vec<KeyColumn>,
    /// Covered columns stored in the entry value (positions in the table's columns).
    pub include: Vec<usize>,
    pub unique: bool,
    pub state: IndexState,
    /// 0 = not salted; else the entries spread over this many buckets by a hash of their
    /// indexed values (against a write hotspot on an increasing indexed value).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub salt_buckets: u16,
    /// Whether a UNIQUE constraint made it (`UNIQUE (a, b)` in CREATE TABLE, a column
    /// declared UNIQUE): PostgreSQL's catalog shows it as the constraint, backed by the index.
    #[serde(default, skip_serializing_if = "is_false")]
    pub constraint: bool,
    /// A partial index's condition: only the rows it holds for have entries (and, for a
    /// UNIQUE index, are held to distinct values).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<IndexFilter>,
}

fn is_zero(n: &u16) -> bool {
    *n == 0
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl IndexDef {
    /// Whether `row` has an entry in this index: every row, or those a partial index's
    /// condition holds for.
    pub fn covers_row(&self, row: &[rowdex_codec::Datum]) -> bool {
        self.filter.as_ref().is_none_or(|filter| filter.holds(row))
    }

    /// Prefix of every entry of this index.
    pub fn prefix(&self) -> Vec<u8> {
        keyspace::index_prefix(self.id)
    }

    /// Bytes of the index prefix.
    pub const PREFIX_LEN: usize = 5;

    /// Bytes before the encoded indexed values in an entry key: the prefix, and the salt.
    pub fn header_len(&self) -> usize {
        Self::PREFIX_LEN + usize::from(self.is_salted())
    }

    pub fn is_salted(&self) -> bool {
        self.salt_buckets > 0
    }

    /// The bucket of the entries whose encoded indexed values (all of them) are `values`.
    pub fn salt_of(&self, values: &[u8]) -> u8 {
        keyspace::salt_bucket(values, self.salt_buckets)
    }

    /// The entry-key prefix of one bucket (the index prefix for an unsalted index).
    pub fn bucket_prefix(&self, bucket: Option<u8>) -> Vec<u8> {
        let mut prefix = self.prefix();
        if let Some(bucket) = bucket.filter(|_| self.is_salted()) {
            prefix.push(bucket);
        }
        prefix
    }

    /// Every bucket (one `None` for an unsalted index).
    pub fn buckets(&self) -> Vec<Option<u8>> {
        if self.is_salted() {
            (0..self.salt_buckets).map(|b| Some(b as u8)).collect()
        } else {
            vec![None]
        }
    }

    pub fn is_ready(&self) -> bool {
        self.state == IndexState::Ready
    }
}
