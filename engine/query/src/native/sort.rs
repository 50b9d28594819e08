//! The sort after a native scan, when no access path yields the ORDER BY: with a LIMIT it is
//! a top-k that holds at most twice `offset + limit` rows whatever the table's size; without
//! one every row is held (the planner leaves such a query to DataFusion, whose sort spills,
//! when its estimate is past the memory budget: see `NativeQuery::plan`).

use std::cmp::Ordering;

use futures::TryStreamExt;
use rowdex_catalog::TableDef;
use rowdex_codec::Datum;

use crate::error::Result;
use crate::native::compile::OrderItem;
use crate::scan::read::RowStream;

/// A sort of the scanned rows, with the OFFSET and LIMIT that count in its order.
#[derive(Debug)]
pub(crate) struct SortAfter {
    items: Vec<OrderItem>,
    pub(crate) offset: usize,
    pub(crate) limit: Option<usize>,
}

impl SortAfter {
    pub(crate) fn new(items: Vec<OrderItem>, offset: usize, limit: Option<usize>) -> SortAfter {
        SortAfter {
            items,
            offset,
            limit,
        }
    }

    /// Reads `rows` to the end and returns the rows in the wanted window of the sorted order.
    /// Sorts as SQL does with NULL the smallest value (first ascending, last descending); ties
    /// keep the scan's key order.
    pub(crate) async fn collect(&self, mut rows: RowStream) -> Result<Vec<Vec<Datum>>> {
        let keep = self.limit.map(|limit| limit.saturating_add(self.offset));
        let mut held: Vec<Vec<Datum>> = Vec::new();
        while let Some(row) = rows.try_next().await? {
            held.push(row);
            // A stable sort keeps arrival order among ties, and the rows kept come first.
            if let Some(keep) = keep
                && held.len() >= keep.saturating_mul(2).max(64)
            {
                held.sort_by(|a, b| self.compare(a, b));
                held.truncate(keep);
            }
        }
        held.sort_by(|a, b| self.compare(a, b));
        let rows = held.into_iter().skip(self.offset);
        Ok(match self.limit {
            Some(limit) => rows.take(limit).collect(),
            None => rows.collect(),
        })
    }

    fn compare(&self, a: &[Datum], b: &[Datum]) -> Ordering {
        for item in &self.items {
            let ordering = match (a.get(item.column), b.get(item.column)) {
                (Some(x), Some(y)) => x.key_cmp(y),
                _ => Ordering::Equal,
            };
            let ordering = if item.descending {
                ordering.reverse()
            } else {
                ordering
            };
            if ordering != Ordering::Equal {
                return ordering;
            }
        }
        Ordering::Equal
    }

    /// The EXPLAIN text after the access path.
    pub(crate) fn describe(&self, table: &TableDef) -> String {
        let items: Vec<String> = self
            .items
            .iter()
            .map(|item| {
                let name = table
                    .columns
                    .get(item.column)
                    .map_or("?", |c| c.name.as_str());
                if item.descending {
                    format!("{name} DESC")
                } else {
                    name.to_string()
                }
            })
            .collect();
        let mut text = format!(" then sorted by {}", items.join(", "));
        if self.offset > 0 {
            text.push_str(&format!(" offset={}", self.offset));
        }
        if let Some(limit) = self.limit {
            text.push_str(&format!(" limit={limit}"));
        }
        text
    }
}

/// `rows` without a row equal (on `columns`) to the one before it: SELECT DISTINCT over rows
/// sorted on every selected column, where equal rows are neighbours.
pub(crate) fn distinct_neighbours(rows: Vec<Vec<Datum>>, columns: &[usize]) -> Vec<Vec<Datum>> {
    let mut kept: Vec<Vec<Datum>> = Vec::with_capacity(rows.len());
    for row in rows {
        let repeated = kept.last().is_some_and(|last| {
            columns.iter().all(|c| {
                last.get(*c)
                    .zip(row.get(*c))
                    .is_some_and(|(a, b)| a.key_cmp(b).is_eq())
            })
        });
        if !repeated {
            kept.push(row);
        }
    }
    kept
}
