//! The DataFusion side of a rowdex table: a `TableProvider` per table, and a `SchemaProvider`
//! that resolves table names against the live catalog, so a table created in one session is
//! visible to every other at once.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{SchemaProvider, Session, TableProvider};
use datafusion::common::Statistics;
use datafusion::common::stats::Precision;
use datafusion::datasource::sink::DataSinkExec;
use datafusion::datasource::{TableType, ViewTable};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;
use rowdex_catalog::TableDef;
use rowdex_planner::cost::dive_cap;
use rowdex_planner::{
    Count, Direction, IndexHint, ScanPlan, ScanRequest, candidates, choose, plan_scan,
};
use rowdex_store::KeyRange;

use crate::Result;
use crate::database::DbInner;
use crate::filters::{pushdown, translate};
use crate::hints::QueryHints;
use crate::scan_exec::RowdexScanExec;
use crate::sink::RowdexSink;
use crate::stats::dives;
use crate::types::table_schema;

#[derive(Debug)]
pub struct RowdexTable {
    def: Arc<TableDef>,
    db: Arc<DbInner>,
    /// Table column positions behind each schema field.
    columns: Vec<usize>,
    schema: SchemaRef,
}

impl RowdexTable {
    /// `with_hidden` also exposes the hidden row id (used by UPDATE and DELETE to find rows).
    pub fn new(def: Arc<TableDef>, db: Arc<DbInner>, with_hidden: bool) -> Self {
        let columns: Vec<usize> = def
            .columns
            .iter()
            .enumerate()
            .filter(|(_, c)| with_hidden || !c.hidden)
            .map(|(i, _)| i)
            .collect();
        let schema = table_schema(&def, &columns);
        RowdexTable {
            def,
            db,
            columns,
            schema,
        }
    }
}

#[async_trait]
impl TableProvider for RowdexTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    /// The row count as an estimate: counted once per database (up to
    /// `stats::COUNT_CAP` rows, beyond which it is a lower bound) and kept up to date by writes.
    fn statistics(&self) -> Option<Statistics> {
        let rows = self.db.stats.known_rows(&self.def)?;
        let rows = usize::try_from(rows).ok()?;
        Some(Statistics::new_unknown(&self.schema).with_num_rows(Precision::Inexact(rows)))
    }

    /// INSERT INTO planned by any DataFusion context: the rows are written like rowdex's own
    /// INSERT (indexes maintained, all or nothing, an existing key is an error).
    async fn insert_into(
        &self,
        _state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        insert_op: InsertOp,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        if insert_op != InsertOp::Append {
            return Err(DataFusionError::NotImplemented(format!(
                "{insert_op} into rowdex table {}",
                self.def.name
            )));
        }
        if self.columns.iter().any(|&c| self.def.columns[c].hidden) {
            return Err(DataFusionError::Plan(format!(
                "table {} exposes its hidden row id and cannot take inserts",
                self.def.name
            )));
        }
        let sink = RowdexSink {
            db: self.db.clone(),
            table: self.def.name.clone(),
            columns: self.columns.clone(),
            schema: self.schema.clone(),
        };
        Ok(Arc::new(DataSinkExec::new(input, Arc::new(sink), None)))
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DfResult<Vec<TableProviderFilterPushDown>> {
        Ok(pushdown(
            &self.def,
            filters,
            TableProviderFilterPushDown::Exact,
        ))
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let mut predicates = Vec::new();
        for filter in filters {
            // DataFusion only passes filters we reported Exact; a filter we cannot translate
            // here would be silently dropped, so refuse instead.
            let translated = translate(&self.def, filter).ok_or_else(|| {
                DataFusionError::Internal(format!(
                    "filter {filter} was pushed but is not supported"
                ))
            })?;
            predicates.extend(translated);
        }
        let projected: Vec<usize> = match projection {
            Some(indices) => indices
                .iter()
                .filter_map(|i| self.columns.get(*i).copied())
                .collect(),
            None => self.columns.clone(),
        };
        let schema = match projection {
            Some(indices) => Arc::new(self.schema.project(indices)?),
            None => self.schema.clone(),
        };
        let request = ScanRequest {
            table: self.def.clone(),
            predicates,
            direction: Direction::Forward,
            offset: 0,
            limit,
            needed: Some(projected.clone()),
            hint: state
                .config()
                .get_extension::<QueryHints>()
                .map_or(IndexHint::Auto, |hints| hints.for_table(&self.def.name)),
        };
        let predicates = request.predicates.clone();
        let replannable = request.hint == IndexHint::Auto;
        let plan = choose_plan(&self.db, request).await?;
        Ok(Arc::new(RowdexScanExec::new(
            plan,
            predicates,
            replannable,
            projected,
            schema,
            self.db.store.clone(),
            self.db.expiry_cutoff(&self.def),
        )))
    }
}

/// The cheapest candidate plan for a scan: when there is a choice, each candidate's key ranges
/// are counted first (up to a cap, from one snapshot) and the cost model compares them.
pub(crate) async fn choose_plan(db: &DbInner, request: ScanRequest) -> Result<ScanPlan> {
    let plans = candidates(&request);
    choose_among(db, &request, plans).await
}

/// The cheapest of `plans` (candidates for `request`), by their counted key ranges.
pub(crate) async fn choose_among(
    db: &DbInner,
    request: &ScanRequest,
    mut plans: Vec<ScanPlan>,
) -> Result<ScanPlan> {
    // Callers never pass an empty list; the primary-key plan stands in if one did.
    let pk_plan = || {
        plan_scan(
            request.table.clone(),
            request.predicates.clone(),
            request.direction,
            request.offset,
            request.limit,
        )
    };
    if plans.len() <= 1 {
        return Ok(plans.pop().unwrap_or_else(pk_plan));
    }
    let snapshot = db.store.snapshot();
    let table_rows = db.stats.rows(&request.table, snapshot.as_ref()).await?;
    // Plans share ranges (an index's range is both a single-index plan and an intersection
    // input): each distinct one is counted once.
    let mut distinct: Vec<Vec<KeyRange>> = Vec::new();
    let mut position: HashMap<Vec<KeyRange>, usize> = HashMap::new();
    let plan_probes: Vec<Vec<usize>> = plans
        .iter()
        .map(|plan| {
            plan.probes()
                .into_iter()
                .map(|probe| {
                    *position.entry(probe.clone()).or_insert_with(|| {
                        distinct.push(probe);
                        distinct.len() - 1
                    })
                })
                .collect()
        })
        .collect();
    let counted = dives(snapshot.as_ref(), &distinct, dive_cap(table_rows)).await?;
    let counts: Vec<Vec<Count>> = plan_probes
        .iter()
        .map(|probes| probes.iter().map(|&i| counted[i]).collect())
        .collect();
    let costs = db.store.capabilities().costs;
    Ok(choose(plans, &counts, table_rows, costs).unwrap_or_else(pk_plan))
}

/// Resolves names in the default schema to rowdex tables.
#[derive(Debug)]
pub struct RowdexSchema {
    db: Arc<DbInner>,
    /// A table whose hidden row id is exposed (the target of an UPDATE or DELETE).
    expose_hidden: Option<String>,
}

impl RowdexSchema {
    pub fn new(db: Arc<DbInner>, expose_hidden: Option<String>) -> Self {
        RowdexSchema { db, expose_hidden }
    }
}

#[async_trait]
impl SchemaProvider for RowdexSchema {
    fn table_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .db
            .catalog
            .tables()
            .iter()
            .map(|t| t.name.clone())
            .collect();
        names.extend(self.db.catalog.view_names());
        names
    }

    async fn table(&self, name: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        if let Some(def) = self.db.catalog.table(name) {
            let with_hidden = self.expose_hidden.as_deref() == Some(name);
            return Ok(Some(Arc::new(RowdexTable::new(
                def,
                self.db.clone(),
                with_hidden,
            ))));
        }
        let Some(sql) = self.db.catalog.view(name) else {
            return Ok(None);
        };
        // A view is planned afresh each time it is named, in a context of its own.
        let ctx = crate::database::new_context(&self.db, None);
        let plan = crate::execute::plan_view_query(&ctx, &sql).await?;
        Ok(Some(Arc::new(ViewTable::new(plan, Some(sql)))))
    }

    fn table_exist(&self, name: &str) -> bool {
        self.db.catalog.table(name).is_some() || self.db.catalog.view(name).is_some()
    }
}
