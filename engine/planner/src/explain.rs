//! EXPLAIN's text for a scan plan: the `Display` of [`ScanPlan`], shared by the native
//! executor and the DataFusion scan node (`RowdexScan: ...`), with the key bounds decoded back
//! into values and the planner's estimate.

use std::fmt;
use std::ops::Bound;

use rowdex_catalog::{IndexDef, KeyColumn, TableDef};
use rowdex_codec::Datum;
use rowdex_store::Direction;

use crate::path::{AccessPath, IndexInput, KeyBound, ScanPlan, UnionArm};
use crate::predicate::{Predicate, value_text, write_row_compare};

/// Writes `[a = 1, b > 2; a = 3, b > 2]`: fixed tuples and the bound, with column names.
fn write_ranges(
    f: &mut fmt::Formatter<'_>,
    table: &TableDef,
    columns: &[KeyColumn],
    prefixes: &[Vec<Datum>],
    bound: &KeyBound,
) -> fmt::Result {
    let key_name = |i: usize| {
        columns
            .get(i)
            .and_then(|k| table.columns.get(k.column))
            .map_or("?", |c| c.label())
    };
    if bound == &KeyBound::All && prefixes.iter().all(Vec::is_empty) {
        return f.write_str("[all]");
    }
    f.write_str("[")?;
    for (i, prefix) in prefixes.iter().enumerate() {
        f.write_str(if i > 0 { "; " } else { "" })?;
        write_tuple(f, table, columns, prefix)?;
        let next = key_name(prefix.len());
        let sep = if prefix.is_empty() { "" } else { ", " };
        match bound {
            KeyBound::All => {}
            KeyBound::TextPrefix(p) => write!(f, "{sep}{next} LIKE '{}%'", p.replace('\'', "''"))?,
            KeyBound::Range { lower, upper } => {
                f.write_str(sep)?;
                let column = columns.get(prefix.len()).map_or(usize::MAX, |k| k.column);
                let text = |v: &Datum| value_text(table, column, v);
                write_bounds(
                    f,
                    next,
                    &lower.as_ref().map(text),
                    &upper.as_ref().map(text),
                )?;
            }
            KeyBound::Row { op, values } => {
                let names: Vec<&str> = (0..values.len())
                    .map(|i| key_name(prefix.len() + i))
                    .collect();
                f.write_str(sep)?;
                write_row_compare(f, &names, *op, values)?;
            }
        }
    }
    f.write_str("]")
}

fn write_tuple(
    f: &mut fmt::Formatter<'_>,
    table: &TableDef,
    columns: &[KeyColumn],
    values: &[Datum],
) -> fmt::Result {
    for (i, value) in values.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        let column = columns.get(i).map_or(usize::MAX, |k| k.column);
        let name = table.columns.get(column).map_or("?", |c| c.label());
        if value.is_null() {
            write!(f, "{name} IS NULL")?;
        } else {
            write!(f, "{name} = {}", value_text(table, column, value))?;
        }
    }
    Ok(())
}

fn write_index_input(
    f: &mut fmt::Formatter<'_>,
    table: &TableDef,
    input: &IndexInput,
) -> fmt::Result {
    let Some(index) = table.indexes.get(input.index) else {
        return f.write_str("?");
    };
    write!(f, "{} ", index.name)?;
    write_ranges(
        f,
        table,
        &table.entry_key_columns(index),
        &input.prefixes,
        &input.bound,
    )
}

impl fmt::Display for ScanPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let table = &self.table;
        let tuple = |f: &mut fmt::Formatter<'_>, values: &[Datum]| -> fmt::Result {
            write_tuple(f, table, &table.key, values)
        };
        write!(f, "{} {}", self.path.name(), table.name)?;
        match &self.path {
            AccessPath::PointGet { key } => {
                f.write_str(" key (")?;
                tuple(f, key)?;
                f.write_str(")")?;
            }
            AccessPath::MultiGet { keys } => {
                write!(f, " {} keys [", keys.len())?;
                for (i, key) in keys.iter().enumerate() {
                    f.write_str(if i > 0 { ", (" } else { "(" })?;
                    tuple(f, key)?;
                    f.write_str(")")?;
                }
                f.write_str("]")?;
            }
            AccessPath::RangeScan { prefixes, bound } => {
                f.write_str(" range ")?;
                write_ranges(f, table, &table.key, prefixes, bound)?;
                if self.merged {
                    f.write_str(" merged")?;
                }
            }
            AccessPath::IndexScan { input, covering } => {
                f.write_str(" using ")?;
                write_index_input(f, table, input)?;
                if *covering {
                    f.write_str(" covering")?;
                }
            }
            AccessPath::IndexIntersection {
                inputs,
                checked,
                covering,
            } => {
                f.write_str(" using ")?;
                for (i, input) in inputs.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" AND ")?;
                    }
                    write_index_input(f, table, input)?;
                }
                for (i, input) in checked.iter().enumerate() {
                    f.write_str(if i == 0 { " checking " } else { " AND " })?;
                    write_index_input(f, table, input)?;
                }
                if *covering {
                    f.write_str(" covering")?;
                }
            }
            AccessPath::IndexUnion {
                arms,
                also,
                covering,
                ..
            } => {
                f.write_str(" using ")?;
                if !also.is_empty() {
                    f.write_str("(")?;
                }
                for (i, arm) in arms.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" OR ")?;
                    }
                    match arm {
                        UnionArm::Index(input) => write_index_input(f, table, input)?,
                        UnionArm::Key { prefixes, bound } => {
                            f.write_str("key ")?;
                            write_ranges(f, table, &table.key, prefixes, bound)?;
                        }
                    }
                }
                if !also.is_empty() {
                    f.write_str(")")?;
                }
                for input in also {
                    f.write_str(" AND ")?;
                    write_index_input(f, table, input)?;
                }
                if *covering {
                    f.write_str(" covering")?;
                }
            }
            AccessPath::FullScan => {}
        }
        if self.direction == Direction::Reverse {
            f.write_str(" reverse")?;
        }
        if table.is_salted() {
            let visited = self.buckets();
            if visited.len() == usize::from(table.salt_buckets) {
                write!(f, " buckets={}", table.salt_buckets)?;
            } else {
                // The prefixes fix the salt columns: only their buckets are read.
                let list: Vec<String> = visited.iter().map(u8::to_string).collect();
                write!(f, " buckets=[{}] of {}", list.join(","), table.salt_buckets)?;
            }
        }
        if let AccessPath::IndexScan { input, .. } = &self.path
            && let Some(index) = table.indexes.get(input.index)
            && index.is_salted()
        {
            let mut visited: Vec<u8> = input
                .ranges(table)
                .iter()
                .filter_map(|(range, _)| range.start.get(IndexDef::PREFIX_LEN).copied())
                .collect();
            visited.sort_unstable();
            visited.dedup();
            if visited.len() == usize::from(index.salt_buckets) {
                write!(f, " index buckets={}", index.salt_buckets)?;
            } else {
                let list: Vec<String> = visited.iter().map(u8::to_string).collect();
                write!(
                    f,
                    " index buckets=[{}] of {}",
                    list.join(","),
                    index.salt_buckets
                )?;
            }
        }
        if table.has_families()
            && !matches!(
                &self.path,
                AccessPath::IndexScan { covering: true, .. }
                    | AccessPath::IndexIntersection { covering: true, .. }
                    | AccessPath::IndexUnion { covering: true, .. }
            )
        {
            let names: Vec<&str> = self
                .families_read()
                .into_iter()
                .map(|family| table.family_name(family))
                .collect();
            write!(f, " families=[{}]", names.join(", "))?;
        }
        if self.offset > 0 {
            write!(f, " offset={}", self.offset)?;
        }
        if let Some(limit) = self.limit {
            write!(f, " limit={limit}")?;
        }
        if !self.residual.is_empty() {
            f.write_str(" residual=(")?;
            for (i, predicate) in self.residual.iter().enumerate() {
                if i > 0 {
                    f.write_str(" AND ")?;
                }
                if matches!(predicate, Predicate::Or { .. }) && self.residual.len() > 1 {
                    write!(f, "({})", predicate.display(table))?;
                } else {
                    write!(f, "{}", predicate.display(table))?;
                }
            }
            f.write_str(")")?;
        }
        if let Some(estimate) = &self.estimate {
            write!(
                f,
                " (est. rows={} entries={} cost={:.0}us)",
                estimate.rows, estimate.entries, estimate.cost_us
            )?;
        }
        Ok(())
    }
}

/// Writes `a >= 1 AND a < 5`; the bounds are already rendered as literals.
fn write_bounds(
    f: &mut fmt::Formatter<'_>,
    name: &str,
    lower: &Bound<String>,
    upper: &Bound<String>,
) -> fmt::Result {
    let lower_text = match lower {
        Bound::Included(v) => Some(format!("{name} >= {v}")),
        Bound::Excluded(v) => Some(format!("{name} > {v}")),
        Bound::Unbounded => None,
    };
    let upper_text = match upper {
        Bound::Included(v) => Some(format!("{name} <= {v}")),
        Bound::Excluded(v) => Some(format!("{name} < {v}")),
        Bound::Unbounded => None,
    };
    match (lower_text, upper_text) {
        (Some(l), Some(u)) => write!(f, "{l} AND {u}"),
        (Some(one), None) | (None, Some(one)) => f.write_str(&one),
        (None, None) => Ok(()),
    }
}
