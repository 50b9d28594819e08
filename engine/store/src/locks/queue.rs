//! One key's lock: who holds it (in which mode) and who waits, first come first served. A
//! request is granted at once when it is compatible with every other holder and nobody waits
//! ahead of it; a holder asking for more (shared to exclusive) goes before the waiters, since
//! they wait for it anyway. A release grants the waiters at the front of the queue for as long
//! as they are compatible with the holders, so a run of shared waiters is granted together and
//! an exclusive waiter is never passed by later shared ones.

use std::collections::VecDeque;

use tokio::sync::oneshot;

use crate::locks::mode::{LockMode, Owner};

/// A request waiting in a key's queue; `wake` tells it the lock is now its.
#[derive(Debug)]
pub(crate) struct Waiter {
    pub(crate) ticket: u64,
    pub(crate) owner: Owner,
    pub(crate) mode: LockMode,
    pub(crate) wake: oneshot::Sender<()>,
}

/// The state of one locked key.
#[derive(Debug, Default)]
pub(crate) struct KeyQueue {
    pub(crate) holders: Vec<(Owner, LockMode)>,
    pub(crate) waiters: VecDeque<Waiter>,
}

/// What a request finds.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Entry {
    /// Granted (or already held in a mode as strong).
    Granted,
    /// It must wait.
    Blocked,
}

impl KeyQueue {
    /// Whether nothing holds or waits: the key's entry can go.
    pub(crate) fn is_idle(&self) -> bool {
        self.holders.is_empty() && self.waiters.is_empty()
    }

    fn held_by(&self, owner: Owner) -> Option<LockMode> {
        self.holders
            .iter()
            .filter(|(holder, _)| *holder == owner)
            .map(|(_, mode)| *mode)
            .max()
    }

    /// Whether `owner` may hold `mode` beside the other holders.
    fn compatible(&self, owner: Owner, mode: LockMode) -> bool {
        self.holders
            .iter()
            .all(|(holder, held)| *holder == owner || held.compatible(mode))
    }

    /// Grants `mode` to `owner` if it can have it now (see the module's header).
    pub(crate) fn request(&mut self, owner: Owner, mode: LockMode) -> Entry {
        let held = self.held_by(owner);
        if held.is_some_and(|held| held >= mode) {
            return Entry::Granted;
        }
        // A holder upgrading goes before the queue, which waits for it anyway.
        let first_in_line = held.is_some() || self.waiters.is_empty();
        if first_in_line && self.compatible(owner, mode) {
            self.grant(owner, mode);
            return Entry::Granted;
        }
        Entry::Blocked
    }

    fn grant(&mut self, owner: Owner, mode: LockMode) {
        match self.holders.iter_mut().find(|(holder, _)| *holder == owner) {
            Some(held) => held.1 = held.1.max(mode),
            None => self.holders.push((owner, mode)),
        }
    }

    /// Queues a blocked request: behind the others, or, for a holder upgrading, in front.
    pub(crate) fn enqueue(&mut self, waiter: Waiter) {
        if self.held_by(waiter.owner).is_some() {
            self.waiters.push_front(waiter);
        } else {
            self.waiters.push_back(waiter);
        }
    }

    /// Takes the waiter with `ticket` out of the queue (it gave up); false when it is no
    /// longer there (it was granted meanwhile). Waiters behind it may be grantable now.
    pub(crate) fn withdraw(&mut self, ticket: u64) -> bool {
        let Some(at) = self.waiters.iter().position(|w| w.ticket == ticket) else {
            return false;
        };
        self.waiters.remove(at);
        self.promote();
        true
    }

    /// Releases whatever `owner` holds on this key, and grants the waiters it unblocks.
    pub(crate) fn release(&mut self, owner: Owner) {
        self.holders.retain(|(holder, _)| *holder != owner);
        self.promote();
    }

    /// Grants the waiters at the front for as long as they are compatible with the holders.
    fn promote(&mut self) {
        while let Some(front) = self.waiters.front() {
            if !self.compatible(front.owner, front.mode) {
                break;
            }
            let Some(waiter) = self.waiters.pop_front() else {
                break;
            };
            self.grant(waiter.owner, waiter.mode);
            // A waiter that gave up meanwhile holds the lock until its transaction ends.
            let _ = waiter.wake.send(());
        }
    }

    /// Adds to `out` whom the waiting request with `ticket` waits for: the holders it
    /// conflicts with (unless `from` > 0: a search gathered them already) and the waiters ahead
    /// of it it conflicts with, from position `from` on. Returns the position of the request
    /// (how far the search has looked into this queue); None when it no longer waits here.
    pub(crate) fn blockers(&self, ticket: u64, from: usize, out: &mut Vec<Owner>) -> Option<usize> {
        let at = self.waiters.iter().position(|w| w.ticket == ticket)?;
        let (owner, mode) = (self.waiters[at].owner, self.waiters[at].mode);
        if from == 0 {
            out.extend(
                self.holders
                    .iter()
                    .filter(|(holder, held)| *holder != owner && !held.compatible(mode))
                    .map(|(holder, _)| *holder),
            );
        }
        out.extend(
            self.waiters
                .iter()
                .take(at)
                .skip(from)
                .filter(|w| w.owner != owner && !w.mode.compatible(mode))
                .map(|w| w.owner),
        );
        Some(at)
    }
}
