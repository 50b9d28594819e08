//! The multi-version map behind [`crate::MemoryStore`].
//!
//! Every committed batch gets the next sequence number; each key keeps a list of versions
//! (ascending sequence, `None` = deleted). A reader at sequence `s` sees, per key, the newest
//! version with sequence `<= s`. Live snapshots are counted per sequence; the oldest one is the
//! *horizon*: versions older than the newest one at or below the horizon can never be read
//! again and are dropped, as are keys whose only remaining version is a delete.
//!
//! Pruning happens for the touched keys on every write, and for all keys that still carry
//! history (tracked in a set, so the sweep does not walk the whole map) whenever the horizon
//! advances because the oldest snapshot was released.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet};

use crate::range::{EntryVisitor, collect_page, count_keys, visit_entries};
use crate::{CountPage, Direction, KeyRange, Mutation, Result, ScanPage, WriteBatch};

#[derive(Debug)]
struct Version {
    seq: u64,
    value: Option<Vec<u8>>,
}

#[derive(Debug, Default)]
pub(super) struct MvccState {
    versions: BTreeMap<Vec<u8>, Vec<Version>>,
    /// Sequence of the newest committed batch.
    committed: u64,
    /// Sequence → number of live snapshots reading at it.
    pinned: BTreeMap<u64, usize>,
    /// Keys holding more than their single live version (old versions or a delete marker).
    history: BTreeSet<Vec<u8>>,
}

impl MvccState {
    pub(super) fn committed(&self) -> u64 {
        self.committed
    }

    /// The value of `key` as of sequence `at`.
    pub(super) fn get(&self, key: &[u8], at: u64) -> Option<Vec<u8>> {
        self.versions
            .get(key)
            .and_then(|versions| visible(versions, at))
            .map(<[u8]>::to_vec)
    }

    /// Whether `key` holds a value as of sequence `at`.
    pub(super) fn contains(&self, key: &[u8], at: u64) -> bool {
        self.versions
            .get(key)
            .is_some_and(|versions| visible(versions, at).is_some())
    }

    /// Counts up to `cap` entries of `range` as of sequence `at`.
    pub(super) fn count(&self, range: &KeyRange, cap: u64, at: u64) -> Result<CountPage> {
        if range.is_empty() {
            return Ok(CountPage::default());
        }
        let keys = self
            .versions
            .range::<[u8], _>(range.bounds())
            .filter(move |(_, versions)| visible(versions, at).is_some())
            .map(|(key, _)| Ok(key));
        count_keys(keys, range, cap)
    }

    /// The bytes of the keys and values of `range`'s entries as of sequence `at`, and of the
    /// whole map with the older versions it keeps.
    pub(super) fn size(&self, range: Option<&KeyRange>, at: u64) -> u64 {
        let entry_bytes = |(key, versions): (&Vec<u8>, &Vec<Version>)| match range {
            Some(_) => visible(versions, at).map_or(0, |value| key.len() + value.len()),
            None => versions
                .iter()
                .map(|version| key.len() + version.value.as_ref().map_or(0, Vec::len))
                .sum(),
        };
        let total: usize = match range {
            Some(range) if range.is_empty() => 0,
            Some(range) => self
                .versions
                .range::<[u8], _>(range.bounds())
                .map(entry_bytes)
                .sum(),
            None => self.versions.iter().map(entry_bytes).sum(),
        };
        total as u64
    }

    /// One page of `range` as of sequence `at`.
    pub(super) fn scan(
        &self,
        range: &KeyRange,
        direction: Direction,
        limit: usize,
        at: u64,
    ) -> Result<ScanPage> {
        if range.is_empty() {
            // `BTreeMap::range` panics on inverted bounds.
            return Ok(ScanPage::default());
        }
        let entries =
            self.versions
                .range::<[u8], _>(range.bounds())
                .filter_map(move |(key, versions)| {
                    visible(versions, at).map(|value| Ok((key.clone(), value.to_vec())))
                });
        match direction {
            Direction::Forward => collect_page(entries, range, direction, limit),
            Direction::Reverse => collect_page(entries.rev(), range, direction, limit),
        }
    }

    /// [`MvccState::scan`], handing the entries to `visit` in place.
    pub(super) fn visit(
        &self,
        range: &KeyRange,
        direction: Direction,
        limit: usize,
        at: u64,
        visit: &mut EntryVisitor<'_>,
    ) -> Result<Option<KeyRange>> {
        if range.is_empty() {
            return Ok(None);
        }
        let entries =
            self.versions
                .range::<[u8], _>(range.bounds())
                .filter_map(move |(key, versions)| {
                    visible(versions, at).map(|value| Ok((key.as_slice(), value)))
                });
        match direction {
            Direction::Forward => visit_entries(entries, range, direction, limit, visit),
            Direction::Reverse => visit_entries(entries.rev(), range, direction, limit, visit),
        }
    }

    /// Commits `batch` as one new sequence number, keeping its keys and values without a copy.
    ///
    /// Each key is found once: its new version goes in and its old versions are pruned in
    /// the same step (a bulk load of new keys costs one B-tree insertion per key).
    pub(super) fn apply(&mut self, batch: WriteBatch) {
        let seq = self.committed + 1;
        // The new versions carry a sequence no reader has yet: the horizon after this commit
        // is the oldest pinned snapshot, or this commit when nothing is pinned.
        let horizon = self
            .pinned
            .first_key_value()
            .map_or(seq, |(&pinned, _)| pinned);
        for mutation in batch.into_mutations() {
            let (key, value) = match mutation {
                Mutation::Put { key, value } => (key, Some(value)),
                Mutation::Delete { key } => (key, None),
            };
            let mut occupied = match self.versions.entry(key) {
                Entry::Vacant(vacant) => {
                    // A key no reader can see: a delete leaves nothing, a put its one version
                    // (no history: readers before `seq` see the key absent).
                    if value.is_some() {
                        vacant.insert(vec![Version { seq, value }]);
                    }
                    continue;
                }
                Entry::Occupied(occupied) => occupied,
            };
            let versions = occupied.get_mut();
            match versions.last_mut() {
                // The same key earlier in this batch: the later operation replaces it.
                Some(last) if last.seq == seq => last.value = value,
                _ => versions.push(Version { seq, value }),
            }
            match prune_versions(versions, horizon) {
                Kept::Nothing => {
                    let (key, _) = occupied.remove_entry();
                    track_history(&mut self.history, &key, Kept::Nothing);
                }
                kept => track_history(&mut self.history, occupied.key(), kept),
            }
        }
        // Bumping `committed` is what makes the whole batch visible at once.
        self.committed = seq;
    }

    /// Registers a snapshot of the latest state and returns its sequence.
    pub(super) fn pin(&mut self) -> u64 {
        *self.pinned.entry(self.committed).or_default() += 1;
        self.committed
    }

    /// Releases a snapshot taken by [`MvccState::pin`].
    pub(super) fn unpin(&mut self, seq: u64) {
        let before = self.horizon();
        if let Some(count) = self.pinned.get_mut(&seq) {
            *count -= 1;
            if *count == 0 {
                self.pinned.remove(&seq);
            }
        }
        let after = self.horizon();
        if after > before {
            for key in std::mem::take(&mut self.history) {
                self.prune(&key, after);
            }
        }
    }

    /// The oldest sequence anyone can still read at.
    fn horizon(&self) -> u64 {
        self.pinned
            .first_key_value()
            .map_or(self.committed, |(&seq, _)| seq)
    }

    /// Drops versions of `key` that no reader at or after `horizon` can see.
    fn prune(&mut self, key: &[u8], horizon: u64) {
        let kept = match self.versions.get_mut(key) {
            Some(versions) => prune_versions(versions, horizon),
            None => Kept::Nothing,
        };
        if let Kept::Nothing = kept {
            self.versions.remove(key);
        }
        track_history(&mut self.history, key, kept);
    }

    /// Total number of stored versions (for tests of pruning).
    #[cfg(test)]
    pub(super) fn version_count(&self) -> usize {
        self.versions.values().map(Vec::len).sum()
    }
}

/// What a key holds after [`prune_versions`].
enum Kept {
    /// Nothing anyone can read: the key goes.
    Nothing,
    /// Old versions some snapshot may read, or a delete marker: the key carries history.
    History,
    /// Its one live value.
    OneValue,
}

/// Drops the versions no reader at or after `horizon` can see.
fn prune_versions(versions: &mut Vec<Version>, horizon: u64) -> Kept {
    if let Some(oldest_needed) = versions.iter().rposition(|v| v.seq <= horizon) {
        versions.drain(..oldest_needed);
    }
    match versions.as_slice() {
        [] => Kept::Nothing,
        [only] if only.value.is_none() && only.seq <= horizon => Kept::Nothing,
        [only] if only.value.is_some() => Kept::OneValue,
        _ => Kept::History,
    }
}

/// Keeps `key` in the set of keys carrying history exactly when `kept` says it does.
fn track_history(history: &mut BTreeSet<Vec<u8>>, key: &[u8], kept: Kept) {
    match kept {
        Kept::History => {
            if !history.contains(key) {
                history.insert(key.to_vec());
            }
        }
        Kept::Nothing | Kept::OneValue => {
            history.remove(key);
        }
    }
}

/// The newest version at or before `at`, if it holds a value.
fn visible(versions: &[Version], at: u64) -> Option<&[u8]> {
    versions
        .iter()
        .rev()
        .find(|v| v.seq <= at)
        .and_then(|v| v.value.as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(ops: &[(&[u8], Option<&[u8]>)]) -> WriteBatch {
        let mut b = WriteBatch::new();
        for (k, v) in ops {
            match v {
                Some(v) => b.put(k.to_vec(), v.to_vec()),
                None => b.delete(k.to_vec()),
            }
        }
        b
    }

    #[test]
    fn old_versions_live_exactly_as_long_as_their_snapshot() {
        let mut s = MvccState::default();
        s.apply(batch(&[(b"a", Some(b"1"))]));
        let snap = s.pin();
        s.apply(batch(&[(b"a", Some(b"2"))]));
        s.apply(batch(&[(b"a", None), (b"b", Some(b"x"))]));
        assert_eq!(s.get(b"a", snap), Some(b"1".to_vec()));
        assert_eq!(s.get(b"a", s.committed()), None);
        // a: v1 (pinned), v2 (unreachable but not yet swept), tombstone; b: one version.
        assert!(s.version_count() >= 3);
        s.unpin(snap);
        assert_eq!(s.version_count(), 1, "only b's value remains");
        assert!(s.history.is_empty());
    }

    #[test]
    fn unpinned_writes_keep_a_single_version() {
        let mut s = MvccState::default();
        for i in 0..10u8 {
            s.apply(batch(&[(b"k", Some(&[i]))]));
        }
        s.apply(batch(&[(b"gone", Some(b"x")), (b"gone", None)]));
        assert_eq!(s.version_count(), 1);
        assert_eq!(s.get(b"k", s.committed()), Some(vec![9]));
    }
}
