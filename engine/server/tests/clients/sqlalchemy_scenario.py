"""SQLAlchemy 2 (psycopg 3 driver) against the server: what an application and its tools do.

Each topic is a small function; every step's value is deterministic (ORDER BY everywhere,
reflection results sorted, no OIDs or version strings), so the PostgreSQL 15 and rowdex
transcripts can be compared line by line.

- engine: `create_engine` with default settings (the dialect's initialisation queries run on the
  first connect), `select 1`.
- schema: `MetaData.create_all` of three tables: `sa_users` (the one SERIAL primary key, mapped
  by the ORM, a unique index and a server default), `sa_items` (explicit ids, an index=True
  column, a unique index, a composite index, a unique constraint) and `sa_events` (explicit
  BIGINT ids, the other column types: bytea, timestamp, double, boolean, text).
- core: inserts (single, executemany), selects with where/order_by/limit/offset, aggregates,
  update and delete with their rowcounts, `insert().returning(...)` single and executemany
  (insertmanyvalues with sort_by_parameter_order).
- orm: declarative classes, Session add/add_all/commit, `session.get`, `filter_by` on an indexed
  column, the legacy `session.query`, update by attribute change + commit, delete, a failed flush
  (duplicate primary key, its SQLSTATE) rolled back and the session usable after.
- reflection: `inspect(engine)`: has_table, get_table_names, get_columns, get_pk_constraint,
  get_indexes, get_unique_constraints, get_foreign_keys, get_check_constraints,
  get_table_comment, and `Table(..., autoload_with=engine)` used for a query.
- pandas: `DataFrame.to_sql` (if_exists="replace", index=False; int, float with a NaN, str, bool,
  datetime columns) twice, `pd.read_sql` of a query and `pd.read_sql_table`, compared with the
  frame written.
- text: `text()` queries with bound parameters, typed and expanding (IN) parameters, a text
  insert.
"""

import datetime
import decimal
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from transcript import run  # noqa: E402

import pandas as pd  # noqa: E402
from sqlalchemy import (  # noqa: E402
    BigInteger,
    Boolean,
    Column,
    Date,
    DateTime,
    Float,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    Numeric,
    SmallInteger,
    String,
    Table,
    Text,
    UniqueConstraint,
    bindparam,
    create_engine,
    delete,
    func,
    insert,
    inspect,
    select,
    text,
    update,
)
from sqlalchemy.exc import IntegrityError  # noqa: E402
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column  # noqa: E402

TABLES = ["sa_users", "sa_items", "sa_events", "sa_frame"]


# --- schema -------------------------------------------------------------------------------------


class Base(DeclarativeBase):
    pass


class User(Base):
    """The ORM's table: the one autoincrement (SERIAL) primary key of the scenario."""

    __tablename__ = "sa_users"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    username: Mapped[str] = mapped_column(String(40), index=True, unique=True)
    email: Mapped[str | None] = mapped_column(String(100))
    age: Mapped[int | None] = mapped_column(SmallInteger)
    balance: Mapped[decimal.Decimal | None] = mapped_column(Numeric(12, 2))
    active: Mapped[bool] = mapped_column(Boolean, server_default=text("true"))
    created: Mapped[datetime.datetime | None] = mapped_column(DateTime)

    def as_dict(self):
        return {
            "id": self.id,
            "username": self.username,
            "email": self.email,
            "age": self.age,
            "balance": self.balance,
            "active": self.active,
            "created": self.created,
        }


metadata = Base.metadata

items = Table(
    "sa_items",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("name", String(50), nullable=False, index=True),
    Column("sku", String(20)),
    Column("category", String(20), nullable=False),
    Column("price", Numeric(10, 2)),
    Column("qty", Integer, server_default=text("0")),
    Column("added", Date),
    Column("note", Text),
    UniqueConstraint("category", "name", name="uq_sa_items_category_name"),
    Index("ux_sa_items_sku", "sku", unique=True),
    Index("ix_sa_items_category_price", "category", "price"),
)

events = Table(
    "sa_events",
    metadata,
    Column("id", BigInteger, primary_key=True, autoincrement=False),
    Column("kind", String(20), nullable=False, server_default="note"),
    Column("payload", LargeBinary),
    Column("happened", DateTime),
    Column("score", Float),
    Column("flag", Boolean),
    Column("body", Text),
)

users = User.__table__


def url(args):
    return f"postgresql+psycopg://{args.user}@{args.host}:{args.port}/{args.dbname}"


def rows(result):
    return [list(row) for row in result]


# --- topics -------------------------------------------------------------------------------------


def engine_connect(args, t):
    engine = create_engine(url(args))

    def select_one():
        with engine.connect() as conn:
            return conn.execute(text("select 1")).scalar_one()

    t.step("engine connect select 1", select_one)
    t.step("dialect server_version_info is a tuple",
           lambda: isinstance(engine.dialect.server_version_info, tuple))
    return engine


def drop_tables(engine, t):
    def drop():
        with engine.begin() as conn:
            for name in TABLES:
                conn.execute(text(f"DROP TABLE IF EXISTS {name}"))
        return TABLES

    t.step("drop tables", drop)


def create_schema(engine, t):
    t.step("metadata create_all", lambda: metadata.create_all(engine) or sorted(metadata.tables))
    t.step("create_all again (checkfirst)",
           lambda: metadata.create_all(engine) or "no-op")


def core(engine, t):
    with engine.connect() as conn:
        t.step("core insert single", lambda: _insert_single(conn))
        t.step("core insert executemany", lambda: conn.execution_options(
            preserve_rowcount=True).execute(insert(items), [
            {"id": 2, "name": "bolt", "sku": "B-2", "category": "hardware",
             "price": decimal.Decimal("0.25"), "qty": 500, "added": datetime.date(2024, 1, 3)},
            {"id": 3, "name": "nut", "sku": "N-3", "category": "hardware",
             "price": decimal.Decimal("0.10"), "qty": 800, "added": datetime.date(2024, 1, 3)},
            {"id": 4, "name": "hammer", "sku": "H-4", "category": "tools",
             "price": decimal.Decimal("12.50"), "qty": 7, "added": datetime.date(2024, 2, 1)},
            {"id": 5, "name": "saw", "sku": None, "category": "tools",
             "price": decimal.Decimal("24.00"), "qty": 3, "added": None, "note": "no sku"},
            {"id": 6, "name": "glue", "sku": "G-6", "category": "supplies",
             "price": None, "qty": 40, "added": datetime.date(2024, 3, 9)},
        ]).rowcount)
        t.step("core commit", lambda: conn.commit() or "committed")

        t.step("core select all ordered",
               lambda: rows(conn.execute(select(items).order_by(items.c.id))))
        t.step("core select where order_by limit", lambda: rows(conn.execute(
            select(items.c.id, items.c.name, items.c.price)
            .where(items.c.category == "hardware")
            .order_by(items.c.price.desc(), items.c.id)
            .limit(2))))
        t.step("core select limit offset", lambda: rows(conn.execute(
            select(items.c.name).order_by(items.c.name).limit(2).offset(1))))
        t.step("core select in/like/is null", lambda: rows(conn.execute(
            select(items.c.id)
            .where(items.c.id.in_([1, 3, 5, 6]))
            .where(items.c.name.like("%a%") | items.c.price.is_(None))
            .order_by(items.c.id))))
        t.step("core aggregate group_by", lambda: rows(conn.execute(
            select(items.c.category, func.count(), func.sum(items.c.qty), func.max(items.c.price))
            .group_by(items.c.category)
            .order_by(items.c.category))))
        t.step("core server default applied", lambda: conn.execute(
            select(items.c.qty).where(items.c.id == 1)).scalar_one())
        t.step("core unique violation", lambda: conn.execute(
            insert(items).values(id=7, name="other", sku="W-1", category="misc")))
        t.step("core rollback after error", lambda: conn.rollback() or "rolled back")

        t.step("core update rowcount", lambda: conn.execute(
            update(items).where(items.c.category == "hardware")
            .values(qty=items.c.qty + 1)).rowcount)
        t.step("core update none matched", lambda: conn.execute(
            update(items).where(items.c.id == 999).values(qty=0)).rowcount)
        t.step("core delete rowcount", lambda: conn.execute(
            delete(items).where(items.c.price.is_(None))).rowcount)
        t.step("core commit after dml", lambda: conn.commit() or "committed")
        t.step("core state after dml", lambda: rows(conn.execute(
            select(items.c.id, items.c.qty).order_by(items.c.id))))

        t.step("core insert returning", lambda: rows(conn.execute(
            insert(events).returning(events.c.id, events.c.kind, events.c.happened),
            {"id": 10, "payload": b"\x00\x01\xff", "happened": datetime.datetime(2024, 5, 1, 12, 30, 15, 250000),
             "score": 1.5, "flag": True, "body": "first"})))
        t.step("core insert returning executemany sorted", lambda: rows(conn.execute(
            insert(events).returning(events.c.id, events.c.score, sort_by_parameter_order=True),
            [{"id": 12, "kind": "alert", "score": -2.25, "flag": False, "payload": b"\x7f"},
             {"id": 11, "kind": "alert", "score": 1e-3, "flag": None, "payload": None},
             {"id": 13, "kind": "note", "score": None, "flag": True, "payload": b""}])))
        t.step("core serial insert returning", lambda: rows(conn.execute(
            insert(users).returning(users.c.id, users.c.username, users.c.active),
            {"username": "core-user", "age": 30})))
        t.step("core inserted_primary_key", lambda: list(conn.execute(
            insert(users).values(username="core-user-2")).inserted_primary_key))
        t.step("core events roundtrip",
               lambda: rows(conn.execute(select(events).order_by(events.c.id))))
        t.step("core commit returning", lambda: conn.commit() or "committed")


def _insert_single(conn):
    result = conn.execution_options(preserve_rowcount=True).execute(insert(items).values(
        id=1, name="widget", sku="W-1", category="misc", price=decimal.Decimal("3.99"),
        added=datetime.date(2024, 1, 2), note="the first"))
    return {"rowcount": result.rowcount, "inserted_primary_key": list(result.inserted_primary_key)}


def orm(engine, t):
    with Session(engine) as session:
        def add_one():
            user = User(username="alice", email="alice@example.com", age=31,
                        balance=decimal.Decimal("100.50"),
                        created=datetime.datetime(2024, 1, 1, 9, 0, 0))
            session.add(user)
            session.commit()
            return user.as_dict()

        t.step("orm add commit", add_one)

        def add_all():
            batch = [
                User(username="bob", email=None, age=25, balance=decimal.Decimal("0")),
                User(username="carol", email="carol@example.com", age=47, active=False),
                User(username="dave", age=None, balance=decimal.Decimal("-5.25")),
            ]
            session.add_all(batch)
            session.commit()
            return [user.as_dict() for user in batch]

        t.step("orm add_all commit", add_all)

        def add_all_batch():
            # Same columns for each: one INSERT ... SELECT FROM (VALUES ...) ORDER BY sen_counter
            # RETURNING (insertmanyvalues), whose returned ids must come back in parameter order.
            batch = [User(username=f"batch-{n}", age=60 + n, balance=decimal.Decimal(n))
                     for n in range(4)]
            session.add_all(batch)
            session.commit()
            return [(user.id, user.username, user.active) for user in batch]

        t.step("orm add_all batch commit", add_all_batch)

        first_id = session.scalars(select(User.id).where(User.username == "alice")).one()
        t.step("orm session.get", lambda: session.get(User, first_id).as_dict())
        t.step("orm session.get missing", lambda: session.get(User, 10_000))
        t.step("orm filter_by indexed column", lambda: [
            user.as_dict() for user in session.scalars(select(User).filter_by(username="carol"))])
        t.step("orm select where order_by", lambda: [
            user.username for user in session.scalars(
                select(User).where(User.age > 20).order_by(User.age.desc()))])
        t.step("orm legacy query", lambda: [
            (user.id, user.username)
            for user in session.query(User).filter(User.active.is_(True)).order_by(User.id).all()])
        t.step("orm count", lambda: session.scalar(select(func.count()).select_from(User)))

        def change_attribute():
            bob = session.scalars(select(User).filter_by(username="bob")).one()
            bob.email = "bob@example.com"
            bob.balance = decimal.Decimal("12.34")
            session.commit()
            session.expire_all()
            return session.scalars(select(User).filter_by(username="bob")).one().as_dict()

        t.step("orm update by attribute", change_attribute)

        def delete_one():
            dave = session.scalars(select(User).filter_by(username="dave")).one()
            session.delete(dave)
            session.commit()
            return session.scalars(select(User.username).order_by(User.id)).all()

        t.step("orm delete", delete_one)

        def duplicate_pk():
            session.add(User(id=first_id, username="impostor"))
            session.flush()

        t.step("orm flush duplicate primary key", duplicate_pk)
        t.step("orm session needs rollback",
               lambda: session.is_active is False or "active")
        t.step("orm rollback", lambda: session.rollback() or "rolled back")
        t.step("orm usable after rollback", lambda: session.scalars(
            select(User.username).order_by(User.id)).all())

        def duplicate_unique():
            try:
                session.add(User(username="alice"))
                session.commit()
            except IntegrityError:
                session.rollback()
                raise

        t.step("orm commit duplicate unique", duplicate_unique)
        t.step("orm usable after second rollback",
               lambda: session.scalar(select(func.count()).select_from(User)))


def reflection(engine, t):
    inspector = inspect(engine)
    t.step("reflect has_table sa_items", lambda: inspector.has_table("sa_items"))
    t.step("reflect has_table missing", lambda: inspector.has_table("sa_missing"))
    t.step("reflect get_table_names", lambda: sorted(
        name for name in inspector.get_table_names() if name.startswith("sa_")))
    t.step("reflect get_view_names", lambda: sorted(
        name for name in inspector.get_view_names() if name.startswith("sa_")))
    for table in ["sa_users", "sa_items", "sa_events"]:
        t.step(f"reflect get_columns {table}", lambda table=table: [
            {
                "name": column["name"],
                "type": str(column["type"]),
                "nullable": column["nullable"],
                "default": column["default"],
                "autoincrement": column.get("autoincrement"),
                "comment": column.get("comment"),
            }
            for column in inspector.get_columns(table)])
        t.step(f"reflect get_pk_constraint {table}",
               lambda table=table: inspector.get_pk_constraint(table))
        t.step(f"reflect get_indexes {table}", lambda table=table: sorted(
            inspector.get_indexes(table), key=lambda index: index["name"]))
        t.step(f"reflect get_unique_constraints {table}", lambda table=table: sorted(
            inspector.get_unique_constraints(table), key=lambda constraint: constraint["name"]))
        t.step(f"reflect get_foreign_keys {table}",
               lambda table=table: inspector.get_foreign_keys(table))
        t.step(f"reflect get_check_constraints {table}",
               lambda table=table: inspector.get_check_constraints(table))
        t.step(f"reflect get_table_comment {table}",
               lambda table=table: inspector.get_table_comment(table))
    t.step("reflect get_columns missing table", lambda: inspector.get_columns("sa_missing"))

    def autoload():
        table = Table("sa_items", MetaData(), autoload_with=engine)
        return {
            "columns": [(c.name, str(c.type), c.nullable, c.primary_key) for c in table.columns],
            "primary_key": [c.name for c in table.primary_key.columns],
            "indexes": sorted((i.name, i.unique, [c.name for c in i.columns])
                              for i in table.indexes),
            "unique_constraints": sorted(
                (c.name, [col.name for col in c.columns]) for c in table.constraints
                if isinstance(c, UniqueConstraint)),
        }

    t.step("reflect Table autoload_with", autoload)

    def autoload_query():
        table = Table("sa_items", MetaData(), autoload_with=engine)
        with engine.connect() as conn:
            return rows(conn.execute(
                select(table.c.id, table.c.name).where(table.c.qty > 5).order_by(table.c.id)))

    t.step("reflect autoloaded table query", autoload_query)

    def reflect_all():
        reflected = MetaData()
        reflected.reflect(engine, only=["sa_users", "sa_items", "sa_events"])
        return {name: [c.name for c in table.columns]
                for name, table in sorted(reflected.tables.items())}

    t.step("reflect MetaData.reflect", reflect_all)


def frame_records(frame):
    return frame.to_dict(orient="records")


def frame_difference(left, right):
    """How two frames differ (values, dtypes, columns), or "" when they are the same."""
    try:
        pd.testing.assert_frame_equal(left, right)
    except AssertionError as error:
        return str(error)
    return ""


def count_frame_rows(engine):
    return pd.read_sql("SELECT count(*) AS n FROM sa_frame", engine)["n"].tolist()


def pandas_io(engine, t):
    """pandas creates sa_frame itself, without a primary key (rowdex gives it hidden row ids)."""
    frame = pd.DataFrame({
        "id": [1, 2, 3, 4],
        "ratio": [0.5, float("nan"), -1.25, 3.0],
        "label": ["one", "two", "three", "four"],
        "flag": [True, False, True, False],
        "at": pd.to_datetime(["2024-01-01 00:00:00", "2024-02-29 12:34:56",
                              "1999-12-31 23:59:59.5", "2030-06-15 08:00:00"],
                             format="ISO8601"),
    })
    t.step("pandas to_sql create", lambda: frame.to_sql(
        "sa_frame", engine, if_exists="replace", index=False))
    t.step("pandas to_sql append", lambda: frame.to_sql(
        "sa_frame", engine, if_exists="append", index=False))
    t.step("pandas row count after append", lambda: count_frame_rows(engine))
    t.step("pandas to_sql replace", lambda: frame.to_sql(
        "sa_frame", engine, if_exists="replace", index=False))
    t.step("pandas row count after replace", lambda: count_frame_rows(engine))
    t.step("pandas to_sql column types", lambda: [
        (column["name"], str(column["type"]), column["nullable"])
        for column in inspect(engine).get_columns("sa_frame")])

    query = pd.read_sql("SELECT id, ratio, label, flag, at FROM sa_frame ORDER BY id", engine)
    t.step("pandas read_sql dtypes", lambda: {k: str(v) for k, v in query.dtypes.items()})
    t.step("pandas read_sql records", lambda: frame_records(query))
    t.check("pandas read_sql equals frame", not frame_difference(query, frame),
            frame_difference(query, frame))

    table = pd.read_sql_table("sa_frame", engine).sort_values("id").reset_index(drop=True)
    t.step("pandas read_sql_table records", lambda: frame_records(table))
    t.check("pandas read_sql_table equals frame", not frame_difference(table, frame),
            frame_difference(table, frame))

    t.step("pandas read_sql with params", lambda: frame_records(pd.read_sql(
        text("SELECT id, label FROM sa_frame WHERE flag = :flag ORDER BY id"),
        engine, params={"flag": True})))


def text_queries(engine, t):
    with engine.connect() as conn:
        t.step("text bound params", lambda: rows(conn.execute(
            text("SELECT id, name, price FROM sa_items "
                 "WHERE category = :cat AND price > :low ORDER BY id"),
            {"cat": "hardware", "low": decimal.Decimal("0.10")})))
        t.step("text typed bindparam", lambda: rows(conn.execute(
            text("SELECT :d AS d, :n AS n, :s AS s").bindparams(
                bindparam("d", type_=Date), bindparam("n", type_=Integer),
                bindparam("s", type_=String)),
            {"d": datetime.date(2024, 2, 29), "n": 42, "s": "hé"})))
        t.step("text expanding IN", lambda: rows(conn.execute(
            text("SELECT id FROM sa_items WHERE id IN :ids ORDER BY id").bindparams(
                bindparam("ids", expanding=True)),
            {"ids": [1, 3, 4, 100]})))
        t.step("text insert rowcount", lambda: conn.execution_options(
            preserve_rowcount=True).execute(
            text("INSERT INTO sa_events (id, kind, score) VALUES (:id, :kind, :score)"),
            [{"id": 20, "kind": "text", "score": 0.0}, {"id": 21, "kind": "text", "score": 2.0}],
        ).rowcount)
        t.step("text scalar and mappings", lambda: {
            "count": conn.execute(text("SELECT count(*) FROM sa_events WHERE kind = :k"),
                                  {"k": "text"}).scalar_one(),
            "mappings": [dict(m) for m in conn.execute(
                text("SELECT id, kind FROM sa_events WHERE id >= :low ORDER BY id"),
                {"low": 20}).mappings()],
        })
        t.step("text syntax error", lambda: conn.execute(text("SELEC 1")))
        t.step("text rollback", lambda: conn.rollback() or "rolled back")
        t.step("text insert rolled back", lambda: conn.execute(
            text("SELECT count(*) FROM sa_events WHERE kind = 'text'")).scalar_one())


def main(args, t):
    engine = engine_connect(args, t)
    drop_tables(engine, t)
    create_schema(engine, t)
    core(engine, t)
    orm(engine, t)
    reflection(engine, t)
    pandas_io(engine, t)
    text_queries(engine, t)
    engine.dispose()


if __name__ == "__main__":
    run(main)
