//! The cases' queries with `$n` parameters, as rowdex and PostgreSQL take them (SQLite's `?n`
//! forms are in sqlite.rs).

pub const POINT_GET: &str = "SELECT * FROM orders WHERE id = $1";
pub const INDEX_LOOKUP: &str = "SELECT * FROM orders WHERE user_id = $1";
pub const INTERSECT_A_B: &str = "SELECT * FROM pairs WHERE a = $1 AND b = $2";
pub const INTERSECT_B_C: &str = "SELECT * FROM pairs WHERE b = $1 AND c = $2";
pub const PAGE: &str = "SELECT * FROM actions WHERE uid = $1 ORDER BY ts DESC LIMIT 10 OFFSET 20";
pub const PAGE_KEYSET: &str =
    "SELECT * FROM actions WHERE uid = $1 AND ts < $2 ORDER BY ts DESC LIMIT 10";
pub const PAGE_KEYSET_ROWVALUE: &str =
    "SELECT * FROM actions WHERE uid = $1 AND (uid, ts) < ($1, $2) ORDER BY ts DESC LIMIT 10";
pub const AGGREGATE: &str = "SELECT country, count(*), sum(amount) FROM orders GROUP BY country";

/// The point get as ad-hoc text, the id written in it (the same text for every engine).
pub fn point_get_adhoc(id: u64) -> String {
    format!("SELECT * FROM orders WHERE id = {id}")
}
