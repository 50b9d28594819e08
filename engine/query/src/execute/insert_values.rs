//! The VALUES list of an INSERT, before its rows are evaluated: the DEFAULT keyword replaced by
//! its column's DEFAULT, values for GENERATED ALWAYS identity columns refused, number literals
//! bound for DECIMAL columns read exactly from their text, and `TIMESTAMP '...'` literals for
//! TIMESTAMPTZ columns read in the session's zone.

use datafusion::sql::sqlparser::ast;
use rowdex_catalog::{DataType, TableDef};
use rowdex_codec::Datum;

use crate::error::{Error, Result};
use crate::values::decimal_from_text;
use crate::write::constraints::default_expression;

/// Number literals bound for DECIMAL columns, read from their text exactly (`1.005` into
/// DECIMAL(10, 2) is 1.01, and a 27-digit integer keeps every digit) rather than through the
/// float or integer the SQLite rule reads them as.
pub(crate) fn exact_decimal_literals(
    def: &TableDef,
    targets: &[usize],
    source: &ast::Query,
    rows: &mut [Vec<Datum>],
) {
    let ast::SetExpr::Values(values) = source.body.as_ref() else {
        return;
    };
    for (row, literals) in rows.iter_mut().zip(&values.rows) {
        for ((value, literal), column) in row.iter_mut().zip(literals.iter()).zip(targets) {
            let scale = match def.columns[*column].data_type {
                DataType::Decimal { scale, .. } => scale,
                // `TIMESTAMP '...'` for an instant is a time of the session's wall clock: its
                // text, which `values::assign` reads in the statement's zone.
                DataType::TimestampTz => {
                    if let ast::Expr::TypedString(typed) = literal
                        && let ast::DataType::Timestamp(_, ast::TimezoneInfo::None) =
                            typed.data_type
                        && let ast::Value::SingleQuotedString(text) = &typed.value.value
                    {
                        *value = Datum::Text(text.clone());
                    }
                    continue;
                }
                _ => continue,
            };
            let text = match literal {
                ast::Expr::Value(v) => match &v.value {
                    ast::Value::Number(text, _) => text.clone(),
                    _ => continue,
                },
                ast::Expr::UnaryOp {
                    op: ast::UnaryOperator::Minus,
                    expr,
                } => match expr.as_ref() {
                    ast::Expr::Value(v) => match &v.value {
                        ast::Value::Number(text, _) => format!("-{text}"),
                        _ => continue,
                    },
                    _ => continue,
                },
                _ => continue,
            };
            if let Some(exact) = decimal_from_text(&text, scale) {
                *value = Datum::Decimal(exact);
            }
        }
    }
}

/// Whether an item of a VALUES row is the DEFAULT keyword.
pub(crate) fn is_default_keyword(expr: &ast::Expr) -> bool {
    matches!(expr, ast::Expr::Identifier(ident)
        if ident.quote_style.is_none() && ident.value.eq_ignore_ascii_case("default"))
}

/// Refuses a value other than the DEFAULT keyword for a GENERATED ALWAYS identity column or a
/// generated column.
pub(crate) fn refuse_generated_values(
    def: &TableDef,
    targets: &[usize],
    source: &ast::Query,
) -> Result<()> {
    for (i, &column) in targets.iter().enumerate() {
        let column_def = &def.columns[column];
        if !column_def.generated_always && !column_def.is_generated() {
            continue;
        }
        let all_default = match source.body.as_ref() {
            ast::SetExpr::Values(values) => values
                .rows
                .iter()
                .all(|row| row.get(i).is_some_and(is_default_keyword)),
            _ => false,
        };
        if let (false, Some(expr)) = (all_default, &column_def.generation) {
            return Err(Error::GeneratedColumnWritten {
                table: def.name.clone(),
                column: column_def.name.clone(),
                expr: expr.clone(),
            });
        }
        if !all_default {
            return Err(Error::GeneratedAlways {
                table: def.name.clone(),
                column: def.columns[column].name.clone(),
            });
        }
    }
    Ok(())
}

/// A VALUES list whose items include the DEFAULT keyword, with each such item replaced by its
/// column's DEFAULT expression (NULL for a column without one); None when there is none.
pub(crate) fn values_with_defaults(
    def: &TableDef,
    targets: &[usize],
    source: &ast::Query,
) -> Result<Option<Box<ast::Query>>> {
    let ast::SetExpr::Values(values) = source.body.as_ref() else {
        return Ok(None);
    };
    let is_default = is_default_keyword;
    if !values
        .rows
        .iter()
        .flat_map(|row| row.iter())
        .any(is_default)
    {
        return Ok(None);
    }
    let mut replaced = values.clone();
    for row in &mut replaced.rows {
        for (item, column) in row.iter_mut().zip(targets) {
            if is_default(item) {
                *item = default_expression(&def.columns[*column])?;
            }
        }
    }
    let mut query = Box::new(source.clone());
    query.body = Box::new(ast::SetExpr::Values(replaced));
    Ok(Some(query))
}
