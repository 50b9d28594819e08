//! Running a native join plan: the driving table's rows read whole, then for each probe the
//! values the rows so far hold collected, deduplicated and read as one plan of the probed
//! table (a multi-get, or a range per prefix: `LookupTemplate::plan`), its rows matched to the
//! joined rows by the encoded values of every join column, and every equality whose tables are
//! now joined checked. A joined row is the driving row's columns, then each probed row's, in
//! probe order (a semi joined table's first match; NULLs for an anti joined table, whose
//! matched rows are dropped). A semi joined table that drives has its rows made distinct on
//! the columns compared first. Past the memory budget the join gives up and DataFusion runs it.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use datafusion::arrow::array::ArrayRef;
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use futures::{StreamExt, TryStreamExt};
use rowdex_codec::key::encode_datum;
use rowdex_codec::{Datum, SortOrder};
use rowdex_planner::budget::held_rows_max;
use rowdex_store::KvRead;

use crate::error::Result;
use crate::native::join::plan::JoinPlan;
use crate::native::join::{ColumnRef, JoinedAs, NativeJoin};
use crate::output::Output;
use crate::scan::parallel::partitioned_rows;
use crate::scan::read::scan_rows;
use crate::values::{column_type, datum_array};

/// What running the probes did, for EXPLAIN ANALYZE: per probe, the distinct keys read and
/// the rows found.
#[derive(Debug, Default, Clone)]
pub(crate) struct ProbeCounts {
    pub keys: Vec<usize>,
    pub found: Vec<usize>,
}

impl NativeJoin {
    /// Runs `plan` on `snapshot`; None when the rows outgrow the memory budget (DataFusion
    /// runs the join then).
    pub(crate) async fn execute(
        &self,
        snapshot: Arc<dyn KvRead>,
        plan: JoinPlan,
        counts: &mut ProbeCounts,
    ) -> Result<Option<Output>> {
        let width: usize = self.tables.iter().map(|t| t.table.columns.len()).sum();
        let held_max = held_rows_max(plan.budget, width.max(1));
        // Where each table's columns start in a joined row.
        let mut base = vec![usize::MAX; self.tables.len()];
        base[plan.driving] = 0;
        let mut next_base = self.columns_of(plan.driving);
        let cutoff = |table: usize| plan.cutoffs.get(table).copied().flatten();
        // One row past the budget is enough to know it is past.
        let cap = (held_max as usize).saturating_add(1);
        let mut rows: Vec<Vec<Datum>> = partitioned_rows(
            &plan.scan,
            plan.spans,
            snapshot.clone(),
            cutoff(plan.driving),
            plan.budget,
        )
        .take(cap)
        .try_collect()
        .await?;
        if rows.len() as f64 > held_max {
            return Ok(None);
        }
        if self.tables.get(plan.driving).map(|t| t.kind) == Some(JoinedAs::Semi) {
            // Each row of the other tables must come once, whichever of the subquery's rows
            // it matches: keep one row per value of the columns they are compared with.
            let compared = self.compared_columns(plan.driving);
            let mut seen = HashSet::with_capacity(rows.len());
            rows.retain(|row| {
                encoded(compared.iter().map(|&c| row.get(c).unwrap_or(&Datum::Null)))
                    .is_some_and(|key| seen.insert(key))
            });
        }
        for probe in &plan.probes {
            base[probe.table] = next_base;
            next_base += self.columns_of(probe.table);
            let value_of = |row: &[Datum], source: &ColumnRef| -> Datum {
                row.get(base[source.table] + source.column)
                    .cloned()
                    .unwrap_or(Datum::Null)
            };
            // The probe values of each joined row (None: a NULL, which equals nothing).
            let wanted: Vec<Option<Vec<Datum>>> = rows
                .iter()
                .map(|row| {
                    let values: Vec<Datum> = probe
                        .keys
                        .iter()
                        .map(|(_, source)| value_of(row, source))
                        .collect();
                    (!values.iter().any(Datum::is_null)).then_some(values)
                })
                .collect();
            let probe_values = wanted.iter().flatten().map(Vec::as_slice);
            let found: Vec<Vec<Datum>> = match probe.template.plan(probe_values) {
                Some(scan) => {
                    counts.keys.push(match &scan.path {
                        rowdex_planner::AccessPath::MultiGet { keys } => keys.len(),
                        rowdex_planner::AccessPath::RangeScan { prefixes, .. } => prefixes.len(),
                        rowdex_planner::AccessPath::IndexScan { input, .. } => input.prefixes.len(),
                        _ => 1,
                    });
                    scan_rows(
                        Arc::new(scan),
                        snapshot.clone(),
                        cutoff(probe.table),
                        plan.budget,
                    )
                    .take(cap)
                    .try_collect()
                    .await?
                }
                None => {
                    counts.keys.push(0);
                    Vec::new()
                }
            };
            if found.len() as f64 > held_max {
                return Ok(None);
            }
            counts.found.push(found.len());
            let mut by_key: HashMap<Vec<u8>, Vec<usize>> = HashMap::with_capacity(found.len());
            for (at, row) in found.iter().enumerate() {
                let values: Vec<&Datum> = probe
                    .keys
                    .iter()
                    .map(|(column, _)| row.get(*column).unwrap_or(&Datum::Null))
                    .collect();
                if let Some(key) = encoded(values) {
                    by_key.entry(key).or_default().push(at);
                }
            }
            // The equalities this probe completes (a second one on a probed column was not
            // a key), tested on each pair before it counts as a match.
            let complete = |c: &ColumnRef| base[c.table] != usize::MAX;
            let checks: Vec<(usize, usize)> = self
                .equalities
                .iter()
                .filter(|(a, b)| a.table == probe.table || b.table == probe.table)
                .filter(|(a, b)| complete(a) && complete(b))
                .map(|(a, b)| (base[a.table] + a.column, base[b.table] + b.column))
                .collect();
            let kind = self
                .tables
                .get(probe.table)
                .map_or(JoinedAs::Inner, |t| t.kind);
            let mut joined = Vec::new();
            for (row, values) in rows.into_iter().zip(wanted) {
                let key = values.as_ref().and_then(|v| encoded(v.iter()));
                let before = joined.len();
                for at in key.and_then(|key| by_key.get(&key)).into_iter().flatten() {
                    let mut out = row.clone();
                    out.extend(found[*at].iter().cloned());
                    if checks.iter().all(|(a, b)| equal(&out, *a, *b)) {
                        joined.push(out);
                        if kind != JoinedAs::Inner && kind != JoinedAs::Left {
                            // A semi join keeps the row once; an anti join drops it.
                            break;
                        }
                    }
                }
                let matched = joined.len() > before;
                if kind == JoinedAs::Anti && matched {
                    joined.truncate(before);
                }
                if matches!(kind, JoinedAs::Left | JoinedAs::Anti) && !matched {
                    let mut out = row;
                    out.resize(next_base, Datum::Null);
                    joined.push(out);
                }
                if joined.len() as f64 > held_max {
                    return Ok(None);
                }
            }
            rows = joined;
        }
        if !self.order.is_empty() {
            let items: Vec<(usize, bool)> = self
                .order
                .iter()
                .map(|item| {
                    (
                        base[item.column.table] + item.column.column,
                        item.descending,
                    )
                })
                .collect();
            rows.sort_by(|a, b| {
                for (at, descending) in &items {
                    let ordering = match (a.get(*at), b.get(*at)) {
                        (Some(x), Some(y)) => x.key_cmp(y),
                        _ => std::cmp::Ordering::Equal,
                    };
                    let ordering = if *descending {
                        ordering.reverse()
                    } else {
                        ordering
                    };
                    if ordering.is_ne() {
                        return ordering;
                    }
                }
                std::cmp::Ordering::Equal
            });
        }
        let rows: Vec<Vec<Datum>> = match plan.limit {
            Some(limit) => rows.into_iter().skip(plan.offset).take(limit).collect(),
            None => rows.into_iter().skip(plan.offset).collect(),
        };
        let arrays: Vec<ArrayRef> = self
            .output
            .iter()
            .map(|c| {
                let at = base[c.table] + c.column;
                let data_type = column_type(&self.tables[c.table].table, c.column);
                datum_array(
                    &data_type,
                    rows.iter().map(|row| row.get(at).unwrap_or(&Datum::Null)),
                )
            })
            .collect();
        let options = RecordBatchOptions::new().with_row_count(Some(rows.len()));
        let batch = RecordBatch::try_new_with_options(self.schema.clone(), arrays, &options)?;
        Ok(Some(Output::Rows {
            schema: self.schema.clone(),
            batches: vec![batch],
        }))
    }

    /// The width of a table's rows (every column, as the reader yields them).
    fn columns_of(&self, table: usize) -> usize {
        self.tables.get(table).map_or(0, |t| t.table.columns.len())
    }
}

/// The encoded key of join values; None when one is NULL.
fn encoded<'a>(values: impl IntoIterator<Item = &'a Datum>) -> Option<Vec<u8>> {
    let mut key = Vec::new();
    for value in values {
        if value.is_null() {
            return None;
        }
        encode_datum(&mut key, value, SortOrder::Asc);
    }
    Some(key)
}

/// Whether the values at `a` and `b` of a joined row are equal (never when NULL).
fn equal(row: &[Datum], a: usize, b: usize) -> bool {
    match (row.get(a), row.get(b)) {
        (Some(x), Some(y)) => !x.is_null() && x.key_cmp(y).is_eq(),
        _ => false,
    }
}
