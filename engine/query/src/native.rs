//! The native executor: key-access queries on one table run straight from the parsed SQL to
//! the access-path planner and the row reader, without DataFusion's planning (which costs
//! hundreds of microseconds a query, a hundred times a point get).
//!
//! It takes what `compile` recognises, binds the values (literals or parameters), chooses the
//! access path with the same planner and cost model as the DataFusion scans, and reads. An
//! ORDER BY is read along a path that yields it when one does (or a LIMIT makes stopping early
//! worth a row lookup per entry); otherwise the rows are sorted after the scan. A value whose
//! comparison would need a cast leaves the query to DataFusion. The sql-tests run in both modes
//! to keep the answers the same.

pub(crate) mod aggregate;
pub(crate) mod bind;
pub(crate) mod cache;
pub(crate) mod choice;
pub(crate) mod compile;
pub(crate) mod constant_rows;
pub(crate) mod explain;
pub(crate) mod join;
pub(crate) mod kind;
pub(crate) mod order;
pub(crate) mod scalar;
pub(crate) mod scope;
pub(crate) mod select;
pub(crate) mod sort;
pub(crate) mod write;

use std::sync::{Arc, PoisonError};

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::sql::sqlparser::ast::Query;
use futures::TryStreamExt;
use rowdex_catalog::TableDef;
use rowdex_codec::Datum;
use rowdex_planner::budget::held_rows_max;
use rowdex_planner::{Direction, IndexHint, ScanPlan, ScanRequest, candidates, ordered_index_scan};
use rowdex_store::{KeyRange, KvRead};

use crate::db::DbState;
use crate::db::schema_view::SchemaView;
use crate::db::statement_report::{metered_view, note_scan};
use crate::db::txn::{SessionTxn, read_view};
use crate::error::Result;
use crate::native::aggregate::{Aggregate, AggregateKind, aggregate_batch, aggregate_row};
pub(crate) use crate::native::bind::{Bound, bind_conditions, bind_count};
use crate::native::choice::{Decision, PathShape, PlanChoice};
use crate::native::compile::{NativeQuery, Shape};
use crate::native::order::in_order;
use crate::native::sort::{SortAfter, distinct_neighbours};
use crate::output::Output;
use crate::scan::choose::{choose_among, estimate_plans, ordered_if_cheaper};
use crate::scan::columnar::{BatchDecoder, LentScan, lent_batches};
use crate::scan::count::{count_entries, counted_ranges};
use crate::scan::read::{lendable_ranges, offset_limit, row_entries, scan_rows};
use crate::sql::hints::QueryHints;
use crate::values::rows_to_batch;

/// Rows past which a sort after the scan is left to DataFusion: its sort is vectorized over the
/// projected columns (a top-k under a LIMIT) where the native one compares decoded rows, and
/// its planning costs less than sorting this many rows (`ORDER BY v LIMIT 10` over 1M rows:
/// 2.1 s native, 1.2 s in DataFusion; `cargo bench --bench scale`).
const NATIVE_SORT_ROWS_MAX: u64 = 10_000;

impl NativeQuery {
    /// Compiles `query` when the native executor can run it, against the tables as `schema`
    /// (a session's view of the catalog) has them.
    pub(crate) fn compile(schema: &SchemaView, query: &Query) -> Option<NativeQuery> {
        compile::compile(schema, query)
    }

    /// Whether the table this query was compiled against is still the table's definition as
    /// `schema` sees it.
    pub(crate) fn is_current(&self, schema: &SchemaView) -> bool {
        schema
            .table(&self.table.name)
            .is_some_and(|table| Arc::ptr_eq(&table, &self.table))
    }

    pub(crate) fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// Binds literals and parameters to the columns they are compared with. None when a value
    /// would need a conversion that changes what the comparison means (DataFusion casts the
    /// column instead), or a parameter is missing.
    pub(crate) fn bind(&self, params: &[Datum]) -> Option<Bound> {
        let mut bound = bind_conditions(&self.table, &self.conditions, params)?;
        bound.add_implied(&self.table, self.generation.as_deref());
        bound.limit = bind_count(self.limit.as_ref(), params)?;
        bound.offset = bind_count(self.offset.as_ref(), params)?.unwrap_or(0);
        Some(bound)
    }

    /// The scan request of the bound query: its conditions, the columns it reads (the ORDER
    /// BY's included), its OFFSET and LIMIT.
    pub(crate) fn request(&self, bound: &Bound, hint: IndexHint) -> ScanRequest {
        let mut needed = self.columns.clone();
        needed.extend(self.order.iter().map(|item| item.column));
        ScanRequest {
            table: self.table.clone(),
            predicates: bound.predicates.clone(),
            direction: Direction::Forward,
            offset: bound.offset,
            limit: bound.limit,
            needed: Some(needed),
            hint,
        }
    }

    /// How to read the rows: the cheapest plan, read in the query's order when a path gives
    /// it (always under a small LIMIT, so that the scan stops early), or sorted afterwards.
    /// `None` leaves the query to DataFusion: a sort of more rows than `NATIVE_SORT_ROWS_MAX`,
    /// or without a LIMIT over more than the memory budget holds (DataFusion's sort spills to
    /// disk past it).
    ///
    /// The choice is made once per generation of the table's statistics (and hint, OFFSET and
    /// LIMIT) and replayed on the candidates built from later values (`native::choice`): a
    /// prepared statement does not estimate or dive on every run.
    pub(crate) async fn plan(
        &self,
        db: &DbState,
        bound: &Bound,
        hint: IndexHint,
    ) -> Result<Option<NativePlan>> {
        let generation = db.stats.generation(self.table.id);
        let kept = self
            .choice
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .filter(|choice| {
                choice.generation == generation
                    && generation != 0
                    && choice.hint == hint
                    && choice.offset == bound.offset
                    && choice.limit == bound.limit
            });
        if let Some(choice) = kept
            && let Some(plan) = self.replay(db, bound, hint.clone(), &choice.decision)
        {
            return Ok(plan);
        }
        let (plan, decision) = self.plan_fresh(db, bound, hint.clone()).await?;
        db.planning.chose_access_path();
        // Planning loads the statistics the first time: the generation after it is the one
        // the choice was made under.
        *self.choice.lock().unwrap_or_else(PoisonError::into_inner) = Some(PlanChoice {
            generation: db.stats.generation(self.table.id),
            hint,
            offset: bound.offset,
            limit: bound.limit,
            decision,
        });
        Ok(plan)
    }

    /// The plan `decision` makes of this run's candidates; None when no candidate has its
    /// shape any more (then the query is planned afresh).
    fn replay(
        &self,
        db: &DbState,
        bound: &Bound,
        hint: IndexHint,
        decision: &Decision,
    ) -> Option<Option<NativePlan>> {
        let request = self.request(bound, hint);
        let unlimited = ScanRequest {
            offset: 0,
            limit: None,
            ..request.clone()
        };
        let (scan, sort) = match decision {
            Decision::DataFusion => return Some(None),
            Decision::Scan(shape) => (shape.find(candidates(&request))?, None),
            Decision::InOrder(shape) => {
                let plan = shape.find(self.ordered_candidates(&unlimited))?;
                (
                    bound.windowed(in_order(plan, &self.order, &bound.constants)?),
                    None,
                )
            }
            Decision::Sorted(shape) => {
                let sort = SortAfter::new(self.order.clone(), bound.offset, bound.limit);
                (shape.find(candidates(&unlimited))?, Some(sort))
            }
        };
        Some(Some(NativePlan {
            scan,
            sort,
            cutoff: db.expiry_cutoff(&self.table),
            budget: db.memory_budget(),
        }))
    }

    /// Plans afresh (see [`NativeQuery::plan`]): the plan, and the decision that replays it.
    pub(crate) async fn plan_fresh(
        &self,
        db: &DbState,
        bound: &Bound,
        hint: IndexHint,
    ) -> Result<(Option<NativePlan>, Decision)> {
        let (cutoff, budget) = (db.expiry_cutoff(&self.table), db.memory_budget());
        let made = |scan: ScanPlan, sort: Option<SortAfter>| {
            Some(NativePlan {
                scan,
                sort,
                cutoff,
                budget,
            })
        };
        let request = self.request(bound, hint);
        if self.order.is_empty() {
            let plans = candidates(&request);
            let scan = choose_among(db, &request, plans).await?;
            let decision = Decision::Scan(PathShape::of(&scan));
            return Ok((made(scan, None), decision));
        }
        // The best way to read every matching row, whatever its order.
        let unlimited = ScanRequest {
            offset: 0,
            limit: None,
            ..request.clone()
        };
        let best = choose_among(db, &unlimited, candidates(&unlimited)).await?;
        if let Some(scan) = in_order(best.clone(), &self.order, &bound.constants) {
            let scan = bound.windowed(scan);
            let decision = Decision::InOrder(PathShape::of(&scan));
            return Ok((made(scan, None), decision));
        }
        // Under a LIMIT, reading along an index in the query's order stops early: weigh that
        // (until enough rows match) against reading the best path whole and sorting.
        if let Some(wanted) = bound.limit.map(|limit| limit.saturating_add(bound.offset)) {
            let ordered: Vec<ScanPlan> = self
                .ordered_candidates(&unlimited)
                .into_iter()
                .filter_map(|plan| in_order(plan, &self.order, &bound.constants))
                .collect();
            if let Some(scan) = ordered_if_cheaper(db, &unlimited, &best, ordered, wanted).await? {
                let scan = bound.windowed(scan);
                let decision = Decision::InOrder(PathShape::of(&scan));
                return Ok((made(scan, None), decision));
            }
        }
        // A path chosen without a choice was not estimated: estimate it now (a key range of a
        // hundred rows is not the whole table); without figures, it may yield the whole table.
        let estimate = match &best.estimate {
            Some(estimate) => Some(estimate.rows),
            None => estimate_plans(db, &unlimited, vec![best.clone()])
                .await?
                .pop()
                .and_then(|plan| plan.estimate.map(|estimate| estimate.rows)),
        };
        let sorted = match estimate {
            Some(rows) => rows,
            None => db.stats.rows(db.store.as_ref(), &self.table).await?,
        };
        let past_budget = bound.limit.is_none()
            && sorted as f64 > held_rows_max(budget, self.table.columns.len());
        if sorted > NATIVE_SORT_ROWS_MAX || past_budget {
            return Ok((None, Decision::DataFusion));
        }
        let decision = Decision::Sorted(PathShape::of(&best));
        let sort = SortAfter::new(self.order.clone(), bound.offset, bound.limit);
        Ok((made(best, Some(sort)), decision))
    }

    /// The candidates for `request`, and an index scan along every index the hint allows (each
    /// yields its index's order).
    fn ordered_candidates(&self, request: &ScanRequest) -> Vec<ScanPlan> {
        let mut plans = candidates(request);
        // A range scan over several prefix tuples, read merged by the key after them.
        let merged: Vec<ScanPlan> = plans
            .iter()
            .filter_map(|plan| plan.clone().merged())
            .collect();
        plans.extend(merged);
        plans.extend(
            self.table
                .ready_indexes()
                .filter(|(_, index)| request.hint.allows(&index.name))
                .filter_map(|(position, _)| ordered_index_scan(request, position)),
        );
        plans
    }

    /// Reads the rows of `plan` from `snapshot` into the query's answer; None leaves the query
    /// to DataFusion (an aggregate whose exact value the native executor is not sure of).
    pub(crate) async fn execute(
        &self,
        snapshot: Arc<dyn KvRead>,
        plan: NativePlan,
    ) -> Result<Option<Output>> {
        let schema = self.schema();
        match &self.shape {
            Shape::Rows => {}
            Shape::Distinct => {
                let rows = distinct_neighbours(self.rows(snapshot, plan).await?, &self.columns);
                let batch = rows_to_batch(&self.table, &schema, &self.columns, &rows)?;
                return Ok(Some(Output::Rows {
                    schema,
                    batches: vec![batch],
                }));
            }
            Shape::Aggregate(aggregates) => {
                let values = match self.counted_rows(aggregates, &plan) {
                    // Every aggregate counts the rows, which the store counts in place.
                    Some(ranges) => {
                        let count = count_entries(snapshot, ranges).await?;
                        let count = Datum::Int(i64::try_from(count).unwrap_or(i64::MAX));
                        vec![count; aggregates.len()]
                    }
                    None => {
                        let rows = self.rows(snapshot, plan).await?;
                        let Some(values) = aggregate_row(aggregates, &rows) else {
                            return Ok(None);
                        };
                        values
                    }
                };
                let batch = aggregate_batch(&self.table, &schema, aggregates, values)?;
                return Ok(Some(Output::Rows {
                    schema,
                    batches: vec![batch],
                }));
            }
        }
        self.execute_rows(snapshot, plan).await.map(Some)
    }

    /// The key ranges to count when every aggregate counts the rows (`count(*)`, or `count(c)`
    /// of a column that is never NULL) and each entry of the ranges is one row `plan` selects
    /// (see [`counted_ranges`]).
    pub(crate) fn counted_rows(
        &self,
        aggregates: &[Aggregate],
        plan: &NativePlan,
    ) -> Option<Vec<KeyRange>> {
        let counts_rows = |aggregate: &Aggregate| match (aggregate.kind, aggregate.column) {
            (AggregateKind::CountRows, _) => true,
            (AggregateKind::Count, Some(column)) => {
                self.table.key_position(column).is_some()
                    || self.table.columns.get(column).is_some_and(|c| !c.nullable)
            }
            _ => false,
        };
        if plan.sort.is_some() || !aggregates.iter().all(counts_rows) {
            return None;
        }
        counted_ranges(&plan.scan, plan.cutoff.is_some())
    }

    /// [`NativeQuery::execute`] of a query that answers with the rows it reads.
    async fn execute_rows(&self, snapshot: Arc<dyn KvRead>, plan: NativePlan) -> Result<Output> {
        let schema = self.schema();
        let NativePlan {
            scan,
            sort,
            cutoff,
            budget,
        } = plan;
        let (offset, limit) = (scan.offset, scan.limit);
        if sort.is_none()
            && let Some(ranges) = lendable_ranges(&scan)
        {
            // Every entry is a result row, lent by the store: decode only the selected
            // columns, in place, into the batch.
            let decoder = BatchDecoder::new(self.table.clone(), &self.columns, schema.clone());
            let scan = LentScan {
                reader: snapshot,
                ranges,
                direction: scan.direction,
                cutoff,
                offset,
                limit,
            };
            let batches = lent_batches(scan, decoder, usize::MAX)
                .try_collect()
                .await?;
            return Ok(Output::Rows { schema, batches });
        }
        if sort.is_none()
            && let Some(entries) = row_entries(&scan, snapshot.clone(), cutoff, budget)
        {
            // Every entry is a result row: decode only the selected columns into the batch.
            let entries: Vec<(Vec<u8>, Vec<u8>)> =
                offset_limit(entries, offset, limit).try_collect().await?;
            let decoder = BatchDecoder::new(self.table.clone(), &self.columns, schema.clone());
            return Ok(Output::Rows {
                schema,
                batches: vec![decoder.decode(&entries)?],
            });
        }
        let rows: Vec<Vec<Datum>> = match sort {
            Some(sort) => {
                sort.collect(scan_rows(Arc::new(scan), snapshot, cutoff, budget))
                    .await?
            }
            None => {
                offset_limit(
                    scan_rows(Arc::new(scan), snapshot, cutoff, budget),
                    offset,
                    limit,
                )
                .try_collect()
                .await?
            }
        };
        let batch = rows_to_batch(&self.table, &schema, &self.columns, &rows)?;
        Ok(Output::Rows {
            schema,
            batches: vec![batch],
        })
    }

    /// Reads the rows of `plan` from `snapshot` as every column of the table (what a write
    /// that changes them starts from).
    pub(crate) async fn rows(
        &self,
        snapshot: Arc<dyn KvRead>,
        plan: NativePlan,
    ) -> Result<Vec<Vec<Datum>>> {
        let NativePlan {
            scan,
            sort,
            cutoff,
            budget,
        } = plan;
        let (offset, limit) = (scan.offset, scan.limit);
        let rows = scan_rows(Arc::new(scan), snapshot, cutoff, budget);
        match sort {
            Some(sort) => sort.collect(rows).await,
            None => offset_limit(rows, offset, limit).try_collect().await,
        }
    }

    /// The answer when no row can match: no rows, or the aggregates of none (`count(*)` 0).
    pub(crate) fn empty(&self) -> Result<Output> {
        let schema = self.schema();
        let batches = match &self.shape {
            Shape::Aggregate(aggregates) => {
                let values = aggregate_row(aggregates, &[]).unwrap_or_default();
                vec![aggregate_batch(&self.table, &schema, aggregates, values)?]
            }
            Shape::Rows | Shape::Distinct => Vec::new(),
        };
        Ok(Output::Rows { schema, batches })
    }
}

/// What the native executor runs: a scan, and a sort when no path yields the ORDER BY.
#[derive(Debug)]
pub(crate) struct NativePlan {
    pub(crate) scan: ScanPlan,
    pub(crate) sort: Option<SortAfter>,
    /// Where the table's rows expire for this statement (tables with a TTL).
    pub(crate) cutoff: Option<i64>,
    /// The database's memory budget when the plan was made.
    pub(crate) budget: usize,
}

impl NativePlan {
    /// The EXPLAIN text: the access path, and the sort after it.
    pub(crate) fn describe(&self, table: &TableDef) -> String {
        let mut text = self.scan.to_string();
        if let Some(sort) = &self.sort {
            text.push_str(&sort.describe(table));
        }
        text
    }
}

/// Runs `query` natively if it can be: Some(result), or None to leave it to DataFusion.
pub(crate) async fn run(
    db: &DbState,
    txn: Option<&Arc<SessionTxn>>,
    query: &NativeQuery,
    params: &[Datum],
    hints: &QueryHints,
) -> Result<Option<Output>> {
    let Some(bound) = query.bind(params) else {
        return Ok(None);
    };
    if bound.unsatisfiable {
        return query.empty().map(Some);
    }
    let hint = hints.for_table(&query.table.name);
    let Some(plan) = query.plan(db, &bound, hint).await? else {
        return Ok(None);
    };
    note_scan(&plan.scan);
    query.execute(metered_view(read_view(db, txn)), plan).await
}
