//! rowdex's errors as PostgreSQL error responses: the SQLSTATE code a driver acts on (40001
//! retries, 23505 reports a duplicate), the message, and for a syntax error the position in the
//! statement's text.

use pgwire::error::{ErrorInfo, PgWireError};
use rowdex::Error;
use rowdex::datafusion::error::DataFusionError;
use rowdex_catalog::CatalogError;
use rowdex_codec::json::JsonError;
use rowdex_store::StoreError;

/// `current transaction is aborted`: a statement sent after an error in a transaction block.
pub const IN_FAILED_TRANSACTION: &str = "25P02";
/// A statement the wire protocol carries that rowdex does not run.
pub const FEATURE_NOT_SUPPORTED: &str = "0A000";
/// The client broke the protocol (bad parameter bytes, say).
pub const PROTOCOL_VIOLATION: &str = "08P01";
/// A statement stopped at the client's request (a CopyFail, a CancelRequest).
pub const QUERY_CANCELED: &str = "57014";
/// A warning (sent as a notice; the statement succeeded).
pub const WARNING: &str = "01000";
/// A value in a parameter or a SET that does not parse.
pub const INVALID_PARAMETER_VALUE: &str = "22023";
/// A value that does not fit its type (a 64-bit value in an INTEGER column on the wire).
pub const NUMERIC_VALUE_OUT_OF_RANGE: &str = "22003";
/// Text that does not read as a value of its type (`'x'::uuid`).
pub const INVALID_TEXT_REPRESENTATION: &str = "22P02";

/// An `ERROR` response with `code` and `message`.
pub fn error_info(code: &str, message: impl Into<String>) -> ErrorInfo {
    ErrorInfo::new("ERROR".to_string(), code.to_string(), message.into())
}

/// The error response for a statement that failed with `error`; `sql` is the statement's text
/// (a syntax error's line and column become a position in it).
pub fn statement_error(error: &Error, sql: &str) -> ErrorInfo {
    let mut info = error_info(code_of(error), error.to_string());
    if let Error::Parse { message } = error {
        info.position = parse_position(message, sql).map(|p| p.to_string());
    }
    if let Error::Json(json) = error {
        // PostgreSQL's message, and where the text went wrong as its detail.
        info.message = json.message();
        info.detail = json.detail().map(str::to_string);
    }
    if error.is_retryable() {
        info.hint = Some("run the statement (or the transaction) again".to_string());
    }
    info
}

/// [`statement_error`] as the error type pgwire's handlers return.
pub fn pg_error(error: &Error, sql: &str) -> PgWireError {
    PgWireError::UserError(Box::new(statement_error(error, sql)))
}

/// `transaction_resolution_unknown`: a commit was sent and its result lost.
pub const RESOLUTION_UNKNOWN: &str = "08007";

/// The SQLSTATE of a rowdex error.
pub fn code_of(error: &Error) -> &'static str {
    if error.is_outcome_unknown() {
        return RESOLUTION_UNKNOWN;
    }
    match error {
        Error::Parse { .. } | Error::ColumnCountMismatch { .. } => "42601",
        Error::ExpressionTooDeep { .. } | Error::QueriesTooDeep { .. } => "54001",
        Error::Unsupported { .. } | Error::NotPageable { .. } | Error::LockingNotAllowed { .. } => {
            FEATURE_NOT_SUPPORTED
        }
        Error::TableNotFound { .. } => "42P01",
        Error::ColumnNotFound { .. } => "42703",
        Error::IndexNotFound { .. } | Error::UnknownType { .. } => "42704",
        // Text that does not read as the column's type: PostgreSQL's invalid input syntax
        // (a quoted literal there is of no type until it meets the column).
        Error::TypeMismatch { found: "TEXT", .. } => "22P02",
        Error::TypeMismatch { .. } | Error::CannotCastColumn { .. } => "42804",
        Error::BadDefault { .. } | Error::BadCheck { .. } => "42P17",
        Error::OutOfRange { .. } | Error::NumericOverflow { .. } => "22003",
        Error::ValueTooLong { .. } => "22001",
        Error::NullInKey { .. } | Error::NotNullViolation { .. } => "23502",
        Error::CheckViolation { .. } | Error::CheckViolatedByRows { .. } => "23514",
        Error::ColumnHasNulls { .. } => "23502",
        Error::CurrvalUndefined { .. } => "55000",
        Error::GeneratedAlways { .. } | Error::GeneratedColumnWritten { .. } => "428C9",
        Error::BadGeneration { .. } => "42P17",
        Error::Raised { .. } => "P0001",
        Error::InvalidTextRepresentation { .. } => INVALID_TEXT_REPRESENTATION,
        Error::InvalidDatetime { .. } => "22007",
        Error::MalformedArray { .. } => INVALID_TEXT_REPRESENTATION,
        Error::UnknownTimeZone { .. } | Error::BadParameterValue { .. } => "22023",
        Error::Json(error) => match error {
            JsonError::Syntax { .. } | JsonError::PathElementNotInteger { .. } => {
                INVALID_TEXT_REPRESENTATION
            }
            JsonError::UnsupportedEscape { .. } => "22P05",
            JsonError::NumberOutOfRange => "22003",
            JsonError::TooDeep => "54001",
        },
        Error::TriggerDepth { .. } => "54001",
        Error::BadTrigger { .. } => "42P17",
        Error::ConstraintNotFound { .. } => "42704",
        Error::ConflictTwice { .. } => "21000",
        Error::NoConflictArbiter { .. } => "42P10",
        Error::DuplicateKey { .. } | Error::UniqueViolation { .. } => "23505",
        Error::ForeignKeyViolation { .. } | Error::StillReferenced { .. } => "23503",
        Error::DependentObjects { .. } => "2BP01",
        Error::BadForeignKey { .. } => "42830",
        Error::DuplicateTarget { .. } => "42701",
        Error::BadTableOption { .. }
        | Error::BadIndexOption { .. }
        | Error::BadHistoryRead { .. }
        | Error::BadFunctionArgument { .. }
        | Error::BadCursor
        | Error::CursorMismatch => INVALID_PARAMETER_VALUE,
        Error::WriteConflict | Error::SchemaChanged { .. } | Error::TransactionConflict => "40001",
        Error::TransactionAlreadyOpen
        | Error::IsolationAfterQuery
        | Error::NotInTransaction { .. }
        | Error::SchemaChangeAfterWrite { .. } => "25001",
        Error::ReadOnlyTransaction { .. } => "25006",
        Error::StatementCancelled | Error::StatementTimeout => QUERY_CANCELED,
        Error::NoTransaction => "25P01",
        Error::NoSuchSavepoint { .. } => "3B001",
        Error::NoTtl { .. } | Error::NoVersions { .. } | Error::ReadOnlyTable { .. } => "55000",
        Error::File { .. } => "58030",
        Error::CopyRow { source, .. } | Error::CopyBatch { source, .. } => code_of(source),
        Error::BadCopyData { .. } => "22P04",
        Error::CopyAbandoned { .. } => "57014",
        Error::ParameterCount { .. } => PROTOCOL_VIOLATION,
        Error::CorruptStatistics(_) => "XX001",
        Error::Catalog(catalog) => catalog_code(catalog),
        Error::Store(store) => store_code(store),
        Error::Index(rowdex_index) => match rowdex_index.to_string() {
            text if text.starts_with("UNIQUE index") => "23505",
            _ => "XX000",
        },
        Error::Codec(_) => "22000",
        Error::DataFusion(inner) => datafusion_code(inner),
        Error::Arrow(arrow) => arrow_code(&arrow.to_string()),
        _ => "XX000",
    }
}

fn store_code(error: &StoreError) -> &'static str {
    match error {
        // connection_failure: the cluster under the database cannot be reached.
        StoreError::Unavailable { .. } => "08006",
        // program_limit_exceeded: the store server's limits refused the statement.
        StoreError::ServerLimit { .. } | StoreError::KeyTooLarge { .. } => "54000",
        StoreError::ValueTooLarge { .. } => "54000",
        StoreError::SnapshotTooOld { .. } => "72000",
        // serialization_failure: nothing was written; drivers run it again.
        StoreError::Interrupted { .. } => "40001",
        // deadlock_detected: this transaction was the victim; rolling back frees the others.
        StoreError::Deadlock => "40P01",
        // lock_not_available: a row lock's timeout ran out, or NOWAIT found it held.
        StoreError::LockTimeout | StoreError::LockNotAvailable => "55P03",
        _ => "XX000",
    }
}

fn catalog_code(error: &CatalogError) -> &'static str {
    match error {
        CatalogError::TableExists { .. } => "42P07",
        CatalogError::ViewExists { .. } | CatalogError::IndexExists { .. } => "42P07",
        CatalogError::TableNotFound { .. } | CatalogError::ViewNotFound { .. } => "42P01",
        CatalogError::IndexNotFound { .. } | CatalogError::RoleNotFound { .. } => "42704",
        CatalogError::RoleExists { .. } | CatalogError::TriggerExists { .. } => "42710",
        CatalogError::TriggerNotFound { .. } => "42704",
        CatalogError::ColumnNotFound { .. } | CatalogError::KeyColumnNotFound { .. } => "42703",
        CatalogError::DuplicateColumn { .. }
        | CatalogError::DuplicateIndexColumn { .. }
        | CatalogError::ColumnExists { .. } => "42701",
        CatalogError::SequenceExists { .. } => "42P07",
        CatalogError::SequenceNotFound { .. } => "42P01",
        CatalogError::DropKeyColumn { .. }
        | CatalogError::DropIndexedColumn { .. }
        | CatalogError::DropGenerationSource { .. } => "2BP01",
        CatalogError::ReservedColumn { .. } => "42939",
        CatalogError::PrimaryKeyExists { .. } => "42P16",
        CatalogError::Corrupt { .. } => "XX001",
        CatalogError::Store(_) => "58000",
        _ => INVALID_PARAMETER_VALUE,
    }
}

fn datafusion_code(error: &DataFusionError) -> &'static str {
    // Diagnostics and contexts wrap the error that says what went wrong.
    match error.find_root() {
        DataFusionError::SchemaError(schema, _) => match schema.as_ref() {
            rowdex::datafusion::common::SchemaError::FieldNotFound { .. } => "42703",
            rowdex::datafusion::common::SchemaError::AmbiguousReference { .. } => "42702",
            _ => "42000",
        },
        DataFusionError::SQL(..) => "42601",
        DataFusionError::Plan(message) => plan_code(message),
        DataFusionError::NotImplemented(_) => FEATURE_NOT_SUPPORTED,
        DataFusionError::ArrowError(arrow, _) => arrow_code(&arrow.to_string()),
        DataFusionError::Context(_, inner) => datafusion_code(inner),
        DataFusionError::ResourcesExhausted(_) => "53200",
        // A rowdex error a catalog function raised (a relation that does not exist).
        DataFusionError::External(inner) => match inner.downcast_ref::<Error>() {
            Some(rowdex) => code_of(rowdex),
            None => arrow_code(&inner.to_string()),
        },
        other => arrow_code(&other.to_string()),
    }
}

/// A planning error, told apart by its text: a call no function answers (an unknown name, or
/// arguments no signature of the name takes) is PostgreSQL's undefined_function.
fn plan_code(message: &str) -> &'static str {
    let undefined_function = message.starts_with("Invalid function")
        || message.contains("to satisfy a call to")
        || message.contains("No function matches");
    if undefined_function { "42883" } else { "42000" }
}

/// Arrow reports its errors as text; the two a query meets are told apart by it.
fn arrow_code(text: &str) -> &'static str {
    if text.contains("Divide by zero") {
        "22012"
    } else if text.contains("Overflow")
        || text.contains("overflow")
        || text.contains("Can't cast value")
    {
        // A number cast to a type too narrow for it (`40000::smallint`): out of range.
        "22003"
    } else if text.contains("Cast error") || text.contains("Cannot cast") {
        "22P02"
    } else {
        "XX000"
    }
}

/// The 1-based character position in `sql` of the parser's "Line: L, Column: C".
fn parse_position(message: &str, sql: &str) -> Option<usize> {
    let after_line = &message[message.find("Line: ")? + "Line: ".len()..];
    let line: usize = after_line.split(',').next()?.trim().parse().ok()?;
    let after_column = &after_line[after_line.find("Column: ")? + "Column: ".len()..];
    let column: usize = after_column
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .ok()?;
    let before: usize = sql
        .split('\n')
        .take(line.checked_sub(1)?)
        .map(|l| l.chars().count() + 1)
        .sum();
    Some(before + column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_syntax_error_points_into_the_statement() {
        let sql = "SELECT 1;\nSELEC x";
        let message =
            "sql parser error: Expected: an SQL statement, found: SELEC at Line: 2, Column: 1";
        assert_eq!(parse_position(message, sql), Some(11));
        assert_eq!(parse_position("no position here", sql), None);
    }

    #[test]
    fn retryable_errors_are_serialization_failures() {
        for error in [Error::WriteConflict, Error::TransactionConflict] {
            assert_eq!(code_of(&error), "40001");
            assert!(statement_error(&error, "").hint.is_some());
        }
        let duplicate = Error::DuplicateKey {
            table: "t".into(),
            key: "1".into(),
        };
        assert_eq!(code_of(&duplicate), "23505");
    }

    #[test]
    fn row_lock_failures_have_postgresql_codes() {
        assert_eq!(store_code(&StoreError::Deadlock), "40P01");
        assert_eq!(store_code(&StoreError::LockTimeout), "55P03");
        assert_eq!(store_code(&StoreError::LockNotAvailable), "55P03");
    }
}
