//! Counting the batches applied to a backend, so that a transaction can tell that nothing was
//! committed since its snapshot without reading anything.
//!
//! Two counters, like a sequence lock: `started` goes up before a batch is applied, `finished`
//! after. A transaction reads `finished` (its mark) just before it takes a snapshot: every
//! batch counted there was applied before the snapshot and is in it. Later, `started` equal to
//! the mark means that every batch ever started had finished by the time the mark was read and
//! none has started since, so the latest state is still the snapshot's. Any other value only
//! says "maybe changed", and the caller reads and compares as it would without the count.
//!
//! What it saves: a locking UPDATE checks that its row did not change between its snapshot and
//! its lock (two reads of each row entry), and a commit re-reads everything the transaction
//! read; with no commit in between (one client at a time, or a quiet table) both are answered
//! by one atomic load.

use std::sync::atomic::{AtomicU64, Ordering};

/// Batches started and finished on one backend. Every write to the backend goes through
/// [`CommitCount::applying`].
#[derive(Debug, Default)]
pub(crate) struct CommitCount {
    started: AtomicU64,
    finished: AtomicU64,
}

impl CommitCount {
    /// The mark to take just before a snapshot.
    pub(crate) fn mark(&self) -> u64 {
        self.finished.load(Ordering::SeqCst)
    }

    /// Whether nothing was applied since `mark` was taken: every snapshot taken after the mark
    /// still shows the latest state.
    pub(crate) fn unchanged_since(&self, mark: u64) -> bool {
        self.started.load(Ordering::SeqCst) == mark
    }

    /// Counts a batch as started; it counts as finished when the guard is dropped, whether
    /// the apply succeeded or not (a failed one may have changed something all the same).
    pub(crate) fn applying(&self) -> Applying<'_> {
        self.started.fetch_add(1, Ordering::SeqCst);
        Applying { count: self }
    }
}

/// A batch being applied (see [`CommitCount::applying`]).
pub(crate) struct Applying<'a> {
    count: &'a CommitCount,
}

impl Drop for Applying<'_> {
    fn drop(&mut self) {
        self.count.finished.fetch_add(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mark_holds_until_a_batch_starts() {
        let count = CommitCount::default();
        let mark = count.mark();
        assert!(count.unchanged_since(mark));
        let applying = count.applying();
        // Started, not finished: the latest state may already differ from the snapshot.
        assert!(!count.unchanged_since(mark));
        drop(applying);
        assert!(!count.unchanged_since(mark));
        let later = count.mark();
        assert!(count.unchanged_since(later));
    }

    #[test]
    fn a_mark_taken_while_a_batch_applies_is_never_unchanged() {
        let count = CommitCount::default();
        let applying = count.applying();
        // The snapshot after this mark may or may not hold the batch being applied.
        let mark = count.mark();
        assert!(!count.unchanged_since(mark));
        drop(applying);
        assert!(!count.unchanged_since(mark));
    }
}
