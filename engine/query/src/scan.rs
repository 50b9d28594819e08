//! Reading an access path, for both executors: choosing the plan, with the index dives that
//! cost it ([`choose`]), reading its rows or entries from the store ([`read`]; salted buckets
//! merged by [`merge`], an intersection's primary keys from [`intersection`]), decoding entries
//! straight into Arrow when every entry is a result row ([`columnar`]), splitting a large read
//! by key into partitions read in parallel ([`partition`]), counting a plan's rows in place
//! when each entry is one ([`count`]), and what EXPLAIN ANALYZE and VERBOSE add under a path
//! ([`explain`]).

pub(crate) mod choose;
pub(crate) mod columnar;
pub(crate) mod count;
pub(crate) mod explain;
pub(crate) mod intersection;
pub(crate) mod merge;
pub(crate) mod parallel;
pub(crate) mod partition;
pub(crate) mod read;
