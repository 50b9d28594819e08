//! EXPLAIN of a query the native executor runs: its access path (and the sort after it),
//! with VERBOSE the candidates weighed, with ANALYZE what running it read.

use std::sync::Arc;
use std::time::Instant;

use rowdex_store::metered::{ReadMeter, metered};

use crate::db::DbState;
use crate::db::txn::{SessionTxn, read_view};
use crate::error::Result;
use crate::native::compile::{NativeQuery, Shape};
use crate::native::sort::distinct_neighbours;
use crate::scan::choose::weighed;
use crate::scan::count::count_entries;
use crate::scan::explain::{ExplainOptions, actual_line, candidate_lines, total_line};
use crate::sql::hints::QueryHints;

/// The EXPLAIN lines of `query` run natively (None: DataFusion runs it): the plan, then with
/// `verbose` the candidates weighed, with `analyze` what running it read.
pub(crate) async fn explain(
    db: &DbState,
    txn: Option<&Arc<SessionTxn>>,
    query: &NativeQuery,
    hints: &QueryHints,
    options: ExplainOptions,
) -> Result<Option<Vec<String>>> {
    let Some(bound) = query.bind(&[]) else {
        return Ok(None);
    };
    let verbose_line = |path: String| match options.verbose {
        true => {
            let shape = match &query.shape {
                Shape::Rows => "projection",
                Shape::Distinct => "distinct",
                Shape::Aggregate(_) => "aggregate",
            };
            format!("NativeExec: {path} {shape}=[{}]", query.names.join(", "))
        }
        false => path,
    };
    if bound.unsatisfiable {
        let path = format!("EMPTY {} (a comparison with NULL)", query.table.name);
        return Ok(Some(vec![verbose_line(path)]));
    }
    let hint = hints.for_table(&query.table.name);
    // EXPLAIN shows the estimates: planned afresh, never a kept choice.
    let Some(plan) = query.plan_fresh(db, &bound, hint.clone()).await?.0 else {
        return Ok(None);
    };
    let mut path = plan.describe(&query.table);
    if let Shape::Aggregate(aggregates) = &query.shape
        && query.counted_rows(aggregates, &plan).is_some()
    {
        path.push_str(" counting entries");
    }
    let mut lines = vec![verbose_line(path)];
    if options.verbose {
        let weighed = weighed(db, &query.request(&bound, hint)).await?;
        lines.extend(candidate_lines(&plan.scan, &weighed));
    }
    if options.analyze {
        let meter = Arc::new(ReadMeter::default());
        let started = Instant::now();
        let reader = metered(read_view(db, txn), meter.clone());
        // The rows the path yields, as for a query that answers with them: an aggregate's or
        // DISTINCT's answer is computed from these.
        let (rows, answered) = match &query.shape {
            Shape::Rows => {
                let output = query.execute(reader, plan).await?;
                (output.map_or(0, |output| output.row_count()), None)
            }
            Shape::Aggregate(aggregates) => match query.counted_rows(aggregates, &plan) {
                Some(ranges) => {
                    let counted = count_entries(reader, ranges).await?;
                    (usize::try_from(counted).unwrap_or(usize::MAX), Some(1))
                }
                None => (query.rows(reader, plan).await?.len(), Some(1)),
            },
            Shape::Distinct => {
                let rows = query.rows(reader, plan).await?;
                let read = rows.len();
                (read, Some(distinct_neighbours(rows, &query.columns).len()))
            }
        };
        let elapsed = started.elapsed();
        lines.push(actual_line(rows as u64, meter.counts(), Some(elapsed)));
        // The statement's own rows, as DataFusion's ANALYZE gives them below its scans.
        if let Some(answered) = answered {
            lines.push(total_line(answered, elapsed));
        }
    }
    Ok(Some(lines))
}
