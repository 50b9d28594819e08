//! The statements SQL's PREPARE keeps for a connection (run by `sql_prepared`), and how
//! EXECUTE's values are read for them: constants (numbers, strings, booleans, NULL, a constant
//! with a cast), as the type PREPARE gave the parameter when it gave one, else as an untyped
//! literal that the statement's use of the parameter types.

use std::collections::HashMap;
use std::sync::Arc;

use pgwire::error::ErrorInfo;
use rowdex::datafusion::sql::sqlparser::ast::{self, Expr, UnaryOperator, Value};
use rowdex::{Datum, Prepared};

use crate::kind::Kind;
use crate::sqlstate::error_info;

/// One statement PREPARE kept.
#[derive(Debug)]
pub struct SqlStatement {
    pub(crate) prepared: Prepared,
    /// What each parameter was declared as (PREPARE's type list), where it was.
    pub(crate) types: Vec<ParameterType>,
    /// The kind of the prepared statement, for EXECUTE's tag (`INSERT 0 1`, `SELECT 3`).
    pub(crate) kind: Kind,
    /// Its text, for errors.
    pub(crate) sql: String,
}

/// The types PREPARE may give a parameter that change how EXECUTE reads a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParameterType {
    Integer,
    Float,
    Boolean,
    Text,
    /// Any other type, or none: the value goes as an untyped literal.
    Untyped,
}

/// The connection's SQL-level prepared statements, by name.
#[derive(Default)]
pub struct SqlStatements {
    by_name: HashMap<String, Arc<SqlStatement>>,
}

impl SqlStatements {
    pub fn get(&self, name: &str) -> Option<Arc<SqlStatement>> {
        self.by_name.get(name).cloned()
    }

    pub fn contains(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    pub fn insert(&mut self, name: String, statement: SqlStatement) {
        self.by_name.insert(name, Arc::new(statement));
    }

    /// Forgets `name`; false if there was none.
    pub fn remove(&mut self, name: &str) -> bool {
        self.by_name.remove(name).is_some()
    }

    pub fn clear(&mut self) {
        self.by_name.clear();
    }
}

impl SqlStatement {
    pub fn prepared(&self) -> &Prepared {
        &self.prepared
    }
}

pub fn parameter_type(data_type: &ast::DataType) -> ParameterType {
    let text = data_type.to_string().to_uppercase();
    let base = text.split('(').next().unwrap_or("").trim();
    match base {
        "SMALLINT" | "INT" | "INTEGER" | "BIGINT" | "INT2" | "INT4" | "INT8" => {
            ParameterType::Integer
        }
        "REAL" | "FLOAT" | "FLOAT4" | "FLOAT8" | "DOUBLE PRECISION" => ParameterType::Float,
        "BOOLEAN" | "BOOL" => ParameterType::Boolean,
        "TEXT" | "VARCHAR" | "CHARACTER VARYING" => ParameterType::Text,
        _ => ParameterType::Untyped,
    }
}

/// EXECUTE's value `expr` for a parameter declared `declared`.
pub fn value(expr: &Expr, declared: ParameterType) -> Result<Datum, Box<ErrorInfo>> {
    let constant = constant(expr).ok_or_else(|| {
        Box::new(error_info(
            "0A000",
            format!("unsupported: the EXECUTE parameter {expr} (rowdex takes constants there)"),
        ))
    })?;
    let invalid = |kind: &str| {
        Box::new(error_info(
            "22P02",
            format!(
                "invalid input syntax for type {kind}: \"{}\"",
                constant.text
            ),
        ))
    };
    Ok(match (declared, constant.quoted) {
        _ if constant.null => Datum::Null,
        (ParameterType::Integer, _) => Datum::Int(
            constant
                .text
                .trim()
                .parse()
                .map_err(|_| invalid("integer"))?,
        ),
        (ParameterType::Float, _) => Datum::Float(
            constant
                .text
                .trim()
                .parse()
                .map_err(|_| invalid("double precision"))?,
        ),
        (ParameterType::Boolean, _) => match constant.text.trim().to_lowercase().as_str() {
            "t" | "true" | "yes" | "on" | "1" => Datum::Boolean(true),
            "f" | "false" | "no" | "off" | "0" => Datum::Boolean(false),
            _ => return Err(invalid("boolean")),
        },
        (ParameterType::Text, _) | (ParameterType::Untyped, true) => Datum::Text(constant.text),
        (ParameterType::Untyped, false) => match constant.text.parse::<i64>() {
            Ok(n) => Datum::Int(n),
            Err(_) => match constant.text.as_str() {
                "true" => Datum::Boolean(true),
                "false" => Datum::Boolean(false),
                number => Datum::Float(number.parse().map_err(|_| invalid("numeric"))?),
            },
        },
    })
}

/// A constant's text, whether it was quoted, or NULL.
struct Constant {
    text: String,
    quoted: bool,
    null: bool,
}

fn constant(expr: &Expr) -> Option<Constant> {
    match expr {
        Expr::Value(value) => match &value.value {
            Value::Number(number, _) => Some(Constant {
                text: number.clone(),
                quoted: false,
                null: false,
            }),
            Value::SingleQuotedString(text) => Some(Constant {
                text: text.clone(),
                quoted: true,
                null: false,
            }),
            Value::Boolean(b) => Some(Constant {
                text: b.to_string(),
                quoted: false,
                null: false,
            }),
            Value::Null => Some(Constant {
                text: String::new(),
                quoted: false,
                null: true,
            }),
            _ => None,
        },
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => {
            let inner = constant(expr)?;
            (!inner.quoted && !inner.null).then(|| Constant {
                text: format!("-{}", inner.text),
                ..inner
            })
        }
        Expr::Nested(inner) | Expr::Cast { expr: inner, .. } => constant(inner),
        _ => None,
    }
}
