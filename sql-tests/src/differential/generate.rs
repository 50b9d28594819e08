//! Random queries and writes over a scenario: conditions shaped to hit the access paths
//! (key prefixes with a range after them, index prefixes, several indexed predicates for
//! intersections) and free-form AND/OR/NOT trees, select lists, aggregates, joins, ORDER BY
//! with LIMIT/OFFSET.
//!
//! Restrictions against SQLite's legitimate differences, each kept out of the generator so the
//! comparison can stay exact:
//! - Every comparison, IN list, BETWEEN and join condition has both sides of one type: SQLite
//!   compares an integer column with a real literal by value and text with numbers by type
//!   class, DataFusion casts one side first.
//! - LIKE only on text columns (SQLite would convert a number to text, DataFusion rejects it),
//!   with SQLite's `PRAGMA case_sensitive_like` on (SQLite's LIKE ignores ASCII case by
//!   default, DataFusion's does not), and no backslash in a pattern (DataFusion's LIKE escapes
//!   with it, SQLite's has no escape character without ESCAPE).
//! - No arithmetic: integer division, overflow and real formatting differ between the two, and
//!   SQLite computes with a DECIMAL column's values as doubles where rowdex is exact.
//! - A DECIMAL column is compared with DECIMAL literals of at most two digits after the point
//!   (its scale, see `data`) and with DECIMAL columns: `=`, `<` and the rest, BETWEEN, IN,
//!   IS NULL, IS DISTINCT FROM, row values, `coalesce` with such a literal, subqueries; it is
//!   ordered, grouped and joined on, and aggregated (`sum` and `avg` under the next rule).
//!   Its answers are numbers both engines agree on up to SQLite's binary rounding, which the
//!   comparison tolerates (see `value`).
//! - `sum` and `avg` only over columns of `Domain::Small` values: SQLite raises an error on an
//!   integer overflow where DataFusion wraps, `avg` over `i64` extremes loses different bits
//!   (SQLite sums exactly, DataFusion in `f64`), and real sums of wide values depend on the
//!   order of addition (as do SQLite's double sums of wide DECIMALs).
//! - LIMIT and OFFSET without an ORDER BY that fixes the whole order (see
//!   `Select::total_order`) are compared by count and membership only (`case::Mode::Window`):
//!   any rows of the right number are a right answer.
//! - DISTINCT orders only by selected columns, aggregates only by grouped ones (SQLite
//!   allows more, DataFusion rejects it).
//! - No correlated subquery over its own table (it would need aliases) and subqueries only in
//!   single-table queries, which keeps the SQL text within what both engines name alike.
//! - An upsert (`ON CONFLICT (<key>) DO UPDATE`) never proposes one key twice (rowdex refuses
//!   that, as PostgreSQL does, where SQLite applies both), sets neither key nor UNIQUE
//!   columns, and counts up (`d = t.d + 1`) only `Domain::Small` integers and reals.
//! - An INSERT leaves out only columns with a DEFAULT or nullable ones: SQLite's OR IGNORE
//!   skips a row that lacks a NOT NULL value, where rowdex fails the statement.
//! - RETURNING lists hold columns, `IS [NOT] NULL` and `coalesce` (no arithmetic, as above;
//!   no `coalesce` of a DECIMAL column, which DataFusion widens to a type common with the
//!   fallback's, DECIMAL(30,15) for `12.5`, whose text the `.slt` of a finding could not
//!   predict); their rows are compared as multisets, since neither engine defines their order.

use super::Restrictions;
use super::data::{self, DoUpdate, InsertMode, ReturnItem, Returning, SetGuard, Write};
use super::query::{
    AggFn, CmpOp, ColRef, Expr, From, Item, JoinKind, JoinStep, Operand, OrderItem, Select, Sub,
};
use super::rng::Rng;
use super::scenario::Scenario;
use super::schema::{Applied, ColType, Column, Domain, Index, Table};
use super::value::Value;

/// Where a condition may hold subqueries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subqueries {
    No,
    Yes,
}

/// The generator state for one scenario.
pub struct Gen<'a> {
    pub rng: &'a mut Rng,
    pub scenario: &'a Scenario,
    pub restrictions: &'a Restrictions,
}

fn colref(table: &Table, column: &Column) -> ColRef {
    ColRef {
        table: table.name.clone(),
        name: column.name.clone(),
        ty: column.ty,
    }
}

/// A non-NULL value of type `ty`.
fn zero(ty: ColType) -> Value {
    match ty {
        ColType::Int => Value::Int(0),
        ColType::Real => Value::Real(0.0),
        ColType::Text => Value::Text(String::new()),
        ColType::Bool => Value::Bool(false),
        ColType::Decimal => Value::decimal(0, 0),
        ColType::Uuid => Value::Text(data::UUIDS[0].to_string()),
        ColType::TimestampTz => Value::Text(data::INSTANTS[0].to_string()),
    }
}

/// The columns of `index` on `table`, each with whether it descends.
fn index_parts(table: &Table, index: &Index) -> Vec<(ColRef, bool)> {
    index
        .columns
        .iter()
        .filter_map(|k| table.column(&k.column).map(|c| (colref(table, c), k.desc)))
        .collect()
}

fn columns_of(table: &Table) -> Vec<ColRef> {
    table.columns.iter().map(|c| colref(table, c)).collect()
}

impl Gen<'_> {
    fn column(&self, col: &ColRef) -> Option<&Column> {
        self.scenario.table(&col.table)?.column(&col.name)
    }

    /// A literal for `col`: a value of a stored row half of the time (so equalities and
    /// point gets find something), else a random one of the column's domain.
    fn literal(&mut self, col: &ColRef) -> Value {
        let rows = self.scenario.rows_of(&col.table);
        let position = self
            .scenario
            .table(&col.table)
            .and_then(|t| t.columns.iter().position(|c| c.name == col.name));
        if let Some(i) = position
            && !rows.is_empty()
            && self.rng.percent(50)
        {
            let row = self.rng.pick(rows);
            if let Some(v) = row.get(i)
                && !v.is_null()
            {
                return v.clone();
            }
        }
        match self.column(col).cloned() {
            Some(column) => data::random_literal(self.rng, &column),
            None => Value::Null,
        }
    }

    /// Mostly a few values, now and then many (a multi-get of many keys).
    fn in_list_length(&mut self) -> usize {
        if self.rng.percent(10) {
            self.rng.between(8, 25)
        } else {
            self.rng.between(1, 4)
        }
    }

    fn literals(&mut self, col: &ColRef, count: usize) -> Vec<Value> {
        (0..count).map(|_| self.literal(col)).collect()
    }

    /// A LIKE pattern built from a value of `col`: a prefix and `%` (the form a key or index
    /// range serves), a `%`-wrapped middle, one character replaced by `_`, the value itself,
    /// or a bare `%`. Backslashes become `_` (see the module notes).
    fn like_pattern(&mut self, col: &ColRef) -> String {
        let text = match self.literal(col) {
            Value::Text(s) => s,
            _ => String::new(),
        };
        let chars: Vec<char> = text.chars().collect();
        let cut = self.rng.below(chars.len() + 1);
        let prefix: String = chars[..cut].iter().collect();
        let pattern = match self.rng.below(6) {
            0 | 1 => format!("{prefix}%"),
            2 => {
                let start = self.rng.below(chars.len() + 1);
                let end = self.rng.between(start, chars.len());
                format!("%{}%", chars[start..end].iter().collect::<String>())
            }
            3 if !chars.is_empty() => {
                let mut chars = chars.clone();
                let at = self.rng.below(chars.len());
                chars[at] = '_';
                chars.into_iter().collect()
            }
            4 => text,
            5 => format!("{prefix}_%"),
            _ => "%".to_string(),
        };
        pattern.replace('\\', "_")
    }

    /// A range condition on `col`: one or two bounds, BETWEEN, or a LIKE prefix for text.
    fn range(&mut self, col: &ColRef) -> Expr {
        let c = Operand::Col(col.clone());
        match self.rng.below(5) {
            0 if col.ty == ColType::Text => Expr::Like {
                col: col.clone(),
                pattern: {
                    let p = self.like_pattern(col);
                    let stem: String = p.chars().take_while(|c| *c != '%' && *c != '_').collect();
                    format!("{stem}%")
                },
                negated: false,
            },
            0 | 1 => Expr::Between {
                col: col.clone(),
                lo: self.literal(col),
                hi: self.literal(col),
                negated: false,
            },
            2 => Expr::And(vec![
                Expr::Cmp {
                    left: c.clone(),
                    op: *self.rng.pick(&[CmpOp::Gt, CmpOp::Ge]),
                    right: Operand::Lit(self.literal(col)),
                },
                Expr::Cmp {
                    left: c,
                    op: *self.rng.pick(&[CmpOp::Lt, CmpOp::Le]),
                    right: Operand::Lit(self.literal(col)),
                },
            ]),
            _ => Expr::Cmp {
                left: c,
                op: *self.rng.pick(&[CmpOp::Gt, CmpOp::Ge, CmpOp::Lt, CmpOp::Le]),
                right: Operand::Lit(self.literal(col)),
            },
        }
    }

    /// A condition that fixes `col` to one value or a few: `=`, `IN`, or `IS NULL`.
    fn fixed(&mut self, col: &ColRef, nullable: bool) -> Expr {
        match self.rng.below(10) {
            7..=9 => {
                let count = self.in_list_length();
                Expr::InList {
                    col: col.clone(),
                    values: self.literals(col, count),
                    negated: false,
                }
            }
            6 if nullable => Expr::IsNull {
                col: col.clone(),
                negated: false,
            },
            _ => Expr::Cmp {
                left: Operand::Col(col.clone()),
                op: CmpOp::Eq,
                right: Operand::Lit(self.literal(col)),
            },
        }
    }

    /// Conditions on a key's or an index's leading columns: some fixed, the next bounded,
    /// as the access paths use them.
    fn prefix_conditions(&mut self, table: &Table, parts: &[(ColRef, bool)]) -> Vec<Expr> {
        let mut out = Vec::new();
        let fixed = self.rng.below(parts.len() + 1);
        for (col, _) in &parts[..fixed] {
            let nullable = table.nullable(&col.name);
            out.push(self.fixed(col, nullable));
        }
        if let Some((col, _)) = parts.get(fixed)
            && self.rng.percent(70)
        {
            let rest: Vec<ColRef> = parts[fixed..].iter().map(|(c, _)| c.clone()).collect();
            if rest.len() >= 2 && self.rng.percent(25) {
                out.push(self.row_value(&rest));
            } else {
                out.push(self.range(col));
            }
        }
        out
    }

    /// `(c1, c2, ...) op (v1, v2, ...)` over `cols` (two or three of them).
    fn row_value(&mut self, cols: &[ColRef]) -> Expr {
        let width = self.rng.between(2, cols.len().min(3));
        let cols: Vec<ColRef> = cols[..width].to_vec();
        let values = cols
            .iter()
            .map(|c| match self.literal(c) {
                // Row values here hold no NULL: one makes most of the comparison unknown,
                // which plain comparisons already cover.
                Value::Null => zero(c.ty),
                v => v,
            })
            .collect();
        Expr::RowCmp {
            cols,
            op: *self.rng.pick(&CmpOp::ALL),
            values,
        }
    }

    /// One random condition on one of `cols` (or two of them).
    fn atom(&mut self, cols: &[ColRef], subqueries: Subqueries) -> Expr {
        let col = self.rng.pick(cols).clone();
        let c = Operand::Col(col.clone());
        let nullable = self
            .scenario
            .table(&col.table)
            .is_some_and(|t| t.nullable(&col.name));
        match self.rng.below(20) {
            0..=3 => {
                let op = *self.rng.pick(&CmpOp::ALL);
                let lit = Operand::Lit(self.literal(&col));
                if self.rng.percent(15) {
                    Expr::Cmp {
                        left: lit,
                        op,
                        right: c,
                    }
                } else {
                    Expr::Cmp {
                        left: c,
                        op,
                        right: lit,
                    }
                }
            }
            4 | 5 => self.fixed(&col, nullable),
            6 | 7 => self.range(&col),
            8 => Expr::Between {
                col: col.clone(),
                lo: self.literal(&col),
                hi: self.literal(&col),
                negated: true,
            },
            9 => {
                let count = self.in_list_length();
                let mut values = self.literals(&col, count);
                if self.rng.percent(20) {
                    values.push(Value::Null);
                }
                Expr::InList {
                    col,
                    values,
                    negated: self.rng.percent(50),
                }
            }
            10 | 11 => Expr::IsNull {
                col,
                negated: self.rng.percent(50),
            },
            12 | 13 if col.ty == ColType::Text => Expr::Like {
                pattern: self.like_pattern(&col),
                col,
                negated: self.rng.percent(25),
            },
            12 | 13 if col.ty == ColType::Bool => {
                if self.rng.percent(50) {
                    Expr::Truth(col)
                } else {
                    Expr::Not(Box::new(Expr::Truth(col)))
                }
            }
            14 => {
                // Two columns of one type (the same column, failing that).
                let peers: Vec<ColRef> = cols.iter().filter(|o| o.ty == col.ty).cloned().collect();
                let other = self.rng.pick(&peers).clone();
                Expr::Cmp {
                    left: c,
                    op: *self.rng.pick(&CmpOp::ALL),
                    right: Operand::Col(other),
                }
            }
            15 if cols.len() >= 2 => {
                let mut shuffled = cols.to_vec();
                self.rng.shuffle(&mut shuffled);
                self.row_value(&shuffled)
            }
            16 | 17 if subqueries != Subqueries::No => self
                .subquery(&col)
                .unwrap_or(Expr::IsNull { col, negated: true }),
            18 => match self.rng.below(4) {
                0 => Expr::Cmp {
                    left: c,
                    op: *self.rng.pick(&CmpOp::ALL),
                    right: Operand::Lit(Value::Null),
                },
                1 => Expr::DistinctFrom {
                    value: if self.rng.percent(30) {
                        Value::Null
                    } else {
                        self.literal(&col)
                    },
                    col,
                    negated: self.rng.percent(50),
                },
                2 => Expr::Coalesce {
                    fallback: self.literal(&col),
                    op: *self.rng.pick(&CmpOp::ALL),
                    value: self.literal(&col),
                    col,
                },
                // `x IN ()`: false for every row, as in SQLite.
                _ => Expr::InList {
                    col,
                    values: Vec::new(),
                    negated: self.rng.percent(50),
                },
            },
            _ => self.fixed(&col, nullable),
        }
    }

    /// `col IN (SELECT ...)` or a correlated `EXISTS` over the scenario's other table.
    fn subquery(&mut self, col: &ColRef) -> Option<Expr> {
        let other = self
            .scenario
            .tables
            .iter()
            .find(|t| t.name != col.table)?
            .clone();
        let peers: Vec<ColRef> = columns_of(&other)
            .into_iter()
            .filter(|c| c.ty == col.ty)
            .collect();
        if peers.is_empty() {
            return None;
        }
        let inner = self.rng.pick(&peers).clone();
        let filter = if self.rng.percent(50) {
            Some(Box::new(self.atom(&columns_of(&other), Subqueries::No)))
        } else {
            None
        };
        let sub = Sub {
            table: other.name.clone(),
            column: inner.clone(),
            filter,
        };
        let negated = self.rng.percent(35);
        Some(if self.rng.percent(60) {
            Expr::InSubquery {
                col: col.clone(),
                sub,
                negated,
            }
        } else {
            Expr::Exists {
                outer: col.clone(),
                inner,
                sub,
                negated,
            }
        })
    }

    /// A random AND/OR/NOT tree of atoms.
    fn tree(&mut self, cols: &[ColRef], depth: usize, subqueries: Subqueries) -> Expr {
        if depth == 0 || self.rng.percent(40) {
            return self.atom(cols, subqueries);
        }
        match self.rng.below(10) {
            0..=3 => {
                let n = self.rng.between(2, 3);
                Expr::And(
                    (0..n)
                        .map(|_| self.tree(cols, depth - 1, subqueries))
                        .collect(),
                )
            }
            4..=7 => {
                let n = self.rng.between(2, 3);
                Expr::Or(
                    (0..n)
                        .map(|_| self.tree(cols, depth - 1, subqueries))
                        .collect(),
                )
            }
            _ => Expr::Not(Box::new(self.tree(cols, depth - 1, subqueries))),
        }
    }

    /// A WHERE condition for a query on `table`: shaped for the primary key, for one or two
    /// indexes, for an OR of their prefixes, or a free tree.
    pub fn condition(&mut self, table: &Table, subqueries: Subqueries) -> Expr {
        let cols = columns_of(table);
        let indexes: Vec<_> = self
            .scenario
            .indexes
            .iter()
            .filter(|i| i.table == table.name)
            .cloned()
            .collect();
        let key: Vec<(ColRef, bool)> = table
            .key
            .iter()
            .filter_map(|k| table.column(&k.column).map(|c| (colref(table, c), k.desc)))
            .collect();
        let mut conjuncts = match self.rng.below(10) {
            0..=2 if !key.is_empty() => self.prefix_conditions(table, &key),
            3..=5 if !indexes.is_empty() => {
                let mut out = Vec::new();
                // Two indexes' prefixes at once invite an intersection.
                let count = if indexes.len() >= 2 && self.rng.percent(50) {
                    2
                } else {
                    1
                };
                let mut chosen = indexes.clone();
                self.rng.shuffle(&mut chosen);
                for index in &chosen[..count] {
                    out.extend(self.index_conditions(table, index));
                }
                out
            }
            // An OR whose arms are each the key's or an index's prefix: an index union.
            6 if !indexes.is_empty() => {
                let arms = (0..self.rng.between(2, 3))
                    .map(|_| {
                        let mut conditions = if !key.is_empty() && self.rng.percent(30) {
                            self.leading_conditions(table, &key)
                        } else {
                            let index = self.rng.pick(&indexes).clone();
                            self.index_conditions(table, &index)
                        };
                        if conditions.len() == 1 {
                            conditions.remove(0)
                        } else {
                            Expr::And(conditions)
                        }
                    })
                    .collect();
                vec![Expr::Or(arms)]
            }
            _ => vec![self.tree(&cols, 3, subqueries)],
        };
        if conjuncts.is_empty() || self.rng.percent(30) {
            conjuncts.push(self.tree(&cols, 1, subqueries));
        }
        if conjuncts.len() == 1 {
            conjuncts.remove(0)
        } else {
            Expr::And(conjuncts)
        }
    }

    /// Conditions an index's leading parts answer: for an index on an expression, a
    /// comparison of the expression (`lower(b) = 'x'`, `(a % 7) > 2`), then, after an
    /// equality, conditions on the columns after it; else see `leading_conditions`.
    fn index_conditions(&mut self, table: &Table, index: &Index) -> Vec<Expr> {
        let parts = index_parts(table, index);
        let (Some(func), Some((lead, _))) = (index.expression, parts.first()) else {
            return self.leading_conditions(table, &parts);
        };
        let sample = self.literal(lead);
        let value = match func {
            Applied::Modulo(n) if self.rng.percent(30) => {
                Value::Int(self.rng.between(0, 2 * n as usize) as i64 - n)
            }
            _ => func.of(&sample),
        };
        let op = if self.rng.percent(60) {
            CmpOp::Eq
        } else {
            *self.rng.pick(&[CmpOp::Lt, CmpOp::Le, CmpOp::Gt, CmpOp::Ge])
        };
        let mut out = vec![Expr::Applied {
            func,
            col: lead.clone(),
            op,
            value,
        }];
        if op == CmpOp::Eq && parts.len() > 1 {
            out.extend(self.prefix_conditions(table, &parts[1..]));
        }
        out
    }

    /// Conditions on a prefix of `parts` (see `prefix_conditions`), at least one: the first
    /// part fixed when the prefix came out empty.
    fn leading_conditions(&mut self, table: &Table, parts: &[(ColRef, bool)]) -> Vec<Expr> {
        let mut conditions = self.prefix_conditions(table, parts);
        if conditions.is_empty()
            && let Some((col, _)) = parts.first()
        {
            let nullable = table.nullable(&col.name);
            conditions.push(self.fixed(col, nullable));
        }
        conditions
    }

    /// A WHERE condition for a query on `table`.
    fn filter(&mut self, table: &Table, subqueries: Subqueries) -> Option<Expr> {
        // A few tries for a condition the restrictions allow, else none.
        for _ in 0..8 {
            let filter = self.condition(table, subqueries);
            if self.allowed(table, &filter) {
                return Some(filter);
            }
        }
        None
    }

    /// Whether the restrictions in force allow `filter` on `table`.
    fn allowed(&self, table: &Table, filter: &Expr) -> bool {
        let on_view = self
            .scenario
            .views
            .iter()
            .any(|v| v.relation.name == table.name);
        self.restrictions
            .active()
            .into_iter()
            .all(|r| r.admits(on_view, filter))
    }

    /// The condition of an UPDATE or DELETE: shaped for the key or an index half of the time
    /// (so the write finds its rows by an access path), else a free tree.
    fn write_filter(&mut self, table: &Table, cols: &[ColRef]) -> Expr {
        for _ in 0..8 {
            let filter = if self.rng.percent(50) {
                self.condition(table, Subqueries::No)
            } else {
                self.tree(cols, 2, Subqueries::No)
            };
            if self.allowed(table, &filter) {
                return filter;
            }
        }
        Expr::IsNull {
            col: cols[0].clone(),
            negated: true,
        }
    }

    /// Subqueries need a second relation.
    fn subqueries(&self) -> Subqueries {
        if self.scenario.relations().len() >= 2 {
            Subqueries::Yes
        } else {
            Subqueries::No
        }
    }

    /// A random query over the scenario.
    pub fn query(&mut self) -> Select {
        let relations = self.scenario.relations();
        let table = self.rng.pick(&relations).clone();
        match self.rng.below(100) {
            0..=21 if relations.len() >= 2 => self.join().unwrap_or_else(|| self.select(&table)),
            22..=44 => self.aggregate(&table),
            _ => self.select(&table),
        }
    }

    fn select(&mut self, table: &Table) -> Select {
        let cols = columns_of(table);
        let star = self.rng.percent(20);
        let items: Vec<Item> = if star {
            Vec::new()
        } else {
            let mut chosen = cols.clone();
            self.rng.shuffle(&mut chosen);
            let n = self.rng.between(1, chosen.len());
            chosen.truncate(n);
            chosen.into_iter().map(Item::Col).collect()
        };
        let output = output_columns(star, &cols, &items);
        let distinct = self.rng.percent(10);
        let subqueries = self.subqueries();
        let filter = if self.rng.percent(90) {
            self.filter(table, subqueries)
        } else {
            None
        };
        let key: Vec<(ColRef, bool)> = table
            .key
            .iter()
            .filter_map(|k| table.column(&k.column).map(|c| (colref(table, c), k.desc)))
            .collect();
        let mut after_first = false;
        let order_by: Vec<OrderItem> = match self.rng.below(10) {
            // By the key columns after the first: with an IN list on the first, the ranges of
            // its values read merged by the rest (a merged range scan).
            7 if key.len() >= 2 && !distinct => {
                after_first = true;
                let reverse = self.rng.percent(50);
                key[1..]
                    .iter()
                    .map(|(col, desc)| OrderItem::new(col.clone(), *desc != reverse))
                    .collect()
            }
            // Along the key, or exactly against it: the orders a scan gives for free.
            0..=2 if !key.is_empty() && !distinct => {
                let reverse = self.rng.percent(50);
                let mixed = self.rng.percent(20);
                let mut order = Vec::new();
                // Sometimes an index's columns first, then the key (sorted by index).
                if self.rng.percent(30)
                    && let Some(index) =
                        self.scenario.indexes.iter().find(|i| i.table == table.name)
                {
                    for k in &index.columns {
                        if let Some(c) = table.column(&k.column) {
                            order.push(OrderItem::new(colref(table, c), k.desc != reverse));
                        }
                    }
                }
                for (col, desc) in &key {
                    let desc = if mixed {
                        self.rng.percent(50)
                    } else {
                        *desc != reverse
                    };
                    order.push(OrderItem::new(col.clone(), desc));
                }
                order
            }
            3..=6 => {
                let mut order: Vec<OrderItem> = output
                    .iter()
                    .map(|c| OrderItem::new(c.clone(), self.rng.percent(40)))
                    .collect();
                self.rng.shuffle(&mut order);
                order
            }
            _ => Vec::new(),
        };
        let mut select = Select {
            from: From::Table(table.name.clone()),
            star,
            distinct,
            items,
            filter,
            group_by: Vec::new(),
            having: None,
            order_by,
            limit: None,
            hint: None,
        };
        self.decorate_order(&mut select);
        self.maybe_limit(&mut select);
        // Mostly under a LIMIT, which a merge stops at (the order may tie across the first
        // column's values: any rows of the right number and order are right).
        if after_first && select.limit.is_none() && self.rng.percent(70) {
            select.limit = Some((self.rng.between(1, 12) as u64, 0));
        }
        select.hint = self.hint(table, select.filter.as_ref());
        select
    }

    /// Sometimes an access-path hint for a query on `table` filtered by `filter`: no index,
    /// one index, or an intersection of two or three (which the cost model seldom picks on
    /// small tables). An intersection names, when it can, indexes whose leading column a
    /// conjunct of the filter constrains, so that the hint can be obeyed.
    fn hint(&mut self, table: &Table, filter: Option<&Expr>) -> Option<String> {
        let names: Vec<String> = self
            .scenario
            .indexes
            .iter()
            .filter(|i| i.table == table.name)
            .map(|i| i.name.clone())
            .collect();
        let usable = self.constrained_indexes(table, filter);
        // A filter on two indexes' leading columns is the intersection's chance: take it
        // mostly (the CI run's few queries must reach that path).
        if usable.len() >= 2 && self.rng.percent(60) {
            let mut chosen = usable;
            self.rng.shuffle(&mut chosen);
            chosen.truncate(self.rng.between(2, 3));
            return Some(format!("INDEX_MERGE({} {})", table.name, chosen.join(" ")));
        }
        match self.rng.below(100) {
            0..=7 => Some("NO_INDEX".to_string()),
            8..=21 if !names.is_empty() => {
                Some(format!("INDEX({} {})", table.name, self.rng.pick(&names)))
            }
            22..=41 if names.len() >= 2 => {
                let mut chosen = names.clone();
                self.rng.shuffle(&mut chosen);
                chosen.truncate(self.rng.between(2, 3));
                Some(format!("INDEX_MERGE({} {})", table.name, chosen.join(" ")))
            }
            _ => None,
        }
    }

    /// The indexes on `table` whose leading column a top-level conjunct of `filter` compares
    /// with a literal, bounds or lists: the inputs an intersection can open.
    fn constrained_indexes(&self, table: &Table, filter: Option<&Expr>) -> Vec<String> {
        let conjuncts: &[Expr] = match filter {
            Some(Expr::And(parts)) => parts,
            Some(single) => std::slice::from_ref(single),
            None => &[],
        };
        // (column, the function of it compared, if any)
        let constrained: Vec<(&str, Option<Applied>)> = conjuncts
            .iter()
            .filter_map(|conjunct| match conjunct {
                Expr::Cmp {
                    left: Operand::Col(col),
                    op,
                    right: Operand::Lit(_),
                } if *op != CmpOp::Ne => Some((col.name.as_str(), None)),
                Expr::Applied { func, col, op, .. } if *op != CmpOp::Ne => {
                    Some((col.name.as_str(), Some(*func)))
                }
                Expr::Between {
                    col,
                    negated: false,
                    ..
                }
                | Expr::InList {
                    col,
                    negated: false,
                    ..
                } => Some((col.name.as_str(), None)),
                _ => None,
            })
            .collect();
        self.scenario
            .indexes
            .iter()
            .filter(|index| {
                index.table == table.name
                    && index.columns.first().is_some_and(|lead| {
                        constrained.contains(&(lead.column.as_str(), index.expression))
                    })
            })
            .map(|index| index.name.clone())
            .collect()
    }

    /// The same query with other literals (a non-NULL literal stays non-NULL, so a NOT NULL
    /// condition keeps its meaning).
    pub fn sibling(&mut self, query: &Select) -> Select {
        let mut sibling = query.clone();
        if let Some(filter) = &mut sibling.filter {
            filter.map_literals(&mut |col, old| {
                if old.is_null() {
                    Value::Null
                } else {
                    match self.literal(col) {
                        Value::Null => old.clone(),
                        v => v,
                    }
                }
            });
        }
        sibling
    }

    /// Now and then an explicit NULLS FIRST / LAST or an ORDER BY position (which the order's
    /// totality does not depend on).
    fn decorate_order(&mut self, select: &mut Select) {
        for item in &mut select.order_by {
            if self.rng.percent(15) {
                // The default placement (NULL lowest) spelled out, or the other one.
                let nulls_first = !item.desc;
                item.nulls_first = Some(if self.rng.percent(50) {
                    !nulls_first
                } else {
                    nulls_first
                });
            }
            item.by_position = self.rng.percent(15);
        }
    }

    /// Adds LIMIT (and OFFSET) to a query, often when its order is total, sometimes when it
    /// is not (then any rows of the right number are right; see `case::Mode::Window`).
    fn maybe_limit(&mut self, select: &mut Select) {
        let total = !select.order_by.is_empty() && select.total_order(&self.scenario.relations());
        if self.rng.percent(if total { 60 } else { 15 }) {
            let limit = self.rng.below(21) as u64;
            let offset = if self.rng.percent(30) {
                self.rng.below(6) as u64
            } else {
                0
            };
            select.limit = Some((limit, offset));
        }
    }

    fn aggregate(&mut self, table: &Table) -> Select {
        let cols = columns_of(table);
        let mut group_by = Vec::new();
        for _ in 0..self.rng.below(3) {
            let c = self.rng.pick(&cols).clone();
            if !group_by.contains(&c) {
                group_by.push(c);
            }
        }
        let mut items: Vec<Item> = group_by
            .iter()
            .filter(|_| self.rng.percent(75))
            .cloned()
            .map(Item::Col)
            .collect();
        for _ in 0..self.rng.between(1, 3) {
            items.push(self.aggregate_item(&cols));
        }
        self.rng.shuffle(&mut items);
        let filter = if self.rng.percent(80) {
            self.filter(table, self.subqueries())
        } else {
            None
        };
        let having = if !group_by.is_empty() && self.rng.percent(15) {
            Some(self.rng.below(3) as i64)
        } else {
            None
        };
        let order_by = if !group_by.is_empty() && self.rng.percent(50) {
            let mut order: Vec<OrderItem> = group_by
                .iter()
                .map(|c| OrderItem::new(c.clone(), self.rng.percent(40)))
                .collect();
            self.rng.shuffle(&mut order);
            order
        } else {
            Vec::new()
        };
        let mut select = Select {
            from: From::Table(table.name.clone()),
            star: false,
            distinct: false,
            items,
            filter,
            group_by,
            having,
            order_by,
            limit: None,
            hint: None,
        };
        self.decorate_order(&mut select);
        self.maybe_limit(&mut select);
        select.hint = self.hint(table, select.filter.as_ref());
        select
    }

    /// An aggregate over one of `cols`; `sum` and `avg` only over small-domain numbers (see
    /// the module notes).
    fn aggregate_item(&mut self, cols: &[ColRef]) -> Item {
        let col = self.rng.pick(cols).clone();
        let summable = matches!(col.ty, ColType::Int | ColType::Real | ColType::Decimal)
            && self.column(&col).is_some_and(|c| c.domain == Domain::Small);
        let function = match self.rng.below(7) {
            0 => AggFn::CountStar,
            1 => AggFn::Count,
            2 => AggFn::CountDistinct,
            3 => AggFn::Min,
            4 => AggFn::Max,
            5 if summable => AggFn::Sum,
            6 if summable => AggFn::Avg,
            _ => AggFn::Max,
        };
        Item::Agg(function, Some(col))
    }

    /// Two relations (tables or views) joined on columns of one type, and now and then a third
    /// joined to either; None when the first two have no such pair.
    fn join(&mut self) -> Option<Select> {
        let mut relations = self.scenario.relations();
        self.rng.shuffle(&mut relations);
        let (left, right) = (relations.first()?, relations.get(1)?);
        let left_cols = columns_of(left);
        let right_cols = columns_of(right);
        let mut joins = vec![self.join_step(right, &left_cols, &right_cols)?];
        let mut all: Vec<ColRef> = left_cols.iter().chain(&right_cols).cloned().collect();
        if let Some(third) = relations.get(2)
            && self.rng.percent(30)
        {
            let third_cols = columns_of(third);
            if let Some(step) = self.join_step(third, &all, &third_cols) {
                joins.push(step);
                all.extend(third_cols);
            }
        }
        let filter = match self.rng.below(10) {
            0..=3 => Some(self.condition(left, Subqueries::No)),
            4..=7 => Some(self.tree(&all, 2, Subqueries::No)),
            _ => None,
        };
        let aggregate = self.rng.percent(20);
        let star = !aggregate && self.rng.percent(10);
        let mut group_by = Vec::new();
        let items: Vec<Item> = if aggregate {
            let g = self.rng.pick(&all).clone();
            group_by.push(g.clone());
            vec![Item::Col(g), self.aggregate_item(&all)]
        } else if star {
            Vec::new()
        } else {
            let mut chosen = all.clone();
            self.rng.shuffle(&mut chosen);
            chosen.truncate(self.rng.between(1, 4));
            chosen.into_iter().map(Item::Col).collect()
        };
        let output = output_columns(star, &all, &items);
        let order_by = if self.rng.percent(40) {
            output
                .iter()
                .map(|c| OrderItem::new(c.clone(), self.rng.percent(40)))
                .collect()
        } else {
            Vec::new()
        };
        let mut select = Select {
            from: From::Join {
                left: left.name.clone(),
                joins,
            },
            star,
            distinct: false,
            items,
            filter,
            group_by,
            having: None,
            order_by,
            limit: None,
            hint: None,
        };
        self.decorate_order(&mut select);
        self.maybe_limit(&mut select);
        // The tables here are small, so the cost model reads them whole: a hint makes the join
        // probe one side by key where its primary key or an index leads with a join column
        // (salted and DESC keys included), and the answer must not change.
        if self.rng.percent(40) {
            select.hint = Some("LOOKUP_JOIN".to_string());
        }
        Some(select)
    }

    /// `table` joined (inner 70 %, left 30 %) on one or two equalities of its columns
    /// (`own`) with the columns before it (`before`) of the same type; None without such a
    /// pair.
    fn join_step(&mut self, table: &Table, before: &[ColRef], own: &[ColRef]) -> Option<JoinStep> {
        let pairs: Vec<(ColRef, ColRef)> = before
            .iter()
            .flat_map(|l| {
                own.iter()
                    .filter(|r| r.ty == l.ty)
                    .map(|r| (l.clone(), r.clone()))
            })
            .collect();
        if pairs.is_empty() {
            return None;
        }
        let mut on = vec![self.rng.pick(&pairs).clone()];
        if self.rng.percent(20) {
            let second = self.rng.pick(&pairs).clone();
            if !on.contains(&second) {
                on.push(second);
            }
        }
        let kind = if self.rng.percent(70) {
            JoinKind::Inner
        } else {
            JoinKind::Left
        };
        Some(JoinStep {
            table: table.name.clone(),
            kind,
            on,
        })
    }
}

/// A write after the load: a DELETE or UPDATE with a random condition, an INSERT (plain, OR
/// REPLACE or OR IGNORE) whose rows partly collide with stored keys, or an upsert (`ON
/// CONFLICT DO UPDATE`); INSERTs now and then leave columns to their DEFAULT, and any write
/// may end in RETURNING. None when the drawn kind does not apply to the table (an UPDATE of a
/// table with only key columns, an upsert of one without a primary key).
pub fn random_write(
    rng: &mut Rng,
    scenario: &Scenario,
    restrictions: &Restrictions,
) -> Option<Write> {
    let table = rng.pick(&scenario.tables).clone();
    let mut g = Gen {
        rng,
        scenario,
        restrictions,
    };
    let cols = columns_of(&table);
    let mut write = match g.rng.below(4) {
        0 => Write::Delete {
            table: table.name.clone(),
            filter: g.write_filter(&table, &cols),
            returning: None,
        },
        1 => g.update(&table, &cols)?,
        2 => Write::Insert {
            table: table.name.clone(),
            mode: g
                .rng
                .pick(&[
                    InsertMode::Plain,
                    InsertMode::Replace,
                    InsertMode::Replace,
                    InsertMode::Ignore,
                ])
                .clone(),
            rows: data::conflicting_rows(g.rng, &table, scenario.rows_of(&table.name)),
            omitted: data::omitted_columns(g.rng, &table),
            returning: None,
        },
        _ => g.upsert(&table)?,
    };
    if g.rng.percent(35) {
        *write.returning_mut() = Some(g.returning(&table));
    }
    Some(write)
}

/// The parts of writes.
impl Gen<'_> {
    /// An UPDATE setting one or two columns to values they may hold, key columns a third of
    /// the time (see `Write::Update`); None when no column may be set.
    fn update(&mut self, table: &Table, cols: &[ColRef]) -> Option<Write> {
        let keys_too = self.rng.percent(33);
        let settable: Vec<&Column> = table
            .columns
            .iter()
            .filter(|c| keys_too || !table.is_key(&c.name))
            .collect();
        if settable.is_empty() {
            return None;
        }
        let mut sets = Vec::new();
        for _ in 0..self.rng.between(1, 2) {
            let column = *self.rng.pick(&settable);
            if sets.iter().any(|(name, _)| name == &column.name) {
                continue;
            }
            let value = data::random_cell(self.rng, table, column);
            sets.push((column.name.clone(), value));
        }
        Some(Write::Update {
            table: table.name.clone(),
            sets,
            filter: self.write_filter(table, cols),
            returning: None,
        })
    }

    /// An upsert: `INSERT ... ON CONFLICT (<primary key>) DO UPDATE`, its rows partly on
    /// stored keys and never one key twice (see `InsertMode::Update`), setting columns that
    /// are neither in the key nor UNIQUE (see `DoUpdate`). None for a table without a primary
    /// key or without such a column.
    fn upsert(&mut self, table: &Table) -> Option<Write> {
        if table.key.is_empty() {
            return None;
        }
        let settable: Vec<&Column> = table
            .columns
            .iter()
            .filter(|c| !table.is_key(&c.name) && !table.in_unique(&c.name))
            .collect();
        if settable.is_empty() {
            return None;
        }
        let mut take: Vec<String> = settable
            .iter()
            .filter(|_| self.rng.percent(60))
            .map(|c| c.name.clone())
            .collect();
        // Counting up needs small numbers: no overflow, and sums exact in both engines (not
        // DECIMALs, which SQLite adds as doubles: see `DoUpdate::bump`).
        let countable: Vec<&Column> = settable
            .iter()
            .copied()
            .filter(|c| {
                matches!(c.ty, ColType::Int | ColType::Real)
                    && c.domain == Domain::Small
                    && !take.contains(&c.name)
            })
            .collect();
        let bump = if !countable.is_empty() && self.rng.percent(40) {
            Some(self.rng.pick(&countable).name.clone())
        } else {
            None
        };
        if take.is_empty() && bump.is_none() {
            take.push(self.rng.pick(&settable).name.clone());
        }
        let guard = if self.rng.percent(30) {
            Some(SetGuard {
                column: self.rng.pick(&table.columns).name.clone(),
                proposed: self.rng.percent(30),
            })
        } else {
            None
        };
        let existing = self.scenario.rows_of(&table.name);
        let rows = data::conflicting_rows(self.rng, table, existing);
        Some(Write::Insert {
            table: table.name.clone(),
            mode: InsertMode::Update(DoUpdate { take, bump, guard }),
            rows: data::distinct_keys(table, rows),
            omitted: data::omitted_columns(self.rng, table),
            returning: None,
        })
    }

    /// A RETURNING clause for a write to `table`: `*` now and then, else some of its columns
    /// in any order, a few inside `IS [NOT] NULL` or `coalesce` with a value of their type
    /// (no arithmetic, and no `coalesce` of a DECIMAL: see the module notes).
    fn returning(&mut self, table: &Table) -> Returning {
        if self.rng.percent(30) {
            return Returning::Star;
        }
        let mut columns: Vec<&Column> = table.columns.iter().collect();
        self.rng.shuffle(&mut columns);
        columns.truncate(self.rng.between(1, columns.len()));
        let items = columns
            .into_iter()
            .map(|column| {
                let name = column.name.clone();
                match self.rng.below(10) {
                    0 | 1 => ReturnItem::IsNull {
                        column: name,
                        negated: self.rng.percent(50),
                    },
                    2 | 3 if column.ty != ColType::Decimal => ReturnItem::Coalesce {
                        column: name,
                        fallback: data::random_value(self.rng, column),
                    },
                    _ => ReturnItem::Column(name),
                }
            })
            .collect();
        Returning::Items(items)
    }
}

/// The plain columns a query outputs: every column for `SELECT *`, else its column items.
fn output_columns(star: bool, all: &[ColRef], items: &[Item]) -> Vec<ColRef> {
    if star {
        return all.to_vec();
    }
    items
        .iter()
        .filter_map(|i| match i {
            Item::Col(c) => Some(c.clone()),
            Item::Agg(..) => None,
        })
        .collect()
}
