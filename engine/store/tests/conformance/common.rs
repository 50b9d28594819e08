//! Helpers shared by the conformance cases.

use rowdex_store::{Direction, KeyRange, KvRead, KvStore, Result, WriteBatch};

pub type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// Owned entries from string pairs.
pub fn entries(pairs: &[(&str, &str)]) -> Entries {
    pairs
        .iter()
        .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
        .collect()
}

/// Writes string pairs in one batch.
pub async fn put_all(store: &dyn KvStore, pairs: &[(&str, &str)]) -> Result<()> {
    put_raw(store, &entries(pairs)).await
}

/// Writes byte pairs in one batch.
pub async fn put_raw(store: &dyn KvStore, pairs: &[(Vec<u8>, Vec<u8>)]) -> Result<()> {
    let mut batch = WriteBatch::new();
    for (k, v) in pairs {
        batch.put(k.clone(), v.clone());
    }
    store.write(batch).await
}

/// A range over string bounds.
pub fn range(start: &str, end: Option<&str>) -> KeyRange {
    KeyRange::new(
        start.as_bytes().to_vec(),
        end.map(|e| e.as_bytes().to_vec()),
    )
}

/// Reads the whole range page by page, checking the paging contract on every page:
/// at most `limit` entries, strictly ordered in `direction`, inside the range, and a
/// `resume` only on full pages (it is `None` exactly when nothing is left).
pub async fn scan_all(
    reader: &dyn KvRead,
    range: &KeyRange,
    direction: Direction,
    limit: usize,
) -> Result<Entries> {
    assert!(limit > 0);
    let mut out: Entries = Vec::new();
    let mut next = Some(range.clone());
    while let Some(current) = next {
        let page = reader.scan_page(&current, direction, limit).await?;
        assert!(page.entries.len() <= limit, "page larger than its limit");
        if page.resume.is_some() {
            assert_eq!(
                page.entries.len(),
                limit,
                "resume on a page that is not full"
            );
        }
        for (key, value) in page.entries {
            assert!(range.contains(&key), "{key:?} outside {range:?}");
            if let Some((prev, _)) = out.last() {
                let ordered = match direction {
                    Direction::Forward => *prev < key,
                    Direction::Reverse => *prev > key,
                };
                assert!(ordered, "{prev:?} then {key:?} is not {direction:?} order");
            }
            out.push((key, value));
        }
        next = page.resume;
    }
    Ok(out)
}

/// `entries` reversed, for comparing reverse scans.
pub fn reversed(mut entries: Entries) -> Entries {
    entries.reverse();
    entries
}
