"""Generated columns and indexes on expressions as applications declare and use them: SQLAlchemy
models with `Computed(..., persisted=True)` (one leading the primary key) and `Index(...,
func.lower(...))`, the ORM reading computed values back, psycopg statements that try to write
a generated column, and the catalog reflection tools read.

Run against PostgreSQL 15 and against `rowdex serve`; the two transcripts are compared line by
line (see transcript.py). Topics, in the order they run:

- schema: `MetaData.create_all` of a table with a generated column and an index on
  `lower(email)`, and of a table keyed by a generated `reverse(uid)`; `ALTER TABLE ... ADD
  COLUMN ... GENERATED` over stored rows.
- orm: objects added and flushed (the ORM fetches the computed values back with RETURNING), an
  attribute changed and refreshed, a lookup by the expression through the index.
- writes: an INSERT and an UPDATE naming the generated column (SQLSTATE 428C9), `SET g =
  DEFAULT`, a NULL computed into the generated key (23502), a duplicate of a unique expression
  (23505), ON CONFLICT on the generated key.
- reflection: `inspect(engine).get_columns` (which columns are computed, and stored),
  `get_indexes` (the expression, its name and uniqueness), `pg_attribute.attgenerated`,
  `pg_get_expr` of the generation expression, `information_schema.columns.is_generated` /
  `generation_expression` and `pg_get_indexdef`.

Every table is dropped at the start, so running the scenario twice gives the same transcript.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from transcript import run  # noqa: E402

import psycopg  # noqa: E402
from sqlalchemy import (  # noqa: E402
    Column,
    Computed,
    Index,
    Integer,
    Text,
    create_engine,
    func,
    inspect,
    select,
)
from sqlalchemy.orm import DeclarativeBase, Session  # noqa: E402

TABLES = ["gc_account", "gc_user"]


class Base(DeclarativeBase):
    pass


class Account(Base):
    __tablename__ = "gc_account"
    id = Column(Integer, primary_key=True, autoincrement=False)
    email = Column(Text, nullable=False)
    points = Column(Integer)
    email_lower = Column(Text, Computed("lower(email)", persisted=True))
    doubled = Column(Integer, Computed("points * 2", persisted=True))
    __table_args__ = (
        Index("gc_account_lower", func.lower(email)),
        Index("gc_account_sum", (points + id)),
    )


class User(Base):
    __tablename__ = "gc_user"
    rid = Column(Text, Computed("reverse(uid)", persisted=True), primary_key=True)
    uid = Column(Text, nullable=False)
    name = Column(Text)


def connect(args):
    return psycopg.connect(
        host=args.host, port=args.port, user=args.user, dbname=args.dbname, autocommit=True
    )


def rows(conn, sql, params=None):
    cur = conn.execute(sql, params)
    return cur.fetchall() if cur.description else cur.rowcount


def schema(args, conn, t):
    for table in TABLES:
        conn.execute(f"DROP TABLE IF EXISTS {table} CASCADE")
    url = f"postgresql+psycopg://{args.user}@{args.host}:{args.port}/{args.dbname}"
    engine = create_engine(url)
    t.step("create_all", lambda: Base.metadata.create_all(engine) or "created")
    return engine


def orm(engine, conn, t):
    def add():
        with Session(engine) as session:
            accounts = [
                Account(id=1, email="Ann@Example.com", points=10),
                Account(id=2, email="BOB@example.COM", points=None),
                Account(id=3, email="cy@Example.com", points=7),
            ]
            session.add_all(accounts)
            session.add_all([User(uid="u1001", name="first"), User(uid="u2002", name="second")])
            session.commit()
            return [(a.id, a.email_lower, a.doubled) for a in accounts]

    t.step("orm_add_reads_computed", add)

    def change():
        with Session(engine) as session:
            account = session.get(Account, 1)
            account.email = "ANN.New@Example.com"
            account.points = 21
            session.commit()
            session.refresh(account)
            return account.email_lower, account.doubled

    t.step("orm_update_recomputes", change)

    def by_expression():
        with Session(engine) as session:
            found = session.scalars(
                select(Account.id).where(func.lower(Account.email) == "bob@example.com")
            ).all()
            return list(found)

    t.step("orm_select_by_expression", by_expression)

    def by_source():
        with Session(engine) as session:
            found = session.scalars(select(User.rid).where(User.uid == "u2002")).all()
            return list(found)

    t.step("orm_select_by_source", by_source)


def writes(conn, t):
    t.step(
        "insert_generated",
        lambda: rows(conn, "INSERT INTO gc_account (id, email, email_lower) VALUES (9, 'x', 'x')"),
    )
    t.step(
        "update_generated",
        lambda: rows(conn, "UPDATE gc_account SET doubled = 5 WHERE id = 3"),
    )
    t.step(
        "update_to_default",
        lambda: rows(conn, "UPDATE gc_account SET doubled = DEFAULT, points = 8 WHERE id = 3"),
    )
    t.step(
        "returning_computed",
        lambda: rows(
            conn,
            "INSERT INTO gc_account (id, email, points) VALUES (4, 'Dee@X', 1) "
            "RETURNING id, email_lower, doubled",
        ),
    )
    t.step(
        "param_insert",
        lambda: rows(
            conn,
            "INSERT INTO gc_user (uid, name) VALUES (%s, %s) RETURNING rid",
            ("abc", "param"),
        ),
    )
    t.step(
        "null_generated_key",
        lambda: rows(conn, "INSERT INTO gc_user (uid, name) VALUES (NULL, 'nobody')"),
    )
    t.step(
        "duplicate_generated_key",
        lambda: rows(conn, "INSERT INTO gc_user (uid, name) VALUES ('u1001', 'again')"),
    )
    t.step(
        "on_conflict_generated_key",
        lambda: rows(
            conn,
            "INSERT INTO gc_user (uid, name) VALUES ('u1001', 'merged') "
            "ON CONFLICT (rid) DO UPDATE SET name = excluded.name RETURNING rid, uid, name",
        ),
    )
    rows(conn, "CREATE UNIQUE INDEX gc_user_upper ON gc_user (upper(name))")
    t.step(
        "unique_expression",
        lambda: rows(conn, "INSERT INTO gc_user (uid, name) VALUES ('u3003', 'MERGED')"),
    )
    t.step(
        "add_generated_column",
        lambda: rows(
            conn,
            "ALTER TABLE gc_user ADD COLUMN name_len INTEGER GENERATED ALWAYS AS (length(name)) STORED",
        ),
    )
    t.step("after_add", lambda: rows(conn, "SELECT uid, name, name_len FROM gc_user ORDER BY uid"))
    t.step(
        "accounts_after",
        lambda: rows(conn, "SELECT id, email, points, email_lower, doubled FROM gc_account ORDER BY id"),
    )


def reflection(engine, conn, t):
    inspector = inspect(engine)
    for table in TABLES:
        t.step(
            f"get_columns_{table}",
            lambda table=table: [
                (c["name"], c["nullable"], c.get("computed", {}).get("persisted"))
                for c in inspector.get_columns(table)
            ],
        )
        t.step(
            f"get_indexes_{table}",
            lambda table=table: sorted(
                (i["name"], i["unique"], i["column_names"], i.get("expressions"))
                for i in inspector.get_indexes(table)
            ),
        )
    t.step(
        "attgenerated",
        lambda: rows(
            conn,
            "SELECT a.attname, a.attgenerated, pg_get_expr(d.adbin, d.adrelid) FROM pg_attribute a "
            "LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum "
            "WHERE a.attrelid = 'gc_account'::regclass AND a.attnum > 0 ORDER BY a.attnum",
        ),
    )
    t.step(
        "information_schema",
        lambda: rows(
            conn,
            "SELECT table_name, column_name, is_generated, generation_expression "
            "FROM information_schema.columns WHERE table_name LIKE 'gc%' "
            "ORDER BY table_name, ordinal_position",
        ),
    )
    t.step(
        "indexdef",
        lambda: rows(
            conn,
            "SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i "
            "WHERE i.indrelid = 'gc_account'::regclass AND NOT i.indisprimary ORDER BY 1",
        ),
    )
    t.step("drop_expression_index", lambda: rows(conn, "DROP INDEX gc_account_lower"))
    t.step(
        "after_drop",
        lambda: rows(conn, "SELECT id FROM gc_account WHERE lower(email) = 'dee@x'"),
    )


def main(args, t):
    conn = t.step("connect", lambda: connect(args))
    if conn is None:
        return
    with conn:
        engine = schema(args, conn, t)
        orm(engine, conn, t)
        writes(conn, t)
        reflection(engine, conn, t)
        engine.dispose()


run(main)
