//! Scanning a snapshot overlaid with a transaction's buffered writes.

use std::collections::{BTreeMap, VecDeque};

use super::read_set::RangeDigest;
use crate::{Direction, KeyRange, KvRead, Result, ScanPage};

/// Buffered writes: key → new value, `None` for a delete.
pub(super) type Writes = BTreeMap<Vec<u8>, Option<Vec<u8>>>;

/// The transaction's writes inside the scanned range, in scan order.
type OwnWrites<'a> = Box<dyn Iterator<Item = (&'a Vec<u8>, &'a Option<Vec<u8>>)> + Send + 'a>;

/// Largest page fetched from the snapshot at a time while merging.
const MAX_CHUNK: usize = 1024;

/// A merged page plus what the transaction must remember about the snapshot.
pub(super) struct MergedPage {
    pub(super) page: ScanPage,
    /// The part of the range whose snapshot contents determined the page (`None` if none).
    pub(super) covered: Option<KeyRange>,
    /// Digest of the snapshot entries inside `covered`, in scan order.
    pub(super) digest: u64,
}

/// One page of `range` as seen by the transaction: snapshot entries, replaced or hidden by
/// its own puts and deletes.
pub(super) async fn scan_merged(
    snapshot: &dyn KvRead,
    writes: &Writes,
    range: &KeyRange,
    direction: Direction,
    limit: usize,
) -> Result<MergedPage> {
    if range.is_empty() {
        return Ok(MergedPage {
            page: ScanPage::default(),
            covered: None,
            digest: RangeDigest::default().finish(),
        });
    }
    let own = writes.range::<[u8], _>(range.bounds());
    let mut own: OwnWrites<'_> = match direction {
        Direction::Forward => Box::new(own),
        Direction::Reverse => Box::new(own.rev()),
    };
    let mut own_next = own.next();
    let mut snap = SnapshotCursor {
        reader: snapshot,
        direction,
        // Deletes may hide snapshot entries, so more than `limit` can be needed; fetch a
        // little beyond the page and keep pulling as required.
        chunk: limit.saturating_add(1).min(MAX_CHUNK),
        buffered: VecDeque::new(),
        next: Some(range.clone()),
    };

    let mut digest = RangeDigest::default();
    let mut entries = Vec::new();
    let mut more = false;
    loop {
        // Once the page is full we only look for one more visible entry to decide whether the
        // range continues; what we pass on the way lies beyond the page, so it is not part of
        // the covered range and must stay out of the digest.
        let page_full = entries.len() == limit;
        let snap_key = snap.peek().await?.map(|(k, _)| k.as_slice());
        let own_key = own_next.map(|(k, _)| k.as_slice());
        let (take_snap, take_own) = match (snap_key, own_key) {
            (None, None) => break,
            (Some(_), None) => (true, false),
            (None, Some(_)) => (false, true),
            (Some(s), Some(o)) if s == o => (true, true),
            (Some(s), Some(o)) => {
                let snap_first = match direction {
                    Direction::Forward => s < o,
                    Direction::Reverse => s > o,
                };
                (snap_first, !snap_first)
            }
        };
        let mut visible = None;
        if take_snap && let Some((key, value)) = snap.pop() {
            if !page_full {
                digest.add(&key, &value);
            }
            visible = Some((key, value));
        }
        if take_own && let Some((key, value)) = own_next {
            // The transaction's own write wins over whatever the snapshot holds.
            visible = value.as_ref().map(|v| (key.clone(), v.clone()));
            own_next = own.next();
        }
        if let Some(entry) = visible {
            if page_full {
                more = true;
                break;
            }
            entries.push(entry);
        }
    }

    let (covered, resume) = if more {
        match entries.last() {
            Some((last, _)) => (
                Some(range.covered_through(last, direction)),
                Some(range.remainder_after(last, direction)),
            ),
            None => (None, Some(range.clone())),
        }
    } else {
        (Some(range.clone()), None)
    };
    Ok(MergedPage {
        page: ScanPage { entries, resume },
        covered,
        digest: digest.finish(),
    })
}

/// Reads a snapshot range entry by entry, fetching pages on demand.
struct SnapshotCursor<'a> {
    reader: &'a dyn KvRead,
    direction: Direction,
    chunk: usize,
    buffered: VecDeque<(Vec<u8>, Vec<u8>)>,
    next: Option<KeyRange>,
}

impl SnapshotCursor<'_> {
    async fn peek(&mut self) -> Result<Option<&(Vec<u8>, Vec<u8>)>> {
        while self.buffered.is_empty() {
            let Some(range) = self.next.take() else {
                break;
            };
            let page = self
                .reader
                .scan_page(&range, self.direction, self.chunk)
                .await?;
            self.buffered.extend(page.entries);
            self.next = page.resume;
        }
        Ok(self.buffered.front())
    }

    fn pop(&mut self) -> Option<(Vec<u8>, Vec<u8>)> {
        self.buffered.pop_front()
    }
}
