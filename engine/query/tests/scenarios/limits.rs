//! Hostile sizes: very long statements, deep nesting, huge IN lists and OR chains, keys and
//! values past the store's limits. Each either works or fails with a clear error; none may
//! crash the process (a stack overflow aborts it, which would fail the whole test binary), and
//! a failed write leaves the table as it was.

use rowdex::{Database, Error, Session};

use crate::{TestResult, rows, table};

async fn small_table() -> Result<Session, Error> {
    let db = Database::open_memory().await?;
    let s = db.session();
    s.execute(
        "CREATE TABLE t (k TEXT PRIMARY KEY, a INT, v TEXT);
         CREATE INDEX t_v ON t (v);
         INSERT INTO t VALUES ('a', 1, 'x'), ('b', 2, 'y'), ('c', 3, 'z');",
    )
    .await?;
    Ok(s)
}

/// The stack a statement at the depth limit needs in a debug build: the later passes (cloning
/// the statement, DataFusion's planning, dropping it) recurse once per level. A statement past
/// the limit is refused before any of them, whatever the stack (see README, "Limits").
const STACK_BYTES: usize = 8 << 20;

/// Runs `sql` on its own thread with a [`STACK_BYTES`] stack, so that unbounded recursion
/// shows up as a failed test here rather than depending on the test harness's stack.
fn on_small_stack(sql: String) -> Result<Result<Vec<Vec<String>>, String>, String> {
    std::thread::Builder::new()
        .stack_size(STACK_BYTES)
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .build()
                .map_err(|e| e.to_string())?;
            runtime.block_on(async {
                let s = small_table().await.map_err(|e| e.to_string())?;
                Ok(rows(&s, &sql).await.map_err(|e| e.to_string()))
            })
        })
        .map_err(|e| e.to_string())?
        .join()
        .map_err(|_| "the statement panicked".to_string())?
}

#[test]
fn deep_parentheses_are_an_error_not_a_crash() -> TestResult {
    let depth = 100_000;
    let sql = format!("SELECT {}1{} FROM t", "(".repeat(depth), ")".repeat(depth));
    let result = on_small_stack(sql)?;
    let error = result.err().unwrap_or_default();
    assert!(error.contains("recursion limit"), "{error}");
    Ok(())
}

#[test]
fn long_or_chains_and_sums_run_up_to_the_depth_limit() -> TestResult {
    // `a = 0 OR a = 1 ...` nests one level per OR; 900 terms is within the limit of 1000.
    let terms = 900;
    let or_chain: Vec<String> = (0..terms).map(|i| format!("a = {i}")).collect();
    let sql = format!("SELECT k FROM t WHERE {} ORDER BY k", or_chain.join(" OR "));
    assert_eq!(on_small_stack(sql)?, Ok(table(&[&["a"], &["b"], &["c"]])));
    let sum = vec!["1"; terms].join(" + ");
    let sql = format!("SELECT {sum} FROM t WHERE k = 'a'");
    assert_eq!(on_small_stack(sql)?, Ok(table(&[&[&terms.to_string()]])));
    Ok(())
}

#[test]
fn chains_past_the_depth_limit_are_an_error_not_a_crash() -> TestResult {
    for terms in [1_002, 50_000] {
        let or_chain: Vec<String> = (0..terms).map(|i| format!("a = {i}")).collect();
        let ors = format!("SELECT k FROM t WHERE {}", or_chain.join(" OR "));
        let sum = format!("SELECT {} FROM t", vec!["1"; terms].join(" + "));
        let nots = format!(
            "SELECT k FROM t WHERE a IS NULL{}",
            " IS NULL".repeat(terms)
        );
        for sql in [ors, sum, nots] {
            let error = on_small_stack(sql)?.err().unwrap_or_default();
            assert!(
                error.contains("expressions nest deeper than 1000 levels"),
                "{terms}: {error}"
            );
        }
    }
    Ok(())
}

#[tokio::test]
async fn huge_in_lists_run() -> TestResult {
    let s = small_table().await?;
    let keys: Vec<String> = (0..100_000).map(|i| format!("'k{i}'")).collect();
    let sql = format!(
        "SELECT k FROM t WHERE k IN ('b', {}) ORDER BY k",
        keys.join(", ")
    );
    assert_eq!(rows(&s, &sql).await?, table(&[&["b"]]));
    let values: Vec<String> = (0..100_000).map(|i| i.to_string()).collect();
    let sql = format!(
        "SELECT k FROM t WHERE a IN ({}) ORDER BY k",
        values.join(", ")
    );
    assert_eq!(rows(&s, &sql).await?, table(&[&["a"], &["b"], &["c"]]));
    Ok(())
}

#[tokio::test]
async fn a_long_insert_statement_runs() -> TestResult {
    let s = small_table().await?;
    // About 1.5 MB of SQL text.
    let values: Vec<String> = (0..40_000)
        .map(|i| format!("('row{i:06}', {i}, '{}')", "v".repeat(20)))
        .collect();
    s.execute(&format!("INSERT INTO t VALUES {}", values.join(", ")))
        .await?;
    assert_eq!(
        rows(&s, "SELECT count(*) FROM t").await?,
        table(&[&["40003"]])
    );
    Ok(())
}

#[tokio::test]
async fn keys_past_the_limit_are_refused_and_change_nothing() -> TestResult {
    let s = small_table().await?;
    let before = rows(&s, "SELECT * FROM t ORDER BY k").await?;
    // The row key alone is too long.
    let long_key = "k".repeat(70_000);
    let error = s
        .execute(&format!("INSERT INTO t VALUES ('{long_key}', 1, 'ok')"))
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(error.contains("exceeds the maximum"), "{error}");
    // The row key fits, its index entry (value and key) does not; the row must not land
    // without its entry.
    let half = "h".repeat(40_000);
    let error = s
        .execute(&format!("INSERT INTO t VALUES ('{half}', 1, '{half}')"))
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(error.contains("exceeds the maximum"), "{error}");
    assert_eq!(rows(&s, "SELECT * FROM t ORDER BY k").await?, before);
    assert_eq!(
        rows(&s, "CHECK INDEX t_v").await?,
        table(&[&["t_v", "3", "3", "0", "0", "0", "ok"]])
    );
    Ok(())
}

#[tokio::test]
async fn large_values_round_trip() -> TestResult {
    let s = small_table().await?;
    s.execute("CREATE TABLE docs (id INT PRIMARY KEY, body TEXT)")
        .await?;
    let body = "b".repeat(8 << 20);
    s.execute(&format!("INSERT INTO docs VALUES (1, '{body}')"))
        .await?;
    assert_eq!(
        rows(&s, "SELECT length(body) FROM docs WHERE id = 1").await?,
        table(&[&[&(8 << 20).to_string()]])
    );
    Ok(())
}
