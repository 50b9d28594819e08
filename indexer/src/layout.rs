//! Index entries: building their keys and values from a row, and reading rows back out of them.
//!
//! Key = `index prefix ‖ [salt] ‖ encoded indexed values ‖ encoded primary key` (see
//! [`rowdex_catalog::IndexDef`]); value = the INCLUDE columns as cells. Because the primary key
//! follows the values, the entries of one value tuple are sorted by primary key and a reader
//! finds the primary key by skipping the indexed values.

use rowdex_catalog::{IndexDef, TableDef};
use rowdex_codec::{Datum, key, row};

use crate::{IndexError, Result};

/// The key of `row`'s entry in `index`; `row` holds every column of the table, in order.
pub fn entry_key(table: &TableDef, index: &IndexDef, row: &[Datum]) -> Vec<u8> {
    let mut out = value_prefix(index, index.columns.iter().map(|k| &row[k.column]));
    let pk: Vec<&Datum> = table.key.iter().map(|k| &row[k.column]).collect();
    out.extend_from_slice(&table.encode_key_values(&pk));
    out
}

/// `row`'s entry key without its header (index prefix and salt): `indexed values ‖ primary
/// key`, whose byte order is the index's order across all buckets.
pub fn entry_position(table: &TableDef, index: &IndexDef, row: &[Datum]) -> Vec<u8> {
    let mut key = entry_key(table, index, row);
    key.drain(..index.header_len().min(key.len()));
    key
}

/// The value of `row`'s entry: its INCLUDE columns (NULLs left out, as in a row value), and
/// for a table with a TTL the row's write time, so that an entry expires with its row even
/// where a reader never fetches the row, and is rewritten whenever the row is.
pub fn entry_value(table: &TableDef, index: &IndexDef, row: &[Datum]) -> Vec<u8> {
    let cells: Vec<(u32, &Datum)> = index
        .include
        .iter()
        .chain(table.written_at_column().as_ref())
        .filter(|c| !row[**c].is_null())
        .map(|c| (table.columns[*c].id, &row[*c]))
        .collect();
    let mut out = Vec::with_capacity(2 + 12 * cells.len());
    // Version 0: an entry's bytes must depend on the row alone, not on when the table's
    // definition last changed, or CHECK INDEX would see every older entry as stale.
    row::encode_row(&mut out, 0, &cells);
    out
}

/// The key prefix of the entries whose indexed columns equal `values` (all of them when the
/// index is salted: the bucket is hashed from every indexed value).
pub fn value_prefix<'a>(index: &IndexDef, values: impl IntoIterator<Item = &'a Datum>) -> Vec<u8> {
    let mut encoded = Vec::with_capacity(32);
    for (value, column) in values.into_iter().zip(&index.columns) {
        key::encode_datum(&mut encoded, value, column.order());
    }
    let bucket = index.is_salted().then(|| index.salt_of(&encoded));
    let mut out = index.bucket_prefix(bucket);
    out.extend_from_slice(&encoded);
    out
}

/// The prefix shared by every entry with the same indexed values as `row`, if a UNIQUE index
/// constrains it: SQL lets any number of rows hold NULL in a unique column, and a partial
/// index constrains only the rows it covers.
pub fn unique_prefix(index: &IndexDef, row: &[Datum]) -> Option<Vec<u8>> {
    let values: Vec<&Datum> = index.columns.iter().map(|k| &row[k.column]).collect();
    if !index.unique || values.iter().any(|v| v.is_null()) || !index.covers_row(row) {
        return None;
    }
    Some(value_prefix(index, values))
}

/// Where the primary key starts in an entry key.
pub fn pk_offset(index: &IndexDef, entry_key: &[u8]) -> Result<usize> {
    let mut rest = header_stripped(index, entry_key)?;
    for column in &index.columns {
        key::decode_datum(&mut rest, column.order()).map_err(|e| malformed(entry_key, e))?;
    }
    Ok(entry_key.len() - rest.len())
}

/// The row an entry stands for, as far as the entry knows it: indexed, primary-key and INCLUDE
/// columns are filled in, every other column is NULL. Also returns the encoded primary key.
pub fn decode_entry(
    table: &TableDef,
    index: &IndexDef,
    entry_key: &[u8],
    entry_value: &[u8],
) -> Result<(Vec<Datum>, Vec<u8>)> {
    let mut out = vec![Datum::Null; table.columns.len()];
    let mut rest = header_stripped(index, entry_key)?;
    for column in &index.columns {
        out[column.column] =
            key::decode_datum(&mut rest, column.order()).map_err(|e| malformed(entry_key, e))?;
    }
    let pk = rest.to_vec();
    let pk_values =
        key::decode_key(rest, &table.key_orders(), true).map_err(|e| malformed(entry_key, e))?;
    for (column, value) in table.key.iter().zip(pk_values) {
        out[column.column] = value;
    }
    let cells = row::decode_row(entry_value).map_err(|e| malformed(entry_key, e))?;
    for (id, datum) in cells.cells {
        if let Some(position) = table.columns.iter().position(|c| c.id == id) {
            out[position] = datum;
        }
    }
    Ok((out, pk))
}

fn header_stripped<'a>(index: &IndexDef, entry_key: &'a [u8]) -> Result<&'a [u8]> {
    entry_key
        .get(index.header_len()..)
        .ok_or_else(|| IndexError::NotAnEntry {
            key: entry_key.to_vec(),
        })
}

fn malformed(key: &[u8], source: rowdex_codec::CodecError) -> IndexError {
    IndexError::MalformedEntry {
        key: key.to_vec(),
        source,
    }
}
