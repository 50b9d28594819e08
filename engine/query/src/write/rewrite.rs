//! Rewriting every row of a table in one transaction, for the statements that change how rows
//! are stored (ALTER TABLE ... ADD PRIMARY KEY re-keys them, ALTER COLUMN ... TYPE converts a
//! value): each row is read by the old definition, and one that changes has its old entries
//! (row, families, index entries) deleted and its new ones put by the new definition.

use rowdex_catalog::TableDef;
use rowdex_codec::Datum;
use rowdex_store::{Direction, KeyRange, Transaction};

use crate::error::Result;

/// Rows read per page while a table is rewritten.
const REWRITE_BATCH: usize = 1024;

/// Reads every row of `before` through `tx` and rewrites as a row of `after` each that
/// `rewrite` returns a new row for (None: the row stays as stored); an error from `rewrite`
/// ends it with nothing more written. Every old entry is deleted before any new one is put: a
/// row's new key may be another row's old one, and a put seen by the scan would be rewritten
/// again.
pub(crate) async fn rewrite_rows(
    tx: &mut dyn Transaction,
    before: &TableDef,
    after: &TableDef,
    now: i64,
    mut rewrite: impl FnMut(&[Datum]) -> Result<Option<Vec<Datum>>>,
) -> Result<()> {
    rewrite_pages(tx, before, after, now, |rows| {
        rows.iter().map(|row| rewrite(row)).collect()
    })
    .await
}

/// [`rewrite_rows`] a page of rows at a time: `rewrite` answers each row of the page (None:
/// the row stays), so that work done per call (an expression evaluated over a batch) is done
/// once per page.
pub(crate) async fn rewrite_pages(
    tx: &mut dyn Transaction,
    before: &TableDef,
    after: &TableDef,
    now: i64,
    mut rewrite: impl FnMut(&[Vec<Datum>]) -> Result<Vec<Option<Vec<Datum>>>>,
) -> Result<()> {
    let others: Vec<u8> = before.family_numbers().filter(|&f| f != 0).collect();
    let mut puts: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut range = KeyRange::prefix(&before.prefix());
    loop {
        let page = tx
            .scan_page(&range, Direction::Forward, REWRITE_BATCH)
            .await?;
        let rows = rowdex_indexer::rows::decode_rows(&*tx, before, &page.entries, &others).await?;
        let rewritten_rows = rewrite(&rows)?;
        for (row, rewritten) in rows.into_iter().zip(rewritten_rows) {
            let Some(rewritten) = rewritten else {
                continue;
            };
            let gone = rowdex_indexer::mutations::row_change(before, Some(&row), None, now, None);
            for key in gone.deletes {
                tx.delete(key);
            }
            let put =
                rowdex_indexer::mutations::row_change(after, None, Some(&rewritten), now, None);
            puts.extend(put.puts);
        }
        match page.resume {
            Some(next) => range = next,
            None => break,
        }
    }
    for (key, value) in puts {
        tx.put(key, value);
    }
    Ok(())
}
