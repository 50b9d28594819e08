//! Fuzz target `sql`: arbitrary SQL text against a small in-memory database.
//!
//! Each input is read as UTF-8 SQL (non-UTF-8 inputs are skipped), split into statements and run
//! in order by `Session::execute` on a fresh in-memory database holding the fixture below:
//! composite, DESC and salted keys, secondary indexes (UNIQUE, DESC, INCLUDE), every column type
//! and a few rows. The fixture's SQL runs once; each input gets a new `MemoryStore` filled with a
//! copy of the fixture's key-value pairs (much cheaper than running the SQL again), so no input
//! sees another's writes and every crash replays from its file alone. A statement may fail with an `Err` (execution stops at the first one, as in
//! the REPL); it must never panic. Hangs and memory blow-ups are caught by libFuzzer's
//! `-timeout=` and `-rss_limit_mb=`.
//!
//! Inputs mentioning COPY are skipped: `COPY t TO 'file'` writes wherever the fuzzer says.

#![no_main]

use std::sync::OnceLock;

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use rowdex::Database;
use rowdex_store::{Direction, KeyRange, KvRead, KvStore, MemoryStore, WriteBatch};
use tokio::runtime::Runtime;

/// The fixture every input starts from. Table names and columns follow the sqllogictest files
/// (`t`, `m`, `sx`, `ix`) so that seeds taken from them find their tables.
const FIXTURE: &str = "
CREATE TABLE t (id INT PRIMARY KEY, a INT, b TEXT, c INT);
CREATE INDEX t_a ON t (a);
CREATE INDEX t_bc ON t (b DESC, c) INCLUDE (a);
INSERT INTO t VALUES (1, 10, 'one', 100), (2, 20, 'two', NULL), (3, NULL, 'three', 300), (4, 10, NULL, 400);
CREATE TABLE m (host TEXT, ts BIGINT, v INT, PRIMARY KEY (host, ts));
INSERT INTO m VALUES ('h1', 1, 10), ('h1', 2, 11), ('h12', 1, 20), ('h2', 5, NULL);
CREATE TABLE sx (host TEXT, ts BIGINT, b INT, c INT, v INT, w TEXT, PRIMARY KEY (host, ts DESC)) WITH (SALT_BUCKETS = 4);
CREATE INDEX sx_b ON sx (b);
CREATE UNIQUE INDEX sx_w ON sx (w);
INSERT INTO sx VALUES ('h1', 1, 1, 2, 3, 'a'), ('h1', 9, 1, 3, 4, 'b'), ('h2', 3, 2, NULL, 5, NULL);
CREATE TABLE ix (id INT PRIMARY KEY, a INT, g INT, host TEXT, v INT);
CREATE INDEX ix_a ON ix (a);
CREATE INDEX ix_g ON ix (g DESC, host);
INSERT INTO ix VALUES (1, 1, 1, 'h1', 10), (2, 2, 1, 'h2', 20), (3, 1, 2, 'h3', NULL);
CREATE TABLE ty (d DATE, tm TIMESTAMP, p DECIMAL(10, 2), bin BYTEA, f BOOLEAN, r DOUBLE, s VARCHAR(8), n SMALLINT,
    PRIMARY KEY (d DESC, tm, p DESC, bin, f DESC)) WITH (SALT_BUCKETS = 3);
CREATE INDEX ty_r ON ty (r DESC, s) INCLUDE (n);
INSERT INTO ty VALUES
    ('2024-01-02', '2024-01-02 03:04:05.123456', 12.34, X'00FF', true, 1.5, 'x', 7),
    ('1969-12-31', '1970-01-01 00:00:00', -0.01, X'', false, -0.0, NULL, NULL);
CREATE TABLE nokey (a INT, b TEXT);
INSERT INTO nokey VALUES (1, 'a'), (NULL, NULL);
CREATE VIEW v AS SELECT t.id, t.a, m.v FROM t JOIN m ON t.id = m.ts;
CREATE TABLE fam (id INT PRIMARY KEY, f1.x INT, f1.y TEXT, f2.z INT, w TEXT) WITH (TTL = 3600, VERSIONS = 2);
CREATE INDEX fam_y ON fam (y) INCLUDE (z);
INSERT INTO fam VALUES (1, 1, 'a', 10, 'w1'), (2, NULL, 'b', NULL, NULL), (3, 3, NULL, 30, 'w3');
";

fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a current-thread tokio runtime")
    })
}

/// The key-value pairs of a database on which the fixture ran.
fn fixture_pairs() -> &'static [(Vec<u8>, Vec<u8>)] {
    static PAIRS: OnceLock<Vec<(Vec<u8>, Vec<u8>)>> = OnceLock::new();
    PAIRS.get_or_init(|| {
        runtime().block_on(async {
            let store = Arc::new(MemoryStore::new());
            let db = Database::with_store(store.clone())
                .await
                .expect("open an in-memory database");
            db.session()
                .execute(FIXTURE)
                .await
                .expect("the fixture runs");
            store
                .scan_page(&KeyRange::all(), Direction::Forward, usize::MAX)
                .await
                .expect("scan the fixture")
                .entries
        })
    })
}

/// A new in-memory database holding the fixture.
async fn fixture_database(pairs: &[(Vec<u8>, Vec<u8>)]) -> Database {
    let store = Arc::new(MemoryStore::new());
    let mut batch = WriteBatch::new();
    for (key, value) in pairs {
        batch.put(key.clone(), value.clone());
    }
    store.write(batch).await.expect("copy the fixture");
    Database::with_store(store)
        .await
        .expect("open the fixture database")
}

fn touches_files(sql: &str) -> bool {
    sql.to_ascii_uppercase().contains("COPY") || sql.to_uppercase().contains("COPY")
}

fuzz_target!(|data: &[u8]| {
    let Ok(sql) = std::str::from_utf8(data) else {
        return;
    };
    if touches_files(sql) {
        return;
    }
    let pairs = fixture_pairs();
    runtime().block_on(async {
        let db = fixture_database(pairs).await;
        // Errors are fine; only a panic (or a hang, or a blow-up) is a finding.
        let _ = db.session().execute(sql).await;
    });
});
