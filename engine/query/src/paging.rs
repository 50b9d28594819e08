//! Cursor paging: a query's result one page at a time, each page resuming the scan right after
//! the last key the previous page returned, so page k costs what page 1 does (no OFFSET) and
//! rows written meanwhile never shift a page.
//!
//! The cursor is an opaque token: the query's fingerprint (its text, its table's id and schema
//! version), the path it reads (the table's key or one index) and its direction, and the
//! position, an encoded primary key or index entry key. The next page re-plans the query
//! pinned to that path and cuts its key ranges at the position.

use std::sync::Arc;

use datafusion::sql::sqlparser::ast::Statement;
use futures::TryStreamExt;
use rowdex_codec::Datum;
use rowdex_indexer::layout;
use rowdex_planner::{AccessPath, Direction, IndexHint};

use crate::db::statement_report::metered_view;
use crate::db::txn::read_view;
use crate::error::{Error, Result};
use crate::native::compile::{NativeQuery, Shape};
use crate::scan::columnar::BatchDecoder;
use crate::scan::read::{offset_limit, row_entries, scan_rows};
use crate::session::Session;
use crate::sql::parse::{ParsedStatement, split_statements};
use crate::values::rows_to_batch;

/// One page of a result.
#[derive(Debug)]
pub struct Page {
    pub schema: datafusion::arrow::datatypes::SchemaRef,
    pub batches: Vec<datafusion::arrow::record_batch::RecordBatch>,
    /// The cursor of the next page; None after the last one. A full page always has one (the
    /// page after it may be empty), so no key is read twice.
    pub next: Option<String>,
}

impl Page {
    pub fn row_count(&self) -> usize {
        self.batches.iter().map(|b| b.num_rows()).sum()
    }
}

const CURSOR_VERSION: u8 = 1;

/// What a cursor says.
#[derive(Debug, PartialEq)]
struct Cursor {
    fingerprint: u64,
    /// None: the table's key; Some(id): that index.
    index: Option<u32>,
    direction: Direction,
    after: Vec<u8>,
}

impl Cursor {
    fn encode(&self) -> String {
        let mut bytes = vec![CURSOR_VERSION];
        bytes.extend_from_slice(&self.fingerprint.to_be_bytes());
        match self.index {
            None => bytes.push(0),
            Some(id) => {
                bytes.push(1);
                bytes.extend_from_slice(&id.to_be_bytes());
            }
        }
        bytes.push(u8::from(self.direction == Direction::Reverse));
        bytes.extend_from_slice(&self.after);
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn decode(token: &str) -> Option<Cursor> {
        if !token.len().is_multiple_of(2) || !token.is_ascii() {
            return None;
        }
        let bytes: Vec<u8> = (0..token.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&token[i..i + 2], 16).ok())
            .collect::<Option<_>>()?;
        let (&version, rest) = bytes.split_first()?;
        if version != CURSOR_VERSION {
            return None;
        }
        let fingerprint = u64::from_be_bytes(rest.get(..8)?.try_into().ok()?);
        let rest = rest.get(8..)?;
        let (index, rest) = match rest.split_first()? {
            (0, rest) => (None, rest),
            (1, rest) => (
                Some(u32::from_be_bytes(rest.get(..4)?.try_into().ok()?)),
                rest.get(4..)?,
            ),
            _ => return None,
        };
        let (direction, after) = match rest.split_first()? {
            (0, after) => (Direction::Forward, after),
            (1, after) => (Direction::Reverse, after),
            _ => return None,
        };
        Some(Cursor {
            fingerprint,
            index,
            direction,
            after: after.to_vec(),
        })
    }
}

/// FNV-1a over the query text and the table's identity: a cursor only continues the query,
/// on the table definition, it was made for.
fn fingerprint(sql: &str, table_id: u32, schema_version: u32) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let bytes = sql
        .trim()
        .bytes()
        .chain(table_id.to_be_bytes())
        .chain(schema_version.to_be_bytes());
    for byte in bytes {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

fn not_pageable(why: &str) -> Error {
    Error::NotPageable {
        reason: why.to_string(),
    }
}

impl Session {
    /// Runs a SELECT one page at a time: at most `page_size` rows, after the position `cursor`
    /// (from the previous page's [`Page::next`]) when given. Each page resumes the scan right
    /// after the last key the previous one returned, so no key is read twice and rows written
    /// between pages never shift a page (unlike OFFSET). The query must read one table in the
    /// order of its key or of one index (no LIMIT or OFFSET of its own).
    pub async fn query_page(
        &self,
        sql: &str,
        page_size: usize,
        cursor: Option<&str>,
    ) -> Result<Page> {
        query_page(self, sql, page_size, cursor).await
    }
}

/// Runs `sql` for one page of at most `page_size` rows, after `cursor` when given.
async fn query_page(
    session: &Session,
    sql: &str,
    page_size: usize,
    cursor: Option<&str>,
) -> Result<Page> {
    if page_size == 0 {
        return Err(not_pageable("the page size must be at least 1"));
    }
    let mut statements = split_statements(sql)?;
    let (statement, hints) = match (statements.pop(), statements.is_empty()) {
        (
            Some(ParsedStatement::Sql {
                statement, hints, ..
            }),
            true,
        ) => (statement, hints),
        _ => return Err(not_pageable("only one SELECT can be paged")),
    };
    let Statement::Query(query) = *statement else {
        return Err(not_pageable("only a SELECT can be paged"));
    };
    if query.limit_clause.is_some() {
        return Err(not_pageable(
            "a paged query takes no LIMIT or OFFSET (the page size is its limit)",
        ));
    }
    let native = NativeQuery::compile(&session.schema_view(), &query)
        // Aggregates and DISTINCT answer with other rows than the ones read: not pageable.
        .filter(|native| native.shape == Shape::Rows)
        .ok_or_else(|| {
            not_pageable(
                "cursor paging reads one table by key or index: a SELECT of columns from one \
             table, with conditions on values, no aggregates or joins",
            )
        })?;
    let table = native.table.clone();
    let fingerprint = fingerprint(sql, table.id, table.schema_version);
    let cursor = match cursor {
        None => None,
        Some(token) => {
            let cursor = Cursor::decode(token).ok_or(Error::BadCursor)?;
            if cursor.fingerprint != fingerprint {
                return Err(Error::CursorMismatch);
            }
            Some(cursor)
        }
    };
    let Some(mut bound) = native.bind(&[]) else {
        return Err(not_pageable("the query has parameters"));
    };
    if bound.unsatisfiable {
        return Ok(Page {
            schema: native.schema(),
            batches: Vec::new(),
            next: None,
        });
    }
    // A full page has a next one, which may turn out empty: reading one row more to know
    // would read that key twice.
    bound.offset = 0;
    bound.limit = Some(page_size);
    // A continued page reads the path the first page read.
    let hint = match &cursor {
        None => hints.for_table(&table.name),
        Some(Cursor { index: None, .. }) => IndexHint::NoIndex,
        Some(Cursor {
            index: Some(id), ..
        }) => {
            let index = table
                .indexes
                .iter()
                .find(|i| i.id == *id)
                .ok_or(Error::CursorMismatch)?;
            IndexHint::Use(vec![index.name.clone()])
        }
    };
    let plan = native.plan(&session.db, &bound, hint).await?;
    let Some(plan) = plan.filter(|plan| plan.sort.is_none()) else {
        return Err(not_pageable(
            "the ORDER BY must follow the table's key or an index (or be left out)",
        ));
    };
    let (cutoff, plan_budget) = (plan.cutoff, plan.budget);
    let mut scan = plan.scan;
    let index = match &scan.path {
        AccessPath::IndexIntersection { .. } => {
            return Err(not_pageable(
                "an index intersection cannot be paged; hint one index (/*+ INDEX(t i) */)",
            ));
        }
        AccessPath::IndexUnion { .. } => {
            return Err(not_pageable(
                "an index union cannot be paged; hint the primary key (/*+ NO_INDEX */)",
            ));
        }
        AccessPath::IndexScan { input, .. } => table.indexes.get(input.index).cloned(),
        // Its position is no key of the table: its order merges several prefixes.
        AccessPath::RangeScan { .. } if scan.merged => {
            return Err(not_pageable(
                "a range scan merged across its key prefixes (an IN list before the ORDER BY \
                 columns) cannot be paged; order by the key",
            ));
        }
        _ => None,
    };
    if let Some(cursor) = &cursor {
        if cursor.index != index.as_ref().map(|i| i.id) || cursor.direction != scan.direction {
            return Err(Error::CursorMismatch);
        }
        scan.resume_after = Some(cursor.after.clone());
    }
    let direction = scan.direction;
    let txn = session.open_txn();
    if let Some(txn) = &txn {
        txn.query_start().await?;
    }
    let snapshot = metered_view(read_view(&session.db, txn.as_ref()));
    let schema = native.schema();
    let (batch, last) = match row_entries(&scan, snapshot.clone(), cutoff, plan_budget) {
        Some(entries) => {
            // Every entry is a result row: decode only the selected columns into the batch,
            // and the whole row of the last one, for the cursor.
            let entries: Vec<(Vec<u8>, Vec<u8>)> = offset_limit(entries, 0, Some(page_size))
                .try_collect()
                .await?;
            let decoder = BatchDecoder::new(table.clone(), &native.columns, schema.clone());
            let last = match entries.last() {
                Some((key, value)) if entries.len() == page_size => {
                    Some(table.decode_row(key, value)?)
                }
                _ => None,
            };
            (decoder.decode(&entries)?, last)
        }
        None => {
            let rows: Vec<Vec<Datum>> = offset_limit(
                scan_rows(Arc::new(scan), snapshot, cutoff, plan_budget),
                0,
                Some(page_size),
            )
            .try_collect()
            .await?;
            let batch = rows_to_batch(&table, &schema, &native.columns, &rows)?;
            let last = rows.into_iter().nth(page_size.saturating_sub(1));
            (batch, last)
        }
    };
    // A full page has a next one (possibly empty); a short page is the last.
    let next = last.map(|last| {
        let after = match &index {
            Some(index) => layout::entry_position(&table, index, &last),
            None => {
                let key: Vec<&Datum> = table.key.iter().map(|k| &last[k.column]).collect();
                table.encode_key_values(&key)
            }
        };
        Cursor {
            fingerprint,
            index: index.as_ref().map(|i| i.id),
            direction,
            after,
        }
        .encode()
    });
    Ok(Page {
        schema,
        batches: vec![batch],
        next,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_refuse_damage() {
        let cursor = Cursor {
            fingerprint: 0x0123_4567_89ab_cdef,
            index: Some(42),
            direction: Direction::Reverse,
            after: vec![0x20, 0x80, 0, 1],
        };
        let token = cursor.encode();
        assert_eq!(Cursor::decode(&token), Some(cursor));
        assert_eq!(Cursor::decode(&token[..token.len() - 1]), None);
        assert_eq!(Cursor::decode("zz"), None);
        assert_eq!(Cursor::decode(""), None);
        assert_eq!(Cursor::decode(&format!("02{}", &token[2..])), None);
    }
}
