"""The types applications declare, through psycopg 3 and asyncpg, as a first migration uses them.

Run against PostgreSQL 15 and against `rowdex serve`; the two transcripts are compared line by
line (see transcript.py). Topics, in the order they run:

- UUID: a table keyed by `uuid DEFAULT gen_random_uuid()`, a multi-row INSERT and COPY that
  leave the key out (every row gets its own), values in each of PostgreSQL's input forms sent
  as literals and as psycopg parameters (text and binary) and asyncpg parameters (binary),
  read back by key and by a secondary index, ordered, cast from and to text, with the column
  types the drivers are told (uuid.UUID objects back), COPY out and in (text and binary), and
  the errors of a malformed value (22P02) and a duplicate key (23505);
- a volatile DEFAULT other than a uuid (`random()`) drawn per row, and `now()` drawn once per
  statement, as PostgreSQL draws them;
- the functions applications call on strings: md5, sha224/256/384/512, format, split_part,
  left/right, lpad/rpad, regexp_replace, octet_length of bytea;
- dates and times: `n * INTERVAL`, interval / n, age (two arguments and one), to_char with
  PostgreSQL's patterns, date_trunc, extract, timestamps with and without a fraction.

Every table is dropped at the start, so running the scenario twice gives the same transcript.
"""

import asyncio
import os
import sys
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import asyncpg  # noqa: E402

from transcript import psycopg_connect, run, statement_result  # noqa: E402

TABLES = ["ty_files", "ty_defaults"]

FIXED = [
    uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
    uuid.UUID("00000000-0000-0000-0000-000000000001"),
    uuid.UUID("ffffffff-ffff-ffff-ffff-ffffffffffff"),
]


query = statement_result


def uuid_schema(conn, t):
    for table in TABLES:
        conn.execute(f"DROP TABLE IF EXISTS {table}")
    t.step(
        "create_uuid_table",
        lambda: query(
            conn,
            "CREATE TABLE ty_files (id UUID DEFAULT gen_random_uuid() PRIMARY KEY, "
            "owner UUID, name TEXT NOT NULL)",
        )["rowcount"],
    )
    t.step("create_uuid_index", lambda: query(conn, "CREATE INDEX ty_files_owner ON ty_files (owner)")["rowcount"])


def uuid_defaults(conn, t):
    t.step(
        "insert_many_without_key",
        lambda: query(conn, "INSERT INTO ty_files (name) VALUES ('a'), ('b'), ('c'), ('d')")["rowcount"],
    )
    t.step(
        "distinct_generated_keys",
        lambda: query(
            conn,
            "SELECT count(*), count(DISTINCT id), min(length(id::text)) FROM ty_files",
        )["rows"],
    )
    generated = t.step(
        "generated_are_version_4",
        lambda: sorted(
            {str(row[0])[14] + str(row[0])[19] for row in query(conn, "SELECT id FROM ty_files")["rows"]}
            - {"48", "49", "4a", "4b"}
        ),
    )
    t.check("generated_keys_are_v4", generated == [], str(generated))
    with conn.cursor().copy("COPY ty_files (name) FROM STDIN") as copy:
        for name in ["e", "f", "g"]:
            copy.write_row((name,))
    t.step(
        "copy_without_key",
        lambda: query(conn, "SELECT count(*), count(DISTINCT id) FROM ty_files")["rows"],
    )
    t.step(
        "returning_generated_key_type",
        lambda: (lambda r: (type(r["rows"][0][0]).__name__, r["description"]))(
            query(conn, "INSERT INTO ty_files (name) VALUES ('h') RETURNING id")
        ),
    )


def uuid_values(conn, t):
    t.step(
        "insert_literal_forms",
        lambda: query(
            conn,
            "INSERT INTO ty_files (id, owner, name) VALUES "
            "('A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11', '{00000000-0000-0000-0000-000000000001}', 'upper'), "
            "('000000000000000000000000000000ff', NULL, 'bare'), "
            "('0000-0000-0000-0000-0000-0000-0000-00fe'::uuid, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'hyphens')",
        )["rowcount"],
    )
    for binary in (False, True):
        label = "binary" if binary else "text"
        t.step(
            f"insert_param_{label}",
            lambda: query(
                conn,
                "INSERT INTO ty_files (id, owner, name) VALUES (%s, %s, %s)",
                (FIXED[2] if binary else FIXED[1], FIXED[0], label),
                binary=binary,
            )["rowcount"],
        )
        t.step(
            f"get_by_key_{label}",
            lambda: query(
                conn, "SELECT id, owner, name FROM ty_files WHERE id = %s", (FIXED[0],), binary=binary
            ),
        )
        t.step(
            f"get_by_index_{label}",
            lambda: query(
                conn,
                "SELECT name, owner FROM ty_files WHERE owner = %s ORDER BY name",
                (FIXED[0],),
                binary=binary,
            ),
        )
    t.step(
        "ordered_fixed_keys",
        lambda: query(
            conn,
            "SELECT id, name FROM ty_files WHERE name IN ('upper', 'bare', 'hyphens', 'text', 'binary') "
            "ORDER BY id DESC",
        )["rows"],
    )
    t.step(
        "range_of_keys",
        lambda: query(
            conn,
            "SELECT name FROM ty_files WHERE id BETWEEN '00000000-0000-0000-0000-000000000000' "
            "AND '00000000-0000-0000-0000-0000000000ff' ORDER BY id",
        )["rows"],
    )
    t.step(
        "casts",
        lambda: query(
            conn,
            "SELECT 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'::uuid, "
            "CAST('{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}' AS UUID)::text, "
            "owner::text FROM ty_files WHERE name = 'upper'",
        ),
    )
    t.step("cast_garbage", lambda: query(conn, "SELECT 'not-a-uuid'::uuid")["rows"])
    t.step(
        "insert_garbage",
        lambda: query(conn, "INSERT INTO ty_files (id, name) VALUES ('a0eebc99', 'bad')")["rowcount"],
    )
    t.step(
        "insert_duplicate",
        lambda: query(
            conn, "INSERT INTO ty_files (id, name) VALUES (%s, 'dup')", (FIXED[0],)
        )["rowcount"],
    )
    t.step(
        "update_by_key",
        lambda: query(
            conn, "UPDATE ty_files SET name = 'renamed' WHERE id = %s", (FIXED[1],), binary=True
        )["rowcount"],
    )
    t.step(
        "delete_by_key",
        lambda: query(conn, "DELETE FROM ty_files WHERE id = '000000000000000000000000000000fe'")["rowcount"],
    )
    t.step("count_after", lambda: query(conn, "SELECT count(*) FROM ty_files")["rows"])

    def copy_out(binary):
        fmt = " (FORMAT BINARY)" if binary else ""
        cur = conn.cursor()
        sql = (
            "COPY (SELECT id, owner, name FROM ty_files WHERE name IN ('upper', 'bare', 'binary') "
            f"AND id < 'FFFFFFFF-0000-0000-0000-000000000000' ORDER BY id) TO STDOUT{fmt}"
        )
        with cur.copy(sql) as copy:
            if binary:
                copy.set_types(["uuid", "uuid", "text"])
            return list(copy.rows())

    t.step(
        "compare_with_garbage",
        lambda: query(conn, "SELECT name FROM ty_files WHERE owner < 'b'")["rows"],
    )
    t.step(
        "compare_with_upper_case",
        lambda: query(
            conn,
            "SELECT name FROM ty_files WHERE owner = 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11' "
            "OR owner IN ('{00000000-0000-0000-0000-000000000001}') ORDER BY name",
        )["rows"],
    )
    t.step("copy_out_text", lambda: copy_out(False))
    t.step("copy_out_binary", lambda: copy_out(True))

    def copy_in_binary():
        with conn.cursor().copy("COPY ty_files (id, owner, name) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["uuid", "uuid", "text"])
            copy.write_row((uuid.UUID("11111111-2222-3333-4444-555555555555"), FIXED[0], "copied"))
        return query(conn, "SELECT id, owner FROM ty_files WHERE name = 'copied'")["rows"]

    t.step("copy_in_binary", copy_in_binary)


def volatile_defaults(conn, t):
    t.step(
        "create_defaults_table",
        lambda: query(
            conn,
            "CREATE TABLE ty_defaults (k INT PRIMARY KEY, r DOUBLE PRECISION DEFAULT random(), "
            "at TIMESTAMP DEFAULT now())",
        )["rowcount"],
    )
    t.step(
        "insert_defaults",
        lambda: query(conn, "INSERT INTO ty_defaults (k) VALUES (1), (2), (3), (4), (5)")["rowcount"],
    )
    t.step(
        "random_per_row_now_per_statement",
        lambda: query(
            conn,
            "SELECT count(DISTINCT r), count(DISTINCT at), min(r) >= 0, max(r) < 1 FROM ty_defaults",
        )["rows"],
    )


def functions(conn, t):
    calls = [
        ("md5", "SELECT md5('a'), md5(''), md5(NULL), md5('é')"),
        ("md5_bytea", "SELECT md5('\\x0001ff'::bytea), md5(decode('0001ff', 'hex')) AS decoded"),
        ("sha256", "SELECT encode(sha256('abc'::bytea), 'hex'), encode(sha512(''::bytea), 'hex')"),
        ("sha224_384", "SELECT encode(sha224('a'::bytea), 'hex'), encode(sha384('a'::bytea), 'hex')"),
        ("format_specifiers", "SELECT format('%s|%s|%L|%I|%%', 'a b', NULL, 'O''Brien', 'Tab')"),
        ("format_positions", "SELECT format('%2$s %1$s %2$s', 'x', 'y'), format('[%5s][%-5s]', 'ab', 'cd')"),
        ("format_null_literal", "SELECT format('%L and %I', NULL, 'lower_name')"),
        ("format_bad", "SELECT format('%q', 1)"),
        ("bytea_hex_literal", "SELECT encode('\\x0001ff'::bytea, 'base64'), encode('\\xDEADBEEF'::bytea, 'hex')"),
        ("split_part", "SELECT split_part('a,b,c', ',', 2), split_part('a,b,c', ',', 5)"),
        ("left_right", "SELECT left('abcdef', 2), right('abcdef', 2), left('abcdef', -2)"),
        ("pads", "SELECT lpad('7', 3, '0'), rpad('ab', 5, 'xy'), lpad('abcdef', 3)"),
        ("regexp_replace", "SELECT regexp_replace('a1b22c', '[0-9]+', '#', 'g')"),
        ("md5_prefix_key", "SELECT substr(md5('user-42'), 1, 4) || ':' || 'user-42'"),
        ("octet_length", "SELECT octet_length('\\x0102ff'::bytea), octet_length('h\u00e9llo'), length('h\u00e9llo')"),
        ("interval_products", "SELECT 3 * INTERVAL '1 second', INTERVAL '1 day' / 4, INTERVAL '1 month' * 1.5"),
        ("timestamp_plus_product", "SELECT TIMESTAMP '2024-01-01 10:00:00' + 3 * INTERVAL '1 hour'"),
        ("age", "SELECT age(TIMESTAMP '2024-03-01', TIMESTAMP '2024-01-31'), age(TIMESTAMP '2001-04-10', TIMESTAMP '1957-06-13')"),
        ("age_negative", "SELECT age(TIMESTAMP '2024-01-31', TIMESTAMP '2024-03-01 12:00:00')"),
        ("age_of_today", "SELECT age(now()) < INTERVAL '1 day', age(CURRENT_DATE) = INTERVAL '0 days'"),
        ("to_char_timestamp", "SELECT to_char(TIMESTAMP '2024-03-05 14:07:09.5', 'FMDay, FMDDth FMMonth YYYY HH12:MI:SS.MS AM')"),
        ("to_char_iso", "SELECT to_char(TIMESTAMP '2024-12-31 23:59:59', 'YYYY-MM-DD\"T\"HH24:MI:SS'), to_char(DATE '2024-03-05', 'Dy DD Mon YY, DDD Q')"),
        ("date_trunc", "SELECT date_trunc('hour', TIMESTAMP '2024-01-01 10:31:00'), date_trunc('month', TIMESTAMP '2024-02-29 10:31:00')"),
        ("extract", "SELECT extract(year FROM TIMESTAMP '2024-02-29 10:31:00'), date_part('dow', DATE '2024-03-05')"),
        ("timestamp_fraction", "SELECT TIMESTAMP '2024-01-01 10:31:00.25', TIMESTAMP '2024-01-01 10:31:00'"),
    ]
    for name, sql in calls:
        t.step(f"fn_{name}", lambda sql=sql: query(conn, sql)["rows"])


async def asyncpg_uuids(args, t):
    conn = await asyncpg.connect(host=args.host, port=args.port, user=args.user, database=args.dbname)
    try:
        record = t.step_async

        await record(
            "asyncpg_fetch_by_key",
            lambda: conn.fetchrow("SELECT id, owner, name FROM ty_files WHERE id = $1", FIXED[0]),
        )
        await record(
            "asyncpg_insert",
            lambda: conn.execute(
                "INSERT INTO ty_files (id, owner, name) VALUES ($1, $2, $3)",
                uuid.UUID("12345678-1234-5678-1234-567812345678"),
                None,
                "asyncpg",
            ),
        )
        await record(
            "asyncpg_by_index",
            lambda: conn.fetch("SELECT name FROM ty_files WHERE owner = $1 ORDER BY name", FIXED[0]),
        )
        await record(
            "asyncpg_generated_type",
            lambda: conn.fetchval("SELECT gen_random_uuid() IS NOT NULL"),
        )
        await record(
            "asyncpg_any",
            lambda: conn.fetch(
                "SELECT name FROM ty_files WHERE id = ANY($1::uuid[]) ORDER BY name",
                [FIXED[0], uuid.UUID("12345678-1234-5678-1234-567812345678")],
            ),
        )
    finally:
        await conn.close()


def main(args, t):
    conn = t.step("connect", lambda: psycopg_connect(args))
    if conn is None:
        return
    with conn:
        uuid_schema(conn, t)
        uuid_defaults(conn, t)
        uuid_values(conn, t)
        volatile_defaults(conn, t)
        functions(conn, t)
    asyncio.run(asyncpg_uuids(args, t))


run(main)
