//! Shrinking a failing case: the faster store first, then dropping writes (or their RETURNING,
//! left-out columns and parts of a DO UPDATE), indexes, a table, rows (in halves, quarters,
//! ... single rows), parts of the query (conditions, select items, ORDER BY, LIMIT) and of the
//! schema (salt, DESC, DEFAULTs, unused columns), keeping each step only while the case still
//! fails the same way. What is left is small enough to read as a `.slt`.

use std::collections::BTreeSet;

use super::case::{Case, Failure, Verdict};
use super::data::{DoUpdate, InsertMode, Returning, Write};
use super::query::{Expr, From, Item, Select};
use super::value::Value;
use crate::{Backend, Error};

/// A shrunk case and how it fails.
pub struct Shrunk {
    pub case: Case,
    pub expected: Vec<Vec<Value>>,
    pub failure: Failure,
    /// Checks run while shrinking.
    pub checks: usize,
}

struct Shrinker {
    best: Case,
    expected: Vec<Vec<Value>>,
    failure: Failure,
    checks: usize,
    budget: usize,
}

impl Shrinker {
    /// Adopts `candidate` if it still fails like the original. False once the budget is spent.
    async fn try_adopt(&mut self, candidate: Case) -> Result<bool, Error> {
        if self.checks >= self.budget {
            return Ok(false);
        }
        self.checks += 1;
        if let Verdict::Fail { expected, failure } = candidate.check().await?
            && failure.same_kind(&self.failure)
        {
            self.best = candidate;
            self.expected = expected;
            self.failure = failure;
            return Ok(true);
        }
        Ok(false)
    }

    /// Tries each candidate in turn, adopting the first that still fails. True if one did.
    async fn first_of(&mut self, candidates: Vec<Case>) -> Result<bool, Error> {
        for candidate in candidates {
            if self.try_adopt(candidate).await? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Drops chunks of each table's rows, halving the chunk size down to single rows.
    async fn rows(&mut self) -> Result<bool, Error> {
        let mut progress = false;
        for t in 0..self.best.scenario.rows.len() {
            let mut chunk = self.best.scenario.rows[t].rows.len().div_ceil(2);
            while chunk >= 1 {
                let mut start = 0;
                while start < self.best.scenario.rows[t].rows.len() {
                    let mut candidate = self.best.clone();
                    let rows = &mut candidate.scenario.rows[t].rows;
                    let end = (start + chunk).min(rows.len());
                    rows.drain(start..end);
                    if self.try_adopt(candidate).await? {
                        progress = true;
                    } else {
                        start += chunk;
                    }
                    if self.checks >= self.budget {
                        return Ok(progress);
                    }
                }
                if chunk == 1 {
                    break;
                }
                chunk = chunk.div_ceil(2);
            }
        }
        Ok(progress)
    }
}

/// Shrinks `case`, which fails with `failure`, in at most `budget` checks.
pub async fn shrink(
    case: Case,
    expected: Vec<Vec<Value>>,
    failure: Failure,
    budget: usize,
) -> Result<Shrunk, Error> {
    let mut s = Shrinker {
        best: case,
        expected,
        failure,
        checks: 0,
        budget,
    };
    // The memory store sets up faster; most bugs are not the store's.
    if s.best.config.backend != Backend::Memory {
        let mut candidate = s.best.clone();
        candidate.config.backend = Backend::Memory;
        s.try_adopt(candidate).await?;
    }
    loop {
        let mut progress = false;
        progress |= s.first_of(structure_candidates(&s.best)).await?;
        progress |= s.rows().await?;
        while s.first_of(query_candidates(&s.best)).await? {
            progress = true;
        }
        while s.first_of(schema_candidates(&s.best)).await? {
            progress = true;
        }
        if !progress || s.checks >= s.budget {
            break;
        }
    }
    Ok(Shrunk {
        case: s.best,
        expected: s.expected,
        failure: s.failure,
        checks: s.checks,
    })
}

/// Cases without one write (or with a simpler one), one index, or the table the query does
/// not read.
fn structure_candidates(case: &Case) -> Vec<Case> {
    let mut out = Vec::new();
    let scenario = &case.scenario;
    for i in 0..scenario.writes.len() {
        let mut c = case.clone();
        c.scenario.writes.remove(i);
        out.push(c);
    }
    for (i, write) in scenario.writes.iter().enumerate() {
        for variant in write_variants(write) {
            let mut c = case.clone();
            c.scenario.writes[i] = variant;
            out.push(c);
        }
    }
    for (i, write) in scenario.writes.iter().enumerate() {
        if let Write::Insert { rows, .. } = write
            && rows.len() > 1
        {
            for r in 0..rows.len() {
                let mut c = case.clone();
                if let Write::Insert { rows, .. } = &mut c.scenario.writes[i] {
                    rows.remove(r);
                }
                out.push(c);
            }
        }
    }
    if !scenario.indexes.is_empty() {
        let mut c = case.clone();
        c.scenario.indexes.clear();
        out.push(c);
    }
    for i in 0..scenario.indexes.len() {
        let mut c = case.clone();
        c.scenario.indexes.remove(i);
        out.push(c);
    }
    let read = case.query.tables();
    for (i, view) in scenario.views.iter().enumerate() {
        if !read.contains(&view.relation.name) {
            let mut c = case.clone();
            c.scenario.views.remove(i);
            out.push(c);
        }
        if let Some(filter) = &view.filter {
            let mut c = case.clone();
            c.scenario.views[i].filter = None;
            out.push(c);
            for variant in expr_variants(filter) {
                let mut c = case.clone();
                c.scenario.views[i].filter = Some(variant);
                out.push(c);
            }
        }
    }
    for table in &scenario.tables {
        let written = scenario.writes.iter().any(|w| w.table() == table.name);
        let viewed = scenario.views.iter().any(|v| v.base == table.name);
        if !read.contains(&table.name) && !written && !viewed {
            let mut c = case.clone();
            c.scenario.tables.retain(|t| t.name != table.name);
            c.scenario.rows.retain(|r| r.table != table.name);
            c.scenario.indexes.retain(|i| i.table != table.name);
            out.push(c);
        }
    }
    out
}

/// One-step simplifications of a write: without its RETURNING clause or one item of it, with
/// no column left to its DEFAULT, or an upsert's DO UPDATE simplified.
fn write_variants(write: &Write) -> Vec<Write> {
    let mut out = Vec::new();
    if let Some(returning) = write.returning() {
        let mut w = write.clone();
        *w.returning_mut() = None;
        out.push(w);
        if let Returning::Items(items) = returning
            && items.len() > 1
        {
            for i in 0..items.len() {
                let mut fewer = items.clone();
                fewer.remove(i);
                let mut w = write.clone();
                *w.returning_mut() = Some(Returning::Items(fewer));
                out.push(w);
            }
        }
    }
    if let Write::Insert { omitted, mode, .. } = write {
        if !omitted.is_empty() {
            let mut w = write.clone();
            if let Write::Insert { omitted, .. } = &mut w {
                omitted.clear();
            }
            out.push(w);
        }
        if let InsertMode::Update(update) = mode {
            for variant in do_update_variants(update) {
                let mut w = write.clone();
                if let Write::Insert { mode, .. } = &mut w {
                    *mode = InsertMode::Update(variant);
                }
                out.push(w);
            }
        }
    }
    out
}

/// One-step simplifications of a DO UPDATE that still set a column: without its condition,
/// without its counted-up column, or without one of the columns it takes.
fn do_update_variants(update: &DoUpdate) -> Vec<DoUpdate> {
    let mut out = Vec::new();
    if update.guard.is_some() {
        out.push(DoUpdate {
            guard: None,
            ..update.clone()
        });
    }
    if update.bump.is_some() && !update.take.is_empty() {
        out.push(DoUpdate {
            bump: None,
            ..update.clone()
        });
    }
    if update.take.len() + usize::from(update.bump.is_some()) > 1 {
        for i in 0..update.take.len() {
            let mut fewer = update.clone();
            fewer.take.remove(i);
            out.push(fewer);
        }
    }
    out
}

/// One-step simplifications of the query.
fn query_candidates(case: &Case) -> Vec<Case> {
    let q = &case.query;
    let tables = &case.scenario.relations();
    let mut selects: Vec<Select> = Vec::new();
    if let Some(filter) = &q.filter {
        let mut s = q.clone();
        s.filter = None;
        selects.push(s);
        for variant in expr_variants(filter) {
            let mut s = q.clone();
            s.filter = Some(variant);
            selects.push(s);
        }
    }
    if q.limit.is_some() {
        let mut s = q.clone();
        s.limit = None;
        selects.push(s);
    }
    if let Some((limit, offset)) = q.limit
        && offset > 0
    {
        let mut s = q.clone();
        s.limit = Some((limit, 0));
        selects.push(s);
    }
    if !q.order_by.is_empty() {
        let mut s = q.clone();
        s.order_by.clear();
        selects.push(s);
        for i in 0..q.order_by.len() {
            let mut s = q.clone();
            s.order_by.remove(i);
            selects.push(s);
        }
    }
    if q.hint.is_some() {
        let mut s = q.clone();
        s.hint = None;
        selects.push(s);
    }
    if q.distinct {
        let mut s = q.clone();
        s.distinct = false;
        selects.push(s);
    }
    if q.having.is_some() {
        let mut s = q.clone();
        s.having = None;
        selects.push(s);
    }
    if q.star {
        let mut s = q.clone();
        s.star = false;
        s.items = q.star_columns(tables).into_iter().map(Item::Col).collect();
        selects.push(s);
    }
    if q.items.len() > 1 {
        for i in 0..q.items.len() {
            let mut s = q.clone();
            s.items.remove(i);
            // DISTINCT may order only by selected columns.
            if s.distinct
                && let Item::Col(c) = &q.items[i]
            {
                s.order_by.retain(|o| &o.col != c);
            }
            selects.push(s);
        }
    }
    for i in 0..q.group_by.len() {
        let mut s = q.clone();
        let gone = s.group_by.remove(i);
        s.items.retain(|item| item != &Item::Col(gone.clone()));
        s.order_by.retain(|o| o.col != gone);
        if s.items.is_empty() {
            continue;
        }
        selects.push(s);
    }
    if let From::Join { joins, .. } = &q.from {
        for (at, step) in joins.iter().enumerate() {
            for i in (0..step.on.len()).filter(|_| step.on.len() > 1) {
                let mut s = q.clone();
                if let From::Join { joins, .. } = &mut s.from
                    && let Some(step) = joins.get_mut(at)
                {
                    step.on.remove(i);
                }
                selects.push(s);
            }
        }
    }
    selects
        .into_iter()
        .map(|query| Case {
            scenario: case.scenario.clone(),
            query,
            config: case.config,
        })
        .collect()
}

/// One-step simplifications of a condition: a subtree in place of its parent, one operand
/// of AND/OR less, one IN value less, a subquery without its own condition.
fn expr_variants(e: &Expr) -> Vec<Expr> {
    let mut out = Vec::new();
    match e {
        Expr::And(items) | Expr::Or(items) => {
            let rebuild = |items: Vec<Expr>| match e {
                Expr::And(_) => Expr::And(items),
                _ => Expr::Or(items),
            };
            out.extend(items.iter().cloned());
            if items.len() > 2 {
                for i in 0..items.len() {
                    let mut fewer = items.clone();
                    fewer.remove(i);
                    out.push(rebuild(fewer));
                }
            }
            for (i, item) in items.iter().enumerate() {
                for variant in expr_variants(item) {
                    let mut changed = items.clone();
                    changed[i] = variant;
                    out.push(rebuild(changed));
                }
            }
        }
        Expr::Not(inner) => {
            out.push((**inner).clone());
            out.extend(
                expr_variants(inner)
                    .into_iter()
                    .map(|v| Expr::Not(Box::new(v))),
            );
        }
        Expr::InList {
            col,
            values,
            negated,
        } if values.len() > 1 => {
            for i in 0..values.len() {
                let mut fewer = values.clone();
                fewer.remove(i);
                out.push(Expr::InList {
                    col: col.clone(),
                    values: fewer,
                    negated: *negated,
                });
            }
        }
        Expr::RowCmp { cols, op, values } if cols.len() > 2 => {
            out.push(Expr::RowCmp {
                cols: cols[..cols.len() - 1].to_vec(),
                op: *op,
                values: values[..values.len() - 1].to_vec(),
            });
        }
        Expr::InSubquery { col, sub, negated } => {
            if let Some(filter) = &sub.filter {
                let mut bare = sub.clone();
                bare.filter = None;
                out.push(Expr::InSubquery {
                    col: col.clone(),
                    sub: bare,
                    negated: *negated,
                });
                for variant in expr_variants(filter) {
                    let mut changed = sub.clone();
                    changed.filter = Some(Box::new(variant));
                    out.push(Expr::InSubquery {
                        col: col.clone(),
                        sub: changed,
                        negated: *negated,
                    });
                }
            }
        }
        Expr::Exists {
            outer,
            inner,
            sub,
            negated,
        } => {
            if let Some(filter) = &sub.filter {
                let mut bare = sub.clone();
                bare.filter = None;
                out.push(Expr::Exists {
                    outer: outer.clone(),
                    inner: inner.clone(),
                    sub: bare,
                    negated: *negated,
                });
                for variant in expr_variants(filter) {
                    let mut changed = sub.clone();
                    changed.filter = Some(Box::new(variant));
                    out.push(Expr::Exists {
                        outer: outer.clone(),
                        inner: inner.clone(),
                        sub: changed,
                        negated: *negated,
                    });
                }
            }
        }
        _ => {}
    }
    out
}

/// One-step simplifications of the schema: no salt, ASC key and index columns, the key
/// written out of line, no column families, fewer INCLUDE or index columns, no unused non-key column.
fn schema_candidates(case: &Case) -> Vec<Case> {
    let mut out = Vec::new();
    let scenario = &case.scenario;
    for (t, table) in scenario.tables.iter().enumerate() {
        if table.salt.is_some() {
            let mut c = case.clone();
            c.scenario.tables[t].salt = None;
            c.scenario.tables[t].salt_on.clear();
            out.push(c);
        }
        if !table.salt_on.is_empty() {
            let mut c = case.clone();
            c.scenario.tables[t].salt_on.clear();
            out.push(c);
        }
        for (k, part) in table.key.iter().enumerate() {
            if part.desc {
                let mut c = case.clone();
                c.scenario.tables[t].key[k].desc = false;
                out.push(c);
            }
        }
        for u in 0..table.uniques.len() {
            let mut c = case.clone();
            c.scenario.tables[t].uniques.remove(u);
            out.push(c);
        }
        if table.inline_key {
            let mut c = case.clone();
            c.scenario.tables[t].inline_key = false;
            out.push(c);
        }
        if !table.families.is_empty() {
            let mut c = case.clone();
            c.scenario.tables[t].families.clear();
            out.push(c);
        }
        // Only nullable columns lose their DEFAULT: an INSERT leaving out a NOT NULL column
        // without one fails in rowdex where SQLite's OR IGNORE skips the row.
        for (k, column) in table.columns.iter().enumerate() {
            if column.default.is_some() && !column.not_null {
                let mut c = case.clone();
                c.scenario.tables[t].columns[k].default = None;
                out.push(c);
            }
        }
    }
    for (i, index) in scenario.indexes.iter().enumerate() {
        if !index.include.is_empty() {
            let mut c = case.clone();
            c.scenario.indexes[i].include.clear();
            out.push(c);
        }
        if index.columns.len() > 1 {
            let mut c = case.clone();
            c.scenario.indexes[i].columns.pop();
            out.push(c);
        }
        for (k, part) in index.columns.iter().enumerate() {
            if part.desc {
                let mut c = case.clone();
                c.scenario.indexes[i].columns[k].desc = false;
                out.push(c);
            }
        }
        if index.unique {
            let mut c = case.clone();
            c.scenario.indexes[i].unique = false;
            out.push(c);
        }
        if index.expression.is_some() {
            let mut c = case.clone();
            c.scenario.indexes[i].expression = None;
            out.push(c);
        }
    }
    let read: BTreeSet<(String, String)> = case.query.columns(&scenario.relations());
    for table in &scenario.tables {
        for (position, column) in table.columns.iter().enumerate() {
            let used = table.is_key(&column.name)
                || table.in_unique(&column.name)
                || read.contains(&(table.name.clone(), column.name.clone()))
                || scenario
                    .indexes
                    .iter()
                    .any(|i| i.table == table.name && i.mentions(&column.name))
                || scenario
                    .writes
                    .iter()
                    .any(|w| w.mentions(&table.name, &column.name))
                || scenario
                    .views
                    .iter()
                    .any(|v| v.mentions(&table.name, &column.name));
            if used {
                continue;
            }
            let mut c = case.clone();
            remove_column(&mut c, &table.name, position);
            out.push(c);
        }
    }
    out
}

/// Removes a column nothing refers to from a table, from every row written to it, and from
/// the columns INSERTs leave out.
fn remove_column(case: &mut Case, table: &str, position: usize) {
    let scenario = &mut case.scenario;
    let removed: Option<String> = scenario
        .tables
        .iter_mut()
        .find(|t| t.name == table)
        .filter(|t| position < t.columns.len())
        .map(|t| t.columns.remove(position).name);
    for rows in scenario.rows.iter_mut().filter(|r| r.table == table) {
        for row in &mut rows.rows {
            if position < row.len() {
                row.remove(position);
            }
        }
    }
    for write in &mut scenario.writes {
        if let Write::Insert {
            table: t,
            rows,
            omitted,
            ..
        } = write
            && t == table
        {
            for row in rows {
                if position < row.len() {
                    row.remove(position);
                }
            }
            omitted.retain(|c| removed.as_ref() != Some(c));
        }
    }
}
