//! What one connection keeps between statements beside its rowdex [`Session`]: the session
//! parameters it answers itself, its cursors, and whether its transaction block failed (after an error in a
//! transaction, PostgreSQL refuses every statement but ROLLBACK; rowdex's server does the same,
//! so that a client sees the rules its driver was written for).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use pgwire::api::{ClientInfo, METADATA_DATABASE, METADATA_USER};
use pgwire::messages::response::TransactionStatus;
use rowdex::time_zone::TimeZone;
use rowdex::{
    Database, IsolationLevel, NormalizedStatement, Progress, Semantics, Session,
    normalize_statement,
};

use crate::activity::{Activities, Backend, Ongoing, ProgressSlot, Registered, Standing, Startup};
use crate::cancel::CancelKey;
use crate::cursors::Cursors;
use crate::metrics::{ServerMetrics, statement_kind};
use crate::pg_catalog::functions::SessionFacts;
use crate::pg_catalog::monitoring::role_oid;
use crate::pg_catalog::schema::register_pg_catalog;
use crate::prepared_statements::SqlStatements;
use crate::server_log::ServerLog;
use crate::settings::{
    SERVER_VERSION, Settings, log_duration_setting, milliseconds_setting, startup_parameters,
};
use crate::statement_stats::StatementStats;

pub struct SessionState {
    pub session: Session,
    db: Database,
    /// Shared with the catalog functions (`current_setting`, `set_config`).
    settings: Arc<Mutex<Settings>>,
    /// An error happened inside the open transaction block; only ROLLBACK (or COMMIT, which
    /// then rolls back) or ROLLBACK TO a savepoint ends it.
    failed: AtomicBool,
    /// The startup message's parameters were copied into the settings.
    adopted_startup: AtomicBool,
    /// The settings as the session started (defaults and the startup message's), which RESET
    /// goes back to.
    starting: OnceLock<Settings>,
    /// The connection's entry in the server's cancel registry, from its startup on.
    cancel_key: OnceLock<CancelKey>,
    /// The cursors DECLARE opened.
    cursors: Mutex<Cursors>,
    /// The statements SQL's PREPARE kept.
    sql_statements: Mutex<SqlStatements>,
    /// The server's backends, and this connection's entry among them (from its startup on).
    activities: Arc<Activities>,
    backend: OnceLock<Registered>,
    /// Notified to close this connection (`pg_terminate_backend`).
    terminate: Arc<tokio::sync::Notify>,
    /// The server's statement statistics, and the texts this connection normalized for them.
    statements: Arc<StatementStats>,
    normalized: Mutex<HashMap<String, NormalizedStatement>>,
    /// The server's metrics.
    metrics: Arc<ServerMetrics>,
    /// Where the session's progress reports land (`pg_stat_progress_*`).
    progress: ProgressSlot,
    /// The server's log, and how long a statement runs before it is logged
    /// (`log_min_duration_statement`; None: never).
    log: ServerLog,
    log_min_duration: Mutex<Option<Duration>>,
}

/// What a connection reports to, server-wide.
pub struct Monitoring {
    pub activities: Arc<Activities>,
    pub statements: Arc<StatementStats>,
    pub metrics: Arc<ServerMetrics>,
    pub log: ServerLog,
    /// The server's `log_min_duration_statement`, which a session starts with.
    pub log_min_duration: Option<Duration>,
}

/// Statement texts a connection keeps normalized (a prepared statement's, a repeated query's);
/// past this many the cache starts over.
const NORMALIZED_TEXTS: usize = 512;

impl SessionState {
    pub fn new(db: &Database, monitoring: Monitoring) -> Self {
        // A client of the PostgreSQL protocol expects PostgreSQL's rules (division by zero
        // is an error, ...), not the SQLite corpus's.
        let mut session = db.session();
        session.set_semantics(Semantics::PostgreSql);
        let progress = ProgressSlot::default();
        let reported = progress.clone();
        session.set_progress(Arc::new(move |report: &Progress<'_>| {
            *reported.lock().unwrap_or_else(PoisonError::into_inner) = Some(Ongoing::of(report));
        }));
        let mut settings = Settings::default();
        if let Some(after) = monitoring.log_min_duration {
            settings.adopt("log_min_duration_statement", &after.as_millis().to_string());
        }
        let Monitoring {
            activities,
            statements,
            metrics,
            log,
            log_min_duration,
        } = monitoring;
        SessionState {
            session,
            db: db.clone(),
            settings: Arc::new(Mutex::new(settings)),
            failed: AtomicBool::new(false),
            adopted_startup: AtomicBool::new(false),
            starting: OnceLock::new(),
            cancel_key: OnceLock::new(),
            cursors: Mutex::new(Cursors::default()),
            sql_statements: Mutex::new(SqlStatements::default()),
            activities,
            backend: OnceLock::new(),
            terminate: Arc::new(tokio::sync::Notify::new()),
            statements,
            normalized: Mutex::new(HashMap::new()),
            metrics,
            progress,
            log,
            log_min_duration: Mutex::new(log_min_duration),
        }
    }

    /// Counts a statement that ran (`text`: its own text, as the client sent it) in the
    /// server's metrics; one that succeeded with `rows` also in its statement statistics, and
    /// in its log if it ran at least `log_min_duration_statement`.
    pub fn statement_done(&self, text: &str, elapsed: Duration, rows: Option<u64>) {
        let figures = self.session.take_statement_figures();
        self.metrics
            .statement(statement_kind(text), rows.is_some(), elapsed, &figures);
        let Some(rows) = rows else {
            return;
        };
        let slow = self
            .log_min_duration
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some_and(|after| elapsed >= after);
        if slow {
            let pid = self.backend().map_or(0, |b| b.pid);
            let plan = figures.access_path.as_deref().unwrap_or("-");
            self.log.write(&format!(
                "[{pid}] LOG:  duration: {:.3} ms  rows: {rows}  plan: {plan}  statement: {text}",
                elapsed.as_secs_f64() * 1e3,
            ));
        }
        let normalized = {
            let mut cache = self
                .normalized
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            match cache.get(text) {
                Some(normalized) => normalized.clone(),
                None => {
                    if cache.len() >= NORMALIZED_TEXTS {
                        cache.clear();
                    }
                    let normalized = normalize_statement(text);
                    cache.insert(text.to_string(), normalized.clone());
                    normalized
                }
            }
        };
        let user = self.backend().map(|b| b.user.clone()).unwrap_or_default();
        self.statements
            .record(role_oid(&user), &normalized, elapsed, rows, figures);
    }

    /// Completes when `pg_terminate_backend` names this connection.
    pub fn terminated(&self) -> impl Future<Output = ()> + Send + 'static {
        let terminate = self.terminate.clone();
        async move { terminate.notified().await }
    }

    /// Enters the connection in the server's activity (once, at startup), as `pid`.
    pub fn register_backend(
        &self,
        pid: i32,
        secret: pgwire::messages::startup::SecretKey,
        client: &impl ClientInfo,
    ) {
        let metadata = client.metadata();
        let user = metadata.get(METADATA_USER).cloned().unwrap_or_default();
        let registered = self.activities.register(Startup {
            pid,
            secret,
            database: metadata
                .get(METADATA_DATABASE)
                .cloned()
                .unwrap_or_else(|| user.clone()),
            user,
            client: Some(client.socket_addr()),
            application_name: metadata
                .get(pgwire::api::METADATA_APPLICATION_NAME)
                .cloned()
                .unwrap_or_default(),
            terminate: self.terminate.clone(),
            progress: self.progress.clone(),
        });
        if self.backend.set(registered).is_ok() {
            self.metrics.connection_accepted();
        }
    }

    /// This connection's entry in the server's activity, once started.
    pub fn backend(&self) -> Option<&Backend> {
        self.backend.get().map(Registered::backend)
    }

    /// Where the transaction stands between statements, for the activity.
    pub fn standing(&self) -> Standing {
        match self.status() {
            TransactionStatus::Error => Standing::Aborted,
            TransactionStatus::Transaction => Standing::InTransaction,
            TransactionStatus::Idle => Standing::Idle,
        }
    }

    /// Keeps the connection's cancel key (given once, at startup).
    pub fn set_cancel_key(&self, key: CancelKey) {
        let _ = self.cancel_key.set(key);
    }

    pub fn cancel_key(&self) -> Option<&CancelKey> {
        self.cancel_key.get()
    }

    pub fn cursors(&self) -> MutexGuard<'_, Cursors> {
        self.cursors.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn sql_statements(&self) -> MutexGuard<'_, SqlStatements> {
        self.sql_statements
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub fn settings(&self) -> MutexGuard<'_, Settings> {
        self.settings.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Once the client has started (before its first statement): takes the session
    /// parameters it sent in its startup message (application_name, client_encoding, ...) as
    /// the session's own, and gives the session the `pg_catalog` its catalog queries read.
    pub fn start(&self, client: &impl ClientInfo) {
        if self.adopted_startup.swap(true, Ordering::AcqRel) {
            return;
        }
        let metadata = client.metadata();
        let user = metadata.get(METADATA_USER).cloned().unwrap_or_default();
        let facts = SessionFacts {
            database: metadata
                .get(METADATA_DATABASE)
                .cloned()
                .unwrap_or_else(|| user.clone()),
            user,
            pid: client.pid_and_secret_key().0,
            server_version: format!("PostgreSQL {SERVER_VERSION}"),
            settings: self.settings.clone(),
            activities: self.activities.clone(),
            db: self.db.clone(),
            statements: self.statements.clone(),
        };
        // Its transactions' row locks show this backend's pid in pg_locks.
        self.session.set_lock_tag(i64::from(facts.pid));
        let schema = self.session.schema_view();
        register_pg_catalog(self.session.context(), &self.db, &schema, facts);
        let mut settings = self.settings();
        // `options` carries more parameters (`-c TimeZone=UTC`), as libpq's PGOPTIONS does.
        for (name, value) in &startup_parameters(metadata) {
            if name.eq_ignore_ascii_case("timezone")
                && let Ok(zone) = time_zone_setting(value)
            {
                settings.adopt(name, &zone.name());
                self.session.set_time_zone(zone);
                continue;
            }
            if let Err(refused) = self.apply_transaction_parameter(name, value) {
                // A value the session cannot take leaves the parameter as it was.
                let _ = refused;
                continue;
            }
            settings.adopt(name, value);
        }
        let _ = self.starting.set(settings.clone());
    }

    /// The settings as the session started, which RESET goes back to.
    pub fn starting_settings(&self) -> Settings {
        self.starting.get().cloned().unwrap_or_default()
    }

    /// The session's settings with the four parameters that name transaction characteristics
    /// (`transaction_isolation`, `transaction_read_only` and their defaults) as rowdex's
    /// session has them now, for SHOW.
    pub fn current_settings(&self) -> Settings {
        let mut settings = self.settings().clone();
        let now = self.session.transaction_characteristics();
        let default = self.session.default_characteristics();
        let on_off = |on: bool| if on { "on" } else { "off" }.to_string();
        settings.set("transaction_isolation", now.isolation.name().to_string());
        settings.set("transaction_read_only", on_off(now.read_only));
        settings.set(
            "default_transaction_isolation",
            default.isolation.name().to_string(),
        );
        settings.set("default_transaction_read_only", on_off(default.read_only));
        settings
    }

    /// Applies a SET of a parameter that names a transaction characteristic to rowdex's
    /// session: the defaults change the next transactions, `transaction_*` the open one (and
    /// nothing outside a block, as in PostgreSQL); `lock_timeout` bounds the session's waits
    /// for row locks, `statement_timeout` its statements; `synchronous_commit` and rowdex's
    /// `durability` choose how far its commits are pushed. Other parameters are left alone. An
    /// error says what is wrong with the value.
    pub fn apply_transaction_parameter(&self, name: &str, value: &str) -> Result<(), String> {
        let name = name.to_lowercase();
        let level = || {
            IsolationLevel::from_name(value)
                .ok_or_else(|| format!("invalid value for parameter \"{name}\": \"{value}\""))
        };
        let flag = || match value.to_lowercase().as_str() {
            "on" | "true" | "yes" | "1" => Ok(true),
            "off" | "false" | "no" | "0" => Ok(false),
            _ => Err(format!("parameter \"{name}\" requires a Boolean value")),
        };
        let mut default = self.session.default_characteristics();
        match name.as_str() {
            "timezone" => {
                self.session.set_time_zone(time_zone_setting(value)?);
                return Ok(());
            }
            "lock_timeout" => {
                let timeout = milliseconds_setting(&name, value)?;
                self.session.set_lock_timeout(timeout);
                return Ok(());
            }
            "statement_timeout" => {
                let timeout = milliseconds_setting(&name, value)?;
                self.session.set_statement_timeout(timeout);
                return Ok(());
            }
            "synchronous_commit" | "durability" => {
                if let Some(chosen) = rowdex::durability_parameter(&name, value) {
                    self.session.set_durability(chosen?);
                }
                return Ok(());
            }
            "log_min_duration_statement" => {
                let after = log_duration_setting(&name, value)?;
                *self
                    .log_min_duration
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = after;
                return Ok(());
            }
            "default_transaction_isolation" => default.isolation = level()?,
            "default_transaction_read_only" => default.read_only = flag()?,
            "transaction_isolation" | "transaction_read_only" => {
                let mut now = self.session.transaction_characteristics();
                if name == "transaction_isolation" {
                    now.isolation = level()?;
                } else {
                    now.read_only = flag()?;
                }
                self.session.set_transaction_characteristics(now);
                return Ok(());
            }
            _ => return Ok(()),
        }
        self.session.set_default_characteristics(default);
        Ok(())
    }

    /// Whether `name` is a session parameter (so `SHOW name` is answered by the server).
    pub fn knows_parameter(&self, name: &str) -> bool {
        self.settings().knows(name)
    }

    pub fn block_failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }

    pub fn set_block_failed(&self, failed: bool) {
        self.failed.store(failed, Ordering::Release);
    }

    /// Marks the transaction block failed if one is open.
    pub fn fail_block_if_open(&self) {
        if self.session.in_transaction() {
            self.set_block_failed(true);
        }
    }

    /// What ReadyForQuery reports: idle, in a transaction, or in a failed one.
    pub fn status(&self) -> TransactionStatus {
        if self.block_failed() {
            TransactionStatus::Error
        } else if self.session.in_transaction() {
            TransactionStatus::Transaction
        } else {
            TransactionStatus::Idle
        }
    }
}

/// The zone a `TimeZone` value names (`LOCAL` and `DEFAULT`: the server's, UTC), or
/// PostgreSQL's message for one that names none.
pub fn time_zone_setting(value: &str) -> Result<TimeZone, String> {
    if value.eq_ignore_ascii_case("local") || value.eq_ignore_ascii_case("default") {
        return Ok(TimeZone::utc());
    }
    TimeZone::named(value)
        .ok_or_else(|| format!("invalid value for parameter \"TimeZone\": \"{value}\""))
}
