//! `RowdexScanExec`: the DataFusion execution plan node that reads one table through its
//! access path.
//!
//! It declares the key order it produces (so DataFusion drops a sort along the key), accepts a
//! sort request for the reverse order by flipping to a reverse scan, and accepts a LIMIT. A
//! large read by key ranges is split into partitions (`scan::partition`) that DataFusion runs
//! in parallel, all reading one snapshot. Its display is the access path, the same text as the
//! plain EXPLAIN.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{
    EquivalenceProperties, LexOrdering, PhysicalExpr, PhysicalSortExpr,
};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::expressions::Column;
use datafusion::physical_plan::limit::GlobalLimitExec;
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
    SortOrderPushdownResult,
};
use futures::{StreamExt, TryStreamExt};
use rowdex_planner::budget::MEMORY_BUDGET_BYTES;
use rowdex_planner::{
    AccessPath, Direction, IndexHint, KeySpan, Predicate, ScanPlan, ScanRequest, ordered_index_scan,
};
use rowdex_store::KvStore;
use rowdex_store::metered::metered;

mod join_facts;
mod ordering;
mod probe;

pub(crate) use join_facts::{JoinFacts, ReadEstimate};
use ordering::{key_constants, key_ordering};

use crate::db::statement_report::StatementReport;
use crate::db::txn::scan_view;
use crate::scan::choose::{ORDERED_LOOKUP_LIMIT, PlanningFacts};
use crate::scan::columnar::{BatchDecoder, LentScan, lent_batches};
use crate::scan::explain::{AnalyzeReads, ScanReads};
use crate::scan::partition::{SharedRead, partition_spans, scan_parallelism};
use crate::scan::read::{lendable_ranges, offset_limit, row_entries, scan_rows};
use crate::values::rows_to_batch;

pub struct RowdexScanExec {
    plan: Arc<ScanPlan>,
    /// Every predicate pushed into the scan, to re-plan it for a requested order.
    predicates: Arc<Vec<Predicate>>,
    /// Whether the path may be replaced by another one (not when a hint chose it).
    replannable: bool,
    /// An order promised to DataFusion before the LIMIT is known: a non-covering index scan
    /// that yields it. A small LIMIT (see `with_fetch`) switches the scan to it; otherwise the
    /// scan reads its own path and sorts the rows in that order (see `sorted`).
    pending_order: Option<Arc<ScanPlan>>,
    /// Table column positions, in output order.
    projection: Vec<usize>,
    schema: SchemaRef,
    store: Arc<dyn KvStore>,
    /// The table's expiry cutoff when the statement was planned (tables with a TTL).
    cutoff: Option<i64>,
    /// What weighs an ordered index against a sort once the LIMIT is known (None without
    /// gathered statistics: then a LIMIT of at most `ORDERED_LOOKUP_LIMIT` rows switches).
    facts: Option<Arc<PlanningFacts>>,
    /// Bytes an intersection of this scan may buffer (the database's memory budget).
    budget: usize,
    /// What the scan read and yielded, counted under EXPLAIN ANALYZE; shared with the scans
    /// made from this one (re-plans, the source of its own sort).
    reads: Arc<ScanReads>,
    /// The key spans of its partitions, in key order; empty when it is read whole.
    spans: Arc<Vec<KeySpan>>,
    /// The read view its partitions share.
    shared_read: Arc<SharedRead>,
    /// What a join above weighs a lookup into this scan's table by.
    join: Arc<JoinFacts>,
    properties: Arc<PlanProperties>,
}

impl fmt::Debug for RowdexScanExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RowdexScanExec")
            .field("plan", &self.plan.to_string())
            .finish_non_exhaustive()
    }
}

impl RowdexScanExec {
    /// A scan of `plan`; `cutoff` is where the table's rows expire for this statement (see
    /// `TableDef::expiry_cutoff`), None for a table without a TTL.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        plan: ScanPlan,
        predicates: Vec<Predicate>,
        replannable: bool,
        projection: Vec<usize>,
        schema: SchemaRef,
        store: Arc<dyn KvStore>,
        cutoff: Option<i64>,
    ) -> Self {
        Self::with_order(
            plan,
            None,
            predicates,
            replannable,
            projection,
            schema,
            (store, cutoff, None, MEMORY_BUDGET_BYTES),
        )
    }

    fn with_order(
        plan: ScanPlan,
        pending_order: Option<Arc<ScanPlan>>,
        predicates: Vec<Predicate>,
        replannable: bool,
        projection: Vec<usize>,
        schema: SchemaRef,
        (store, cutoff, facts, budget): ScanContext,
    ) -> Self {
        let ordered_by = pending_order.as_deref().unwrap_or(&plan);
        let ordering = key_ordering(ordered_by, &projection, &schema);
        let constants = key_constants(ordered_by, &projection, &schema);
        let mut equivalence = if ordering.is_empty() {
            EquivalenceProperties::new(schema.clone())
        } else {
            EquivalenceProperties::new_with_orderings(schema.clone(), [ordering])
        };
        // Constants only refine what DataFusion knows; failing to add them loses a sort
        // elimination, never correctness.
        let _ = equivalence.add_constants(constants);
        // A scan that sorts its rows itself reads its source whole.
        let spans = match pending_order {
            None => partition_spans(&plan, facts.as_deref(), scan_parallelism()),
            Some(_) => Vec::new(),
        };
        let properties = PlanProperties::new(
            equivalence,
            // Each partition yields its rows in key order.
            Partitioning::UnknownPartitioning(spans.len().max(1)),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        RowdexScanExec {
            plan: Arc::new(plan),
            predicates: Arc::new(predicates),
            replannable,
            pending_order,
            projection,
            schema,
            store,
            cutoff,
            facts,
            budget,
            reads: Arc::default(),
            spans: Arc::new(spans),
            shared_read: Arc::default(),
            join: Arc::default(),
            properties: Arc::new(properties),
        }
    }

    /// This scan read whole, in one partition.
    fn whole(mut self) -> Self {
        if !self.spans.is_empty() {
            self.spans = Arc::default();
            let properties = self
                .properties
                .as_ref()
                .clone()
                .with_partitioning(Partitioning::UnknownPartitioning(1));
            self.properties = Arc::new(properties);
        }
        self
    }

    pub fn plan(&self) -> &ScanPlan {
        &self.plan
    }

    /// The access path as EXPLAIN prints it, with the sort the scan does itself, if any.
    pub fn explain_text(&self) -> String {
        let mut text = self.plan.to_string();
        if let Some(order) = &self.pending_order
            && let AccessPath::IndexScan { input, .. } = &order.path
            && let Some(index) = order.table.indexes.get(input.index)
        {
            let reverse = if order.direction == Direction::Reverse {
                " reverse"
            } else {
                ""
            };
            text.push_str(&format!(" then sorted by index {}{reverse}", index.name));
        }
        if !self.spans.is_empty() {
            text.push_str(&format!(" in {} partitions", self.spans.len()));
        }
        text
    }

    fn with_plan(&self, plan: ScanPlan) -> Self {
        self.with_plans(plan, None)
    }

    fn with_plans(&self, plan: ScanPlan, pending_order: Option<Arc<ScanPlan>>) -> Self {
        let mut scan = RowdexScanExec::with_order(
            plan,
            pending_order,
            (*self.predicates).clone(),
            self.replannable,
            self.projection.clone(),
            self.schema.clone(),
            (
                self.store.clone(),
                self.cutoff,
                self.facts.clone(),
                self.budget,
            ),
        );
        scan.reads = self.reads.clone();
        scan.join = self.join.clone();
        scan
    }

    /// What the scan read and yielded when run under EXPLAIN ANALYZE.
    pub(crate) fn reads(&self) -> &ScanReads {
        &self.reads
    }

    /// The request this scan's path was chosen for (its conditions, columns, OFFSET and
    /// LIMIT), or None when a hint chose the path.
    pub(crate) fn request(&self) -> Option<ScanRequest> {
        self.replannable.then(|| ScanRequest {
            table: self.plan.table.clone(),
            predicates: (*self.predicates).clone(),
            direction: Direction::Forward,
            offset: self.plan.offset,
            limit: self.plan.limit,
            needed: Some(self.projection.clone()),
            hint: IndexHint::Auto,
        })
    }

    /// The rows of the scan's own path in the order promised for `order`'s index scan, by
    /// DataFusion's sort over the unordered scan: a top-k of `offset + limit` rows under a
    /// LIMIT, otherwise a full sort that spills to disk past the session's memory pool.
    /// OFFSET and LIMIT count in the promised order, so they apply after the sort.
    fn sorted(
        &self,
        order: &ScanPlan,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let mut unlimited = (*self.plan).clone();
        unlimited.offset = 0;
        unlimited.limit = None;
        let source = Arc::new(self.with_plans(unlimited, None).whole());
        let ordering = LexOrdering::new(key_ordering(order, &self.projection, &self.schema))
            .ok_or_else(|| {
                DataFusionError::Internal("a promised order without sort keys".into())
            })?;
        let fetch = self
            .plan
            .limit
            .map(|limit| limit.saturating_add(self.plan.offset));
        let sort = Arc::new(SortExec::new(ordering, source).with_fetch(fetch));
        GlobalLimitExec::new(sort, self.plan.offset, self.plan.limit).execute(0, context)
    }

    /// Lets the scan's intersections buffer at most `bytes` (the database's memory budget).
    pub(crate) fn with_memory_budget(mut self, bytes: usize) -> Self {
        self.budget = bytes;
        self
    }

    /// Lets the scan weigh an ordered index against a sort by these facts once DataFusion
    /// hands it a LIMIT.
    /// The partitions of a large scan are cut at the statistics' samples, so they are
    /// decided here.
    pub(crate) fn with_planning_facts(mut self, facts: Option<PlanningFacts>) -> Self {
        self.facts = facts.map(Arc::new);
        self.with_plans((*self.plan).clone(), self.pending_order.clone())
    }
}

/// The store, the expiry cutoff, the planning facts and the memory budget a scan carries into
/// its re-plans.
type ScanContext = (
    Arc<dyn KvStore>,
    Option<i64>,
    Option<Arc<PlanningFacts>>,
    usize,
);

impl DisplayAs for RowdexScanExec {
    fn fmt_as(&self, _format: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RowdexScan: {}", self.explain_text())?;
        let names: Vec<&str> = self
            .schema
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect();
        write!(f, " projection=[{}]", names.join(", "))
    }
}

impl ExecutionPlan for RowdexScanExec {
    fn name(&self) -> &str {
        "RowdexScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        Vec::new()
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        if let Some(order) = &self.pending_order {
            return self.sorted(order, context);
        }
        let plan = match self.spans.get(partition) {
            Some(span) => {
                let mut plan = (*self.plan).clone();
                plan.partition = Some(span.clone());
                Arc::new(plan)
            }
            None if partition == 0 => self.plan.clone(),
            None => {
                return Err(DataFusionError::Internal(format!(
                    "partition {partition} of a scan with {} partitions",
                    self.spans.len().max(1)
                )));
            }
        };
        let config = context.session_config();
        let batch_size = config.batch_size().max(1);
        // One view for the whole scan, so every page of every partition sees the same state:
        // the statement's snapshot (shared with its other scans), or inside a session
        // transaction the transaction (its snapshot with its own writes).
        let mut snapshot = self
            .shared_read
            .take(self.spans.len(), || scan_view(config, self.store.as_ref()));
        let analyzing = config.get_extension::<AnalyzeReads>().is_some();
        if analyzing {
            snapshot = metered(snapshot, self.reads.meter.clone());
        }
        if let Some(report) = config.get_extension::<StatementReport>() {
            report.note_scan(&plan);
            snapshot = report.meter(snapshot);
        }
        let decoder = || {
            BatchDecoder::new(
                self.plan.table.clone(),
                &self.projection,
                self.schema.clone(),
            )
        };
        let batches = if let Some(ranges) = lendable_ranges(&plan) {
            // Every entry is a result row, lent by the store: decode only the projected
            // columns, in place, straight into the batch's arrays.
            let scan = LentScan {
                reader: snapshot,
                ranges,
                direction: plan.direction,
                cutoff: self.cutoff,
                offset: plan.offset,
                limit: plan.limit,
            };
            lent_batches(scan, decoder(), batch_size)
                .map_err(DataFusionError::from)
                .boxed()
        } else if let Some(entries) = row_entries(&plan, snapshot.clone(), self.cutoff, self.budget)
        {
            // Every entry is a result row: decode only the projected columns, straight
            // into the batch's arrays.
            let decoder = decoder();
            offset_limit(entries, plan.offset, plan.limit)
                .try_chunks(batch_size)
                .map_err(|e| e.1)
                .and_then(move |chunk| futures::future::ready(decoder.decode(&chunk)))
                .map_err(DataFusionError::from)
                .boxed()
        } else {
            let rows = offset_limit(
                scan_rows(plan.clone(), snapshot, self.cutoff, self.budget),
                plan.offset,
                plan.limit,
            );
            let table = self.plan.table.clone();
            let schema = self.schema.clone();
            let projection = self.projection.clone();
            rows.try_chunks(batch_size)
                .map_err(|e| e.1)
                .and_then(move |chunk| {
                    let batch = rows_to_batch(&table, &schema, &projection, &chunk);
                    futures::future::ready(batch)
                })
                .map_err(DataFusionError::from)
                .boxed()
        };
        let batches = if analyzing {
            let reads = self.reads.clone();
            batches
                .inspect_ok(move |batch| reads.add_rows(batch.num_rows()))
                .boxed()
        } else {
            batches
        };
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema.clone(),
            batches,
        )))
    }

    fn with_fetch(&self, limit: Option<usize>) -> Option<Arc<dyn ExecutionPlan>> {
        let combine = |current: Option<usize>| match (current, limit) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let mut plan = (*self.plan).clone();
        plan.limit = combine(plan.limit);
        if let Some(order) = &self.pending_order {
            let wanted = plan.limit.map(|l| l + plan.offset);
            let switch = match (&self.facts, wanted) {
                (Some(facts), Some(wanted)) => facts.ordered_is_cheaper(&plan, order, wanted),
                (None, Some(wanted)) => wanted <= ORDERED_LOOKUP_LIMIT,
                (_, None) => false,
            };
            if switch {
                let mut ordered = (**order).clone();
                ordered.offset = plan.offset;
                ordered.limit = plan.limit;
                return Some(Arc::new(self.with_plan(ordered)));
            }
            return Some(Arc::new(self.with_plans(plan, Some(order.clone()))));
        }
        Some(Arc::new(self.with_plan(plan)))
    }

    fn fetch(&self) -> Option<usize> {
        self.plan.limit
    }

    fn try_pushdown_sort(
        &self,
        order: &[PhysicalSortExpr],
    ) -> DfResult<SortOrderPushdownResult<Arc<dyn ExecutionPlan>>> {
        if let Some(plan) = self.plan_in_order(&self.plan, order) {
            return Ok(SortOrderPushdownResult::Exact {
                inner: Arc::new(self.with_plan(plan)),
            });
        }
        // Another path may produce the order: a covering index on the ORDER BY columns reads
        // no more than the table and needs no sort.
        if let Some(request) = self.request() {
            let table = &self.plan.table;
            let ordered: Vec<ScanPlan> = table
                .ready_indexes()
                .filter_map(|(position, _)| ordered_index_scan(&request, position))
                .filter_map(|candidate| self.plan_in_order(&candidate, order))
                .collect();
            let covering =
                |p: &ScanPlan| matches!(p.path, AccessPath::IndexScan { covering: true, .. });
            // A covering index reads no row, but may read far more entries than a selective
            // path and its sort: with statistics, it must be the cheaper (a LIMIT that comes
            // later only makes it cheaper still).
            let worth = |p: &ScanPlan| match &self.facts {
                Some(facts) => facts.ordered_is_cheaper(&self.plan, p, usize::MAX),
                None => true,
            };
            if let Some(plan) = ordered.iter().find(|p| covering(p) && worth(p)) {
                return Ok(SortOrderPushdownResult::Exact {
                    inner: Arc::new(self.with_plan(plan.clone())),
                });
            }
            // A non-covering index pays a lookup per row: worth it only under a small LIMIT,
            // which DataFusion hands over later (`with_fetch`). Until then, promise the order
            // and keep the way to produce it without the index. Only a scan of the table is
            // replaced so: an index path chosen for its selectivity stays.
            let reads_table = matches!(
                self.plan.path,
                AccessPath::FullScan | AccessPath::RangeScan { .. }
            );
            if let Some(plan) = ordered.into_iter().next().filter(|_| reads_table) {
                return Ok(SortOrderPushdownResult::Exact {
                    inner: Arc::new(self.with_plans((*self.plan).clone(), Some(Arc::new(plan)))),
                });
            }
        }
        Ok(SortOrderPushdownResult::Unsupported)
    }
}

impl RowdexScanExec {
    /// `plan`, or `plan` run in reverse, if that yields rows in `order`.
    fn plan_in_order(&self, plan: &ScanPlan, order: &[PhysicalSortExpr]) -> Option<ScanPlan> {
        let current = key_ordering(plan, &self.projection, &self.schema);
        let matches = |reversed: bool| {
            !order.is_empty()
                && order.len() <= current.len()
                && order.iter().zip(&current).all(|(want, have)| {
                    let same_column = match (
                        want.expr.downcast_ref::<Column>(),
                        have.expr.downcast_ref::<Column>(),
                    ) {
                        (Some(a), Some(b)) => a.index() == b.index(),
                        _ => false,
                    };
                    // Keys put NULL lowest, in either direction: a NULLS placement other than
                    // that is a sort the scan cannot give, unless the column holds no NULL.
                    let nulls_lowest = want.options.nulls_first != want.options.descending;
                    let nullable = want
                        .expr
                        .downcast_ref::<Column>()
                        .and_then(|c| self.schema.fields().get(c.index()))
                        .is_none_or(|field| field.is_nullable());
                    same_column
                        && (nulls_lowest || !nullable)
                        && (want.options.descending != have.options.descending) == reversed
                })
        };
        if matches(false) {
            return Some(plan.clone());
        }
        // A limit counted from the other end cannot be reused when the direction flips, and an
        // intersection or a union only merges forward.
        let reversible = !matches!(
            plan.path,
            AccessPath::IndexIntersection { .. } | AccessPath::IndexUnion { .. }
        );
        if matches(true) && plan.limit.is_none() && reversible {
            let mut plan = plan.clone();
            plan.direction = match plan.direction {
                Direction::Forward => Direction::Reverse,
                Direction::Reverse => Direction::Forward,
            };
            return Some(plan);
        }
        None
    }
}
