//! Prepared statements: one statement parsed once, with parameters bound at each run.
//!
//! A query the native executor runs keeps its compiled form (recompiled only when its table's
//! definition changes), so a repeated point get costs a bind, a plan choice among precomputed
//! candidates and the read. Any other statement has its parameters written into the parsed
//! statement as literals and runs as if typed, so it still skips the parsing; DataFusion plans
//! it afresh each time.

use std::ops::ControlFlow;
use std::sync::{Mutex, PoisonError};

use datafusion::arrow::record_batch::RecordBatch;
use datafusion::sql::sqlparser::ast::{
    CastKind, DataType as SqlType, ExactNumberInfo, Expr, Statement, Value, visit_expressions_mut,
};
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::parser::Parser;
use rowdex_codec::Datum;

use crate::database::{Output, Session};
use crate::native::{self, Executor, NativeQuery};
use crate::statement::{ParsedStatement, parse_with_parameters};
use crate::{Error, Result};

/// A statement ready to run many times; see [`Session::prepare`].
pub struct Prepared {
    session: Session,
    statement: ParsedStatement,
    parameters: usize,
    /// The native form of a query, compiled on first use.
    native: Mutex<Option<NativeQuery>>,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("statement", &self.statement.to_string())
            .field("parameters", &self.parameters)
            .finish_non_exhaustive()
    }
}

impl Prepared {
    pub(crate) fn new(session: Session, sql: &str) -> Result<Prepared> {
        let (statement, parameters) = parse_with_parameters(sql)?;
        Ok(Prepared {
            session,
            statement,
            parameters,
            native: Mutex::new(None),
        })
    }

    /// How many parameters the statement takes.
    pub fn parameter_count(&self) -> usize {
        self.parameters
    }

    /// Runs the statement with `params` as `$1`, `$2`, ...
    pub async fn execute(&self, params: &[Datum]) -> Result<Output> {
        if params.len() != self.parameters {
            return Err(Error::ParameterCount {
                expected: self.parameters,
                given: params.len(),
            });
        }
        if let Some(native) = self.native_query() {
            let hints = match &self.statement {
                ParsedStatement::Sql { hints, .. } => hints.clone(),
                ParsedStatement::Command(_) => Default::default(),
            };
            let txn = self.session.open_txn();
            if let Some(output) =
                native::run(&self.session.db, txn.as_ref(), &native, params, &hints).await?
            {
                return Ok(output);
            }
        }
        let bound = bind_literals(&self.statement, params)?;
        self.session.run(&bound).await
    }

    /// Runs a query and returns its batches.
    pub async fn query(&self, params: &[Datum]) -> Result<Vec<RecordBatch>> {
        match self.execute(params).await? {
            Output::Rows { batches, .. } => Ok(batches),
            _ => Ok(Vec::new()),
        }
    }

    /// The compiled native query, recompiled if its table changed since.
    fn native_query(&self) -> Option<NativeQuery> {
        if self.session.executor != Executor::Auto {
            return None;
        }
        let ParsedStatement::Sql { statement, .. } = &self.statement else {
            return None;
        };
        let Statement::Query(query) = statement.as_ref() else {
            return None;
        };
        let mut cached = self.native.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(native) = cached.as_ref()
            && native.is_current(&self.session.db)
        {
            return Some(native.clone());
        }
        *cached = NativeQuery::compile(&self.session.db, query);
        cached.clone()
    }
}

/// The statement with every `$n` replaced by the literal of `params[n - 1]`.
fn bind_literals(statement: &ParsedStatement, params: &[Datum]) -> Result<ParsedStatement> {
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
            Some(datum) => literal(datum),
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
fn literal(datum: &Datum) -> Result<Expr> {
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
