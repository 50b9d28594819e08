//! `ALTER TABLE t ADD [CONSTRAINT name] PRIMARY KEY (a [, b DESC])` on a table created without
//! a key (pgbench's `-I p` step, ORMs' migrations): the columns become the row key, so every
//! stored row moves from its hidden row id to its new key, and every index entry (which ends
//! with the key) is written again.
//!
//! It is one transaction: the rows are read through the transaction that stores the new
//! definition, their old entries deleted and new ones put in it, so the table is re-keyed
//! whole or not at all (a NULL or a repeated key fails it before anything is written), and a
//! writer that wrote the old shape meanwhile makes it conflict. The whole table passes through
//! that one transaction: a table larger than the store's commit allows is refused by it.
//! Inside a transaction block that transaction is the block's (`execute::schema_txn`).

use std::collections::HashSet;

use rowdex_catalog::TableDef;
use rowdex_codec::Datum;

use crate::error::{Error, Result};
use crate::execute::schema_txn::SchemaTxn;
use crate::output::Output;
use crate::session::Session;
use crate::write::rewrite::rewrite_rows;

/// Re-keys the table `name` by `key` (column names, each with its DESC flag).
pub(crate) async fn add_primary_key(
    session: &Session,
    name: &str,
    key: &[(String, bool)],
) -> Result<Output> {
    let catalog = &session.db.catalog;
    let mut change = SchemaTxn::begin(session).await?;
    let (mut tx, edits) = change.stage().await?;
    let old = catalog.stored_table(&*tx, name).await?;
    if old.ttl_seconds.is_some() || old.versions > 1 || !old.salt_on.is_empty() {
        return Err(Error::Unsupported {
            what: format!(
                "ADD PRIMARY KEY on table {name}, which has a TTL, kept versions or SALT_ON"
            ),
        });
    }
    let mut new = old.clone();
    new.set_primary_key(key)?;
    // Where each of the new definition's columns is in a row read by the old one.
    let from_old: Vec<usize> = new
        .columns
        .iter()
        .map(|column| {
            old.columns
                .iter()
                .position(|c| c.id == column.id)
                .ok_or_else(|| Error::Unsupported {
                    what: format!("column {} moved while re-keying {name}", column.name),
                })
        })
        .collect::<Result<_>>()?;
    let now = session.db.now_micros();
    let mut keys: HashSet<Vec<u8>> = HashSet::new();
    rewrite_rows(&mut *tx, &old, &new, now, |row| {
        let moved: Vec<Datum> = from_old.iter().map(|&i| row[i].clone()).collect();
        check_key(&new, &moved, &mut keys)?;
        Ok(Some(moved))
    })
    .await?;
    catalog.stage_alter(&mut *tx, edits, name, new).await?;
    drop(tx);
    change.finish(&session.db).await?;
    Ok(Output::Done)
}

/// Refuses a row whose new key has a NULL, or repeats one seen before.
fn check_key(def: &TableDef, row: &[Datum], keys: &mut HashSet<Vec<u8>>) -> Result<()> {
    if let Some(column) = def.key.iter().find(|k| row[k.column].is_null()) {
        return Err(Error::ColumnHasNulls {
            table: def.name.clone(),
            column: def.columns[column.column].name.clone(),
        });
    }
    if !keys.insert(def.row_key_of(row)) {
        let values: Vec<String> = def.key.iter().map(|k| row[k.column].to_string()).collect();
        return Err(Error::DuplicateKey {
            table: def.name.clone(),
            key: format!("({})", values.join(", ")),
        });
    }
    Ok(())
}
