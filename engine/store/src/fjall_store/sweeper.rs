//! The sweeper: a thread that, for each placed keyspace whose options ask for sweeps
//! (`StorageOptions::sweep_seconds`, a table with a TTL), flushes its memtable and compacts it
//! whole once per period, so that the expiry rules' filter meets every entry and the space of
//! expired ones comes back even where no write would compact them.

use std::collections::HashMap;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, PoisonError, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::placement::Layout;

/// How often the sweeper looks whether a sweep is due.
const TICK: Duration = Duration::from_millis(200);

/// The running sweeper; dropping it stops the thread (after the sweep under way, if any).
pub(super) struct Sweeper {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Sweeper {
    /// Starts the thread over the store's `layout`.
    pub(super) fn start(layout: Arc<RwLock<Arc<Layout>>>) -> Sweeper {
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("rowdex-sweeper".to_string())
            .spawn(move || {
                let mut last: HashMap<u64, Instant> = HashMap::new();
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(TICK) {
                    let layout = Arc::clone(&layout.read().unwrap_or_else(PoisonError::into_inner));
                    for (keyspace, period) in layout.sweeps() {
                        let swept = last.entry(keyspace.id()).or_insert_with(Instant::now);
                        if swept.elapsed() < period {
                            continue;
                        }
                        // A failed sweep is tried again at the next period; a failure that
                        // matters (a write error) poisons the database, and its next commit
                        // reports it.
                        let _ = keyspace
                            .rotate_memtable_and_wait()
                            .and_then(|()| keyspace.major_compact());
                        *swept = Instant::now();
                    }
                }
            })
            .ok();
        Sweeper {
            stop: Some(stop),
            thread,
        }
    }
}

impl Sweeper {
    /// A sweeper that runs no thread (what a closing store keeps in place of its own).
    pub(super) fn stopped() -> Sweeper {
        Sweeper {
            stop: None,
            thread: None,
        }
    }
}

impl Drop for Sweeper {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
