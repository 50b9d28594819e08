//! The ASYNC_WAL flusher: a thread that pushes fjall's journal to the operating system once
//! per [`ASYNC_WAL_PERIOD`] while ASYNC_WAL commits wait in the journal writer's buffer, so
//! such a commit survives a killed process from at most that long after it returned.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;

use fjall::{Database, PersistMode};

use crate::durability::ASYNC_WAL_PERIOD;

/// The running flusher; dropping it stops the thread (after a last push, if one is owed).
pub(super) struct Flusher {
    owed: Arc<AtomicBool>,
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Flusher {
    /// Starts the thread for `db`.
    pub(super) fn start(db: Database) -> Flusher {
        let owed = Arc::new(AtomicBool::new(false));
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = {
            let owed = Arc::clone(&owed);
            std::thread::Builder::new()
                .name("rowdex-async-wal".to_string())
                .spawn(move || {
                    loop {
                        let tick = stopped.recv_timeout(ASYNC_WAL_PERIOD);
                        if owed.swap(false, Ordering::AcqRel) {
                            // A failed push poisons the database; the next commit reports it.
                            let _ = db.persist(PersistMode::Buffer);
                        }
                        if !matches!(tick, Err(RecvTimeoutError::Timeout)) {
                            break;
                        }
                    }
                })
                .ok()
        };
        Flusher {
            owed,
            stop: Some(stop),
            thread,
        }
    }

    /// An ASYNC_WAL commit just returned: push the journal at the next tick. False when no
    /// thread runs (the system refused one): the caller pushes now instead.
    pub(super) fn wants_push(&self) -> bool {
        self.owed.store(true, Ordering::Release);
        self.thread.is_some()
    }
}

impl Drop for Flusher {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
