//! The statistics views of a running server, with PostgreSQL 15's columns so that monitoring
//! tools read them unchanged: `pg_stat_activity` (one row per connection, from the server's
//! [`Activities`], with the row locks a backend waits for as its wait event), and
//! `pg_stat_statements` with `pg_stat_statements_info` (from its [`StatementStats`]), and the
//! progress of long work: `pg_stat_progress_create_index` (a backfill's rows) and
//! `pg_stat_progress_copy` (a COPY FROM's bytes and rows).

use rowdex::RowLock;
use rowdex::arrow::array::RecordBatch;
use rowdex::arrow::error::ArrowError;

use crate::activity::{Activities, Backend, Ongoing, State};
use crate::pg_catalog::model::Relations;
use crate::pg_catalog::model::{DATABASE_OID, OWNER_NAME, OWNER_ROLE, view_oid};
use crate::pg_catalog::rows::{Bool, Cell, Float, Int, Int4, Table, Text, Timestamptz};
use crate::statement_stats::StatementStats;

/// The statistics views, beside the catalog tables of `pg_catalog`.
pub const MONITORING_VIEWS: [&str; 5] = [
    "pg_stat_activity",
    "pg_stat_statements",
    "pg_stat_statements_info",
    "pg_stat_progress_create_index",
    "pg_stat_progress_copy",
];

/// A role's OID, as `pg_roles` gives it.
pub fn role_oid(name: &str) -> i64 {
    if name == OWNER_NAME {
        OWNER_ROLE
    } else {
        view_oid(name)
    }
}

/// `pg_stat_activity`: each connection, what it runs or last ran, since when, and what it
/// waits for: a row lock another transaction holds (`Lock`, `transactionid`, as PostgreSQL
/// reports a row-lock wait), or, between statements, the client (`Client`, `ClientRead`).
pub fn pg_stat_activity(
    activities: &Activities,
    locks: &[RowLock],
) -> Result<RecordBatch, ArrowError> {
    let mut table = Table::new(&[
        ("datid", Int),
        ("datname", Text),
        ("pid", Int4),
        ("leader_pid", Int4),
        ("usesysid", Int),
        ("usename", Text),
        ("application_name", Text),
        ("client_addr", Text),
        ("client_hostname", Text),
        ("client_port", Int4),
        ("backend_start", Timestamptz),
        ("xact_start", Timestamptz),
        ("query_start", Timestamptz),
        ("state_change", Timestamptz),
        ("wait_event_type", Text),
        ("wait_event", Text),
        ("state", Text),
        ("backend_xid", Int),
        ("backend_xmin", Int),
        ("query_id", Int),
        ("query", Text),
        ("backend_type", Text),
    ]);
    for backend in activities.backends() {
        let doing = backend.doing();
        let waits_for_lock = locks
            .iter()
            .any(|lock| !lock.granted && lock.tag == Some(i64::from(backend.pid)));
        let wait = if waits_for_lock {
            Some(("Lock", "transactionid"))
        } else if doing.state == State::Active {
            None
        } else {
            Some(("Client", "ClientRead"))
        };
        let mut cells: Vec<(&str, Cell)> = vec![
            ("datid", DATABASE_OID.into()),
            ("datname", backend.database.as_str().into()),
            ("pid", i64::from(backend.pid).into()),
            ("usesysid", role_oid(&backend.user).into()),
            ("usename", backend.user.as_str().into()),
            ("application_name", backend.application_name().into()),
            ("backend_start", Cell::at(backend.started)),
            ("state_change", Cell::at(doing.state_change)),
            ("state", doing.state.name().into()),
            ("query", doing.query.into()),
            ("backend_type", "client backend".into()),
        ];
        if let Some(client) = backend.client {
            cells.push(("client_addr", client.ip().to_string().into()));
            cells.push(("client_port", i64::from(client.port()).into()));
        }
        if let Some(at) = doing.xact_start {
            cells.push(("xact_start", Cell::at(at)));
        }
        if let Some(at) = doing.query_start {
            cells.push(("query_start", Cell::at(at)));
        }
        if let Some((kind, event)) = wait {
            cells.push(("wait_event_type", kind.into()));
            cells.push(("wait_event", event.into()));
        }
        table.row(cells);
    }
    table.batch()
}

/// PostgreSQL 15's columns of `pg_stat_statements` that count what rowdex has no counterpart
/// for (planning apart from execution, shared buffers, temporary files, WAL records, JIT): 0,
/// as in a PostgreSQL whose statements used none of it.
const UNCOUNTED: [&str; 26] = [
    "plans",
    "shared_blks_hit",
    "shared_blks_read",
    "shared_blks_dirtied",
    "shared_blks_written",
    "local_blks_hit",
    "local_blks_read",
    "local_blks_dirtied",
    "local_blks_written",
    "temp_blks_read",
    "temp_blks_written",
    "wal_records",
    "wal_fpi",
    "wal_bytes",
    "jit_functions",
    "jit_inlining_count",
    "jit_optimization_count",
    "jit_emission_count",
    "total_plan_time",
    "min_plan_time",
    "max_plan_time",
    "mean_plan_time",
    "stddev_plan_time",
    "blk_read_time",
    "blk_write_time",
    "jit_generation_time",
];

/// `pg_stat_statements`: PostgreSQL 15's columns, then rowdex's own (`rowdex_access_path`: the
/// path the latest run's plan took; store entries read, rows looked up by key, retries and
/// conflicts, summed over the runs).
pub fn pg_stat_statements(stats: &StatementStats) -> Result<RecordBatch, ArrowError> {
    let mut table = Table::new(&[
        ("userid", Int),
        ("dbid", Int),
        ("toplevel", Bool),
        ("queryid", Int),
        ("query", Text),
        ("plans", Int),
        ("total_plan_time", Float),
        ("min_plan_time", Float),
        ("max_plan_time", Float),
        ("mean_plan_time", Float),
        ("stddev_plan_time", Float),
        ("calls", Int),
        ("total_exec_time", Float),
        ("min_exec_time", Float),
        ("max_exec_time", Float),
        ("mean_exec_time", Float),
        ("stddev_exec_time", Float),
        ("rows", Int),
        ("shared_blks_hit", Int),
        ("shared_blks_read", Int),
        ("shared_blks_dirtied", Int),
        ("shared_blks_written", Int),
        ("local_blks_hit", Int),
        ("local_blks_read", Int),
        ("local_blks_dirtied", Int),
        ("local_blks_written", Int),
        ("temp_blks_read", Int),
        ("temp_blks_written", Int),
        ("blk_read_time", Float),
        ("blk_write_time", Float),
        ("temp_blk_read_time", Float),
        ("temp_blk_write_time", Float),
        ("wal_records", Int),
        ("wal_fpi", Int),
        ("wal_bytes", Int),
        ("jit_functions", Int),
        ("jit_generation_time", Float),
        ("jit_inlining_count", Int),
        ("jit_inlining_time", Float),
        ("jit_optimization_count", Int),
        ("jit_optimization_time", Float),
        ("jit_emission_count", Int),
        ("jit_emission_time", Float),
        ("rowdex_access_path", Text),
        ("rowdex_entries_read", Int),
        ("rowdex_row_gets", Int),
        ("rowdex_retries", Int),
        ("rowdex_conflicts", Int),
    ]);
    let count = |n: u64| Cell::Int(i64::try_from(n).unwrap_or(i64::MAX));
    for entry in stats.entries() {
        let mut cells: Vec<(&str, Cell)> = vec![
            ("userid", entry.user_oid.into()),
            ("dbid", DATABASE_OID.into()),
            ("toplevel", true.into()),
            ("queryid", entry.query_id.into()),
            ("query", entry.query.as_str().into()),
            ("calls", count(entry.calls)),
            ("total_exec_time", Cell::Float(entry.total_ms)),
            ("min_exec_time", Cell::Float(entry.min_ms)),
            ("max_exec_time", Cell::Float(entry.max_ms)),
            ("mean_exec_time", Cell::Float(entry.mean_ms())),
            ("stddev_exec_time", Cell::Float(entry.stddev_ms())),
            ("rows", count(entry.rows)),
            ("temp_blk_read_time", Cell::Float(0.0)),
            ("temp_blk_write_time", Cell::Float(0.0)),
            ("jit_inlining_time", Cell::Float(0.0)),
            ("jit_optimization_time", Cell::Float(0.0)),
            ("jit_emission_time", Cell::Float(0.0)),
            ("rowdex_entries_read", count(entry.entries_read)),
            ("rowdex_row_gets", count(entry.row_gets)),
            ("rowdex_retries", count(entry.retries)),
            ("rowdex_conflicts", count(entry.conflicts)),
        ];
        for column in UNCOUNTED {
            let zero = if column.ends_with("_time") {
                Cell::Float(0.0)
            } else {
                Cell::Int(0)
            };
            cells.push((column, zero));
        }
        if let Some(path) = entry.access_path {
            cells.push(("rowdex_access_path", path.into()));
        }
        table.row(cells);
    }
    table.batch()
}

/// `pg_stat_statements_info`: how often entries were dropped to make room, and when the
/// statistics were last reset.
pub fn pg_stat_statements_info(stats: &StatementStats) -> Result<RecordBatch, ArrowError> {
    let mut table = Table::new(&[("dealloc", Int), ("stats_reset", Timestamptz)]);
    let (dealloc, reset_at) = stats.info();
    table.row(vec![
        (
            "dealloc",
            Cell::Int(i64::try_from(dealloc).unwrap_or(i64::MAX)),
        ),
        ("stats_reset", Cell::at(reset_at)),
    ]);
    table.batch()
}

/// A count as a cell.
fn count(n: u64) -> Cell {
    Cell::Int(i64::try_from(n).unwrap_or(i64::MAX))
}

/// The cells every progress view opens with: the backend, its database, and the relation
/// `name` (when it names one).
fn progress_cells(
    backend: &Backend,
    relations: &Relations,
    name: &str,
) -> Vec<(&'static str, Cell)> {
    let mut cells = vec![
        ("pid", i64::from(backend.pid).into()),
        ("datid", DATABASE_OID.into()),
        ("datname", backend.database.as_str().into()),
    ];
    if let Some(oid) = relations.relation_oid(name) {
        cells.push(("relid", oid.into()));
    }
    cells
}

/// `pg_stat_progress_create_index`: each CREATE INDEX backfilling now, its rows read of the
/// table's estimate (`tuples_done` / `tuples_total`), in PostgreSQL's phase of that work.
pub fn pg_stat_progress_create_index(
    activities: &Activities,
    relations: &Relations,
) -> Result<RecordBatch, ArrowError> {
    let mut table = Table::new(&[
        ("pid", Int4),
        ("datid", Int),
        ("datname", Text),
        ("relid", Int),
        ("index_relid", Int),
        ("command", Text),
        ("phase", Text),
        ("lockers_total", Int),
        ("lockers_done", Int),
        ("current_locker_pid", Int4),
        ("blocks_total", Int),
        ("blocks_done", Int),
        ("tuples_total", Int),
        ("tuples_done", Int),
        ("partitions_total", Int),
        ("partitions_done", Int),
    ]);
    for backend in activities.backends() {
        let Some(Ongoing::IndexBuild {
            table: on,
            index,
            rows_done,
            rows_total,
        }) = backend.ongoing()
        else {
            continue;
        };
        let mut cells = progress_cells(&backend, relations, &on);
        cells.extend([
            ("command", "CREATE INDEX".into()),
            ("phase", "building index: scanning table".into()),
            ("lockers_total", Cell::Int(0)),
            ("lockers_done", Cell::Int(0)),
            ("current_locker_pid", Cell::Int(0)),
            ("blocks_total", Cell::Int(0)),
            ("blocks_done", Cell::Int(0)),
            ("tuples_total", count(rows_total)),
            ("tuples_done", count(rows_done)),
            ("partitions_total", Cell::Int(0)),
            ("partitions_done", Cell::Int(0)),
        ]);
        if let Some(oid) = relations.relation_oid(&index) {
            cells.push(("index_relid", oid.into()));
        }
        table.row(cells);
    }
    table.batch()
}

/// `pg_stat_progress_copy`: each COPY FROM loading now, its bytes read (of the file's size; 0
/// for data a client sends, as in PostgreSQL) and rows loaded.
pub fn pg_stat_progress_copy(
    activities: &Activities,
    relations: &Relations,
) -> Result<RecordBatch, ArrowError> {
    let mut table = Table::new(&[
        ("pid", Int4),
        ("datid", Int),
        ("datname", Text),
        ("relid", Int),
        ("command", Text),
        ("type", Text),
        ("bytes_processed", Int),
        ("bytes_total", Int),
        ("tuples_processed", Int),
        ("tuples_excluded", Int),
    ]);
    for backend in activities.backends() {
        let Some(Ongoing::CopyFrom {
            table: into,
            from_client,
            bytes_done,
            bytes_total,
            rows,
        }) = backend.ongoing()
        else {
            continue;
        };
        let mut cells = progress_cells(&backend, relations, &into);
        cells.extend([
            ("command", "COPY FROM".into()),
            ("type", if from_client { "PIPE" } else { "FILE" }.into()),
            ("bytes_processed", count(bytes_done)),
            (
                "bytes_total",
                count(if from_client { 0 } else { bytes_total }),
            ),
            ("tuples_processed", count(rows)),
            ("tuples_excluded", Cell::Int(0)),
        ]);
        table.row(cells);
    }
    table.batch()
}
