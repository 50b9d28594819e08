//! rowdex-indexer
