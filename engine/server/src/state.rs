//! What one connection keeps between statements beside its rowdex [`Session`]: the session
//! parameters it answers itself, and whether its transaction block failed (after an error in a
//! transaction, PostgreSQL refuses every statement but ROLLBACK; rowdex's server does the same,
//! so that a client sees the rules its driver was written for).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use pgwire::messages::response::TransactionStatus;
use rowdex::Session;

use crate::settings::Settings;

pub struct SessionState {
    pub session: Session,
    settings: Mutex<Settings>,
    /// An error happened inside the open transaction block; only ROLLBACK (or COMMIT, which
    /// then rolls back) or ROLLBACK TO a savepoint ends it.
    failed: AtomicBool,
    /// The startup message's parameters were copied into the settings.
    adopted_startup: AtomicBool,
}

impl SessionState {
    pub fn new(session: Session) -> Self {
        SessionState {
            session,
            settings: Mutex::new(Settings::default()),
            failed: AtomicBool::new(false),
            adopted_startup: AtomicBool::new(false),
        }
    }

    pub fn settings(&self) -> MutexGuard<'_, Settings> {
        self.settings.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes the session parameters a client sent in its startup message (application_name,
    /// client_encoding, ...) as the session's own, once.
    pub fn adopt_startup<'a>(
        &self,
        parameters: impl IntoIterator<Item = (&'a String, &'a String)>,
    ) {
        if self.adopted_startup.swap(true, Ordering::AcqRel) {
            return;
        }
        let mut settings = self.settings();
        for (name, value) in parameters {
            settings.adopt(name, value);
        }
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
