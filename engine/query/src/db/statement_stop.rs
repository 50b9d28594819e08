//! What ends a statement's wait for a row lock besides the lock itself: a cancel request (the
//! session's interrupt, which the server raises for a write it must not drop mid-commit) and
//! the statement's deadline (`statement_timeout`, counted from the statement's start). Both
//! fail the statement with 57014, as PostgreSQL's do; `lock_timeout` (55P03) bounds each wait
//! on its own inside the lock table.

use std::future::Future;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::error::{Error, Result};

/// A connection's interrupt: raised by a cancel request while a statement runs, lowered when
/// the statement has ended. Shared by every handle of one connection.
#[derive(Debug)]
pub(crate) struct Interrupt {
    raised: watch::Sender<bool>,
}

impl Default for Interrupt {
    fn default() -> Interrupt {
        Interrupt {
            raised: watch::Sender::new(false),
        }
    }
}

impl Interrupt {
    pub(crate) fn raise(&self) {
        self.raised.send_replace(true);
    }

    pub(crate) fn lower(&self) {
        self.raised.send_replace(false);
    }
}

/// One statement's limits on waiting: its deadline and its connection's interrupt.
#[derive(Debug, Clone)]
pub(crate) struct StatementStop {
    deadline: Option<Instant>,
    /// None: nothing can interrupt the statement (one run by rowdex itself).
    interrupt: Option<watch::Receiver<bool>>,
}

impl StatementStop {
    /// The limits of a statement starting now under `statement_timeout` (None or zero: none).
    pub(crate) fn starting_now(interrupt: &Interrupt, timeout: Option<Duration>) -> Self {
        StatementStop {
            deadline: timeout
                .filter(|limit| !limit.is_zero())
                .and_then(|limit| Instant::now().checked_add(limit)),
            interrupt: Some(interrupt.raised.subscribe()),
        }
    }

    /// No limits: a wait ends when the lock is granted (or `lock_timeout` runs out).
    pub(crate) fn unbounded() -> Self {
        StatementStop {
            deadline: None,
            interrupt: None,
        }
    }

    /// `wait`'s outcome, unless the interrupt is raised or the deadline passes first (the
    /// future is then dropped: a lock wait leaves its queue). A wait that is over at once wins
    /// over an interrupt already raised: a statement that need not wait is not stopped here.
    pub(crate) async fn bound<T>(&self, wait: impl Future<Output = Result<T>>) -> Result<T> {
        let mut interrupt = self.interrupt.clone();
        let deadline = self.deadline.map(tokio::time::Instant::from_std);
        let timed_out = async {
            match deadline {
                Some(deadline) => tokio::time::sleep_until(deadline).await,
                None => std::future::pending().await,
            }
        };
        let cancelled = async {
            // The sender lives as long as the session this statement runs in; were it gone,
            // nobody could raise it.
            let raised = match interrupt.as_mut() {
                Some(interrupt) => interrupt.wait_for(|raised| *raised).await.is_ok(),
                None => false,
            };
            if !raised {
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            biased;
            outcome = wait => outcome,
            () = cancelled => Err(Error::StatementCancelled),
            () = timed_out => Err(Error::StatementTimeout),
        }
    }
}
