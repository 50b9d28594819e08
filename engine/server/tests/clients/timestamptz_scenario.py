"""TIMESTAMPTZ and the session's TimeZone as applications use them: psycopg's aware datetimes
(text and binary format), asyncpg's codecs, SQLAlchemy's DateTime(timezone=True), COPY, and the
functions and casts written by hand, all in a session whose zone is not UTC.

Run against PostgreSQL 15 and against `rowdex serve`; the two transcripts are compared line by
line (see transcript.py). Topics, in the order they run:

- session: SET TIME ZONE to UTC, to Europe/Berlin (SHOW and the ParameterStatus psycopg keeps),
  a zone that does not exist (22023), a zone given at connect (`options=-c TimeZone=...`), RESET;
- schema: a table with a `timestamptz NOT NULL` key-ordered index, a `timestamp` and a `date`,
  the types information_schema and SQLAlchemy's reflection report;
- values: literals with and without an offset, a zone name, a date alone, a time Berlin skips
  and one it shows twice; psycopg parameters (aware datetimes in several zones, text and binary
  format), read back as the aware datetimes the drivers build (in the session's zone) and as
  text, with the type oids the drivers are told;
- queries: comparisons and BETWEEN with literals and parameters (through the index), ORDER BY,
  min/max, date_trunc/extract/to_char/::date/::timestamp in the session's zone, AT TIME ZONE
  both ways, interval arithmetic across the change to summer time, now()'s type;
- the same rows read in other zones (UTC, Asia/Kolkata, America/New_York);
- COPY in and out, text and CSV, in the session's zone;
- naive times made instants: a naive `datetime` parameter (psycopg sends it as `timestamp`, text
  and binary), `TIMESTAMP '...'` in VALUES, in INSERT ... SELECT, in UPDATE ... SET and in a
  comparison, each a time of the session's wall clock;
- errors: text that is no timestamp (22007), in a literal and in an INSERT;
- asyncpg: binary timestamptz parameters and results;
- SQLAlchemy: a Core table with DateTime(timezone=True): insert of aware datetimes, a range
  query, reflection.

Every table is dropped at the start, so running the scenario twice gives the same transcript.
"""

import asyncio
import datetime
import io
import os
import sys
from zoneinfo import ZoneInfo

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import asyncpg  # noqa: E402
import psycopg  # noqa: E402
from sqlalchemy import Column, DateTime, Integer, MetaData, Table, create_engine, inspect, select  # noqa: E402

from transcript import psycopg_connect, run, statement_result  # noqa: E402

TABLES = ["tz_events", "tz_orm", "tz_naive"]
BERLIN = ZoneInfo("Europe/Berlin")

query = statement_result


def rows(conn, sql, params=None, binary=None):
    return query(conn, sql, params, binary)["rows"]


def show_zone(conn):
    return {"show": rows(conn, "SHOW TimeZone"), "status": conn.info.parameter_status("TimeZone")}


def session(conn, t):
    t.step("set_utc", lambda: query(conn, "SET TIME ZONE 'UTC'")["rowcount"])
    t.step("show_utc", lambda: show_zone(conn))
    t.step("set_berlin", lambda: query(conn, "SET TIME ZONE 'Europe/Berlin'")["rowcount"])
    t.step("show_berlin", lambda: show_zone(conn))
    t.step("set_nowhere", lambda: query(conn, "SET TIME ZONE 'Nowhere/Special'"))
    t.step("still_berlin", lambda: show_zone(conn))


def schema(conn, t):
    for table in TABLES:
        conn.execute(f"DROP TABLE IF EXISTS {table}")
    t.step(
        "create_table",
        lambda: query(
            conn,
            "CREATE TABLE tz_events (id INT PRIMARY KEY, at TIMESTAMPTZ NOT NULL, "
            "wall TIMESTAMP, day DATE, note TEXT)",
        )["rowcount"],
    )
    t.step("create_index", lambda: query(conn, "CREATE INDEX tz_events_at ON tz_events (at)")["rowcount"])
    t.step(
        "information_schema_types",
        lambda: rows(
            conn,
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_name = 'tz_events' ORDER BY ordinal_position",
        ),
    )


def values(conn, t):
    t.step(
        "insert_literals",
        lambda: query(
            conn,
            "INSERT INTO tz_events (id, at, wall, day, note) VALUES "
            "(1, '2024-01-15 11:00:00', '2024-01-15 11:00:00', '2024-01-15', 'no offset: Berlin'), "
            "(2, '2024-01-15 12:00:00+02', NULL, NULL, 'offset'), "
            "(3, '2024-07-01T08:30:00.25Z', NULL, NULL, 'Z'), "
            "(4, '2024-07-01 10:30 America/New_York', NULL, NULL, 'zone name'), "
            "(5, '2024-03-30', NULL, '2024-03-30', 'date alone'), "
            "(6, '2024-03-31 02:30:00', NULL, NULL, 'skipped in Berlin'), "
            "(7, '2024-10-27 02:30:00', NULL, NULL, 'twice in Berlin')",
        )["rowcount"],
    )
    t.step("read_values", lambda: query(conn, "SELECT id, at, note FROM tz_events ORDER BY id"))
    t.step("read_text", lambda: rows(conn, "SELECT id, at::text, wall::text FROM tz_events ORDER BY id"))
    t.step("read_binary", lambda: rows(conn, "SELECT id, at FROM tz_events WHERE id <= 3 ORDER BY id", binary=True))
    params = [
        (10, datetime.datetime(2024, 5, 1, 9, 0, tzinfo=ZoneInfo("America/New_York")), "new york"),
        (11, datetime.datetime(2024, 5, 1, 13, 0, 0, 500000, tzinfo=datetime.timezone.utc), "utc"),
        (12, datetime.datetime(2024, 12, 24, 18, 0, tzinfo=ZoneInfo("Asia/Kolkata")), "kolkata"),
    ]
    t.step(
        "insert_parameters",
        lambda: sum(
            query(conn, "INSERT INTO tz_events (id, at, note) VALUES (%s, %s, %s)", p)["rowcount"] for p in params
        ),
    )
    t.step(
        "insert_parameter_binary",
        lambda: query(
            conn,
            "INSERT INTO tz_events (id, at, note) VALUES (%s, %s, %s)",
            (13, datetime.datetime(2024, 2, 29, 23, 59, 59, tzinfo=BERLIN), "binary"),
            binary=True,
        )["rowcount"],
    )
    t.step("read_parameters", lambda: rows(conn, "SELECT id, at, at::text FROM tz_events WHERE id >= 10 ORDER BY id"))


def queries(conn, t):
    calls = [
        ("equal_literal", "SELECT id FROM tz_events WHERE at = '2024-01-15 11:00' ORDER BY id"),
        ("equal_offset", "SELECT id FROM tz_events WHERE at = '2024-01-15 10:00:00+00' ORDER BY id"),
        ("between", "SELECT id FROM tz_events WHERE at BETWEEN '2024-03-30' AND '2024-05-01 15:00' ORDER BY id"),
        ("order_by", "SELECT id, at FROM tz_events ORDER BY at, id"),
        ("min_max", "SELECT min(at), max(at), count(*) FROM tz_events"),
        ("date_trunc", "SELECT id, date_trunc('day', at), date_trunc('month', at) FROM tz_events ORDER BY id"),
        ("extract", "SELECT id, extract(hour from at)::float8, extract(dow from at)::float8, "
         "extract(epoch from at)::float8 FROM tz_events ORDER BY id"),
        ("to_char", "SELECT id, to_char(at, 'YYYY-MM-DD HH24:MI:SS TZ OF') FROM tz_events ORDER BY id"),
        ("casts", "SELECT id, at::date, at::timestamp, wall::timestamptz, day::timestamptz FROM tz_events "
         "WHERE id IN (1, 5) ORDER BY id"),
        ("at_time_zone", "SELECT id, at AT TIME ZONE 'UTC', at AT TIME ZONE 'Asia/Tokyo', "
         "wall AT TIME ZONE 'America/New_York' FROM tz_events WHERE id = 1"),
        ("interval_across_summer_time", "SELECT at + INTERVAL '1 day', at + INTERVAL '24 hours', "
         "at - INTERVAL '1 month' FROM tz_events WHERE id = 5"),
        ("group_by_day", "SELECT at::date AS d, count(*) FROM tz_events GROUP BY 1 ORDER BY 1"),
        ("now_type", "SELECT pg_typeof(now())::text, pg_typeof(at)::text, now() > at FROM tz_events WHERE id = 1"),
        ("literal_casts", "SELECT '2024-06-01 12:00'::timestamptz, '2024-06-01 12:00+09'::timestamptz, "
         "'2024-06-01 12:00'::timestamp"),
    ]
    for name, sql in calls:
        t.step(f"q_{name}", lambda sql=sql: query(conn, sql))
    t.step(
        "q_parameter_range",
        lambda: rows(
            conn,
            "SELECT id FROM tz_events WHERE at >= %s AND at < %s ORDER BY id",
            (datetime.datetime(2024, 5, 1, 0, 0, tzinfo=BERLIN), datetime.datetime(2024, 7, 1, tzinfo=datetime.timezone.utc)),
        ),
    )
    t.step(
        "q_update",
        lambda: query(conn, "UPDATE tz_events SET at = '2024-01-01 00:00' WHERE id = 7 RETURNING id, at"),
    )
    for zone in ["UTC", "Asia/Kolkata", "America/New_York"]:
        def in_zone(zone=zone):
            conn.execute(f"SET TIME ZONE '{zone}'")
            return {"rows": rows(conn, "SELECT id, at, at::text FROM tz_events WHERE id IN (1, 3, 12) ORDER BY id"),
                    "status": conn.info.parameter_status("TimeZone")}

        t.step(f"q_read_in_{zone}", in_zone)
    conn.execute("SET TIME ZONE 'Europe/Berlin'")


def copy(conn, t):
    def copy_in():
        data = "20\t2024-08-01 09:00:00\tcopy berlin\n21\t2024-08-01 09:00:00+00\tcopy utc\n22\t\\N\tnull\n"
        try:
            with conn.cursor() as cur:
                with cur.copy("COPY tz_events (id, at, note) FROM STDIN") as cp:
                    cp.write(data)
            return "copied"
        except psycopg.Error as error:
            return {"error": error.sqlstate}

    t.step("copy_in_text", copy_in)
    t.step("copy_in_read", lambda: rows(conn, "SELECT id, at FROM tz_events WHERE id >= 20 ORDER BY id"))

    def copy_out(sql):
        out = io.StringIO()
        with conn.cursor() as cur:
            with cur.copy(sql) as cp:
                for chunk in cp:
                    out.write(bytes(chunk).decode())
        return out.getvalue()

    t.step("copy_out_text", lambda: copy_out("COPY (SELECT id, at FROM tz_events WHERE id IN (1, 3) ORDER BY id) TO STDOUT"))
    def copy_out_binary():
        with conn.cursor() as cur:
            with cur.copy(
                "COPY (SELECT id, at FROM tz_events WHERE id IN (1, 3, 21) ORDER BY id) TO STDOUT (FORMAT binary)"
            ) as cp:
                cp.set_types(["int4", "timestamptz"])
                return list(cp.rows())

    t.step("copy_out_binary", copy_out_binary)
    t.step("copy_out_csv", lambda: copy_out(
        "COPY (SELECT id, at FROM tz_events WHERE id IN (11, 21) ORDER BY id) TO STDOUT WITH (FORMAT csv)"))


def naive_times(conn, t):
    naive = datetime.datetime(2024, 1, 1, 10, 0)
    t.step("naive_create", lambda: query(conn, "CREATE TABLE tz_naive (id INT PRIMARY KEY, at TIMESTAMPTZ)")["rowcount"])
    t.step("naive_parameter", lambda: query(conn, "INSERT INTO tz_naive VALUES (%s, %s)", (1, naive))["rowcount"])
    t.step(
        "naive_parameter_binary",
        lambda: query(conn, "INSERT INTO tz_naive VALUES (%s, %s)", (2, naive), binary=True)["rowcount"],
    )
    t.step("naive_literal", lambda: query(conn, "INSERT INTO tz_naive VALUES (3, TIMESTAMP '2024-01-01 10:00')")["rowcount"])
    t.step(
        "naive_select",
        lambda: query(conn, "INSERT INTO tz_naive SELECT 4, TIMESTAMP '2024-01-01 10:00'")["rowcount"],
    )
    t.step("naive_now", lambda: query(conn, "INSERT INTO tz_naive VALUES (5, now())")["rowcount"])
    t.step(
        "naive_update",
        lambda: query(conn, "UPDATE tz_naive SET at = TIMESTAMP '2024-01-01 10:00' WHERE id = 5")["rowcount"],
    )
    t.step("naive_read", lambda: rows(conn, "SELECT id, at::text FROM tz_naive ORDER BY id"))
    t.step("naive_compare_parameter", lambda: rows(conn, "SELECT id FROM tz_naive WHERE at = %s ORDER BY id", (naive,)))
    t.step(
        "naive_compare_literal",
        lambda: rows(conn, "SELECT id FROM tz_naive WHERE at = TIMESTAMP '2024-01-01 10:00' ORDER BY id"),
    )


def errors(conn, t):
    t.step("error_literal", lambda: rows(conn, "SELECT 'not a time'::timestamptz"))
    t.step("error_insert", lambda: rows(conn, "INSERT INTO tz_events (id, at) VALUES (30, 'soon')"))
    t.step("nothing_written", lambda: rows(conn, "SELECT count(*) FROM tz_events WHERE id = 30"))


def connect_in_zone(args, t):
    def connect():
        with psycopg.connect(
            host=args.host, port=args.port, user=args.user, dbname=args.dbname, autocommit=True,
            options="-c TimeZone=Asia/Kolkata",
        ) as conn:
            first = {"zone": show_zone(conn), "rows": rows(conn, "SELECT id, at FROM tz_events WHERE id = 1")}
            conn.execute("SET TIME ZONE 'UTC'")
            conn.execute("RESET TIME ZONE")
            first["after_reset"] = show_zone(conn)
            conn.execute("SET TIME ZONE 'UTC'")
            conn.execute("RESET ALL")
            first["after_reset_all"] = show_zone(conn)
            return first

    t.step("connect_with_zone", connect)


async def asyncpg_timestamptz(args, t):
    conn = await asyncpg.connect(
        host=args.host, port=args.port, user=args.user, database=args.dbname,
        server_settings={"TimeZone": "Europe/Berlin"},
    )
    try:
        record = t.step_async
        await record("asyncpg_fetch", lambda: conn.fetch("SELECT id, at FROM tz_events WHERE id IN (1, 3, 13) ORDER BY id"))
        await record(
            "asyncpg_insert",
            lambda: conn.execute(
                "INSERT INTO tz_events (id, at, note) VALUES ($1, $2, $3)",
                40, datetime.datetime(2024, 9, 9, 9, 9, 9, 90909, tzinfo=ZoneInfo("Australia/Sydney")), "asyncpg",
            ),
        )
        await record("asyncpg_read_back", lambda: conn.fetchrow("SELECT at, at::text FROM tz_events WHERE id = 40"))
        await record(
            "asyncpg_range",
            lambda: conn.fetch(
                "SELECT id FROM tz_events WHERE at > $1 ORDER BY id",
                datetime.datetime(2024, 7, 1, 10, 0, tzinfo=datetime.timezone.utc),
            ),
        )
        await record("asyncpg_now_type", lambda: conn.fetchval("SELECT pg_typeof(now())::text"))
    finally:
        await conn.close()


def sqlalchemy_timestamptz(args, t):
    url = f"postgresql+psycopg://{args.user}@{args.host}:{args.port}/{args.dbname}"
    engine = create_engine(url, connect_args={"options": "-c TimeZone=Europe/Berlin"})
    meta = MetaData()
    orm = Table(
        "tz_orm",
        meta,
        Column("id", Integer, primary_key=True),
        Column("created", DateTime(timezone=True), nullable=False),
    )
    t.step("sa_create", lambda: meta.create_all(engine) or "created")
    try:
        def insert():
            with engine.begin() as c:
                c.execute(
                    orm.insert(),
                    [
                        {"id": 1, "created": datetime.datetime(2024, 1, 1, 12, tzinfo=datetime.timezone.utc)},
                        {"id": 2, "created": datetime.datetime(2024, 6, 1, 12, tzinfo=BERLIN)},
                        {"id": 3, "created": datetime.datetime(2024, 6, 1, 12, tzinfo=ZoneInfo("America/Chicago"))},
                    ],
                )
            return "inserted"

        t.step("sa_insert", insert)

        def run_select(stmt):
            with engine.connect() as c:
                return [tuple(r) for r in c.execute(stmt)]

        t.step("sa_read", lambda: run_select(select(orm.c.id, orm.c.created).order_by(orm.c.id)))
        t.step(
            "sa_range",
            lambda: run_select(
                select(orm.c.id)
                .where(orm.c.created >= datetime.datetime(2024, 6, 1, 11, tzinfo=datetime.timezone.utc))
                .order_by(orm.c.id)
            ),
        )
        t.step(
            "sa_reflect",
            lambda: [
                (c["name"], type(c["type"]).__name__, getattr(c["type"], "timezone", None))
                for c in inspect(engine).get_columns("tz_orm")
            ],
        )
    finally:
        engine.dispose()


def main(args, t):
    conn = t.step("connect", lambda: psycopg_connect(args))
    if conn is None:
        return
    with conn:
        session(conn, t)
        schema(conn, t)
        values(conn, t)
        queries(conn, t)
        copy(conn, t)
        naive_times(conn, t)
        errors(conn, t)
    connect_in_zone(args, t)
    asyncio.run(asyncpg_timestamptz(args, t))
    sqlalchemy_timestamptz(args, t)


run(main)
