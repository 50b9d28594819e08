-- time_series.sql: metrics and logs, written in time order, without a write hotspot.
--
-- Run: rowdex --memory --format table -f examples/sql/time_series.sql
--
-- The problem: a key that starts with (or, inside one host, continues with) an increasing
-- timestamp sends every new write to the same end of the key space, so in a distributed
-- ordered store one region (one server) takes all the writes. The classic cure is a small
-- bucket number in front of the key: n buckets are n separate append points.
--
-- Two ways to get a bucket:
--
--   By hand: an ordinary leading key column, computed by the writer from the timestamp
--   (bucket = minute % 4 for metrics, ts % 4 for logs). A reader that knows the timestamp
--   computes the bucket too (a point get); a time-range reader asks for every bucket,
--   bucket IN (0, 1, 2, 3), which is one key range per bucket.
--
--   SALT_BUCKETS = 4: rowdex prefixes each row key with hash(primary key) mod 4 and hides
--   it. The SQL is the plain SQL of an unsalted table: a point get computes the bucket,
--   a scan reads the 4 buckets and merges them back into key order, so ORDER BY along
--   the key and LIMIT still need no sort.
--
-- Tables:
--   metrics         (bucket, host, ts)   bucket = (ts / 60) % 4, ts in epoch seconds
--   metrics_salted  (host, ts)           SALT_BUCKETS = 4
--   logs            (bucket, ts, log_id) bucket = ts % 4, ts in epoch milliseconds;
--                                        log_id makes two logs of the same ms distinct
--   logs_salted     (ts, log_id)         SALT_BUCKETS = 4
--
-- Host names web1 ... web12 show that the key encoding is prefix-safe: host = 'web1'
-- is its own key range and never reads web10, web11 or web12.

CREATE TABLE metrics (
    bucket  INT,
    host    TEXT,
    ts      BIGINT,                     -- epoch seconds, one sample a minute
    cpu     DOUBLE,
    mem_mb  BIGINT,
    PRIMARY KEY (bucket, host, ts)
);

CREATE TABLE metrics_salted (
    host    TEXT,
    ts      BIGINT,
    cpu     DOUBLE,
    mem_mb  BIGINT,
    PRIMARY KEY (host, ts)
) WITH (SALT_BUCKETS = 4);

CREATE TABLE logs (
    bucket  INT,
    ts      BIGINT,                     -- epoch milliseconds
    log_id  BIGINT,
    host    TEXT NOT NULL,
    level   TEXT NOT NULL,
    msg     TEXT,
    PRIMARY KEY (bucket, ts, log_id)
);

CREATE TABLE logs_salted (
    ts      BIGINT,
    log_id  BIGINT,
    host    TEXT NOT NULL,
    level   TEXT NOT NULL,
    msg     TEXT,
    PRIMARY KEY (ts, log_id)
) WITH (SALT_BUCKETS = 4);

-- 12 hosts x 400 minutes from 2026-01-01 00:00 UTC (1767225600): 4800 samples.
INSERT INTO metrics
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 4799)
SELECT ((1767225600 + (i / 12) * 60) / 60) % 4,
       'web' || CAST(i % 12 + 1 AS TEXT),
       1767225600 + (i / 12) * 60,
       round(20 + (i * 7919 % 6000) / 100.0, 2),
       2048 + i * 104729 % 2048
FROM n;

INSERT INTO metrics_salted SELECT host, ts, cpu, mem_mb FROM metrics;

-- 3000 log lines, one every 1.733 s or so.
INSERT INTO logs
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
SELECT (1767225600000 + i * 1733) % 4,
       1767225600000 + i * 1733,
       i,
       'web' || CAST(i * 7 % 12 + 1 AS TEXT),
       CASE WHEN i % 50 = 0 THEN 'ERROR' WHEN i % 10 = 0 THEN 'WARN' ELSE 'INFO' END,
       'request ' || CAST(i AS TEXT)
FROM n;

INSERT INTO logs_salted SELECT ts, log_id, host, level, msg FROM logs;

-- The writes are spread evenly over the buckets.
SELECT bucket, count(*) AS samples FROM metrics GROUP BY bucket ORDER BY bucket;

-- 1. One sample whose time is known (2026-01-01 01:00:00 = 1767229200): the reader
--    computes the bucket as the writer did, and it is a point get.
EXPLAIN SELECT cpu, mem_mb FROM metrics
WHERE bucket = (1767229200 / 60) % 4 AND host = 'web1' AND ts = 1767229200;
-- expect: POINT GET metrics key (bucket = 0, host = 'web1', ts = 1767229200)
SELECT bucket, host, ts, cpu, mem_mb FROM metrics
WHERE bucket = (1767229200 / 60) % 4 AND host = 'web1' AND ts = 1767229200;

-- 2. One host over 20 minutes: every bucket, one key range each (4 ranges of about 5
--    keys), then the rows sorted by ts.
EXPLAIN SELECT ts, cpu FROM metrics
WHERE bucket IN (0, 1, 2, 3) AND host = 'web1' AND ts >= 1767229200 AND ts < 1767230400
ORDER BY ts;
-- expect: RANGE SCAN metrics range [bucket = 0, host = 'web1', ts >= 1767229200 AND ts < 1767230400; bucket = 1, host = 'web1', ts >= 1767229200 AND ts < 1767230400; bucket = 2, host = 'web1', ts >= 1767229200 AND ts < 1767230400; bucket = 3, host = 'web1', ts >= 1767229200 AND ts < 1767230400] then sorted by ts
SELECT ts, to_timestamp_seconds(ts) AS at, cpu FROM metrics
WHERE bucket IN (0, 1, 2, 3) AND host = 'web1' AND ts >= 1767229200 AND ts < 1767230400
ORDER BY ts LIMIT 6;

--    Forgetting the bucket list costs a full scan: the key starts with bucket.
EXPLAIN SELECT ts, cpu FROM metrics
WHERE host = 'web1' AND ts >= 1767229200 AND ts < 1767230400;
-- expect: FULL SCAN metrics residual=(host = 'web1' AND ts >= 1767229200 AND ts < 1767230400)

--    A range on the bucket is not expanded into the four buckets: one range over all of
--    them, host and ts checked on every row. Write the IN list.
EXPLAIN SELECT ts, cpu FROM metrics
WHERE bucket BETWEEN 0 AND 3 AND host = 'web1' AND ts >= 1767229200 AND ts < 1767230400;
-- expect: RANGE SCAN metrics range [bucket >= 0 AND bucket <= 3] residual=(host = 'web1' AND ts >= 1767229200 AND ts < 1767230400)

--    The latest sample of web1: each bucket's range holds web1's samples in ts order, so the
--    4 ranges are read newest first and merged by ts, and the merge stops after one row (as
--    on the salted table, 5).
EXPLAIN SELECT ts, cpu FROM metrics
WHERE bucket IN (0, 1, 2, 3) AND host = 'web1' ORDER BY ts DESC LIMIT 1;
-- expect: RANGE SCAN metrics range [bucket = 0, host = 'web1'; bucket = 1, host = 'web1'; bucket = 2, host = 'web1'; bucket = 3, host = 'web1'] merged reverse limit=1
SELECT ts, cpu FROM metrics
WHERE bucket IN (0, 1, 2, 3) AND host = 'web1' ORDER BY ts DESC LIMIT 1;

-- 3. Per-host averages over one hour, for three hosts: 4 buckets x 3 hosts = 12 ranges,
--    aggregated by DataFusion. web1 does not read web10..web12 (prefix-safe keys).
EXPLAIN SELECT host, avg(cpu) FROM metrics
WHERE bucket IN (0, 1, 2, 3) AND host IN ('web1', 'web2', 'web12')
AND ts >= 1767229200 AND ts < 1767232800 GROUP BY host;
-- expect: RANGE SCAN metrics range [bucket = 0, host = 'web1', ts >= 1767229200 AND ts < 1767232800; bucket = 0, host = 'web12', ts >= 1767229200 AND ts < 1767232800; bucket = 0, host = 'web2', ts >= 1767229200 AND ts < 1767232800; bucket = 1, host = 'web1', ts >= 1767229200 AND ts < 1767232800; bucket = 1, host = 'web12', ts >= 1767229200 AND ts < 1767232800; bucket = 1, host = 'web2', ts >= 1767229200 AND ts < 1767232800; bucket = 2, host = 'web1', ts >= 1767229200 AND ts < 1767232800; bucket = 2, host = 'web12', ts >= 1767229200 AND ts < 1767232800; bucket = 2, host = 'web2', ts >= 1767229200 AND ts < 1767232800; bucket = 3, host = 'web1', ts >= 1767229200 AND ts < 1767232800; bucket = 3, host = 'web12', ts >= 1767229200 AND ts < 1767232800; bucket = 3, host = 'web2', ts >= 1767229200 AND ts < 1767232800]
SELECT host, count(*) AS samples, round(avg(cpu), 2) AS avg_cpu, max(mem_mb) AS max_mem FROM metrics
WHERE bucket IN (0, 1, 2, 3) AND host IN ('web1', 'web2', 'web12')
AND ts >= 1767229200 AND ts < 1767232800 GROUP BY host ORDER BY host;

-- 4. Logs between 01:00:00 and 01:01:00, all hosts, in time order: ts is the key column
--    right after the bucket, so 4 tight ranges, then sorted.
EXPLAIN SELECT ts, host, level, msg FROM logs
WHERE bucket IN (0, 1, 2, 3) AND ts >= 1767229200000 AND ts < 1767229260000 ORDER BY ts;
-- expect: RANGE SCAN logs range [bucket = 0, ts >= 1767229200000 AND ts < 1767229260000; bucket = 1, ts >= 1767229200000 AND ts < 1767229260000; bucket = 2, ts >= 1767229200000 AND ts < 1767229260000; bucket = 3, ts >= 1767229200000 AND ts < 1767229260000] then sorted by ts
SELECT ts, host, level, msg FROM logs
WHERE bucket IN (0, 1, 2, 3) AND ts >= 1767229200000 AND ts < 1767229260000
ORDER BY ts LIMIT 5;

--    Errors in that window: the same ranges, level checked on each row.
EXPLAIN SELECT ts, host, msg FROM logs
WHERE bucket IN (0, 1, 2, 3) AND ts >= 1767229200000 AND ts < 1767229260000 AND level = 'ERROR';
-- expect: RANGE SCAN logs range [bucket = 0, ts >= 1767229200000 AND ts < 1767229260000; bucket = 1, ts >= 1767229200000 AND ts < 1767229260000; bucket = 2, ts >= 1767229200000 AND ts < 1767229260000; bucket = 3, ts >= 1767229200000 AND ts < 1767229260000] residual=(level = 'ERROR')

-- 5. The salted tables: the same questions in plain SQL. "buckets=4" in the plan: the
--    scan reads the 4 salt buckets and merges them in key order.
EXPLAIN SELECT cpu, mem_mb FROM metrics_salted WHERE host = 'web1' AND ts = 1767229200;
-- expect: POINT GET metrics_salted key (host = 'web1', ts = 1767229200) buckets=4
EXPLAIN SELECT ts, cpu FROM metrics_salted
WHERE host = 'web1' AND ts >= 1767229200 AND ts < 1767230400 ORDER BY ts;
-- expect: RANGE SCAN metrics_salted range [host = 'web1', ts >= 1767229200 AND ts < 1767230400] buckets=4
SELECT ts, to_timestamp_seconds(ts) AS at, cpu FROM metrics_salted
WHERE host = 'web1' AND ts >= 1767229200 AND ts < 1767230400 ORDER BY ts LIMIT 6;

--    The latest sample: merged newest-first from each bucket, stopped after one row.
EXPLAIN SELECT ts, cpu FROM metrics_salted WHERE host = 'web1' ORDER BY ts DESC LIMIT 1;
-- expect: RANGE SCAN metrics_salted range [host = 'web1'] reverse buckets=4 limit=1
SELECT ts, cpu FROM metrics_salted WHERE host = 'web1' ORDER BY ts DESC LIMIT 1;

--    The latest 5 log lines, and a time window of logs, in order with no sort.
EXPLAIN SELECT ts, host, level FROM logs_salted ORDER BY ts DESC LIMIT 5;
-- expect: FULL SCAN logs_salted reverse buckets=4 limit=5
SELECT ts, host, level FROM logs_salted ORDER BY ts DESC LIMIT 5;
EXPLAIN SELECT ts, host, level, msg FROM logs_salted
WHERE ts >= 1767229200000 AND ts < 1767229260000 ORDER BY ts;
-- expect: RANGE SCAN logs_salted range [ts >= 1767229200000 AND ts < 1767229260000] buckets=4
SELECT ts, host, level, msg FROM logs_salted
WHERE ts >= 1767229200000 AND ts < 1767229260000 ORDER BY ts LIMIT 5;

--    Same answers from both designs (this returns no row).
(SELECT ts, log_id FROM logs WHERE bucket IN (0, 1, 2, 3) AND ts >= 1767229200000 AND ts < 1767229260000)
EXCEPT
(SELECT ts, log_id FROM logs_salted WHERE ts >= 1767229200000 AND ts < 1767229260000);
