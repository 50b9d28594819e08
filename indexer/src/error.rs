//! The indexer's error type.

use rowdex_catalog::CatalogError;
use rowdex_codec::CodecError;
use rowdex_store::StoreError;

pub type Result<T> = std::result::Result<T, IndexError>;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IndexError {
    #[error("index entry {key:02x?} is malformed: {source}")]
    MalformedEntry {
        key: Vec<u8>,
        #[source]
        source: CodecError,
    },
    #[error("UNIQUE index {index} already holds {value}")]
    UniqueViolation { index: String, value: String },
    #[error("key {key:02x?} is too short to be an index entry")]
    NotAnEntry { key: Vec<u8> },
    #[error(transparent)]
    Codec(#[from] CodecError),
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    #[error(transparent)]
    Store(#[from] StoreError),
}
