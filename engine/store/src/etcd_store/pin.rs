//! Which revision a snapshot reads, and the oldest revision any snapshot still reads.
//!
//! [`crate::KvStore::snapshot`] cannot wait for the cluster, so a snapshot does not know its
//! revision when it is made: it takes the revision its first read is answered at. That is a
//! later state than the one at its creation, which is linearizable as long as no write this
//! process made after the creation shows through. So every commit of this process tells the
//! pins still waiting for their first read; a pin whose creation preceded the commit caps its
//! revision just below the commit's, and a first read answered at a higher revision is read
//! again at the cap.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// The revision one snapshot reads.
#[derive(Debug)]
pub(super) struct Pin {
    state: Mutex<PinState>,
    /// The newest revision the store had seen at the pin's creation: its revision is never
    /// lower, so compacting below it cannot harm it.
    floor: i64,
}

#[derive(Debug, Clone, Copy)]
enum PinState {
    /// Not read yet; `cap` is one below the first commit made after the creation.
    Pending {
        created_after: u64,
        cap: Option<i64>,
    },
    Pinned(i64),
}

impl Pin {
    /// The revision to read at, or `None`: read the latest and [`Pin::settle`] on its
    /// revision.
    pub(super) fn revision(&self) -> Option<i64> {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        match *state {
            PinState::Pinned(revision) => Some(revision),
            PinState::Pending { cap: Some(cap), .. } => {
                *state = PinState::Pinned(cap);
                Some(cap)
            }
            PinState::Pending { cap: None, .. } => None,
        }
    }

    /// Settles the pin after a read of the latest state answered at `answered`: returns the
    /// pinned revision, which is `answered` unless a concurrent first read or a commit of this
    /// process settled it lower (then the read must be repeated there).
    pub(super) fn settle(&self, answered: i64) -> i64 {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        let pinned = match *state {
            PinState::Pinned(revision) => revision,
            PinState::Pending { cap, .. } => cap.map_or(answered, |cap| cap.min(answered)),
        };
        *state = PinState::Pinned(pinned);
        pinned
    }

    /// The lowest revision this pin can read.
    fn lowest(&self) -> i64 {
        let state = self
            .state
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        match *state {
            PinState::Pinned(revision) => revision,
            PinState::Pending { .. } => self.floor,
        }
    }

    fn note_commit(&self, sequence: u64, revision: i64) {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        if let PinState::Pending { created_after, cap } = &mut *state
            && sequence > *created_after
        {
            let below = revision - 1;
            *cap = Some(cap.map_or(below, |cap| cap.min(below)));
        }
    }
}

/// The pins of one store's live snapshots, and the commit sequence they are ordered by.
#[derive(Debug, Default)]
pub(super) struct Pins {
    live: Mutex<Vec<Weak<Pin>>>,
    /// Commits started so far by this process.
    commits_started: AtomicU64,
    /// The newest revision this process has seen in any answer.
    newest_seen: AtomicI64,
}

impl Pins {
    /// A pin for a new snapshot.
    pub(super) fn pin(&self) -> Arc<Pin> {
        let pin = Arc::new(Pin {
            state: Mutex::new(PinState::Pending {
                created_after: self.commits_started.load(Ordering::SeqCst),
                cap: None,
            }),
            floor: self.newest_seen.load(Ordering::SeqCst),
        });
        let mut live = self
            .live
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        if live.len() >= 64 && live.len().is_power_of_two() {
            live.retain(|pin| pin.strong_count() > 0);
        }
        live.push(Arc::downgrade(&pin));
        pin
    }

    /// Numbers a commit about to be sent.
    pub(super) fn commit_started(&self) -> u64 {
        self.commits_started.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// A commit numbered `sequence` was applied at `revision`.
    pub(super) fn commit_applied(&self, sequence: u64, revision: i64) {
        self.saw(revision);
        let mut live = self
            .live
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        live.retain(|pin| match pin.upgrade() {
            Some(pin) => {
                pin.note_commit(sequence, revision);
                true
            }
            None => false,
        });
    }

    /// An answer came at `revision`.
    pub(super) fn saw(&self, revision: i64) {
        self.newest_seen.fetch_max(revision, Ordering::SeqCst);
    }

    pub(super) fn newest_seen(&self) -> i64 {
        self.newest_seen.load(Ordering::SeqCst)
    }

    /// The lowest revision a live snapshot of this process may read (`None`: no snapshot).
    pub(super) fn oldest_live(&self) -> Option<i64> {
        let live = self
            .live
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        live.iter()
            .filter_map(Weak::upgrade)
            .map(|pin| pin.lowest())
            .min()
    }
}
