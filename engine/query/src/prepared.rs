//! Prepared statements: one statement parsed once, with parameters bound at each run.
//!
//! A query the native executor runs keeps its compiled form (recompiled only when its table's
//! definition changes), so a repeated point get costs a bind, a plan choice among precomputed
//! candidates and the read. Any other statement has its parameters written into the parsed
//! statement as literals and runs as if typed, so it still skips the parsing; DataFusion plans
//! it afresh each time.

use std::sync::{Arc, Mutex, PoisonError};

use datafusion::arrow::datatypes::{DataType as ArrowType, Field, FieldRef, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::sql::sqlparser::ast::Statement;
use rowdex_codec::Datum;

use crate::db::txn::with_query_view;
use crate::df::context::plan_statement;
use crate::error::{Error, Result};
use crate::execute::Compiled;
use crate::execute::copy;
use crate::execute::returning::split_returning;
use crate::native;
use crate::native::select::NativeSelect;
use crate::native::write::NativeWrite;
use crate::output::Output;
use crate::session::{Executor, Session};
use crate::sql::array_lists::any_as_in_lists;
use crate::sql::literals::bind_literals;
use crate::sql::parameter_casts::parameter_casts;
use crate::sql::parse::{ParsedStatement, parse_with_parameters};
use crate::stack_depth::{DATAFUSION_STACK_BYTES, OnAmpleStack, SEGMENT_BYTES};

impl Session {
    /// Parses `sql`, one statement with parameters (`$1`, `$2`, ... or `?`), for running many
    /// times with different values. A query the native executor runs keeps its compiled form,
    /// so running it again costs no parsing or planning.
    pub fn prepare(&self, sql: &str) -> Result<Prepared> {
        // Parsing and compiling recurse through the statement: see `stack_depth`.
        stacker::maybe_grow(DATAFUSION_STACK_BYTES, SEGMENT_BYTES, || {
            Prepared::new(self.clone(), sql)
        })
    }
}

/// What a prepared statement takes and gives back, known before it runs (what a wire
/// protocol's Describe reports).
#[derive(Debug, Clone)]
pub struct Description {
    /// The type of each parameter where the statement fixes it (a comparison with a column,
    /// an inserted or assigned column, LIMIT); None where any value goes. A parameter that
    /// takes a column's type takes its field, with the column's declared type in the metadata
    /// (see `values::column_field`).
    pub parameters: Vec<Option<FieldRef>>,
    /// The columns of the rows the statement returns; None for a statement that returns no
    /// rows, and for a rowdex command (whose rows are known when it runs).
    pub columns: Option<SchemaRef>,
}

/// A statement ready to run many times; see [`Session::prepare`].
pub struct Prepared {
    session: Session,
    statement: ParsedStatement,
    parameters: usize,
    /// The native form of a query, compiled on first use.
    native: Mutex<Option<Arc<NativeSelect>>>,
    /// The native form of an UPDATE or DELETE, compiled on first use.
    native_write: Mutex<Option<Arc<NativeWrite>>>,
    /// The native query's result schema (by identity) that naming its columns for the session
    /// leaves as it is: its later runs skip the naming.
    named_as_is: Mutex<Option<SchemaRef>>,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("statement", &self.statement.to_string())
            .field("parameters", &self.parameters)
            .finish_non_exhaustive()
    }
}

impl Prepared {
    fn new(session: Session, sql: &str) -> Result<Prepared> {
        let (statement, parameters) = parse_with_parameters(sql)?;
        Ok(Prepared {
            session,
            statement,
            parameters,
            native: Mutex::new(None),
            native_write: Mutex::new(None),
            named_as_is: Mutex::new(None),
        })
    }

    /// How many parameters the statement takes.
    pub fn parameter_count(&self) -> usize {
        self.parameters
    }

    /// Runs the statement with `params` as `$1`, `$2`, ...
    pub async fn execute(&self, params: &[Datum]) -> Result<Output> {
        let run = self.session.reported(self.execute_here(params));
        OnAmpleStack::new(DATAFUSION_STACK_BYTES, run).await
    }

    /// [`Prepared::execute`] on the stack it is polled on.
    async fn execute_here(&self, params: &[Datum]) -> Result<Output> {
        if params.len() != self.parameters {
            return Err(Error::ParameterCount {
                expected: self.parameters,
                given: params.len(),
            });
        }
        // Another process may have changed the catalog: the compiled query re-plans if so,
        // and reads on from the snapshot that checked it.
        let view = self.session.db.catalog.refresh().await?;
        if let Some(native) = self.native_query() {
            self.session.set_warnings(Vec::new());
            let hints = match &self.statement {
                ParsedStatement::Sql { hints, .. } => hints.clone(),
                ParsedStatement::Command(_) => Default::default(),
            };
            let txn = self.session.open_txn();
            if let Some(txn) = &txn {
                txn.query_start().await?;
            }
            let run = native::select::run(&self.session.db, txn.as_ref(), &native, params, &hints);
            if let Some(output) = with_query_view(view, run).await? {
                return match &self.statement {
                    ParsedStatement::Sql { statement, .. } => self.named(statement, output),
                    ParsedStatement::Command(_) => Ok(output),
                };
            }
        }
        if let Some(write) = self.native_write() {
            let compiled = Compiled {
                write: &write,
                params,
            };
            return self
                .session
                .run_compiled(&self.statement, Some(compiled))
                .await;
        }
        let bound = bind_literals(&self.statement, params)?;
        self.session.run(&bound).await
    }

    /// The statement's parameter types and result columns, without running it where planning
    /// tells them: a query, INSERT, UPDATE or DELETE is planned by DataFusion with its
    /// parameters as placeholders. A query DataFusion cannot plan, EXPLAIN and SHOW TABLES run
    /// once with every parameter NULL to learn their columns. A COPY's table and columns (or
    /// query) are checked, so that a client learns of a missing one before sending data.
    pub async fn describe(&self) -> Result<Description> {
        OnAmpleStack::new(DATAFUSION_STACK_BYTES, self.describe_here()).await
    }

    /// [`Prepared::describe`] on the stack it is polled on.
    async fn describe_here(&self) -> Result<Description> {
        let mut parameters = vec![None; self.parameters];
        let ParsedStatement::Sql {
            statement,
            hints,
            upsert,
            ..
        } = &self.statement
        else {
            return Ok(Description {
                parameters,
                columns: None,
            });
        };
        if let Statement::Copy { .. } = statement.as_ref() {
            copy::check(&self.session, statement).await?;
        }
        let plannable = matches!(
            statement.as_ref(),
            Statement::Query(_)
                | Statement::Insert(_)
                | Statement::Update(_)
                | Statement::Delete(_)
        );
        // A write with RETURNING is planned without it; its rows are those of a query.
        let (planned, returned) = match split_returning(statement) {
            Some((write, query)) => (write, Some(query)),
            None => (statement.as_ref().clone(), None),
        };
        let ctx = self.session.statement_context(hints);
        let plan = if plannable && !*upsert {
            plan_statement(&ctx, planned).await.ok()
        } else {
            None
        };
        if let Some(plan) = &plan {
            // `x = ANY($1)` was planned as `x IN ($1)`: $1 is an array of x's type.
            let arrays = any_as_in_lists(&mut statement.as_ref().clone());
            for (name, field) in plan.get_parameter_fields()? {
                let index = name
                    .strip_prefix('$')
                    .and_then(|n| n.parse::<usize>().ok())
                    .and_then(|n| n.checked_sub(1));
                let field = field.filter(|f| *f.data_type() != ArrowType::Null);
                let field = match field {
                    Some(element) if arrays.contains(&name) => Some(Arc::new(Field::new(
                        name.clone(),
                        ArrowType::List(element),
                        true,
                    ))),
                    field => field,
                };
                if let Some(slot) = index.and_then(|i| parameters.get_mut(i)) {
                    *slot = field;
                }
            }
        }
        // What planning left untyped, a cast may type (`$1::int2`).
        let casts = parameter_casts(statement, self.parameters);
        for (slot, cast) in parameters.iter_mut().zip(casts) {
            if slot.is_none() {
                *slot = cast.map(Arc::new);
            }
        }
        let columns = match (statement.as_ref(), plan, returned) {
            (_, _, Some(query)) => {
                let plan = plan_statement(&ctx, query.clone()).await?;
                let schema = Arc::new(plan.schema().as_arrow().clone());
                Some(self.session.name_schema(&query, &schema))
            }
            (Statement::Query(_), Some(plan), None) => {
                let schema = Arc::new(untyped_as_text(plan.schema().as_arrow()));
                Some(self.session.name_schema(statement, &schema))
            }
            (
                Statement::Query(_) | Statement::Explain { .. } | Statement::ShowTables { .. },
                ..,
            ) => self.columns_when_run().await?,
            _ => None,
        };
        Ok(Description {
            parameters,
            columns,
        })
    }

    /// The columns of the statement's result, learnt by running it with NULL parameters.
    async fn columns_when_run(&self) -> Result<Option<SchemaRef>> {
        let nulls = vec![Datum::Null; self.parameters];
        Ok(match self.execute(&nulls).await? {
            Output::Rows { schema, .. } => Some(schema),
            _ => None,
        })
    }

    /// Runs a query and returns its batches.
    pub async fn query(&self, params: &[Datum]) -> Result<Vec<RecordBatch>> {
        match self.execute(params).await? {
            Output::Rows { batches, .. } => Ok(batches),
            _ => Ok(Vec::new()),
        }
    }

    /// The compiled native query, recompiled if its table changed since.
    fn native_query(&self) -> Option<Arc<NativeSelect>> {
        if self.session.executor != Executor::Auto {
            return None;
        }
        let ParsedStatement::Sql { statement, .. } = &self.statement else {
            return None;
        };
        let Statement::Query(query) = statement.as_ref() else {
            return None;
        };
        let mut cached = self.native.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(native) = cached.as_ref()
            && native.is_current(&self.session.schema_view())
        {
            return Some(native.clone());
        }
        *cached = NativeSelect::compile(&self.session.schema_view(), query).map(Arc::new);
        if cached.is_some() {
            self.session.db.planning.compiled_natively();
        }
        cached.clone()
    }

    /// The native query's `output` with its columns named for the session
    /// (`Session::name_output`), which a run whose result schema is the one naming left as it
    /// is before skips: the statement, the session's semantics and the schema (the compiled
    /// query's own, replaced when its table changes) are all it depends on.
    fn named(&self, statement: &Statement, output: Output) -> Result<Output> {
        let source = match &output {
            Output::Rows { schema, .. } => schema.clone(),
            _ => return Ok(output),
        };
        let mut as_is = self
            .named_as_is
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if as_is
            .as_ref()
            .is_some_and(|kept| Arc::ptr_eq(kept, &source))
        {
            return Ok(output);
        }
        let named = self.session.name_output(statement, output)?;
        if let Output::Rows { schema, .. } = &named
            && Arc::ptr_eq(schema, &source)
        {
            *as_is = Some(source);
        }
        Ok(named)
    }

    /// The compiled native UPDATE or DELETE, recompiled if its table changed since.
    fn native_write(&self) -> Option<Arc<NativeWrite>> {
        if self.session.executor != Executor::Auto {
            return None;
        }
        let ParsedStatement::Sql { statement, .. } = &self.statement else {
            return None;
        };
        if !matches!(
            statement.as_ref(),
            Statement::Update(_) | Statement::Delete(_)
        ) {
            return None;
        }
        let schema = self.session.schema_view();
        let mut cached = self
            .native_write
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(write) = cached.as_ref()
            && write.is_current(&schema)
        {
            return Some(write.clone());
        }
        *cached = NativeWrite::compile(&schema, statement).map(Arc::new);
        if cached.is_some() {
            self.session.db.planning.compiled_natively();
        }
        cached.clone()
    }
}

/// `schema` with its columns of no type (`SELECT $1` with an untyped parameter) as text, which
/// is how PostgreSQL describes an expression of unknown type and how its value comes back.
fn untyped_as_text(
    schema: &datafusion::arrow::datatypes::Schema,
) -> datafusion::arrow::datatypes::Schema {
    let fields: Vec<datafusion::arrow::datatypes::Field> = schema
        .fields()
        .iter()
        .map(|field| match field.data_type() {
            ArrowType::Null => field
                .as_ref()
                .clone()
                .with_data_type(ArrowType::Utf8)
                .with_nullable(true),
            _ => field.as_ref().clone(),
        })
        .collect();
    datafusion::arrow::datatypes::Schema::new_with_metadata(fields, schema.metadata().clone())
}
