//! Joining one chunk of driving rows with the rows its probes found: matching them on every
//! equality of the join (the probes' reads are only a superset: a key prefix, a residual left
//! to the probed side), applying the join's other conditions, and building the output rows in
//! the driving rows' order.

use std::collections::HashMap;

use datafusion::arrow::array::{Array, ArrayRef, BooleanArray, UInt32Array};
use datafusion::arrow::compute::take;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::common::JoinSide;
use datafusion::error::{DataFusionError, Result as DfResult};

use crate::df::lookup_join::spec::{Emit, LookupSpec};

/// The (driving row, probed row) pairs whose join keys are equal, in driving order (and probed
/// order within one driving row). A key with a NULL equals nothing.
pub(crate) fn matching_pairs(
    driving_keys: &[ArrayRef],
    probed_keys: &[ArrayRef],
) -> DfResult<(Vec<u32>, Vec<u32>)> {
    let fields = driving_keys
        .iter()
        .map(|array| SortField::new(array.data_type().clone()))
        .collect();
    let converter = RowConverter::new(fields)?;
    let driving = converter.convert_columns(driving_keys)?;
    let probed = converter.convert_columns(probed_keys)?;
    let has_null = |keys: &[ArrayRef], row: usize| keys.iter().any(|k| k.is_null(row));
    let mut by_key: HashMap<&[u8], Vec<u32>> = HashMap::new();
    for row in 0..probed.num_rows() {
        if !has_null(probed_keys, row) {
            by_key
                .entry(probed.row(row).data())
                .or_default()
                .push(row as u32);
        }
    }
    let (mut from_driving, mut from_probed) = (Vec::new(), Vec::new());
    for row in 0..driving.num_rows() {
        if has_null(driving_keys, row) {
            continue;
        }
        if let Some(matches) = by_key.get(driving.row(row).data()) {
            for &m in matches {
                from_driving.push(row as u32);
                from_probed.push(m);
            }
        }
    }
    Ok((from_driving, from_probed))
}

/// The output of one chunk: `driving` rows, the `probed` rows their probes found, and the
/// pairs that match on the keys.
pub(crate) fn join_chunk(
    spec: &LookupSpec,
    driving: &RecordBatch,
    probed: &RecordBatch,
    (from_driving, from_probed): (Vec<u32>, Vec<u32>),
) -> DfResult<RecordBatch> {
    let (from_driving, from_probed) = match &spec.filter {
        Some(_) => filtered(spec, driving, probed, from_driving, from_probed)?,
        None => (from_driving, from_probed),
    };
    let batch = match spec.emit {
        Emit::Pairs { outer } => {
            let (d, p) = if outer {
                with_unmatched(driving.num_rows(), &from_driving, &from_probed)
            } else {
                (
                    UInt32Array::from(from_driving),
                    UInt32Array::from(from_probed),
                )
            };
            let (left, right) = match spec.driving_side {
                JoinSide::Right => ((probed, &p), (driving, &d)),
                _ => ((driving, &d), (probed, &p)),
            };
            let mut columns = taken(left.0, left.1)?;
            columns.extend(taken(right.0, right.1)?);
            batch_of(&spec.join_schema, columns, d.len())?
        }
        Emit::Semi | Emit::Anti => {
            let mut matched = vec![false; driving.num_rows()];
            for &row in &from_driving {
                matched[row as usize] = true;
            }
            let keep = spec.emit == Emit::Semi;
            let rows: UInt32Array = (0..driving.num_rows() as u32)
                .filter(|&row| matched[row as usize] == keep)
                .collect();
            batch_of(&spec.join_schema, taken(driving, &rows)?, rows.len())?
        }
        Emit::ProbedSemi => {
            let mut rows = from_probed;
            rows.sort_unstable();
            rows.dedup();
            let rows = UInt32Array::from(rows);
            batch_of(&spec.join_schema, taken(probed, &rows)?, rows.len())?
        }
    };
    match &spec.projection {
        Some(projection) => Ok(batch.project(projection)?),
        None => Ok(batch),
    }
}

/// The pairs the join's other conditions (its `JoinFilter`) hold for.
fn filtered(
    spec: &LookupSpec,
    driving: &RecordBatch,
    probed: &RecordBatch,
    from_driving: Vec<u32>,
    from_probed: Vec<u32>,
) -> DfResult<(Vec<u32>, Vec<u32>)> {
    let Some(filter) = &spec.filter else {
        return Ok((from_driving, from_probed));
    };
    let d = UInt32Array::from(from_driving);
    let p = UInt32Array::from(from_probed);
    let columns = filter
        .column_indices()
        .iter()
        .map(|column| {
            let (batch, rows) = if column.side == spec.driving_side {
                (driving, &d)
            } else {
                (probed, &p)
            };
            Ok(take(batch.column(column.index).as_ref(), rows, None)?)
        })
        .collect::<DfResult<Vec<ArrayRef>>>()?;
    let intermediate = batch_of(filter.schema(), columns, d.len())?;
    let verdict = filter
        .expression()
        .evaluate(&intermediate)?
        .into_array(d.len())?;
    let verdict = verdict
        .as_any()
        .downcast_ref::<BooleanArray>()
        .ok_or_else(|| DataFusionError::Internal("a join filter that is not boolean".into()))?;
    let kept = (0..d.len()).filter(|&i| verdict.is_valid(i) && verdict.value(i));
    Ok(kept.map(|i| (d.value(i), p.value(i))).unzip())
}

/// Every driving row in order, with its matches, or once with no probed row (NULL) when it has
/// none.
fn with_unmatched(
    driving_rows: usize,
    from_driving: &[u32],
    from_probed: &[u32],
) -> (UInt32Array, UInt32Array) {
    let mut d = Vec::with_capacity(from_driving.len().max(driving_rows));
    let mut p: Vec<Option<u32>> = Vec::with_capacity(d.capacity());
    let mut next = 0;
    for row in 0..driving_rows as u32 {
        let start = next;
        while next < from_driving.len() && from_driving[next] == row {
            d.push(row);
            p.push(Some(from_probed[next]));
            next += 1;
        }
        if next == start {
            d.push(row);
            p.push(None);
        }
    }
    (UInt32Array::from(d), UInt32Array::from(p))
}

/// Every column of `batch`, at `rows` (a NULL row index gives NULLs).
fn taken(batch: &RecordBatch, rows: &UInt32Array) -> DfResult<Vec<ArrayRef>> {
    batch
        .columns()
        .iter()
        .map(|column| Ok(take(column.as_ref(), rows, None)?))
        .collect()
}

fn batch_of(schema: &SchemaRef, columns: Vec<ArrayRef>, rows: usize) -> DfResult<RecordBatch> {
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        columns,
        &options,
    )?)
}
