"""Foreign keys as applications declare and use them: SQLAlchemy models with ForeignKey and
relationship cascades, psycopg statements that break them, and the catalog reflection tools read.

Run against PostgreSQL 15 and against `rowdex serve`; the two transcripts are compared line by
line (see transcript.py). Topics, in the order they run:

- schema: `MetaData.create_all` of four tables (a parent, a child with ON DELETE CASCADE, a
  grandchild with a composite key referencing the child, a table referencing itself with ON
  DELETE SET NULL, one referencing a UNIQUE column with ON UPDATE CASCADE), emitted by
  SQLAlchemy as PostgreSQL gets them (REFERENCES in CREATE TABLE, ALTER TABLE ... ADD FOREIGN
  KEY for the self-reference).
- orm: a parent with children through `relationship(cascade="all, delete-orphan")`, a delete
  of the parent (the ORM deletes the children itself) and a core DELETE that the database
  cascades.
- violations: an INSERT and an UPDATE naming a missing parent, a DELETE and a key UPDATE of a
  referenced row (SQLSTATE 23503, the failed statement changing nothing), inside and outside a
  transaction block; the same checked at the end of the statement (parent and child in one
  INSERT, a self-referencing tree in one statement).
- actions: ON DELETE CASCADE two tables deep, ON DELETE SET NULL, ON UPDATE CASCADE through a
  UNIQUE column.
- alter: ALTER TABLE ADD CONSTRAINT ... FOREIGN KEY refused over an orphan row (23503) and
  accepted once it is gone, DROP CONSTRAINT, DROP TABLE of a referenced table refused (2BP01)
  and with CASCADE.
- reflection: `inspect(engine).get_foreign_keys` of each table (names, columns, referred table
  and columns, options), pg_constraint rows of type f with pg_get_constraintdef, and
  information_schema.referential_constraints / table_constraints / key_column_usage.

Every table is dropped at the start, so running the scenario twice gives the same transcript.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from transcript import run, sqlstate_of  # noqa: E402

import psycopg  # noqa: E402
from sqlalchemy import (  # noqa: E402
    Column,
    ForeignKey,
    ForeignKeyConstraint,
    Integer,
    String,
    create_engine,
    delete,
    inspect,
)
from sqlalchemy.orm import DeclarativeBase, Session, relationship  # noqa: E402

TABLES = ["fk_line", "fk_order", "fk_customer", "fk_node", "fk_label", "fk_review"]


class Base(DeclarativeBase):
    pass


class Customer(Base):
    __tablename__ = "fk_customer"
    id = Column(Integer, primary_key=True, autoincrement=False)
    email = Column(String(40), unique=True, nullable=False)
    orders = relationship("Order", back_populates="customer", cascade="all, delete-orphan")


class Order(Base):
    __tablename__ = "fk_order"
    id = Column(Integer, primary_key=True, autoincrement=False)
    customer_id = Column(Integer, ForeignKey("fk_customer.id", ondelete="CASCADE"), nullable=False)
    note = Column(String(40))
    customer = relationship("Customer", back_populates="orders")


class Line(Base):
    __tablename__ = "fk_line"
    order_id = Column(Integer, ForeignKey("fk_order.id", ondelete="CASCADE"), primary_key=True)
    n = Column(Integer, primary_key=True, autoincrement=False)
    qty = Column(Integer)


class Node(Base):
    __tablename__ = "fk_node"
    id = Column(Integer, primary_key=True, autoincrement=False)
    parent_id = Column(Integer, ForeignKey("fk_node.id", ondelete="SET NULL"))
    name = Column(String(20))


class Label(Base):
    __tablename__ = "fk_label"
    id = Column(Integer, primary_key=True, autoincrement=False)
    email = Column(String(40))
    __table_args__ = (
        ForeignKeyConstraint(
            ["email"], ["fk_customer.email"], name="fk_label_email", onupdate="CASCADE"
        ),
    )


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
            session.add(Customer(id=1, email="a@x", orders=[Order(id=10, note="first"), Order(id=11)]))
            session.add(Customer(id=2, email="b@x", orders=[Order(id=20)]))
            session.commit()
        return rows(conn, "SELECT id, customer_id, note FROM fk_order ORDER BY id")

    t.step("orm_add_with_children", add)

    def orm_delete():
        with Session(engine) as session:
            session.delete(session.get(Customer, 2))
            session.commit()
        return rows(conn, "SELECT id, customer_id FROM fk_order ORDER BY id")

    t.step("orm_delete_parent", orm_delete)

    def children_of():
        with Session(engine) as session:
            customer = session.get(Customer, 1)
            return sorted(o.id for o in customer.orders)

    t.step("orm_relationship_load", children_of)
    t.step("insert_lines", lambda: rows(conn, "INSERT INTO fk_line VALUES (10, 1, 5), (10, 2, 6), (11, 1, 7)"))

    def core_delete():
        with engine.begin() as c:
            c.execute(delete(Customer.__table__).where(Customer.__table__.c.id == 1))
        return rows(conn, "SELECT (SELECT count(*) FROM fk_order), (SELECT count(*) FROM fk_line)")

    t.step("core_delete_cascades_two_deep", core_delete)

    def orm_violation():
        with Session(engine) as session:
            session.add(Order(id=30, customer_id=99))
            try:
                session.commit()
                return "committed"
            except Exception as error:  # noqa: BLE001
                session.rollback()
                return sqlstate_of(error)

    t.step("orm_flush_missing_parent", orm_violation)


def violations(conn, t):
    rows(conn, "INSERT INTO fk_customer VALUES (3, 'c@x'), (4, 'd@x')")
    rows(conn, "INSERT INTO fk_order VALUES (40, 3, 'x')")
    t.step("insert_missing_parent", lambda: rows(conn, "INSERT INTO fk_order VALUES (41, 5, 'y')"))
    t.step("update_to_missing_parent", lambda: rows(conn, "UPDATE fk_order SET customer_id = 7 WHERE id = 40"))
    t.step("delete_cascades", lambda: rows(conn, "DELETE FROM fk_customer WHERE id = 4"))
    t.step("orders_after", lambda: rows(conn, "SELECT id, customer_id FROM fk_order ORDER BY id"))
    t.step("null_reference_allowed", lambda: rows(conn, "INSERT INTO fk_node VALUES (1, NULL, 'root')"))
    t.step(
        "tree_in_one_statement",
        lambda: rows(conn, "INSERT INTO fk_node VALUES (3, 2, 'leaf'), (2, 1, 'branch')"),
    )
    t.step("self_missing", lambda: rows(conn, "INSERT INTO fk_node VALUES (9, 8, 'lost')"))

    def in_block():
        with conn.transaction():
            rows(conn, "INSERT INTO fk_customer VALUES (5, 'e@x')")
            rows(conn, "INSERT INTO fk_order VALUES (50, 5, 'in block')")
            try:
                with conn.transaction():
                    rows(conn, "INSERT INTO fk_order VALUES (51, 6, 'bad')")
            except psycopg.Error as error:
                state = sqlstate_of(error)
            rows(conn, "DELETE FROM fk_customer WHERE id = 5")
        return state, rows(conn, "SELECT id FROM fk_order WHERE id >= 50 ORDER BY id")

    t.step("savepoint_violation_then_cascade", in_block)


def actions(conn, t):
    t.step("delete_sets_null", lambda: rows(conn, "DELETE FROM fk_node WHERE id = 2"))
    t.step("nodes_after", lambda: rows(conn, "SELECT id, parent_id, name FROM fk_node ORDER BY id"))
    rows(conn, "INSERT INTO fk_label VALUES (1, 'c@x'), (2, NULL)")
    t.step("label_missing_email", lambda: rows(conn, "INSERT INTO fk_label VALUES (3, 'zz@x')"))
    t.step(
        "update_unique_cascades",
        lambda: rows(conn, "UPDATE fk_customer SET email = 'c2@x' WHERE id = 3"),
    )
    t.step("labels_after", lambda: rows(conn, "SELECT id, email FROM fk_label ORDER BY id"))
    t.step("key_update_referenced", lambda: rows(conn, "UPDATE fk_customer SET id = 33 WHERE id = 3"))
    t.step("customers_after", lambda: rows(conn, "SELECT id, email FROM fk_customer ORDER BY id"))


def alter(conn, t):
    rows(conn, "CREATE TABLE fk_review (id INT PRIMARY KEY, customer INT)")
    rows(conn, "INSERT INTO fk_review VALUES (1, 3), (2, 77)")
    add = "ALTER TABLE fk_review ADD CONSTRAINT fk_review_customer FOREIGN KEY (customer) REFERENCES fk_customer (id)"
    t.step("add_over_orphan", lambda: rows(conn, add))
    rows(conn, "DELETE FROM fk_review WHERE id = 2")
    t.step("add_constraint", lambda: rows(conn, add))
    t.step("added_enforced", lambda: rows(conn, "INSERT INTO fk_review VALUES (3, 78)"))
    t.step("drop_referenced_table", lambda: rows(conn, "DROP TABLE fk_customer"))
    t.step(
        "drop_constraint",
        lambda: rows(conn, "ALTER TABLE fk_review DROP CONSTRAINT fk_review_customer"),
    )
    t.step("dropped_not_enforced", lambda: rows(conn, "INSERT INTO fk_review VALUES (3, 78)"))


def reflection(engine, conn, t):
    inspector = inspect(engine)
    for table in ["fk_order", "fk_line", "fk_node", "fk_label"]:
        t.step(
            f"get_foreign_keys_{table}",
            lambda table=table: sorted(
                (
                    fk["name"],
                    fk["constrained_columns"],
                    fk["referred_table"],
                    fk["referred_columns"],
                    sorted(fk["options"].items()),
                )
                for fk in inspector.get_foreign_keys(table)
            ),
        )
    t.step(
        "pg_constraint_defs",
        lambda: rows(
            conn,
            "SELECT c.conrelid::regclass::text, c.conname, c.confrelid::regclass::text, "
            "c.confupdtype, c.confdeltype, c.confmatchtype, pg_get_constraintdef(c.oid) "
            "FROM pg_constraint c WHERE c.contype = 'f' AND c.conname LIKE 'fk%' ORDER BY c.conname",
        ),
    )
    t.step(
        "referential_constraints",
        lambda: rows(
            conn,
            "SELECT constraint_name, unique_constraint_name, match_option, update_rule, delete_rule "
            "FROM information_schema.referential_constraints "
            "WHERE constraint_name LIKE 'fk%' ORDER BY constraint_name",
        ),
    )
    t.step(
        "table_constraints",
        lambda: rows(
            conn,
            "SELECT table_name, constraint_name, constraint_type FROM information_schema.table_constraints "
            "WHERE table_name LIKE 'fk%' AND constraint_type = 'FOREIGN KEY' ORDER BY constraint_name",
        ),
    )
    t.step(
        "key_column_usage",
        lambda: rows(
            conn,
            "SELECT k.constraint_name, k.column_name, k.ordinal_position, k.position_in_unique_constraint "
            "FROM information_schema.key_column_usage k "
            "JOIN information_schema.referential_constraints r ON r.constraint_name = k.constraint_name "
            "WHERE k.table_name LIKE 'fk%' ORDER BY k.constraint_name, k.ordinal_position",
        ),
    )
    t.step(
        "drop_referenced_cascade",
        lambda: rows(conn, "DROP TABLE fk_order CASCADE"),
    )
    t.step("line_freed", lambda: rows(conn, "INSERT INTO fk_line VALUES (999, 1, 1)"))
    t.step("count_after", lambda: rows(conn, "SELECT count(*) FROM fk_line"))


def main(args, t):
    conn = t.step("connect", lambda: connect(args))
    if conn is None:
        return
    with conn:
        engine = schema(args, conn, t)
        orm(engine, conn, t)
        violations(conn, t)
        actions(conn, t)
        alter(conn, t)
        reflection(engine, conn, t)
        engine.dispose()


run(main)
