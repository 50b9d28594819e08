CREATE TABLE orders (customer BIGINT NOT NULL, order_id BIGINT NOT NULL, amount DOUBLE, note VARCHAR(20), placed TIMESTAMP, flag BOOLEAN, price DECIMAL(10,2), PRIMARY KEY (customer, order_id DESC));
CREATE INDEX orders_amount ON orders (amount);
CREATE UNIQUE INDEX orders_note ON orders (note);
CREATE INDEX orders_cov ON orders (placed) INCLUDE (amount);
CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT);
CREATE TABLE no_key (a INTEGER, b BYTEA, d DATE);
CREATE VIEW v1 AS SELECT id, v AS value FROM t;
\d
\dt
\di
\dv
\d orders
\d t
\d no_key
\d orders_amount
\d v1
\l
\dn
\d nosuch
DROP INDEX orders_cov;
\d orders
SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns WHERE table_name = 't' ORDER BY ordinal_position;
SELECT current_database(), current_schema(), current_user;
SELECT c.relname FROM pg_class c WHERE c.oid = 'orders'::regclass;
CREATE TABLE accounts (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, owner TEXT NOT NULL DEFAULT 'nobody', balance BIGINT DEFAULT 0 CHECK (balance >= 0), opened TIMESTAMP DEFAULT now(), CONSTRAINT owner_named CHECK (owner <> ''));
\d accounts
CREATE TABLE authors (id INT PRIMARY KEY, email TEXT UNIQUE);
CREATE TABLE books (id INT PRIMARY KEY, author_id INT REFERENCES authors ON DELETE CASCADE, author_email TEXT, CONSTRAINT books_email FOREIGN KEY (author_email) REFERENCES authors (email) ON UPDATE SET NULL);
\d books
\d authors
CREATE TABLE ledger (id INT PRIMARY KEY, amount INT) WITH (TTL = 3600, DURABILITY = 'FSYNC_WAL', READONLY = true);
\d+ ledger
INSERT INTO ledger VALUES (1, 1);
ALTER TABLE ledger SET (READONLY = false, DURABILITY = USE_DEFAULT);
\d+ ledger
SET synchronous_commit = off;
SHOW synchronous_commit;
SHOW durability;
SET durability = 'SKIP_WAL';
SHOW durability;
SET synchronous_commit = sometimes;
