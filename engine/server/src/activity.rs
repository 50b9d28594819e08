//! What each connection of a server is doing: one [`Backend`] per connection from its startup
//! to its end, in the server's [`Activities`], for `pg_stat_activity`, `pg_cancel_backend` and
//! `pg_terminate_backend`.
//!
//! A backend's state follows PostgreSQL's: `active` while a statement runs, then `idle`, `idle
//! in transaction` or `idle in transaction (aborted)` by the transaction it left; `query` is the
//! last statement's text (the whole query string of a simple query, as PostgreSQL shows it);
//! `xact_start` is when the open transaction's first statement started.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use dashmap::DashMap;
use pgwire::messages::startup::SecretKey;
use rowdex::{Progress, Work};
use tokio::sync::Notify;

use crate::cancel::CancelRegistry;

/// Every backend of one server, by process id.
#[derive(Debug)]
pub struct Activities {
    backends: DashMap<i32, Arc<Backend>>,
    cancels: Arc<CancelRegistry>,
}

/// Where a backend's transaction stands when no statement runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    Idle,
    InTransaction,
    Aborted,
}

/// A backend's state, as `pg_stat_activity.state` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Active,
    Idle(Standing),
}

impl State {
    pub fn name(self) -> &'static str {
        match self {
            State::Active => "active",
            State::Idle(Standing::Idle) => "idle",
            State::Idle(Standing::InTransaction) => "idle in transaction",
            State::Idle(Standing::Aborted) => "idle in transaction (aborted)",
        }
    }
}

/// What a backend is doing now.
#[derive(Debug, Clone)]
pub struct Doing {
    pub state: State,
    /// The last statement's text (the one running while `Active`).
    pub query: String,
    pub query_start: Option<SystemTime>,
    pub xact_start: Option<SystemTime>,
    pub state_change: SystemTime,
}

/// A long operation a backend runs, as its last progress report left it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ongoing {
    /// CREATE INDEX's backfill: rows read of the table's estimate.
    IndexBuild {
        table: String,
        index: String,
        rows_done: u64,
        rows_total: u64,
    },
    /// COPY FROM: bytes read (of the file's size, 0 for data a client sends) and rows loaded.
    CopyFrom {
        table: String,
        from_client: bool,
        bytes_done: u64,
        bytes_total: u64,
        rows: u64,
    },
}

impl Ongoing {
    pub fn of(progress: &Progress<'_>) -> Ongoing {
        match progress.work {
            Work::IndexBuild { table, index } => Ongoing::IndexBuild {
                table: table.to_string(),
                index: index.to_string(),
                rows_done: progress.done,
                rows_total: progress.total,
            },
            Work::CopyFrom {
                table,
                source,
                rows,
            } => Ongoing::CopyFrom {
                table: table.to_string(),
                from_client: source.eq_ignore_ascii_case("stdin"),
                bytes_done: progress.done,
                bytes_total: progress.total,
                rows,
            },
        }
    }
}

/// Where a session's progress reports land, shared by its callback and its backend.
pub type ProgressSlot = Arc<Mutex<Option<Ongoing>>>;

/// One connection, as the server's monitoring sees it.
#[derive(Debug)]
pub struct Backend {
    pub pid: i32,
    secret: SecretKey,
    pub user: String,
    pub database: String,
    pub client: Option<SocketAddr>,
    pub started: SystemTime,
    application_name: Mutex<String>,
    doing: Mutex<Doing>,
    /// Notified to close the connection (`pg_terminate_backend`).
    terminate: Arc<Notify>,
    /// The long operation it runs, if any.
    progress: ProgressSlot,
}

/// Who a new backend is.
#[derive(Debug)]
pub struct Startup {
    pub pid: i32,
    pub secret: SecretKey,
    pub user: String,
    pub database: String,
    pub client: Option<SocketAddr>,
    pub application_name: String,
    pub terminate: Arc<Notify>,
    pub progress: ProgressSlot,
}

/// A backend's entry, removed from its server's [`Activities`] when dropped (the connection
/// ended).
#[derive(Debug)]
pub struct Registered {
    backend: Arc<Backend>,
    activities: Arc<Activities>,
}

impl Activities {
    pub fn new(cancels: Arc<CancelRegistry>) -> Activities {
        Activities {
            backends: DashMap::new(),
            cancels,
        }
    }

    /// Adds a backend that has just started (idle, no statement yet).
    pub fn register(self: &Arc<Self>, startup: Startup) -> Registered {
        let now = SystemTime::now();
        let backend = Arc::new(Backend {
            pid: startup.pid,
            secret: startup.secret,
            user: startup.user,
            database: startup.database,
            client: startup.client,
            started: now,
            application_name: Mutex::new(startup.application_name),
            doing: Mutex::new(Doing {
                state: State::Idle(Standing::Idle),
                query: String::new(),
                query_start: None,
                xact_start: None,
                state_change: now,
            }),
            terminate: startup.terminate,
            progress: startup.progress,
        });
        self.backends.insert(backend.pid, backend.clone());
        Registered {
            backend,
            activities: self.clone(),
        }
    }

    /// Every backend, the longest running first.
    pub fn backends(&self) -> Vec<Arc<Backend>> {
        let mut all: Vec<Arc<Backend>> = self.backends.iter().map(|e| e.value().clone()).collect();
        all.sort_by_key(|backend| (backend.started, backend.pid));
        all
    }

    /// How many backends there are.
    pub fn count(&self) -> usize {
        self.backends.len()
    }

    /// Cancels the statement backend `pid` runs, as a cancel request would; false when there
    /// is no such backend.
    pub fn cancel(&self, pid: i32) -> bool {
        let Some(backend) = self.backends.get(&pid).map(|e| e.value().clone()) else {
            return false;
        };
        let cancels = self.cancels.clone();
        let secret = backend.secret.clone();
        // Catalog functions are not async: the request is sent from a task of its own, as a
        // cancel request from another connection would arrive.
        tokio::spawn(async move { cancels.cancel(pid, &secret).await });
        true
    }

    /// Closes backend `pid`'s connection (its open transaction rolls back); false when there
    /// is no such backend.
    pub fn terminate(&self, pid: i32) -> bool {
        match self.backends.get(&pid) {
            Some(backend) => {
                backend.terminate.notify_one();
                true
            }
            None => false,
        }
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.activities.backends.remove(&self.backend.pid);
    }
}

impl Registered {
    pub fn backend(&self) -> &Backend {
        &self.backend
    }
}

impl Backend {
    fn doing_mut(&self) -> MutexGuard<'_, Doing> {
        self.doing.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What the backend is doing now.
    pub fn doing(&self) -> Doing {
        self.doing_mut().clone()
    }

    pub fn application_name(&self) -> String {
        self.application_name
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub fn set_application_name(&self, name: &str) {
        *self
            .application_name
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = name.to_string();
    }

    /// A statement starts: `active`, with its text; a transaction starts with it unless one is
    /// open.
    pub fn statement_started(&self, query: &str, in_transaction: bool) {
        let now = SystemTime::now();
        let mut doing = self.doing_mut();
        doing.state = State::Active;
        doing.query.clear();
        doing.query.push_str(query);
        doing.query_start = Some(now);
        doing.state_change = now;
        if !in_transaction || doing.xact_start.is_none() {
            doing.xact_start = Some(now);
        }
    }

    /// The long operation it runs now, if any.
    pub fn ongoing(&self) -> Option<Ongoing> {
        self.progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The statement ended, leaving the transaction as `standing` says.
    pub fn statement_ended(&self, standing: Standing) {
        *self.progress.lock().unwrap_or_else(PoisonError::into_inner) = None;
        let mut doing = self.doing_mut();
        doing.state = State::Idle(standing);
        doing.state_change = SystemTime::now();
        // A failed transaction shows no start, as in PostgreSQL: it only waits for its end.
        if standing != Standing::InTransaction {
            doing.xact_start = None;
        }
    }
}
