//! Which select-list expressions PostgreSQL types as a 32- or 16-bit integer: it keeps integer
//! arithmetic at the widest of its operands (`int4 + int4` is `int4`, `int2 * int2` is
//! `int2`, anything with an `int8` is `int8`), where DataFusion computes every integer in 64
//! bits. rowdex stores every integer in 64 bits and records the width a column was declared
//! with (`catalog::Declared`), so an expression over such columns, 32-bit literals and casts
//! to `int`/`smallint` is given that declared type; the server then sends it as PostgreSQL
//! would (an `int4`, a value out of its range an error, 22003).

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, DataType as SqlType, Expr, ObjectNamePart, SelectItem, SetExpr, Statement,
    TableFactor, UnaryOperator, Value,
};
use rowdex_catalog::{DataType, Declared, TableDef};

use crate::sql::names::ident_name;

/// An integer's width, as PostgreSQL types it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum IntegerWidth {
    Small,
    Integer,
    Big,
}

impl IntegerWidth {
    /// The declared type an output of this width carries (`values::DECLARED_TYPE`); None
    /// for a bigint, which is how DataFusion types it anyway.
    pub(crate) fn declared(self) -> Option<&'static str> {
        match self {
            IntegerWidth::Small => Some("SMALLINT"),
            IntegerWidth::Integer => Some("INTEGER"),
            IntegerWidth::Big => None,
        }
    }
}

/// The integer columns of the tables a query's FROM names: by column name (None where two
/// tables have one of that name) and by `qualifier.column`.
#[derive(Debug, Default)]
pub(crate) struct IntegerColumns {
    by_name: HashMap<String, Option<IntegerWidth>>,
    qualified: HashMap<(String, String), IntegerWidth>,
}

impl IntegerColumns {
    /// The integer columns `statement` (a query) can name, its tables looked up by `table`.
    /// Empty unless its select list has an arithmetic expression (the only use of them).
    pub(crate) fn of_query(
        statement: &Statement,
        table: impl Fn(&str) -> Option<Arc<TableDef>>,
    ) -> IntegerColumns {
        let mut columns = IntegerColumns::default();
        let Statement::Query(query) = statement else {
            return columns;
        };
        let SetExpr::Select(select) = query.body.as_ref() else {
            return columns;
        };
        let arithmetic = select.projection.iter().any(|item| match item {
            SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. } => {
                matches!(
                    expr,
                    Expr::BinaryOp { .. } | Expr::UnaryOp { .. } | Expr::Nested(_)
                )
            }
            _ => false,
        });
        if !arithmetic {
            return columns;
        }
        let relations = select.from.iter().flat_map(|from| {
            std::iter::once(&from.relation).chain(from.joins.iter().map(|j| &j.relation))
        });
        for relation in relations {
            let TableFactor::Table { name, alias, .. } = relation else {
                continue;
            };
            let [ObjectNamePart::Identifier(ident)] = name.0.as_slice() else {
                continue;
            };
            let table_name = ident_name(ident);
            let Some(def) = table(&table_name) else {
                continue;
            };
            let qualifier = alias.as_ref().map_or(table_name, |a| ident_name(&a.name));
            for (_, column) in def.visible_columns() {
                let Some(width) = column_width(column.data_type, column.declared) else {
                    continue;
                };
                columns
                    .qualified
                    .insert((qualifier.clone(), column.name.clone()), width);
                columns
                    .by_name
                    .entry(column.name.clone())
                    .and_modify(|known| *known = None)
                    .or_insert(Some(width));
            }
        }
        columns
    }

    /// The width of `expr`, if it is integer arithmetic PostgreSQL keeps integer.
    pub(crate) fn width(&self, expr: &Expr) -> Option<IntegerWidth> {
        match expr {
            Expr::Identifier(ident) => self.by_name.get(&ident_name(ident)).copied().flatten(),
            Expr::CompoundIdentifier(parts) => match parts.as_slice() {
                [qualifier, column] => self
                    .qualified
                    .get(&(ident_name(qualifier), ident_name(column)))
                    .copied(),
                _ => None,
            },
            Expr::Value(value) => match &value.value {
                Value::Number(digits, _) => {
                    let value = digits.parse::<i64>().ok()?;
                    Some(if i32::try_from(value).is_ok() {
                        IntegerWidth::Integer
                    } else {
                        IntegerWidth::Big
                    })
                }
                _ => None,
            },
            Expr::Nested(inner) => self.width(inner),
            Expr::UnaryOp {
                op: UnaryOperator::Minus | UnaryOperator::Plus,
                expr,
            } => self.width(expr),
            Expr::Cast { data_type, .. } => cast_width(data_type),
            Expr::BinaryOp { left, op, right } if arithmetic(op) => {
                Some(self.width(left)?.max(self.width(right)?))
            }
            _ => None,
        }
    }
}

fn arithmetic(op: &BinaryOperator) -> bool {
    matches!(
        op,
        BinaryOperator::Plus
            | BinaryOperator::Minus
            | BinaryOperator::Multiply
            | BinaryOperator::Divide
            | BinaryOperator::Modulo
    )
}

/// The width of a column stored as `data_type` and declared `declared`.
fn column_width(data_type: DataType, declared: Option<Declared>) -> Option<IntegerWidth> {
    match (data_type, declared) {
        (DataType::Integer, Some(Declared::SmallInt)) => Some(IntegerWidth::Small),
        (DataType::Integer, Some(Declared::Integer)) => Some(IntegerWidth::Integer),
        (DataType::Integer, _) => Some(IntegerWidth::Big),
        _ => None,
    }
}

fn cast_width(data_type: &SqlType) -> Option<IntegerWidth> {
    match data_type {
        SqlType::SmallInt(_) | SqlType::Int2(_) => Some(IntegerWidth::Small),
        SqlType::Int(_) | SqlType::Integer(_) | SqlType::Int4(_) => Some(IntegerWidth::Integer),
        SqlType::BigInt(_) | SqlType::Int8(_) => Some(IntegerWidth::Big),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;
    use rowdex_catalog::ColumnDef;

    fn table() -> Arc<TableDef> {
        let mut small = ColumnDef::nullable("sm", DataType::Integer);
        small.declared = Some(Declared::SmallInt);
        let mut int = ColumnDef::nullable("id", DataType::Integer);
        int.declared = Some(Declared::Integer);
        let big = ColumnDef::nullable("bi", DataType::Integer);
        let text = ColumnDef::nullable("name", DataType::Text { max_len: None });
        let def = TableDef::new(
            "t",
            vec![int, small, big, text],
            &[("id".to_string(), false)],
            0,
        )
        .expect("a valid definition");
        Arc::new(def)
    }

    fn widths(sql: &str) -> Vec<Option<IntegerWidth>> {
        let statement = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .expect("parses")
            .remove(0);
        let columns = IntegerColumns::of_query(&statement, |name| (name == "t").then(table));
        let Statement::Query(query) = &statement else {
            panic!("a query");
        };
        let SetExpr::Select(select) = query.body.as_ref() else {
            panic!("a select");
        };
        select
            .projection
            .iter()
            .map(|item| match item {
                SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. } => {
                    columns.width(expr)
                }
                _ => None,
            })
            .collect()
    }

    #[test]
    fn integer_arithmetic_keeps_the_widest_operands_width() {
        use IntegerWidth::{Big, Integer, Small};
        assert_eq!(
            widths(
                "SELECT id * 2, sm + sm, sm + id, bi + 1, id + 3000000000, '0'::int + 1, \
                 t.id - 1, -id, id / 2, id + 1.5, name, (id + 1) * sm FROM t"
            ),
            vec![
                Some(Integer),
                Some(Small),
                Some(Integer),
                Some(Big),
                Some(Big),
                Some(Integer),
                Some(Integer),
                Some(Integer),
                Some(Integer),
                None,
                None,
                Some(Integer),
            ]
        );
        // Without arithmetic in the select list nothing is looked up.
        assert_eq!(widths("SELECT id, sm FROM t"), vec![None, None]);
    }
}
