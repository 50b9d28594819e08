//! Conditions on generated columns that a query's conditions on their source columns imply,
//! so that a key or an index led by a generated column answers a query that names only the
//! source: with `rid GENERATED ALWAYS AS (reverse(uid))` leading the key, `uid = 'x'` implies
//! `rid = 'x'` reversed, a point get; with `bucket GENERATED ALWAYS AS (ts % 16)` before `ts`,
//! a range on `ts` implies `bucket IN (-15, ..., 15)`, one range of `ts` per bucket.
//!
//! The implied conditions are added to the scan's (they hold for every stored row, since every
//! write computes the column), only for a generated column that the key or a ready index holds
//! (elsewhere they would only cost a check per row) and that nothing constrains already.

use datafusion::sql::sqlparser::ast::{BinaryOperator, Expr, Value};
use rowdex_catalog::{DataType, TableDef};
use rowdex_codec::Datum;
use rowdex_planner::{CmpOp, Predicate};

use crate::write::constraints::parse_expression;
use crate::write::generated::{Generation, unnested};

/// The most values a generated column of the form `c % n` takes for implied bucket lists:
/// `n` from 2 to this (the values run from `-(n - 1)` to `n - 1`).
const MAX_BUCKET_MODULUS: i64 = 64;

/// The conditions on generated columns that `predicates` (a conjunction over `def`'s columns)
/// imply, given the table's compiled generated columns (None: it has none). Nothing where
/// working one out fails (the query is then answered without it).
pub(crate) fn implied_conditions(
    def: &TableDef,
    generation: Option<&Generation>,
    predicates: &[Predicate],
) -> Vec<Predicate> {
    let Some(generation) = generation else {
        return Vec::new();
    };
    let mut implied = Vec::new();
    for (position, reads) in generation.columns() {
        let constrained = predicates.iter().any(|p| p.columns().contains(&position));
        let [source] = reads else {
            continue;
        };
        if constrained || !is_keyed(def, position) {
            continue;
        }
        let fixed = predicates.iter().find_map(|p| match p {
            Predicate::Compare {
                column,
                op: CmpOp::Eq,
                value,
            } if column == source => Some(vec![value.clone()]),
            Predicate::InList { column, values } if column == source => Some(values.clone()),
            _ => None,
        });
        if let Some(values) = fixed {
            if let Some(condition) = computed_condition(def, generation, position, *source, values)
            {
                implied.push(condition);
            }
            continue;
        }
        let ranged = predicates.iter().any(|p| {
            matches!(p, Predicate::Compare { column, op, .. }
                if column == source && *op != CmpOp::Eq && *op != CmpOp::NotEq)
        });
        if ranged
            && precedes(def, position, *source)
            && let Some(buckets) = bucket_values(def, position)
        {
            implied.push(Predicate::InList {
                column: position,
                values: buckets,
            });
        }
    }
    implied
}

/// `column = f(v)` (an IN list for several values) for the generated column at `column`
/// computed from `source` alone, given the values `source` is fixed to; `column IS NULL` when
/// every value computes to NULL. None when computing fails or the values mix NULL and not.
fn computed_condition(
    def: &TableDef,
    generation: &Generation,
    column: usize,
    source: usize,
    values: Vec<Datum>,
) -> Option<Predicate> {
    let mut rows: Vec<Vec<Datum>> = values
        .into_iter()
        .map(|value| {
            let mut row = vec![Datum::Null; def.columns.len()];
            row[source] = value;
            row
        })
        .collect();
    generation.fill(def, &mut rows).ok()?;
    let mut computed: Vec<Datum> = rows.into_iter().map(|row| row[column].clone()).collect();
    if computed.iter().all(Datum::is_null) {
        return Some(Predicate::IsNull { column });
    }
    if computed.iter().any(Datum::is_null) {
        return None;
    }
    computed.dedup();
    Some(match computed.len() {
        1 => Predicate::Compare {
            column,
            op: CmpOp::Eq,
            value: computed.pop()?,
        },
        _ => Predicate::InList {
            column,
            values: computed,
        },
    })
}

/// Whether the primary key or a ready index holds `column`.
fn is_keyed(def: &TableDef, column: usize) -> bool {
    def.key.iter().any(|k| k.column == column)
        || def
            .indexes
            .iter()
            .any(|index| index.is_ready() && index.columns.iter().any(|k| k.column == column))
}

/// Whether `source` follows `column` directly in the primary key or a ready index: a range
/// on `source` then bounds the rows of each value of `column`.
fn precedes(def: &TableDef, column: usize, source: usize) -> bool {
    let adjacent = |columns: Vec<usize>| {
        columns
            .windows(2)
            .any(|pair| pair[0] == column && pair[1] == source)
    };
    adjacent(def.key.iter().map(|k| k.column).collect())
        || def.indexes.iter().any(|index| {
            index.is_ready() && adjacent(index.columns.iter().map(|k| k.column).collect())
        })
}

/// Every value of an integer generated column `c % n` (a constant `n` from 2 to
/// [`MAX_BUCKET_MODULUS`]): `-(n - 1)` to `n - 1`, since a negative `c` leaves a negative
/// remainder.
fn bucket_values(def: &TableDef, column: usize) -> Option<Vec<Datum>> {
    let def_column = def.columns.get(column)?;
    if def_column.data_type != DataType::Integer {
        return None;
    }
    let expr = parse_expression(def_column.generation.as_deref()?).ok()?;
    let Expr::BinaryOp { op, right, .. } = unnested(&expr) else {
        return None;
    };
    if *op != BinaryOperator::Modulo {
        return None;
    }
    let Expr::Value(value) = unnested(right) else {
        return None;
    };
    let Value::Number(digits, _) = &value.value else {
        return None;
    };
    let modulus: i64 = digits.parse().ok()?;
    if !(2..=MAX_BUCKET_MODULUS).contains(&modulus) {
        return None;
    }
    Some((1 - modulus..modulus).map(Datum::Int).collect())
}
