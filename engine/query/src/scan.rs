//! Reading an access path, for both executors: choosing the plan, with the index dives that
//! cost it ([`choose`]), reading its rows or entries from the store ([`read`]), and decoding
//! entries straight into Arrow when every entry is a result row ([`columnar`]).

pub(crate) mod choose;
pub(crate) mod columnar;
pub(crate) mod read;
