//! pgbench's TPC-B-like transaction from concurrent sessions, the way `rowdex serve` runs it
//! for pgbench: each statement prepared once per session (or sent as text, through the
//! compiled-query cache), every transaction a BEGIN ... COMMIT block over a few hot rows (a
//! handful of tellers and branches), a transaction that fails with a retryable error rolled
//! back and run again with the same values, as pgbench does.
//!
//! However many attempts failed, the committed transactions must add up: the accounts', the
//! tellers' and the branches' balances each sum to the history's deltas, and the history holds
//! exactly one row per acknowledged transaction. A statement of a failed attempt that survived
//! it (a write applied outside the block, or kept after its rollback) shows as a difference.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rowdex::{Database, Datum, Session};

use crate::{Rng, TestResult, rows};

const BRANCHES: i64 = 2;
const TELLERS: i64 = 4;
const ACCOUNTS: i64 = 200;
const TASKS: u64 = 8;

const SCHEMA: &str = "
    CREATE TABLE branches (bid INT PRIMARY KEY, bbalance BIGINT NOT NULL, filler TEXT);
    CREATE TABLE tellers (tid INT PRIMARY KEY, bid INT NOT NULL, tbalance BIGINT NOT NULL,
        filler TEXT);
    CREATE TABLE accounts (aid INT PRIMARY KEY, bid INT NOT NULL, abalance BIGINT NOT NULL,
        filler TEXT);
    CREATE TABLE history (tid INT, bid INT, aid INT, delta BIGINT, mtime TIMESTAMP,
        filler TEXT)";

/// The transaction's statements after BEGIN, with `$n` parameters: delta, aid, tid, bid.
const STATEMENTS: [&str; 5] = [
    "UPDATE accounts SET abalance = abalance + $1 WHERE aid = $2",
    "SELECT abalance FROM accounts WHERE aid = $1",
    "UPDATE tellers SET tbalance = tbalance + $1 WHERE tid = $2",
    "UPDATE branches SET bbalance = bbalance + $1 WHERE bid = $2",
    "INSERT INTO history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)",
];

/// How a session sends its statements.
#[derive(Debug, Clone, Copy)]
enum Sending {
    /// Prepared once, executed with parameters (pgbench -M prepared, any driver's default).
    Prepared,
    /// As text with the values written in (pgbench -M simple): the compiled-query cache.
    Text,
}

#[derive(Default)]
struct Counts {
    committed: AtomicU64,
    retried: AtomicU64,
}

/// One attempt of one transaction; an error ends it where it happened.
async fn attempt(
    session: &Session,
    prepared: &[rowdex::Prepared],
    sending: Sending,
    [delta, aid, tid, bid]: [i64; 4],
) -> Result<(), rowdex::Error> {
    let int = Datum::Int;
    let params: [Vec<Datum>; 5] = [
        vec![int(delta), int(aid)],
        vec![int(aid)],
        vec![int(delta), int(tid)],
        vec![int(delta), int(bid)],
        vec![int(tid), int(bid), int(aid), int(delta)],
    ];
    session.execute("BEGIN").await?;
    for (i, params) in params.iter().enumerate() {
        match sending {
            Sending::Prepared => {
                prepared[i].execute(params).await?;
            }
            Sending::Text => {
                let mut sql = STATEMENTS[i].to_string();
                // Highest first: `$1` is a prefix of `$10`.
                for (n, value) in params.iter().enumerate().rev() {
                    let Datum::Int(value) = value else {
                        unreachable!("every parameter is an integer");
                    };
                    sql = sql.replace(&format!("${}", n + 1), &format!("({value})"));
                }
                session.execute(&sql).await?;
            }
        }
    }
    session.execute("COMMIT").await?;
    Ok(())
}

async fn client(
    session: Session,
    sending: Sending,
    seed: u64,
    transactions: u64,
    counts: Arc<Counts>,
) -> Result<(), String> {
    let prepared = STATEMENTS
        .iter()
        .map(|sql| session.prepare(sql))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let mut rng = Rng(seed | 1);
    for _ in 0..transactions {
        let values = [
            rng.int(-5000, 5001),
            rng.int(1, ACCOUNTS + 1),
            rng.int(1, TELLERS + 1),
            rng.int(1, BRANCHES + 1),
        ];
        loop {
            match attempt(&session, &prepared, sending, values).await {
                Ok(()) => {
                    counts.committed.fetch_add(1, Ordering::Relaxed);
                    break;
                }
                Err(error) if error.is_retryable() => {
                    counts.retried.fetch_add(1, Ordering::Relaxed);
                    if session.in_transaction() {
                        session
                            .execute("ROLLBACK")
                            .await
                            .map_err(|e| format!("ROLLBACK: {e}"))?;
                    }
                }
                Err(error) => return Err(format!("{values:?}: {error}")),
            }
        }
    }
    Ok(())
}

async fn run(db: &Database, sending: Sending) -> TestResult {
    let transactions: u64 = match std::env::var("ROWDEX_CONCURRENCY_OPS") {
        Ok(text) => text.parse()?,
        Err(_) => 60,
    };
    let setup = db.session();
    setup.execute(SCHEMA).await?;
    for (table, count, row) in [
        ("branches", BRANCHES, "({n}, 0, 'b')"),
        ("tellers", TELLERS, "({n}, 1, 0, 't')"),
        ("accounts", ACCOUNTS, "({n}, 1, 0, 'a')"),
    ] {
        let values: Vec<String> = (1..=count)
            .map(|n| row.replace("{n}", &n.to_string()))
            .collect();
        setup
            .execute(&format!("INSERT INTO {table} VALUES {}", values.join(", ")))
            .await?;
    }
    let counts = Arc::new(Counts::default());
    let mut tasks = Vec::new();
    for task in 0..TASKS {
        let seed = 0x7cb0_0000_0000_0000 ^ (task + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        tasks.push(tokio::spawn(client(
            db.session(),
            sending,
            seed,
            transactions,
            counts.clone(),
        )));
    }
    for task in tasks {
        task.await??;
    }
    let sums = rows(
        &setup,
        "SELECT (SELECT sum(abalance) FROM accounts), (SELECT sum(tbalance) FROM tellers), \
         (SELECT sum(bbalance) FROM branches), (SELECT sum(delta) FROM history), \
         (SELECT count(*) FROM history)",
    )
    .await?;
    let committed = counts.committed.load(Ordering::Relaxed);
    let retried = counts.retried.load(Ordering::Relaxed);
    println!("tpcb ({sending:?}): {committed} committed, {retried} retried; sums {sums:?}");
    let [accounts, tellers, branches, history, count] = sums[0].as_slice() else {
        return Err(format!("sums: {sums:?}").into());
    };
    assert_eq!(count, &committed.to_string(), "{sending:?}: history rows");
    assert_eq!(accounts, history, "{sending:?}: accounts against history");
    assert_eq!(tellers, history, "{sending:?}: tellers against history");
    assert_eq!(branches, history, "{sending:?}: branches against history");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tpcb_transactions_through_prepared_statements_add_up() -> TestResult {
    let db = Database::open_memory().await?;
    run(&db, Sending::Prepared).await?;
    let dir = tempfile::tempdir()?;
    let db = Database::open(dir.path()).await?;
    run(&db, Sending::Prepared).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tpcb_transactions_sent_as_text_add_up() -> TestResult {
    let dir = tempfile::tempdir()?;
    let db = Database::open(dir.path()).await?;
    run(&db, Sending::Text).await
}
