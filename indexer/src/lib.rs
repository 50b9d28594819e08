//! rowdex-indexer: secondary indexes over the row keyspace.
//!
//! Reserved for the index work: index key layout (`index prefix ‖ indexed values ‖ primary
//! key`), the pure `index_mutations(old_row, new_row)`, backfill, and the streaming sorted-merge
//! intersection of index scans. Tables without secondary indexes need nothing from it yet, so
//! it holds no code until then rather than a stub.
