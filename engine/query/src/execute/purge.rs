//! `PURGE t`: removes the expired rows of a table with a TTL, with their index entries, and
//! its expired older versions (a table that also keeps VERSIONS).
//!
//! Expired rows are already invisible to every read; purging gives their space back. The
//! table is read from one snapshot, and each expired row is read again and removed inside a
//! write transaction, a batch at a time, so that a row written again since the snapshot (live
//! once more) is left alone, and a concurrent write conflicts rather than being lost.

use rowdex_store::{Direction, KeyRange};

use rowdex_catalog::TableDef;

use crate::error::{Error, Result};
use crate::output::Output;
use crate::session::Session;
use crate::write::row_writer::RowWriter;

/// Rows removed per write transaction.
const PURGE_BATCH: usize = 1000;

pub(crate) async fn purge(session: &Session, table: &str) -> Result<Output> {
    let def = session.table_def(table)?;
    if def.ttl_seconds.is_none() {
        return Err(Error::NoTtl {
            table: def.name.clone(),
        });
    }
    let cutoff = session.db.expiry_cutoff(&def);
    let snapshot = session.db.store.snapshot();
    let mut expired: Vec<Vec<u8>> = Vec::new();
    let mut removed = 0u64;
    let mut range = KeyRange::prefix(&def.prefix());
    loop {
        let page = snapshot
            .scan_page(&range, Direction::Forward, PURGE_BATCH)
            .await?;
        for (row_key, value) in &page.entries {
            if !def.is_value_live(value, cutoff)? {
                expired.push(row_key.clone());
            }
        }
        if expired.len() >= PURGE_BATCH || page.resume.is_none() {
            removed += remove_expired(session, &def, std::mem::take(&mut expired)).await?;
        }
        match page.resume {
            Some(next) => range = next,
            None => break,
        }
    }
    removed += purge_history(session, &def, cutoff).await?;
    Ok(Output::Affected { rows: removed })
}

/// Removes the older versions written at or before `cutoff` (a table with VERSIONS and a TTL):
/// expired, they are invisible to `as_of` and `versions` already.
async fn purge_history(session: &Session, def: &TableDef, cutoff: Option<i64>) -> Result<u64> {
    let Some(cutoff) = cutoff.filter(|_| def.keeps_history()) else {
        return Ok(0);
    };
    let snapshot = session.db.store.snapshot();
    let mut removed = 0u64;
    let mut range = KeyRange::prefix(&def.history_prefix());
    loop {
        let page = snapshot
            .scan_page(&range, Direction::Forward, PURGE_BATCH)
            .await?;
        let mut expired = Vec::new();
        for (key, _) in &page.entries {
            if def.split_history_key(key)?.1 <= cutoff {
                expired.push(key.clone());
            }
        }
        if !expired.is_empty() {
            // An older version never changes once written: no reread needed.
            let mut tx = session.db.store.begin().await?;
            removed += expired.len() as u64;
            for key in expired {
                tx.delete(key);
            }
            tx.commit().await?;
        }
        match page.resume {
            Some(next) => range = next,
            None => break,
        }
    }
    Ok(removed)
}

/// Removes the rows under `keys` that are still expired, in one transaction.
async fn remove_expired(session: &Session, def: &TableDef, keys: Vec<Vec<u8>>) -> Result<u64> {
    if keys.is_empty() {
        return Ok(0);
    }
    let mut writer = RowWriter::begin(&session.db, def, None).await?;
    let mut removed = 0;
    for row in writer.stored_rows(&keys).await?.into_iter().flatten() {
        // Written again since the snapshot: live, and kept.
        if writer.is_live(&row) {
            continue;
        }
        writer.stage(Some(&row), None);
        removed += 1;
    }
    writer.commit().await?;
    Ok(removed)
}
