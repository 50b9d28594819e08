//! Hidden row ids (the key of a table declared without a PRIMARY KEY): consecutive blocks
//! handed out per table, never the same id twice.
//!
//! On a store only this process writes, the next id lives in memory and starts after the
//! largest id stored. On a store several processes write (a cluster), each process takes
//! blocks of ids from a per-table allocator key in a transaction of its own, so two processes
//! never take overlapping blocks; ids a process did not use before it ended are skipped.

use rowdex_catalog::{TableDef, keyspace};
use rowdex_codec::Datum;
use rowdex_store::{Direction, KeyRange, KvRead, StoreError};

use crate::db::DbState;
use crate::error::{Error, Result};

/// Ids taken from the shared allocator at a time (more when one statement needs more).
const SHARED_BLOCK: i64 = 1024;
/// Attempts at taking a block while other processes take theirs.
const BLOCK_ATTEMPTS: usize = 16;

/// Reserves `count` consecutive hidden row ids for a table; returns the first.
pub(crate) async fn reserve_rowids(db: &DbState, def: &TableDef, count: usize) -> Result<i64> {
    if db.store.capabilities().shared {
        reserve_shared(db, def, count).await
    } else {
        reserve_local(db, def, count).await
    }
}

/// The largest hidden row id stored in the table (0 when it is empty).
async fn largest_stored(reader: &dyn KvRead, def: &TableDef) -> Result<i64> {
    let mut largest = 0i64;
    for prefix in def.scan_prefixes() {
        let page = reader
            .scan_page(&KeyRange::prefix(&prefix), Direction::Reverse, 1)
            .await?;
        if let Some((key, value)) = page.entries.first() {
            let row = def.decode_row(key, value)?;
            if let Some(Datum::Int(id)) = def.key.first().map(|k| &row[k.column]) {
                largest = largest.max(*id);
            }
        }
    }
    Ok(largest)
}

/// [`reserve_rowids`] in the only process that writes the store.
async fn reserve_local(db: &DbState, def: &TableDef, count: usize) -> Result<i64> {
    let known = db
        .next_rowids
        .lock()
        .map(|m| m.get(&def.id).copied())
        .unwrap_or(None);
    let next = match known {
        Some(next) => next,
        None => {
            // First insert since open: continue after the largest row id stored.
            largest_stored(db.store.as_ref(), def).await? + 1
        }
    };
    let mut map = db.next_rowids.lock().map_err(|_| Error::WriteConflict)?;
    let entry = map.entry(def.id).or_insert(next);
    let first = (*entry).max(next);
    *entry = first + count as i64;
    Ok(first)
}

/// [`reserve_rowids`] on a store other processes write too.
async fn reserve_shared(db: &DbState, def: &TableDef, count: usize) -> Result<i64> {
    let count = i64::try_from(count).unwrap_or(i64::MAX);
    {
        let mut blocks = db.rowid_blocks.lock().map_err(|_| Error::WriteConflict)?;
        if let Some((next, end)) = blocks.get_mut(&def.id)
            && end.saturating_sub(*next) >= count
        {
            let first = *next;
            *next += count;
            return Ok(first);
        }
    }
    let key = keyspace::rowid_block_key(def.id);
    let take = count.max(SHARED_BLOCK);
    for _ in 0..BLOCK_ATTEMPTS {
        let mut tx = db.store.begin().await?;
        let start = match tx.get(&key).await? {
            Some(bytes) => {
                let array: [u8; 8] = bytes.as_slice().try_into().map_err(|_| {
                    Error::Store(StoreError::Remote {
                        code: 0,
                        message: format!("the row id allocator of {} is not 8 bytes", def.name),
                    })
                })?;
                i64::from_be_bytes(array)
            }
            // The first block: after what is stored (a table loaded before it had blocks).
            None => largest_stored(tx.as_ref(), def).await? + 1,
        };
        let end = start.saturating_add(take);
        tx.put(key.clone(), end.to_be_bytes().to_vec());
        match tx.commit().await {
            Ok(()) => {
                let mut blocks = db.rowid_blocks.lock().map_err(|_| Error::WriteConflict)?;
                blocks.insert(def.id, (start + count, end));
                return Ok(start);
            }
            Err(StoreError::Conflict) => tokio::task::yield_now().await,
            Err(error) => return Err(error.into()),
        }
    }
    Err(Error::WriteConflict)
}
