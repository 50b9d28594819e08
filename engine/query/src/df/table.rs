//! The DataFusion side of a rowdex table: its `TableProvider`. Scans push filters, projections
//! and limits down into the access-path planner; INSERT INTO writes through rowdex's insert
//! engine. (The schema provider that finds tables by name is in `context`.)

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session as DfSession, TableProvider};
use datafusion::common::Statistics;
use datafusion::common::stats::Precision;
use datafusion::datasource::TableType;
use datafusion::datasource::sink::DataSinkExec;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;
use rowdex_catalog::TableDef;
use rowdex_planner::{Direction, IndexHint, ScanRequest};

use crate::db::DbState;
use crate::df::filters::{pushdown, translate};
use crate::df::scan_exec::{JoinFacts, RowdexScanExec};
use crate::df::sink::RowdexSink;
use crate::scan::choose::{PlanningFacts, choose_plan};
use crate::sql::hints::QueryHints;
use crate::values::table_schema;
use crate::write::constraints::default_logical_expr;
use crate::write::generated::Generation;
use crate::write::implied::implied_conditions;

#[derive(Debug)]
pub struct RowdexTable {
    def: Arc<TableDef>,
    db: Arc<DbState>,
    /// Table column positions behind each schema field.
    columns: Vec<usize>,
    schema: SchemaRef,
    /// The DEFAULT of each column that has one, for the INSERTs DataFusion plans.
    defaults: HashMap<String, Expr>,
}

impl RowdexTable {
    /// `with_hidden` also exposes the hidden row id (used by UPDATE and DELETE to find rows).
    pub fn new(def: Arc<TableDef>, db: Arc<DbState>, with_hidden: bool) -> Self {
        let columns: Vec<usize> = def
            .columns
            .iter()
            .enumerate()
            .filter(|(_, c)| with_hidden || !c.hidden)
            .map(|(i, _)| i)
            .collect();
        let schema = table_schema(&def, &columns);
        // Each was compiled when it was declared; one that no longer compiles is left out
        // (the INSERT then writes NULL there, and the column's NOT NULL still holds).
        let defaults = def
            .columns
            .iter()
            .filter_map(|c| {
                Some((
                    c.name.clone(),
                    default_logical_expr(c.default.as_ref()?).ok()?,
                ))
            })
            .collect();
        RowdexTable {
            def,
            db,
            columns,
            schema,
            defaults,
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

    fn get_column_default(&self, column: &str) -> Option<&Expr> {
        self.defaults.get(column)
    }

    /// The row count as an estimate: counted once per database (up to
    /// `db::stats::COUNT_CAP` rows, beyond which it is a lower bound) and kept up to date by writes.
    fn statistics(&self) -> Option<Statistics> {
        let rows = self.db.stats.known_rows(&self.def)?;
        let rows = usize::try_from(rows).ok()?;
        Some(Statistics::new_unknown(&self.schema).with_num_rows(Precision::Inexact(rows)))
    }

    /// INSERT INTO planned by any DataFusion context: the rows are written like rowdex's own
    /// INSERT (indexes maintained, all or nothing, an existing key is an error).
    async fn insert_into(
        &self,
        _state: &dyn DfSession,
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
        state: &dyn DfSession,
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
        let generation = Generation::compile(&self.def).ok().flatten();
        let implied = implied_conditions(&self.def, generation.as_deref(), &predicates);
        predicates.extend(implied);
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
        let hints = state.config().get_extension::<QueryHints>();
        let request = ScanRequest {
            table: self.def.clone(),
            predicates,
            direction: Direction::Forward,
            offset: 0,
            limit,
            needed: Some(projected.clone()),
            hint: hints
                .as_deref()
                .map_or(IndexHint::Auto, |hints| hints.for_table(&self.def.name)),
        };
        let predicates = request.predicates.clone();
        let replannable = request.hint == IndexHint::Auto;
        let plan = choose_plan(&self.db, request).await?;
        let facts = PlanningFacts::load(&self.db, &self.def).await?;
        let join_facts = JoinFacts::of(&self.db, &self.def, hints.as_deref());
        Ok(Arc::new(
            RowdexScanExec::new(
                plan,
                predicates,
                replannable,
                projected,
                schema,
                self.db.store.clone(),
                self.db.expiry_cutoff(&self.def),
            )
            .with_planning_facts(facts)
            .with_join_facts(join_facts)
            .with_memory_budget(self.db.memory_budget()),
        ))
    }
}
