//! Scalar expressions the native executor evaluates itself: what an UPDATE's SET list
//! computes from a row and the statement's parameters, without DataFusion.
//!
//! Only what gives exactly DataFusion's answer is compiled, and evaluation answers None (the
//! statement then runs through DataFusion, which decides) wherever the two could differ: an
//! integer overflow, operands of different types (DataFusion would coerce one), a DECIMAL
//! (read back from Arrow as a float on the other path), a float compared with anything.
//! Accepted: column references, literals, parameters, unary minus, `+ - *` on integers and
//! floats, `||` on text, COALESCE, searched and simple CASE over comparisons of like values,
//! IS [NOT] NULL, AND, OR, NOT, `lower`, `upper`, `length`, and casts of integers to text and
//! to float.

use std::cmp::Ordering;

use datafusion::sql::sqlparser::ast::{
    BinaryOperator, CastKind, DataType as SqlType, Expr, Function, FunctionArg, FunctionArgExpr,
    FunctionArgumentList, FunctionArguments, UnaryOperator, Value,
};
use rowdex_catalog::TableDef;
use rowdex_codec::Datum;

use crate::native::kind::Kind;
use crate::native::scope::{Scope, Slot, slot};

/// A compiled scalar expression over one row of a table and the statement's parameters.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Scalar {
    Column(usize),
    Value(Slot),
    Negate(Box<Scalar>),
    Arithmetic {
        op: Arithmetic,
        left: Box<Scalar>,
        right: Box<Scalar>,
    },
    Concat(Box<Scalar>, Box<Scalar>),
    Coalesce(Vec<Scalar>),
    /// `CASE WHEN c THEN v ... ELSE e END` (a simple CASE is compiled into this form).
    Case {
        branches: Vec<(Condition, Scalar)>,
        otherwise: Option<Box<Scalar>>,
    },
    Text(TextFunction, Box<Scalar>),
    /// `CAST(integer AS TEXT)`.
    IntegerText(Box<Scalar>),
    /// `CAST(integer AS DOUBLE)`.
    IntegerFloat(Box<Scalar>),
    /// `now()`, `CURRENT_TIMESTAMP`: the statement's time, which only a statement evaluated
    /// once gives it (an INSERT's VALUES, see [`constant_rows`]); elsewhere not evaluated here.
    Now,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Arithmetic {
    Add,
    Subtract,
    Multiply,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum TextFunction {
    Lower,
    Upper,
    Length,
}

/// A condition of a CASE branch; evaluates to true, false or unknown (NULL).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Condition {
    Compare {
        op: Comparison,
        left: Scalar,
        right: Scalar,
    },
    IsNull(Scalar, bool),
    And(Box<Condition>, Box<Condition>),
    Or(Box<Condition>, Box<Condition>),
    Not(Box<Condition>),
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Comparison {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
}

/// A parameter's value as a literal of it would evaluate (see `sql::literals::bind_literals`,
/// the path a statement the native executor does not run takes): the datum itself, except
/// where the literal would read differently (the smallest integer, whose digits overflow
/// before the minus applies) or not at all (a DECIMAL parameter).
fn parameter(params: &[Datum], index: usize) -> Option<Datum> {
    match params.get(index)? {
        Datum::Int(i64::MIN) | Datum::Decimal(_) => None,
        Datum::Float(v) if !v.is_finite() => None,
        datum => Some(datum.clone()),
    }
}

impl Scalar {
    /// Compiles `expr` over the table of `scope`; None for what the native executor does not
    /// evaluate.
    pub(crate) fn compile(scope: &Scope<'_>, expr: &Expr) -> Option<Scalar> {
        if let Some(column) = scope.column(expr) {
            Kind::of_column(&scope.table.columns.get(column)?.data_type)?;
            return Some(Scalar::Column(column));
        }
        match expr {
            Expr::Nested(inner) => Scalar::compile(scope, inner),
            Expr::Value(value) if matches!(value.value, Value::Placeholder(_)) => {
                Some(Scalar::Value(slot(expr)?))
            }
            Expr::UnaryOp {
                op: UnaryOperator::Minus,
                expr: inner,
            } => match slot(expr) {
                Some(literal) => Some(Scalar::Value(literal)),
                None => Some(Scalar::Negate(Box::new(Scalar::compile(scope, inner)?))),
            },
            Expr::BinaryOp { left, op, right } => {
                let (left, right) = (
                    Box::new(Scalar::compile(scope, left)?),
                    Box::new(Scalar::compile(scope, right)?),
                );
                let op = match op {
                    BinaryOperator::Plus => Arithmetic::Add,
                    BinaryOperator::Minus => Arithmetic::Subtract,
                    BinaryOperator::Multiply => Arithmetic::Multiply,
                    BinaryOperator::StringConcat => return Some(Scalar::Concat(left, right)),
                    _ => return None,
                };
                Some(Scalar::Arithmetic { op, left, right })
            }
            Expr::Case {
                operand,
                conditions,
                else_result,
                ..
            } => {
                let operand = match operand {
                    Some(operand) => Some(Scalar::compile(scope, operand)?),
                    None => None,
                };
                let mut branches = Vec::with_capacity(conditions.len());
                for when in conditions {
                    let condition = match &operand {
                        Some(operand) => Condition::Compare {
                            op: Comparison::Eq,
                            left: operand.clone(),
                            right: Scalar::compile(scope, &when.condition)?,
                        },
                        None => Condition::compile(scope, &when.condition)?,
                    };
                    branches.push((condition, Scalar::compile(scope, &when.result)?));
                }
                let otherwise = match else_result {
                    Some(e) => Some(Box::new(Scalar::compile(scope, e)?)),
                    None => None,
                };
                Some(Scalar::Case {
                    branches,
                    otherwise,
                })
            }
            Expr::Cast {
                kind: CastKind::Cast | CastKind::DoubleColon,
                expr: inner,
                data_type,
                array: false,
                format: None,
            } => {
                let inner = Box::new(Scalar::compile(scope, inner)?);
                match data_type {
                    SqlType::Text | SqlType::Varchar(None) | SqlType::String(None) => {
                        Some(Scalar::IntegerText(inner))
                    }
                    SqlType::Double(_) | SqlType::DoublePrecision | SqlType::Float8 => {
                        Some(Scalar::IntegerFloat(inner))
                    }
                    _ => None,
                }
            }
            Expr::Function(function) => Scalar::function(scope, function),
            _ => Some(Scalar::Value(slot(expr)?)),
        }
    }

    fn function(scope: &Scope<'_>, function: &Function) -> Option<Scalar> {
        let name = function.name.to_string().to_lowercase();
        if name == "current_timestamp" && function.args == FunctionArguments::None {
            return Some(Scalar::Now);
        }
        let list = plain_arguments(function)?;
        let mut args = Vec::with_capacity(list.args.len());
        for arg in &list.args {
            let FunctionArg::Unnamed(FunctionArgExpr::Expr(arg)) = arg else {
                return None;
            };
            args.push(Scalar::compile(scope, arg)?);
        }
        if matches!(name.as_str(), "now" | "current_timestamp") && args.is_empty() {
            return Some(Scalar::Now);
        }
        let text = match name.as_str() {
            "coalesce" if !args.is_empty() => return Some(Scalar::Coalesce(args)),
            "lower" => TextFunction::Lower,
            "upper" => TextFunction::Upper,
            "length" | "char_length" | "character_length" => TextFunction::Length,
            _ => return None,
        };
        let [arg] = <[Scalar; 1]>::try_from(args).ok()?;
        Some(Scalar::Text(text, Box::new(arg)))
    }

    /// Whether the expression reads a column of the row.
    pub(crate) fn reads_columns(&self) -> bool {
        match self {
            Scalar::Column(_) => true,
            Scalar::Value(_) | Scalar::Now => false,
            Scalar::Negate(inner)
            | Scalar::Text(_, inner)
            | Scalar::IntegerText(inner)
            | Scalar::IntegerFloat(inner) => inner.reads_columns(),
            Scalar::Arithmetic { left, right, .. } | Scalar::Concat(left, right) => {
                left.reads_columns() || right.reads_columns()
            }
            Scalar::Coalesce(args) => args.iter().any(Scalar::reads_columns),
            Scalar::Case {
                branches,
                otherwise,
            } => {
                branches
                    .iter()
                    .any(|(condition, value)| condition.reads_columns() || value.reads_columns())
                    || otherwise.as_ref().is_some_and(|o| o.reads_columns())
            }
        }
    }

    /// The kind of value this expression gives with `params`, checked through the whole
    /// expression as DataFusion types it when planning (so that a type it would refuse is
    /// found before any row is read, as it refuses before reading); None where the native
    /// executor is not sure of DataFusion's typing. [`Scalar::evaluate`] is for expressions
    /// this answered Some for, with the same parameters.
    pub(crate) fn typed(&self, table: &TableDef, params: &[Datum]) -> Option<Kind> {
        let text_or_null = |kind: Kind| matches!(kind, Kind::Text | Kind::Null);
        match self {
            Scalar::Column(column) => Kind::of_column(&table.columns.get(*column)?.data_type),
            Scalar::Value(Slot::Value(datum)) => Kind::of(datum),
            Scalar::Value(Slot::Param(index)) => Kind::of(&parameter(params, *index)?),
            Scalar::Now => None,
            Scalar::Negate(inner) => match inner.typed(table, params)? {
                kind @ (Kind::Int | Kind::Float) => Some(kind),
                _ => None,
            },
            Scalar::Arithmetic { left, right, .. } => {
                match (left.typed(table, params)?, right.typed(table, params)?) {
                    (Kind::Int, Kind::Int) => Some(Kind::Int),
                    (Kind::Float | Kind::Int, Kind::Float) | (Kind::Float, Kind::Int) => {
                        Some(Kind::Float)
                    }
                    _ => None,
                }
            }
            Scalar::Concat(left, right) => {
                let kinds = (left.typed(table, params)?, right.typed(table, params)?);
                (text_or_null(kinds.0) && text_or_null(kinds.1)).then_some(Kind::Text)
            }
            Scalar::Text(function, inner) => {
                if !text_or_null(inner.typed(table, params)?) {
                    return None;
                }
                Some(match function {
                    TextFunction::Length => Kind::Int,
                    TextFunction::Lower | TextFunction::Upper => Kind::Text,
                })
            }
            Scalar::IntegerText(inner) | Scalar::IntegerFloat(inner) => {
                if !matches!(inner.typed(table, params)?, Kind::Int | Kind::Null) {
                    return None;
                }
                Some(match self {
                    Scalar::IntegerText(_) => Kind::Text,
                    _ => Kind::Float,
                })
            }
            Scalar::Coalesce(args) => Kind::common(
                args.iter()
                    .map(|a| a.typed(table, params))
                    .collect::<Option<Vec<_>>>()?,
            ),
            Scalar::Case {
                branches,
                otherwise,
            } => {
                let mut kinds = Vec::with_capacity(branches.len() + 1);
                for (condition, value) in branches {
                    condition.typed(table, params)?;
                    kinds.push(value.typed(table, params)?);
                }
                if let Some(otherwise) = otherwise {
                    kinds.push(otherwise.typed(table, params)?);
                }
                Kind::common(kinds)
            }
        }
    }

    /// The value for `row` (every column of the table) and `params`; None where the native
    /// executor cannot be sure of giving DataFusion's answer.
    pub(crate) fn evaluate(
        &self,
        table: &TableDef,
        row: &[Datum],
        params: &[Datum],
    ) -> Option<Datum> {
        match self {
            Scalar::Column(column) => row.get(*column).cloned(),
            Scalar::Value(Slot::Value(datum)) => Some(datum.clone()),
            Scalar::Value(Slot::Param(index)) => parameter(params, *index),
            Scalar::Now => None,
            Scalar::Negate(inner) => match inner.evaluate(table, row, params)? {
                Datum::Null => Some(Datum::Null),
                Datum::Int(v) => v.checked_neg().map(Datum::Int),
                Datum::Float(v) => Some(Datum::Float(-v)),
                _ => None,
            },
            Scalar::Arithmetic { op, left, right } => {
                let (l, r) = (
                    left.evaluate(table, row, params)?,
                    right.evaluate(table, row, params)?,
                );
                arithmetic(*op, l, r)
            }
            Scalar::Concat(left, right) => {
                match (
                    left.evaluate(table, row, params)?,
                    right.evaluate(table, row, params)?,
                ) {
                    (Datum::Text(mut l), Datum::Text(r)) => {
                        l.push_str(&r);
                        Some(Datum::Text(l))
                    }
                    (Datum::Null, _) | (_, Datum::Null) => Some(Datum::Null),
                    _ => None,
                }
            }
            Scalar::Coalesce(args) => {
                for arg in args {
                    let value = arg.evaluate(table, row, params)?;
                    if !value.is_null() {
                        return Some(value);
                    }
                }
                Some(Datum::Null)
            }
            Scalar::Case {
                branches,
                otherwise,
            } => {
                for (condition, value) in branches {
                    if condition.evaluate(table, row, params)? == Some(true) {
                        return value.evaluate(table, row, params);
                    }
                }
                match otherwise {
                    Some(otherwise) => otherwise.evaluate(table, row, params),
                    None => Some(Datum::Null),
                }
            }
            Scalar::Text(function, inner) => {
                match (function, inner.evaluate(table, row, params)?) {
                    (_, Datum::Null) => Some(Datum::Null),
                    (TextFunction::Lower, Datum::Text(s)) => Some(Datum::Text(s.to_lowercase())),
                    (TextFunction::Upper, Datum::Text(s)) => Some(Datum::Text(s.to_uppercase())),
                    (TextFunction::Length, Datum::Text(s)) => {
                        i64::try_from(s.chars().count()).ok().map(Datum::Int)
                    }
                    _ => None,
                }
            }
            Scalar::IntegerText(inner) => match inner.evaluate(table, row, params)? {
                Datum::Int(v) => Some(Datum::Text(v.to_string())),
                Datum::Null => Some(Datum::Null),
                _ => None,
            },
            Scalar::IntegerFloat(inner) => match inner.evaluate(table, row, params)? {
                Datum::Int(v) => Some(Datum::Float(v as f64)),
                Datum::Null => Some(Datum::Null),
                _ => None,
            },
        }
    }
}

/// `l op r` for two integers (None on overflow, which DataFusion reports its own way) or two
/// numbers one of which is a float (the integer is widened, as DataFusion casts it).
fn arithmetic(op: Arithmetic, l: Datum, r: Datum) -> Option<Datum> {
    let float = |l: f64, r: f64| {
        let v = match op {
            Arithmetic::Add => l + r,
            Arithmetic::Subtract => l - r,
            Arithmetic::Multiply => l * r,
        };
        Some(Datum::Float(v))
    };
    match (l, r) {
        (Datum::Null, _) | (_, Datum::Null) => Some(Datum::Null),
        (Datum::Int(l), Datum::Int(r)) => match op {
            Arithmetic::Add => l.checked_add(r),
            Arithmetic::Subtract => l.checked_sub(r),
            Arithmetic::Multiply => l.checked_mul(r),
        }
        .map(Datum::Int),
        (Datum::Float(l), Datum::Float(r)) => float(l, r),
        (Datum::Int(l), Datum::Float(r)) => float(l as f64, r),
        (Datum::Float(l), Datum::Int(r)) => float(l, r as f64),
        _ => None,
    }
}

impl Condition {
    fn compile(scope: &Scope<'_>, expr: &Expr) -> Option<Condition> {
        match expr {
            Expr::Nested(inner) => Condition::compile(scope, inner),
            Expr::IsNull(inner) => Some(Condition::IsNull(Scalar::compile(scope, inner)?, true)),
            Expr::IsNotNull(inner) => {
                Some(Condition::IsNull(Scalar::compile(scope, inner)?, false))
            }
            Expr::UnaryOp {
                op: UnaryOperator::Not,
                expr,
            } => Some(Condition::Not(Box::new(Condition::compile(scope, expr)?))),
            Expr::BinaryOp { left, op, right } => {
                let logical = |make: fn(Box<Condition>, Box<Condition>) -> Condition| {
                    Some(make(
                        Box::new(Condition::compile(scope, left)?),
                        Box::new(Condition::compile(scope, right)?),
                    ))
                };
                let op = match op {
                    BinaryOperator::And => return logical(Condition::And),
                    BinaryOperator::Or => return logical(Condition::Or),
                    BinaryOperator::Eq => Comparison::Eq,
                    BinaryOperator::NotEq => Comparison::NotEq,
                    BinaryOperator::Lt => Comparison::Lt,
                    BinaryOperator::LtEq => Comparison::LtEq,
                    BinaryOperator::Gt => Comparison::Gt,
                    BinaryOperator::GtEq => Comparison::GtEq,
                    _ => return None,
                };
                if scope.compares_in_datafusion(left) || scope.compares_in_datafusion(right) {
                    return None;
                }
                Some(Condition::Compare {
                    op,
                    left: Scalar::compile(scope, left)?,
                    right: Scalar::compile(scope, right)?,
                })
            }
            _ => None,
        }
    }

    fn reads_columns(&self) -> bool {
        match self {
            Condition::Compare { left, right, .. } => left.reads_columns() || right.reads_columns(),
            Condition::IsNull(value, _) => value.reads_columns(),
            Condition::Not(inner) => inner.reads_columns(),
            Condition::And(l, r) | Condition::Or(l, r) => l.reads_columns() || r.reads_columns(),
        }
    }

    /// Checks the condition's operands as [`Scalar::typed`] does: comparisons of two values
    /// of one kind (NULL goes with any), never floats (which compare by IEEE rules in one
    /// engine and by total order in another: NaN, -0) or bytes.
    fn typed(&self, table: &TableDef, params: &[Datum]) -> Option<()> {
        match self {
            Condition::Compare { left, right, .. } => {
                let kind = Kind::common([left.typed(table, params)?, right.typed(table, params)?])?;
                (!matches!(kind, Kind::Float | Kind::Bytes)).then_some(())
            }
            Condition::IsNull(value, _) => value.typed(table, params).map(|_| ()),
            Condition::Not(inner) => inner.typed(table, params),
            Condition::And(l, r) | Condition::Or(l, r) => {
                l.typed(table, params)?;
                r.typed(table, params)
            }
        }
    }

    /// True, false, or unknown (Some(None)); None where the native executor is not sure.
    fn evaluate(&self, table: &TableDef, row: &[Datum], params: &[Datum]) -> Option<Option<bool>> {
        match self {
            Condition::Compare { op, left, right } => {
                let (l, r) = (
                    left.evaluate(table, row, params)?,
                    right.evaluate(table, row, params)?,
                );
                if l.is_null() || r.is_null() {
                    return Some(None);
                }
                let ordering = l.key_cmp(&r);
                Some(Some(match op {
                    Comparison::Eq => ordering == Ordering::Equal,
                    Comparison::NotEq => ordering != Ordering::Equal,
                    Comparison::Lt => ordering == Ordering::Less,
                    Comparison::LtEq => ordering != Ordering::Greater,
                    Comparison::Gt => ordering == Ordering::Greater,
                    Comparison::GtEq => ordering != Ordering::Less,
                }))
            }
            Condition::IsNull(value, is_null) => {
                let value = value.evaluate(table, row, params)?;
                Some(Some(value.is_null() == *is_null))
            }
            Condition::Not(inner) => Some(inner.evaluate(table, row, params)?.map(|b| !b)),
            Condition::And(l, r) => {
                let (l, r) = (
                    l.evaluate(table, row, params)?,
                    r.evaluate(table, row, params)?,
                );
                Some(match (l, r) {
                    (Some(false), _) | (_, Some(false)) => Some(false),
                    (Some(true), Some(true)) => Some(true),
                    _ => None,
                })
            }
            Condition::Or(l, r) => {
                let (l, r) = (
                    l.evaluate(table, row, params)?,
                    r.evaluate(table, row, params)?,
                );
                Some(match (l, r) {
                    (Some(true), _) | (_, Some(true)) => Some(true),
                    (Some(false), Some(false)) => Some(false),
                    _ => None,
                })
            }
        }
    }
}

/// The argument list of a plain call: no FILTER, OVER, WITHIN GROUP, DISTINCT, parameters or
/// clauses inside (ORDER BY, LIMIT); None for anything else.
pub(crate) fn plain_arguments(function: &Function) -> Option<&FunctionArgumentList> {
    let plain = function.parameters == FunctionArguments::None
        && function.filter.is_none()
        && function.null_treatment.is_none()
        && function.over.is_none()
        && function.within_group.is_empty();
    let FunctionArguments::List(list) = &function.args else {
        return None;
    };
    if !plain || list.duplicate_treatment.is_some() || !list.clauses.is_empty() {
        return None;
    }
    Some(list)
}
