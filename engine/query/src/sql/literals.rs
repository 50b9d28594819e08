//! Every rule that turns SQL literals into values, or values back into literals, side by side:
//! they differ on purpose, and each says why.
//!
//! * **The SQLite rule** ([`literal_as_sqlite`]), for the constant rows of an INSERT's VALUES:
//!   an integer too large for 64 bits becomes a double, as SQLite stores it.
//! * **The exact rule** ([`literal_exact`], [`number_exact`]), for values the native executor
//!   compares with columns and for literals lifted out of cached query text ([`Lifted`]): a
//!   literal is read only where DataFusion reads it the same way (a huge integer, which
//!   DataFusion widens, is not read at all), so both executors give the same answer.
//! * **Back to SQL** ([`literal_of_datum`], [`bind_literals`]): a prepared statement that is not
//!   compiled natively gets its parameters written in as the literals a user would have typed.
//!
//! DataFusion's own literals (`ScalarValue`s in filters) are read by `values::datum_from_scalar`.

use std::fmt::Write;
use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    self, CastKind, DataType as SqlType, ExactNumberInfo, Expr, SetExpr, Statement, TimezoneInfo,
    UnaryOperator, Value, visit_expressions, visit_expressions_mut,
};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer, Whitespace};
use rowdex_codec::Datum;

use crate::error::{Error, Result};
use crate::sql::parse::{ParsedStatement, ScriptStatement};

/// A constant as an INSERT stores it (the SQLite rule): NULL, a boolean, a string, or a number
/// with an optional minus; None for anything that needs evaluating.
pub(crate) fn literal_as_sqlite(expr: &Expr) -> Option<Datum> {
    match expr {
        Expr::Value(value) => match &value.value {
            Value::Null => Some(Datum::Null),
            Value::Boolean(b) => Some(Datum::Boolean(*b)),
            Value::SingleQuotedString(s) => Some(Datum::Text(s.clone())),
            Value::Number(text, _) => number_as_sqlite(text, false),
            _ => None,
        },
        Expr::UnaryOp { op, expr } => match (op, expr.as_ref()) {
            (UnaryOperator::Minus, Expr::Value(value)) => match &value.value {
                Value::Number(text, _) => number_as_sqlite(text, true),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    }
}

/// A number as SQLite stores it: an integer when it fits 64 bits, otherwise a double (a huge
/// integer included, rounded).
pub(crate) fn number_as_sqlite(text: &str, negative: bool) -> Option<Datum> {
    let signed = if negative {
        format!("-{text}")
    } else {
        text.to_string()
    };
    if let Ok(v) = signed.parse::<i64>() {
        return Some(Datum::Int(v));
    }
    signed
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .map(Datum::Float)
}

/// The rows of a `VALUES` list made only of constants (the common bulk INSERT shape, where
/// planning would cost more than the write), read by the SQLite rule. None when any item needs
/// evaluation.
pub(crate) fn literal_rows(query: &ast::Query) -> Option<Vec<Vec<Datum>>> {
    if query.with.is_some() || query.order_by.is_some() || query.limit_clause.is_some() {
        return None;
    }
    let SetExpr::Values(values) = query.body.as_ref() else {
        return None;
    };
    values
        .rows
        .iter()
        .map(|row| row.iter().map(literal_as_sqlite).collect())
        .collect()
}

/// A literal exactly as DataFusion reads it: a number (see [`number_exact`]), a string, a
/// boolean, NULL, a negated number, or `TIMESTAMP '...'` / `DATE '...'` in the forms both read
/// alike. None for anything else (a time zone, a placeholder, an expression), which the caller
/// leaves to DataFusion.
pub(crate) fn literal_exact(expr: &Expr) -> Option<Datum> {
    match expr {
        Expr::Value(value) => match &value.value {
            Value::Number(text, false) => number_exact(text),
            Value::SingleQuotedString(text) => Some(Datum::Text(text.clone())),
            Value::Boolean(b) => Some(Datum::Boolean(*b)),
            Value::Null => Some(Datum::Null),
            _ => None,
        },
        Expr::TypedString(typed) => {
            let Value::SingleQuotedString(text) = &typed.value.value else {
                return None;
            };
            match &typed.data_type {
                SqlType::Timestamp(_, TimezoneInfo::None) | SqlType::Datetime(_) => {
                    rowdex_codec::parse_timestamp(text).map(Datum::Timestamp)
                }
                SqlType::Date => rowdex_codec::parse_date(text).map(Datum::Date),
                SqlType::Uuid => rowdex_codec::parse_uuid(text).map(Datum::Uuid),
                _ => None,
            }
        }
        // `'...'::uuid`: DataFusion reads it through `to_uuid` (`sql::type_casts`), the same value.
        Expr::Cast {
            expr,
            data_type: SqlType::Uuid,
            ..
        } => match expr.as_ref() {
            Expr::Value(value) => match &value.value {
                Value::SingleQuotedString(text) => rowdex_codec::parse_uuid(text).map(Datum::Uuid),
                _ => None,
            },
            _ => None,
        },
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => match expr.as_ref() {
            Expr::Value(value) => match &value.value {
                Value::Number(text, false) => number_exact(&format!("-{text}")),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    }
}

/// A number literal as DataFusion reads it: an integer when it fits 64 bits, a float when it
/// has a point or an exponent. Anything else (a huge integer, which DataFusion widens) is None.
pub(crate) fn number_exact(text: &str) -> Option<Datum> {
    if let Ok(v) = text.parse::<i64>() {
        return Some(Datum::Int(v));
    }
    if text.contains(['.', 'e', 'E']) {
        let v: f64 = text.parse().ok()?;
        return v.is_finite().then_some(Datum::Float(v));
    }
    None
}

/// The most literals an INSERT's text may have to be lifted (see [`Lifted::from_sql`]).
const INSERT_LITERALS: usize = 64;

/// A statement's text with its literals lifted out: the key of the compiled-query cache, so a
/// query written with other literals each time compiles once.
#[derive(Debug)]
pub(crate) struct Lifted {
    /// The text with `$1`, `$2`, ... where the literals were.
    pub key: String,
    pub literals: Vec<Datum>,
}

impl Lifted {
    /// Lifts the number and string literals (read by the exact rule) out of a single statement
    /// without placeholders of its own (an INSERT's only up to `INSERT_LITERALS` of them);
    /// None for anything else (several statements, a literal the exact rule does not read, a
    /// tokenizer error, which the normal path reports).
    pub(crate) fn from_sql(sql: &str) -> Option<Lifted> {
        let tokens = Tokenizer::new(&GenericDialect {}, sql).tokenize().ok()?;
        Lifted::from_tokens(tokens.iter())
    }

    /// [`Lifted::from_sql`] over a statement already tokenized (a script's statement).
    pub(crate) fn from_script_statement(statement: &ScriptStatement) -> Option<Lifted> {
        Lifted::from_tokens(statement.tokens().iter().map(|t| &t.token))
    }

    fn from_tokens<'a>(tokens: impl Iterator<Item = &'a Token>) -> Option<Lifted> {
        let mut tokens = tokens.peekable();
        // Only a query, an UPDATE, a DELETE or an INSERT can be cached: anything else is not
        // lifted, so it is parsed once, by the normal path.
        while let Some(Token::Whitespace(_)) = tokens.peek() {
            tokens.next();
        }
        let insert = match tokens.peek() {
            Some(Token::Word(word))
                if matches!(
                    word.keyword,
                    Keyword::SELECT | Keyword::WITH | Keyword::UPDATE | Keyword::DELETE
                ) =>
            {
                false
            }
            Some(Token::Word(word)) if word.keyword == Keyword::INSERT => true,
            Some(Token::LParen) => false,
            _ => return None,
        };
        let mut key = String::new();
        let mut literals = Vec::new();
        let mut ended = false;
        for token in tokens {
            if ended && !matches!(token, Token::Whitespace(_) | Token::SemiColon) {
                return None;
            }
            match token {
                Token::SemiColon => ended = true,
                Token::Placeholder(_) => return None,
                // An INSERT of many rows is parsed once by the normal path rather than kept
                // under a key its row count makes unique.
                Token::Number(..) | Token::SingleQuotedString(_)
                    if insert && literals.len() >= INSERT_LITERALS =>
                {
                    return None;
                }
                Token::Number(text, false) => {
                    literals.push(number_exact(text)?);
                    let _ = write!(key, "${}", literals.len());
                }
                Token::SingleQuotedString(text) => {
                    literals.push(Datum::Text(text.clone()));
                    let _ = write!(key, "${}", literals.len());
                }
                // Line breaks and spaces around the statement do not change it.
                Token::Whitespace(Whitespace::Space | Whitespace::Newline | Whitespace::Tab)
                    if key.is_empty() || ended => {}
                _ => {
                    let _ = write!(key, "{token}");
                }
            }
        }
        let kept = key.trim_end().len();
        key.truncate(kept);
        Some(Lifted { key, literals })
    }
}

/// The statement with every `$n` replaced by the literal of `params[n - 1]`.
pub(crate) fn bind_literals(
    statement: &ParsedStatement,
    params: &[Datum],
) -> Result<ParsedStatement> {
    let ParsedStatement::Sql {
        statement,
        upsert,
        hints,
        families,
    } = statement
    else {
        return Ok(statement.clone());
    };
    let mut statement = statement.as_ref().clone();
    let mut failure = None;
    let _ = visit_expressions_mut(&mut statement, |expr| {
        let Expr::Value(value) = expr else {
            return ControlFlow::Continue(());
        };
        let Value::Placeholder(name) = &value.value else {
            return ControlFlow::Continue(());
        };
        let datum = name
            .strip_prefix('$')
            .and_then(|n| n.parse::<usize>().ok())
            .and_then(|n| n.checked_sub(1))
            .and_then(|i| params.get(i));
        let literal = match datum {
            Some(datum) => literal_of_datum(datum),
            None => Err(Error::ParameterCount {
                expected: params.len() + 1,
                given: params.len(),
            }),
        };
        match literal {
            Ok(literal) => {
                *expr = literal;
                ControlFlow::Continue(())
            }
            Err(error) => {
                failure = Some(error);
                ControlFlow::Break(())
            }
        }
    });
    if let Some(error) = failure {
        return Err(error);
    }
    Ok(ParsedStatement::Sql {
        statement: Box::new(statement),
        upsert: *upsert,
        hints: hints.clone(),
        families: families.clone(),
    })
}

/// A SQL expression for a parameter value, as the user would have written it.
pub(crate) fn literal_of_datum(datum: &Datum) -> Result<Expr> {
    match datum {
        Datum::Float(v) if !v.is_finite() => Ok(Expr::Cast {
            kind: CastKind::Cast,
            expr: Box::new(Expr::value(Value::SingleQuotedString(datum.to_string()))),
            data_type: SqlType::Double(ExactNumberInfo::None),
            array: false,
            format: None,
        }),
        // A DECIMAL datum is unscaled: its meaning depends on a column it is not tied to here.
        Datum::Decimal(_) => Err(Error::Unsupported {
            what: "DECIMAL parameters (pass the value as text or a float)".to_string(),
        }),
        // What the parser makes of the literal's text, built directly (a long string is not
        // tokenized again).
        Datum::Null => Ok(Expr::value(Value::Null)),
        Datum::Int(v) if *v >= 0 => Ok(Expr::value(Value::Number(v.to_string(), false))),
        Datum::Text(text) => Ok(Expr::value(Value::SingleQuotedString(text.clone()))),
        _ => {
            let text = datum.to_string();
            Parser::new(&GenericDialect {})
                .try_with_sql(&text)
                .and_then(|mut parser| parser.parse_expr())
                .map_err(|e| Error::Parse {
                    message: format!("parameter value {text}: {e}"),
                })
        }
    }
}

/// How many `$n` placeholders `statement` holds as values (where `bind_literals` replaces them).
pub(crate) fn value_placeholders(statement: &Statement) -> usize {
    let mut count = 0;
    let _ = visit_expressions(statement, |expr| {
        if let Expr::Value(value) = expr
            && matches!(value.value, Value::Placeholder(_))
        {
            count += 1;
        }
        ControlFlow::<()>::Continue(())
    });
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_built_directly_are_what_the_parser_makes_of_their_text() {
        for datum in [
            Datum::Null,
            Datum::Int(0),
            Datum::Int(42),
            Datum::Int(i64::MAX),
            Datum::Text(String::new()),
            Datum::Text("it's a \\ test".to_string()),
        ] {
            let text = datum.to_string();
            let parsed = Parser::new(&GenericDialect {})
                .try_with_sql(&text)
                .and_then(|mut parser| parser.parse_expr())
                .map_err(|e| e.to_string());
            assert_eq!(literal_of_datum(&datum).ok(), parsed.ok(), "{text}");
        }
    }

    #[test]
    fn the_two_number_rules_differ_only_where_datafusion_widens() {
        let huge = "99999999999999999999";
        assert_eq!(number_as_sqlite(huge, false), Some(Datum::Float(1e20)));
        assert_eq!(number_exact(huge), None);
        for (text, value) in [("42", Datum::Int(42)), ("2.5", Datum::Float(2.5))] {
            assert_eq!(number_as_sqlite(text, false), Some(value.clone()));
            assert_eq!(number_exact(text), Some(value));
        }
        assert_eq!(number_as_sqlite("7", true), Some(Datum::Int(-7)));
        assert_eq!(number_exact("-7"), Some(Datum::Int(-7)));
    }

    #[test]
    fn lifting_keys_queries_by_their_shape() {
        let a = Lifted::from_sql("SELECT v FROM t WHERE k = 7 AND s = 'x';");
        let b = Lifted::from_sql("SELECT v FROM t WHERE k = 8 AND s = 'y'");
        let (Some(a), Some(b)) = (a, b) else {
            panic!("both lift");
        };
        assert_eq!(a.key.trim_end_matches(';'), b.key);
        assert_eq!(a.literals, vec![Datum::Int(7), Datum::Text("x".into())]);
        // Placeholders of its own, two statements, or a literal the exact rule does not read.
        assert!(Lifted::from_sql("SELECT v FROM t WHERE k = $1").is_none());
        assert!(Lifted::from_sql("CREATE TABLE t (a VARCHAR(10))").is_none());
        // An INSERT of a few rows lifts; one of many is parsed as it is.
        let few = Lifted::from_sql("INSERT INTO t VALUES (1, 'a'), (2, 'b')");
        assert_eq!(
            few.map(|l| (l.key, l.literals.len())),
            Some(("INSERT INTO t VALUES ($1, $2), ($3, $4)".to_string(), 4))
        );
        let rows: Vec<String> = (0..INSERT_LITERALS).map(|i| format!("({i})")).collect();
        let many = format!("INSERT INTO t VALUES {}", rows.join(", "));
        assert!(Lifted::from_sql(&many).is_some());
        assert!(Lifted::from_sql(&format!("{many}, (0)")).is_none());
        assert!(Lifted::from_sql(" /*+ NO_INDEX */ SELECT 1").is_some());
        assert!(Lifted::from_sql("SELECT 1; SELECT 2").is_none());
        assert!(Lifted::from_sql("SELECT 99999999999999999999").is_none());
    }

    #[test]
    fn parameters_become_the_literals_a_user_would_type() -> Result<()> {
        let statements =
            crate::sql::parse::split_statements("SELECT * FROM t WHERE a = $1 AND b = $2")?;
        let bound = bind_literals(
            &statements[0],
            &[Datum::Text("it's".into()), Datum::Float(f64::INFINITY)],
        )?;
        assert_eq!(
            bound.to_string(),
            "SELECT * FROM t WHERE a = 'it''s' AND b = CAST('Infinity' AS DOUBLE)"
        );
        assert!(bind_literals(&statements[0], &[Datum::Int(1)]).is_err());
        Ok(())
    }
}
