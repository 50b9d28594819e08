//! The catalog's error type.

use rowdex_codec::CodecError;
use rowdex_store::StoreError;

pub type Result<T> = std::result::Result<T, CatalogError>;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogError {
    #[error("table {table} already exists")]
    TableExists { table: String },
    #[error("table {table} does not exist")]
    TableNotFound { table: String },
    #[error("table {table} already has a primary key")]
    PrimaryKeyExists { table: String },
    #[error("column {column} is declared twice in table {table}")]
    DuplicateColumn { table: String, column: String },
    #[error("primary key column {column} is not a column of table {table}")]
    KeyColumnNotFound { table: String, column: String },
    #[error("a view named {view} already exists")]
    ViewExists { view: String },
    #[error("view {view} does not exist")]
    ViewNotFound { view: String },
    #[error("index {index} already exists")]
    IndexExists { index: String },
    #[error("trigger {trigger} already exists")]
    TriggerExists { trigger: String },
    #[error("trigger {trigger} does not exist")]
    TriggerNotFound { trigger: String },
    #[error("index {index} does not exist")]
    IndexNotFound { index: String },
    #[error("column {column} is not a column of table {table}")]
    ColumnNotFound { table: String, column: String },
    #[error("column {column} of table {table} already exists")]
    ColumnExists { table: String, column: String },
    #[error("cannot drop column {column} of table {table}: it is part of the primary key")]
    DropKeyColumn { table: String, column: String },
    #[error(
        "cannot drop column {column} of table {table}: index {index} uses it (DROP INDEX {index} first)"
    )]
    DropIndexedColumn {
        table: String,
        column: String,
        index: String,
    },
    #[error(
        "cannot drop column {column} of table {table}: the generated column {generated} is computed from it"
    )]
    DropGenerationSource {
        table: String,
        column: String,
        generated: String,
    },
    #[error("cannot drop column {column}: it is the last column of table {table}")]
    DropLastColumn { table: String, column: String },
    #[error("sequence {sequence} already exists")]
    SequenceExists { sequence: String },
    #[error("sequence {sequence} does not exist")]
    SequenceNotFound { sequence: String },
    #[error("sequence {sequence} has reached its last value")]
    SequenceExhausted { sequence: String },
    #[error("index {index} names column {column} twice")]
    DuplicateIndexColumn { index: String, column: String },
    #[error("SALT_BUCKETS must be between 1 and 256, got {buckets}")]
    BadSaltBuckets { buckets: u64 },
    #[error("SALT_ON column {column} is not a primary key column of table {table}")]
    SaltColumnNotInKey { table: String, column: String },
    #[error("SALT_ON on table {table} needs SALT_BUCKETS")]
    SaltOnWithoutBuckets { table: String },
    #[error(
        "TTL must be a number of seconds from 1 to 3162240000 (a hundred years), got {seconds}"
    )]
    BadTtl { seconds: u64 },
    #[error("the history key {key:02x?} does not end in a time")]
    BadHistoryKey { key: Vec<u8> },
    #[error("VERSIONS must be from 1 to 1000, got {versions}")]
    BadVersions { versions: u32 },
    #[error("column name {column} is reserved in table {table}")]
    ReservedColumn { table: String, column: String },
    #[error(
        "key column {column} of table {table} cannot belong to a column family: it is stored in the row key"
    )]
    KeyColumnInFamily { table: String, column: String },
    #[error("table {table} declares {families} column families; at most {limit} are allowed")]
    TooManyFamilies {
        table: String,
        families: usize,
        limit: usize,
    },
    #[error("a column family of table {table} has an empty name")]
    EmptyFamilyName { table: String },
    #[error("the catalog entry {what} is corrupt: {source}")]
    Corrupt {
        what: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("role \"{role}\" already exists")]
    RoleExists { role: String },
    #[error("role \"{role}\" does not exist")]
    RoleNotFound { role: String },
    #[error("no random bytes for a password's salt: {reason}")]
    Random { reason: String },
    #[error("the catalog ran out of object ids")]
    IdsExhausted,
    #[error(transparent)]
    Codec(#[from] CodecError),
    #[error(transparent)]
    Store(#[from] StoreError),
}
