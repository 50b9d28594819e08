//! The names PostgreSQL gives a query's result columns, for sessions that follow PostgreSQL
//! (`Semantics::PostgreSql`): clients read rows by these names (`row["count"]`, a record's
//! keys, a DataFrame's columns). DataFusion names an unaliased expression by its text
//! (`count(*)`, `Utf8("0") + Int64(1)`); PostgreSQL by the rule of its `FigureColname`:
//!
//! - a column reference: the column's name (DataFusion agrees; left as it names it);
//! - a function call, aggregates included: the function's name (`count`, `upper`, `coalesce`);
//! - a cast: the name of what it casts if that has one, else the type's (`'0'::int` is `int4`);
//! - `CASE` is `case`, `EXISTS (...)` is `exists`, `ARRAY[...]` is `array`, a scalar subquery
//!   its own column's name;
//! - anything else (a literal, an operator, a parameter): `?column?`.
//!
//! An alias wins, and wildcards keep the names of the columns they expand to.

use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::sql::sqlparser::ast::{
    ArrayElemTypeDef, BinaryOperator, DataType, Expr, Query, SelectItem, SetExpr, Statement,
    TimezoneInfo, TypedString, UnaryOperator, Value,
};
use std::sync::Arc;

use crate::sql::integer_types::{IntegerColumns, IntegerWidth};
use crate::sql::type_casts::TO_UUID_FUNCTION;
use crate::values::DECLARED_TYPE;

/// How sure a name is, as PostgreSQL ranks them: a cast's type name gives way to a stronger
/// name of what it casts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Strength {
    /// `?column?`.
    None,
    /// A name from the expression's kind (`case`, a cast's type).
    Kind,
    /// A column's or a function's name.
    Named,
}

/// One select-list item's name: PostgreSQL's for an expression, or "as DataFusion named it"
/// (a column reference, an alias, a wildcard's columns).
#[derive(Debug, Clone, PartialEq, Eq)]
enum ItemName {
    /// PostgreSQL's name for the item's one column.
    Postgres(String),
    /// The item's one column keeps DataFusion's name.
    Kept,
    /// A wildcard: all the columns it expands to keep their names.
    Wildcard,
}

/// One result column as a session following PostgreSQL presents it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OutputColumn {
    /// PostgreSQL's name for it.
    pub(crate) name: String,
    /// Its declared type (`values::DECLARED_TYPE`), as PostgreSQL would type it.
    pub(crate) declared: OutputType,
}

/// What a result column says of its declared type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OutputType {
    /// What the plan says: a column reference keeps its column's declared type.
    AsPlanned,
    /// None: the column is computed (a cast, a function) and has the type DataFusion gives it,
    /// whatever declared type a cast carried along from its operand; in a set operation the
    /// arms may widen each other, so their columns are typed as stored.
    Computed,
    /// This one: an integer literal that fits 32 bits is an INTEGER (`SELECT 1` is int4).
    Declared(&'static str),
}

/// The columns of `statement`'s result as PostgreSQL gives them, one per column of `schema`
/// (the result as DataFusion or the native executor named it); None when the statement is no
/// query, or its select list does not line up with `schema` (two wildcards).
/// `integers` says which arithmetic keeps an integer width (see `sql::integer_types`).
pub(crate) fn postgres_columns(
    statement: &Statement,
    schema: &Schema,
    integers: &IntegerColumns,
) -> Option<Vec<OutputColumn>> {
    let Statement::Query(query) = statement else {
        return None;
    };
    let items = query_item_names(query)?;
    let types: Vec<OutputType> = match query.body.as_ref() {
        SetExpr::Select(select) => select
            .projection
            .iter()
            .map(|item| item_type(item, integers))
            .collect(),
        _ => vec![OutputType::Computed; items.len()],
    };
    let width = schema.fields().len();
    let wildcards = items.iter().filter(|i| **i == ItemName::Wildcard).count();
    let named = items.len() - wildcards;
    let expanded = match wildcards {
        0 if named == width => 0,
        1 if width >= named => width - named,
        _ => return None,
    };
    let mut columns = Vec::with_capacity(width);
    let mut fields = schema.fields().iter();
    for (item, declared) in items.into_iter().zip(types) {
        let take = if item == ItemName::Wildcard {
            expanded
        } else {
            1
        };
        for _ in 0..take {
            let field = fields.next()?;
            let name = match &item {
                ItemName::Postgres(name) => name.clone(),
                _ => field.name().clone(),
            };
            columns.push(OutputColumn { name, declared });
        }
    }
    Some(columns)
}

/// What a plain SELECT's list item says of its column's declared type: a column reference (or
/// a wildcard's columns) as planned, an integer literal its own, integer arithmetic the width
/// PostgreSQL keeps it at, anything else none.
fn item_type(item: &SelectItem, integers: &IntegerColumns) -> OutputType {
    let expr = match item {
        SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. } => expr,
        SelectItem::ExprWithAliases { .. } => return OutputType::Computed,
        SelectItem::QualifiedWildcard(..) | SelectItem::Wildcard(_) => {
            return OutputType::AsPlanned;
        }
    };
    let mut expr = expr;
    while let Expr::Nested(inner) = expr {
        expr = inner;
    }
    match expr {
        Expr::Identifier(_) | Expr::CompoundIdentifier(_) => OutputType::AsPlanned,
        Expr::BinaryOp { .. } | Expr::UnaryOp { .. } => {
            match literal_type(expr)
                .or_else(|| integers.width(expr).and_then(IntegerWidth::declared))
            {
                Some(declared) => OutputType::Declared(declared),
                // The JSON operators' functions say what they give (`functions::json`): `->`
                // JSON of its operand's kind, `||` and `-` of a jsonb a jsonb, `->>` text; any
                // other operator's result carries no declared type.
                None if matches!(expr, Expr::BinaryOp { op, .. } if is_json_operator(op)) => {
                    OutputType::AsPlanned
                }
                None => OutputType::Computed,
            }
        }
        Expr::Cast {
            data_type: DataType::JSON,
            ..
        } => OutputType::Declared("JSON"),
        Expr::Cast {
            data_type: DataType::JSONB,
            ..
        } => OutputType::Declared("JSONB"),
        Expr::TypedString(TypedString {
            data_type: DataType::JSON,
            ..
        }) => OutputType::Declared("JSON"),
        Expr::TypedString(TypedString {
            data_type: DataType::JSONB,
            ..
        }) => OutputType::Declared("JSONB"),
        Expr::Function(function)
            if function
                .name
                .to_string()
                .to_lowercase()
                .trim_start_matches("to_")
                .starts_with("json") =>
        {
            OutputType::AsPlanned
        }
        // A UUID travels as text: the cast, the literal and the functions that make one say so.
        Expr::Cast {
            data_type: DataType::Uuid,
            ..
        } => OutputType::Declared("UUID"),
        Expr::TypedString(TypedString {
            data_type: DataType::Uuid,
            ..
        }) => OutputType::Declared("UUID"),
        Expr::Function(function)
            if matches!(
                function.name.to_string().to_lowercase().as_str(),
                "gen_random_uuid" | "uuid" | TO_UUID_FUNCTION
            ) =>
        {
            OutputType::Declared("UUID")
        }
        // A cast to VARCHAR without a length is a varchar (DataFusion's is text).
        Expr::Cast {
            data_type:
                DataType::Varchar(None) | DataType::CharacterVarying(None) | DataType::CharVarying(None),
            ..
        } => OutputType::Declared("VARCHAR"),
        _ => literal_type(expr).map_or(OutputType::Computed, OutputType::Declared),
    }
}

/// Whether `op` is one an operand of JSON may make a JSON function of (`functions::json::operators`).
fn is_json_operator(op: &BinaryOperator) -> bool {
    matches!(
        op,
        BinaryOperator::Arrow
            | BinaryOperator::LongArrow
            | BinaryOperator::HashArrow
            | BinaryOperator::HashLongArrow
            | BinaryOperator::AtArrow
            | BinaryOperator::ArrowAt
            | BinaryOperator::Question
            | BinaryOperator::QuestionAnd
            | BinaryOperator::QuestionPipe
            | BinaryOperator::StringConcat
            | BinaryOperator::Minus
    )
}

/// The declared type of an integer literal fitting 32 bits (`1`, `-5`): INTEGER, as
/// PostgreSQL types it.
fn literal_type(expr: &Expr) -> Option<&'static str> {
    let (digits, negative) = match expr {
        Expr::Value(value) => (&value.value, false),
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => match expr.as_ref() {
            Expr::Value(value) => (&value.value, true),
            _ => return None,
        },
        _ => return None,
    };
    let Value::Number(digits, _) = digits else {
        return None;
    };
    let value = digits.parse::<i64>().ok()?;
    let value = if negative {
        value.checked_neg()?
    } else {
        value
    };
    i32::try_from(value).ok().map(|_| "INTEGER")
}

/// `schema` with its fields renamed to `columns`' names (the same count) and their declared
/// types (`values::DECLARED_TYPE` in a field's metadata) as `columns` say.
pub(crate) fn renamed(schema: &SchemaRef, columns: &[OutputColumn]) -> SchemaRef {
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .zip(columns)
        .map(|(field, column)| {
            let field = field.as_ref().clone().with_name(&column.name);
            let mut metadata = field.metadata().clone();
            match column.declared {
                OutputType::AsPlanned => return field,
                OutputType::Computed => metadata.remove(DECLARED_TYPE),
                OutputType::Declared(declared) => {
                    metadata.insert(DECLARED_TYPE.to_string(), declared.to_string())
                }
            };
            field.with_metadata(metadata)
        })
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

/// The names of a query's select list (its first SELECT's, for a set operation, as in
/// PostgreSQL); None for a body that is not a SELECT (VALUES, say).
fn query_item_names(query: &Query) -> Option<Vec<ItemName>> {
    let select = first_select(&query.body)?;
    Some(
        select
            .projection
            .iter()
            .map(|item| match item {
                SelectItem::UnnamedExpr(expr) => match figure(expr) {
                    (_, None) => ItemName::Kept,
                    (Strength::None, Some(_)) => ItemName::Postgres("?column?".to_string()),
                    (_, Some(name)) => ItemName::Postgres(name),
                },
                SelectItem::ExprWithAlias { .. } | SelectItem::ExprWithAliases { .. } => {
                    ItemName::Kept
                }
                SelectItem::QualifiedWildcard(..) | SelectItem::Wildcard(_) => ItemName::Wildcard,
            })
            .collect(),
    )
}

fn first_select(body: &SetExpr) -> Option<&datafusion::sql::sqlparser::ast::Select> {
    match body {
        SetExpr::Select(select) => Some(select),
        SetExpr::SetOperation { left, .. } => first_select(left),
        SetExpr::Query(query) => first_select(&query.body),
        _ => None,
    }
}

/// PostgreSQL's name for `expr` and how strong it is; a name of None means a column reference,
/// whose name DataFusion already gives as PostgreSQL does.
fn figure(expr: &Expr) -> (Strength, Option<String>) {
    let named = |name: &str| (Strength::Named, Some(name.to_lowercase()));
    let kind = |name: &str| (Strength::Kind, Some(name.to_string()));
    match expr {
        Expr::Identifier(_) | Expr::CompoundIdentifier(_) => (Strength::Named, None),
        Expr::Nested(inner) => figure(inner),
        Expr::Function(function) => match function.name.0.last() {
            Some(part) => match part.as_ident() {
                Some(ident) if ident.quote_style.is_some() => {
                    (Strength::Named, Some(ident.value.clone()))
                }
                Some(ident) => named(&ident.value),
                None => named(&part.to_string()),
            },
            None => (Strength::None, Some(String::new())),
        },
        Expr::Cast {
            expr: inner,
            data_type,
            ..
        } => match figure(inner) {
            // DataFusion names a cast column by its qualified name (`t.a`); PostgreSQL by the
            // column's.
            (Strength::Named, None) => (Strength::Named, column_name(inner)),
            (Strength::Named, name) => (Strength::Named, name),
            _ => kind(&type_name(data_type)),
        },
        Expr::TypedString(TypedString { data_type, .. }) => kind(&type_name(data_type)),
        Expr::Case { .. } => kind("case"),
        Expr::Exists { .. } => kind("exists"),
        // An ARRAY[...] constructor is `array`, and keeps that name through a cast (PostgreSQL's
        // strength 2).
        Expr::Array(_) => named("array"),
        // An element of an array column is named by the column.
        Expr::CompoundFieldAccess { root, .. } => match figure(root) {
            (Strength::Named, None) => (Strength::Named, column_name(root)),
            other => other,
        },
        // `AT TIME ZONE` is the function `timezone`.
        Expr::AtTimeZone { .. } => named("timezone"),
        Expr::Interval(_) => kind("interval"),
        Expr::Extract { .. } => named("extract"),
        Expr::Substring { .. } => named("substring"),
        Expr::Position { .. } => named("position"),
        Expr::Trim { .. } => named("btrim"),
        Expr::Ceil { .. } => named("ceil"),
        Expr::Floor { .. } => named("floor"),
        Expr::Subquery(query) => match query_item_names(query).as_deref() {
            Some([ItemName::Postgres(name)]) if name != "?column?" => {
                (Strength::Named, Some(name.clone()))
            }
            Some([ItemName::Kept]) => (Strength::Named, None),
            _ => (Strength::None, Some(String::new())),
        },
        _ => (Strength::None, Some(String::new())),
    }
}

/// The name of the column a reference (`a`, `t.a`, `"A"`) names, folded as PostgreSQL folds an
/// unquoted name; None for anything else.
fn column_name(expr: &Expr) -> Option<String> {
    let ident = match expr {
        Expr::Nested(inner) => return column_name(inner),
        Expr::Identifier(ident) => ident,
        Expr::CompoundIdentifier(parts) => parts.last()?,
        _ => return None,
    };
    Some(match ident.quote_style {
        Some(_) => ident.value.clone(),
        None => ident.value.to_lowercase(),
    })
}

/// The name PostgreSQL gives a type in a cast's column name: its internal name (`int4`,
/// `varchar`, `float8`, ...).
fn type_name(data_type: &DataType) -> String {
    let name = match data_type {
        DataType::Int(_) | DataType::Integer(_) | DataType::Int4(_) => "int4",
        DataType::BigInt(_) | DataType::Int8(_) => "int8",
        DataType::SmallInt(_) | DataType::Int2(_) => "int2",
        DataType::Real | DataType::Float4 => "float4",
        DataType::Float(_) | DataType::Double(_) | DataType::DoublePrecision | DataType::Float8 => {
            "float8"
        }
        DataType::Numeric(_) | DataType::Decimal(_) | DataType::Dec(_) => "numeric",
        DataType::Boolean | DataType::Bool => "bool",
        DataType::Varchar(_) | DataType::CharacterVarying(_) | DataType::CharVarying(_) => {
            "varchar"
        }
        DataType::Char(_) | DataType::Character(_) => "bpchar",
        DataType::Text => "text",
        DataType::Bytea => "bytea",
        DataType::Date => "date",
        DataType::Timestamp(_, TimezoneInfo::Tz | TimezoneInfo::WithTimeZone) => "timestamptz",
        // A cast to an array is named by its element type (`int4`).
        DataType::Array(
            ArrayElemTypeDef::SquareBracket(element, _)
            | ArrayElemTypeDef::AngleBracket(element)
            | ArrayElemTypeDef::Parenthesis(element),
        ) => return type_name(element),
        DataType::Timestamp(..) => "timestamp",
        other => return other.to_string().to_lowercase(),
    };
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::DataType as ArrowDataType;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    /// `sql`'s result columns as PostgreSQL gives them, over a schema of bigint `columns`.
    fn columns_of(sql: &str, columns: &[&str]) -> Option<Vec<OutputColumn>> {
        let statement = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .expect("parses")
            .remove(0);
        let schema = Schema::new(
            columns
                .iter()
                .map(|c| Field::new(*c, ArrowDataType::Int64, true))
                .collect::<Vec<_>>(),
        );
        postgres_columns(&statement, &schema, &IntegerColumns::default())
    }

    fn names(sql: &str, columns: &[&str]) -> Option<Vec<String>> {
        columns_of(sql, columns).map(|columns| columns.into_iter().map(|c| c.name).collect())
    }

    fn declared(sql: &str, columns: &[&str]) -> Option<Vec<Option<&'static str>>> {
        columns_of(sql, columns).map(|columns| {
            columns
                .into_iter()
                .map(|c| match c.declared {
                    OutputType::Declared(declared) => Some(declared),
                    _ => None,
                })
                .collect()
        })
    }

    #[test]
    fn integer_literals_of_a_plain_select_are_integers() {
        assert_eq!(
            declared(
                "SELECT 1, -2147483648, 2147483648, 2.5, x, 3 AS n FROM t",
                &["a", "b", "c", "d", "x", "n"]
            ),
            Some(vec![
                Some("INTEGER"),
                Some("INTEGER"),
                None,
                None,
                None,
                Some("INTEGER")
            ])
        );
        assert_eq!(
            declared("SELECT 1 UNION SELECT 3000000000", &["a"]),
            Some(vec![None])
        );
    }

    #[test]
    fn expressions_are_named_as_postgresql_names_them() {
        let got = names(
            "SELECT '0'::int + 1, count(*), upper(t.name), '0'::int, id::text, CASE WHEN true \
             THEN 1 END, 1, $1, x AS y, t.id, COALESCE(a, b), (SELECT max(v) FROM u), \
             EXISTS (SELECT 1), CAST(2 AS BIGINT) FROM t",
            &[
                "a", "b", "c", "d", "e", "f", "g", "h", "y", "id", "k", "l", "m", "n",
            ],
        );
        let want = [
            "?column?", "count", "upper", "int4", "id", "case", "?column?", "?column?", "y", "id",
            "coalesce", "max", "exists", "int8",
        ];
        assert_eq!(got, Some(want.iter().map(|s| s.to_string()).collect()));
    }

    #[test]
    fn wildcards_keep_their_columns_names() {
        assert_eq!(
            names("SELECT *, 1 FROM t", &["a", "b", "Int64(1)"]),
            Some(vec!["a".into(), "b".into(), "?column?".into()])
        );
        assert_eq!(names("SELECT *, * FROM t", &["a", "a"]), None);
        assert_eq!(names("VALUES (1)", &["column1"]), None);
    }
}
