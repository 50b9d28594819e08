"""Alembic against the server: a migration run through Alembic's programmatic API (no alembic.ini,
no versions directory), the version table as `alembic upgrade` keeps it, and autogenerate's
comparison of a MetaData with the database.

Each topic is a small function; every step's value is deterministic (reflection sorted, rows
ordered), so the PostgreSQL 15 and rowdex transcripts can be compared line by line.

- revision 1, one transaction (`engine.begin()`, as `alembic upgrade` runs a migration):
  op.create_table (al_accounts, al_legacy), op.add_column (nullable, NOT NULL with a server
  default), op.create_index (unique, composite, single), op.bulk_insert, the schema reflected
  after each operation inside the transaction; then the alembic_version table created and
  stamped as Alembic does it, and `MigrationContext.get_current_revision()`.
- a migration that fails half-way: its op.create_table is rolled back with it (transactional DDL).
- revision 2, one transaction per operation: op.alter_column setting NOT NULL (valid, then
  violated by a NULL: its SQLSTATE), renaming a column, changing a type, changing a server
  default; the version row updated.
- revision 3, one transaction: op.drop_index, op.drop_column, the version row updated.
- autogenerate: `compare_metadata` of a MetaData matching the database (no diffs) and of one
  that differs in every way it can here (tables, columns, nullability, types, defaults,
  indexes, unique constraints), diffs recorded as sorted strings.
"""

import datetime
import decimal
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from transcript import run  # noqa: E402

from alembic.autogenerate import compare_metadata  # noqa: E402
from alembic.operations import Operations  # noqa: E402
from alembic.runtime.migration import MigrationContext  # noqa: E402
from sqlalchemy import (  # noqa: E402
    Column,
    Date,
    Index,
    Integer,
    MetaData,
    Numeric,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
    create_engine,
    inspect,
    literal_column,
    select,
    text,
)

TABLES = ["al_accounts", "al_legacy", "al_notes", "al_scratch", "alembic_version"]


def url(args):
    return f"postgresql+psycopg://{args.user}@{args.host}:{args.port}/{args.dbname}"


def operations(conn):
    return Operations(MigrationContext.configure(conn))


def schema_of(conn, table):
    """A table as reflection sees it (fresh inspector, so nothing is cached)."""
    inspector = inspect(conn)
    if not inspector.has_table(table):
        return None
    return {
        "columns": [(c["name"], str(c["type"]), c["nullable"], c["default"])
                    for c in inspector.get_columns(table)],
        "primary_key": inspector.get_pk_constraint(table)["constrained_columns"],
        "indexes": sorted((i["name"], i["unique"], i["column_names"])
                          for i in inspector.get_indexes(table)),
        "unique_constraints": sorted((u["name"], u["column_names"])
                                     for u in inspector.get_unique_constraints(table)),
    }


def accounts_rows(conn):
    return [list(row) for row in conn.execute(text("SELECT * FROM al_accounts ORDER BY id"))]


# --- the version table, as `alembic upgrade` keeps it ------------------------------------------


def version_table():
    """The table Alembic's DefaultImpl.version_table_impl builds."""
    return Table(
        "alembic_version",
        MetaData(),
        Column("version_num", String(32), nullable=False),
        PrimaryKeyConstraint("version_num", name="alembic_version_pkc"),
    )


def stamp_first(conn, revision):
    """MigrationContext._ensure_version_table + HeadMaintainer._insert_version."""
    table = version_table()
    table.create(conn, checkfirst=True)
    conn.execute(table.insert().values(version_num=literal_column(f"'{revision}'")))


def stamp_next(conn, from_, to_):
    """HeadMaintainer._update_version: one row must change."""
    table = version_table()
    result = conn.execute(
        table.update()
        .values(version_num=literal_column(f"'{to_}'"))
        .where(table.c.version_num == literal_column(f"'{from_}'")))
    return result.rowcount


def current_revision(conn):
    return MigrationContext.configure(conn).get_current_revision()


# --- topics -------------------------------------------------------------------------------------


def drop_tables(engine, t):
    def drop():
        with engine.begin() as conn:
            for name in TABLES:
                conn.execute(text(f"DROP TABLE IF EXISTS {name}"))
        return TABLES

    t.step("drop tables", drop)


def context_facts(engine, t):
    with engine.connect() as conn:
        context = MigrationContext.configure(conn)
        t.step("context dialect", lambda: context.dialect.name)
        t.step("context impl transactional_ddl", lambda: context.impl.transactional_ddl)
        t.step("current revision without version table", lambda: context.get_current_revision())
        t.step("current heads without version table", lambda: context.get_current_heads())


def revision_1(engine, t):
    with engine.begin() as conn:
        op = operations(conn)
        accounts = t.step("rev1 create_table al_accounts", lambda: op.create_table(
            "al_accounts",
            Column("id", Integer, primary_key=True, autoincrement=False),
            Column("name", String(50), nullable=False),
            Column("balance", Numeric(12, 2)),
            Column("opened", Date),
        ).name)
        t.step("rev1 reflect after create_table", lambda: schema_of(conn, "al_accounts"))
        t.step("rev1 create_table al_legacy", lambda: op.create_table(
            "al_legacy",
            Column("id", Integer, primary_key=True, autoincrement=False),
            Column("note", Text),
        ).name)

        t.step("rev1 add_column email", lambda: op.add_column(
            "al_accounts", Column("email", String(120), nullable=True)))
        t.step("rev1 add_column status not null with server default", lambda: op.add_column(
            "al_accounts", Column("status", String(10), nullable=False, server_default="open")))
        t.step("rev1 add_column legacy", lambda: op.add_column(
            "al_accounts", Column("legacy", Integer)))
        t.step("rev1 add_column extra", lambda: op.add_column(
            "al_accounts", Column("extra", Text)))
        t.step("rev1 reflect after add_column", lambda: schema_of(conn, "al_accounts"))

        t.step("rev1 create_index unique", lambda: op.create_index(
            "ix_al_accounts_email", "al_accounts", ["email"], unique=True))
        t.step("rev1 create_index composite", lambda: op.create_index(
            "ix_al_accounts_name_opened", "al_accounts", ["name", "opened"]))
        t.step("rev1 create_index single", lambda: op.create_index(
            "ix_al_accounts_legacy", "al_accounts", ["legacy"]))
        t.step("rev1 reflect after create_index", lambda: schema_of(conn, "al_accounts"))

        if accounts is not None:
            table = Table(
                "al_accounts", MetaData(),
                Column("id", Integer), Column("name", String(50)),
                Column("balance", Numeric(12, 2)), Column("opened", Date),
                Column("email", String(120)), Column("legacy", Integer),
            )
            t.step("rev1 bulk_insert", lambda: op.bulk_insert(table, [
                {"id": 1, "name": "ada", "balance": decimal.Decimal("10.50"),
                 "opened": datetime.date(2020, 1, 15), "email": "ada@example.com", "legacy": 7},
                {"id": 2, "name": "brian", "balance": decimal.Decimal("0"),
                 "opened": None, "email": "brian@example.com", "legacy": None},
                {"id": 3, "name": "cleo", "balance": None,
                 "opened": datetime.date(2023, 6, 30), "email": "cleo@example.com", "legacy": 9},
            ]))
        t.step("rev1 rows after bulk_insert", lambda: accounts_rows(conn))

        t.step("rev1 stamp version table", lambda: stamp_first(conn, "a1000001"))
        t.step("rev1 current revision in transaction", lambda: current_revision(conn))
        t.step("rev1 reflect version table", lambda: schema_of(conn, "alembic_version"))

    with engine.connect() as conn:
        t.step("rev1 current revision after commit", lambda: current_revision(conn))
        t.step("rev1 committed tables", lambda: sorted(
            name for name in inspect(conn).get_table_names()
            if name.startswith("al_") or name == "alembic_version"))


def failed_migration(engine, t):
    class Abort(Exception):
        pass

    seen = {}

    def create_then_fail():
        with engine.begin() as conn:
            op = operations(conn)
            op.create_table("al_scratch", Column("id", Integer, primary_key=True,
                                                 autoincrement=False))
            op.add_column("al_accounts", Column("scratch", Integer))
            seen["al_scratch"] = inspect(conn).has_table("al_scratch")
            seen["scratch column"] = "scratch" in [
                c["name"] for c in inspect(conn).get_columns("al_accounts")]
            raise Abort("the migration fails after its DDL")

    t.step("failed migration raises", create_then_fail)
    t.step("failed migration saw its DDL in the transaction", lambda: seen)
    with engine.connect() as conn:
        t.step("failed migration create_table rolled back",
               lambda: inspect(conn).has_table("al_scratch"))
        t.step("failed migration add_column rolled back",
               lambda: [c["name"] for c in inspect(conn).get_columns("al_accounts")])


def migrate(engine, fn):
    """One operation in its own transaction, as with transaction_per_migration."""
    with engine.begin() as conn:
        return fn(operations(conn))


def revision_2(engine, t):
    def reflect():
        with engine.connect() as conn:
            return schema_of(conn, "al_accounts")

    t.step("rev2 alter_column email set not null", lambda: migrate(
        engine, lambda op: op.alter_column(
            "al_accounts", "email", existing_type=String(120), nullable=False)))
    t.step("rev2 reflect after set not null", reflect)

    t.step("rev2 alter_column opened set not null (a NULL is there)", lambda: migrate(
        engine, lambda op: op.alter_column(
            "al_accounts", "opened", existing_type=Date, nullable=False)))
    t.step("rev2 reflect after failed set not null", reflect)

    t.step("rev2 alter_column rename name to full_name", lambda: migrate(
        engine, lambda op: op.alter_column(
            "al_accounts", "name", new_column_name="full_name", existing_type=String(50),
            existing_nullable=False)))
    t.step("rev2 reflect after rename", reflect)

    t.step("rev2 alter_column balance type", lambda: migrate(
        engine, lambda op: op.alter_column(
            "al_accounts", "balance", type_=Numeric(14, 2), existing_type=Numeric(12, 2))))
    t.step("rev2 reflect after type change", reflect)

    t.step("rev2 alter_column status server default", lambda: migrate(
        engine, lambda op: op.alter_column(
            "al_accounts", "status", server_default="active", existing_type=String(10),
            existing_nullable=False)))
    t.step("rev2 reflect after server default change", reflect)

    def bump():
        with engine.begin() as conn:
            return {"rowcount": stamp_next(conn, "a1000001", "b2000002"),
                    "current": current_revision(conn)}

    t.step("rev2 update version", bump)
    with engine.connect() as conn:
        t.step("rev2 rows", lambda: accounts_rows(conn))


def revision_3(engine, t):
    with engine.begin() as conn:
        op = operations(conn)
        t.step("rev3 drop_index", lambda: op.drop_index(
            "ix_al_accounts_legacy", table_name="al_accounts"))
        t.step("rev3 reflect after drop_index", lambda: schema_of(conn, "al_accounts"))
        t.step("rev3 drop_column", lambda: op.drop_column("al_accounts", "legacy"))
        t.step("rev3 reflect after drop_column", lambda: schema_of(conn, "al_accounts"))
        t.step("rev3 update version", lambda: stamp_next(conn, "b2000002", "c3000003"))
    with engine.connect() as conn:
        t.step("rev3 current revision", lambda: current_revision(conn))
        t.step("rev3 current heads",
               lambda: MigrationContext.configure(conn).get_current_heads())
        t.step("rev3 version rows", lambda: [list(row) for row in conn.execute(
            select(version_table().c.version_num))])
        t.step("rev3 rows", lambda: accounts_rows(conn))


# --- autogenerate --------------------------------------------------------------------------------


def matching_metadata():
    """al_accounts and al_legacy as the migrations left them."""
    metadata = MetaData()
    Table(
        "al_accounts", metadata,
        Column("id", Integer, primary_key=True, autoincrement=False),
        Column("full_name", String(50), nullable=False),
        Column("balance", Numeric(14, 2)),
        Column("opened", Date),
        Column("email", String(120), nullable=False),
        Column("status", String(10), nullable=False, server_default="active"),
        Column("extra", Text),
        Index("ix_al_accounts_email", "email", unique=True),
        Index("ix_al_accounts_name_opened", "full_name", "opened"),
    )
    Table(
        "al_legacy", metadata,
        Column("id", Integer, primary_key=True, autoincrement=False),
        Column("note", Text),
    )
    return metadata


def differing_metadata():
    """Every kind of difference: new/removed tables, columns, nullability, types, defaults,
    indexes and unique constraints."""
    metadata = MetaData()
    Table(
        "al_accounts", metadata,
        Column("id", Integer, primary_key=True, autoincrement=False),
        Column("full_name", String(50), nullable=False),
        Column("balance", Numeric(12, 2)),  # modify_type
        Column("opened", Date),
        Column("email", String(120), nullable=True),  # modify_nullable
        Column("status", String(10), nullable=False, server_default="open"),  # modify_default
        Column("nickname", String(30)),  # add_column; "extra" is gone: remove_column
        Index("ix_al_accounts_email", "email", unique=True),
        Index("ix_al_accounts_opened", "opened"),  # add_index; the composite: remove_index
        UniqueConstraint("full_name", name="uq_al_accounts_full_name"),  # add_constraint
    )
    Table(  # add_table (al_legacy is gone: remove_table)
        "al_notes", metadata,
        Column("id", Integer, primary_key=True, autoincrement=False),
        Column("body", Text, nullable=False),
        Index("ix_al_notes_body", "body"),
    )
    return metadata


def value_repr(value):
    """An old or new value of a modify_* directive: a type, a bool, a server default or None."""
    if value is None or isinstance(value, bool):
        return value
    return str(getattr(value, "arg", value))


def describe_diff(diff):
    """A diff directive as a string: its op and the names it concerns (plus old/new values of
    a modification)."""
    if isinstance(diff, list):  # modify_* directives of one column
        return [describe_diff(item) for item in diff]
    kind = diff[0]
    if kind in ("add_table", "remove_table"):
        return f"{kind} {diff[1].name}"
    if kind in ("add_column", "remove_column"):
        return f"{kind} {diff[2]}.{diff[3].name}"
    if kind in ("add_index", "remove_index"):
        index = diff[1]
        return (f"{kind} {index.table.name}.{index.name} "
                f"{[c.name for c in index.columns]} unique={bool(index.unique)}")
    if kind in ("add_constraint", "remove_constraint"):
        constraint = diff[1]
        return (f"{kind} {constraint.table.name}.{constraint.name} "
                f"{[c.name for c in constraint.columns]}")
    if kind.startswith("modify_"):
        _, _schema, table, column, _existing, old, new = diff
        return f"{kind} {table}.{column} {value_repr(old)} -> {value_repr(new)}"
    return f"{kind} {[str(part) for part in diff[1:]]}"


def flatten(diffs):
    out = []
    for diff in diffs:
        described = describe_diff(diff)
        out.extend(described if isinstance(described, list) else [described])
    return sorted(out)


def only_al_tables(name, type_, parent_names):
    if type_ == "table":
        return name.startswith("al_")
    return True


def compare(engine, metadata):
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={
            "compare_type": True,
            "compare_server_default": True,
            "include_name": only_al_tables,
        })
        return flatten(compare_metadata(context, metadata))


def autogenerate(engine, t):
    t.step("autogenerate matching metadata", lambda: compare(engine, matching_metadata()))
    t.step("autogenerate differing metadata", lambda: compare(engine, differing_metadata()))


def main(args, t):
    engine = create_engine(url(args))
    drop_tables(engine, t)
    context_facts(engine, t)
    revision_1(engine, t)
    failed_migration(engine, t)
    revision_2(engine, t)
    revision_3(engine, t)
    autogenerate(engine, t)
    engine.dispose()


if __name__ == "__main__":
    run(main)
