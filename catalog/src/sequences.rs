//! Sequences (CREATE SEQUENCE, and the ones behind SERIAL and identity columns). Like roles they
//! are not cached: each allocation is one transaction that reads the sequence's key and writes
//! it back advanced, so two sessions (or two processes on one store) never take the same
//! values. Values are handed out in ranges (the caller keeps what it did not use yet); a range
//! not used up before the process ends is skipped, leaving a gap, as PostgreSQL's sequence
//! cache does.

use rowdex_store::{Direction, KeyRange, Transaction};
use serde::{Deserialize, Serialize};

use crate::catalog::Catalog;
use crate::edits::CatalogEdits;
use crate::error::{CatalogError, Result};
use crate::keyspace::{self, SEQUENCE_PREFIX};

/// A sequence as stored: its name, step and the next value not yet handed out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SequenceDef {
    pub name: String,
    /// Tells apart two sequences that had one name at different times (a cached range of a
    /// dropped sequence must not serve its successor).
    pub id: u32,
    pub increment: i64,
    /// The next value to hand out.
    pub next: i64,
    /// The table whose column draws from it (SERIAL, identity); dropped with the table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owned_by: Option<u32>,
}

impl Catalog {
    /// Stores a new sequence, giving it an id; `SequenceExists` if the name is taken.
    pub async fn create_sequence(&self, sequence: SequenceDef) -> Result<SequenceDef> {
        let mut tx = self.store.begin().await?;
        let mut edits = CatalogEdits::default();
        let sequence = self
            .stage_create_sequence(tx.as_mut(), &mut edits, sequence)
            .await?;
        tx.commit().await?;
        Ok(sequence)
    }

    /// [`Catalog::create_sequence`] in `tx`, recording it in `edits`: until `tx` commits, only
    /// `tx` can draw from it ([`Catalog::stage_allocate_sequence`]).
    pub async fn stage_create_sequence(
        &self,
        tx: &mut dyn Transaction,
        edits: &mut CatalogEdits,
        mut sequence: SequenceDef,
    ) -> Result<SequenceDef> {
        let key = keyspace::sequence_key(&sequence.name);
        if tx.get(&key).await?.is_some() {
            return Err(CatalogError::SequenceExists {
                sequence: sequence.name,
            });
        }
        sequence.id = crate::catalog::take_id(tx).await?;
        put_sequence(tx, &sequence)?;
        edits.created_sequences.insert(sequence.name.clone());
        Ok(sequence)
    }

    /// Removes a sequence, in `tx`, recording it in `edits` (whose publisher forgets the
    /// values it kept of it); `SequenceNotFound` if there is none of that name.
    pub async fn stage_drop_sequence(
        &self,
        tx: &mut dyn Transaction,
        edits: &mut CatalogEdits,
        name: &str,
    ) -> Result<()> {
        let key = keyspace::sequence_key(name);
        if tx.get(&key).await?.is_none() {
            return Err(CatalogError::SequenceNotFound {
                sequence: name.to_string(),
            });
        }
        tx.delete(key);
        edits.created_sequences.remove(name);
        edits.dropped_sequences.push(name.to_string());
        Ok(())
    }

    /// Removes, in `tx`, the sequences the table `table_id` owns (its SERIAL and identity
    /// columns').
    pub(crate) async fn stage_drop_owned_sequences(
        &self,
        tx: &mut dyn Transaction,
        table_id: u32,
    ) -> Result<()> {
        let mut owned = Vec::new();
        let range = KeyRange::prefix(SEQUENCE_PREFIX);
        let mut resume = Some(range);
        while let Some(range) = resume {
            let page = tx.scan_page(&range, Direction::Forward, 256).await?;
            for (key, value) in &page.entries {
                if decode_sequence(key, value)?.owned_by == Some(table_id) {
                    owned.push(key.clone());
                }
            }
            resume = page.resume;
        }
        for key in owned {
            tx.delete(key);
        }
        Ok(())
    }

    /// Takes `count` (at least 1) consecutive values of sequence `name`: returns the sequence
    /// as it was (its id, increment and the first value taken). A conflict with another
    /// allocation fails the commit; the caller tries again.
    pub async fn allocate_sequence(&self, name: &str, count: u32) -> Result<SequenceDef> {
        let mut tx = self.store.begin().await?;
        let taken = self
            .stage_allocate_sequence(tx.as_mut(), name, count)
            .await?;
        tx.commit().await?;
        Ok(taken)
    }

    /// [`Catalog::allocate_sequence`] in `tx` (which created the sequence and has not
    /// committed yet: no other transaction can see it).
    pub async fn stage_allocate_sequence(
        &self,
        tx: &mut dyn Transaction,
        name: &str,
        count: u32,
    ) -> Result<SequenceDef> {
        let key = keyspace::sequence_key(name);
        let bytes = tx
            .get(&key)
            .await?
            .ok_or_else(|| CatalogError::SequenceNotFound {
                sequence: name.to_string(),
            })?;
        let taken = decode_sequence(&key, &bytes)?;
        let mut advanced = taken.clone();
        advanced.next = i64::from(count.max(1))
            .checked_mul(taken.increment)
            .and_then(|step| taken.next.checked_add(step))
            .ok_or_else(|| CatalogError::SequenceExhausted {
                sequence: name.to_string(),
            })?;
        put_sequence(tx, &advanced)?;
        Ok(taken)
    }
}

fn put_sequence(tx: &mut dyn Transaction, sequence: &SequenceDef) -> Result<()> {
    let bytes = serde_json::to_vec(sequence).map_err(|source| CatalogError::Corrupt {
        what: sequence.name.clone(),
        source,
    })?;
    tx.put(keyspace::sequence_key(&sequence.name), bytes);
    Ok(())
}

fn decode_sequence(key: &[u8], bytes: &[u8]) -> Result<SequenceDef> {
    serde_json::from_slice(bytes).map_err(|source| CatalogError::Corrupt {
        what: String::from_utf8_lossy(key).into_owned(),
        source,
    })
}
