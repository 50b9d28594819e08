"""Array columns as applications use them: psycopg's lists (text and binary format), asyncpg's
array codecs, SQLAlchemy's ARRAY type and reflection, COPY, and the operators and functions
written by hand.

Run against PostgreSQL 15 and against `rowdex serve`; the two transcripts are compared line by
line (see transcript.py). Topics, in the order they run:

- schema: a table with `text[]`, `integer[]`, `bigint[]`, `boolean[]`, `double precision[]`,
  `date[]` and `timestamp[]` columns, the types information_schema reports;
- values: literals in PostgreSQL's text form (spacing, quoting, NULL elements, the empty
  array) and ARRAY[...], psycopg lists as parameters (text and binary format), read back as
  the Python lists the drivers build and as text, with the type oids the drivers are told;
- operators and functions: = ANY, @>, <@, && with literals and parameters, array_length,
  cardinality, subscripts, unnest, array_agg, array_append, array_to_string, casts;
- COPY in and out, text;
- errors: text that is no array and an element of the wrong type (22P02), nothing written;
- asyncpg: binary array parameters and results;
- SQLAlchemy: a Core table with ARRAY columns: insert of lists, `.any()`, `.contains()`,
  reflection;
- bytea[] and json[]: literals, psycopg lists of bytes and Json values (text and binary), read
  back (text and binary), COPY out;
- numeric(10,2)[]: literals rounded to the scale, psycopg lists of Decimals (text and binary),
  = ANY with a Decimal parameter, binary COPY out, an element past the precision (22003);
- timestamptz[] in a session zone other than UTC: literals with and without offsets, psycopg
  lists of aware datetimes (text and binary), read back as text and as datetimes, unnest, COPY;
- uuid[] and jsonb[]: literals, psycopg lists of UUIDs and Jsonb values (text and binary),
  = ANY with a uuid parameter, @>, unnest, COPY text and binary, asyncpg, a bad element.

Every table is dropped at the start, so running the scenario twice gives the same transcript.
"""

import asyncio
import datetime
import decimal
import io
import os
import sys
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import asyncpg  # noqa: E402
import psycopg  # noqa: E402
from sqlalchemy import ARRAY, Column, Integer, MetaData, String, Table, create_engine, inspect, select  # noqa: E402

from psycopg.types.json import Json, Jsonb  # noqa: E402
from transcript import psycopg_connect, run, statement_result  # noqa: E402

TABLES = ["ar_posts", "ar_orm", "ar_refs", "ar_times", "ar_amounts", "ar_blobs"]

query = statement_result


def rows(conn, sql, params=None, binary=None):
    return query(conn, sql, params, binary)["rows"]


def copy_out_text(conn, sql):
    """What COPY ... TO STDOUT in text format writes."""
    out = io.StringIO()
    with conn.cursor() as cur:
        with cur.copy(sql) as cp:
            for chunk in cp:
                out.write(bytes(chunk).decode())
    return out.getvalue()


def copy_out_binary(conn, sql, types):
    """The rows COPY ... TO STDOUT (FORMAT binary) writes, read as `types`."""
    with conn.cursor() as cur:
        with cur.copy(sql) as cp:
            cp.set_types(types)
            return list(cp.rows())


def schema(conn, t):
    for table in TABLES:
        conn.execute(f"DROP TABLE IF EXISTS {table}")
    t.step(
        "create_table",
        lambda: query(
            conn,
            "CREATE TABLE ar_posts (id INT PRIMARY KEY, tags TEXT[], scores INTEGER[], big BIGINT[], "
            "flags BOOLEAN[], ratios DOUBLE PRECISION[], days DATE[], seen TIMESTAMP[])",
        )["rowcount"],
    )
    t.step(
        "information_schema_types",
        lambda: rows(
            conn,
            "SELECT column_name, data_type, udt_name FROM information_schema.columns "
            "WHERE table_name = 'ar_posts' ORDER BY ordinal_position",
        ),
    )


def values(conn, t):
    t.step(
        "insert_literals",
        lambda: query(
            conn,
            "INSERT INTO ar_posts VALUES "
            "(1, '{ rust , db }', '{3,1,002}', '{10000000000}', '{t,false}', '{1.5,2,-0.25}', "
            "'{2024-01-01,2024-02-29}', '{\"2024-01-01 10:00\"}'), "
            "(2, '{\"a b\",\"x,y\",\"q\\\"uote\",NULL,\"NULL\",\"\"}', '{}', NULL, '{true}', '{}', NULL, NULL)",
        )["rowcount"],
    )
    t.step(
        "insert_array_constructor",
        lambda: query(conn, "INSERT INTO ar_posts (id, tags, scores) VALUES (3, ARRAY['sql', NULL], ARRAY[7, 8, 9])")["rowcount"],
    )
    t.step("read_values", lambda: query(conn, "SELECT * FROM ar_posts ORDER BY id"))
    t.step("read_text", lambda: rows(conn, "SELECT id, tags::text, scores::text, flags::text FROM ar_posts ORDER BY id"))
    t.step("read_binary", lambda: rows(conn, "SELECT id, tags, scores, big, flags, ratios, days FROM ar_posts ORDER BY id", binary=True))
    t.step(
        "insert_parameters",
        lambda: query(
            conn,
            "INSERT INTO ar_posts (id, tags, scores, flags, days) VALUES (%s, %s, %s, %s, %s)",
            (10, ["p", "q r", None], [1, 2], [True, None], [datetime.date(2024, 5, 1)]),
        )["rowcount"],
    )
    t.step(
        "insert_parameters_binary",
        lambda: query(
            conn,
            "INSERT INTO ar_posts (id, tags, scores) VALUES (%s, %s, %s)",
            (11, ["bin"], [10, 20, 30]),
            binary=True,
        )["rowcount"],
    )
    t.step("read_parameters", lambda: rows(conn, "SELECT id, tags, scores, flags, days FROM ar_posts WHERE id >= 10 ORDER BY id"))


def operators(conn, t):
    calls = [
        ("any", "SELECT id FROM ar_posts WHERE 'db' = ANY(tags) ORDER BY id"),
        ("any_number", "SELECT id FROM ar_posts WHERE 8 = ANY(scores) ORDER BY id"),
        ("contains", "SELECT id FROM ar_posts WHERE tags @> '{rust}' ORDER BY id"),
        ("contained", "SELECT id FROM ar_posts WHERE scores <@ '{1,2,3,4}' ORDER BY id"),
        ("overlap", "SELECT id FROM ar_posts WHERE tags && ARRAY['sql', 'p'] ORDER BY id"),
        ("equal", "SELECT id FROM ar_posts WHERE scores = '{7,8,9}'"),
        ("lengths", "SELECT id, array_length(tags, 1), cardinality(tags), array_length(scores, 1) FROM ar_posts ORDER BY id"),
        ("subscripts", "SELECT id, tags[1], scores[2], tags[9] FROM ar_posts ORDER BY id"),
        ("unnest", "SELECT id, unnest(scores) AS s FROM ar_posts WHERE id IN (1, 3) ORDER BY id, s"),
        ("array_agg", "SELECT array_agg(id ORDER BY id) FROM ar_posts"),
        ("array_agg_text", "SELECT array_agg(t ORDER BY t) FROM (VALUES ('b'), ('a c')) v(t)"),
        ("array_to_string", "SELECT id, array_to_string(tags, '|') FROM ar_posts WHERE id IN (1, 3) ORDER BY id"),
        ("casts", "SELECT '{1,2}'::int[], '{a,\"b c\"}'::text[], ARRAY[1.5, 2]::float8[], '{t}'::boolean[]"),
    ]
    for name, sql in calls:
        t.step(f"op_{name}", lambda sql=sql: query(conn, sql))
    t.step("op_any_parameter", lambda: rows(conn, "SELECT id FROM ar_posts WHERE id = ANY(%s) ORDER BY id", ([1, 3, 99],)))
    t.step(
        "op_contains_parameter",
        lambda: rows(conn, "SELECT id FROM ar_posts WHERE scores @> %s::int[] ORDER BY id", ([2],)),
    )
    t.step(
        "op_update_append",
        lambda: query(conn, "UPDATE ar_posts SET tags = array_append(tags, 'new') WHERE id = 1 RETURNING id, tags"),
    )


def copy(conn, t):
    def copy_in():
        data = "20\t{x,\"y z\"}\t{1,2}\n21\t{}\t\\N\n"
        try:
            with conn.cursor() as cur:
                with cur.copy("COPY ar_posts (id, tags, scores) FROM STDIN") as cp:
                    cp.write(data)
            return "copied"
        except psycopg.Error as error:
            return {"error": error.sqlstate}

    t.step("copy_in_text", copy_in)

    t.step(
        "copy_out_text",
        lambda: copy_out_text(
            conn, "COPY (SELECT id, tags, scores FROM ar_posts WHERE id IN (1, 2, 20, 21) ORDER BY id) TO STDOUT"
        ),
    )

    def copy_in_binary():
        try:
            with conn.cursor() as cur:
                with cur.copy("COPY ar_posts (id, tags, scores, days) FROM STDIN (FORMAT binary)") as cp:
                    cp.set_types(["int4", "text[]", "int4[]", "date[]"])
                    cp.write_row((22, ["bin", None, "a b"], [7, -7], [datetime.date(2024, 3, 1)]))
                    cp.write_row((23, [], None, None))
            return "copied"
        except psycopg.Error as error:
            return {"error": error.sqlstate}

    t.step("copy_in_binary", copy_in_binary)

    t.step(
        "copy_out_binary",
        lambda: copy_out_binary(
            conn,
            "COPY (SELECT id, tags, scores, days FROM ar_posts WHERE id IN (1, 22, 23) ORDER BY id) TO STDOUT (FORMAT binary)",
            ["int4", "text[]", "int4[]", "date[]"],
        ),
    )


def errors(conn, t):
    t.step("error_malformed", lambda: rows(conn, "INSERT INTO ar_posts (id, scores) VALUES (30, '{1,2')"))
    t.step("error_element", lambda: rows(conn, "INSERT INTO ar_posts (id, scores) VALUES (30, '{1,x}')"))
    t.step("error_cast", lambda: rows(conn, "SELECT '{a}'::int[]"))
    t.step("nothing_written", lambda: rows(conn, "SELECT count(*) FROM ar_posts WHERE id = 30"))


async def asyncpg_arrays(args, t):
    conn = await asyncpg.connect(host=args.host, port=args.port, user=args.user, database=args.dbname)
    try:
        record = t.step_async
        await record("asyncpg_fetch", lambda: conn.fetch("SELECT id, tags, scores, flags FROM ar_posts WHERE id IN (1, 2) ORDER BY id"))
        await record(
            "asyncpg_insert",
            lambda: conn.execute(
                "INSERT INTO ar_posts (id, tags, scores, ratios) VALUES ($1, $2, $3, $4)",
                40, ["async", "pg"], [4, 0, -4], [0.5],
            ),
        )
        await record("asyncpg_read_back", lambda: conn.fetchrow("SELECT tags, scores, ratios FROM ar_posts WHERE id = 40"))
        await record("asyncpg_any", lambda: conn.fetch("SELECT id FROM ar_posts WHERE $1 = ANY(tags) ORDER BY id", "pg"))
        await record("asyncpg_contains", lambda: conn.fetch("SELECT id FROM ar_posts WHERE tags @> $1 ORDER BY id", ["async"]))
    finally:
        await conn.close()


def sqlalchemy_arrays(args, t):
    url = f"postgresql+psycopg://{args.user}@{args.host}:{args.port}/{args.dbname}"
    engine = create_engine(url)
    meta = MetaData()
    orm = Table(
        "ar_orm",
        meta,
        Column("id", Integer, primary_key=True),
        Column("labels", ARRAY(String)),
        Column("counts", ARRAY(Integer)),
    )
    t.step("sa_create", lambda: meta.create_all(engine) or "created")
    try:
        def insert():
            with engine.begin() as c:
                c.execute(
                    orm.insert(),
                    [
                        {"id": 1, "labels": ["a", "b"], "counts": [1, 2]},
                        {"id": 2, "labels": [], "counts": None},
                        {"id": 3, "labels": ["b c"], "counts": [5]},
                    ],
                )
            return "inserted"

        t.step("sa_insert", insert)

        def run_select(stmt):
            with engine.connect() as c:
                return [tuple(r) for r in c.execute(stmt)]

        t.step("sa_read", lambda: run_select(select(orm.c.id, orm.c.labels, orm.c.counts).order_by(orm.c.id)))
        t.step("sa_any", lambda: run_select(select(orm.c.id).where(orm.c.labels.any("b")).order_by(orm.c.id)))
        t.step("sa_contains", lambda: run_select(select(orm.c.id).where(orm.c.counts.contains([2])).order_by(orm.c.id)))
        t.step(
            "sa_reflect",
            lambda: [(c["name"], repr(c["type"])) for c in inspect(engine).get_columns("ar_orm")],
        )
    finally:
        engine.dispose()


U1 = uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")
U2 = uuid.UUID("00000000-0000-0000-0000-000000000001")


def uuids_and_documents(conn, t):
    t.step(
        "refs_create",
        lambda: query(conn, "CREATE TABLE ar_refs (id INT PRIMARY KEY, refs UUID[], docs JSONB[])")["rowcount"],
    )
    t.step(
        "refs_types",
        lambda: rows(
            conn,
            "SELECT column_name, data_type, udt_name FROM information_schema.columns "
            "WHERE table_name = 'ar_refs' ORDER BY ordinal_position",
        ),
    )
    t.step(
        "refs_insert_literals",
        lambda: query(
            conn,
            "INSERT INTO ar_refs VALUES "
            "(1, '{A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11, 00000000-0000-0000-0000-000000000001}', "
            "'{\"{\\\"b\\\": 1,   \\\"a\\\": [true, null]}\", null, \"\\\"s\\\"\"}'), "
            "(2, '{}', NULL)",
        )["rowcount"],
    )
    t.step(
        "refs_insert_parameters",
        lambda: query(
            conn,
            "INSERT INTO ar_refs VALUES (%s, %s, %s)",
            (3, [U2, None], [Jsonb({"k": [1, 2]}), Jsonb("x")]),
        )["rowcount"],
    )
    t.step(
        "refs_insert_parameters_binary",
        lambda: query(conn, "INSERT INTO ar_refs VALUES (%s, %s, %s)", (4, [U1], [Jsonb(7)]), binary=True)["rowcount"],
    )
    t.step("refs_read", lambda: query(conn, "SELECT * FROM ar_refs ORDER BY id"))
    t.step("refs_read_text", lambda: rows(conn, "SELECT id, refs::text, docs::text FROM ar_refs ORDER BY id"))
    t.step("refs_read_binary", lambda: rows(conn, "SELECT id, refs, docs FROM ar_refs ORDER BY id", binary=True))
    t.step("refs_any", lambda: rows(conn, "SELECT id FROM ar_refs WHERE %s = ANY(refs) ORDER BY id", (U2,)))
    t.step(
        "refs_contains",
        lambda: rows(conn, "SELECT id FROM ar_refs WHERE refs @> '{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}' ORDER BY id"),
    )
    t.step("refs_unnest", lambda: rows(conn, "SELECT id, unnest(refs)::text AS r FROM ar_refs ORDER BY id, r NULLS LAST"))
    t.step("refs_lengths", lambda: rows(conn, "SELECT id, cardinality(refs), array_length(docs, 1) FROM ar_refs ORDER BY id"))

    def copy_in():
        data = "5\t{ffffffff-ffff-ffff-ffff-ffffffffffff}\t{\"[1, 2]\"}\n"
        with conn.cursor() as cur:
            with cur.copy("COPY ar_refs FROM STDIN") as cp:
                cp.write(data)
        return "copied"

    t.step("refs_copy_in", copy_in)

    t.step("refs_copy_out", lambda: copy_out_text(conn, "COPY (SELECT * FROM ar_refs ORDER BY id) TO STDOUT"))
    t.step(
        "refs_copy_out_binary",
        lambda: copy_out_binary(
            conn,
            "COPY (SELECT id, refs, docs FROM ar_refs ORDER BY id) TO STDOUT (FORMAT binary)",
            ["int4", "uuid[]", "jsonb[]"],
        ),
    )
    t.step("refs_error_element", lambda: rows(conn, "INSERT INTO ar_refs (id, refs) VALUES (9, '{not-a-uuid}')"))
    t.step("refs_error_json", lambda: rows(conn, "INSERT INTO ar_refs (id, docs) VALUES (9, '{\"{oops\"}')"))
    t.step("refs_nothing_written", lambda: rows(conn, "SELECT count(*) FROM ar_refs WHERE id = 9"))


def blobs(conn, t):
    t.step("blobs_create", lambda: query(conn, "CREATE TABLE ar_blobs (id INT PRIMARY KEY, b BYTEA[], j JSON[])")["rowcount"])
    t.step(
        "blobs_insert_literal",
        lambda: query(conn, "INSERT INTO ar_blobs VALUES (1, '{\"\\\\x00FF\", NULL}', '{\"{\\\"b\\\": 1,  \\\"a\\\": 2}\"}')")["rowcount"],
    )
    t.step(
        "blobs_insert_parameters",
        lambda: query(conn, "INSERT INTO ar_blobs VALUES (%s, %s, %s)", (2, [b"ab", b""], [Json({"k": 1})]))["rowcount"],
    )
    t.step(
        "blobs_insert_parameters_binary",
        lambda: query(conn, "INSERT INTO ar_blobs VALUES (%s, %s, %s)", (3, [b"\x01\x02"], [Json([1, None])]), binary=True)[
            "rowcount"
        ],
    )
    t.step("blobs_read", lambda: query(conn, "SELECT * FROM ar_blobs ORDER BY id"))
    t.step("blobs_read_text", lambda: rows(conn, "SELECT id, b::text, j::text FROM ar_blobs ORDER BY id"))
    t.step("blobs_read_binary", lambda: rows(conn, "SELECT id, b, j FROM ar_blobs ORDER BY id", binary=True))
    t.step("blobs_copy_out", lambda: copy_out_text(conn, "COPY (SELECT * FROM ar_blobs ORDER BY id) TO STDOUT"))


def amounts(conn, t):
    d = decimal.Decimal
    t.step("amounts_create", lambda: query(conn, "CREATE TABLE ar_amounts (id INT PRIMARY KEY, a NUMERIC(10,2)[])")["rowcount"])
    t.step(
        "amounts_insert_literal",
        lambda: query(conn, "INSERT INTO ar_amounts VALUES (1, '{1.555, -0.5, NULL, 12345678.9}')")["rowcount"],
    )
    t.step(
        "amounts_insert_parameters",
        lambda: query(conn, "INSERT INTO ar_amounts VALUES (%s, %s)", (2, [d("7.25"), d("-3")]))["rowcount"],
    )
    t.step(
        "amounts_insert_parameters_binary",
        lambda: query(conn, "INSERT INTO ar_amounts VALUES (%s, %s)", (3, [d("0.01"), None]), binary=True)["rowcount"],
    )
    t.step("amounts_read", lambda: query(conn, "SELECT * FROM ar_amounts ORDER BY id"))
    t.step("amounts_read_text", lambda: rows(conn, "SELECT id, a::text FROM ar_amounts ORDER BY id"))
    t.step("amounts_read_binary", lambda: rows(conn, "SELECT id, a FROM ar_amounts ORDER BY id", binary=True))
    t.step("amounts_any", lambda: rows(conn, "SELECT id FROM ar_amounts WHERE %s::numeric(10,2) = ANY(a) ORDER BY id", (d("7.25"),)))
    t.step("amounts_unnest", lambda: rows(conn, "SELECT id, unnest(a) AS x FROM ar_amounts ORDER BY id, x NULLS LAST"))

    t.step(
        "amounts_copy_out_binary",
        lambda: copy_out_binary(
            conn, "COPY (SELECT id, a FROM ar_amounts ORDER BY id) TO STDOUT (FORMAT binary)", ["int4", "numeric[]"]
        ),
    )
    t.step("amounts_error_overflow", lambda: rows(conn, "INSERT INTO ar_amounts VALUES (9, '{123456789.1}')"))
    t.step("amounts_nothing_written", lambda: rows(conn, "SELECT count(*) FROM ar_amounts WHERE id = 9"))


def instants(conn, t):
    conn.execute("SET TIME ZONE 'Europe/Berlin'")
    berlin = datetime.timezone(datetime.timedelta(hours=1))
    t.step("times_create", lambda: query(conn, "CREATE TABLE ar_times (id INT PRIMARY KEY, ats TIMESTAMPTZ[])")["rowcount"])
    t.step(
        "times_insert_literal",
        lambda: query(
            conn,
            "INSERT INTO ar_times VALUES (1, '{\"2024-01-01 10:00\", \"2024-07-01 10:00:00+00\", NULL}')",
        )["rowcount"],
    )
    t.step(
        "times_insert_parameters",
        lambda: query(
            conn,
            "INSERT INTO ar_times VALUES (%s, %s)",
            (2, [datetime.datetime(2024, 3, 31, 2, 30, tzinfo=datetime.timezone.utc)]),
        )["rowcount"],
    )
    t.step(
        "times_insert_parameters_binary",
        lambda: query(
            conn,
            "INSERT INTO ar_times VALUES (%s, %s)",
            (3, [datetime.datetime(2024, 12, 24, 18, 0, tzinfo=berlin), None]),
            binary=True,
        )["rowcount"],
    )
    t.step("times_read", lambda: query(conn, "SELECT * FROM ar_times ORDER BY id"))
    t.step("times_read_text", lambda: rows(conn, "SELECT id, ats::text FROM ar_times ORDER BY id"))
    t.step("times_read_binary", lambda: rows(conn, "SELECT id, ats FROM ar_times ORDER BY id", binary=True))
    t.step("times_unnest", lambda: rows(conn, "SELECT id, unnest(ats) AS a FROM ar_times ORDER BY id, a NULLS LAST"))
    t.step("times_contains", lambda: rows(conn, "SELECT id FROM ar_times WHERE ats @> '{\"2024-01-01 10:00\"}' ORDER BY id"))

    t.step("times_copy_out", lambda: copy_out_text(conn, "COPY (SELECT * FROM ar_times ORDER BY id) TO STDOUT"))
    conn.execute("RESET TIME ZONE")


async def asyncpg_uuid_arrays(args, t):
    conn = await asyncpg.connect(host=args.host, port=args.port, user=args.user, database=args.dbname)
    try:
        record = t.step_async
        await record("asyncpg_refs_fetch", lambda: conn.fetch("SELECT id, refs FROM ar_refs ORDER BY id"))
        await record(
            "asyncpg_refs_insert",
            lambda: conn.execute("INSERT INTO ar_refs (id, refs) VALUES ($1, $2)", 41, [U1, U2]),
        )
        await record("asyncpg_refs_any", lambda: conn.fetch("SELECT id FROM ar_refs WHERE $1::uuid = ANY(refs) ORDER BY id", U1))
    finally:
        await conn.close()


def main(args, t):
    conn = t.step("connect", lambda: psycopg_connect(args))
    if conn is None:
        return
    with conn:
        schema(conn, t)
        values(conn, t)
        operators(conn, t)
        copy(conn, t)
        errors(conn, t)
        uuids_and_documents(conn, t)
        instants(conn, t)
        amounts(conn, t)
        blobs(conn, t)
    asyncio.run(asyncpg_arrays(args, t))
    asyncio.run(asyncpg_uuid_arrays(args, t))
    sqlalchemy_arrays(args, t)


run(main)
