//! rowdex inside DataFusion: the session context (rowdex's optimizer rules and query planner,
//! the catalog as its default schema, the history table functions), the schema provider that
//! resolves tables and views live, and how a statement is planned, run or explained there.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use datafusion::arrow::datatypes::{Field, Schema};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{CatalogProvider, MemoryCatalogProvider, SchemaProvider, TableProvider};
use datafusion::datasource::ViewTable;
use datafusion::error::Result as DfResult;
use datafusion::execution::memory_pool::FairSpillPool;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::execution::session_state::{SessionState, SessionStateBuilder};
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_plan::{ExecutionPlan, collect, displayable};
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::Statement;
use rowdex_planner::budget::DATAFUSION_POOL_BYTES;

use crate::db::DbState;
use crate::db::planning::PlanCounter;
use crate::db::schema_view::SchemaView;
use crate::db::statement_report::StatementReport;
use crate::db::txn::{SessionTxn, StatementSnapshot};
use crate::df::apply::exec::RowdexQueryPlanner;
use crate::df::history::register_history_functions;
use crate::df::lookup_join::LookupJoinExec;
use crate::df::postgres_types::postgres_result_types;
use crate::df::raise::register_raise;
use crate::df::rules::time_zones::{results_in_session_zone, set_session_zone};
use crate::df::rules::{OptimizerRules, logical_optimizer_rules};
use crate::df::scan_exec::RowdexScanExec;
use crate::df::table::RowdexTable;
use crate::error::{Error, Result};
use crate::functions::register_functions;
use crate::output::Output;
use crate::scan::choose::weighed;
use crate::scan::explain::{AnalyzeReads, ExplainOptions, candidate_lines, total_line};
use crate::sql::array_lists;
use crate::sql::array_literals;
use crate::sql::at_time_zone;
use crate::sql::bytea_literals;
use crate::sql::hints::QueryHints;
use crate::sql::interval_products;
use crate::sql::parse::{ParsedStatement, split_statements};
use crate::sql::rewrite;
use crate::sql::semantics::Semantics;
use crate::sql::sqlite_types;
use crate::sql::type_casts;
use crate::stack_depth::{self, DATAFUSION_STACK_BYTES, OnAmpleStack};
use crate::time_zone::TimeZone;
use crate::values::renamed_schema;

/// A DataFusion context whose default schema is the rowdex catalog, optimized by `rules`.
pub(crate) fn new_context(
    db: &Arc<DbState>,
    schema: SchemaView,
    rules: OptimizerRules,
    expose_hidden: Option<String>,
) -> SessionContext {
    stack_depth::protect_recursion();
    let mut config = SessionConfig::new()
        .with_default_catalog_and_schema("rowdex", "public")
        .with_information_schema(false)
        .with_target_partitions(1);
    // SQL as in SQLite: NULL is the smallest value, which is also how keys sort.
    config.options_mut().sql_parser.default_null_ordering = "nulls_min".to_string();
    // The session's time zone (`Session::set_time_zone`), UTC until set.
    set_session_zone(config.options_mut(), &TimeZone::utc());
    config.set_extension(db.planning.clone());
    // Sorts without a LIMIT that the scans leave to DataFusion spill past this pool; the
    // default runtime's pool is unbounded. Building it cannot fail with a fixed pool.
    let runtime = RuntimeEnvBuilder::new()
        .with_memory_pool(Arc::new(FairSpillPool::new(DATAFUSION_POOL_BYTES)))
        .build_arc()
        .unwrap_or_default();
    let state = SessionStateBuilder::new()
        .with_config(config)
        .with_runtime_env(runtime)
        .with_default_features()
        .with_query_planner(Arc::new(RowdexQueryPlanner))
        .with_optimizer_rules(rules.logical)
        .with_physical_optimizer_rules(rules.physical)
        .build();
    let ctx = SessionContext::new_with_state(state);
    let catalog = MemoryCatalogProvider::new();
    // Registering into a fresh in-memory catalog cannot fail.
    let _ = catalog.register_schema(
        "public",
        Arc::new(RowdexSchema {
            db: db.clone(),
            schema,
            expose_hidden,
        }),
    );
    ctx.register_catalog("rowdex", Arc::new(catalog));
    register_history_functions(&ctx, db);
    register_raise(&ctx);
    register_functions(&ctx);
    ctx
}

/// A context for a query over rows the statement holds (RETURNING's list, ON CONFLICT's SET
/// list): no catalog, but the functions, optimizer rules and time zone of a session's, so an
/// expression means there what it means in a query.
pub(crate) fn rows_context(zone: &TimeZone) -> Result<SessionContext> {
    let mut config = SessionConfig::new().with_target_partitions(1);
    config.options_mut().sql_parser.default_null_ordering = "nulls_min".to_string();
    set_session_zone(config.options_mut(), zone);
    let state = SessionStateBuilder::new()
        .with_config(config)
        .with_default_features()
        .with_optimizer_rules(logical_optimizer_rules()?)
        .build();
    let ctx = SessionContext::new_with_state(state);
    register_functions(&ctx);
    Ok(ctx)
}

/// Resolves names in the default schema to rowdex tables, as one session sees the catalog
/// (its uncommitted schema changes included), or as committed.
#[derive(Debug)]
pub struct RowdexSchema {
    db: Arc<DbState>,
    schema: SchemaView,
    /// A table whose hidden row id is exposed (the target of an UPDATE or DELETE).
    expose_hidden: Option<String>,
}

impl RowdexSchema {
    /// The committed catalog's tables and views.
    pub fn new(db: Arc<DbState>, expose_hidden: Option<String>) -> Self {
        RowdexSchema {
            schema: SchemaView::committed(db.clone()),
            db,
            expose_hidden,
        }
    }
}

#[async_trait]
impl SchemaProvider for RowdexSchema {
    fn table_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .schema
            .tables()
            .iter()
            .map(|t| t.name.clone())
            .collect();
        names.extend(self.schema.view_names());
        names
    }

    async fn table(&self, name: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        if let Some(def) = self.schema.table(name) {
            let with_hidden = self.expose_hidden.as_deref() == Some(name);
            return Ok(Some(Arc::new(RowdexTable::new(
                def,
                self.db.clone(),
                with_hidden,
            ))));
        }
        let Some(sql) = self.schema.view(name) else {
            return Ok(None);
        };
        // A view is planned afresh each time it is named, in a context of its own.
        let ctx = new_context(&self.db, self.schema.clone(), OptimizerRules::new()?, None);
        let plan = plan_view_query(&ctx, &sql).await?;
        Ok(Some(Arc::new(ViewTable::new(plan, Some(sql)))))
    }

    fn table_exist(&self, name: &str) -> bool {
        self.schema.table(name).is_some() || self.schema.view(name).is_some()
    }
}

/// `ctx` for one statement: carrying `hints` and `txn` to its table scans (which read through
/// `txn` when given, and otherwise all through one snapshot taken by the first of them).
pub(crate) fn context_with(
    ctx: &SessionContext,
    hints: &QueryHints,
    txn: Option<Arc<SessionTxn>>,
    semantics: Semantics,
) -> SessionContext {
    let mut state = ctx.state();
    state.config_mut().set_extension(Arc::new(semantics));
    // The statement's report, for the scans that run on DataFusion's tasks.
    if let Some(report) = StatementReport::current() {
        state.config_mut().set_extension(report);
    }
    if !hints.is_empty() {
        state.config_mut().set_extension(Arc::new(hints.clone()));
    }
    match txn {
        Some(txn) => state.config_mut().set_extension(txn),
        // Outside a transaction, every scan of the statement reads one snapshot.
        None => state
            .config_mut()
            .set_extension(Arc::new(StatementSnapshot::default())),
    }
    SessionContext::new_with_state(state)
}

/// The semantics the statement context `ctx` was made with (SQLite's by default).
pub(crate) fn semantics_of(ctx: &SessionContext) -> Semantics {
    ctx.state()
        .config()
        .get_extension::<Semantics>()
        .map_or_else(Semantics::default, |semantics| *semantics)
}

/// Plans and runs a query through DataFusion.
pub(crate) async fn run_query(ctx: &SessionContext, mut statement: Statement) -> Result<Output> {
    rewrite::strip_unary_plus(&mut statement);
    let names = rewrite::unique_output_names(&mut statement);
    let plan = plan_statement(ctx, statement.clone()).await?;
    let frame = ctx.execute_logical_plan(plan).await?;
    let mut schema = Arc::new(frame.schema().as_arrow().clone());
    let mut batches = match frame.collect().await {
        Ok(batches) => batches,
        // SQLite's division by zero is NULL: the query runs again with every divisor guarded
        // (it has written nothing), its result keeping the first plan's columns.
        Err(refused)
            if semantics_of(ctx).division_by_zero_is_null()
                && refused.to_string().contains("Divide by zero")
                && rewrite::division_by_zero_as_null(&mut statement) =>
        {
            let plan = plan_statement(ctx, statement).await?;
            let frame = ctx.execute_logical_plan(plan).await?;
            // The first plan's names; every column may now be NULL.
            let fields: Vec<Field> = frame
                .schema()
                .as_arrow()
                .fields()
                .iter()
                .zip(schema.fields())
                .map(|(field, first)| {
                    field
                        .as_ref()
                        .clone()
                        .with_name(first.name())
                        .with_nullable(true)
                })
                .collect();
            schema = Arc::new(Schema::new(fields));
            let batches = frame.collect().await?;
            batches
                .into_iter()
                .map(|batch| RecordBatch::try_new(schema.clone(), batch.columns().to_vec()))
                .collect::<std::result::Result<_, _>>()?
        }
        Err(refused) => return Err(refused.into()),
    };
    if let Some(names) = names.filter(|n| n.len() == schema.fields().len()) {
        // The result carries the names the query gave, repeated ones included.
        schema = renamed_schema(&schema, &names);
        batches = batches
            .into_iter()
            .map(|batch| RecordBatch::try_new(schema.clone(), batch.columns().to_vec()))
            .collect::<std::result::Result<_, _>>()?;
    }
    Ok(Output::Rows { schema, batches })
}

/// EXPLAIN: the access path of every table scan (plain), or the whole DataFusion physical plan
/// (VERBOSE), where each scan prints the same access-path text. VERBOSE adds, under each scan,
/// the candidate paths the planner weighed; ANALYZE runs the statement and adds what each scan
/// read and yielded, and the rows and time of the whole.
pub(crate) async fn explain(
    db: &DbState,
    ctx: &SessionContext,
    statement: &Statement,
    options: ExplainOptions,
) -> Result<Output> {
    let ctx = if options.analyze {
        let mut state = ctx.state();
        state.config_mut().set_extension(Arc::new(AnalyzeReads));
        SessionContext::new_with_state(state)
    } else {
        ctx.clone()
    };
    let logical = plan_statement(&ctx, statement.clone()).await?;
    let physical = ctx.state().create_physical_plan(&logical).await?;
    let mut lines: Vec<String> = Vec::new();
    if options.verbose {
        lines.extend(
            displayable(physical.as_ref())
                .indent(true)
                .to_string()
                .lines()
                .map(str::to_string),
        );
    }
    let run = if options.analyze {
        let started = Instant::now();
        let batches = collect(physical.clone(), ctx.task_ctx()).await?;
        let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
        Some((rows, started.elapsed()))
    } else {
        None
    };
    let mut reads = Vec::new();
    collect_reads(&physical, &mut reads);
    if reads.is_empty() && !options.verbose {
        lines.push("NO TABLE SCAN".to_string());
    }
    for read in reads {
        let mut under = Vec::new();
        let text = match read {
            PlanRead::Scan(scan) => {
                if options.verbose
                    && let Some(request) = scan.request()
                {
                    under.extend(candidate_lines(scan.plan(), &weighed(db, &request).await?));
                }
                if options.analyze {
                    under.push(scan.reads().line());
                }
                scan.explain_text()
            }
            PlanRead::Lookup(join) => {
                if options.verbose {
                    under.extend(join.weighed().iter().cloned());
                }
                if options.analyze {
                    under.extend(join.actual_lines());
                }
                join.explain_text()
            }
        };
        // VERBOSE's plan already shows each path: it is repeated only to head what follows.
        if !options.verbose || !under.is_empty() {
            lines.push(text);
        }
        lines.extend(under);
    }
    if let Some((rows, elapsed)) = run {
        lines.push(total_line(rows, elapsed));
    }
    Ok(Output::text_rows("plan", lines))
}

/// Plans a view's stored query as a query is planned, with rowdex's rewrites (row values spelled
/// out, unary `+` dropped), so a view answers exactly like its query run on its own.
pub(crate) async fn plan_view_query(ctx: &SessionContext, sql: &str) -> Result<LogicalPlan> {
    let statements = split_statements(sql)?;
    match statements.into_iter().next() {
        Some(ParsedStatement::Sql { statement, .. }) => plan_statement(ctx, *statement).await,
        _ => Err(Error::Unsupported {
            what: format!("a view defined as {sql}"),
        }),
    }
}

/// Plans a statement in `ctx`, first checking that every table it names exists, so that an
/// unknown table is reported as such rather than as a planning failure.
pub(crate) async fn plan_statement(
    ctx: &SessionContext,
    statement: Statement,
) -> Result<LogicalPlan> {
    // Planning recurses through the statement: polled with room below it (see `stack_depth`).
    OnAmpleStack::new(DATAFUSION_STACK_BYTES, plan_statement_here(ctx, statement)).await
}

async fn plan_statement_here(
    ctx: &SessionContext,
    mut statement: Statement,
) -> Result<LogicalPlan> {
    rewrite::strip_unary_plus(&mut statement);
    array_lists::any_as_in_lists(&mut statement);
    sqlite_types::nullif_as_case(&mut statement);
    rewrite::empty_in_subqueries_as_constants(&mut statement);
    rewrite::expand_row_comparisons(&mut statement);
    array_literals::array_casts_as_calls(&mut statement);
    type_casts::casts_as_calls(&mut statement);
    bytea_literals::hex_casts_as_bytes(&mut statement);
    interval_products::products_as_calls(&mut statement);
    at_time_zone::at_time_zone_as_calls(&mut statement);
    let state = ctx.state();
    if let Some(counter) = state.config().get_extension::<PlanCounter>() {
        counter.planned_by_datafusion();
    }
    answer_in_subqueries_of_non_numbers(&state, &mut statement).await;
    let planned = {
        let statement = DfStatement::Statement(Box::new(statement.clone()));
        for reference in state.resolve_table_references(&statement)? {
            // `versions(t)` and `as_of(t, time)` are table functions; they check `t` themselves.
            let function = state.table_functions().contains_key(reference.table());
            if !function && !ctx.table_exist(reference.clone())? {
                return Err(Error::TableNotFound {
                    table: reference.table().to_string(),
                });
            }
        }
        state.statement_to_plan(statement).await
    };
    let plan = match planned {
        // SQLite takes a bare column in an aggregate query from some row of the group.
        Err(refused)
            if refused
                .to_string()
                .contains("must be in GROUP BY or an aggregate function") =>
        {
            if rewrite::bare_columns_as_first_values(&mut statement) {
                let statement = DfStatement::Statement(Box::new(statement));
                state.statement_to_plan(statement).await?
            } else {
                return Err(refused.into());
            }
        }
        planned => planned?,
    };
    let plan = results_in_session_zone(plan, state.config().options())?;
    match semantics_of(ctx) {
        Semantics::PostgreSql => postgres_result_types(plan),
        Semantics::Sqlite => Ok(plan),
    }
}

/// SQLite's `'text' IN (SELECT number)`: see [`sqlite_types::in_subqueries_of_non_numbers`]. Each
/// candidate subquery is planned alone to learn its column's type (one that does not plan
/// alone, correlated say, is left as it is).
async fn answer_in_subqueries_of_non_numbers(state: &SessionState, statement: &mut Statement) {
    let candidates = sqlite_types::in_subqueries_of_non_numbers(statement);
    if candidates.is_empty() {
        return;
    }
    let mut numeric = HashSet::new();
    for subquery in candidates {
        let text = subquery.to_string();
        let alone = DfStatement::Statement(Box::new(Statement::Query(Box::new(subquery))));
        if let Ok(plan) = state.statement_to_plan(alone).await
            && let [field] = plan.schema().fields().as_ref()
            && field.data_type().is_numeric()
        {
            numeric.insert(text);
        }
    }
    sqlite_types::in_subqueries_of_non_numbers_answered(statement, &numeric);
}

/// What a plan reads, in the order EXPLAIN lists it: each table scan, and each lookup join
/// after the reads of its driving side.
enum PlanRead<'a> {
    Scan(&'a RowdexScanExec),
    Lookup(&'a LookupJoinExec),
}

fn collect_reads<'a>(plan: &'a Arc<dyn ExecutionPlan>, out: &mut Vec<PlanRead<'a>>) {
    if let Some(scan) = plan.downcast_ref::<RowdexScanExec>() {
        out.push(PlanRead::Scan(scan));
    }
    for child in plan.children() {
        collect_reads(child, out);
    }
    if let Some(join) = plan.downcast_ref::<LookupJoinExec>() {
        out.push(PlanRead::Lookup(join));
    }
}
