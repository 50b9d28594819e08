//! Reading older row versions of a table with `VERSIONS = n`: the table functions
//! `as_of(t, time)` (every row as it stood at that time) and `versions(t [, n])` (up to n kept
//! versions of every row, newest first, with their write times).
//!
//! A row's older versions live under the history prefix, `pk ‖ time DESC`, next to no other
//! table: a read merges the current rows (a scan in primary-key order, salted buckets merged)
//! with the history entries (already in primary-key order, each row's versions newest first),
//! one primary key at a time. An empty history value marks a deletion. Conditions on the
//! primary key narrow both reads to their key ranges; secondary indexes hold the current rows
//! only and are not used. DataFusion applies every condition to the versions chosen.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{
    Session as DfSession, TableFunctionArgs, TableFunctionImpl, TableProvider,
};
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown, TableType};
use datafusion::physical_expr::LexOrdering;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::{PartitionStream, StreamingTableExec};
use futures::stream::{self, Peekable, StreamExt, TryStreamExt};
use rowdex_catalog::TableDef;
use rowdex_codec::Datum;
use rowdex_planner::budget::MEMORY_BUDGET_BYTES;
use rowdex_planner::{Direction, Predicate, ScanPlan, plan_scan};
use rowdex_store::{KeyRange, KvRead, scan_stream};

use crate::db::DbState;
use crate::db::txn::scan_view;
use crate::df::filters::{pushdown, translate};
use crate::error::{Error, Result};
use crate::scan::read::{EntryStream, RowStream, scan_rows};
use crate::values::{rows_to_batch, table_schema};

/// Rows per batch of a history read.
const BATCH_ROWS: usize = 1024;

/// Which versions of each row a read returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pick {
    /// The version current at this time (microseconds since the epoch), if the row existed.
    AsOf(i64),
    /// The newest n versions still kept, deletions skipped.
    Newest(usize),
}

/// `as_of(table, time)`.
#[derive(Debug)]
pub(crate) struct AsOfFunction {
    pub(crate) db: Arc<DbState>,
}

/// `versions(table [, n])`.
#[derive(Debug)]
pub(crate) struct VersionsFunction {
    pub(crate) db: Arc<DbState>,
}

impl TableFunctionImpl for AsOfFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> DfResult<Arc<dyn TableProvider>> {
        let [table, time] = args.exprs() else {
            return Err(bad_call(
                "as_of takes a table and a time: as_of(t, TIMESTAMP '...')",
            ));
        };
        let def = versioned_table(&self.db, table)?;
        let at = time_argument(time)?;
        history_table(&self.db, def, Pick::AsOf(at), false)
    }
}

impl TableFunctionImpl for VersionsFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> DfResult<Arc<dyn TableProvider>> {
        let (table, count) = match args.exprs() {
            [table] => (table, None),
            [table, count] => (table, Some(count)),
            _ => {
                return Err(bad_call(
                    "versions takes a table and an optional count: versions(t [, n])",
                ));
            }
        };
        let def = versioned_table(&self.db, table)?;
        let n = match count {
            None => def.versions as usize,
            Some(Expr::Literal(ScalarValue::Int64(Some(n)), _)) if *n >= 1 => *n as usize,
            Some(other) => {
                return Err(bad_call(&format!(
                    "the version count of versions(t, n) must be a positive integer, got {other}"
                )));
            }
        };
        history_table(&self.db, def, Pick::Newest(n), true)
    }
}

fn bad_call(what: &str) -> DataFusionError {
    DataFusionError::External(Box::new(Error::BadHistoryRead {
        what: what.to_string(),
    }))
}

/// The table a history read names (a string or a bare name), which must keep versions.
fn versioned_table(db: &DbState, table: &Expr) -> DfResult<Arc<TableDef>> {
    let name = match table {
        Expr::Literal(ScalarValue::Utf8(Some(name)), _) => name.clone(),
        Expr::Column(column) => column.name.clone(),
        other => {
            return Err(bad_call(&format!(
                "the first argument names a table ('t' or t), got {other}"
            )));
        }
    };
    let def = db
        .table_def(&name)
        .map_err(|e| DataFusionError::External(Box::new(e)))?;
    if !def.keeps_history() {
        return Err(DataFusionError::External(Box::new(Error::NoVersions {
            table: def.name.clone(),
        })));
    }
    Ok(def)
}

/// A time argument: a TIMESTAMP, a string that reads as one, or microseconds since the epoch.
fn time_argument(time: &Expr) -> DfResult<i64> {
    let micros = match time {
        Expr::Literal(value, _) => scalar_micros(value),
        Expr::Cast(cast) => match cast.expr.as_ref() {
            Expr::Literal(value, _) => scalar_micros(value),
            _ => None,
        },
        _ => None,
    };
    micros.ok_or_else(|| {
        bad_call(&format!(
            "the time of as_of(t, time) must be a TIMESTAMP literal, a string such as \
             '2024-01-31 12:00:00', or microseconds since the epoch, got {time}"
        ))
    })
}

fn scalar_micros(value: &ScalarValue) -> Option<i64> {
    match value {
        ScalarValue::Utf8(Some(text)) | ScalarValue::LargeUtf8(Some(text)) => {
            rowdex_codec::parse_timestamp(text)
        }
        ScalarValue::Int64(Some(micros)) | ScalarValue::TimestampMicrosecond(Some(micros), _) => {
            Some(*micros)
        }
        ScalarValue::TimestampNanosecond(Some(nanos), _) => Some(nanos.div_euclid(1000)),
        ScalarValue::TimestampMillisecond(Some(millis), _) => millis.checked_mul(1000),
        ScalarValue::TimestampSecond(Some(seconds), _) => seconds.checked_mul(1_000_000),
        _ => None,
    }
}

/// A provider over the versions `pick` selects; `with_time` adds the write-time column.
fn history_table(
    db: &Arc<DbState>,
    def: Arc<TableDef>,
    pick: Pick,
    with_time: bool,
) -> DfResult<Arc<dyn TableProvider>> {
    let columns: Vec<usize> = def
        .columns
        .iter()
        .enumerate()
        .filter(|(i, c)| !c.hidden || (with_time && Some(*i) == def.written_at_column()))
        .map(|(i, _)| i)
        .collect();
    let schema = table_schema(&def, &columns);
    Ok(Arc::new(HistoryTable {
        db: db.clone(),
        def,
        pick,
        columns,
        schema,
    }))
}

/// `as_of(t, time)` or `versions(t)` as a table. Conditions on the primary key narrow the rows
/// and the history read to their key ranges (a version never changes its key); every condition
/// is still applied by DataFusion to the versions chosen, since the current row's other values
/// say nothing about an older version's.
#[derive(Debug)]
struct HistoryTable {
    db: Arc<DbState>,
    def: Arc<TableDef>,
    pick: Pick,
    columns: Vec<usize>,
    schema: SchemaRef,
}

#[async_trait]
impl TableProvider for HistoryTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DfResult<Vec<TableProviderFilterPushDown>> {
        Ok(pushdown(
            &self.def,
            filters,
            TableProviderFilterPushDown::Inexact,
        ))
    }

    async fn scan(
        &self,
        _state: &dyn DfSession,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        _limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let predicates: Vec<Predicate> = filters
            .iter()
            .filter_map(|f| translate(&self.def, f))
            .flatten()
            .collect();
        let mut plan = plan_scan(self.def.clone(), predicates, Direction::Forward, 0, None);
        // Only the key ranges count: the other conditions hold for the current row, not
        // necessarily for the version chosen.
        plan.residual.clear();
        let partition = HistoryPartition {
            db: self.db.clone(),
            plan: Arc::new(plan),
            pick: self.pick,
            columns: self.columns.clone(),
            schema: self.schema.clone(),
        };
        Ok(Arc::new(StreamingTableExec::try_new(
            self.schema.clone(),
            vec![Arc::new(partition)],
            projection,
            Vec::<LexOrdering>::new(),
            false,
            None,
        )?))
    }
}

#[derive(Debug)]
struct HistoryPartition {
    db: Arc<DbState>,
    /// The key ranges to read (no residual conditions).
    plan: Arc<ScanPlan>,
    pick: Pick,
    /// Table column positions behind the schema's fields.
    columns: Vec<usize>,
    schema: SchemaRef,
}

impl PartitionStream for HistoryPartition {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, context: Arc<TaskContext>) -> SendableRecordBatchStream {
        let snapshot = scan_view(context.session_config(), self.db.store.as_ref());
        let def = self.plan.table.clone();
        // Versions written at or before the cutoff have expired (TTL), whatever the time read.
        let cutoff = self.db.expiry_cutoff(&def);
        let rows = versions(self.plan.clone(), snapshot, self.pick, cutoff);
        let (schema, columns) = (self.schema.clone(), self.columns.clone());
        let batches = rows
            .try_chunks(BATCH_ROWS)
            .map_err(|e| e.1)
            .and_then(move |chunk| {
                futures::future::ready(rows_to_batch(&def, &schema, &columns, &chunk))
            })
            .map_err(|e| DataFusionError::External(Box::new(e)));
        Box::pin(RecordBatchStreamAdapter::new(self.schema.clone(), batches))
    }
}

/// One stored version of a row: its write time, and the row (None: deleted then).
type Version = (i64, Option<Vec<Datum>>);

struct Merge {
    def: Arc<TableDef>,
    current: Peekable<RowStream>,
    history: Peekable<EntryStream>,
    pick: Pick,
    cutoff: Option<i64>,
}

/// The rows `pick` selects within the plan's key ranges, in primary-key order.
fn versions(
    plan: Arc<ScanPlan>,
    snapshot: Arc<dyn KvRead>,
    pick: Pick,
    cutoff: Option<i64>,
) -> RowStream {
    let def = plan.table.clone();
    let history_ranges = history_ranges(&plan);
    // A history scan reads by key, never through an intersection: no buffer to budget.
    let current = scan_rows(plan, snapshot.clone(), None, MEMORY_BUDGET_BYTES).peekable();
    let history = stream::iter(history_ranges)
        .map(move |range| {
            scan_stream(
                snapshot.clone(),
                range,
                rowdex_store::Direction::Forward,
                BATCH_ROWS,
            )
            .map_err(Error::from)
        })
        .flatten()
        .boxed()
        .peekable();
    let merge = Merge {
        def,
        current,
        history,
        pick,
        cutoff,
    };
    stream::try_unfold(merge, |mut merge| async move {
        loop {
            let Some(versions) = merge.next_key().await? else {
                return Ok(None);
            };
            let rows = merge.select(versions);
            if !rows.is_empty() {
                return Ok::<_, Error>(Some((stream::iter(rows.into_iter().map(Ok)), merge)));
            }
        }
    })
    .try_flatten()
    .boxed()
}

/// The history key ranges of the plan's primary keys, in ascending order: history keys are
/// `history prefix ‖ pk ‖ time`, unsalted, so the plan's primary-key ranges apply under the
/// history prefix as they stand.
fn history_ranges(plan: &ScanPlan) -> Vec<KeyRange> {
    let def = &plan.table;
    let mut ranges = match plan.point_keys() {
        Some(row_keys) => row_keys
            .iter()
            .map(|key| KeyRange::prefix(&def.history_prefix_of(def.pk_bytes(key))))
            .collect(),
        None => plan.key_ranges(&def.history_prefix()),
    };
    ranges.sort_by(|a, b| a.start.cmp(&b.start));
    ranges
}

impl Merge {
    /// Every stored version of the next primary key, newest first; None at the end.
    async fn next_key(&mut self) -> Result<Option<Vec<Version>>> {
        let current_pk = match std::pin::Pin::new(&mut self.current).peek().await {
            Some(Ok(row)) => Some(self.def.pk_bytes(&self.def.row_key_of(row)).to_vec()),
            Some(Err(_)) => return self.current.next().await.transpose().map(|_| None),
            None => None,
        };
        let history_pk = match std::pin::Pin::new(&mut self.history).peek().await {
            Some(Ok((key, _))) => Some(self.def.split_history_key(key)?.0.to_vec()),
            Some(Err(_)) => return self.history.next().await.transpose().map(|_| None),
            None => None,
        };
        let pk = match (&current_pk, history_pk) {
            (None, None) => return Ok(None),
            (Some(c), None) => c.clone(),
            (None, Some(h)) => h,
            (Some(c), Some(h)) => c.clone().min(h),
        };
        let mut out: Vec<Version> = Vec::new();
        if current_pk.as_ref() == Some(&pk)
            && let Some(row) = self.current.next().await.transpose()?
        {
            let written = self.written_at(&row);
            out.push((written, Some(row)));
        }
        while let Some(Ok((key, _))) = std::pin::Pin::new(&mut self.history).peek().await {
            // Split once: the pk says whether the entry is still this row's, the time is the
            // version's.
            let (entry_pk, at) = self.def.split_history_key(key)?;
            if entry_pk != pk.as_slice() {
                break;
            }
            let Some((_, value)) = self.history.next().await.transpose()? else {
                break;
            };
            let row = if value.is_empty() {
                None
            } else {
                Some(self.def.decode_row(&self.def.row_key(&pk), &value)?)
            };
            out.push((at, row));
        }
        Ok(Some(out))
    }

    fn written_at(&self, row: &[Datum]) -> i64 {
        match self.def.written_at_column().map(|c| &row[c]) {
            Some(Datum::Timestamp(at)) => *at,
            _ => 0,
        }
    }

    /// What `pick` keeps of one primary key's versions (newest first).
    fn select(&self, versions: Vec<Version>) -> Vec<Vec<Datum>> {
        let live = |at: i64| self.cutoff.is_none_or(|cutoff| at > cutoff);
        match self.pick {
            Pick::AsOf(time) => versions
                .into_iter()
                .find(|(at, _)| *at <= time)
                .and_then(|(at, row)| row.filter(|_| live(at)))
                .into_iter()
                .collect(),
            Pick::Newest(n) => versions
                .into_iter()
                .filter_map(|(at, row)| row.filter(|_| live(at)))
                .take(n)
                .collect(),
        }
    }
}

/// Registers `as_of` and `versions` in a session.
pub(crate) fn register_history_functions(
    ctx: &datafusion::prelude::SessionContext,
    db: &Arc<DbState>,
) {
    ctx.register_udtf("as_of", Arc::new(AsOfFunction { db: db.clone() }));
    ctx.register_udtf("versions", Arc::new(VersionsFunction { db: db.clone() }));
}
