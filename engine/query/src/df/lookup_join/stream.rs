//! Running a lookup join: the driving rows are taken in chunks, each chunk's join values probe
//! the other table in one read (sorted, deduplicated keys: a multi-get, or a range per key),
//! and the rows found are joined to the chunk. Chunks start small and double up to
//! [`PROBE_BATCH_MAX`] rows, so a LIMIT above stops after few probes, and memory holds one
//! chunk and its matches, never a whole side.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use datafusion::arrow::array::ArrayRef;
use datafusion::arrow::compute::concat_batches;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_plan::collect;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use futures::StreamExt;
use rowdex_codec::Datum;

use crate::df::lookup_join::assemble::{join_chunk, matching_pairs};
use crate::df::lookup_join::spec::{Emit, LookupSpec};
use crate::values::key_datum;

/// The most driving rows one read of probes serves.
pub(crate) const PROBE_BATCH_MAX: usize = 4096;
/// The driving rows of the first read of probes.
const PROBE_BATCH_FIRST: usize = 64;

/// What a lookup join did, counted for EXPLAIN ANALYZE.
#[derive(Debug, Default)]
pub(crate) struct LookupCounts {
    /// Reads of the probed side (one per chunk with a probe).
    pub(crate) batches: AtomicU64,
    /// Distinct key values probed.
    pub(crate) probes: AtomicU64,
    /// Rows the probes found (before the join's other conditions).
    pub(crate) found: AtomicU64,
}

/// The joined rows of `driving`, at most `fetch` of them.
pub(crate) fn lookup_stream(
    spec: Arc<LookupSpec>,
    driving: SendableRecordBatchStream,
    context: Arc<TaskContext>,
    fetch: Option<usize>,
    counts: Arc<LookupCounts>,
    schema: datafusion::arrow::datatypes::SchemaRef,
) -> SendableRecordBatchStream {
    let state = LookupState {
        spec,
        driving,
        context,
        counts,
        pending: None,
        chunk: PROBE_BATCH_FIRST,
        left: fetch,
        probed_keys: HashSet::new(),
    };
    let batches = futures::stream::try_unfold(state, |mut state| async move {
        loop {
            if state.left == Some(0) {
                return Ok(None);
            }
            let batch = match state.pending.take() {
                Some(batch) => batch,
                None => match state.driving.next().await {
                    Some(batch) => batch?,
                    None => return Ok(None),
                },
            };
            let take = state.chunk.min(batch.num_rows());
            if take < batch.num_rows() {
                state.pending = Some(batch.slice(take, batch.num_rows() - take));
            }
            state.chunk = (state.chunk * 2).min(PROBE_BATCH_MAX);
            let mut joined = state.join(batch.slice(0, take)).await?;
            if joined.num_rows() == 0 {
                continue;
            }
            if let Some(left) = &mut state.left {
                if joined.num_rows() > *left {
                    joined = joined.slice(0, *left);
                }
                *left -= joined.num_rows();
            }
            return Ok(Some((joined, state)));
        }
    });
    Box::pin(RecordBatchStreamAdapter::new(schema, batches))
}

struct LookupState {
    spec: Arc<LookupSpec>,
    driving: SendableRecordBatchStream,
    context: Arc<TaskContext>,
    counts: Arc<LookupCounts>,
    /// The rest of a driving batch larger than a chunk.
    pending: Option<RecordBatch>,
    /// Driving rows the next chunk takes.
    chunk: usize,
    /// Rows still wanted under a LIMIT.
    left: Option<usize>,
    /// Keys already probed (a probed-side semi join emits each probed row once).
    probed_keys: HashSet<Vec<u8>>,
}

impl LookupState {
    async fn join(&mut self, driving: RecordBatch) -> DfResult<RecordBatch> {
        let spec = self.spec.clone();
        let rows = driving.num_rows();
        let keys = spec
            .driving_keys
            .iter()
            .map(|expr| expr.evaluate(&driving)?.into_array(rows))
            .collect::<DfResult<Vec<ArrayRef>>>()?;
        let fresh = match spec.emit {
            Emit::ProbedSemi => Some(self.unseen(&keys)?),
            _ => None,
        };
        let mut probes: Vec<Vec<Datum>> = Vec::with_capacity(rows);
        'rows: for row in 0..rows {
            if fresh.as_ref().is_some_and(|fresh| !fresh[row]) {
                continue;
            }
            let mut probe = Vec::with_capacity(keys.len());
            for (key, &column) in keys.iter().zip(&spec.join_columns) {
                match key_datum(&spec.lookup.table, column, key.as_ref(), row)
                    .map_err(|e| DataFusionError::External(Box::new(e)))?
                {
                    Some(value) => probe.push(value),
                    None => continue 'rows,
                }
            }
            probes.push(probe);
        }
        let probed_schema = spec.probed.schema();
        let found = match spec.lookup.plan(probes.iter().map(Vec::as_slice)) {
            Some(plan) => {
                self.counts.batches.fetch_add(1, Ordering::Relaxed);
                let batches = collect(spec.probed_with(plan)?, self.context.clone()).await?;
                concat_batches(&probed_schema, &batches)?
            }
            None => RecordBatch::new_empty(probed_schema),
        };
        self.counts
            .probes
            .fetch_add(probes.len() as u64, Ordering::Relaxed);
        self.counts
            .found
            .fetch_add(found.num_rows() as u64, Ordering::Relaxed);
        let probed_keys = spec
            .probed_keys
            .iter()
            .map(|&column| found.column(column).clone())
            .collect::<Vec<ArrayRef>>();
        let (mut from_driving, mut from_probed) = matching_pairs(&keys, &probed_keys)?;
        if let Some(fresh) = &fresh {
            // Only the rows that probed a key match: a read by a key prefix also returns the
            // rows of keys probed in an earlier chunk, which were emitted then.
            let keep: Vec<bool> = from_driving.iter().map(|&d| fresh[d as usize]).collect();
            let mut kept = keep.iter();
            from_driving.retain(|_| kept.next() == Some(&true));
            let mut kept = keep.iter();
            from_probed.retain(|_| kept.next() == Some(&true));
        }
        join_chunk(&spec, &driving, &found, (from_driving, from_probed))
    }

    /// Which rows of `keys` hold a key not probed before (the first row of each), remembering
    /// them.
    fn unseen(&mut self, keys: &[ArrayRef]) -> DfResult<Vec<bool>> {
        let fields = keys
            .iter()
            .map(|array| SortField::new(array.data_type().clone()))
            .collect();
        let rows = RowConverter::new(fields)?.convert_columns(keys)?;
        Ok((0..rows.num_rows())
            .map(|row| self.probed_keys.insert(rows.row(row).data().to_vec()))
            .collect())
    }
}
