//! The store's floor: each case's best plan written by hand against the `KvRead` API of the
//! same fjall store, with no SQL, no planner and no Arrow. It reads exactly the entries the best
//! plan reads (the index range, then the rows by sorted multi-gets, or the table in key order)
//! and decodes only the cells its answer needs, so what rowdex spends above it is rowdex's own
//! work, and what the floor spends beyond SQLite's whole time is the store's.

use std::collections::BinaryHeap;

use rowdex::Database;
use rowdex_catalog::keyspace::{index_prefix, table_prefix};
use rowdex_catalog::{IndexDef, TableDef};
use rowdex_codec::key::{decode_key, encode_datum};
use rowdex_codec::row::{CellValue, cells};
use rowdex_codec::{Datum, SortOrder};
use rowdex_store::{Direction, KeyRange, KvRead};

/// The bench's result (`main` has the same alias; this file imports nothing from it).
type BenchResult<T> = Result<T, Box<dyn std::error::Error>>;

/// Entries per page and keys per multi-get, as rowdex's own scans use.
const PAGE: usize = 1024;

/// What the floor needs of table `t`: its definition and the ids of the cells it decodes.
pub struct Layout {
    table: TableDef,
    b: u32,
    c: u32,
    d: u32,
    v: u32,
    pad: u32,
}

impl Layout {
    pub fn of(db: &Database) -> BenchResult<Layout> {
        let table = db
            .table_defs()
            .into_iter()
            .find(|t| t.name == "t")
            .ok_or("table t is missing")?;
        let id = |name: &str| -> BenchResult<u32> {
            Ok(table
                .columns
                .iter()
                .find(|c| c.name == name)
                .ok_or_else(|| format!("column {name} is missing"))?
                .id)
        };
        Ok(Layout {
            b: id("b")?,
            c: id("c")?,
            d: id("d")?,
            v: id("v")?,
            pad: id("pad")?,
            table: (*table).clone(),
        })
    }

    fn index(&self, name: &str) -> BenchResult<&IndexDef> {
        Ok(self
            .table
            .indexes
            .iter()
            .find(|i| i.name == name)
            .ok_or_else(|| format!("index {name} is missing"))?)
    }
}

/// The cases with a floor: every case but the forced intersection.
pub const HAS_FLOOR: [&str; 5] = ["eq", "covering_range", "order_limit", "dense_limit", "topk"];

/// The answer of case `name` (formatted as the other variants print theirs), or `None` for a
/// case without a floor (the forced intersection).
pub async fn answer(
    reader: &dyn KvRead,
    layout: &Layout,
    name: &str,
) -> BenchResult<Option<String>> {
    Ok(Some(match name {
        "eq" => {
            let rows = index_rows(reader, layout, "ia", 7).await?;
            let mut max_pad: Option<String> = None;
            for (_, value) in &rows {
                if let Some(CellValue::Text(pad)) = cell(value, layout.pad)?
                    && max_pad.as_deref().is_none_or(|m| pad > m)
                {
                    max_pad = Some(pad.to_string());
                }
            }
            format!(
                "{},{}",
                rows.len(),
                max_pad.unwrap_or_else(|| "NULL".into())
            )
        }
        "covering_range" => {
            let rows = index_rows(reader, layout, "ia", 5).await?;
            let mut max_b: Option<i64> = None;
            for (_, value) in &rows {
                if let Some(CellValue::Int(b)) = cell(value, layout.b)?
                    && b >= 0
                {
                    max_b = max_b.max(Some(b));
                }
            }
            max_b.map_or_else(|| "NULL".into(), |b| b.to_string())
        }
        "order_limit" => {
            let rows = index_rows(reader, layout, "isx", 5).await?;
            let mut best = BinaryHeap::new();
            for (id, value) in &rows {
                let b = match cell(value, layout.b)? {
                    Some(CellValue::Int(b)) => b,
                    _ => continue,
                };
                let pad = match cell(value, layout.pad)? {
                    Some(CellValue::Text(pad)) => pad.to_string(),
                    _ => "NULL".into(),
                };
                best.push((b, *id, pad));
                if best.len() > 10 {
                    best.pop();
                }
            }
            let lines: Vec<String> = best
                .into_sorted_vec()
                .into_iter()
                .map(|(_, id, pad)| format!("{id},{pad}"))
                .collect();
            lines.join(";")
        }
        "dense_limit" => {
            let mut first = None;
            walk_table(reader, layout, &mut |id, value| {
                let c = cell(value, layout.c)?;
                let d = cell(value, layout.d)?;
                if matches!(c, Some(CellValue::Int(1))) && matches!(d, Some(CellValue::Int(2))) {
                    first = Some(id);
                    return Ok(false);
                }
                Ok(true)
            })
            .await?;
            first.map_or_else(String::new, |id| id.to_string())
        }
        "topk" => {
            let mut best = BinaryHeap::new();
            walk_table(reader, layout, &mut |id, value| {
                if let Some(CellValue::Int(v)) = cell(value, layout.v)? {
                    if best.len() < 10 {
                        best.push((v, id));
                    } else if best.peek().is_some_and(|top| (v, id) < *top) {
                        best.pop();
                        best.push((v, id));
                    }
                }
                Ok(true)
            })
            .await?;
            let lines: Vec<String> = best
                .into_sorted_vec()
                .into_iter()
                .map(|(v, id)| format!("{id},{v}"))
                .collect();
            lines.join(";")
        }
        _ => return Ok(None),
    }))
}

/// The rows (id, stored value) whose `index` entry has the leading value `value`: the index
/// range read by pages, then the rows by sorted multi-gets, as rowdex's index scan reads them.
async fn index_rows(
    reader: &dyn KvRead,
    layout: &Layout,
    index: &str,
    value: i64,
) -> BenchResult<Vec<(i64, Vec<u8>)>> {
    let mut prefix = index_prefix(layout.index(index)?.id);
    encode_datum(&mut prefix, &Datum::Int(value), SortOrder::Asc);
    let mut pks: Vec<Vec<u8>> = Vec::new();
    let mut range = Some(KeyRange::prefix(&prefix));
    while let Some(page) = range {
        let skip = prefix.len();
        range = reader
            .visit_page(&page, Direction::Forward, PAGE, &mut |key, _| {
                pks.push(key[skip..].to_vec());
            })
            .await?;
    }
    let table = table_prefix(layout.table.id);
    let mut rows = Vec::with_capacity(pks.len());
    for chunk in pks.chunks(PAGE) {
        let keys: Vec<Vec<u8>> = chunk.iter().map(|pk| [&table[..], pk].concat()).collect();
        let values = reader.multi_get(&keys).await?;
        for (pk, value) in chunk.iter().zip(values) {
            let value = value.ok_or("an index entry without its row")?;
            rows.push((id_of(pk)?, value));
        }
    }
    Ok(rows)
}

/// Every row of `t` in key order, handed to `visit` as (id, stored value) until it returns
/// false.
async fn walk_table(
    reader: &dyn KvRead,
    layout: &Layout,
    visit: &mut (dyn FnMut(i64, &[u8]) -> BenchResult<bool> + Send),
) -> BenchResult<()> {
    let prefix = table_prefix(layout.table.id);
    let mut range = Some(KeyRange::prefix(&prefix));
    let mut failed: Option<String> = None;
    let mut go_on = true;
    // Pages grow from 64 entries, so that a walk that stops at once reads little.
    let mut limit = 64;
    while let Some(page) = range.take() {
        range = reader
            .visit_page(&page, Direction::Forward, limit, &mut |key, value| {
                if !go_on || failed.is_some() {
                    return;
                }
                match id_of(&key[prefix.len()..]).and_then(|id| visit(id, value)) {
                    Ok(more) => go_on = more,
                    Err(e) => failed = Some(e.to_string()),
                }
            })
            .await?;
        if let Some(failed) = failed {
            return Err(failed.into());
        }
        if !go_on {
            break;
        }
        limit = (limit * 2).min(PAGE);
    }
    Ok(())
}

fn id_of(pk: &[u8]) -> BenchResult<i64> {
    match decode_key(pk, &[SortOrder::Asc], true)?.first() {
        Some(Datum::Int(id)) => Ok(*id),
        other => Err(format!("unexpected primary key {other:?}").into()),
    }
}

/// The cell of column `id` in a stored row value.
fn cell(value: &[u8], id: u32) -> BenchResult<Option<CellValue<'_>>> {
    let (_, row_cells) = cells(value)?;
    for entry in row_cells {
        let (cell_id, cell) = entry?;
        if cell_id == id {
            return Ok(Some(cell));
        }
    }
    Ok(None)
}
