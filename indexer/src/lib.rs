//! rowdex-indexer: secondary indexes over the row keyspace.
//!
//! * [`layout`]: where an index entry lives (`index prefix ‖ indexed values ‖ primary key`) and
//!   what it holds (the INCLUDE columns);
//! * [`mutations`]: the pure `index_mutations(old_row, new_row)` that every write applies in the
//!   same batch as the row;
//! * [`maintain`]: backfill of a new index over existing rows, and CHECK / REPAIR;
//! * [`rows`]: whole rows of tables with column families, completed from their family entries;
//! * [`intersect`]: the streaming sorted-merge (leapfrog) intersection of primary-key-ordered
//!   index streams.

mod error;
pub mod intersect;
pub mod layout;
pub mod maintain;
pub mod mutations;
pub mod rows;

pub use error::{IndexError, Result};
