//! The error type of the rowdex library: one variant per thing a user can get wrong or act on.

use rowdex_catalog::CatalogError;
use rowdex_codec::CodecError;
use rowdex_store::StoreError;

pub type Result<T> = std::result::Result<T, Error>;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The SQL text does not parse; the parser's message carries the line and column.
    #[error("syntax error: {message}")]
    Parse { message: String },
    #[error(
        "expressions nest deeper than {limit} levels (a chain of {limit} ANDs, ORs or operators, say); split the statement or use IN (...)"
    )]
    ExpressionTooDeep { limit: usize },
    #[error(
        "queries nest deeper than {limit} levels (subqueries inside subqueries); flatten the statement or use WITH"
    )]
    QueriesTooDeep { limit: usize },
    #[error("unsupported: {what}")]
    Unsupported { what: String },
    #[error("table {table} does not exist")]
    TableNotFound { table: String },
    #[error("column {column} does not exist in table {table}")]
    ColumnNotFound { table: String, column: String },
    #[error("column {column} of table {table} is {expected}, but the value {value} is {found}")]
    TypeMismatch {
        table: String,
        column: String,
        expected: String,
        found: &'static str,
        value: String,
    },
    #[error(
        "column {column} of table {table} cannot be cast automatically to type {to} (ALTER COLUMN {column} TYPE ... USING {column}::type converts it)"
    )]
    CannotCastColumn {
        table: String,
        column: String,
        to: String,
    },
    /// A NUMERIC(precision, scale) value (an array's element) past its precision (22003).
    #[error(
        "numeric field overflow: a field with precision {precision}, scale {scale} must round to an absolute value less than 10^{}",
        i16::from(*precision) - i16::from(*scale)
    )]
    NumericOverflow { precision: u8, scale: i8 },
    #[error("{value} does not fit column {column} of table {table} ({expected})")]
    OutOfRange {
        table: String,
        column: String,
        expected: String,
        value: String,
    },
    #[error(
        "value too long for column {column} of table {table}: {length} characters, at most {max_len}"
    )]
    ValueTooLong {
        table: String,
        column: String,
        max_len: u32,
        length: usize,
    },
    #[error("column {column} of table {table} is part of the primary key and cannot be NULL")]
    NullInKey { table: String, column: String },
    #[error("column {column} of table {table} is NOT NULL")]
    NotNullViolation { table: String, column: String },
    #[error("new row for table {table} violates check constraint \"{constraint}\": CHECK ({expr})")]
    CheckViolation {
        table: String,
        constraint: String,
        expr: String,
    },
    #[error(
        "ON CONFLICT DO UPDATE in table {table} cannot affect row a second time: the statement proposes one key twice"
    )]
    ConflictTwice { table: String },
    #[error(
        "there is no unique or exclusion constraint matching the ON CONFLICT specification (table {table}: name its primary key or a UNIQUE index's columns)"
    )]
    NoConflictArbiter { table: String },
    #[error("check constraint \"{constraint}\" of table {table} is violated by some row")]
    CheckViolatedByRows { table: String, constraint: String },
    #[error("column {column} of table {table} contains null values")]
    ColumnHasNulls { table: String, column: String },
    #[error("constraint \"{constraint}\" for table \"{table}\" does not exist")]
    ConstraintNotFound { table: String, constraint: String },
    #[error("currval of sequence {sequence} is not yet defined in this session")]
    CurrvalUndefined { sequence: String },
    #[error(
        "cannot insert a value into column {column} of table {table}: it is GENERATED ALWAYS AS IDENTITY (leave it out, or write DEFAULT)"
    )]
    GeneratedAlways { table: String, column: String },
    #[error(
        "cannot write column {column} of table {table}: it is generated from {expr} (leave it out, or write DEFAULT)"
    )]
    GeneratedColumnWritten {
        table: String,
        column: String,
        expr: String,
    },
    #[error("bad generation expression for column {column}: {reason}")]
    BadGeneration { column: String, reason: String },
    #[error("{message}")]
    Raised { message: String },
    #[error(
        "triggers nest deeper than {limit} levels (a trigger that fires itself, directly or through others)"
    )]
    TriggerDepth { limit: usize },
    #[error("trigger {trigger}: {reason}")]
    BadTrigger { trigger: String, reason: String },
    #[error("bad DEFAULT for column {column}: {reason}")]
    BadDefault { column: String, reason: String },
    #[error("bad CHECK constraint {constraint}: {reason}")]
    BadCheck { constraint: String, reason: String },
    #[error("duplicate primary key in table {table}: {key}")]
    DuplicateKey { table: String, key: String },
    #[error("INSERT into {table} has {expected} target columns but {found} values")]
    ColumnCountMismatch {
        table: String,
        expected: usize,
        found: usize,
    },
    #[error("column {column} is named twice in the statement")]
    DuplicateTarget { column: String },
    /// A function refused an argument (`format('%q')`).
    #[error("{function}(): {reason}")]
    BadFunctionArgument {
        function: &'static str,
        reason: String,
    },
    #[error("invalid input syntax for type {type_name}: \"{value}\"")]
    InvalidTextRepresentation {
        type_name: &'static str,
        value: String,
    },
    /// Text that is no date or time of the type (22007 on the wire).
    #[error("invalid input syntax for type {type_name}: \"{value}\"")]
    InvalidDatetime {
        type_name: &'static str,
        value: String,
    },
    /// Text that is no one-dimensional array (22P02 on the wire).
    #[error("malformed array literal: \"{value}\"")]
    MalformedArray { value: String },
    /// A `TimeZone` setting that names no time zone.
    #[error("invalid value for parameter \"TimeZone\": \"{value}\"")]
    UnknownTimeZone { value: String },
    /// A SET of a parameter to a value it does not take (the message in PostgreSQL's words).
    #[error("{message}")]
    BadParameterValue { message: String },
    #[error("unknown type {name}")]
    UnknownType { name: String },
    /// Text that is not a JSON value a `json` or `jsonb` can hold.
    #[error("{0}")]
    Json(#[from] rowdex_codec::json::JsonError),
    #[error("bad table option: {option}")]
    BadTableOption { option: String },
    #[error("bad index option: {option}")]
    BadIndexOption { option: String },
    #[error("the statement conflicted with a concurrent write and changed nothing; retry it")]
    WriteConflict,
    #[error(
        "table {table} changed while the statement ran and the statement changed nothing; retry it"
    )]
    SchemaChanged { table: String },
    #[error(
        "the transaction conflicted with a concurrent write and was rolled back: nothing it wrote was kept; run it again"
    )]
    TransactionConflict,
    /// A locking clause on a query whose rows cannot be locked (0A000).
    #[error("{clause} is not allowed with {with}")]
    LockingNotAllowed { clause: String, with: String },
    /// A locking clause over a table an outer join may fill with NULLs (0A000).
    #[error("{clause} cannot be applied to the nullable side of an outer join")]
    LockingNullableSide { clause: String },
    /// `FOR UPDATE OF name` where no table of the FROM list goes by that name (42P01).
    #[error("relation \"{name}\" in FOR UPDATE clause not found in FROM clause")]
    LockedTableNotInFrom { name: String },
    /// A locking read that would lock more rows than the lock table keeps for one (53200).
    #[error("a FOR UPDATE/SHARE locks at most {limit} rows of a table; narrow its WHERE")]
    TooManyRowLocks { limit: usize },
    /// A cancel request stopped the statement while it waited for a row lock (57014).
    #[error("canceling statement due to user request")]
    StatementCancelled,
    /// `statement_timeout` ran out while the statement waited for a row lock (57014).
    #[error("canceling statement due to statement timeout")]
    StatementTimeout,
    #[error("SET TRANSACTION ISOLATION LEVEL must be called before any query")]
    IsolationAfterQuery,
    #[error("a transaction is already open; COMMIT or ROLLBACK it first")]
    TransactionAlreadyOpen,
    #[error("no transaction is open (BEGIN starts one)")]
    NoTransaction,
    #[error("{statement} cannot run inside a transaction; COMMIT or ROLLBACK first")]
    NotInTransaction { statement: String },
    #[error(
        "{statement} cannot run in a transaction block that has written: rowdex commits it at once, apart from the block, so it must come before the block's first write or schema change (or after COMMIT)"
    )]
    SchemaChangeAfterWrite { statement: String },
    #[error("cannot execute {statement} in a read-only transaction")]
    ReadOnlyTransaction { statement: String },
    #[error(
        "table {table} is READONLY: its rows cannot be written (ALTER TABLE {table} SET \
         (READONLY = false) allows writes again)"
    )]
    ReadOnlyTable { table: String },
    #[error("no savepoint named {name} in the open transaction")]
    NoSuchSavepoint { name: String },
    #[error(
        "insert or update on table \"{table}\" violates foreign key constraint \"{constraint}\": key {key} is not present in table \"{referenced}\""
    )]
    ForeignKeyViolation {
        table: String,
        constraint: String,
        key: String,
        referenced: String,
    },
    #[error(
        "update or delete on table \"{table}\" violates foreign key constraint \"{constraint}\" on table \"{referencing}\": key {key} is still referenced from table \"{referencing}\""
    )]
    StillReferenced {
        table: String,
        constraint: String,
        referencing: String,
        key: String,
    },
    #[error(
        "cannot drop {what} because other objects depend on it: {dependents} (DROP ... CASCADE drops them too)"
    )]
    DependentObjects { what: String, dependents: String },
    #[error("foreign key {constraint} of table {table}: {reason}")]
    BadForeignKey {
        table: String,
        constraint: String,
        reason: String,
    },
    #[error("UNIQUE index {index} on table {table} already holds {value}")]
    UniqueViolation {
        index: String,
        table: String,
        value: String,
    },
    #[error(
        "table {table} has no TTL, so no row of it expires (CREATE TABLE ... WITH (TTL = seconds))"
    )]
    NoTtl { table: String },
    #[error("table {table} keeps no older versions (CREATE TABLE ... WITH (VERSIONS = n))")]
    NoVersions { table: String },
    #[error("{what}")]
    BadHistoryRead { what: String },
    #[error("this query cannot be paged by cursor: {reason}")]
    NotPageable { reason: String },
    #[error("the cursor is not one rowdex made (damaged or truncated)")]
    BadCursor,
    #[error(
        "the cursor belongs to another query, or the table changed since it was made; start again from the first page"
    )]
    CursorMismatch,
    #[error("index {index} does not exist")]
    IndexNotFound { index: String },
    #[error("cannot {action} {path}: {source}")]
    File {
        action: &'static str,
        path: String,
        source: std::io::Error,
    },
    /// COPY FROM stopped at a row it could not convert; the complete batches before the one
    /// holding it were loaded, nothing of its own batch.
    #[error(
        "COPY stopped at line {line}: {source} ({loaded} rows were loaded: the batches before the one holding this line)"
    )]
    CopyRow {
        line: u64,
        loaded: u64,
        source: Box<Error>,
    },
    /// COPY FROM could not write a batch (a duplicate key, say): none of the batch was loaded,
    /// every row before it was.
    #[error(
        "COPY stopped in lines {first_line}..={last_line}: {source} (none of those lines was loaded; the {loaded} rows before them were)"
    )]
    CopyBatch {
        first_line: u64,
        last_line: u64,
        loaded: u64,
        source: Box<Error>,
    },
    #[error("cannot start a thread for {work}: {source}")]
    ThreadStart {
        work: &'static str,
        source: std::io::Error,
    },
    #[error("a worker thread stopped while {work} (a bug in rowdex; please report it)")]
    WorkerStopped { work: &'static str },
    #[error("the statement takes {expected} parameters, {given} were given")]
    ParameterCount { expected: usize, given: usize },
    #[error("a stored row count is corrupt: {0}")]
    CorruptStatistics(String),
    /// COPY data that breaks its format (an unterminated quote, bytes that are not UTF-8), or
    /// COPY options that cannot describe any data.
    #[error("malformed COPY data: {message}")]
    BadCopyData { message: String },
    /// The sender of `COPY ... FROM STDIN` data stopped before its end (a client's CopyFail or
    /// a dropped connection): the rows not yet written were not.
    #[error(
        "COPY FROM STDIN was abandoned before the end of its data ({loaded} rows before it were loaded)"
    )]
    CopyAbandoned { loaded: u64 },
    /// A DataFusion optimizer rule that rowdex replaces, or places its own rules before, is not
    /// in the DataFusion built with (an upgrade renamed or removed it).
    #[error(
        "DataFusion has no optimizer rule named {rule}: rowdex's workaround around it (df/rules.rs) would silently drop out; check it against this DataFusion version"
    )]
    OptimizerRuleMissing { rule: &'static str },
    #[error(transparent)]
    Index(rowdex_indexer::IndexError),
    #[error(transparent)]
    Catalog(CatalogError),
    #[error(transparent)]
    Store(StoreError),
    #[error(transparent)]
    Codec(#[from] CodecError),
    #[error(transparent)]
    Arrow(#[from] datafusion::arrow::error::ArrowError),
    #[error("{0}")]
    DataFusion(Box<datafusion::error::DataFusionError>),
}

impl Error {
    /// Whether a commit was sent and its result never came back: the write may have been
    /// applied. Such an error is not retryable (running the write again could apply it
    /// twice); the data must be read again to know.
    pub fn is_outcome_unknown(&self) -> bool {
        match self {
            Error::Store(StoreError::CommitOutcomeUnknown { .. }) => true,
            Error::CopyRow { source, .. } | Error::CopyBatch { source, .. } => {
                source.is_outcome_unknown()
            }
            _ => false,
        }
    }

    /// Whether it is a write conflict: another transaction changed what this one read or
    /// wrote.
    pub fn is_conflict(&self) -> bool {
        matches!(self, Error::WriteConflict | Error::TransactionConflict)
    }

    /// Whether running the same statement again may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Error::WriteConflict
                | Error::SchemaChanged { .. }
                | Error::TransactionConflict
                // The victim of a deadlock: its statement changed nothing, and the others
                // go on once it ends.
                | Error::Store(StoreError::Deadlock)
                // A new snapshot reads a revision the store still keeps.
                | Error::Store(StoreError::SnapshotTooOld { .. })
                // A commit proved not applied.
                | Error::Store(StoreError::Interrupted { .. })
        )
    }
}

impl From<StoreError> for Error {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Conflict => Error::WriteConflict,
            other => Error::Store(other),
        }
    }
}

impl From<CatalogError> for Error {
    fn from(error: CatalogError) -> Self {
        match error {
            // A catalog change that lost a race (or whose commit's outcome is unknown) is the
            // store's error, as for a row write: retryable, or not claimed to have failed.
            CatalogError::Store(store) => store.into(),
            other => Error::Catalog(other),
        }
    }
}

impl From<rowdex_indexer::IndexError> for Error {
    fn from(error: rowdex_indexer::IndexError) -> Self {
        use rowdex_indexer::IndexError;
        match error {
            // An index build or repair that kept losing races is as retryable as a write.
            IndexError::Store(store) => store.into(),
            other => Error::Index(other),
        }
    }
}

impl From<datafusion::error::DataFusionError> for Error {
    fn from(error: datafusion::error::DataFusionError) -> Self {
        use datafusion::error::DataFusionError;
        // Our own errors travel through DataFusion as External; give them back their type.
        match error {
            DataFusionError::External(inner) => match inner.downcast::<Error>() {
                Ok(ours) => *ours,
                Err(other) => Error::DataFusion(Box::new(DataFusionError::External(other))),
            },
            DataFusionError::SQL(parse, _) => Error::Parse {
                message: parse.to_string(),
            },
            // An optimizer rule's error comes wrapped in the rule's name.
            DataFusionError::Context(context, inner) => match Error::from(*inner) {
                Error::DataFusion(inner) => {
                    Error::DataFusion(Box::new(DataFusionError::Context(context, inner)))
                }
                ours => ours,
            },
            other => Error::DataFusion(Box::new(other)),
        }
    }
}

impl From<Error> for datafusion::error::DataFusionError {
    fn from(error: Error) -> Self {
        datafusion::error::DataFusionError::External(Box::new(error))
    }
}
