"""What a monitoring tool reads of a running server, through psycopg: the statistics views and
functions PostgreSQL's operators reach for first, queried as pgAdmin's dashboard, Grafana's
PostgreSQL panels and a DBA's scripts query them.

Run against PostgreSQL 15 (with pg_stat_statements preloaded) and against `rowdex serve`; the
two transcripts are compared line by line (see transcript.py). Values that differ between any
two servers (process ids, times, sizes in bytes) are recorded as facts about them (a time is
set, a size grew), never as themselves. Topics, in the order they run:

- extension: `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`, and `pg_extension`.
- activity: `pg_stat_activity`'s columns; this backend (active, its own query, no wait); an
  idle one, one idle in a transaction, one in a failed transaction; a backend waiting for a
  row lock (Lock, transactionid); `pg_cancel_backend` of the waiter (57014),
  `pg_terminate_backend` of the holder (its transaction rolled back); pgAdmin's session query
  and Grafana's count by state.
- statements: `pg_stat_statements_reset()`, statements run as text and with parameters,
  their normalized texts, calls and rows; a dashboard's top statements by time.
- sizes: `pg_relation_size`, `pg_table_size`, `pg_indexes_size`, `pg_total_relation_size`
  and `pg_database_size` of an empty table, then grown by 2,000 rows.
- progress: `pg_stat_progress_create_index` and `pg_stat_progress_copy` between statements
  (empty), with their columns.

Every table is dropped at the start, so running the scenario twice gives the same transcript.
"""

import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from transcript import psycopg_connect, run  # noqa: E402

import psycopg  # noqa: E402


def connect(args, application_name):
    conn = psycopg_connect(args)
    conn.execute(f"SET application_name = '{application_name}'")
    return conn


def rows(conn, sql, params=None):
    cur = conn.execute(sql, params)
    return cur.fetchall() if cur.description else cur.rowcount


def columns(conn, sql):
    cur = conn.execute(sql)
    cur.fetchall()
    return [d.name for d in cur.description]


def activity_of(conn, application_name):
    """The backend's state, statement, whether a transaction is open, and its type. Its wait
    between statements (Client / ClientRead) is left out: PostgreSQL shows it only once the
    backend blocks reading from its client, a moment a sample may come before."""
    return rows(
        conn,
        "SELECT state, query, xact_start IS NOT NULL, backend_type FROM pg_stat_activity "
        "WHERE application_name = %s AND datname = current_database()",
        (application_name,),
    )


def wait_for(conn, application_name, state):
    """Polls until the backend shows `state`: (its activity row, its pid)."""
    for _ in range(1000):
        found = rows(
            conn,
            "SELECT state, wait_event_type, wait_event, query, pid FROM pg_stat_activity "
            "WHERE application_name = %s AND datname = current_database()",
            (application_name,),
        )
        if found and found[0][0] == state[0] and found[0][1] == state[1]:
            return found[0]
        time.sleep(0.02)
    return None


def extension(conn, t):
    t.step(
        "create_extension",
        lambda: rows(conn, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"),
    )
    t.step(
        "pg_extension",
        lambda: rows(
            conn,
            "SELECT extname, extversion FROM pg_extension "
            "WHERE extname = 'pg_stat_statements'",
        ),
    )


def activity(args, conn, t):
    t.step(
        "activity_columns",
        lambda: columns(conn, "SELECT * FROM pg_stat_activity WHERE pid = pg_backend_pid()"),
    )
    t.step(
        "activity_self",
        lambda: rows(
            conn,
            "SELECT datname = current_database(), usename = current_user, application_name, "
            "state, query, wait_event_type, wait_event, backend_type, "
            "backend_start <= now(), query_start >= backend_start, xact_start IS NOT NULL "
            "FROM pg_stat_activity WHERE pid = pg_backend_pid()",
        ),
    )
    idle = connect(args, "mon-idle")
    idle.execute("SELECT 1")
    t.step("activity_idle", lambda: activity_of(conn, "mon-idle"))
    idle.execute("BEGIN")
    idle.execute("SELECT 2")
    t.step("activity_idle_in_transaction", lambda: activity_of(conn, "mon-idle"))

    def fail():
        try:
            idle.execute("SELECT 1 / 0")
        except psycopg.Error:
            pass
        return activity_of(conn, "mon-idle")

    t.step("activity_aborted", fail)
    idle.execute("ROLLBACK")
    t.step("activity_after_rollback", lambda: activity_of(conn, "mon-idle"))

    holder = connect(args, "mon-holder")
    holder.execute("BEGIN")
    holder.execute("UPDATE mon_t SET v = 'held' WHERE k = 1")
    waiter = connect(args, "mon-waiter")
    outcome = {}

    def wait():
        try:
            waiter.execute("UPDATE mon_t SET v = 'waited' WHERE k = 1")
            outcome["waiter"] = "updated"
        except psycopg.Error as error:
            outcome["waiter"] = error.sqlstate

    thread = threading.Thread(target=wait)
    thread.start()
    waiting = t.step(
        "activity_lock_wait", lambda: wait_for(conn, "mon-waiter", ("active", "Lock"))[:4]
    )
    pid = rows(
        conn,
        "SELECT pid FROM pg_stat_activity WHERE application_name = 'mon-waiter' "
        "AND datname = current_database()",
    )[0][0]
    t.check("lock_wait_seen", waiting is not None)
    t.step("cancel_waiter", lambda: rows(conn, "SELECT pg_cancel_backend(%s)", (pid,)))
    thread.join(30)
    t.step("waiter_cancelled", lambda: outcome.get("waiter"))

    holder_pid = rows(
        conn,
        "SELECT pid FROM pg_stat_activity WHERE application_name = 'mon-holder' "
        "AND datname = current_database()",
    )[0][0]
    t.step(
        "terminate_holder",
        lambda: rows(conn, "SELECT pg_terminate_backend(%s)", (holder_pid,)),
    )

    def holder_gone():
        for _ in range(500):
            if not activity_of(conn, "mon-holder"):
                return "gone"
            time.sleep(0.02)
        return "still there"

    t.step("holder_gone", holder_gone)
    t.step("holder_rolled_back", lambda: rows(conn, "SELECT v FROM mon_t WHERE k = 1"))
    t.step("waiter_goes_on", lambda: rows(waiter, "SELECT v FROM mon_t WHERE k = 1"))
    t.step(
        "no_such_backend",
        lambda: rows(conn, "SELECT pg_cancel_backend(1), pg_terminate_backend(1)"),
    )

    # pgAdmin's dashboard: the sessions of this database (their waits are not recorded: a
    # backend that has just answered shows no wait until it blocks reading from its client,
    # a moment PostgreSQL's sample may or may not catch).
    t.step(
        "pgadmin_sessions",
        lambda: [
            (r[0], r[1])
            for r in rows(
                conn,
                "SELECT application_name, state, "
                "CASE WHEN state = 'active' THEN 'running' ELSE wait_event END AS wait, "
                "pid, datname, usename, client_addr, "
                "to_char(backend_start, 'YYYY-MM-DD HH24:MI:SS TZ') AS backend_start, "
                "query FROM pg_stat_activity "
                "WHERE datname = current_database() AND application_name LIKE 'mon-%%' "
                "ORDER BY application_name",
            )
        ],
    )
    # Grafana's panel: sessions by state.
    t.step(
        "grafana_states",
        lambda: rows(
            conn,
            "SELECT state, count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND backend_type = 'client backend' "
            "GROUP BY state ORDER BY state",
        ),
    )
    idle.close()
    waiter.close()


def statements(conn, t):
    t.step("reset", lambda: rows(conn, "SELECT pg_stat_statements_reset()"))
    for k in (1, 2, 3):
        conn.execute(f"SELECT v FROM mon_t WHERE k = {k}")
    for k in (4, 5):
        conn.execute("SELECT v FROM mon_t WHERE k = %s", (k,))
    conn.execute("UPDATE mon_t SET v = 'x' WHERE k > 1990")
    t.step(
        "statements_counted",
        lambda: rows(
            conn,
            "SELECT query, calls, rows FROM pg_stat_statements "
            "WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) "
            "AND query LIKE '%%mon_t%%' AND query NOT LIKE '%%pg_stat_statements%%' "
            "ORDER BY query",
        ),
    )
    t.step(
        "statements_times",
        lambda: rows(
            conn,
            "SELECT bool_and(total_exec_time > 0), bool_and(min_exec_time <= mean_exec_time), "
            "bool_and(mean_exec_time <= max_exec_time), bool_and(stddev_exec_time >= 0) "
            "FROM pg_stat_statements WHERE query LIKE 'SELECT v FROM mon_t%%'",
        ),
    )
    # A dashboard's top statements by time.
    t.step(
        "top_statements_columns",
        lambda: columns(
            conn,
            "SELECT query, calls, total_exec_time, mean_exec_time, rows, "
            "100.0 * shared_blks_hit / nullif(shared_blks_hit + shared_blks_read, 0) "
            "AS hit_percent FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 5",
        ),
    )
    t.step(
        "statements_info",
        lambda: rows(conn, "SELECT dealloc, stats_reset <= now() FROM pg_stat_statements_info"),
    )


def sizes(conn, t):
    conn.execute("CREATE TABLE mon_s (k INT PRIMARY KEY, v TEXT)")
    conn.execute("CREATE INDEX mon_s_v ON mon_s (v)")
    size_query = (
        "SELECT pg_relation_size('mon_s') > 0, pg_table_size('mon_s') > 0, "
        "pg_indexes_size('mon_s') > 0, "
        "pg_total_relation_size('mon_s') >= pg_relation_size('mon_s') + "
        "pg_relation_size('mon_s_v'), pg_database_size(current_database()) > 0"
    )
    t.step("sizes_empty", lambda: rows(conn, "SELECT pg_relation_size('mon_s')"))
    conn.execute(
        "INSERT INTO mon_s SELECT n, 'value ' || n FROM generate_series(1, 2000) AS g(n)"
    )
    t.step("sizes_filled", lambda: rows(conn, size_query))
    t.step("size_of_nothing", lambda: rows(conn, "SELECT pg_relation_size('mon_none')"))


def progress(conn, t):
    for view in ("pg_stat_progress_create_index", "pg_stat_progress_copy"):
        t.step(f"{view}_columns", lambda view=view: columns(conn, f"SELECT * FROM {view}"))
        t.step(
            f"{view}_between_statements",
            lambda view=view: rows(
                conn, f"SELECT count(*) FROM {view} WHERE pid = pg_backend_pid()"
            ),
        )


def main(args, t):
    conn = connect(args, "mon-main")
    for table in ("mon_t", "mon_s"):
        conn.execute(f"DROP TABLE IF EXISTS {table}")
    conn.execute("CREATE TABLE mon_t (k INT PRIMARY KEY, v TEXT)")
    conn.execute("INSERT INTO mon_t SELECT n, 'v' || n FROM generate_series(1, 2000) AS g(n)")
    extension(conn, t)
    activity(args, conn, t)
    statements(conn, t)
    sizes(conn, t)
    progress(conn, t)


if __name__ == "__main__":
    run(main)
