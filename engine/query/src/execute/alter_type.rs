//! `ALTER TABLE t ALTER [COLUMN] c [SET DATA] TYPE type [USING c | USING c::type]`: the
//! column takes the new type, and every stored row whose value is held differently under it
//! (a NUMERIC of another scale, an integer become text, a key value) is written again, with its
//! index entries, in the ALTER's transaction (the block's, inside one). A value that does not
//! fit the new type fails the statement before anything is written.
//!
//! Conversions follow PostgreSQL's: without USING, only those it makes implicitly or on
//! assignment (numbers between themselves, rounding to the new scale; anything to text; DATE
//! to TIMESTAMP); text to another type needs `USING c::type`, which reads it as a literal of
//! that type. A type whose values are held as they were (a VARCHAR's length, a NUMERIC's
//! precision, INTEGER to BIGINT) rewrites nothing and only checks that every value fits.

use std::collections::HashSet;

use datafusion::sql::sqlparser::ast::{self, Expr};
use rowdex_catalog::{ColumnDef, DataType, TableDef};
use rowdex_codec::{Datum, format_decimal};
use rowdex_store::Transaction;

use crate::error::{Error, Result};
use crate::execute::column_types::parse_type;
use crate::sql::names::ident_name;
use crate::sql::semantics::Semantics;
use crate::time_zone::statement_time_zone;
use crate::values::assign;
use crate::write::rewrite::rewrite_rows;

/// One column's change of type, for its stored rows.
pub(crate) struct Retyped {
    /// The column's position.
    position: usize,
    /// The column as it was.
    before: ColumnDef,
    /// Whether USING asked for the conversion (text to another type needs it).
    explicit: bool,
}

/// Gives the column at `position` the type `data_type`; returns what its stored rows need.
pub(crate) fn set_type(
    def: &mut TableDef,
    position: usize,
    data_type: &ast::DataType,
    using: Option<&Expr>,
    semantics: Semantics,
) -> Result<Retyped> {
    let name = def.columns[position].name.clone();
    let explicit = match using {
        None => false,
        Some(expr) if names_the_column(expr, &name) => true,
        Some(expr) => {
            return Err(Error::Unsupported {
                what: format!(
                    "ALTER COLUMN {name} TYPE ... USING {expr} (USING takes the column or its cast)"
                ),
            });
        }
    };
    // A partial index keeps its condition's constants in the column's encoding.
    if let Some(index) = def.indexes.iter().find(|index| {
        index
            .filter
            .as_ref()
            .is_some_and(|filter| filter.names_column(position))
    }) {
        return Err(Error::Unsupported {
            what: format!(
                "changing the type of column {name}, which the condition of partial index {} tests (drop the index first)",
                index.name
            ),
        });
    }
    let (stored, declared) = parse_type(data_type, semantics)?;
    let before = def.columns[position].clone();
    let column = &mut def.columns[position];
    column.data_type = stored;
    column.declared = declared;
    Ok(Retyped {
        position,
        before,
        explicit,
    })
}

/// `c`, `c::type` or `CAST(c AS type)`.
fn names_the_column(expr: &Expr, column: &str) -> bool {
    match expr {
        Expr::Identifier(ident) => ident_name(ident) == column,
        Expr::Nested(inner) | Expr::Cast { expr: inner, .. } => names_the_column(inner, column),
        _ => false,
    }
}

/// Converts the stored rows of `before` (the table as it was) for `after` (the same columns,
/// `retyped` given new types) inside `tx`: every row is read and its values converted (a value
/// that does not fit fails the statement), and a row whose stored form changes is deleted and
/// written again with its index entries. A key that converts to another row's key, or a
/// unique index's values that do, fail it as well.
pub(crate) async fn convert_rows(
    tx: &mut dyn Transaction,
    before: &TableDef,
    after: &TableDef,
    retyped: &[Retyped],
    now: i64,
) -> Result<()> {
    let positions: Vec<usize> = retyped.iter().map(|r| r.position).collect();
    let rekeys = after.key.iter().any(|k| positions.contains(&k.column));
    let unique: Vec<_> = after
        .indexes
        .iter()
        .filter(|i| i.unique && i.columns.iter().any(|c| positions.contains(&c.column)))
        .collect();
    let mut keys: HashSet<Vec<u8>> = HashSet::new();
    let mut unique_values: Vec<HashSet<Vec<u8>>> = vec![HashSet::new(); unique.len()];
    rewrite_rows(tx, before, after, now, |row| {
        let mut converted = row.to_vec();
        for change in retyped {
            let value = std::mem::replace(&mut converted[change.position], Datum::Null);
            converted[change.position] = convert(after, change, value)?;
        }
        if rekeys && !keys.insert(after.row_key_of(&converted)) {
            return Err(Error::DuplicateKey {
                table: after.name.clone(),
                key: key_text(after, &converted),
            });
        }
        for (index, seen) in unique.iter().zip(unique_values.iter_mut()) {
            if let Some(prefix) = rowdex_indexer::layout::unique_prefix(index, &converted)
                && !seen.insert(prefix)
            {
                let values: Vec<String> = index
                    .columns
                    .iter()
                    .map(|c| value_text(after, c.column, &converted[c.column]))
                    .collect();
                return Err(Error::UniqueViolation {
                    index: index.name.clone(),
                    table: after.name.clone(),
                    value: format!("({})", values.join(", ")),
                });
            }
        }
        if converted == row {
            return Ok(None);
        }
        if before.ttl_seconds.is_some() || before.versions > 1 {
            return Err(Error::Unsupported {
                what: format!(
                    "ALTER COLUMN ... TYPE that rewrites the rows of table {}, which has a TTL or kept versions",
                    before.name
                ),
            });
        }
        Ok(Some(converted))
    })
    .await
}

/// A row's key values, for a message.
fn key_text(def: &TableDef, row: &[Datum]) -> String {
    let values: Vec<String> = def
        .key
        .iter()
        .map(|k| value_text(def, k.column, &row[k.column]))
        .collect();
    format!("({})", values.join(", "))
}

/// A value of the column at `position`, for a message (a NUMERIC at its scale).
fn value_text(def: &TableDef, position: usize, value: &Datum) -> String {
    match (&def.columns[position].data_type, value) {
        (DataType::Decimal { scale, .. }, Datum::Decimal(units)) => format_decimal(*units, *scale),
        _ => value.to_string(),
    }
}

/// `value` of the column as it was, as a value of its new type.
fn convert(after: &TableDef, change: &Retyped, value: Datum) -> Result<Datum> {
    let column = &after.columns[change.position];
    let value = match (&change.before.data_type, value, &column.data_type) {
        (_, Datum::Null, _) => Datum::Null,
        // A NUMERIC rounds to its new scale (half away from zero), or to an integer.
        (DataType::Decimal { scale: from, .. }, Datum::Decimal(units), to) => match to {
            DataType::Decimal { scale: to, .. } => {
                rescale(units, *from, *to)
                    .map(Datum::Decimal)
                    .ok_or_else(|| out_of_range(after, column, &format_decimal(units, *from)))?
            }
            DataType::Integer => {
                let whole = rescale(units, *from, 0)
                    .and_then(|v| i64::try_from(v).ok())
                    .ok_or_else(|| out_of_range(after, column, &format_decimal(units, *from)))?;
                Datum::Int(whole)
            }
            DataType::Float => Datum::Float(units as f64 / 10f64.powi(i32::from(*from))),
            DataType::Text { .. } => Datum::Text(format_decimal(units, *from)),
            _ => Datum::Decimal(units),
        },
        // A float rounds to the nearest integer, as PostgreSQL's float-to-int cast.
        (DataType::Float, Datum::Float(v), DataType::Integer) if v.is_finite() => {
            Datum::Float(v.round())
        }
        (DataType::Date, Datum::Date(days), DataType::Text { .. }) => {
            Datum::Text(rowdex_codec::format_date(days))
        }
        (DataType::Timestamp, Datum::Timestamp(micros), DataType::Text { .. }) => {
            Datum::Text(rowdex_codec::format_timestamp(micros))
        }
        (DataType::TimestampTz, Datum::Timestamp(micros), DataType::Text { .. }) => {
            Datum::Text(statement_time_zone().format_timestamptz(micros))
        }
        // An instant as the session's wall clock shows it, and the other way.
        (DataType::TimestampTz, Datum::Timestamp(micros), DataType::Timestamp) => {
            let offset = statement_time_zone().offset_at(micros);
            Datum::Timestamp(micros.saturating_add(i64::from(offset) * 1_000_000))
        }
        (DataType::Timestamp, Datum::Timestamp(micros), DataType::TimestampTz) => {
            match statement_time_zone().utc_of_local(micros) {
                Some(instant) => Datum::Timestamp(instant),
                None => Datum::Timestamp(micros),
            }
        }
        (DataType::Text { .. }, Datum::Text(_), to)
            if !change.explicit
                && !matches!(to, DataType::Text { .. } | DataType::Bytes { .. }) =>
        {
            return Err(Error::CannotCastColumn {
                table: after.name.clone(),
                column: column.name.clone(),
                to: column.data_type.to_string(),
            });
        }
        (_, value, _) => value,
    };
    assign(after, column, value)
}

/// `units` at scale `from` as units at scale `to`, rounded half away from zero.
fn rescale(units: i128, from: i8, to: i8) -> Option<i128> {
    let shift = i32::from(to) - i32::from(from);
    let factor = 10i128.checked_pow(shift.unsigned_abs())?;
    if shift >= 0 {
        return units.checked_mul(factor);
    }
    let (quotient, remainder) = (units / factor, units % factor);
    let round = remainder.unsigned_abs() * 2 >= factor.unsigned_abs();
    Some(match (round, units < 0) {
        (false, _) => quotient,
        (true, false) => quotient + 1,
        (true, true) => quotient - 1,
    })
}

fn out_of_range(table: &TableDef, column: &ColumnDef, value: &str) -> Error {
    Error::OutOfRange {
        table: table.name.clone(),
        column: column.name.clone(),
        expected: column.data_type.to_string(),
        value: value.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::rescale;

    #[test]
    fn rescaling_rounds_half_away_from_zero() {
        assert_eq!(rescale(1050, 2, 4), Some(105_000));
        assert_eq!(rescale(1050, 2, 1), Some(105));
        assert_eq!(rescale(1055, 2, 1), Some(106));
        assert_eq!(rescale(-1055, 2, 1), Some(-106));
        assert_eq!(rescale(-1054, 2, 1), Some(-105));
        assert_eq!(rescale(149, 2, 0), Some(1));
        assert_eq!(rescale(150, 2, 0), Some(2));
        assert_eq!(rescale(i128::MAX, 0, 2), None);
    }
}
