//! Rows into the store, for every writer (INSERT, UPDATE, DELETE, COPY, the DataFusion sink,
//! PURGE): the statement's transaction with its checks ([`row_writer`]), the DEFAULTs and CHECK
//! constraints a table declares ([`constraints`]), the insert engine and
//! what an existing key does ([`rows`]), batches of new rows written as sorted runs ([`load`]),
//! foreign keys as writes see them ([`references`]), and removing whatever lives under a
//! prefix once the catalog no longer points at it ([`bulk`]).

pub(crate) mod bulk;
pub(crate) mod constraints;
pub(crate) mod generated;
pub(crate) mod implied;
pub(crate) mod load;
pub(crate) mod references;
pub(crate) mod rewrite;
pub(crate) mod row_writer;
pub(crate) mod rowids;
pub(crate) mod rows;

/// How often a write that lost a race with a concurrent writer (or a concurrent schema change)
/// is run again before its conflict is reported. Nothing was written by a failed try.
pub(crate) const WRITE_ATTEMPTS: usize = 8;
