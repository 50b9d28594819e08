//! Running a native join: its values bound (each table's conditions as a single-table query
//! binds them, the OFFSET and LIMIT), planned (`plan`), executed (`execute`).

use std::sync::Arc;

use datafusion::arrow::record_batch::RecordBatch;
use rowdex_codec::Datum;

use crate::db::DbState;
use crate::db::statement_report::metered_view;
use crate::db::txn::{SessionTxn, read_view};
use crate::error::Result;
use crate::native::join::execute::ProbeCounts;
use crate::native::join::{JoinedAs, NativeJoin};
use crate::native::{Bound, bind_conditions, bind_count};
use crate::output::Output;
use crate::sql::hints::QueryHints;
use crate::write::generated::Generation;

/// A join with its values bound.
#[derive(Debug)]
pub(crate) struct BoundJoin {
    /// Each table's conditions, in FROM order.
    pub tables: Vec<Bound>,
    pub offset: usize,
    pub limit: Option<usize>,
}

/// What binding found of comparisons with NULL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NullComparison {
    None,
    /// In a table every row of the answer needs: no row can match.
    Empty,
    /// In a LEFT JOIN's ON or a NOT EXISTS subquery: no row of that table matches, and the
    /// rows before it stay (NULL-extended). Binding dropped the comparison from the table's predicates, so the
    /// native join would probe it anyway: DataFusion answers.
    InOuterJoin,
}

impl BoundJoin {
    /// Whether a comparison with NULL decides the answer (see [`NullComparison`]).
    pub(crate) fn null_comparison(&self, join: &NativeJoin) -> NullComparison {
        let mut found = NullComparison::None;
        for (bound, joined) in self.tables.iter().zip(&join.tables) {
            if !bound.unsatisfiable {
                continue;
            }
            // Nothing matches a semi joined table's conditions: no row; an anti joined
            // table's: every row, as a LEFT JOIN's ON keeps them.
            if matches!(joined.kind, JoinedAs::Inner | JoinedAs::Semi) {
                return NullComparison::Empty;
            }
            found = NullComparison::InOuterJoin;
        }
        found
    }
}

impl NativeJoin {
    /// Binds literals and parameters (see `NativeQuery::bind`); None leaves the join to
    /// DataFusion.
    pub(crate) fn bind(&self, params: &[Datum]) -> Option<BoundJoin> {
        let tables = self
            .tables
            .iter()
            .map(|joined| {
                let mut bound = bind_conditions(&joined.table, &joined.conditions, params)?;
                let generation = Generation::compile(&joined.table).ok().flatten();
                bound.add_implied(&joined.table, generation.as_deref());
                Some(bound)
            })
            .collect::<Option<Vec<Bound>>>()?;
        Some(BoundJoin {
            tables,
            offset: bind_count(self.offset.as_ref(), params)?.unwrap_or(0),
            limit: bind_count(self.limit.as_ref(), params)?,
        })
    }

    /// The answer when no row can match.
    pub(crate) fn empty(&self) -> Result<Output> {
        Ok(Output::Rows {
            schema: self.schema.clone(),
            batches: vec![RecordBatch::new_empty(self.schema.clone())],
        })
    }
}

/// Runs `join` natively if it can be: Some(result), or None to leave it to DataFusion.
pub(crate) async fn run(
    db: &DbState,
    txn: Option<&Arc<SessionTxn>>,
    join: &NativeJoin,
    params: &[Datum],
    hints: &QueryHints,
) -> Result<Option<Output>> {
    let Some(bound) = join.bind(params) else {
        return Ok(None);
    };
    match bound.null_comparison(join) {
        NullComparison::Empty => return join.empty().map(Some),
        NullComparison::InOuterJoin => return Ok(None),
        NullComparison::None => {}
    }
    let window = (bound.offset, bound.limit);
    let Some(plan) = join.plan(db, &bound.tables, hints, window).await? else {
        return Ok(None);
    };
    let mut counts = ProbeCounts::default();
    let output = join
        .execute(metered_view(read_view(db, txn)), plan, &mut counts)
        .await?;
    if output.is_none() {
        // More rows than the memory budget holds: DataFusion runs this join until the
        // statistics change, instead of reading them natively first every time.
        join.leave_to_datafusion();
    }
    Ok(output)
}
