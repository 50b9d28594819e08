//! Key ranges, scan direction and scan pages, plus the paging arithmetic every backend shares.

use std::ops::Bound;

use crate::Result;

/// Order in which a scan visits keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Ascending keys, starting at the bottom of the range.
    Forward,
    /// Descending keys, starting at the top of the range.
    Reverse,
}

/// Half-open key range `[start, end)`; `end: None` means unbounded above.
///
/// An empty `start` means "from the very first key". Keys compare bytewise (lexicographically).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KeyRange {
    /// Inclusive lower bound.
    pub start: Vec<u8>,
    /// Exclusive upper bound; `None` = no upper bound.
    pub end: Option<Vec<u8>>,
}

impl KeyRange {
    /// `[start, end)`.
    pub fn new(start: Vec<u8>, end: Option<Vec<u8>>) -> KeyRange {
        KeyRange { start, end }
    }

    /// Every key.
    pub fn all() -> KeyRange {
        KeyRange {
            start: Vec::new(),
            end: None,
        }
    }

    /// All keys that start with `p`.
    ///
    /// The upper bound is the smallest key greater than every key with this prefix: trailing
    /// `0xFF` bytes are dropped and the last remaining byte is incremented. A prefix made only
    /// of `0xFF` bytes (or an empty prefix) has no such key, so the range is unbounded above.
    pub fn prefix(p: &[u8]) -> KeyRange {
        let end = p.iter().rposition(|&b| b != 0xFF).map(|i| {
            let mut end = p[..=i].to_vec();
            end[i] += 1;
            end
        });
        KeyRange {
            start: p.to_vec(),
            end,
        }
    }

    /// Whether `k` lies inside the range.
    pub fn contains(&self, k: &[u8]) -> bool {
        k >= self.start.as_slice() && self.end.as_deref().is_none_or(|end| k < end)
    }

    /// Whether the bounds exclude every possible key (`end <= start`).
    pub fn is_empty(&self) -> bool {
        self.end
            .as_deref()
            .is_some_and(|end| end <= self.start.as_slice())
    }

    /// The bounds in the form `BTreeMap::range` and fjall expect.
    pub(crate) fn bounds(&self) -> (Bound<&[u8]>, Bound<&[u8]>) {
        let end = match &self.end {
            Some(end) => Bound::Excluded(end.as_slice()),
            None => Bound::Unbounded,
        };
        (Bound::Included(self.start.as_slice()), end)
    }

    /// What is left of the range once a scan in `direction` has returned `last`.
    pub(crate) fn remainder_after(&self, last: &[u8], direction: Direction) -> KeyRange {
        match direction {
            // The smallest key greater than `last` is `last` followed by a zero byte.
            Direction::Forward => KeyRange {
                start: successor(last),
                end: self.end.clone(),
            },
            Direction::Reverse => KeyRange {
                start: self.start.clone(),
                end: Some(last.to_vec()),
            },
        }
    }

    /// The part of the range a scan in `direction` has covered once it returned `last`
    /// (everything from the scan's starting edge up to and including `last`).
    pub(crate) fn covered_through(&self, last: &[u8], direction: Direction) -> KeyRange {
        match direction {
            Direction::Forward => KeyRange {
                start: self.start.clone(),
                end: Some(successor(last)),
            },
            Direction::Reverse => KeyRange {
                start: last.to_vec(),
                end: self.end.clone(),
            },
        }
    }
}

/// The smallest key strictly greater than `key`.
fn successor(key: &[u8]) -> Vec<u8> {
    let mut next = Vec::with_capacity(key.len() + 1);
    next.extend_from_slice(key);
    next.push(0);
    next
}

/// One page of a range scan.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScanPage {
    /// Entries in scan order.
    pub entries: Vec<(Vec<u8>, Vec<u8>)>,
    /// Where the next page starts; `None` exactly when the range holds no further entries.
    pub resume: Option<KeyRange>,
}

/// What counting part of a range found (see [`crate::KvRead::count_page`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CountPage {
    /// Entries counted.
    pub entries: u64,
    /// What is left of the range; `None` exactly when the count reached its end.
    pub resume: Option<KeyRange>,
}

/// Counts `keys` (the range's keys in ascending order) up to `cap`, reading one key past the
/// cap so that `resume` is `None` precisely when the range is exhausted.
pub(crate) fn count_keys<K, I>(keys: I, range: &KeyRange, cap: u64) -> Result<CountPage>
where
    K: AsRef<[u8]>,
    I: Iterator<Item = Result<K>>,
{
    let mut entries = 0u64;
    let mut last: Option<K> = None;
    for key in keys {
        let key = key?;
        if entries == cap {
            let resume = match &last {
                Some(last) => range.remainder_after(last.as_ref(), Direction::Forward),
                None => range.clone(),
            };
            return Ok(CountPage {
                entries,
                resume: Some(resume),
            });
        }
        entries += 1;
        last = Some(key);
    }
    Ok(CountPage {
        entries,
        resume: None,
    })
}

/// What [`crate::KvRead::visit_page`] hands each entry to: its key and value bytes, borrowed
/// from the store's own blocks or nodes and valid only for the call.
pub type EntryVisitor<'a> = dyn FnMut(&[u8], &[u8]) + Send + 'a;

/// Hands at most `limit` of `entries` (the range's entries in `direction` order) to `visit`,
/// reading one past the limit as [`collect_page`] does; returns the page's `resume`.
pub(crate) fn visit_entries<K, V, I>(
    entries: I,
    range: &KeyRange,
    direction: Direction,
    limit: usize,
    visit: &mut EntryVisitor<'_>,
) -> Result<Option<KeyRange>>
where
    K: AsRef<[u8]>,
    V: AsRef<[u8]>,
    I: Iterator<Item = Result<(K, V)>>,
{
    let mut last: Option<K> = None;
    for (visited, entry) in entries.enumerate() {
        let (key, value) = entry?;
        if visited == limit {
            return Ok(Some(match &last {
                Some(last) => range.remainder_after(last.as_ref(), direction),
                None => range.clone(),
            }));
        }
        visit(key.as_ref(), value.as_ref());
        last = Some(key);
    }
    Ok(None)
}

/// Builds a page from `entries`, which must yield the range's entries in `direction` order.
///
/// Reads one entry past `limit` so that `resume` is `None` precisely when the range is
/// exhausted; callers can then tell "no more rows" from "page full" without another round trip.
pub(crate) fn collect_page<I>(
    entries: I,
    range: &KeyRange,
    direction: Direction,
    limit: usize,
) -> Result<ScanPage>
where
    I: Iterator<Item = Result<(Vec<u8>, Vec<u8>)>>,
{
    // `limit` may be huge ("everything"); don't let it size an allocation.
    let mut page = Vec::with_capacity(limit.min(1024));
    let mut more = false;
    for entry in entries {
        let entry = entry?;
        if page.len() == limit {
            more = true;
            break;
        }
        page.push(entry);
    }
    let resume = more.then(|| match page.last() {
        Some((last, _)) => range.remainder_after(last, direction),
        None => range.clone(),
    });
    Ok(ScanPage {
        entries: page,
        resume,
    })
}

/// Answers one question per key (a get, a presence check) in ascending key order, and returns
/// the answers in the order of `keys`. Neighbouring keys share the blocks and tree nodes a
/// lookup walks, so a batch in key order finds them in the CPU cache (and, on disk, in the
/// block cache) far more often than one in arrival order, such as an index's.
pub(crate) fn in_key_order<T>(
    keys: &[Vec<u8>],
    mut answer: impl FnMut(&[u8]) -> Result<T>,
) -> Result<Vec<T>> {
    if keys.windows(2).all(|pair| pair[0] <= pair[1]) {
        return keys.iter().map(|key| answer(key)).collect();
    }
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_unstable_by(|&a, &b| keys[a].cmp(&keys[b]));
    let mut answers: Vec<Option<T>> = std::iter::repeat_with(|| None).take(keys.len()).collect();
    for position in order {
        answers[position] = Some(answer(&keys[position])?);
    }
    // Every position was answered above.
    Ok(answers.into_iter().flatten().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_bounds() {
        assert_eq!(KeyRange::prefix(b"ab").end, Some(b"ac".to_vec()));
        assert_eq!(KeyRange::prefix(&[1, 0xFF]).end, Some(vec![2]));
        assert_eq!(KeyRange::prefix(&[1, 0xFF, 0xFF]).end, Some(vec![2]));
        assert_eq!(KeyRange::prefix(&[0xFF, 0xFF]).end, None);
        assert_eq!(KeyRange::prefix(&[]), KeyRange::all());
    }

    #[test]
    fn prefix_contains_exactly_prefixed_keys() {
        let r = KeyRange::prefix(&[1, 0xFF]);
        assert!(r.contains(&[1, 0xFF]));
        assert!(r.contains(&[1, 0xFF, 0xFF, 0xFF]));
        assert!(!r.contains(&[1, 0xFE, 0xFF]));
        assert!(!r.contains(&[2]));
        assert!(KeyRange::prefix(&[0xFF]).contains(&[0xFF, 0xFF, 0]));
    }

    #[test]
    fn emptiness() {
        assert!(!KeyRange::all().is_empty());
        assert!(KeyRange::new(b"b".to_vec(), Some(b"b".to_vec())).is_empty());
        assert!(KeyRange::new(b"b".to_vec(), Some(b"a".to_vec())).is_empty());
        assert!(!KeyRange::new(b"a".to_vec(), Some(b"a\0".to_vec())).is_empty());
    }

    #[test]
    fn remainder_and_coverage_partition_the_range() {
        let r = KeyRange::new(b"a".to_vec(), Some(b"z".to_vec()));
        for dir in [Direction::Forward, Direction::Reverse] {
            let rest = r.remainder_after(b"m", dir);
            let done = r.covered_through(b"m", dir);
            for k in [&b"a"[..], b"m", b"m\0", b"ma", b"y"] {
                assert!(rest.contains(k) != done.contains(k), "{k:?} {dir:?}");
            }
            assert!(done.contains(b"m"));
        }
    }
}
