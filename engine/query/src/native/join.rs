//! Joins the native executor runs (issue 44): rowdex tables joined by equalities of their
//! columns (`[INNER] JOIN ... ON`, or the same equalities in WHERE), each table with its own
//! column-versus-value conditions, plain columns selected, ORDER BY on them, LIMIT and OFFSET;
//! `IN (SELECT ...)` and `[NOT] EXISTS (SELECT ...)` in WHERE join their table as a semi or anti
//! joined one ([`JoinedAs`]).
//!
//! One table drives, read by its best access path; each of the others is then probed by the
//! values the rows so far hold, through its primary key or an index (`planner::lookup`), as
//! `df::lookup_join` does inside DataFusion, but without DataFusion's planning, which costs
//! more than all the reads of a join of a few rows (~0.6 ms a run; a point-get join reads in
//! microseconds). The joins weighed are the same as DataFusion's rule weighs
//! (`df::rules::lookup_joins`): a probe must cost less than reading its table whole for a
//! hash join (or be hinted). A join that is not that, or whose rows are many
//! ([`NATIVE_JOIN_ROWS_MAX`]), is left to DataFusion, whose vectorized hash join and sort serve
//! it better. The plan's choice is kept per generation of every table's statistics, as a
//! single-table query's is (`native::choice`).

pub(crate) mod compile;
pub(crate) mod execute;
pub(crate) mod explain;
pub(crate) mod plan;
pub(crate) mod run;
pub(crate) mod scope;
pub(crate) mod subquery;

use std::sync::{Arc, Mutex};

use datafusion::arrow::datatypes::SchemaRef;
use rowdex_catalog::TableDef;
use rowdex_planner::lookup::{JoinHint, LookupKey};
use rowdex_planner::{IndexHint, Predicate};

use crate::db::schema_view::SchemaView;
use crate::native::choice::PathShape;
use crate::native::scope::Slot;

/// Rows past which a join is left to DataFusion: the driving rows, or the rows the join is
/// expected to yield (the native join holds its rows, and joins and sorts them row by row).
pub(crate) const NATIVE_JOIN_ROWS_MAX: f64 = 10_000.0;

/// A column of one of the join's tables (`table` is its position in the FROM list).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ColumnRef {
    pub table: usize,
    pub column: usize,
}

/// One table of a join, as the query names it, and the conditions on its own columns.
#[derive(Debug, Clone)]
pub(crate) struct JoinTable {
    pub table: Arc<TableDef>,
    pub qualifier: String,
    pub conditions: Vec<Predicate<Slot>>,
    pub kind: JoinedAs,
}

impl JoinTable {
    /// Joined by LEFT JOIN.
    pub(crate) fn outer(&self) -> bool {
        self.kind == JoinedAs::Left
    }
}

/// How a table takes part in a join.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JoinedAs {
    /// FROM, `[INNER] JOIN`: a row per match.
    Inner,
    /// LEFT JOIN: a row of the tables before it that no row of it matches is kept, with NULLs
    /// for its columns. Only its own ON tests it or joins it (`compile`), and it never drives.
    Left,
    /// The table of `x IN (SELECT c FROM t ...)` or `EXISTS (SELECT ... FROM t WHERE t.c = x
    /// ...)` in the WHERE clause: a row of the other tables is kept once if some row of it
    /// matches. Only its subquery tests it, the query never selects or orders by it, and it
    /// is probed after every table it is compared with; when it drives, its rows are made
    /// distinct on the columns compared first, so that each row of the others still comes
    /// once.
    Semi,
    /// The table of `NOT EXISTS (...)`: a row of the other tables is kept if no row of it
    /// matches. Probed last of the tables it is compared with, and it never drives.
    Anti,
}

/// One ORDER BY item of a join.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct JoinOrderItem {
    pub column: ColumnRef,
    pub descending: bool,
}

/// A compiled join, with its values still unbound.
#[derive(Debug, Clone)]
pub(crate) struct NativeJoin {
    /// In FROM order.
    pub tables: Vec<JoinTable>,
    /// Column equalities between two tables (of the same type, never floats).
    pub equalities: Vec<(ColumnRef, ColumnRef)>,
    /// Result column names, and the column behind each.
    pub names: Vec<String>,
    pub output: Vec<ColumnRef>,
    pub order: Vec<JoinOrderItem>,
    pub limit: Option<Slot>,
    pub offset: Option<Slot>,
    pub schema: SchemaRef,
    /// The plan choice of the last run, shared by the clones of this join.
    pub choice: Arc<Mutex<Option<JoinChoice>>>,
}

impl NativeJoin {
    /// Whether every table is still the definition `schema` has.
    pub(crate) fn is_current(&self, schema: &SchemaView) -> bool {
        self.tables.iter().all(|joined| {
            schema
                .table(&joined.table.name)
                .is_some_and(|table| Arc::ptr_eq(&table, &joined.table))
        })
    }

    /// The columns the join reads of table `table`: those it answers with, orders by and
    /// joins on (the planner adds those its conditions test where a path leaves them to a
    /// filter).
    pub(crate) fn needed(&self, table: usize) -> Vec<usize> {
        let columns = self
            .output
            .iter()
            .chain(self.order.iter().map(|item| &item.column))
            .chain(self.equalities.iter().flat_map(|(a, b)| [a, b]));
        columns_of_table(columns, table)
    }

    /// The columns of table `table` compared with another table's, as positions in its rows.
    pub(crate) fn compared_columns(&self, table: usize) -> Vec<usize> {
        columns_of_table(self.equalities.iter().flat_map(|(a, b)| [a, b]), table)
    }
}

/// The distinct columns of table `table` among `columns`, ascending.
fn columns_of_table<'a>(columns: impl Iterator<Item = &'a ColumnRef>, table: usize) -> Vec<usize> {
    let mut found: Vec<usize> = columns
        .filter(|c| c.table == table)
        .map(|c| c.column)
        .collect();
    found.sort_unstable();
    found.dedup();
    found
}

/// A join plan's shape, whatever the values bound into it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct JoinDecision {
    pub driving: usize,
    /// The driving read is split into partitions read in parallel.
    pub split: bool,
    pub path: PathShape,
    pub probes: Vec<ProbeShape>,
}

/// One probe of a decision: the table, its join columns with the columns their values come
/// from, and the key it is read by.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ProbeShape {
    pub table: usize,
    pub keys: Vec<(usize, ColumnRef)>,
    pub key: LookupKey,
}

/// A decision (None: DataFusion runs the join) and what it was made under.
#[derive(Debug, Clone)]
pub(crate) struct JoinChoice {
    pub generations: Vec<u64>,
    pub hints: Vec<(IndexHint, JoinHint)>,
    pub decision: Option<JoinDecision>,
}
