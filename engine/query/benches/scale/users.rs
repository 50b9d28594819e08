//! The second table of the scale bench, `u`, for the indexes that are not on plain columns
//! (issue 47): its row key is `reverse(uid)` (a generated column in rowdex and PostgreSQL; in
//! SQLite, which has no `reverse`, a column the loader fills, as an application writing by
//! hand would), an index on `lower(email)`, and a partial index on `score` over the 0.1 % of
//! the rows whose `state` is `'flagged'`.
//!
//! Rows: `uid = u` and the row number in 7 digits (sequential: reversed, they spread over the
//! key space), `email` in mixed case (`User123@Example.COM` or `user123@EXAMPLE.com`), `state`
//! `'flagged'` for one row in a thousand, `score` from 0 to 99 999.

use std::io::Write;
use std::path::Path;

use crate::shared::{BenchResult, mix};

/// The CSV file of `u`, in the scale bench's directory.
pub const CSV: &str = "u.csv";

/// The columns the CSV holds, in its order (rowdex and PostgreSQL compute `rid`).
pub const COPY_COLUMNS: &str = "uid, id, email, state, score";

/// rowdex's table and indexes (created after the load, as for `t`).
pub const ROWDEX_TABLE: &str = "CREATE TABLE u (rid TEXT GENERATED ALWAYS AS (reverse(uid)) STORED,
    uid TEXT NOT NULL, id BIGINT, email TEXT, state TEXT, score BIGINT, PRIMARY KEY (rid))";
pub const ROWDEX_INDEXES: &str = "CREATE INDEX ue ON u (lower(email));
    CREATE INDEX up ON u (score) WHERE state = 'flagged';";

/// SQLite's: keyed by `rid` (WITHOUT ROWID, so that the key is the table's order, as in
/// rowdex), filled by the loader.
pub const SQLITE_TABLE: &str = "CREATE TABLE u (rid TEXT PRIMARY KEY, uid TEXT NOT NULL,
    id INTEGER, email TEXT, state TEXT, score INTEGER) WITHOUT ROWID";
pub const SQLITE_INDEXES: &str = "CREATE INDEX ue ON u (lower(email));
    CREATE INDEX up ON u (score) WHERE state = 'flagged';";

/// PostgreSQL's, the same as rowdex's.
pub const POSTGRES_TABLE: &str =
    "CREATE TABLE u (rid text GENERATED ALWAYS AS (reverse(uid)) STORED
    PRIMARY KEY, uid text NOT NULL, id bigint, email text, state text, score bigint)";
pub const POSTGRES_INDEXES: &str = "CREATE INDEX ue ON u (lower(email));
    CREATE INDEX up ON u (score) WHERE state = 'flagged';";

/// The user id of row `id`.
pub fn uid(id: u64) -> String {
    format!("u{id:07}")
}

/// The row key of the user with id `uid`: the id reversed.
pub fn reversed(uid: &str) -> String {
    uid.chars().rev().collect()
}

/// Writes `rows` rows of `u` to `dir`'s CSV.
pub fn write_csv(rows: u64, dir: &Path) -> BenchResult<()> {
    let mut file = std::io::BufWriter::new(std::fs::File::create(dir.join(CSV))?);
    for id in 0..rows {
        let email = if id.is_multiple_of(2) {
            format!("User{id}@Example.COM")
        } else {
            format!("user{id}@EXAMPLE.com")
        };
        let state = if mix(id ^ 0xf1a6).is_multiple_of(1000) {
            "flagged"
        } else {
            "ok"
        };
        let score = mix(id ^ 0x5c0e) % 100_000;
        writeln!(file, "{},{id},{email},{state},{score}", uid(id))?;
    }
    file.flush()?;
    Ok(())
}

/// Loads `u` into SQLite's connection (`rid` computed here), then its indexes.
pub fn load_sqlite(conn: &mut rusqlite::Connection, dir: &Path) -> BenchResult<()> {
    conn.execute_batch(SQLITE_TABLE)?;
    let tx = conn.transaction()?;
    {
        let mut insert = tx.prepare("INSERT INTO u VALUES (?1, ?2, ?3, ?4, ?5, ?6)")?;
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .from_path(dir.join(CSV))?;
        for record in reader.records() {
            let record = record?;
            let field = |i: usize| record.get(i).unwrap_or_default();
            insert.execute(rusqlite::params![
                reversed(field(0)),
                field(0),
                field(1).parse::<i64>()?,
                field(2),
                field(3),
                field(4).parse::<i64>()?,
            ])?;
        }
    }
    tx.commit()?;
    conn.execute_batch(SQLITE_INDEXES)?;
    Ok(())
}
