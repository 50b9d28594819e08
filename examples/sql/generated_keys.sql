-- generated_keys.sql: row keys computed from the columns a query names, declared once.
--
-- Run: rowdex --memory --format table -f examples/sql/generated_keys.sql
--
-- The seeds' designs put a derived value in front of the key: a reversed user id (sequential
-- ids would all land at the end of the key space), an md5 prefix (spreads any id evenly), a
-- time bucket (ts % n: n append points instead of one). Written by hand, every writer must
-- compute the derived value and every reader must compute it again to find a row. With a
-- generated column the table computes it on every write, and a query that names only the
-- source column (user_id = 'x', device_id = 'd', a range of ts) is answered through the key:
-- rowdex computes the derived value from the query's value.
--
-- Tables:
--   users          (rid)                      rid = reverse(user_id)
--   device_events  (shard, device_id, ts DESC) shard = substr(md5(device_id), 1, 2)
--   logs           (bucket, ts, log_id)        bucket = ts % 4

CREATE TABLE users (
    rid      TEXT GENERATED ALWAYS AS (reverse(user_id)) STORED,
    user_id  TEXT NOT NULL,
    name     TEXT,
    city     TEXT,
    PRIMARY KEY (rid)
);

CREATE TABLE device_events (
    shard     TEXT GENERATED ALWAYS AS (substr(md5(device_id), 1, 2)) STORED,
    device_id TEXT NOT NULL,
    ts        BIGINT NOT NULL,
    kind      TEXT,
    PRIMARY KEY (shard, device_id, ts DESC)
);

CREATE TABLE logs (
    bucket  INT GENERATED ALWAYS AS (ts % 4) STORED,
    ts      BIGINT NOT NULL,            -- epoch milliseconds
    log_id  BIGINT NOT NULL,
    level   TEXT,
    PRIMARY KEY (bucket, ts, log_id)
);

-- Sequential ids u000001 ... u003000: reversed, they spread over the whole key space.
INSERT INTO users (user_id, name, city)
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
SELECT 'u' || lpad(CAST(i AS TEXT), 6, '0'), 'user ' || CAST(i AS TEXT),
       CASE i % 3 WHEN 0 THEN 'Hangzhou' WHEN 1 THEN 'Beijing' ELSE 'Shenzhen' END
FROM n;

-- 200 devices, 20 events each.
INSERT INTO device_events (device_id, ts, kind)
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 3999)
SELECT 'dev' || CAST(i % 200 AS TEXT), 1767225600 + i * 17,
       CASE WHEN i % 7 = 0 THEN 'alarm' ELSE 'ping' END
FROM n;

INSERT INTO logs (ts, log_id, level)
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
SELECT 1767225600000 + i * 1733, i,
       CASE WHEN i % 50 = 0 THEN 'ERROR' WHEN i % 10 = 0 THEN 'WARN' ELSE 'INFO' END
FROM n;

-- The row key is the reversed id: neighbouring ids are far apart.
SELECT rid, user_id FROM users ORDER BY rid LIMIT 4;

-- 1. A user by id: the key computed from it, one point get.
EXPLAIN SELECT name, city FROM users WHERE user_id = 'u001234';
-- expect: POINT GET users key (rid = '432100u') residual=(user_id = 'u001234')
SELECT name, city FROM users WHERE user_id = 'u001234';

--    Several ids: one get per key.
EXPLAIN SELECT user_id, name FROM users WHERE user_id IN ('u000007', 'u002999');
-- expect: MULTI GET users 2 keys [(rid = '700000u'), (rid = '999200u')] residual=(user_id IN ('u000007', 'u002999'))
SELECT user_id, name FROM users WHERE user_id IN ('u000007', 'u002999') ORDER BY user_id;

--    No statement writes the key itself; changing the id moves the row to its new key.
UPDATE users SET user_id = 'u901234' WHERE user_id = 'u001234';
SELECT rid, user_id, name FROM users WHERE user_id = 'u901234';

-- 2. A device's latest events: its shard is computed from the id, and the key (ts DESC)
--    gives the newest first, so LIMIT stops the scan.
EXPLAIN SELECT ts, kind FROM device_events WHERE device_id = 'dev42' ORDER BY ts DESC LIMIT 3;
-- expect: RANGE SCAN device_events range [shard = '6f', device_id = 'dev42'] limit=3
SELECT ts, kind FROM device_events WHERE device_id = 'dev42' ORDER BY ts DESC LIMIT 3;

--    md5 scatters the 200 devices over the 256 two-digit shards (133 of them here).
SELECT count(DISTINCT shard) AS shards, count(*) AS events FROM device_events;

-- 3. Logs over ten seconds: every bucket of ts % 4 (a negative ts would give -3 .. -1, so
--    those ranges are read too, empty), one range of ts each.
EXPLAIN SELECT ts, level FROM logs WHERE ts >= 1767225610000 AND ts < 1767225620000;
-- expect: RANGE SCAN logs range [bucket = -3, ts >= 1767225610000 AND ts < 1767225620000; bucket = -2, ts >= 1767225610000 AND ts < 1767225620000; bucket = -1, ts >= 1767225610000 AND ts < 1767225620000; bucket = 0, ts >= 1767225610000 AND ts < 1767225620000; bucket = 1, ts >= 1767225610000 AND ts < 1767225620000; bucket = 2, ts >= 1767225610000 AND ts < 1767225620000; bucket = 3, ts >= 1767225610000 AND ts < 1767225620000]
SELECT ts, level FROM logs WHERE ts >= 1767225610000 AND ts < 1767225620000 ORDER BY ts;

--    Where the next 1000 logs land: SHOW KEY SPREAD grows ts and computes the bucket from
--    it, so the writes spread over the four buckets' ends instead of one.
SHOW KEY SPREAD logs PARTITIONS 4;

--    The key's layout, with the generated part named.
EXPLAIN KEY logs;
