//! A SELECT the native executor runs: a query of one table (`native::compile`), or a join
//! (`native::join`). What sessions, prepared statements and the compiled-query cache keep.

use std::sync::Arc;

use datafusion::sql::sqlparser::ast::Query;
use rowdex_codec::Datum;

use crate::db::DbState;
use crate::db::schema_view::SchemaView;
use crate::db::txn::SessionTxn;
use crate::error::Result;
use crate::native;
use crate::native::compile::NativeQuery;
use crate::native::join::NativeJoin;
use crate::output::Output;
use crate::scan::explain::ExplainOptions;
use crate::sql::hints::QueryHints;

#[derive(Debug, Clone)]
pub(crate) enum NativeSelect {
    Table(NativeQuery),
    Join(NativeJoin),
}

impl NativeSelect {
    /// Compiles `query` when the native executor can run it.
    pub(crate) fn compile(schema: &SchemaView, query: &Query) -> Option<NativeSelect> {
        if let Some(table) = NativeQuery::compile(schema, query) {
            return Some(NativeSelect::Table(table));
        }
        native::join::compile::compile(schema, query).map(NativeSelect::Join)
    }

    /// Whether the tables it was compiled against are still their definitions in `schema`.
    pub(crate) fn is_current(&self, schema: &SchemaView) -> bool {
        match self {
            NativeSelect::Table(query) => query.is_current(schema),
            NativeSelect::Join(join) => join.is_current(schema),
        }
    }
}

/// Runs `select` natively if it can be: Some(result), or None to leave it to DataFusion.
pub(crate) async fn run(
    db: &DbState,
    txn: Option<&Arc<SessionTxn>>,
    select: &NativeSelect,
    params: &[Datum],
    hints: &QueryHints,
) -> Result<Option<Output>> {
    match select {
        NativeSelect::Table(query) => native::run(db, txn, query, params, hints).await,
        NativeSelect::Join(join) => native::join::run::run(db, txn, join, params, hints).await,
    }
}

/// The EXPLAIN lines of `select` run natively (None: DataFusion runs it).
pub(crate) async fn explain(
    db: &DbState,
    txn: Option<&Arc<SessionTxn>>,
    select: &NativeSelect,
    hints: &QueryHints,
    options: ExplainOptions,
) -> Result<Option<Vec<String>>> {
    match select {
        NativeSelect::Table(query) => {
            native::explain::explain(db, txn, query, hints, options).await
        }
        NativeSelect::Join(join) => {
            native::join::explain::explain(db, txn, join, hints, options).await
        }
    }
}
