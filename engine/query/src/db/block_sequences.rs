//! Sequence values for a statement that may run inside a transaction block: a sequence the
//! block created (and has not committed) exists for that block alone, so its values are taken
//! inside the block's own transaction, value by value and without the process-wide ranges of
//! `db::sequences`, which serve every other sequence.

use rowdex_catalog::Catalog;

use crate::db::DbState;
use crate::db::sequences::record_last;
use crate::db::txn::SessionTxn;
use crate::error::Result;

/// `count` fresh values of sequence `name`, for a statement running in `txn` (if any).
pub(crate) async fn next_values(
    db: &DbState,
    txn: Option<&SessionTxn>,
    name: &str,
    count: usize,
) -> Result<Vec<i64>> {
    let created_here = txn.filter(|txn| {
        txn.with_catalog(|edits| edits.is_some_and(|edits| edits.created_sequence(name)))
    });
    match created_here {
        Some(txn) => next_values_within(txn, &db.catalog, name, count).await,
        None => db.sequences.next_values(&db.catalog, name, count).await,
    }
}

/// `count` values of the sequence `name`, taken inside `txn`, which created it.
async fn next_values_within(
    txn: &SessionTxn,
    catalog: &Catalog,
    name: &str,
    count: usize,
) -> Result<Vec<i64>> {
    let wanted = u32::try_from(count).unwrap_or(u32::MAX);
    let taken = {
        let mut tx = txn.store_tx().await?;
        catalog
            .stage_allocate_sequence(tx.as_mut(), name, wanted)
            .await?
    };
    let values: Vec<i64> = (0..count as i64)
        .map(|i| taken.next.saturating_add(i.saturating_mul(taken.increment)))
        .collect();
    record_last(name, &values);
    Ok(values)
}
