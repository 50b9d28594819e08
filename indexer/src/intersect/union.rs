//! The k-way merge of primary-key cursors, without duplicates: the several ranges of an IN
//! list on one index, and the arms of an OR (each any [`PkCursor`](super::PkCursor), so arms
//! may be IN lists, key ranges or other unions).
//!
//! A min-heap orders the positioned sub-cursors by current pk, so a seek only touches the
//! sub-cursors behind the target and a step only those on the current pk: a union of `k`
//! inputs costs O(log k) per pk, not O(k).

use super::stats::IntersectionStats;
use crate::Result;

/// A forward-only cursor a union merges (see [`PkCursor`](super::PkCursor) for the contract
/// of each method).
pub(super) trait MergedCursor: Send {
    fn current(&self) -> Option<&[u8]>;
    fn seek(&mut self, target: &[u8]) -> impl Future<Output = Result<Option<&[u8]>>> + Send;
    fn advance(&mut self) -> impl Future<Output = Result<Option<&[u8]>>> + Send;
    fn stats(&self) -> IntersectionStats;
}

pub(super) struct UnionCursor<C> {
    subs: Vec<C>,
    /// Min-heap (by current pk) of the indices of the positioned sub-cursors.
    heap: Vec<usize>,
    started: bool,
    /// The pk being stepped past, kept while the sub-cursors on it move.
    scratch: Vec<u8>,
}

impl<C: MergedCursor> UnionCursor<C> {
    pub(super) fn new(subs: Vec<C>) -> UnionCursor<C> {
        UnionCursor {
            heap: Vec::with_capacity(subs.len()),
            subs,
            started: false,
            scratch: Vec::new(),
        }
    }

    pub(super) fn current(&self) -> Option<&[u8]> {
        self.heap.first().and_then(|&i| self.subs[i].current())
    }

    /// I/O done so far by every sub-cursor.
    pub(super) fn stats(&self) -> IntersectionStats {
        let mut stats = IntersectionStats::default();
        for sub in &self.subs {
            stats += sub.stats();
        }
        stats
    }

    /// Positions every sub-cursor (on its first pk, or at `target`) and builds the heap.
    async fn start(&mut self, target: Option<&[u8]>) -> Result<()> {
        // Rebuilt from scratch, so that a retry after a failed read starts over cleanly.
        self.heap.clear();
        for (i, sub) in self.subs.iter_mut().enumerate() {
            let positioned = match target {
                Some(target) => sub.seek(target).await?.is_some(),
                None if sub.current().is_some() => true,
                None => sub.advance().await?.is_some(),
            };
            if positioned {
                self.heap.push(i);
            }
        }
        for i in (0..self.heap.len() / 2).rev() {
            sift_down(&mut self.heap, &self.subs, i);
        }
        self.started = true;
        Ok(())
    }

    pub(super) async fn seek(&mut self, target: &[u8]) -> Result<Option<&[u8]>> {
        if !self.started {
            self.start(Some(target)).await?;
            return Ok(self.current());
        }
        while let Some(&top) = self.heap.first() {
            let sub = &mut self.subs[top];
            if sub.current().is_some_and(|pk| pk >= target) {
                break;
            }
            let positioned = sub.seek(target).await?.is_some();
            self.reheap_top(positioned);
        }
        Ok(self.current())
    }

    pub(super) async fn advance(&mut self) -> Result<Option<&[u8]>> {
        if !self.started {
            self.start(None).await?;
            return Ok(self.current());
        }
        let Some(&top) = self.heap.first() else {
            return Ok(None);
        };
        if let Some(pk) = self.subs[top].current() {
            set(&mut self.scratch, pk);
        }
        // Step every sub-cursor on the current pk: that is how duplicates across inputs vanish.
        while let Some(&top) = self.heap.first() {
            let sub = &mut self.subs[top];
            if sub.current().is_none_or(|pk| pk > self.scratch.as_slice()) {
                break;
            }
            let positioned = sub.advance().await?.is_some();
            self.reheap_top(positioned);
        }
        Ok(self.current())
    }

    /// Restores the heap after its top sub-cursor moved (or, if not `positioned`, ran out).
    fn reheap_top(&mut self, positioned: bool) {
        if !positioned {
            self.heap.swap_remove(0);
        }
        sift_down(&mut self.heap, &self.subs, 0);
    }
}

/// Sifts `heap[i]` down to its place in the min-heap of sub-cursors keyed by current pk.
fn sift_down<C: MergedCursor>(heap: &mut [usize], subs: &[C], mut i: usize) {
    loop {
        let key = |slot: usize| subs[heap[slot]].current();
        let left = 2 * i + 1;
        if left >= heap.len() {
            return;
        }
        let right = left + 1;
        let child = if right < heap.len() && key(right) < key(left) {
            right
        } else {
            left
        };
        if key(child) >= key(i) {
            return;
        }
        heap.swap(i, child);
        i = child;
    }
}

/// Overwrites `buf` with `bytes`, keeping its allocation.
pub(super) fn set(buf: &mut Vec<u8>, bytes: &[u8]) {
    buf.clear();
    buf.extend_from_slice(bytes);
}
