//! A scenario: one or two random tables with their rows, secondary indexes, later writes and
//! sometimes a view, and the statements that set it up on SQLite and on rowdex (with or
//! without the indexes).
//! Many queries run against one scenario; a failing one is shrunk together with it.

use std::collections::{BTreeSet, HashSet};

use super::data::{self, Rows, Write};
use super::query::Expr;

use super::schema::{Index, IndexTiming, Table};
use super::value::Value;

#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub tables: Vec<Table>,
    /// The initial rows, one entry per table.
    pub rows: Vec<Rows>,
    pub indexes: Vec<Index>,
    pub writes: Vec<Write>,
    pub views: Vec<View>,
}

/// `CREATE VIEW name AS SELECT columns FROM base WHERE filter`: queries on it reach rowdex's
/// scan of `base` through DataFusion's view inlining, with the view's filter and projection
/// pushed down together with the query's own.
#[derive(Debug, Clone, PartialEq)]
pub struct View {
    /// The view as a relation: its name and columns (the base table's, in the view's order),
    /// with no key and no indexes.
    pub relation: Table,
    pub base: String,
    pub filter: Option<Expr>,
}

impl View {
    pub fn ddl(&self) -> String {
        let columns: Vec<&str> = self
            .relation
            .columns
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        let filter = self
            .filter
            .as_ref()
            .map(|f| format!(" WHERE {}", f.sql(false)))
            .unwrap_or_default();
        format!(
            "CREATE VIEW {} AS SELECT {} FROM {}{filter}",
            self.relation.name,
            columns.join(", "),
            self.base
        )
    }

    /// Whether the view reads `column` of `table`.
    pub fn mentions(&self, table: &str, column: &str) -> bool {
        if self.base != table {
            return false;
        }
        let mut read = BTreeSet::new();
        if let Some(filter) = &self.filter {
            filter.columns(&mut read);
        }
        self.relation.column(column).is_some()
            || read.contains(&(table.to_string(), column.to_string()))
    }
}

/// One statement of a setup, with what it is for: only a later write may be rejected (by both
/// engines alike: a plain INSERT of a taken key, an UPDATE moving a row onto one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub sql: String,
    /// The index of the write in `Scenario::writes` this statement belongs to.
    pub write: Option<usize>,
}

/// Which engine a setup is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Sqlite,
    Rowdex { indexed: bool },
}

impl Scenario {
    /// A table or a view by name.
    pub fn table(&self, name: &str) -> Option<&Table> {
        self.tables
            .iter()
            .chain(self.views.iter().map(|v| &v.relation))
            .find(|t| t.name == name)
    }

    /// The tables and the views, which queries read alike.
    pub fn relations(&self) -> Vec<Table> {
        self.tables
            .iter()
            .chain(self.views.iter().map(|v| &v.relation))
            .cloned()
            .collect()
    }

    pub fn rows_of(&self, name: &str) -> &[Vec<Value>] {
        self.rows
            .iter()
            .find(|r| r.table == name)
            .map(|r| r.rows.as_slice())
            .unwrap_or(&[])
    }

    /// Whether no two rows share all the index's values (rows with a NULL among them never
    /// clash, as in SQLite and rowdex).
    pub(super) fn is_unique(&self, index: &Index) -> bool {
        let Some(table) = self.table(&index.table) else {
            return false;
        };
        let positions: Vec<usize> = index
            .columns
            .iter()
            .filter_map(|k| table.columns.iter().position(|c| c.name == k.column))
            .collect();
        let mut seen = HashSet::new();
        for row in self.rows_of(&index.table) {
            let values: Vec<&Value> = positions.iter().filter_map(|&i| row.get(i)).collect();
            if values.iter().any(|v| v.is_null()) {
                continue;
            }
            let text: Vec<String> = values.iter().map(|v| v.sql()).collect();
            if !seen.insert(text.join("\u{1}")) {
                return false;
            }
        }
        true
    }

    /// The statements that build the scenario on `target`, in order.
    pub fn setup(&self, target: Target) -> Vec<Step> {
        let indexed = matches!(target, Target::Rowdex { indexed: true });
        let step = |sql: String| Step { sql, write: None };
        let indexes = |timing: IndexTiming| -> Vec<Step> {
            if !indexed {
                return Vec::new();
            }
            self.indexes
                .iter()
                .filter(|i| i.timing == timing)
                .map(|i| step(i.ddl()))
                .collect()
        };
        let mut out: Vec<Step> = self
            .tables
            .iter()
            .map(|t| match target {
                Target::Sqlite => step(t.sqlite_ddl()),
                Target::Rowdex { .. } => step(t.rowdex_ddl()),
            })
            .collect();
        out.extend(indexes(IndexTiming::BeforeLoad));
        for table in &self.tables {
            let rows = self.rows_of(&table.name);
            out.extend(
                data::insert_sql(table, rows, "INSERT")
                    .into_iter()
                    .map(step),
            );
        }
        out.extend(indexes(IndexTiming::AfterLoad));
        for (i, write) in self.writes.iter().enumerate() {
            out.extend(write.sql(&self.tables).into_iter().map(|sql| Step {
                sql,
                write: Some(i),
            }));
        }
        out.extend(indexes(IndexTiming::AfterWrites));
        out.extend(self.views.iter().map(|v| step(v.ddl())));
        out
    }

    /// The total number of initial rows.
    pub fn row_count(&self) -> usize {
        self.rows.iter().map(|r| r.rows.len()).sum()
    }
}
