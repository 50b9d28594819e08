"""psycopg 3 used the way an application uses it in its first week.

Run against PostgreSQL 15 and against `rowdex serve`; the two transcripts are compared line by
line (see transcript.py). Topics, each a small function below, in the order they run:

- connecting, with autocommit and without, and the session parameters psycopg reads
  (client_encoding, DateStyle, standard_conforming_strings, integer_datetimes);
- DDL (CREATE TABLE / INDEX / UNIQUE INDEX) inside psycopg's implicit transaction, then commit;
- one-row INSERTs with a parameter of every supported column type, sent as text (%t), as
  psycopg chooses (%s) and as binary (%b), read back by primary key and by an indexed column
  with text and with binary results, plus a dict_row cursor and named (%(name)s) parameters;
- how psycopg types bare parameters (SELECT %s, ...) and literal expressions (`?column?`);
- a statement executed often enough to be prepared server side (prepare_threshold);
- executemany (pipelined, with and without RETURNING);
- COPY ... FROM STDIN with write_row and COPY (SELECT ...) TO STDOUT with rows(), in text and
  in FORMAT BINARY;
- transactions: rollback, `conn.transaction()` blocks, nested savepoints whose inner block fails;
- INSERT ... ON CONFLICT DO UPDATE RETURNING, UPDATE/DELETE ... RETURNING, rowcount/statusmessage;
- a named (server side) cursor over a few hundred rows: fetchone, fetchmany, iteration by itersize;
- `= ANY(%s)` with Python lists;
- errors by SQLSTATE (22012, 23505, 23502, 42601, 42P01, 42703, 22001), each followed by a
  rollback and a check that the connection still works;
- SHOW transaction_isolation, conn.info.transaction_status around BEGIN/COMMIT, aggregates,
  fetchone on an empty result;
- SQL-level PREPARE / EXECUTE / DEALLOCATE, with and without parameter types, their errors;
- COMMENT ON and ALTER TABLE ... OWNER TO as migration tools emit them;
- row locks between two connections: SELECT ... FOR UPDATE with a parameter, NOWAIT (55P03),
  SKIP LOCKED, lock_timeout (55P03) and statement_timeout (57014) on a waiting UPDATE, FOR
  UPDATE with an aggregate (0A000), the lock gone at COMMIT.

Every table is dropped at the start, so running the scenario twice gives the same transcript.
"""

import datetime
import os
import sys
from decimal import Decimal

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import psycopg  # noqa: E402
from psycopg.rows import dict_row  # noqa: E402

from transcript import run  # noqa: E402

TABLES = ["psy_types", "psy_items", "psy_big", "psy_tx"]

TYPES_COLUMNS = "id, s, i, b, r, d, n, t, v, c, raw, ok, day, ts"

# One row per way of sending parameters; the values cover every supported column type.
TYPES_ROWS = {
    "text": (
        1, 12, 123456, 9000000000000000000, 0.1, 0.1, Decimal("12345678.91"),
        "it's a \"test\" \\ ok", "alpha", "ab", b"\x00\x01\xfe\xff", True,
        datetime.date(2024, 2, 29), datetime.datetime(2024, 2, 29, 13, 45, 30, 123456),
    ),
    "auto": (
        2, -32768, -2147483648, -9000000000000000000, -2.25, 1e100, Decimal("-0.50"),
        "héllo wörld ✓", "beta", "abcde", b"", False,
        datetime.date(1999, 12, 31), datetime.datetime(2000, 1, 1, 0, 0, 0),
    ),
    "binary": (
        3, 32767, 2147483647, 42, 1.5, -1.0 / 3.0, Decimal("7"),
        "", "gamma", "x", bytes(range(256)), True,
        datetime.date(1970, 1, 1), datetime.datetime(1970, 1, 1, 0, 0, 0, 1),
    ),
}
PLACEHOLDER = {"text": "%t", "auto": "%s", "binary": "%b"}


def connect(args, autocommit):
    return psycopg.connect(
        host=args.host, port=args.port, user=args.user, dbname=args.dbname, autocommit=autocommit
    )


def describe(cur):
    """What an application reads off cursor.description: names and type OIDs."""
    return [(d.name, d.type_code) for d in cur.description]


def query(conn, sql, params=None, binary=None):
    """Rows, description and rowcount of one statement."""
    cur = conn.cursor()
    cur.execute(sql, params, binary=binary)
    return {"rows": cur.fetchall(), "description": describe(cur), "rowcount": cur.rowcount}


def command(conn, sql, params=None):
    """rowcount and command tag of one statement that returns no rows."""
    cur = conn.cursor()
    cur.execute(sql, params)
    return {"rowcount": cur.rowcount, "status": cur.statusmessage}


def tx_status(conn):
    return conn.info.transaction_status.name


def settle(conn):
    """Rolls back between topics, outside any step: a failure here shows in the next steps."""
    try:
        conn.rollback()
    except psycopg.Error as error:
        print(f"rollback failed: {error}", file=sys.stderr, flush=True)


def holds(fn):
    """A check's condition; an error while evaluating it counts as the check failing."""
    try:
        return bool(fn())
    except Exception as error:  # noqa: BLE001 - e.g. psycopg.Error, or a step that returned None
        print(f"check raised: {error!r}", file=sys.stderr, flush=True)
        return False


# -- connecting ---------------------------------------------------------------------------------


def step_connect(args, t):
    auto = t.step("connect_autocommit", lambda: connect(args, True))
    plain = t.step("connect_default", lambda: connect(args, False))
    t.check("connected", auto is not None and plain is not None)
    if auto is None or plain is None:
        return None, None
    t.step("connect_flags", lambda: {
        "autocommit": [auto.autocommit, plain.autocommit],
        "status": [auto.info.status.name, plain.info.status.name],
        "transaction_status": [tx_status(auto), tx_status(plain)],
        "encoding": plain.info.encoding,
    })
    t.step("connect_parameter_status", lambda: {
        name: plain.info.parameter_status(name)
        for name in ("client_encoding", "DateStyle", "standard_conforming_strings",
                     "integer_datetimes")
    })
    t.step("connect_select_1", lambda: query(plain, "SELECT 1 AS one"))
    settle(plain)
    return auto, plain


# -- schema -------------------------------------------------------------------------------------


def step_schema(auto, conn, t):
    for table in TABLES:
        t.step(f"drop_{table}", lambda table=table: command(auto, f"DROP TABLE IF EXISTS {table}"))

    t.step("ddl_status_before", lambda: tx_status(conn))
    t.step("create_psy_types", lambda: command(conn, """
        CREATE TABLE psy_types (
            id INTEGER PRIMARY KEY,
            s SMALLINT,
            i INTEGER,
            b BIGINT,
            r REAL,
            d DOUBLE PRECISION,
            n NUMERIC(10, 2),
            t TEXT,
            v VARCHAR(20),
            c CHAR(5),
            raw BYTEA,
            ok BOOLEAN,
            day DATE,
            ts TIMESTAMP
        )"""))
    t.step("ddl_status_inside", lambda: tx_status(conn))
    t.step("create_index_psy_types_v", lambda: command(
        conn, "CREATE INDEX psy_types_v_idx ON psy_types (v)"))
    t.step("create_unique_index_psy_types_t", lambda: command(
        conn, "CREATE UNIQUE INDEX psy_types_t_key ON psy_types (t)"))
    t.step("create_psy_items", lambda: command(conn, """
        CREATE TABLE psy_items (
            id INTEGER PRIMARY KEY,
            name VARCHAR(12) NOT NULL,
            qty INTEGER NOT NULL,
            price NUMERIC(8, 2)
        )"""))
    t.step("create_index_psy_items_name", lambda: command(
        conn, "CREATE INDEX psy_items_name_idx ON psy_items (name)"))
    t.step("create_psy_big", lambda: command(
        conn, "CREATE TABLE psy_big (id BIGINT PRIMARY KEY, label TEXT NOT NULL, "
              "weight DOUBLE PRECISION)"))
    t.step("create_psy_tx", lambda: command(
        conn, "CREATE TABLE psy_tx (id INTEGER PRIMARY KEY, note TEXT)"))
    t.step("ddl_commit", conn.commit)
    t.step("ddl_status_after", lambda: tx_status(conn))
    t.step("ddl_tables_visible_elsewhere", lambda: query(
        auto, "SELECT count(*) FROM psy_types")["rows"])


# -- one row at a time, every type, text and binary -------------------------------------------


def step_types(conn, t):
    for mode, row in TYPES_ROWS.items():
        ph = PLACEHOLDER[mode]
        sql = f"INSERT INTO psy_types ({TYPES_COLUMNS}) VALUES ({', '.join([ph] * len(row))})"
        t.step(f"insert_types_{mode}", lambda sql=sql, row=row: command(conn, sql, row))
    t.step("insert_types_nulls", lambda: command(
        conn, f"INSERT INTO psy_types ({TYPES_COLUMNS}) VALUES "
              f"(%s, {', '.join(['%s'] * 13)})", [4] + [None] * 13))
    t.step("insert_types_commit", conn.commit)

    select_all = f"SELECT {TYPES_COLUMNS} FROM psy_types ORDER BY id"
    text = t.step("select_types_text", lambda: query(conn, select_all))
    binary = t.step("select_types_binary", lambda: query(conn, select_all, binary=True))
    # Everything but REAL reads back identically; REAL 0.1 comes back as 0.1 in text
    # (shortest float4 repr) and as 0.10000000149011612 (the float4 widened) in binary.
    t.check("select_types_text_equals_binary_except_real", holds(lambda: all(
        a[:4] + a[5:] == b[:4] + b[5:] for a, b in zip(text["rows"], binary["rows"]))))
    # Text results give back exactly what was sent (CHAR(5) padded with spaces).
    expected = [row[:9] + (row[9].ljust(5),) + row[10:] for row in TYPES_ROWS.values()]
    t.check("select_types_round_trip", holds(
        lambda: [tuple(r) for r in text["rows"][:3]] == expected))
    t.step("select_types_real_text_vs_binary", lambda: [
        text and text["rows"][0][4], binary and binary["rows"][0][4]])
    t.step("select_types_numeric_scale", lambda: {
        "text": [str(r[0]) for r in query(conn, "SELECT n FROM psy_types ORDER BY id")["rows"]],
        "binary": [str(r[0]) for r in query(
            conn, "SELECT n FROM psy_types ORDER BY id", binary=True)["rows"]],
    })
    t.step("select_types_char_padding", lambda: query(
        conn, "SELECT c, length(c), octet_length(c) FROM psy_types WHERE id = %s", [1]))

    by_pk = f"SELECT {TYPES_COLUMNS} FROM psy_types WHERE id = %s"
    t.step("select_by_pk_text", lambda: query(conn, by_pk, [2]))
    t.step("select_by_pk_binary", lambda: query(conn, by_pk, [3], binary=True))
    t.step("select_by_pk_binary_param", lambda: query(conn, by_pk.replace("%s", "%b"), [1]))
    t.step("select_by_pk_missing", lambda: query(conn, by_pk, [99]))
    by_v = "SELECT id, v, t FROM psy_types WHERE v = %s ORDER BY id"
    t.step("select_by_index_text", lambda: query(conn, by_v, ["beta"]))
    t.step("select_by_index_binary", lambda: query(conn, by_v.replace("%s", "%b"), ["gamma"],
                                                   binary=True))
    t.step("select_by_unique_index", lambda: query(
        conn, "SELECT id FROM psy_types WHERE t = %s", ["héllo wörld ✓"]))
    t.step("select_by_params_of_each_type", lambda: query(
        conn, "SELECT id FROM psy_types WHERE s = %s AND i = %s AND b = %s AND r = %s "
              "AND d = %s AND n = %s AND c = %s AND raw = %s AND ok = %s AND day = %s "
              "AND ts = %s ORDER BY id",
        TYPES_ROWS["auto"][1:7] + TYPES_ROWS["auto"][9:]))
    t.step("select_named_params", lambda: query(
        conn, "SELECT id, day FROM psy_types WHERE day >= %(lo)s AND day < %(hi)s ORDER BY id",
        {"lo": datetime.date(1999, 1, 1), "hi": datetime.date(2025, 1, 1)}))

    def dict_rows():
        with conn.cursor(row_factory=dict_row) as cur:
            cur.execute("SELECT id, v AS name, ok FROM psy_types WHERE id <= %s ORDER BY id", [3])
            return cur.fetchall()

    t.step("select_dict_row", dict_rows)
    settle(conn)


# -- how parameters and expressions are typed ------------------------------------------------


def step_typing(conn, t):
    t.step("select_expression_column_name", lambda: query(conn, "SELECT '0'::int + 1"))
    t.step("select_literals", lambda: query(
        conn, "SELECT 1, 2.5, 'x', true, NULL, 3000000000, 'a' || 'b' AS ab"))
    t.step("select_untyped_params", lambda: query(
        conn, "SELECT %s, %s, %s, %s, %s, %s, %s",
        ["x", 1, 40000, 3000000000, 1.5, Decimal("1.25"), True]))
    t.step("select_untyped_params_binary", lambda: query(
        conn, "SELECT %b, %b, %b, %b, %b, %b", ["x", 1, 1.5, Decimal("1.25"),
                                                 datetime.date(2024, 1, 2), b"\x01"],
        binary=True))
    t.step("select_param_arithmetic", lambda: query(
        conn, "SELECT %s + 1 AS a, %s * 2 AS b, %s || 'z' AS c", [41, Decimal("1.5"), "y"]))
    t.step("select_cast_params", lambda: query(
        conn, "SELECT %s::date, %s::timestamp, %s::numeric(6,3), %s::bigint",
        ["2024-03-01", "2024-03-01 10:11:12", "3.14159", "12"]))

    # psycopg prepares a statement server side once it has run prepare_threshold (5) times,
    # then only sends Bind/Execute for the name it chose.
    def repeated():
        cur = conn.cursor()
        out = []
        for i in range(8):
            cur.execute("SELECT id, v FROM psy_types WHERE id = %s", [i % 4 + 1])
            out.append(cur.fetchone())
        cur.execute("SELECT id FROM psy_types WHERE id > %s ORDER BY id", [0], prepare=True)
        out.append(cur.fetchall())
        return out

    t.step("select_repeated_prepared", repeated)
    settle(conn)


# -- executemany and COPY ----------------------------------------------------------------------


def step_bulk(auto, conn, t):
    items = [
        (1, "apple", 10, Decimal("0.50")),
        (2, "banana", 20, Decimal("0.25")),
        (3, "cherry", 30, Decimal("3.00")),
        (4, "date", 0, None),
    ]

    def executemany():
        cur = conn.cursor()
        cur.executemany("INSERT INTO psy_items (id, name, qty, price) VALUES (%s, %s, %s, %s)",
                        items)
        return cur.rowcount

    t.step("executemany_insert", executemany)

    def executemany_returning():
        cur = conn.cursor()
        cur.executemany(
            "INSERT INTO psy_items (id, name, qty, price) VALUES (%s, %s, %s, %s) "
            "RETURNING id, upper(name)",
            [(5, "elder", 5, Decimal("9.99")), (6, "fig", 6, Decimal("1.10"))], returning=True)
        results = []
        while True:
            results.append(cur.fetchall())
            if not cur.nextset():
                break
        return {"results": results, "description": describe(cur)}

    t.step("executemany_returning", executemany_returning)
    t.step("executemany_commit", conn.commit)
    t.step("executemany_read_back", lambda: query(
        conn, "SELECT id, name, qty, price FROM psy_items ORDER BY id"))
    settle(conn)

    def copy_in():
        cur = conn.cursor()
        with cur.copy("COPY psy_big (id, label, weight) FROM STDIN") as copy:
            for i in range(1, 301):
                copy.write_row((i, f"row {i}\ttab", None if i % 50 == 0 else i / 4))
        return {"rowcount": cur.rowcount, "status": cur.statusmessage}

    t.step("copy_from_write_row", copy_in)
    t.step("copy_from_commit", conn.commit)
    t.step("copy_from_read_back", lambda: query(
        conn, "SELECT count(*), sum(id), count(weight), min(label), max(label) FROM psy_big"))
    t.step("copy_from_escaped_row", lambda: query(
        conn, "SELECT id, label, weight FROM psy_big WHERE id IN (%s, %s) ORDER BY id", [7, 50]))
    settle(conn)

    def copy_out(types=None, options=""):
        cur = auto.cursor()
        with cur.copy("COPY (SELECT id, name, qty, price FROM psy_items WHERE id <= 4 "
                      f"ORDER BY id) TO STDOUT {options}") as copy:
            if types:
                copy.set_types(types)
            rows = list(copy.rows())
        return {"rows": rows, "rowcount": cur.rowcount}

    t.step("copy_to_rows", copy_out)
    t.step("copy_to_rows_typed", lambda: copy_out(["int4", "varchar", "int4", "numeric"]))
    t.step("copy_to_binary", lambda: copy_out(
        ["int4", "varchar", "int4", "numeric"], "(FORMAT BINARY)"))

    def copy_out_binary_types():
        cur = auto.cursor()
        with cur.copy("COPY (SELECT id, label, weight, DATE '2024-02-29' AS d, "
                      "TIMESTAMP '2024-02-29 12:34:56.5' AS ts, id > 2 AS flag, "
                      "CAST(-12.5 AS NUMERIC(6, 2)) AS n FROM psy_big WHERE id <= 4 ORDER BY id) "
                      "TO STDOUT (FORMAT BINARY)") as copy:
            copy.set_types(["int8", "text", "float8", "date", "timestamp", "bool", "numeric"])
            rows = list(copy.rows())
        return {"rows": rows, "rowcount": cur.rowcount}

    t.step("copy_to_binary_types", copy_out_binary_types)

    def copy_out_binary_empty():
        cur = auto.cursor()
        with cur.copy("COPY (SELECT id, name FROM psy_items WHERE id < 0) "
                      "TO STDOUT (FORMAT BINARY)") as copy:
            copy.set_types(["int4", "varchar"])
            rows = list(copy.rows())
        return {"rows": rows, "rowcount": cur.rowcount}

    t.step("copy_to_binary_empty", copy_out_binary_empty)


# -- transactions and savepoints ---------------------------------------------------------------


def notes(conn):
    return [r[0] for r in conn.execute("SELECT id FROM psy_tx ORDER BY id").fetchall()]


def step_transactions(auto, conn, t):
    t.step("tx_insert", lambda: command(conn, "INSERT INTO psy_tx VALUES (%s, %s)", [1, "gone"]))
    t.step("tx_visible_inside", lambda: notes(conn))
    t.step("tx_invisible_outside", lambda: notes(auto))
    t.step("tx_rollback", conn.rollback)
    t.check("tx_rollback_undid_insert", holds(lambda: notes(conn) == []))
    settle(conn)

    def transaction_block():
        with conn.transaction():
            conn.execute("INSERT INTO psy_tx VALUES (%s, %s)", [10, "kept"])
        return tx_status(conn)

    t.step("tx_block_commits", transaction_block)
    t.check("tx_block_committed", holds(lambda: notes(auto) == [10]))

    def transaction_block_raises():
        try:
            with conn.transaction():
                conn.execute("INSERT INTO psy_tx VALUES (%s, %s)", [11, "undone"])
                raise ValueError("application error")
        except ValueError:
            return tx_status(conn)

    t.step("tx_block_rolls_back", transaction_block_raises)
    t.check("tx_block_rolled_back", holds(lambda: notes(auto) == [10]))

    def nested():
        with conn.transaction():
            conn.execute("INSERT INTO psy_tx VALUES (%s, %s)", [20, "outer"])
            try:
                with conn.transaction():
                    conn.execute("INSERT INTO psy_tx VALUES (%s, %s)", [21, "inner"])
                    raise ValueError("inner fails")
            except ValueError:
                pass
            try:
                with conn.transaction():
                    conn.execute("INSERT INTO psy_tx VALUES (%s, %s)", [22, "inner db"])
                    conn.execute("INSERT INTO psy_tx VALUES (%s, %s)", [10, "duplicate"])
            except psycopg.errors.UniqueViolation as error:
                failed = error.sqlstate
            with conn.transaction():
                conn.execute("INSERT INTO psy_tx VALUES (%s, %s)", [23, "inner ok"])
            conn.execute("INSERT INTO psy_tx VALUES (%s, %s)", [24, "outer again"])
            inside = notes(conn)
        return {"inner_error": failed, "inside": inside, "status": tx_status(conn)}

    t.step("tx_nested_savepoints", nested)
    t.check("tx_nested_savepoints_result", holds(lambda: notes(auto) == [10, 20, 23, 24]))

    def explicit_savepoint():
        conn.execute("INSERT INTO psy_tx VALUES (30, 'sp')")
        conn.execute("SAVEPOINT sp1")
        conn.execute("INSERT INTO psy_tx VALUES (31, 'sp undone')")
        conn.execute("ROLLBACK TO SAVEPOINT sp1")
        conn.execute("RELEASE SAVEPOINT sp1")
        conn.commit()
        return notes(conn)

    t.step("tx_sql_savepoint", explicit_savepoint)
    settle(conn)

    def status_around_begin():
        seen = [tx_status(auto)]
        auto.execute("BEGIN")
        seen.append(tx_status(auto))
        auto.execute("INSERT INTO psy_tx VALUES (40, 'manual')")
        seen.append(tx_status(auto))
        auto.execute("COMMIT")
        seen.append(tx_status(auto))
        conn.execute("SELECT 1")
        seen.append(tx_status(conn))
        conn.commit()
        seen.append(tx_status(conn))
        return seen

    t.step("tx_status_begin_commit", status_around_begin)
    t.step("show_transaction_isolation", lambda: query(conn, "SHOW transaction_isolation"))
    settle(conn)


# -- upsert, RETURNING, rowcount ---------------------------------------------------------------


def step_returning(conn, t):
    upsert = ("INSERT INTO psy_items (id, name, qty, price) VALUES (%s, %s, %s, %s) "
              "ON CONFLICT (id) DO UPDATE SET qty = psy_items.qty + EXCLUDED.qty, "
              "price = EXCLUDED.price RETURNING id, name, qty, price")
    t.step("upsert_existing", lambda: query(conn, upsert, [1, "ignored", 5, Decimal("0.55")]))
    t.step("upsert_new", lambda: query(conn, upsert, [7, "grape", 70, Decimal("2.00")]))
    t.step("upsert_do_nothing", lambda: command(
        conn, "INSERT INTO psy_items (id, name, qty) VALUES (%s, %s, %s) "
              "ON CONFLICT (id) DO NOTHING", [2, "x", 1]))

    def sorted_query(sql, params):
        # RETURNING has no ORDER BY: sort on the client.
        result = query(conn, sql, params)
        result["rows"] = sorted(result["rows"])
        return result

    t.step("update_returning", lambda: sorted_query(
        "UPDATE psy_items SET qty = qty + 1 WHERE qty >= %s RETURNING id, qty", [20]))
    t.step("update_rowcount", lambda: command(
        conn, "UPDATE psy_items SET price = price * 2 WHERE price IS NOT NULL AND qty < %s", [10]))
    t.step("update_rowcount_none", lambda: command(
        conn, "UPDATE psy_items SET qty = 0 WHERE id = %s", [-1]))
    t.step("delete_returning", lambda: sorted_query(
        "DELETE FROM psy_items WHERE id IN (%s, %s) RETURNING id, name", [6, 7]))
    t.step("delete_rowcount", lambda: command(conn, "DELETE FROM psy_items WHERE qty = %s", [0]))
    t.step("returning_commit", conn.commit)
    t.step("returning_read_back", lambda: query(
        conn, "SELECT id, name, qty, price FROM psy_items ORDER BY id"))
    settle(conn)


# -- named server-side cursor -------------------------------------------------------------------


def step_server_cursor(conn, t):
    def big():
        out = {}
        with conn.cursor(name="big") as cur:
            cur.itersize = 40
            cur.execute("SELECT id, label, weight FROM psy_big WHERE id > %s ORDER BY id", [10])
            out["description"] = describe(cur)
            out["first"] = cur.fetchone()
            piece = cur.fetchmany(100)
            out["fetchmany_100"] = [len(piece), piece[0][0], piece[-1][0]]
            piece = cur.fetchmany(25)
            out["fetchmany_25"] = [len(piece), piece[0][0], piece[-1][0]]
            rest = [row[0] for row in cur]
            out["iterated"] = [len(rest), rest[0], rest[-1]]
            out["contiguous"] = rest == list(range(137, 301))
            out["after_end"] = [cur.fetchone(), cur.fetchmany(5)]
        out["status"] = tx_status(conn)
        return out

    t.step("server_cursor_fetch", big)
    t.step("server_cursor_commit", conn.commit)

    def big_binary():
        with conn.cursor(name="big_bin", binary=True) as cur:
            cur.execute("SELECT id, label FROM psy_big WHERE id %% %s = 0 ORDER BY id DESC", [60])
            return {"description": describe(cur), "rows": cur.fetchall()}

    t.step("server_cursor_binary_fetchall", big_binary)
    t.step("server_cursor_binary_commit", conn.commit)


# -- = ANY(list) --------------------------------------------------------------------------------


def step_any(conn, t):
    t.step("any_int_list", lambda: query(
        conn, "SELECT id, name FROM psy_items WHERE id = ANY(%s) ORDER BY id", [[1, 3, 5, 99]]))
    t.step("any_bigint_list", lambda: query(
        conn, "SELECT id FROM psy_big WHERE id = ANY(%s) ORDER BY id", [[3000000000, 2, 1]]))
    t.step("any_str_list", lambda: query(
        conn, "SELECT id, name FROM psy_items WHERE name = ANY(%s) ORDER BY id",
        [["banana", "elder", "zzz"]]))
    t.step("any_empty_list", lambda: query(
        conn, "SELECT id FROM psy_items WHERE id = ANY(%s) ORDER BY id", [[]]))
    t.step("any_int_list_binary", lambda: query(
        conn, "SELECT id FROM psy_items WHERE id = ANY(%b) ORDER BY id", [[2, 3]], binary=True))
    settle(conn)


# -- errors -------------------------------------------------------------------------------------


def step_errors(auto, conn, t):
    cases = [
        ("division_by_zero", "SELECT 1/0", None),
        ("division_by_zero_param", "SELECT %s / 0", [1]),
        ("unique_violation", "INSERT INTO psy_items (id, name, qty) VALUES (%s, %s, %s)",
         [1, "again", 1]),
        ("not_null_violation", "INSERT INTO psy_items (id, name, qty) VALUES (%s, %s, %s)",
         [100, None, 1]),
        ("syntax_error", "SELEC 1", None),
        ("syntax_error_extended", "SELECT %s FROM", [1]),
        ("undefined_table", "SELECT * FROM psy_no_such_table", None),
        ("undefined_column", "SELECT no_such_column FROM psy_items", None),
        ("value_too_long", "INSERT INTO psy_items (id, name, qty) VALUES (%s, %s, %s)",
         [101, "much too long a name", 1]),
        ("value_too_long_binary", "INSERT INTO psy_items (id, name, qty) VALUES (%b, %b, %b)",
         [102, "much too long a name", 1]),
    ]
    for name, sql, params in cases:
        t.step(f"error_{name}", lambda sql=sql, params=params: query(conn, sql, params))
        t.step(f"error_{name}_status", lambda: tx_status(conn))
        t.step(f"error_{name}_rejects_next", lambda: query(conn, "SELECT 1"))
        t.step(f"error_{name}_rollback", conn.rollback)
        t.step(f"error_{name}_recovers", lambda: query(conn, "SELECT 2 AS ok")["rows"])
        settle(conn)

    t.check("error_wrote_nothing", holds(lambda: query(
        conn, "SELECT count(*) FROM psy_items WHERE id >= 100")["rows"] == [(0,)]))
    settle(conn)

    def after_earlier_writes():
        conn.execute("INSERT INTO psy_tx VALUES (50, 'lost with the error')")
        try:
            conn.execute("INSERT INTO psy_tx VALUES (50, 'dup')")
        except psycopg.errors.UniqueViolation:
            pass
        conn.rollback()
        return 50 in notes(conn)

    t.step("error_rolls_back_earlier_writes", after_earlier_writes)
    settle(conn)

    t.step("error_autocommit_undefined_table", lambda: query(auto, "SELECT * FROM psy_nothing"))
    t.step("error_autocommit_status", lambda: tx_status(auto))
    t.step("error_autocommit_recovers", lambda: query(auto, "SELECT 3 AS ok")["rows"])


# -- aggregates and empty results ---------------------------------------------------------------


def step_aggregates(conn, t):
    t.step("aggregate", lambda: query(
        conn, "SELECT count(*), sum(qty), max(price), min(name), count(price) FROM psy_items"))
    t.step("aggregate_grouped", lambda: query(
        conn, "SELECT weight IS NULL AS missing, count(*), sum(id), max(weight) FROM psy_big "
              "GROUP BY weight IS NULL ORDER BY missing"))
    t.step("aggregate_empty", lambda: query(
        conn, "SELECT count(*), sum(qty), max(price) FROM psy_items WHERE id < %s", [0]))

    def empty():
        cur = conn.cursor()
        cur.execute("SELECT id, name FROM psy_items WHERE id = %s", [-1])
        return {"fetchone": cur.fetchone(), "fetchall": cur.fetchall(),
                "fetchmany": cur.fetchmany(3), "description": describe(cur),
                "rowcount": cur.rowcount, "status": cur.statusmessage}

    t.step("fetchone_empty", empty)
    t.step("fetchone_first_of_many", lambda: conn.execute(
        "SELECT id, name FROM psy_items ORDER BY id DESC").fetchone())
    settle(conn)


def step_sql_prepared(auto, conn, t):
    """SQL-level PREPARE / EXECUTE / DEALLOCATE, as psql scripts and pgbench -M prepared use them."""
    t.step("sql_prepare_select", lambda: command(
        auto, "PREPARE psy_by_id (int) AS SELECT id, name, qty FROM psy_items WHERE id = $1"))
    t.step("sql_execute_select", lambda: query(auto, "EXECUTE psy_by_id (2)"))
    t.step("sql_execute_select_quoted", lambda: query(auto, "EXECUTE psy_by_id ('3')"))
    t.step("sql_execute_select_none", lambda: query(auto, "EXECUTE psy_by_id (-5)"))
    t.step("sql_prepare_untyped", lambda: command(
        auto, "PREPARE psy_qty AS SELECT count(*) FROM psy_items WHERE qty >= $1 AND name <> $2"))
    t.step("sql_execute_untyped", lambda: query(auto, "EXECUTE psy_qty (0, 'none')"))
    t.step("sql_prepare_insert", lambda: command(
        conn, "PREPARE psy_add (int, text) AS INSERT INTO psy_items (id, name, qty) "
              "VALUES ($1, $2, 1)"))
    t.step("sql_execute_insert", lambda: command(conn, "EXECUTE psy_add (900, 'prepared')"))
    t.step("sql_execute_insert_rows", lambda: query(
        conn, "SELECT id, name, qty FROM psy_items WHERE id = 900"))
    t.step("sql_execute_insert_rollback", conn.rollback)
    t.step("sql_execute_insert_gone", lambda: query(
        auto, "SELECT count(*) FROM psy_items WHERE id = 900"))
    t.step("sql_prepare_again", lambda: command(auto, "PREPARE psy_by_id AS SELECT 1"))
    t.step("sql_execute_wrong_count", lambda: query(auto, "EXECUTE psy_by_id (1, 2)"))
    t.step("sql_execute_bad_integer", lambda: query(auto, "EXECUTE psy_by_id ('x')"))
    t.step("sql_deallocate", lambda: command(auto, "DEALLOCATE psy_by_id"))
    t.step("sql_execute_deallocated", lambda: query(auto, "EXECUTE psy_by_id (2)"))
    t.step("sql_deallocate_all", lambda: command(auto, "DEALLOCATE ALL"))
    t.step("sql_execute_after_all", lambda: query(auto, "EXECUTE psy_qty (0, 'none')"))
    settle(conn)


def step_tool_ddl(auto, t):
    """DDL migration tools emit that changes nothing rowdex keeps: COMMENT ON, OWNER TO."""
    t.step("comment_on_table", lambda: command(auto, "COMMENT ON TABLE psy_items IS 'items'"))
    t.step("comment_on_column", lambda: command(
        auto, "COMMENT ON COLUMN psy_items.name IS 'the name'"))
    t.step("comment_on_missing_table", lambda: command(
        auto, "COMMENT ON TABLE psy_nothing IS 'x'"))
    t.step("comment_on_missing_column", lambda: command(
        auto, "COMMENT ON COLUMN psy_items.nothing IS 'x'"))
    t.step("owner_to_current_user", lambda: command(
        auto, "ALTER TABLE psy_items OWNER TO CURRENT_USER"))


# -- row locks ---------------------------------------------------------------------------------


def step_row_locks(args, conn, t):
    other = connect(args, True)
    locked = "SELECT id, note FROM psy_tx WHERE id = %s FOR UPDATE"
    t.step("lock_for_update", lambda: query(conn, locked, [10]))
    t.step("lock_nowait_held", lambda: query(other, locked + " NOWAIT", [10]))
    t.step("lock_skip_locked", lambda: query(
        other, "SELECT id FROM psy_tx ORDER BY id LIMIT 2 FOR NO KEY UPDATE SKIP LOCKED"))

    def waiting_update(setting):
        other.execute(f"SET {setting} = '100ms'")
        try:
            return command(other, "UPDATE psy_tx SET note = 'waited' WHERE id = %s", [10])
        finally:
            other.execute(f"SET {setting} = 0")

    t.step("lock_timeout_update", lambda: waiting_update("lock_timeout"))
    t.step("statement_timeout_update", lambda: waiting_update("statement_timeout"))
    t.step("lock_with_aggregate", lambda: query(other, "SELECT count(*) FROM psy_tx FOR UPDATE"))
    t.step("lock_released_at_commit", conn.commit)
    t.step("lock_free_after_commit", lambda: query(other, locked + " NOWAIT", [10]))
    t.check("lock_waiters_wrote_nothing", holds(lambda: query(
        other, "SELECT count(*) FROM psy_tx WHERE note = 'waited'")["rows"] == [(0,)]))
    other.close()
    settle(conn)


def main(args, t):
    auto, conn = step_connect(args, t)
    if auto is None:
        return
    step_schema(auto, conn, t)
    step_types(conn, t)
    step_typing(conn, t)
    step_bulk(auto, conn, t)
    step_transactions(auto, conn, t)
    step_returning(conn, t)
    step_server_cursor(conn, t)
    step_any(conn, t)
    step_errors(auto, conn, t)
    step_aggregates(conn, t)
    step_sql_prepared(auto, conn, t)
    step_tool_ddl(auto, t)
    step_row_locks(args, conn, t)

    def close():
        conn.close()
        auto.close()
        return [conn.closed, auto.closed]

    t.step("close", close)


run(main)
