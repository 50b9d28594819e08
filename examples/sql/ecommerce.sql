-- ecommerce.sql: customers, goods, orders, and who bought what when, with the tables'
-- HBase attributes as the row-key notes give them.
--
-- Run: rowdex --memory --format table -f examples/sql/ecommerce.sql
--
-- Row-key design:
--
--   customer        (customer_id)              point gets by id; email is UNIQUE (an index)
--   goods           (goods_id)                 point gets and multi gets by id; VERSIONS = 10
--                                              keeps the last ten prices of each goods
--                                              (AS OF a time), IN_MEMORY as HBase's hot
--                                              family (accepted; fjall has no cache priority)
--   "order"         (order_id)                 the order header, by its id, in two column
--                                              families: o (the order's own columns) and c
--                                              (the customer's name and city as they were
--                                              when the order was placed), each kept in a
--                                              keyspace of its own on disk, o uncompressed
--                                              and c compressed with LZ4
--   customer_order  (customer_id, goods_id, ts)
--       One row per line item, denormalized (price and quantity copied in) so that the
--       common questions need no join. The key answers, by prefix:
--         customer_id                   everything a customer bought, grouped by goods
--         customer_id, goods_id         has this customer bought this goods, and when
--         customer_id, goods_id, ts     one purchase (a point get), or a time range of it
--       The key is unique: a customer buys a given goods at most once at a given instant
--       (two line items of the same goods in one order would be one line with qty 2).
--
--   The other query directions get their own index, as HBase designs get their own
--   index tables, but maintained by rowdex in the same transaction as the row:
--       customer_order_by_goods  (goods_id, ts DESC)   who bought goods X, newest first
--       customer_order_by_ts     (ts)                  all sales in a time window
--   Each index entry is the indexed values followed by the primary key, so both are
--   unique without extra columns. INCLUDE (qty, price) makes the goods index covering
--   for revenue queries.

CREATE TABLE customer (
    customer_id  BIGINT PRIMARY KEY,
    name         TEXT NOT NULL,
    city         TEXT NOT NULL,
    email        TEXT UNIQUE
);

CREATE TABLE goods (
    goods_id  BIGINT PRIMARY KEY,
    name      TEXT NOT NULL,
    category  TEXT NOT NULL,
    price     DECIMAL(10, 2) NOT NULL
) WITH (VERSIONS = 10, IN_MEMORY = true);

CREATE TABLE "order" (
    order_id       BIGINT PRIMARY KEY,
    o.customer_id  BIGINT NOT NULL,
    o.ts           TIMESTAMP NOT NULL,
    o.status       TEXT NOT NULL,
    c.name         TEXT,
    c.city         TEXT
) WITH (o.COMPRESSION = 'NONE', c.COMPRESSION = 'LZ4', c.BLOOMFILTER = 'NONE');

CREATE TABLE customer_order (
    customer_id  BIGINT,
    goods_id     BIGINT,
    ts           TIMESTAMP,
    order_id     BIGINT NOT NULL,
    qty          INT NOT NULL,
    price        DECIMAL(10, 2) NOT NULL,
    PRIMARY KEY (customer_id, goods_id, ts)
);

CREATE INDEX customer_order_by_goods ON customer_order (goods_id, ts DESC) INCLUDE (qty, price);
CREATE INDEX customer_order_by_ts ON customer_order (ts);

-- Data: 200 customers, 100 goods, 1500 orders (one every 40 minutes from 2026-03-01),
-- each with 1 to 3 line items: about 3000 rows in customer_order.
INSERT INTO customer
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200)
SELECT i, 'customer ' || CAST(i AS TEXT),
       CASE i % 4 WHEN 0 THEN 'Hangzhou' WHEN 1 THEN 'Beijing' WHEN 2 THEN 'Shanghai'
                  ELSE 'Shenzhen' END,
       'c' || CAST(i AS TEXT) || '@example.com'
FROM n;

INSERT INTO goods
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100)
SELECT i, 'goods ' || CAST(i AS TEXT),
       CASE i % 5 WHEN 0 THEN 'books' WHEN 1 THEN 'phones' WHEN 2 THEN 'food'
                  WHEN 3 THEN 'toys' ELSE 'clothes' END,
       CAST((i * 37 % 500) + 0.99 AS DECIMAL(10, 2))
FROM n;

INSERT INTO "order"
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1500)
SELECT i, c.customer_id, to_timestamp_seconds(1772323200 + i * 2400),
       CASE WHEN i > 1450 THEN 'open' ELSE 'shipped' END, c.name, c.city
FROM n JOIN customer c ON c.customer_id = (i * i * 31) % 1009 % 200 + 1;

INSERT INTO customer_order
WITH RECURSIVE k(j) AS (SELECT 1 UNION ALL SELECT j + 1 FROM k WHERE j < 3)
SELECT o.customer_id, g.goods_id, o.ts, o.order_id, 1 + (o.order_id + k.j) % 4, g.price
FROM "order" o CROSS JOIN k
JOIN goods g ON g.goods_id = ((o.order_id * o.order_id * 7919) % 997 + k.j * 29) % 100 + 1
WHERE k.j <= 1 + o.order_id % 3;

SELECT (SELECT count(*) FROM customer) AS customers, (SELECT count(*) FROM goods) AS goods,
       (SELECT count(*) FROM "order") AS orders, (SELECT count(*) FROM customer_order) AS items;

-- 1. A customer, by id (point get) and by email (the UNIQUE index).
EXPLAIN SELECT * FROM customer WHERE customer_id = 125;
-- expect: POINT GET customer key (customer_id = 125)
EXPLAIN SELECT * FROM customer WHERE email = 'c125@example.com';
-- expect: INDEX SCAN customer using customer_email_key [email = 'c125@example.com']
SELECT * FROM customer WHERE email = 'c125@example.com';

-- 2. Several goods at once (a cart): every key fixed by IN, a multi get.
EXPLAIN SELECT goods_id, name, price FROM goods WHERE goods_id IN (7, 42, 99);
-- expect: MULTI GET goods 3 keys [(goods_id = 7), (goods_id = 42), (goods_id = 99)]
SELECT goods_id, name, price FROM goods WHERE goods_id IN (7, 42, 99);

-- 3. Everything customer 125 bought: the customer's prefix, in (goods_id, ts) order.
EXPLAIN SELECT goods_id, ts, qty, price FROM customer_order WHERE customer_id = 125;
-- expect: RANGE SCAN customer_order range [customer_id = 125]
SELECT goods_id, ts, order_id, qty, price FROM customer_order WHERE customer_id = 125 LIMIT 8;

-- 4. Has customer 125 bought goods 70, and when: two key columns fixed.
EXPLAIN SELECT ts, qty FROM customer_order WHERE customer_id = 125 AND goods_id = 70;
-- expect: RANGE SCAN customer_order range [customer_id = 125, goods_id = 70]
SELECT ts, qty FROM customer_order WHERE customer_id = 125 AND goods_id = 70;

--    ... in March only: the third key column bounded.
EXPLAIN SELECT ts, qty FROM customer_order WHERE customer_id = 125 AND goods_id = 70
AND ts >= TIMESTAMP '2026-03-01 00:00:00' AND ts < TIMESTAMP '2026-04-01 00:00:00';
-- expect: RANGE SCAN customer_order range [customer_id = 125, goods_id = 70, ts >= TIMESTAMP '2026-03-01 00:00:00' AND ts < TIMESTAMP '2026-04-01 00:00:00']

--    ... the last time: the range read backwards, stopped after one key.
EXPLAIN SELECT ts FROM customer_order WHERE customer_id = 125 AND goods_id = 70
ORDER BY ts DESC LIMIT 1;
-- expect: RANGE SCAN customer_order range [customer_id = 125, goods_id = 70] reverse limit=1

--    One purchase: the whole key, a point get.
EXPLAIN SELECT * FROM customer_order
WHERE customer_id = 125 AND goods_id = 70 AND ts = TIMESTAMP '2026-03-28 17:20:00';
-- expect: POINT GET customer_order key (customer_id = 125, goods_id = 70, ts = TIMESTAMP '2026-03-28 17:20:00')

-- 5. Who bought goods 96, newest first: not a key prefix, so the goods index;
--    covering (customer_id, ts are in the key, qty and price INCLUDEd).
EXPLAIN SELECT customer_id, ts, qty, price FROM customer_order
WHERE goods_id = 96 ORDER BY ts DESC LIMIT 5;
-- expect: INDEX SCAN customer_order using customer_order_by_goods [goods_id = 96] covering limit=5
SELECT customer_id, ts, qty, price FROM customer_order
WHERE goods_id = 96 ORDER BY ts DESC LIMIT 5;

--    Revenue of goods 96 in the first week of April: an index range, then the sum.
EXPLAIN SELECT sum(qty * price) AS revenue FROM customer_order
WHERE goods_id = 96 AND ts >= TIMESTAMP '2026-04-01 00:00:00' AND ts < TIMESTAMP '2026-04-08 00:00:00';
-- expect: INDEX SCAN customer_order using customer_order_by_goods [goods_id = 96, ts >= TIMESTAMP '2026-04-01 00:00:00' AND ts < TIMESTAMP '2026-04-08 00:00:00'] covering
SELECT count(*) AS sales, sum(qty * price) AS revenue FROM customer_order
WHERE goods_id = 96 AND ts >= TIMESTAMP '2026-04-01 00:00:00' AND ts < TIMESTAMP '2026-04-08 00:00:00';

-- 6. All sales in one hour, every customer and goods: the time index. order_id is not in
--    the index entry, so each entry costs a row lookup.
EXPLAIN SELECT customer_id, goods_id, ts, order_id FROM customer_order
WHERE ts >= TIMESTAMP '2026-03-10 12:00:00' AND ts < TIMESTAMP '2026-03-10 13:00:00';
-- expect: INDEX SCAN customer_order using customer_order_by_ts [ts >= TIMESTAMP '2026-03-10 12:00:00' AND ts < TIMESTAMP '2026-03-10 13:00:00']
SELECT customer_id, goods_id, ts, order_id FROM customer_order
WHERE ts >= TIMESTAMP '2026-03-10 12:00:00' AND ts < TIMESTAMP '2026-03-10 13:00:00'
ORDER BY ts;

--    Best sellers of one day (an index range, then DataFusion's aggregate and join).
EXPLAIN SELECT g.name, sum(co.qty) AS sold FROM customer_order co
JOIN goods g ON g.goods_id = co.goods_id
WHERE co.ts >= TIMESTAMP '2026-03-10 00:00:00' AND co.ts < TIMESTAMP '2026-03-11 00:00:00'
GROUP BY g.name ORDER BY sold DESC, g.name LIMIT 3;
-- expect: INDEX SCAN customer_order using customer_order_by_ts [ts >= TIMESTAMP '2026-03-10 00:00:00' AND ts < TIMESTAMP '2026-03-11 00:00:00']
SELECT g.name, sum(co.qty) AS sold FROM customer_order co
JOIN goods g ON g.goods_id = co.goods_id
WHERE co.ts >= TIMESTAMP '2026-03-10 00:00:00' AND co.ts < TIMESTAMP '2026-03-11 00:00:00'
GROUP BY g.name ORDER BY sold DESC, g.name LIMIT 3;

-- 7. Customer 125's purchases in a time window, any goods: ts is the third key column, so
--    the key gives only the customer prefix; the planner compares it with the time
--    index and reads the (small) prefix, checking ts on each row.
EXPLAIN SELECT goods_id, ts FROM customer_order
WHERE customer_id = 125 AND ts >= TIMESTAMP '2026-03-20 00:00:00' AND ts < TIMESTAMP '2026-04-01 00:00:00';
-- expect: RANGE SCAN customer_order range [customer_id = 125] residual=(ts >= TIMESTAMP '2026-03-20 00:00:00' AND ts < TIMESTAMP '2026-04-01 00:00:00')

--    Goods 70 bought by customers 125 and 182: fixed pairs of the first two key columns,
--    one range each.
EXPLAIN SELECT customer_id, ts FROM customer_order
WHERE customer_id IN (125, 182) AND goods_id = 70;
-- expect: RANGE SCAN customer_order range [customer_id = 125, goods_id = 70; customer_id = 182, goods_id = 70]

-- 8. Orders: the header by id, and the open ones (no index on status: a full scan with
--    the status checked on each row; fine for a rare back-office query). The plans name
--    the families they read: the open orders need family o only, never c.
EXPLAIN SELECT * FROM "order" WHERE order_id = 1451;
-- expect: POINT GET order key (order_id = 1451) families=[o, c]
EXPLAIN SELECT order_id, customer_id FROM "order" WHERE status = 'open';
-- expect: FULL SCAN order families=[o] residual=(status = 'open')
SELECT count(*) AS open_orders FROM "order" WHERE status = 'open';

--    The line items of order 1451: the header gives the customer and ts, and with them
--    the items are a prefix of customer_order (then order_id checked on each row).
SELECT customer_id, ts FROM "order" WHERE order_id = 1451;
EXPLAIN SELECT goods_id, qty, price FROM customer_order
WHERE customer_id = 67 AND order_id = 1451;
-- expect: RANGE SCAN customer_order range [customer_id = 67] residual=(order_id = 1451)
SELECT goods_id, qty, price FROM customer_order WHERE customer_id = 67 AND order_id = 1451;

--    The same two steps as one statement: the header by its key, then the customer's prefix
--    of customer_order probed with the header's customer_id (a lookup join), order_id
--    checked on each line found.
EXPLAIN SELECT co.goods_id, co.qty, co.price FROM "order" o
JOIN customer_order co ON co.customer_id = o.customer_id AND co.order_id = o.order_id
WHERE o.order_id = 1451;
-- expect: POINT GET order key (order_id = 1451) families=[o]
-- expect: LOOKUP JOIN customer_order using primary key [customer_id = customer_id]
SELECT co.goods_id, co.qty, co.price FROM "order" o
JOIN customer_order co ON co.customer_id = o.customer_id AND co.order_id = o.order_id
WHERE o.order_id = 1451 ORDER BY co.goods_id;

-- 9. The attributes at work. goods keeps the last ten prices of each goods: a price change,
--    then every kept version of it, newest first (as_of(goods, t) reads the table as it
--    stood at a time).
UPDATE goods SET price = price + 5 WHERE goods_id = 7;
SELECT goods_id, price FROM versions(goods) WHERE goods_id = 7;

--    Where "order"'s families are kept, with their options: each in a keyspace of its own on
--    the on-disk store (this in-memory run keeps every table alike, and says so).
EXPLAIN KEY "order";
