-- users_intersection.sql: "born in Hangzhou, aged 20, the first 10 by id".
--
-- Run: rowdex --memory --format table -f examples/sql/users_intersection.sql
--
-- Row-key design: users keyed by id. Two single-column secondary indexes, on birthplace
-- and on age. An index entry's key is (indexed value, id), so the entries of one value
-- come out in id order. Two such streams, each sorted by id, can be intersected like a
-- merge join; rowdex's leapfrog join seeks each stream forward to the other's current id
-- instead of reading every entry, and its output is in id order, so "first 10 by id"
-- stops after 10 matches with no sort. One index per column serves every combination of
-- the columns (birthplace alone, age alone, both).
--
-- The alternative is the HBase habit: one composite index per query, (birthplace, age).
-- Both columns fixed make a single contiguous range of entries, again in id order:
-- fewer entries read than any intersection, at the price of an index that serves only
-- queries that fix birthplace first. The script shows both plans, with hints and with
-- CREATE/DROP INDEX.
--
-- Hints (Apache Phoenix style), written right after SELECT:
--   /*+ INDEX(t idx ...) */        only these indexes
--   /*+ NO_INDEX */                the primary key only
--   /*+ INDEX_MERGE(t i1 i2) */    intersect exactly these

CREATE TABLE users (
    id          BIGINT PRIMARY KEY,
    name        TEXT NOT NULL,
    birthplace  TEXT NOT NULL,
    age         INT NOT NULL
);

CREATE INDEX users_birthplace ON users (birthplace);
CREATE INDEX users_age ON users (age);

-- 10000 users. The birthplace comes from i mod 97 and the age from i mod 40; 97 and 40
-- are coprime, so the two columns are independent and each combination is present.
-- Hangzhou is about 5% of the users, Chengdu 10%, Beijing 30%, every age 2.5%.
INSERT INTO users
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000)
SELECT i, 'user ' || CAST(i AS TEXT),
       CASE WHEN i * 7919 % 97 < 5 THEN 'Hangzhou' WHEN i * 7919 % 97 < 34 THEN 'Beijing'
            WHEN i * 7919 % 97 < 58 THEN 'Shanghai' WHEN i * 7919 % 97 < 73 THEN 'Shenzhen'
            WHEN i * 7919 % 97 < 83 THEN 'Chengdu' WHEN i * 7919 % 97 < 90 THEN 'Wuhan'
            ELSE 'Nanjing' END,
       18 + i * 13 % 40
FROM n;

SELECT (SELECT count(*) FROM users WHERE birthplace = 'Hangzhou') AS hangzhou,
       (SELECT count(*) FROM users WHERE birthplace = 'Chengdu') AS chengdu,
       (SELECT count(*) FROM users WHERE birthplace = 'Beijing') AS beijing,
       (SELECT count(*) FROM users WHERE age = 20) AS aged_20,
       (SELECT count(*) FROM users WHERE birthplace = 'Hangzhou' AND age = 20) AS both;

-- 1. The query: an intersection of the two indexes, in id order, stopped after 10 rows.
EXPLAIN SELECT id, name FROM users
WHERE birthplace = 'Hangzhou' AND age = 20 ORDER BY id LIMIT 10;
-- expect: INDEX INTERSECTION users using users_age [age = 20] AND users_birthplace [birthplace = 'Hangzhou'] limit=10
SELECT id, name, birthplace, age FROM users
WHERE birthplace = 'Hangzhou' AND age = 20 ORDER BY id LIMIT 10;

--    Counting needs no row at all: the index entries carry the ids (covering).
EXPLAIN SELECT count(*) FROM users WHERE birthplace = 'Hangzhou' AND age = 20;
-- expect: INDEX INTERSECTION users using users_age [age = 20] AND users_birthplace [birthplace = 'Hangzhou'] covering

--    Chengdu (10% of the users) is 4 times denser than age 20: its index is not read as a
--    stream; each id coming from the age index is looked up in it instead ("checking").
EXPLAIN SELECT id, name FROM users
WHERE birthplace = 'Chengdu' AND age = 20 ORDER BY id LIMIT 10;
-- expect: INDEX INTERSECTION users using users_age [age = 20] checking users_birthplace [birthplace = 'Chengdu'] limit=10

--    Beijing (30%) hardly filters: the planner reads the age index alone and checks
--    birthplace on each row it fetches (a residual).
EXPLAIN SELECT id, name FROM users
WHERE birthplace = 'Beijing' AND age = 20 ORDER BY id LIMIT 10;
-- expect: INDEX SCAN users using users_age [age = 20] limit=10 residual=(birthplace = 'Beijing')

--    An age range is an input too: its entries are not in id order across ages, so that
--    input is read and sorted by id first.
EXPLAIN SELECT id, name FROM users
WHERE birthplace = 'Hangzhou' AND age BETWEEN 20 AND 22 ORDER BY id LIMIT 10;
-- expect: INDEX INTERSECTION users using users_birthplace [birthplace = 'Hangzhou'] AND users_age [age >= 20 AND age <= 22] limit=10

-- 2. The alternatives, forced with hints, for comparison:
--    one index, the other column checked on every row it returns;
EXPLAIN SELECT /*+ INDEX(users users_birthplace) */ id, name FROM users
WHERE birthplace = 'Hangzhou' AND age = 20 ORDER BY id LIMIT 10;
-- expect: INDEX SCAN users using users_birthplace [birthplace = 'Hangzhou'] limit=10 residual=(age = 20)
--    the primary key only: a full scan in id order, both columns checked per row.
EXPLAIN SELECT /*+ NO_INDEX */ id, name FROM users
WHERE birthplace = 'Hangzhou' AND age = 20 ORDER BY id LIMIT 10;
-- expect: FULL SCAN users limit=10 residual=(birthplace = 'Hangzhou' AND age = 20)

-- 3. The composite index, the one-index-per-query design. INCLUDE (name) makes it
--    covering for this query: no row lookups either.
CREATE INDEX users_birthplace_age ON users (birthplace, age) INCLUDE (name);

EXPLAIN SELECT id, name FROM users
WHERE birthplace = 'Hangzhou' AND age = 20 ORDER BY id LIMIT 10;
-- expect: INDEX SCAN users using users_birthplace_age [birthplace = 'Hangzhou', age = 20] covering limit=10
SELECT id, name FROM users
WHERE birthplace = 'Hangzhou' AND age = 20 ORDER BY id LIMIT 10;

--    The intersection is still there on request.
EXPLAIN SELECT /*+ INDEX_MERGE(users users_birthplace users_age) */ id, name FROM users
WHERE birthplace = 'Hangzhou' AND age = 20 ORDER BY id LIMIT 10;
-- expect: INDEX INTERSECTION users using users_birthplace [birthplace = 'Hangzhou'] AND users_age [age = 20] limit=10

--    The composite index needs its leading column: age alone uses the age index.
EXPLAIN SELECT id, name FROM users WHERE age = 20 ORDER BY id LIMIT 10;
-- expect: INDEX SCAN users using users_age [age = 20] limit=10

--    An age range inside one birthplace is one range of the composite index, but its
--    entries are in (age, id) order, so "first 10 by id" sorts them.
EXPLAIN SELECT id, name FROM users
WHERE birthplace = 'Hangzhou' AND age BETWEEN 20 AND 29 ORDER BY id LIMIT 10;
-- expect: INDEX SCAN users using users_birthplace_age [birthplace = 'Hangzhou', age >= 20 AND age <= 29] covering

-- 4. Dropping the composite index brings back the intersection: same answer.
DROP INDEX users_birthplace_age;
EXPLAIN SELECT id, name FROM users
WHERE birthplace = 'Hangzhou' AND age = 20 ORDER BY id LIMIT 10;
-- expect: INDEX INTERSECTION users using users_age [age = 20] AND users_birthplace [birthplace = 'Hangzhou'] limit=10
SELECT id, name FROM users
WHERE birthplace = 'Hangzhou' AND age = 20 ORDER BY id LIMIT 10;

SHOW INDEXES FROM users;
