//! rowdex-catalog: what tables exist, what their columns and keys are, and where their rows live
//! in the one ordered keyspace.
//!
//! The model ([`TableDef`], [`ColumnDef`], [`DataType`], [`KeyColumn`]) is plain data; the key
//! layout ([`keyspace`], [`TableDef::row_key`]) turns primary-key values into row keys; the
//! [`Catalog`] persists the model in the store under the system prefix so it survives restarts.

mod alter;
mod catalog;
mod column;
mod edits;
mod error;
mod family;
mod foreign_key;
mod foreign_keys;
mod index;
mod index_filter;
pub mod keyspace;
mod role;
mod roles;
mod scram;
mod sequences;
pub mod statistics;
mod storage;
mod table;
mod trigger;
mod triggers;
mod types;

pub use catalog::Catalog;
pub use column::{CheckDef, ColumnDef, KeyColumn};
pub use edits::CatalogEdits;
pub use error::{CatalogError, Result};
pub use family::{DEFAULT_FAMILY, MAX_FAMILIES};
pub use foreign_key::{ForeignKeyDef, ReferentialAction};
pub use foreign_keys::{ReferencedAccess, ReferencingAccess};
pub use index::{IndexDef, IndexState};
pub use index_filter::{FilterCondition, FilterOp, FilterTest, IndexFilter, filter_value};
pub use role::RoleDef;
pub use roles::RoleChange;
pub use scram::{SCRAM_ITERATIONS, ScramVerifier, hmac};
pub use sequences::SequenceDef;
pub use statistics::{KeyGatherer, KeyStatistics, TableStatistics};
pub use storage::StorageAttributes;
pub use table::{HIDDEN_ROWID, MAX_TTL_SECONDS, MAX_VERSIONS, TableDef, WRITTEN_AT};
pub use trigger::{TriggerDef, TriggerEvent, TriggerTiming};
pub use types::{ArrayElement, DataType, Declared};
