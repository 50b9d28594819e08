"""JSON and JSONB as applications use them: psycopg's Json/Jsonb adapters, asyncpg's json codecs,
SQLAlchemy's JSONB column type and its operators, COPY, and the operators and functions written
by hand.

Run against PostgreSQL 15 and against `rowdex serve`; the two transcripts are compared line by
line (see transcript.py). Topics, in the order they run:

- schema: a table with a `jsonb NOT NULL` payload, a `json` column and a `jsonb DEFAULT '[]'`,
  the column types the catalog reports (information_schema and SQLAlchemy's reflection);
- values: rows written as literals (key order, spacing, duplicate keys and `1e2` normalised by
  jsonb, kept by json) and as psycopg parameters (Jsonb/Json adapters, text and binary format),
  read back as the Python values the drivers build (dicts, lists) and as text, with the type
  oids the drivers are told;
- operators: `->`, `->>`, `#>`, `#>>` on both types, `@>`, `<@`, `?`, `?|`, `?&`, `||`, `-`,
  in the select list, in WHERE (with parameters) and in GROUP BY; comparisons with a literal;
  ORDER BY a jsonb (jsonb's order, not its text's);
- functions: jsonb_build_object/array, json_build_object/array, to_jsonb/to_json of each scalar
  type, jsonb_extract_path(_text), jsonb_set, jsonb_typeof, jsonb_array_length,
  jsonb_strip_nulls, json_agg/jsonb_agg, json_object_agg/jsonb_object_agg, an UPDATE with
  jsonb_set ... RETURNING;
- COPY in and out, text and binary;
- errors: malformed JSON (22P02), `\\u0000` in a jsonb (22P05), a path element that is no
  integer, array length of an object (22023), an odd argument list;
- asyncpg: its json/jsonb codecs (binary format with jsonb's version byte) for parameters and
  results;
- SQLAlchemy: a Core table with a JSONB column: insert of dicts, `payload["k"].astext ==`,
  `payload.contains({...})`, `payload.has_key(...)`.

Every table is dropped at the start, so running the scenario twice gives the same transcript.
"""

import asyncio
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import asyncpg  # noqa: E402
from psycopg.types.json import Json, Jsonb  # noqa: E402
from sqlalchemy import Column, Integer, MetaData, String, Table, create_engine, inspect, select  # noqa: E402
from sqlalchemy.dialects.postgresql import JSONB  # noqa: E402

from transcript import psycopg_connect, run, statement_result  # noqa: E402

TABLES = ["js_events", "js_orm"]


query = statement_result


def rows(conn, sql, params=None, binary=None):
    return query(conn, sql, params, binary)["rows"]


def schema(conn, t):
    for table in TABLES:
        conn.execute(f"DROP TABLE IF EXISTS {table}")
    t.step(
        "create_table",
        lambda: query(
            conn,
            "CREATE TABLE js_events (id INT PRIMARY KEY, kind TEXT NOT NULL, payload JSONB NOT NULL, "
            "raw JSON, tags JSONB DEFAULT '[]')",
        )["rowcount"],
    )
    t.step(
        "information_schema_types",
        lambda: rows(
            conn,
            "SELECT column_name, data_type, udt_name FROM information_schema.columns "
            "WHERE table_name = 'js_events' ORDER BY ordinal_position",
        ),
    )


def values(conn, t):
    t.step(
        "insert_literals",
        lambda: query(
            conn,
            "INSERT INTO js_events (id, kind, payload, raw) VALUES "
            "(1, 'click', '{\"z\": 1, \"a\": {\"b\": [1, 2.50, 1e2]}, \"z\": 2}', '{\"z\": 1,  \"z\": 2}'), "
            "(2, 'view', '[1, \"two\", null, true]', '[1,2]'), "
            "(3, 'click', '\"just a string\"', 'null'), "
            "(4, 'buy', '{\"user\": {\"id\": 7, \"name\": \"Zoë\"}, \"total\": 12.5, \"items\": [\"x\", \"y\"]}', NULL)",
        )["rowcount"],
    )
    t.step("read_as_text", lambda: rows(conn, "SELECT id, payload::text, raw::text, tags::text FROM js_events ORDER BY id"))
    t.step("read_as_values", lambda: query(conn, "SELECT id, payload, raw, tags FROM js_events ORDER BY id"))
    t.step("read_binary", lambda: query(conn, "SELECT payload, raw FROM js_events WHERE id = 4", binary=True))
    doc = {"user": {"id": 9, "name": "param"}, "list": [1, 2, {"deep": None}], "flag": False}
    t.step(
        "insert_jsonb_parameter",
        lambda: query(
            conn,
            "INSERT INTO js_events (id, kind, payload, raw) VALUES (%s, %s, %s, %s)",
            (5, "param", Jsonb(doc), Json([1, "a"])),
        )["rowcount"],
    )
    t.step(
        "insert_jsonb_parameter_binary",
        lambda: query(
            conn,
            "INSERT INTO js_events (id, kind, payload) VALUES (%s, %s, %s)",
            (6, "binary", Jsonb({"b": 2, "a": 1})),
            binary=True,
        )["rowcount"],
    )
    t.step(
        "insert_text_parameter",
        lambda: query(
            conn,
            "INSERT INTO js_events (id, kind, payload) VALUES (%s, %s, %s)",
            (7, "text", json.dumps({"kind": "as text", "n": 1.0})),
        )["rowcount"],
    )
    t.step("read_parameters", lambda: rows(conn, "SELECT id, payload, raw FROM js_events WHERE id >= 5 ORDER BY id"))


def operators(conn, t):
    calls = [
        ("arrows", "SELECT id, payload -> 'user', payload ->> 'total', payload -> 'items' -> 0, "
         "payload -> 'items' ->> -1 FROM js_events WHERE id IN (1, 4) ORDER BY id"),
        ("json_arrows", "SELECT id, raw -> 'z', raw ->> 1, raw -> 5 FROM js_events WHERE id IN (1, 2) ORDER BY id"),
        ("paths", "SELECT id, payload #> '{a,b}', payload #>> '{a,b,1}', payload #> '{user,name}' FROM js_events "
         "WHERE id IN (1, 4) ORDER BY id"),
        ("element_of_array", "SELECT payload -> 1, payload ->> 3, payload -> 9 FROM js_events WHERE id = 2"),
        ("contains", "SELECT id FROM js_events WHERE payload @> '{\"user\": {\"id\": 7}}' ORDER BY id"),
        ("contained", "SELECT id FROM js_events WHERE '{\"b\": 2}' <@ payload ORDER BY id"),
        ("contains_array", "SELECT id FROM js_events WHERE payload @> '[\"two\"]' ORDER BY id"),
        ("exists", "SELECT id FROM js_events WHERE payload ? 'user' ORDER BY id"),
        ("exists_any_all", "SELECT id, payload ?| '{user,a}', payload ?& '{user,total}' FROM js_events "
         "WHERE id <= 4 ORDER BY id"),
        ("concat_delete", "SELECT payload || '{\"extra\": true}', payload - 'user', payload - 'missing' "
         "FROM js_events WHERE id = 4"),
        ("delete_index", "SELECT payload - 1, payload - -1 FROM js_events WHERE id = 2"),
        ("arrow_in_where", "SELECT id FROM js_events WHERE payload ->> 'total' = '12.5'"),
        ("arrow_is_null", "SELECT id FROM js_events WHERE payload ->> 'user' IS NULL ORDER BY id"),
        ("group_by_member", "SELECT payload -> 'user' ->> 'name' AS name, count(*) FROM js_events "
         "GROUP BY 1 ORDER BY 2, 1 NULLS LAST"),
        ("equal_literal", "SELECT id FROM js_events WHERE payload = '{\"a\":1,   \"b\":2}'"),
        ("order_by_jsonb", "SELECT id, payload FROM js_events ORDER BY payload, id"),
        ("compare_literal", "SELECT id, payload > '[]', payload < '{}' FROM js_events WHERE id <= 4 ORDER BY id"),
    ]
    for name, sql in calls:
        t.step(f"op_{name}", lambda sql=sql: query(conn, sql))
    t.step(
        "op_parameters",
        lambda: rows(
            conn,
            "SELECT id, payload ->> %s FROM js_events WHERE payload @> %s AND payload ? %s ORDER BY id",
            ("total", Jsonb({"items": ["x"]}), "user"),
        ),
    )


def functions(conn, t):
    calls = [
        ("build_object", "SELECT jsonb_build_object('a', 1, 'b', 'two', 'c', NULL, 'd', true, 'e', 2.50), "
         "json_build_object('a', 1, 'b', 'two')"),
        ("build_array", "SELECT jsonb_build_array(1, 'a', NULL, false), json_build_array(1, 'a'), jsonb_build_array()"),
        ("to_jsonb_scalars", "SELECT to_jsonb(1), to_jsonb(2.5), to_jsonb('x\"y'::text), to_jsonb(true), "
         "to_jsonb(DATE '2024-05-01'), to_jsonb(TIMESTAMP '2024-05-01 10:00:00.25'), to_jsonb(NULL::text)"),
        ("to_json", "SELECT to_json('a'::text), to_json(3), to_json('{\"a\": 1}'::jsonb)"),
        ("extract_path", "SELECT jsonb_extract_path(payload, 'user', 'name'), jsonb_extract_path_text(payload, 'items', '1'), "
         "json_extract_path_text('{\"a\": {\"b\": \"c\"}}', 'a', 'b') FROM js_events WHERE id = 4"),
        ("set", "SELECT jsonb_set(payload, '{user,name}', '\"renamed\"'), jsonb_set(payload, '{new}', '[1]'), "
         "jsonb_set(payload, '{new}', '1', false), jsonb_set(payload, '{items,-1}', '\"last\"') FROM js_events WHERE id = 4"),
        ("typeof", "SELECT id, jsonb_typeof(payload), jsonb_typeof(payload -> 'total') FROM js_events WHERE id <= 4 ORDER BY id"),
        ("array_length", "SELECT jsonb_array_length(payload), json_array_length(raw) FROM js_events WHERE id = 2"),
        ("strip_nulls", "SELECT jsonb_strip_nulls('{\"a\": null, \"b\": {\"c\": null, \"d\": [null]}}')"),
        ("casts", "SELECT '{\"b\":1,\"a\":2}'::jsonb, '{\"b\":1,\"a\":2}'::json, CAST('[1, 2]' AS JSONB) -> 1, "
         "'{\"a\": 1}'::jsonb::text, pg_typeof('{}'::jsonb)::text, pg_typeof('{}'::json -> 'a')::text"),
        ("agg", "SELECT jsonb_agg(id ORDER BY id), json_agg(kind ORDER BY id) FROM js_events WHERE id <= 4"),
        ("object_agg", "SELECT jsonb_object_agg(kind, id) FROM js_events WHERE id IN (1, 2, 4)"),
        ("json_object_agg", "SELECT json_object_agg(id, kind) FROM js_events WHERE id IN (1, 2)"),
        ("agg_empty", "SELECT jsonb_agg(id) FROM js_events WHERE id < 0"),
        ("agg_grouped", "SELECT kind, jsonb_agg(payload -> 'user') FROM js_events WHERE id IN (1, 3, 4) "
         "GROUP BY kind ORDER BY kind"),
    ]
    for name, sql in calls:
        t.step(f"fn_{name}", lambda sql=sql: query(conn, sql))
    t.step(
        "update_returning",
        lambda: rows(
            conn,
            "UPDATE js_events SET payload = jsonb_set(payload, '{total}', to_jsonb(20)), "
            "tags = tags || '[\"paid\"]' WHERE id = 4 RETURNING payload, tags",
        ),
    )


def copy(conn, t):
    def copy_out(binary):
        fmt = " (FORMAT BINARY)" if binary else ""
        cur = conn.cursor()
        with cur.copy(f"COPY (SELECT id, payload, raw FROM js_events WHERE id IN (1, 4) ORDER BY id) TO STDOUT{fmt}") as c:
            if binary:
                c.set_types(["int4", "jsonb", "json"])
            return list(c.rows())

    t.step("copy_out_text", lambda: copy_out(False))
    t.step("copy_out_binary", lambda: copy_out(True))

    def copy_in(binary):
        fmt = " (FORMAT BINARY)" if binary else ""
        with conn.cursor().copy(f"COPY js_events (id, kind, payload, raw) FROM STDIN{fmt}") as c:
            if binary:
                c.set_types(["int4", "text", "jsonb", "json"])
                c.write_row((21, "copied", Jsonb({"y": 1, "x": [True]}), Json({"raw": 1})))
            else:
                c.write_row((20, "copied", '{"b": 1, "a": "tab\\there"}', '[ 1 ]'))
        return rows(conn, "SELECT id, payload::text, raw::text FROM js_events WHERE kind = 'copied' ORDER BY id")

    t.step("copy_in_text", lambda: copy_in(False))
    t.step("copy_in_binary", lambda: copy_in(True))


def errors(conn, t):
    bad = [
        ("malformed_literal", "SELECT '{\"a\": }'::jsonb"),
        ("malformed_insert", "INSERT INTO js_events (id, kind, payload) VALUES (30, 'bad', '{oops')"),
        ("malformed_json", "SELECT '[1, 2'::json"),
        ("nul_escape", "SELECT '\"\\u0000\"'::jsonb"),
        ("path_not_integer", "SELECT jsonb_set('[1, 2]', '{x}', '1')"),
        ("array_length_of_object", "SELECT jsonb_array_length('{\"a\": 1}')"),
        ("odd_build_object", "SELECT jsonb_build_object('a')"),
        ("null_key", "SELECT jsonb_build_object(NULL, 1)"),
    ]
    for name, sql in bad:
        t.step(f"error_{name}", lambda sql=sql: rows(conn, sql))
    t.step("nothing_written", lambda: rows(conn, "SELECT count(*) FROM js_events WHERE id = 30"))


async def asyncpg_json(args, t):
    conn = await asyncpg.connect(host=args.host, port=args.port, user=args.user, database=args.dbname)
    try:
        record = t.step_async

        await record("asyncpg_fetch", lambda: conn.fetch("SELECT id, payload, raw FROM js_events WHERE id IN (1, 4) ORDER BY id"))
        await record(
            "asyncpg_insert",
            lambda: conn.execute(
                "INSERT INTO js_events (id, kind, payload, raw) VALUES ($1, $2, $3, $4)",
                40, "asyncpg", json.dumps({"via": "asyncpg", "n": [1, 2]}), "[true]",
            ),
        )
        await record("asyncpg_read_back", lambda: conn.fetchrow("SELECT payload, raw, tags FROM js_events WHERE id = 40"))
        await record(
            "asyncpg_operator_parameter",
            lambda: conn.fetch("SELECT id FROM js_events WHERE payload @> $1::jsonb ORDER BY id", '{"via": "asyncpg"}'),
        )
        await record("asyncpg_arrow_text", lambda: conn.fetchval("SELECT payload ->> $1 FROM js_events WHERE id = 40", "via"))
    finally:
        await conn.close()


def sqlalchemy_json(args, t):
    url = f"postgresql+psycopg://{args.user}@{args.host}:{args.port}/{args.dbname}"
    engine = create_engine(url)
    meta = MetaData()
    orm = Table(
        "js_orm",
        meta,
        Column("id", Integer, primary_key=True),
        Column("name", String(40)),
        Column("doc", JSONB, nullable=False),
    )
    t.step("sa_create", lambda: meta.create_all(engine) or "created")
    try:
        def insert():
            with engine.begin() as c:
                c.execute(
                    orm.insert(),
                    [
                        {"id": 1, "name": "a", "doc": {"kind": "x", "tags": ["t1", "t2"], "n": 1}},
                        {"id": 2, "name": "b", "doc": {"kind": "y", "tags": [], "nested": {"k": "v"}}},
                        {"id": 3, "name": "c", "doc": [1, 2, 3]},
                    ],
                )
            return "inserted"

        t.step("sa_insert", insert)

        def run_select(stmt):
            with engine.connect() as c:
                return [tuple(r) for r in c.execute(stmt)]

        t.step("sa_astext", lambda: run_select(select(orm.c.id).where(orm.c.doc["kind"].astext == "x")))
        t.step("sa_contains", lambda: run_select(select(orm.c.id).where(orm.c.doc.contains({"tags": ["t2"]}))))
        t.step("sa_has_key", lambda: run_select(select(orm.c.id).where(orm.c.doc.has_key("nested")).order_by(orm.c.id)))
        t.step("sa_path", lambda: run_select(select(orm.c.doc[("nested", "k")].astext).where(orm.c.id == 2)))
        t.step("sa_read_docs", lambda: run_select(select(orm.c.id, orm.c.doc).order_by(orm.c.id)))
        t.step(
            "sa_reflect",
            lambda: [(c["name"], type(c["type"]).__name__) for c in inspect(engine).get_columns("js_orm")],
        )
    finally:
        engine.dispose()


def main(args, t):
    conn = t.step("connect", lambda: psycopg_connect(args))
    if conn is None:
        return
    with conn:
        schema(conn, t)
        values(conn, t)
        operators(conn, t)
        functions(conn, t)
        copy(conn, t)
        errors(conn, t)
    asyncio.run(asyncpg_json(args, t))
    sqlalchemy_json(args, t)


run(main)
