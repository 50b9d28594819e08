//! Property tests of rowdex-indexer: the crate's one integration-test binary, with one module
//! per area.

mod intersect;
