//! Where "now" comes from. A table's TTL is measured on its database's clock: the system clock,
//! or a [`ManualClock`] that tests and replays move by hand.

use std::fmt::Debug;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A source of the current time.
pub trait Clock: Send + Sync + Debug {
    /// Microseconds since 1970-01-01 00:00:00 UTC.
    fn now_micros(&self) -> i64;
}

/// The operating system's clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_micros(&self) -> i64 {
        match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(since) => i64::try_from(since.as_micros()).unwrap_or(i64::MAX),
            // A clock set before 1970: count backwards.
            Err(before) => i64::try_from(before.duration().as_micros()).map_or(i64::MIN, |m| -m),
        }
    }
}

/// A clock that stands still until it is set or advanced.
#[derive(Debug, Default)]
pub struct ManualClock {
    micros: AtomicI64,
}

impl ManualClock {
    /// A clock showing `micros` since the epoch.
    pub fn new(micros: i64) -> ManualClock {
        ManualClock {
            micros: AtomicI64::new(micros),
        }
    }

    pub fn set(&self, micros: i64) {
        self.micros.store(micros, Ordering::SeqCst);
    }

    pub fn advance(&self, by: Duration) {
        let by = i64::try_from(by.as_micros()).unwrap_or(i64::MAX);
        // fetch_update cannot fail with a closure that always returns Some.
        let _ = self
            .micros
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |now| {
                Some(now.saturating_add(by))
            });
    }
}

impl Clock for ManualClock {
    fn now_micros(&self) -> i64 {
        self.micros.load(Ordering::SeqCst)
    }
}
