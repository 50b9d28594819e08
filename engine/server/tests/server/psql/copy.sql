CREATE TABLE items (id BIGINT PRIMARY KEY, name TEXT, price DOUBLE);
\copy items from stdin
1	apple	0.5
2	\N	1.25
3	tab\there	2
\.
\copy items (id, name) from stdin with (format csv)
4,"comma, inside"
5,""
\.
SELECT id, name, name IS NULL AS null_name, price FROM items ORDER BY id;
\copy items to stdout
\copy (SELECT id, name FROM items WHERE id > 3 ORDER BY id) to stdout with (format csv, header)
\copy items from stdin
6	bad	notanumber
\.
SELECT count(*) FROM items;
