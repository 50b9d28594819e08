"""asyncpg against PostgreSQL 15 and against `rowdex serve`: one JSON line per step (transcript.py).

asyncpg speaks the extended protocol only, with named prepared statements and the binary format
for parameters and results; for a type it has no built-in codec for (here `int4[]`) it looks the
type up in pg_type / pg_namespace / pg_range with a recursive introspection query. The scenario
covers:

  * connect, DDL through `execute` (status strings);
  * `execute` / `fetch` / `fetchrow` / `fetchval` with parameters of every column type rowdex
    supports (SMALLINT, INTEGER, BIGINT, REAL, DOUBLE PRECISION, NUMERIC(p,s), TEXT, VARCHAR(n),
    BYTEA, BOOLEAN, DATE, TIMESTAMP), NULL parameters, and edge values;
  * `executemany`;
  * `copy_records_to_table` (binary COPY FROM STDIN, after a `SELECT ... LIMIT` to learn the
    column types);
  * `copy_from_query` to a BytesIO (CSV, header; once with a parameter, which asyncpg inlines by
    running `SELECT quote_literal($1::pg_catalog.int4::text)`) and `copy_from_table` to a file;
  * transactions: one that raises and rolls back, one that fails on a SQL error, a nested one
    (savepoint) rolled back inside a committed outer one;
  * `conn.prepare`: `get_attributes()` / `get_parameters()` (type names, kinds, schemas; no OIDs),
    `fetch` / `fetchrow` / `fetchval` on the statement;
  * a cursor inside a transaction: `async for` with a small prefetch, and `fetch(n)` /
    `forward(n)` / `fetchrow()`;
  * `= ANY($1::int[])` and `= ANY($1)` with a Python list (array parameter, type introspection);
  * errors and their SQLSTATEs: 22012, 23505, 23502, 42P01, 42601, and the connection still
    working afterwards;
  * a record's keys, including the `?column?` PostgreSQL gives `SELECT '0'::int + 1`.

Every value is deterministic (ORDER BY everywhere, no OIDs, versions or clocks).
"""

import asyncio
import datetime
import decimal
import io
import os
import sys
import tempfile
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import asyncpg  # noqa: E402

from transcript import normalise, run, sqlstate_of  # noqa: E402

D = decimal.Decimal

COLUMNS = ["id", "sm", "bi", "re", "dp", "nu", "tx", "vc", "by", "bo", "da", "ts"]

CREATE_ITEMS = """
CREATE TABLE apg_items (
    id INTEGER PRIMARY KEY,
    sm SMALLINT,
    bi BIGINT,
    re REAL,
    dp DOUBLE PRECISION,
    nu NUMERIC(10,2),
    tx TEXT NOT NULL,
    vc VARCHAR(20),
    by BYTEA,
    bo BOOLEAN,
    da DATE,
    ts TIMESTAMP
)
"""

ROW_1 = (
    1,
    -32768,
    9223372036854775807,
    3.25,
    0.1,
    D("12345678.90"),
    "héllo ✓ world",
    "varchar",
    b"\x00\x01\xfe\xff",
    True,
    datetime.date(2024, 2, 29),
    datetime.datetime(2024, 2, 29, 12, 34, 56, 789012),
)

MANY_ROWS = [
    (2, 2, 20, 2.5, 2.25, D("2.50"), "two", "b", b"2", False, datetime.date(2000, 1, 1),
     datetime.datetime(2000, 1, 1, 0, 0, 0)),
    (3, 3, -30, -0.5, 1e100, D("-3.00"), "three", "c", b"", True, datetime.date(1999, 12, 31),
     datetime.datetime(1999, 12, 31, 23, 59, 59, 999999)),
    (4, None, None, None, None, None, "four", None, None, None, None, None),
    (5, 5, 50, 5.0, -5.125, D("0.05"), "five, \"quoted\"", "e\tf", b"\n", False,
     datetime.date(1970, 1, 1), datetime.datetime(1970, 1, 1, 0, 0, 1)),
]

COPY_ROWS = [
    (10, 10, 100, 10.5, 10.25, D("10.10"), "ten", "j", b"\x10", True,
     datetime.date(2010, 10, 10), datetime.datetime(2010, 10, 10, 10, 10, 10)),
    (11, -11, -110, None, None, D("-11.11"), "eleven\nnewline", None, b"\x00\x11", False,
     datetime.date(2011, 11, 11), None),
    (12, None, None, 12.0, 12.0, None, "twelve", "l", None, None, None,
     datetime.datetime(2012, 12, 12, 12, 12, 12, 120000)),
]


def as_dict(record):
    return None if record is None else {k: v for k, v in record.items()}


def as_dicts(records):
    return [as_dict(r) for r in records]


def type_info(t):
    """An asyncpg Type without its OID."""
    return {"name": t.name, "kind": t.kind, "schema": t.schema}


async def astep(t, name, coro_fn):
    """t.step for a coroutine function: records its awaited value or its error."""
    try:
        value = await coro_fn()
    except Exception as error:  # noqa: BLE001 - every error is part of the transcript
        detail = "".join(traceback.format_exception_only(type(error), error)).strip()
        print(f"[{t.peer}] {name}: {detail}", file=sys.stderr, flush=True)
        t.record(name, error=sqlstate_of(error) or type(error).__name__)
        return None
    t.record(name, value=normalise(value))
    return value


async def scenario(args, t):
    conn = None

    async def connect():
        nonlocal conn
        conn = await asyncpg.connect(
            host=args.host, port=args.port, user=args.user, database=args.dbname)
        return {"closed": conn.is_closed(), "in_transaction": conn.is_in_transaction()}

    await astep(t, "connect", connect)
    if conn is None:
        return
    try:
        await body(conn, t)
    finally:
        await conn.close()


async def body(conn, t):
    # --- connection -------------------------------------------------------------------------
    await astep(t, "select_1", lambda: conn.fetchval("SELECT 1"))
    t.check("not_in_transaction_at_start", not conn.is_in_transaction())

    # --- DDL ----------------------------------------------------------------------------------
    await astep(t, "drop_items", lambda: conn.execute("DROP TABLE IF EXISTS apg_items"))
    await astep(t, "drop_pairs", lambda: conn.execute("DROP TABLE IF EXISTS apg_pairs"))
    await astep(t, "create_items", lambda: conn.execute(CREATE_ITEMS))
    await astep(t, "create_pairs", lambda: conn.execute(
        "CREATE TABLE apg_pairs (k VARCHAR(10) PRIMARY KEY, v BIGINT NOT NULL)"))

    # --- parameters of every type -------------------------------------------------------------
    placeholders = ", ".join(f"${i}" for i in range(1, len(COLUMNS) + 1))
    insert_sql = f"INSERT INTO apg_items ({', '.join(COLUMNS)}) VALUES ({placeholders})"
    await astep(t, "insert_row_1", lambda: conn.execute(insert_sql, *ROW_1))
    await astep(t, "fetchrow_row_1", lambda: fetchrow_dict(
        conn, "SELECT * FROM apg_items WHERE id = $1", 1))
    row = await conn.fetchrow("SELECT * FROM apg_items WHERE id = $1", 1)
    t.check("row_1_round_trips", row is not None and tuple(row) == ROW_1[:3] + (3.25,) + ROW_1[4:])
    await astep(t, "fetchrow_row_1_numeric_scale", lambda: numeric_text(
        conn, "SELECT nu FROM apg_items WHERE id = $1", 1))

    typed = [
        ("smallint", "SELECT $1::smallint", 32767),
        ("smallint_negative", "SELECT $1::smallint", -32768),
        ("integer", "SELECT $1::integer", -2147483648),
        ("bigint", "SELECT $1::bigint", -9223372036854775808),
        ("real", "SELECT $1::real", 1.5),
        ("real_inexact", "SELECT $1::real", 0.1),
        ("double", "SELECT $1::double precision", 2.718281828459045),
        ("double_infinity", "SELECT $1::double precision", float("inf")),
        ("double_nan", "SELECT $1::double precision", float("nan")),
        ("numeric", "SELECT $1::numeric(10,2)", D("-98765432.1")),
        ("numeric_rounded", "SELECT $1::numeric(10,2)", D("1.005")),
        ("text", "SELECT $1::text", "multi\nline 'quoted' \u00e9\u4e2d"),
        ("text_empty", "SELECT $1::text", ""),
        ("varchar", "SELECT $1::varchar(20)", "short"),
        ("bytea", "SELECT $1::bytea", bytes(range(0, 256, 15))),
        ("boolean_true", "SELECT $1::boolean", True),
        ("boolean_false", "SELECT $1::boolean", False),
        ("date", "SELECT $1::date", datetime.date(1, 1, 1)),
        ("date_max", "SELECT $1::date", datetime.date(9999, 12, 31)),
        ("timestamp", "SELECT $1::timestamp", datetime.datetime(2038, 1, 19, 3, 14, 8, 1)),
        ("null_integer", "SELECT $1::integer", None),
        ("null_text", "SELECT $1::text", None),
    ]
    for name, sql, value in typed:
        await astep(t, f"fetchval_{name}", lambda sql=sql, value=value: conn.fetchval(sql, value))
    await astep(t, "fetchval_numeric_text", lambda: numeric_text(
        conn, "SELECT $1::numeric(10,2)", D("7")))
    await astep(t, "fetchval_numeric_unconstrained", lambda: numeric_text(
        conn, "SELECT $1::numeric", D("123456789012345678901234567890.000123")))
    await astep(t, "fetchval_numeric_negative_small", lambda: numeric_text(
        conn, "SELECT $1::numeric", D("-0.000001")))
    await astep(t, "fetchval_varchar_too_long", lambda: conn.execute(
        "INSERT INTO apg_items (id, tx, vc) VALUES ($1, $2, $3)", 99, "x", "x" * 21))
    await astep(t, "fetchval_smallint_out_of_range", lambda: conn.fetchval(
        "SELECT $1::integer::smallint", 40000))
    await astep(t, "fetchval_wrong_python_type", lambda: conn.fetchval(
        "SELECT $1::integer", "not an int"))
    await astep(t, "fetchrow_mixed_parameters", lambda: fetchrow_dict(
        conn,
        "SELECT $1::int + $2::bigint AS total, $3::text || $4::varchar AS joined,"
        " $5::date + $1::int AS later, $6::boolean AND true AS flag",
        3, 4, "ab", "cd", datetime.date(2024, 12, 30), True))

    # --- executemany and fetch ----------------------------------------------------------------
    await astep(t, "executemany", lambda: conn.executemany(insert_sql, MANY_ROWS))
    await astep(t, "fetch_all_ids", lambda: fetch_column(
        conn, "SELECT id FROM apg_items ORDER BY id"))
    await astep(t, "fetch_with_parameters", lambda: fetch_dicts(
        conn,
        "SELECT id, sm, bi, re, dp, nu, tx, vc, by, bo, da, ts FROM apg_items"
        " WHERE id >= $1 AND tx <> $2 ORDER BY id",
        2, "four"))
    await astep(t, "fetch_nulls", lambda: fetch_dicts(
        conn, "SELECT * FROM apg_items WHERE sm IS NULL ORDER BY id"))
    await astep(t, "fetch_empty", lambda: conn.fetch("SELECT id FROM apg_items WHERE id < $1", 0))
    await astep(t, "fetchrow_none", lambda: conn.fetchrow(
        "SELECT id FROM apg_items WHERE id = $1", 12345))
    await astep(t, "fetchval_column", lambda: conn.fetchval(
        "SELECT id, tx, vc FROM apg_items WHERE id = $1", 5, column=1))
    await astep(t, "executemany_pairs", lambda: conn.executemany(
        "INSERT INTO apg_pairs (k, v) VALUES ($1, $2)", [("a", 1), ("b", 2), ("c", 3)]))
    await astep(t, "update_status", lambda: conn.execute(
        "UPDATE apg_pairs SET v = v * $1 WHERE k <> $2", 10, "b"))
    await astep(t, "delete_status", lambda: conn.execute("DELETE FROM apg_pairs WHERE k = $1", "c"))
    await astep(t, "pairs_after_update", lambda: fetch_dicts(
        conn, "SELECT k, v FROM apg_pairs ORDER BY k"))

    # --- COPY ---------------------------------------------------------------------------------
    await astep(t, "copy_records_to_table", lambda: conn.copy_records_to_table(
        "apg_items", records=COPY_ROWS, columns=COLUMNS))
    await astep(t, "copy_records_subset_columns", lambda: conn.copy_records_to_table(
        "apg_pairs", records=[("d", 4), ("e", -5)], columns=["k", "v"]))
    await astep(t, "fetch_copied_rows", lambda: fetch_dicts(
        conn, "SELECT * FROM apg_items WHERE id >= $1 ORDER BY id", 10))
    await astep(t, "copy_records_duplicate_key", lambda: conn.copy_records_to_table(
        "apg_pairs", records=[("a", 100)], columns=["k", "v"]))
    await astep(t, "pairs_after_copy", lambda: fetch_dicts(
        conn, "SELECT k, v FROM apg_pairs ORDER BY k"))

    async def copy_query_csv():
        buffer = io.BytesIO()
        status = await conn.copy_from_query(
            "SELECT id, sm, re, nu, tx, vc, bo, da, ts FROM apg_items ORDER BY id",
            output=buffer, format="csv", header=True)
        return {"status": status, "csv": buffer.getvalue().decode()}

    await astep(t, "copy_from_query_csv", copy_query_csv)

    async def copy_query_with_argument():
        buffer = io.BytesIO()
        status = await conn.copy_from_query(
            "SELECT id, tx FROM apg_items WHERE id > $1 ORDER BY id", 4,
            output=buffer, format="csv")
        return {"status": status, "csv": buffer.getvalue().decode()}

    await astep(t, "copy_from_query_with_argument", copy_query_with_argument)

    async def copy_table_to_file():
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "pairs.csv")
            status = await conn.copy_from_table(
                "apg_pairs", output=path, columns=["k", "v"], format="csv", header=True)
            with open(path, encoding="utf-8") as f:
                lines = f.read().splitlines()
        # COPY of a whole table has no ORDER BY: sort the data lines, keep the header first.
        return {"status": status, "lines": lines[:1] + sorted(lines[1:])}

    await astep(t, "copy_from_table_to_file", copy_table_to_file)

    async def copy_table_text_format():
        buffer = io.BytesIO()
        status = await conn.copy_from_table("apg_items", output=buffer, columns=["id", "by", "bo"])
        return {"status": status, "lines": sorted(buffer.getvalue().decode().splitlines())}

    await astep(t, "copy_from_table_text_format", copy_table_text_format)

    # --- transactions -------------------------------------------------------------------------
    class Abort(Exception):
        pass

    async def transaction_raises():
        try:
            async with conn.transaction():
                await conn.execute("INSERT INTO apg_pairs (k, v) VALUES ($1, $2)", "tx", 1)
                inside = await conn.fetchval("SELECT count(*) FROM apg_pairs WHERE k = 'tx'")
                t.check("transaction_sees_own_insert", inside == 1)
                t.check("is_in_transaction", conn.is_in_transaction())
                raise Abort()
        except Abort:
            pass
        return await conn.fetchval("SELECT count(*) FROM apg_pairs WHERE k = 'tx'")

    await astep(t, "transaction_raises_rolls_back", transaction_raises)
    t.check("not_in_transaction_after_rollback", not conn.is_in_transaction())

    async def transaction_sql_error():
        async with conn.transaction():
            await conn.execute("INSERT INTO apg_pairs (k, v) VALUES ($1, $2)", "tx2", 1)
            await conn.execute("INSERT INTO apg_pairs (k, v) VALUES ($1, $2)", "a", 1)

    await astep(t, "transaction_sql_error", transaction_sql_error)
    await astep(t, "after_transaction_sql_error", lambda: conn.fetchval(
        "SELECT count(*) FROM apg_pairs WHERE k = 'tx2'"))

    async def transaction_commits():
        async with conn.transaction():
            await conn.execute("INSERT INTO apg_pairs (k, v) VALUES ($1, $2)", "tx3", 3)
        return await conn.fetchval("SELECT v FROM apg_pairs WHERE k = 'tx3'")

    await astep(t, "transaction_commits", transaction_commits)

    async def nested_transaction():
        async with conn.transaction():
            await conn.execute("INSERT INTO apg_pairs (k, v) VALUES ($1, $2)", "outer", 1)
            try:
                async with conn.transaction():  # a savepoint
                    await conn.execute("INSERT INTO apg_pairs (k, v) VALUES ($1, $2)", "inner", 2)
                    raise Abort()
            except Abort:
                pass
            async with conn.transaction():  # a savepoint released
                await conn.execute("INSERT INTO apg_pairs (k, v) VALUES ($1, $2)", "inner2", 3)
            try:
                async with conn.transaction():  # a savepoint rolled back by a SQL error
                    await conn.execute("INSERT INTO apg_pairs (k, v) VALUES ($1, $2)", "a", 4)
            except asyncpg.UniqueViolationError as error:
                t.check("nested_unique_violation_sqlstate", error.sqlstate == "23505")
        return await fetch_dicts(
            conn, "SELECT k, v FROM apg_pairs WHERE k IN ('outer', 'inner', 'inner2') ORDER BY k")

    await astep(t, "nested_transaction_savepoint", nested_transaction)

    async def explicit_transaction():
        tr = conn.transaction()
        await tr.start()
        await conn.execute("UPDATE apg_pairs SET v = $1 WHERE k = $2", 999, "a")
        await tr.rollback()
        return await conn.fetchval("SELECT v FROM apg_pairs WHERE k = $1", "a")

    await astep(t, "explicit_transaction_rollback", explicit_transaction)

    # --- prepared statements ------------------------------------------------------------------
    stmt = await astep(t, "prepare", lambda: conn.prepare(
        "SELECT id, sm, bi, re, dp, nu, tx, vc, by, bo, da, ts, id * 2 AS doubled, '0'::int + 1"
        " FROM apg_items WHERE id > $1 AND tx <> $2 ORDER BY id"))
    if stmt is not None:
        await astep(t, "prepare_get_attributes", async_value(lambda: [
            {"name": a.name, "type": type_info(a.type)} for a in stmt.get_attributes()]))
        await astep(t, "prepare_get_parameters", async_value(lambda: [
            type_info(p) for p in stmt.get_parameters()]))
        await astep(t, "prepared_fetch", lambda: fetch_dicts_stmt(stmt, 3, "five"))
        await astep(t, "prepared_fetchrow", lambda: fetchrow_dict_stmt(stmt, 10, ""))
        await astep(t, "prepared_fetchval", lambda: stmt.fetchval(11, "x", column=6))
        await astep(t, "prepared_fetch_again", lambda: fetch_column_stmt(stmt, 0, "one"))
        await astep(t, "prepared_statusmsg", async_value(stmt.get_statusmsg))
    dml = await astep(t, "prepare_insert", lambda: conn.prepare(
        "INSERT INTO apg_pairs (k, v) VALUES ($1, $2)"))
    if dml is not None:
        await astep(t, "prepare_insert_attributes", async_value(lambda: [
            a.name for a in dml.get_attributes()]))
        await astep(t, "prepare_insert_parameters", async_value(lambda: [
            type_info(p) for p in dml.get_parameters()]))
        await astep(t, "prepared_executemany", lambda: dml.executemany([("p1", 1), ("p2", 2)]))
        await astep(t, "prepared_insert_fetch", lambda: dml.fetch("p3", 3))
        await astep(t, "prepared_insert_statusmsg", async_value(dml.get_statusmsg))
    await astep(t, "prepare_syntax_error", lambda: conn.prepare("SELEC 1"))
    await astep(t, "prepare_unknown_column", lambda: conn.prepare("SELECT nope FROM apg_items"))

    # --- cursors ------------------------------------------------------------------------------
    async def cursor_iterate():
        ids = []
        async with conn.transaction():
            async for record in conn.cursor(
                    "SELECT id, tx FROM apg_items WHERE id <> $1 ORDER BY id", 4, prefetch=2):
                ids.append([record["id"], record["tx"]])
        return ids

    await astep(t, "cursor_iterate", cursor_iterate)

    async def cursor_fetch():
        async with conn.transaction():
            cur = await conn.cursor("SELECT id FROM apg_items ORDER BY id DESC")
            first = [r["id"] for r in await cur.fetch(2)]
            skipped = await cur.forward(2)
            row = await cur.fetchrow()
            rest = [r["id"] for r in await cur.fetch(100)]
            after = await cur.fetch(5)
            end = await cur.fetchrow()
        return {"first": first, "skipped": skipped, "row": as_dict(row), "rest": rest,
                "after": as_dicts(after), "end": end}

    await astep(t, "cursor_fetch", cursor_fetch)

    async def cursor_outside_transaction():
        return await conn.cursor("SELECT id FROM apg_items ORDER BY id")

    await astep(t, "cursor_outside_transaction", cursor_outside_transaction)

    # --- arrays as parameters (type introspection) ----------------------------------------------
    await astep(t, "any_int_array_cast", lambda: fetch_column(
        conn, "SELECT id FROM apg_items WHERE id = ANY($1::int[]) ORDER BY id", [1, 3, 10, 999]))
    await astep(t, "any_inferred_array", lambda: fetch_column(
        conn, "SELECT id FROM apg_items WHERE id = ANY($1) ORDER BY id", [12, 2, 5]))
    await astep(t, "any_empty_array", lambda: fetch_column(
        conn, "SELECT id FROM apg_items WHERE id = ANY($1::int[]) ORDER BY id", []))
    await astep(t, "any_text_array", lambda: fetch_column(
        conn, "SELECT k FROM apg_pairs WHERE k = ANY($1) ORDER BY k", ["b", "a", "zz"]))

    # --- errors -------------------------------------------------------------------------------
    await astep(t, "error_division_by_zero", lambda: conn.fetchval("SELECT 1/0"))
    await astep(t, "error_division_by_zero_param", lambda: conn.fetchval(
        "SELECT 10 / $1::int", 0))
    await astep(t, "error_unique_violation", lambda: conn.execute(
        "INSERT INTO apg_items (id, tx) VALUES ($1, $2)", 1, "again"))
    await astep(t, "error_not_null_violation", lambda: conn.execute(
        "INSERT INTO apg_items (id, tx) VALUES ($1, $2)", 100, None))
    await astep(t, "error_not_null_primary_key", lambda: conn.execute(
        "INSERT INTO apg_pairs (k, v) VALUES (NULL, 1)"))
    await astep(t, "error_undefined_table", lambda: conn.fetch("SELECT * FROM apg_missing"))
    await astep(t, "error_syntax", lambda: conn.execute("SELECT FROM WHERE"))
    await astep(t, "error_syntax_fetch", lambda: conn.fetch("SELEC 1"))
    await astep(t, "error_class", classify_error(
        conn, "INSERT INTO apg_items (id, tx) VALUES (1, 'dup')"))
    await astep(t, "error_class_division", classify_error(conn, "SELECT 1/0"))
    await astep(t, "still_usable_after_errors", lambda: conn.fetchval("SELECT 2"))
    t.check("not_in_transaction_after_errors", not conn.is_in_transaction())

    # --- record keys --------------------------------------------------------------------------
    async def record_keys():
        record = await conn.fetchrow(
            "SELECT '0'::int + 1, 2 AS two, id, tx AS \"Mixed Case\", upper(vc)"
            " FROM apg_items ORDER BY id LIMIT 1")
        return {
            "keys": list(record.keys()),
            "values": list(record.values()),
            "by_name": record["?column?"],
            "by_index": record[1],
            "len": len(record),
            "get_missing": record.get("nope", "default"),
        }

    await astep(t, "record_keys", record_keys)
    await astep(t, "record_keys_expressions", lambda: fetchrow_keys(
        conn, "SELECT 1 + 1, count(*), max(id), lower('A'), 'x'::text, CAST(1 AS bigint),"
              " CASE WHEN true THEN 1 END FROM apg_items"))
    await astep(t, "record_duplicate_names", lambda: fetchrow_pairs(
        conn, "SELECT 1 AS a, 2 AS a"))

    # --- cleanup ------------------------------------------------------------------------------
    await astep(t, "final_counts", lambda: fetchrow_dict(
        conn, "SELECT (SELECT count(*) FROM apg_items) AS items,"
              " (SELECT count(*) FROM apg_pairs) AS pairs"))


# --- small helpers: records to plain values --------------------------------------------------

async def fetchrow_dict(conn, sql, *args):
    return as_dict(await conn.fetchrow(sql, *args))


async def fetch_dicts(conn, sql, *args):
    return as_dicts(await conn.fetch(sql, *args))


async def fetch_column(conn, sql, *args):
    return [r[0] for r in await conn.fetch(sql, *args)]


async def fetchrow_keys(conn, sql, *args):
    return list((await conn.fetchrow(sql, *args)).keys())


async def fetchrow_pairs(conn, sql, *args):
    return [list(item) for item in (await conn.fetchrow(sql, *args)).items()]


async def numeric_text(conn, sql, *args):
    """A NUMERIC as its exact text (with its scale), which normalise() would drop."""
    return str(await conn.fetchval(sql, *args))


async def fetch_dicts_stmt(stmt, *args):
    return as_dicts(await stmt.fetch(*args))


async def fetchrow_dict_stmt(stmt, *args):
    return as_dict(await stmt.fetchrow(*args))


async def fetch_column_stmt(stmt, *args):
    return [r[0] for r in await stmt.fetch(*args)]


def async_value(fn):
    """A coroutine function returning fn(): for recording synchronous values with astep."""
    async def wrapper():
        return fn()
    return wrapper


def classify_error(conn, sql):
    """The asyncpg exception class a failing statement raises (its name, and its SQLSTATE)."""
    async def wrapper():
        try:
            await conn.execute(sql)
        except asyncpg.PostgresError as error:
            return {"class": type(error).__name__, "sqlstate": error.sqlstate,
                    "is_integrity": isinstance(error, asyncpg.IntegrityConstraintViolationError)}
        return None
    return wrapper


def main(args, t):
    asyncio.run(scenario(args, t))


run(main)
