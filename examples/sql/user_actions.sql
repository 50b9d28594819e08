-- user_actions.sql: a user's activity feed, newest first, paged.
--
-- Run: rowdex --memory --format table -f examples/sql/user_actions.sql
--
-- Row-key design: PRIMARY KEY (user_id, ts DESC, action_id DESC)
--
--   * user_id first: all of one user's actions are one contiguous key range (a prefix
--     scan), and different users' writes land in different places.
--   * ts DESC: inside a user the newest action sorts first, so "the latest n" is the first
--     n keys of the prefix: the scan stops after n keys, nothing is sorted. HBase gets this
--     with a reversed timestamp (Long.MAX_VALUE - ts); here the key encoding inverts the
--     bytes of a DESC column.
--   * action_id DESC: two actions can share a timestamp; the id makes the key unique and
--     gives a total order, which is what makes keyset paging exact (see 3). It is DESC
--     like ts so that "after this row" is the single row value (ts, action_id) < (t, i).
--
--   ts is a BIGINT of epoch milliseconds, the HBase habit. A TIMESTAMP column pages the
--   same way: (ts, action_id) < (TIMESTAMP '...', 4957) is a key range too.
--
--   "The latest purchases of everyone" is another query direction: a secondary index on
--   (action, ts DESC) serves it. Its entries also hold the primary key (user_id, ts,
--   action_id), so a query reading only those columns never touches the table.

CREATE TABLE user_actions (
    user_id    BIGINT,
    ts         BIGINT,                  -- epoch milliseconds
    action_id  BIGINT,
    action     VARCHAR(20) NOT NULL,
    item       TEXT,
    PRIMARY KEY (user_id, ts DESC, action_id DESC)
);

CREATE INDEX user_actions_by_action ON user_actions (action, ts DESC);

-- 5000 actions of 50 users (100 each), from 2026-01-01 00:00 UTC, one batch an hour.
-- Every user has two actions in each hour with the same ts: ties the paging must handle.
INSERT INTO user_actions
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 4999)
SELECT i % 50 + 1,
       1767225600000 + (i / 100) * 3600000,
       i + 1,
       CASE i % 7 WHEN 0 THEN 'purchase' WHEN 1 THEN 'search' WHEN 2 THEN 'search'
                  WHEN 3 THEN 'view' WHEN 4 THEN 'view' WHEN 5 THEN 'cart' ELSE 'login' END,
       'item-' || CAST(i * 37 % 500 AS TEXT)
FROM n;

SELECT count(*) AS actions, count(DISTINCT user_id) AS users FROM user_actions;

-- 1. The latest 5 actions of user 42: the first 5 keys of the prefix, nothing sorted.
EXPLAIN SELECT ts, action_id, action FROM user_actions
WHERE user_id = 42 ORDER BY ts DESC, action_id DESC LIMIT 5;
-- expect: RANGE SCAN user_actions range [user_id = 42] limit=5
SELECT to_timestamp_millis(ts) AS at, ts, action_id, action FROM user_actions
WHERE user_id = 42 ORDER BY ts DESC, action_id DESC LIMIT 5;

--    ORDER BY ts DESC alone is the key order as well (ties come out in action_id DESC).
EXPLAIN SELECT ts, action FROM user_actions WHERE user_id = 42 ORDER BY ts DESC LIMIT 5;
-- expect: RANGE SCAN user_actions range [user_id = 42] limit=5

-- 2. OFFSET paging: page 2 skips 5 keys and reads 5 more. Simple, but page k reads
--    k * 5 keys, and a new action arriving between two requests shifts every page by one.
EXPLAIN SELECT ts, action_id, action FROM user_actions
WHERE user_id = 42 ORDER BY ts DESC, action_id DESC LIMIT 5 OFFSET 5;
-- expect: RANGE SCAN user_actions range [user_id = 42] offset=5 limit=5
SELECT to_timestamp_millis(ts) AS at, ts, action_id, action FROM user_actions
WHERE user_id = 42 ORDER BY ts DESC, action_id DESC LIMIT 5 OFFSET 5;

--    A deep page: 95 keys read to return 5.
EXPLAIN SELECT ts, action_id, action FROM user_actions
WHERE user_id = 42 ORDER BY ts DESC, action_id DESC LIMIT 5 OFFSET 90;
-- expect: RANGE SCAN user_actions range [user_id = 42] offset=90 limit=5

-- 3. Keyset (cursor) paging: the client keeps the last row of the page it showed, here
--    (ts, action_id) = (1767394800000, 4792) from 1, and asks for the rows after it.
--    The row value is a key range starting right after that key: 5 keys read, whatever
--    the page number, and stable under inserts.
EXPLAIN SELECT ts, action_id, action FROM user_actions
WHERE user_id = 42 AND (ts, action_id) < (1767394800000, 4792)
ORDER BY ts DESC, action_id DESC LIMIT 5;
-- expect: RANGE SCAN user_actions range [user_id = 42, (ts, action_id) < (1767394800000, 4792)] limit=5
SELECT to_timestamp_millis(ts) AS at, ts, action_id, action FROM user_actions
WHERE user_id = 42 AND (ts, action_id) < (1767394800000, 4792)
ORDER BY ts DESC, action_id DESC LIMIT 5;

--    The same page, with the user in the row value too (the fixed leading pair drops out).
EXPLAIN SELECT ts, action_id, action FROM user_actions
WHERE user_id = 42 AND (user_id, ts, action_id) < (42, 1767394800000, 4792)
ORDER BY ts DESC, action_id DESC LIMIT 5;
-- expect: RANGE SCAN user_actions range [user_id = 42, (ts, action_id) < (1767394800000, 4792)] limit=5

--    Why the tie-breaker: a cursor on ts alone skips action 4742, which has the same ts
--    as the last row shown (4792). Compare this page with the one above.
SELECT ts, action_id, action FROM user_actions
WHERE user_id = 42 AND ts < 1767394800000
ORDER BY ts DESC, action_id DESC LIMIT 5;

--    Keyset page 2 equals OFFSET page 2 (this returns no row).
(SELECT ts, action_id FROM user_actions
 WHERE user_id = 42 ORDER BY ts DESC, action_id DESC LIMIT 5 OFFSET 5)
EXCEPT
(SELECT ts, action_id FROM user_actions
 WHERE user_id = 42 AND (ts, action_id) < (1767394800000, 4792)
 ORDER BY ts DESC, action_id DESC LIMIT 5);

-- 4. A time window of one user (2026-01-02 00:00 to 06:00): a range inside the prefix.
EXPLAIN SELECT ts, action_id, action FROM user_actions
WHERE user_id = 42 AND ts >= 1767312000000 AND ts < 1767333600000;
-- expect: RANGE SCAN user_actions range [user_id = 42, ts >= 1767312000000 AND ts < 1767333600000]
SELECT to_timestamp_millis(ts) AS at, action_id, action FROM user_actions
WHERE user_id = 42 AND ts >= 1767312000000 AND ts < 1767333600000;

-- 5. Oldest first: the same prefix read backwards.
EXPLAIN SELECT ts, action_id, action FROM user_actions
WHERE user_id = 42 ORDER BY ts, action_id LIMIT 3;
-- expect: RANGE SCAN user_actions range [user_id = 42] reverse limit=3
SELECT to_timestamp_millis(ts) AS at, action_id, action FROM user_actions
WHERE user_id = 42 ORDER BY ts, action_id LIMIT 3;

-- 6. One action by its full key: a point get.
EXPLAIN SELECT * FROM user_actions WHERE user_id = 42 AND ts = 1767394800000 AND action_id = 4742;
-- expect: POINT GET user_actions key (user_id = 42, ts = 1767394800000, action_id = 4742)
SELECT * FROM user_actions WHERE user_id = 42 AND ts = 1767394800000 AND action_id = 4742;

-- 7. The latest purchases of all users: the (action, ts DESC) index, read from its start
--    for 'purchase', stopped after 5 entries; covering, since it holds every column read.
EXPLAIN SELECT user_id, ts, action_id FROM user_actions
WHERE action = 'purchase' ORDER BY ts DESC LIMIT 5;
-- expect: INDEX SCAN user_actions using user_actions_by_action [action = 'purchase'] covering limit=5
SELECT user_id, to_timestamp_millis(ts) AS at, action_id FROM user_actions
WHERE action = 'purchase' ORDER BY ts DESC LIMIT 5;

--    Without that index this would be a full scan with a sort (the primary key only):
EXPLAIN SELECT /*+ NO_INDEX */ user_id, ts, action_id FROM user_actions
WHERE action = 'purchase' ORDER BY ts DESC LIMIT 5;
-- expect: FULL SCAN user_actions residual=(action = 'purchase') then sorted by ts DESC limit=5

--    One user's purchases: the user's prefix (100 keys) is smaller than the index's
--    'purchase' range (about 715 entries), so the planner reads the prefix and checks
--    action on each row.
EXPLAIN SELECT ts, action_id, item FROM user_actions
WHERE user_id = 42 AND action = 'purchase' ORDER BY ts DESC LIMIT 3;
-- expect: RANGE SCAN user_actions range [user_id = 42] limit=3 residual=(action = 'purchase')

-- 8. A few users at once: one range per user, each newest first, merged by ts: the merge
--    stops after 5 rows.
EXPLAIN SELECT user_id, ts, action FROM user_actions
WHERE user_id IN (1, 2, 3) ORDER BY ts DESC LIMIT 5;
-- expect: RANGE SCAN user_actions range [user_id = 1; user_id = 2; user_id = 3] merged limit=5
SELECT user_id, to_timestamp_millis(ts) AS at, action_id, action FROM user_actions
WHERE user_id IN (1, 2, 3) ORDER BY ts DESC, action_id DESC LIMIT 5;
