//! Whole rows of tables whose columns are split into column families.
//!
//! A row entry holds the default family's cells only; each other family has an entry of its own
//! under the same primary key (see `rowdex_catalog`'s family layout). Whoever needs more of a
//! row than one entry holds (a write that maintains indexes, an index check, a query reading
//! columns of several families) completes the decoded rows here with one multi-get per batch.
//! For a table without families every function returns at once, without reading.

use rowdex_catalog::TableDef;
use rowdex_codec::Datum;
use rowdex_store::KvRead;

use crate::Result;

/// Fills in the columns of `families` in `rows`, each decoded from one family's entry, with
/// `pks` their encoded primary keys. A family entry that is missing leaves its columns NULL
/// (every write puts all of a row's entries, so only damage can lose one).
pub async fn complete_rows(
    reader: &dyn KvRead,
    table: &TableDef,
    pks: &[Vec<u8>],
    rows: &mut [Vec<Datum>],
    families: &[u8],
) -> Result<()> {
    if families.is_empty() || rows.is_empty() {
        return Ok(());
    }
    let keys: Vec<Vec<u8>> = families
        .iter()
        .flat_map(|&family| pks.iter().map(move |pk| table.family_row_key(family, pk)))
        .collect();
    let values = reader.multi_get(&keys).await?;
    // One run of `pks.len()` values per family, in the order asked.
    for (i, value) in values.into_iter().enumerate() {
        let family = families.get(i / pks.len().max(1)).copied();
        if let (Some(value), Some(row)) = (value, rows.get_mut(i % pks.len().max(1))) {
            table.merge_entry_cells(row, family, &value)?;
        }
    }
    Ok(())
}

/// The rows whose entries of one family are `entries`, decoded and completed with the
/// columns of `others` (other families).
pub async fn decode_rows(
    reader: &dyn KvRead,
    table: &TableDef,
    entries: &[(Vec<u8>, Vec<u8>)],
    others: &[u8],
) -> Result<Vec<Vec<Datum>>> {
    let mut rows = Vec::with_capacity(entries.len());
    for (key, value) in entries {
        rows.push(table.decode_row(key, value)?);
    }
    if !others.is_empty() {
        let pks: Vec<Vec<u8>> = entries
            .iter()
            .map(|(key, _)| table.pk_bytes(key).to_vec())
            .collect();
        complete_rows(reader, table, &pks, &mut rows, others).await?;
    }
    Ok(rows)
}

/// The full rows (every family) whose row entries are `entries`.
pub async fn full_rows(
    reader: &dyn KvRead,
    table: &TableDef,
    entries: &[(Vec<u8>, Vec<u8>)],
) -> Result<Vec<Vec<Datum>>> {
    let others: Vec<u8> = table.family_numbers().skip(1).collect();
    decode_rows(reader, table, entries, &others).await
}

/// The full rows stored under `row_keys` (row entry keys), in the order asked; None where
/// there is no row.
pub async fn get_rows(
    reader: &dyn KvRead,
    table: &TableDef,
    row_keys: &[Vec<u8>],
) -> Result<Vec<Option<Vec<Datum>>>> {
    let values = reader.multi_get(row_keys).await?;
    let mut found = Vec::with_capacity(row_keys.len());
    let mut present = Vec::new();
    for (key, value) in row_keys.iter().zip(values) {
        if let Some(value) = value {
            present.push((key.clone(), value));
            found.push(true);
        } else {
            found.push(false);
        }
    }
    let mut rows = full_rows(reader, table, &present).await?.into_iter();
    Ok(found
        .into_iter()
        .map(|is_there| if is_there { rows.next() } else { None })
        .collect())
}
