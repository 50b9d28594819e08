//! User actions read newest-first: the row key is `(user_id, ts DESC)`, so "the latest actions
//! of a user" is a range scan that stops after LIMIT rows, with no sort.
//!
//! Run: `cargo run -p rowdex-examples --example user_actions`

use rowdex_examples::show;

#[tokio::main]
async fn main() -> rowdex::Result<()> {
    let db = rowdex::Database::open_memory().await?;
    let s = db.session();
    s.execute(
        "CREATE TABLE actions (
             user_id BIGINT,
             ts      TIMESTAMP,
             action  VARCHAR(20),
             PRIMARY KEY (user_id, ts DESC)
         ) WITH (SALT_BUCKETS = 4)",
    )
    .await?;
    s.execute(
        "INSERT INTO actions VALUES
           (1, '2026-11-01 09:00:00', 'login'),
           (1, '2026-11-01 09:05:00', 'search'),
           (1, '2026-11-01 09:07:30', 'buy'),
           (2, '2026-11-01 10:00:00', 'login'),
           (1, '2026-11-02 08:00:00', 'login')",
    )
    .await?;
    show(
        &s,
        "SELECT ts, action FROM actions WHERE user_id = 1 ORDER BY ts DESC LIMIT 2",
    )
    .await?;
    show(
        &s,
        "EXPLAIN SELECT ts, action FROM actions WHERE user_id = 1 ORDER BY ts DESC LIMIT 2",
    )
    .await?;
    show(
        &s,
        "EXPLAIN SELECT * FROM actions WHERE user_id = 1 AND ts = '2026-11-01 09:05:00'",
    )
    .await?;
    show(
        &s,
        "SELECT user_id, count(*) FROM actions GROUP BY user_id ORDER BY user_id",
    )
    .await?;
    Ok(())
}
