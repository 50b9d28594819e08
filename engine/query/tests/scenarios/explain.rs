//! EXPLAIN VERBOSE and EXPLAIN ANALYZE on both executors: the candidates the planner weighed,
//! with the chosen one marked, and what running the plan read and yielded beside its estimate.

use rowdex::Executor;

use crate::{TestResult, rows};

const ROWS: i64 = 5_000;

async fn loaded() -> Result<rowdex::Database, rowdex::Error> {
    let db = rowdex::Database::open_memory().await?;
    let s = db.session();
    s.execute("CREATE TABLE t (id INT PRIMARY KEY, a INT, b INT)")
        .await?;
    let values: Vec<String> = (0..ROWS)
        .map(|id| format!("({id}, {}, {})", id % 50, id % 7))
        .collect();
    s.execute(&format!("INSERT INTO t VALUES {}", values.join(",")))
        .await?;
    s.execute("CREATE INDEX ia ON t (a); CREATE INDEX ib ON t (b)")
        .await?;
    Ok(db)
}

/// The lines of an EXPLAIN.
async fn explain(session: &rowdex::Session, sql: &str) -> Result<Vec<String>, rowdex::Error> {
    Ok(rows(session, sql)
        .await?
        .into_iter()
        .filter_map(|row| row.into_iter().next())
        .collect())
}

/// The number after `name=` in `line`.
fn figure(line: &str, name: &str) -> Option<u64> {
    let start = line.find(&format!("{name}="))? + name.len() + 1;
    let digits: String = line[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

#[tokio::test]
async fn verbose_lists_the_candidates_with_the_chosen_one_marked() -> TestResult {
    let db = loaded().await?;
    for executor in [Executor::Auto, Executor::DataFusion] {
        let mut s = db.session();
        s.set_executor(executor);
        let lines = explain(
            &s,
            "EXPLAIN VERBOSE SELECT id, b FROM t WHERE a = 3 AND b = 2",
        )
        .await?;
        let text = lines.join("\n");
        let header = lines
            .iter()
            .position(|l| l.contains("candidates for t"))
            .ok_or(format!("{executor:?}: no candidates in\n{text}"))?;
        let candidates: Vec<&String> = lines[header + 1..]
            .iter()
            .take_while(|l| l.starts_with("  ") && !l.contains("actual:"))
            .collect();
        // The primary-key scan, each index, and their intersection, each with its estimate.
        assert!(candidates.len() >= 4, "{executor:?}:\n{text}");
        assert!(
            candidates.iter().all(|l| l.contains("cost=")),
            "{executor:?}:\n{text}"
        );
        let chosen: Vec<&&String> = candidates.iter().filter(|l| l.starts_with("  *")).collect();
        assert_eq!(chosen.len(), 1, "{executor:?}:\n{text}");
        assert!(chosen[0].contains("using ia"), "{executor:?}:\n{text}");
        assert!(
            candidates.iter().any(|l| l.contains("FULL SCAN t")),
            "{executor:?}:\n{text}"
        );
        // Cheapest first.
        let costs: Vec<f64> = candidates
            .iter()
            .filter_map(|l| {
                let start = l.find("cost=")? + 5;
                l[start..].split("us").next()?.parse().ok()
            })
            .collect();
        assert!(costs.windows(2).all(|w| w[0] <= w[1]), "{costs:?}");
    }
    Ok(())
}

#[tokio::test]
async fn analyze_reports_what_the_plan_read_beside_its_estimate() -> TestResult {
    let db = loaded().await?;
    for executor in [Executor::Auto, Executor::DataFusion] {
        let mut s = db.session();
        s.set_executor(executor);
        let sql = "SELECT id, b FROM t WHERE a = 3";
        let answer = rows(&s, sql).await?;
        assert_eq!(answer.len(), (ROWS / 50) as usize);
        for explain_sql in [
            format!("EXPLAIN ANALYZE {sql}"),
            format!("EXPLAIN (ANALYZE) {sql}"),
            format!("EXPLAIN (ANALYZE true, VERBOSE false) {sql}"),
        ] {
            let lines = explain(&s, &explain_sql).await?;
            let text = lines.join("\n");
            let plan = lines
                .iter()
                .position(|l| l.contains("INDEX SCAN t using ia"))
                .ok_or(format!("{executor:?}: {text}"))?;
            let actual = lines
                .iter()
                .find(|l| l.contains("actual:"))
                .ok_or(format!("{executor:?}: {text}"))?;
            assert!(lines[plan + 1..].contains(actual), "{text}");
            // Every row the index range holds, each looked up: entries and gets counted.
            assert_eq!(figure(actual, "rows"), Some(100), "{executor:?}: {text}");
            assert_eq!(figure(actual, "gets"), Some(100), "{executor:?}: {text}");
            assert_eq!(figure(actual, "scanned"), Some(100), "{executor:?}: {text}");
            assert!(text.contains("time="), "{text}");
        }
    }

    // An aggregate (natively, or in DataFusion): the scan's reads, then the whole statement's
    // rows.
    let s = db.session();
    let lines = explain(&s, "EXPLAIN ANALYZE SELECT count(*) FROM t WHERE b = 2").await?;
    let text = lines.join("\n");
    let actual = lines
        .iter()
        .find(|l| l.contains("actual:"))
        .ok_or(text.clone())?;
    let expected = (0..ROWS).filter(|id| id % 7 == 2).count() as u64;
    assert_eq!(figure(actual, "rows"), Some(expected), "{text}");
    let total = lines.last().ok_or("no lines")?;
    assert!(total.starts_with("total: rows=1 "), "{text}");
    Ok(())
}

#[tokio::test]
async fn analyze_runs_only_queries_and_unknown_options_are_refused() -> TestResult {
    let db = loaded().await?;
    let s = db.session();
    let refused = s.execute("EXPLAIN ANALYZE DELETE FROM t WHERE a = 3").await;
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.to_string().contains("EXPLAIN ANALYZE")),
        "{refused:?}"
    );
    assert_eq!(
        rows(&s, "SELECT count(*) FROM t WHERE a = 3").await?,
        [["100"]],
        "nothing was deleted"
    );
    let refused = s.execute("EXPLAIN (BUFFERS) SELECT * FROM t").await;
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.to_string().contains("buffers")),
        "{refused:?}"
    );
    // Plain EXPLAIN runs nothing: no actual figures.
    let lines = explain(&s, "EXPLAIN SELECT * FROM t WHERE a = 3").await?;
    assert!(!lines.join("\n").contains("actual:"), "{lines:?}");
    Ok(())
}
