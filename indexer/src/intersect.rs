//! Streaming intersection of primary-key-ordered index streams (leapfrog join).
//!
//! A query such as `WHERE a = 1 AND b IN (2, 3)` over two secondary indexes reads, from each
//! index, the entries of one or more key ranges (one per fixed value tuple). Inside such a range
//! every entry is `index prefix ‖ fixed indexed values ‖ primary key`, so the entries come out
//! sorted by primary key and the pk is a suffix at a known offset. [`Intersection`] merges those
//! streams without materializing any of them: it asks each input for the smallest pk at or after
//! a candidate ([`PkCursor::seek`]) and leapfrogs until all inputs agree. The sparsest input
//! drives, so the denser ones are mostly *skipped* rather than read.
//!
//! # Paging
//!
//! Every page read ([`KvRead::visit_page`], which lends the entries: only their pks are copied,
//! into buffers the cursor keeps) opens a fresh iterator in the backend; on the on-disk store an
//! open costs about as much as reading ~20 entries (~5.4 µs vs ~0.28 µs per entry). Two access
//! patterns want opposite page sizes:
//!
//! * **dense / sequential**: the cursor lands on (nearly) every entry; big pages amortize opens;
//! * **sparse / skipping**: each seek jumps far past the buffered page; everything read beyond
//!   the entry it lands on is wasted, so pages should be small, and a seek past the buffer must
//!   open a new page *at the target* instead of reading its way there.
//!
//! Each range cursor therefore buffers one page; a seek first searches the buffer and only opens
//! a new page when the target lies past it. The page size adapts per cursor when it leaves a
//! full page (`RangeCursor::adapt`): it starts at 16 entries, doubles (up to 1024) when the
//! cursor landed on at least one entry in 8 of the page, and halves (down to 4) when a seek
//! jumped out of the page while the cursor was still in its first half, i.e. the second half was
//! read for nothing. A page that holds the rest of the range says nothing about the pattern and
//! is not counted.
//!
//! # Checked inputs
//!
//! An input much denser than the driver costs the least when it is not read at all: when every
//! indexed column of it is fixed, "does this pk belong to it" is a point lookup of the entry key
//! `fixed part ‖ pk`. Such inputs are given to [`Intersection::with_checks`]: the candidates the
//! merge of the other inputs agrees on are collected in batches (8, doubling up to
//! `MAX_CHECK_BATCH`, so a LIMIT does not pay for a large first batch) and each batch is
//! checked with one [`KvRead::contains`] call per checked input, which an on-disk store can
//! answer from its filters for the many absent keys.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;

use rowdex_codec::CodecError;
use rowdex_store::{Direction, KeyRange, KvRead};

use crate::{IndexError, Result};

mod stats;
#[cfg(test)]
mod tests;
mod union;

pub use stats::IntersectionStats;
use union::{MergedCursor, UnionCursor, set};

/// Page size of a cursor's first page: cheap if the pattern turns out sparse (~16 entries cost
/// less than one open), and big enough that a dense stream reaches [`MAX_PAGE`] in a few pages.
const INITIAL_PAGE: usize = 16;
/// Smallest page: below this, saving entry reads no longer matters next to the open itself.
const MIN_PAGE: usize = 4;
/// Largest page: beyond this the open is amortized to noise, and bigger pages only cost memory
/// and latency of the first entry.
const MAX_PAGE: usize = 1024;
/// A page is dense when the cursor landed on at least one of every `DENSE_GAP` entries: then
/// the entries of a bigger page are about as likely to be used, and an open costs ~20 entries.
const DENSE_GAP: usize = 8;

/// First batch of candidates checked against the checked inputs.
const FIRST_CHECK_BATCH: usize = 8;
/// Largest batch of candidates checked at once.
const MAX_CHECK_BATCH: usize = 512;

/// One primary-key-ordered input of an intersection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PkInput {
    /// The union of index key ranges; within each range entries are sorted by pk and the pk is
    /// `key[pk_offset..]` (one range per fixed value tuple, e.g. several for `a IN (1, 2)`).
    /// The union is merged on the fly (k-way), dropping duplicate pks.
    ///
    /// The first `pk_offset` bytes of the range start are the fixed part shared by every entry
    /// of the range; the start may be longer (narrowed by pk), and the end may be narrowed too.
    Ranges(Vec<(KeyRange, usize)>),
    /// Primary keys already sorted ascending and deduplicated (the caller buffered and sorted a
    /// stream that was not pk-ordered, e.g. a range predicate on the indexed column).
    Sorted(Vec<Vec<u8>>),
    /// The union of several inputs (the arms of an OR), merged k-way on the fly, dropping
    /// duplicate pks.
    Any(Vec<PkInput>),
}

/// The intersection of several [`PkInput`]s, streamed in ascending pk order.
pub struct Intersection {
    reader: Arc<dyn KvRead>,
    /// `cursors[0]` drives: it is the sparsest by the caller's estimate.
    cursors: Vec<PkCursor>,
    /// The pk every cursor is being brought to; reused across calls.
    candidate: Vec<u8>,
    /// Some input is exhausted (or known empty): nothing more can match, so no more I/O.
    done: bool,
    /// Inputs checked by lookup: per input, the fixed entry-key parts (one per value tuple); a
    /// pk belongs to the input when some `part ‖ pk` exists.
    checks: Vec<Vec<Vec<u8>>>,
    /// Candidates that passed every check, in pk order, not yet returned.
    ready: VecDeque<Vec<u8>>,
    /// Size of the next batch of candidates to check.
    batch: usize,
    /// Entry keys looked up so far.
    checked: u64,
    /// The entry keys of the last check, kept so that the next check refills their buffers
    /// instead of allocating a key per candidate.
    probes: Vec<Vec<u8>>,
}

impl std::fmt::Debug for Intersection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Intersection")
            .field("inputs", &self.cursors.len())
            .field("done", &self.done)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl Intersection {
    /// `inputs` ordered sparsest first by the caller's estimate (the first one drives).
    pub fn new(reader: Arc<dyn KvRead>, inputs: Vec<PkInput>) -> Intersection {
        let cursors: Vec<PkCursor> = inputs
            .into_iter()
            .map(|input| PkCursor::new(Arc::clone(&reader), input))
            .collect();
        // An input that is empty without reading anything empties the result: skip all I/O.
        let done = cursors.is_empty() || cursors.iter().any(PkCursor::known_empty);
        Intersection {
            reader,
            cursors,
            candidate: Vec::new(),
            done,
            checks: Vec::new(),
            ready: VecDeque::new(),
            batch: FIRST_CHECK_BATCH,
            checked: 0,
            probes: Vec::new(),
        }
    }

    /// Adds inputs checked by lookup instead of read (see the module header): each is the list
    /// of fixed entry-key parts (prefix and every indexed value) of one input, whose entries
    /// are `part ‖ pk`. A check without parts matches nothing.
    pub fn with_checks(mut self, checks: Vec<Vec<Vec<u8>>>) -> Intersection {
        if checks.iter().any(Vec::is_empty) {
            self.done = true;
        }
        self.checks = checks;
        self
    }

    /// The next primary key present in every input, in ascending byte order; `None` at the end.
    ///
    /// After an error, drop the intersection: a match in progress may be skipped by a retry.
    pub async fn next(&mut self) -> Result<Option<Vec<u8>>> {
        if self.checks.is_empty() {
            return self.next_merged().await;
        }
        loop {
            if let Some(pk) = self.ready.pop_front() {
                return Ok(Some(pk));
            }
            let mut batch = Vec::with_capacity(self.batch);
            while batch.len() < self.batch {
                match self.next_merged().await? {
                    Some(pk) => batch.push(pk),
                    None => break,
                }
            }
            if batch.is_empty() {
                return Ok(None);
            }
            self.batch = (self.batch * 2).min(MAX_CHECK_BATCH);
            for parts in &self.checks {
                let keys = probe_keys(&mut self.probes, parts, &batch);
                self.checked += keys.len() as u64;
                let present = self.reader.contains(keys).await?;
                let mut present = present.chunks(parts.len());
                batch.retain(|_| present.next().is_some_and(|hits| hits.contains(&true)));
                if batch.is_empty() {
                    break;
                }
            }
            self.ready.extend(batch);
        }
    }

    /// The next primary key every merged (read) input holds.
    async fn next_merged(&mut self) -> Result<Option<Vec<u8>>> {
        if self.done {
            return Ok(None);
        }
        let Some((driver, others)) = self.cursors.split_first_mut() else {
            self.done = true;
            return Ok(None);
        };
        let candidate = &mut self.candidate;
        let Some(pk) = driver.advance().await? else {
            self.done = true;
            return Ok(None);
        };
        set(candidate, pk);
        'search: loop {
            for cursor in others.iter_mut() {
                let Some(pk) = cursor.seek(candidate).await? else {
                    self.done = true;
                    return Ok(None);
                };
                if pk != candidate.as_slice() {
                    // This input has nothing until `pk`. Bring the driver there first: being the
                    // sparsest, it is the most likely to jump further still, which saves the
                    // denser inputs a seek to a candidate that would be overtaken anyway.
                    set(candidate, pk);
                    let Some(pk) = driver.seek(candidate).await? else {
                        self.done = true;
                        return Ok(None);
                    };
                    if pk != candidate.as_slice() {
                        set(candidate, pk);
                    }
                    // Inputs already at the candidate answer the re-check without I/O.
                    continue 'search;
                }
            }
            return Ok(Some(candidate.clone()));
        }
    }

    /// I/O done so far by all inputs.
    pub fn stats(&self) -> IntersectionStats {
        let mut stats = IntersectionStats {
            checks: self.checked,
            ..IntersectionStats::default()
        };
        for cursor in &self.cursors {
            stats += cursor.stats();
        }
        stats
    }
}

/// The entry keys `part ‖ pk` of every candidate in `pks` (each part in turn), written into
/// the buffers of `probes` (grown as needed, never shrunk).
fn probe_keys<'a>(
    probes: &'a mut Vec<Vec<u8>>,
    parts: &[Vec<u8>],
    pks: &[Vec<u8>],
) -> &'a [Vec<u8>] {
    let keys = pks
        .iter()
        .flat_map(|pk| parts.iter().map(move |part| (part, pk)));
    let mut wanted = 0;
    for (part, pk) in keys {
        let probe = reused_buffer(probes, wanted);
        probe.extend_from_slice(part);
        probe.extend_from_slice(pk);
        wanted += 1;
    }
    &probes[..wanted]
}

/// The `i`-th of `buffers`, emptied (its allocation kept), growing `buffers` by one when `i`
/// is just past its end.
fn reused_buffer(buffers: &mut Vec<Vec<u8>>, i: usize) -> &mut Vec<u8> {
    if i == buffers.len() {
        buffers.push(Vec::new());
    }
    let buffer = &mut buffers[i];
    buffer.clear();
    buffer
}

/// A forward-only cursor over the primary keys of one [`PkInput`].
///
/// A new cursor is positioned before the first pk: the first [`PkCursor::advance`] returns the
/// smallest pk, the first [`PkCursor::seek`] the smallest pk at or after its target.
pub struct PkCursor {
    kind: CursorKind,
}

enum CursorKind {
    /// No ranges at all.
    Empty,
    Sorted(SortedCursor),
    /// The common single-range case, without the union's heap.
    Range(RangeCursor),
    Union(UnionCursor<RangeCursor>),
    /// The arms of an OR. Its moves are boxed: an arm may be a union of arms itself.
    Any(UnionCursor<PkCursor>),
}

/// A cursor move's future, boxed to break the type's recursion through [`CursorKind::Any`].
/// `'c` is the cursor's borrow (the pk returned lives as long), `'f` the future's (the cursor
/// and the seek's target).
type BoxedMove<'c, 'f> = Pin<Box<dyn Future<Output = Result<Option<&'c [u8]>>> + Send + 'f>>;

impl std::fmt::Debug for PkCursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PkCursor")
            .field("current", &self.current())
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl PkCursor {
    /// A cursor over `input`, reading index ranges through `reader`. Reads nothing yet.
    pub fn new(reader: Arc<dyn KvRead>, input: PkInput) -> PkCursor {
        let kind = match input {
            PkInput::Sorted(pks) => CursorKind::Sorted(SortedCursor::new(pks)),
            PkInput::Ranges(mut ranges) => match ranges.len() {
                0 => CursorKind::Empty,
                1 => {
                    let (range, pk_offset) = ranges.remove(0);
                    CursorKind::Range(RangeCursor::new(reader, range, pk_offset))
                }
                _ => CursorKind::Union(UnionCursor::new(
                    ranges
                        .into_iter()
                        .map(|(range, pk_offset)| {
                            RangeCursor::new(Arc::clone(&reader), range, pk_offset)
                        })
                        .collect(),
                )),
            },
            PkInput::Any(arms) => {
                let mut arms: Vec<PkCursor> = arms
                    .into_iter()
                    .map(|arm| PkCursor::new(Arc::clone(&reader), arm))
                    .filter(|arm| !arm.known_empty())
                    .collect();
                match arms.len() {
                    0 => CursorKind::Empty,
                    1 => return arms.remove(0),
                    _ => CursorKind::Any(UnionCursor::new(arms)),
                }
            }
        };
        PkCursor { kind }
    }

    /// The smallest pk `>= target` (and not before the current position): the cursor moves
    /// there and returns it, or returns `None` once the input is exhausted. Never moves
    /// backwards: a target at or before the current pk returns the current pk.
    pub async fn seek(&mut self, target: &[u8]) -> Result<Option<&[u8]>> {
        match &mut self.kind {
            CursorKind::Empty => Ok(None),
            CursorKind::Sorted(c) => Ok(c.seek(target)),
            CursorKind::Range(c) => c.seek(target).await,
            CursorKind::Union(c) => c.seek(target).await,
            CursorKind::Any(c) => (Box::pin(c.seek(target)) as BoxedMove<'_, '_>).await,
        }
    }

    /// The next pk strictly after the current one (the first pk on a new cursor); `None` once
    /// the input is exhausted.
    pub async fn advance(&mut self) -> Result<Option<&[u8]>> {
        match &mut self.kind {
            CursorKind::Empty => Ok(None),
            CursorKind::Sorted(c) => Ok(c.advance()),
            CursorKind::Range(c) => c.advance().await,
            CursorKind::Union(c) => c.advance().await,
            CursorKind::Any(c) => (Box::pin(c.advance()) as BoxedMove<'_, '_>).await,
        }
    }

    /// The pk the cursor is on: `None` before the first move and once exhausted.
    pub fn current(&self) -> Option<&[u8]> {
        match &self.kind {
            CursorKind::Empty => None,
            CursorKind::Sorted(c) => c.current(),
            CursorKind::Range(c) => c.current(),
            CursorKind::Union(c) => c.current(),
            CursorKind::Any(c) => c.current(),
        }
    }

    /// I/O done so far (a `Sorted` input does none).
    pub fn stats(&self) -> IntersectionStats {
        match &self.kind {
            CursorKind::Empty | CursorKind::Sorted(_) => IntersectionStats::default(),
            CursorKind::Range(c) => c.stats,
            CursorKind::Union(c) => c.stats(),
            CursorKind::Any(c) => c.stats(),
        }
    }

    /// Whether the input is empty without reading anything.
    fn known_empty(&self) -> bool {
        match &self.kind {
            CursorKind::Empty => true,
            CursorKind::Sorted(c) => c.pks.is_empty(),
            CursorKind::Range(_) | CursorKind::Union(_) | CursorKind::Any(_) => false,
        }
    }
}

/// The first index `i >= from` with `pk(&items[i]) >= target`, or `items.len()`.
///
/// Gallops (probes `from`, `from + 1`, `from + 3`, `from + 7`, ...) before binary searching, so
/// a short step costs O(1) and a jump of `d` costs O(log d): cursors mostly move by short steps.
fn gallop<T>(items: &[T], from: usize, target: &[u8], pk: impl Fn(&T) -> &[u8]) -> usize {
    let rest = items.get(from..).unwrap_or_default();
    let mut bound = 1;
    while bound <= rest.len() && pk(&rest[bound - 1]) < target {
        bound *= 2;
    }
    let lo = bound / 2;
    let hi = bound.min(rest.len());
    from + lo + rest[lo..hi].partition_point(|item| pk(item) < target)
}

/// Cursor over caller-sorted, deduplicated pks held in memory.
struct SortedCursor {
    pks: Vec<Vec<u8>>,
    /// Index of the current pk; `pks.len()` once exhausted. Meaningless before `started`.
    pos: usize,
    started: bool,
}

impl SortedCursor {
    fn new(pks: Vec<Vec<u8>>) -> SortedCursor {
        debug_assert!(
            pks.windows(2).all(|w| w[0] < w[1]),
            "PkInput::Sorted must be strictly ascending"
        );
        SortedCursor {
            pks,
            pos: 0,
            started: false,
        }
    }

    fn current(&self) -> Option<&[u8]> {
        if self.started {
            self.pks.get(self.pos).map(Vec::as_slice)
        } else {
            None
        }
    }

    fn advance(&mut self) -> Option<&[u8]> {
        if !self.started {
            self.started = true;
        } else if self.pos < self.pks.len() {
            self.pos += 1;
        }
        self.current()
    }

    fn seek(&mut self, target: &[u8]) -> Option<&[u8]> {
        if !self.started {
            self.started = true;
            self.pos = gallop(&self.pks, 0, target, Vec::as_slice);
        } else if self
            .pks
            .get(self.pos)
            .is_some_and(|pk| pk.as_slice() < target)
        {
            self.pos = gallop(&self.pks, self.pos + 1, target, Vec::as_slice);
        }
        self.current()
    }
}

/// Cursor over one index key range, reading it page by page.
///
/// States: before the first move the page is empty (`len == 0`) and `rest` is the whole range;
/// while positioned `pos < len`; once exhausted the page is empty and `rest` is `None`.
struct RangeCursor {
    reader: Arc<dyn KvRead>,
    /// The range's fixed part (the first `pk_offset` bytes of its start): the key of pk `p` in
    /// this range is `key_prefix ‖ p`.
    key_prefix: Vec<u8>,
    pk_offset: usize,
    /// The pks of the buffered page, `page[..len]`; those before `pos` are behind the cursor.
    /// The buffers past `len` are kept for the next page, which is copied into them as the
    /// store lends its entries, so a page costs no allocation once the cursor is warm.
    page: Vec<Vec<u8>>,
    len: usize,
    pos: usize,
    /// The part of the range after the page, where the next page starts; `None` when the page
    /// holds the rest of the range.
    rest: Option<KeyRange>,
    /// Distinct entries of the page the cursor stopped on: how much of the page was useful.
    landings: usize,
    page_size: usize,
    /// Reused buffer for the key a seek starts a new page at.
    seek_key: Vec<u8>,
    stats: IntersectionStats,
}

impl RangeCursor {
    fn new(reader: Arc<dyn KvRead>, range: KeyRange, pk_offset: usize) -> RangeCursor {
        // A start shorter than the offset breaks the caller's contract; keeping what there is
        // still yields every entry of the range, only seeks start lower than they could.
        let key_prefix = range.start[..pk_offset.min(range.start.len())].to_vec();
        let rest = (!range.is_empty()).then_some(range);
        RangeCursor {
            reader,
            key_prefix,
            pk_offset,
            page: Vec::new(),
            len: 0,
            pos: 0,
            rest,
            landings: 0,
            page_size: INITIAL_PAGE,
            seek_key: Vec::new(),
            stats: IntersectionStats::default(),
        }
    }

    /// The pks of the buffered page.
    fn pks(&self) -> &[Vec<u8>] {
        &self.page[..self.len]
    }

    fn current(&self) -> Option<&[u8]> {
        self.pks().get(self.pos).map(Vec::as_slice)
    }

    async fn advance(&mut self) -> Result<Option<&[u8]>> {
        if self.pos + 1 < self.len {
            self.pos += 1;
            self.landings += 1;
        } else {
            if self.len > 0 {
                self.adapt(false);
            }
            self.fetch().await?;
        }
        Ok(self.current())
    }

    async fn seek(&mut self, target: &[u8]) -> Result<Option<&[u8]>> {
        if let Some(current) = self.current() {
            if current >= target {
                return Ok(self.current());
            }
            // Checking the page's last pk first sends far seeks straight to a new page.
            let in_page = self
                .pks()
                .last()
                .is_some_and(|last| last.as_slice() >= target);
            if in_page {
                self.pos = gallop(self.pks(), self.pos + 1, target, Vec::as_slice);
                self.landings += 1;
                return Ok(self.current());
            }
            self.adapt(true);
        }
        let Some(rest) = &mut self.rest else {
            self.len = 0;
            return Ok(None);
        };
        // Open the next page at the target instead of reading the way there. The key is never
        // below `rest.start`, which carries a start narrowed past the prefix and the position
        // after the page just left.
        self.seek_key.clear();
        self.seek_key.extend_from_slice(&self.key_prefix);
        self.seek_key.extend_from_slice(target);
        if self.seek_key > rest.start {
            std::mem::swap(&mut self.seek_key, &mut rest.start);
        }
        self.fetch().await?;
        Ok(self.current())
    }

    /// Replaces the page by the next one starting at `rest.start`, positioned on its first
    /// entry; exhausts the cursor if the range holds nothing more. The store lends the
    /// entries; only their pks are copied, into the page's kept buffers.
    async fn fetch(&mut self) -> Result<()> {
        loop {
            let range = match &self.rest {
                Some(range) if !range.is_empty() => range,
                _ => {
                    self.rest = None;
                    self.len = 0;
                    self.pos = 0;
                    return Ok(());
                }
            };
            // `rest` stays in place until the page arrives, so a failed read can be retried.
            let (pk_offset, page, len) = (self.pk_offset, &mut self.page, &mut self.len);
            *len = 0;
            let mut short_key = None;
            let resume = self
                .reader
                .visit_page(range, Direction::Forward, self.page_size, &mut |key, _| {
                    let Some(pk) = key.get(pk_offset..) else {
                        short_key.get_or_insert_with(|| key.to_vec());
                        return;
                    };
                    reused_buffer(page, *len).extend_from_slice(pk);
                    *len += 1;
                })
                .await?;
            self.stats.seeks += 1;
            self.stats.entries_read += self.len as u64;
            if let Some(key) = short_key {
                self.len = 0;
                return Err(IndexError::MalformedEntry {
                    source: CodecError::Truncated {
                        what: "index entry primary key",
                        offset: key.len(),
                    },
                    key,
                });
            }
            self.pos = 0;
            self.landings = 1;
            self.rest = resume;
            // An empty page with more to come only happens on a backend that pages by
            // something else than entries; ask again rather than report a false end.
            if self.len > 0 || self.rest.is_none() {
                return Ok(());
            }
        }
    }

    /// Adjusts the page size as the cursor leaves the current page; `jumped` tells whether a
    /// seek left it past its end (rather than a step from its last entry).
    fn adapt(&mut self, jumped: bool) {
        if self.len < self.page_size {
            // A short page ended the range: no evidence either way.
            return;
        }
        let n = self.len;
        if jumped && self.pos < n / 2 {
            // The whole second half was read for nothing; a page half as big would have served
            // the same landings with the same number of opens.
            self.page_size = (self.page_size / 2).max(MIN_PAGE);
        } else if self.landings * DENSE_GAP >= n {
            // The cursor walks this stream: a bigger page saves an open for entries it will
            // most likely use.
            self.page_size = (self.page_size * 2).min(MAX_PAGE);
        }
    }
}

impl MergedCursor for RangeCursor {
    fn current(&self) -> Option<&[u8]> {
        RangeCursor::current(self)
    }

    fn seek(&mut self, target: &[u8]) -> impl Future<Output = Result<Option<&[u8]>>> + Send {
        RangeCursor::seek(self, target)
    }

    fn advance(&mut self) -> impl Future<Output = Result<Option<&[u8]>>> + Send {
        RangeCursor::advance(self)
    }

    fn stats(&self) -> IntersectionStats {
        self.stats
    }
}

impl MergedCursor for PkCursor {
    fn current(&self) -> Option<&[u8]> {
        PkCursor::current(self)
    }

    fn seek(&mut self, target: &[u8]) -> impl Future<Output = Result<Option<&[u8]>>> + Send {
        PkCursor::seek(self, target)
    }

    fn advance(&mut self) -> impl Future<Output = Result<Option<&[u8]>>> + Send {
        PkCursor::advance(self)
    }

    fn stats(&self) -> IntersectionStats {
        PkCursor::stats(self)
    }
}
