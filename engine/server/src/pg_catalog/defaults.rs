//! A column's DEFAULT as PostgreSQL prints it (`pg_get_expr` of `pg_attrdef.adbin`,
//! `information_schema.columns.column_default`): PostgreSQL keeps a DEFAULT as the expression
//! it analysed, so a quoted literal shows the type it was read as (`'open'::character
//! varying`, `'2'::numeric`), a negative number its type (`'-1'::integer`), and a sequence's
//! name its regclass cast (`nextval('s'::regclass)`). ORMs and migration tools compare these
//! texts (Alembic's autogenerate, SQLAlchemy's reflection). rowdex keeps the DEFAULT as
//! written; what it cannot read as one of these forms is shown as written.

use rowdex::datafusion::sql::sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, FunctionArguments, UnaryOperator, Value,
};
use rowdex::datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use rowdex::datafusion::sql::sqlparser::parser::Parser;
use rowdex_catalog::ColumnDef;

use crate::pg_catalog::model::column_type;

/// `sql`, the DEFAULT of `column`, as PostgreSQL would print it.
pub fn postgres_default(column: &ColumnDef, sql: &str) -> String {
    let parsed = Parser::new(&PostgreSqlDialect {})
        .try_with_sql(sql)
        .and_then(|mut parser| parser.parse_expr());
    match parsed {
        Ok(expr) => printed(&expr, column_type(column).0).unwrap_or_else(|| sql.to_string()),
        Err(_) => sql.to_string(),
    }
}

/// `expr` as PostgreSQL prints a DEFAULT of a column of type `oid`; None where rowdex shows
/// it as written.
fn printed(expr: &Expr, oid: i64) -> Option<String> {
    match expr {
        Expr::Value(value) => match &value.value {
            Value::SingleQuotedString(text) => Some(quoted_literal(text, oid)),
            Value::Number(number, _) => Some(number.clone()),
            Value::Boolean(b) => Some(b.to_string()),
            _ => None,
        },
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr: operand,
        } => match operand.as_ref() {
            Expr::Value(value) => match &value.value {
                Value::Number(number, _) => Some(format!("'-{number}'::{}", type_name(oid)?)),
                _ => None,
            },
            _ => None,
        },
        Expr::Function(function) if function.name.to_string().eq_ignore_ascii_case("nextval") => {
            let FunctionArguments::List(list) = &function.args else {
                return None;
            };
            let [FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(value)))] =
                list.args.as_slice()
            else {
                return None;
            };
            let Value::SingleQuotedString(sequence) = &value.value else {
                return None;
            };
            Some(format!("nextval({}::regclass)", quote(sequence)))
        }
        _ => None,
    }
}

/// A quoted literal read as the column's type: an integer as its number (with its type when
/// negative), a boolean as `true`/`false`, anything else quoted with its type.
fn quoted_literal(text: &str, oid: i64) -> String {
    let typed = |name: &str| format!("{}::{name}", quote(text));
    match oid {
        20 | 21 | 23 => match text.trim().parse::<i64>() {
            Ok(n) if n >= 0 => n.to_string(),
            Ok(n) => format!("'{n}'::{}", type_name(oid).unwrap_or("bigint")),
            Err(_) => typed(type_name(oid).unwrap_or("bigint")),
        },
        16 => match text.trim().to_ascii_lowercase().as_str() {
            "t" | "true" | "y" | "yes" | "on" | "1" => "true".to_string(),
            "f" | "false" | "n" | "no" | "off" | "0" => "false".to_string(),
            _ => typed("boolean"),
        },
        _ => match type_name(oid) {
            Some(name) => typed(name),
            None => quote(text),
        },
    }
}

/// The name PostgreSQL gives type `oid` in an expression's cast.
fn type_name(oid: i64) -> Option<&'static str> {
    Some(match oid {
        16 => "boolean",
        17 => "bytea",
        20 => "bigint",
        21 => "smallint",
        23 => "integer",
        25 => "text",
        700 => "real",
        701 => "double precision",
        1042 => "bpchar",
        1043 => "character varying",
        1082 => "date",
        1114 => "timestamp without time zone",
        1700 => "numeric",
        2950 => "uuid",
        _ => return None,
    })
}

fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::postgres_default;
    use rowdex_catalog::{ColumnDef, DataType, Declared};

    fn column(data_type: DataType, declared: Option<Declared>) -> ColumnDef {
        let mut column = ColumnDef::nullable("c", data_type);
        column.declared = declared;
        column
    }

    #[test]
    fn defaults_print_as_postgresql_prints_them() {
        let varchar = column(
            DataType::Text { max_len: Some(10) },
            Some(Declared::Varchar),
        );
        let text = column(DataType::Text { max_len: None }, None);
        let int = column(DataType::Integer, Some(Declared::Integer));
        let numeric = column(
            DataType::Decimal {
                precision: 5,
                scale: 2,
            },
            None,
        );
        let cases = [
            (&varchar, "'open'", "'open'::character varying"),
            (&text, "'it''s'", "'it''s'::text"),
            (&int, "'0'", "0"),
            (&int, "0", "0"),
            (&int, "-1", "'-1'::integer"),
            (&int, "nextval('t_id_seq')", "nextval('t_id_seq'::regclass)"),
            (&numeric, "'2'", "'2'::numeric"),
            (&numeric, "1.5", "1.5"),
            (&numeric, "-2.5", "'-2.5'::numeric"),
            (&text, "upper('x')", "upper('x')"),
            (&text, "not sql (", "not sql ("),
        ];
        for (column, written, printed) in cases {
            assert_eq!(postgres_default(column, written), printed, "{written}");
        }
    }
}
