//! Range scans: paging, direction, bounds and prefixes.

use std::sync::Arc;

use futures::TryStreamExt;
use rowdex_store::{Direction, KeyRange, KvRead, KvStore, Result, WriteBatch, scan_stream};

use crate::common::{Entries, entries, put_all, put_raw, range, reversed, scan_all};

const PAGE_SIZES: [usize; 3] = [1, 2, 1000];

/// Ten keys `k0`..`k9` plus neighbours just outside `KeyRange::prefix(b"k")`.
async fn seed(store: &dyn KvStore) -> Result<Entries> {
    let inside: Vec<(String, String)> = (0..10)
        .map(|i| (format!("k{i}"), format!("v{i}")))
        .collect();
    let mut pairs: Vec<(&str, &str)> = inside
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    pairs.extend([("j", "before"), ("l", "after"), ("k", "bare")]);
    put_all(store, &pairs).await?;
    let mut expected = entries(&pairs[..10]);
    expected.insert(0, (b"k".to_vec(), b"bare".to_vec()));
    Ok(expected)
}

pub async fn forward_paging(store: Arc<dyn KvStore>) -> Result<()> {
    let expected = seed(&*store).await?;
    for limit in PAGE_SIZES {
        let got = scan_all(&*store, &KeyRange::prefix(b"k"), Direction::Forward, limit).await?;
        assert_eq!(got, expected, "page size {limit}");
    }
    Ok(())
}

pub async fn reverse_paging(store: Arc<dyn KvStore>) -> Result<()> {
    let expected = reversed(seed(&*store).await?);
    for limit in PAGE_SIZES {
        let got = scan_all(&*store, &KeyRange::prefix(b"k"), Direction::Reverse, limit).await?;
        assert_eq!(got, expected, "page size {limit}");
    }
    Ok(())
}

pub async fn bounded_and_unbounded_ranges(store: Arc<dyn KvStore>) -> Result<()> {
    put_all(&*store, &[("a", "1"), ("b", "2"), ("c", "3"), ("d", "4")]).await?;
    let cases = [
        (range("b", Some("d")), entries(&[("b", "2"), ("c", "3")])),
        (
            range("b", None),
            entries(&[("b", "2"), ("c", "3"), ("d", "4")]),
        ),
        (range("", Some("c")), entries(&[("a", "1"), ("b", "2")])),
        (
            range("", None),
            entries(&[("a", "1"), ("b", "2"), ("c", "3"), ("d", "4")]),
        ),
        (range("bb", Some("c\0")), entries(&[("c", "3")])),
        (range("e", None), Vec::new()),
    ];
    for (r, expected) in cases {
        for limit in PAGE_SIZES {
            let fwd = scan_all(&*store, &r, Direction::Forward, limit).await?;
            assert_eq!(fwd, expected, "{r:?} forward, page size {limit}");
            let rev = scan_all(&*store, &r, Direction::Reverse, limit).await?;
            assert_eq!(
                rev,
                reversed(expected.clone()),
                "{r:?} reverse, page size {limit}"
            );
        }
    }
    Ok(())
}

pub async fn empty_and_inverted_ranges(store: Arc<dyn KvStore>) -> Result<()> {
    put_all(&*store, &[("a", "1"), ("b", "2")]).await?;
    for r in [
        range("b", Some("b")),
        range("b", Some("a")),
        range("", Some("")),
    ] {
        for direction in [Direction::Forward, Direction::Reverse] {
            let page = store.scan_page(&r, direction, 10).await?;
            assert!(page.entries.is_empty(), "{r:?}");
            assert_eq!(page.resume, None, "{r:?}");
        }
    }
    Ok(())
}

pub async fn prefix_ranges_with_ff_bytes(store: Arc<dyn KvStore>) -> Result<()> {
    let keys: [&[u8]; 10] = [
        &[1, 0xFE],
        &[1, 0xFE, 0xFF],
        &[1, 0xFF],
        &[1, 0xFF, 0],
        &[1, 0xFF, 0xFF, 0xFF],
        &[2],
        &[2, 0],
        &[0xFF],
        &[0xFF, 0xFF, 1],
        &[0xFE, 0xFF],
    ];
    let pairs: Entries = keys.iter().map(|k| (k.to_vec(), k.to_vec())).collect();
    put_raw(&*store, &pairs).await?;

    let expect =
        |ks: &[&[u8]]| -> Entries { ks.iter().map(|k| (k.to_vec(), k.to_vec())).collect() };
    let cases = [
        (
            vec![1, 0xFF],
            expect(&[&[1, 0xFF], &[1, 0xFF, 0], &[1, 0xFF, 0xFF, 0xFF]]),
        ),
        (vec![1, 0xFE], expect(&[&[1, 0xFE], &[1, 0xFE, 0xFF]])),
        (vec![0xFF], expect(&[&[0xFF], &[0xFF, 0xFF, 1]])),
        (vec![0xFF, 0xFF], expect(&[&[0xFF, 0xFF, 1]])),
        (vec![0xFE], expect(&[&[0xFE, 0xFF]])),
        (vec![2], expect(&[&[2], &[2, 0]])),
    ];
    for (prefix, expected) in cases {
        let r = KeyRange::prefix(&prefix);
        for limit in PAGE_SIZES {
            let fwd = scan_all(&*store, &r, Direction::Forward, limit).await?;
            assert_eq!(
                fwd, expected,
                "prefix {prefix:?} forward, page size {limit}"
            );
            let rev = scan_all(&*store, &r, Direction::Reverse, limit).await?;
            assert_eq!(rev, reversed(expected.clone()), "prefix {prefix:?} reverse");
        }
    }
    Ok(())
}

pub async fn limit_zero_reports_remaining(store: Arc<dyn KvStore>) -> Result<()> {
    put_all(&*store, &[("a", "1")]).await?;
    for direction in [Direction::Forward, Direction::Reverse] {
        let page = store.scan_page(&KeyRange::all(), direction, 0).await?;
        assert!(page.entries.is_empty());
        assert_eq!(page.resume, Some(KeyRange::all()));
        let page = store.scan_page(&range("b", None), direction, 0).await?;
        assert_eq!(page.resume, None);
    }
    // A page that ends exactly at the last entry says the range is exhausted.
    let page = store
        .scan_page(&KeyRange::all(), Direction::Forward, 1)
        .await?;
    assert_eq!(page.entries.len(), 1);
    assert_eq!(page.resume, None);
    Ok(())
}

pub async fn deleted_keys_are_not_scanned(store: Arc<dyn KvStore>) -> Result<()> {
    put_all(&*store, &[("a", "1"), ("b", "2"), ("c", "3"), ("d", "4")]).await?;
    let mut batch = WriteBatch::new();
    batch.delete(b"b".to_vec());
    batch.delete(b"c".to_vec());
    store.write(batch).await?;
    let expected = entries(&[("a", "1"), ("d", "4")]);
    for limit in PAGE_SIZES {
        assert_eq!(
            scan_all(&*store, &KeyRange::all(), Direction::Forward, limit).await?,
            expected
        );
        assert_eq!(
            scan_all(&*store, &KeyRange::all(), Direction::Reverse, limit).await?,
            reversed(expected.clone())
        );
    }
    Ok(())
}

pub async fn stream_reads_whole_range(store: Arc<dyn KvStore>) -> Result<()> {
    let expected = seed(&*store).await?;
    let readers: [Arc<dyn KvRead>; 2] = [store.snapshot(), store.clone()];
    for reader in readers {
        for page_size in [0, 1, 3, 1000] {
            let r = KeyRange::prefix(b"k");
            let fwd: Entries = scan_stream(
                Arc::clone(&reader),
                r.clone(),
                Direction::Forward,
                page_size,
            )
            .try_collect()
            .await?;
            assert_eq!(fwd, expected, "page size {page_size}");
            let rev: Entries = scan_stream(Arc::clone(&reader), r, Direction::Reverse, page_size)
                .try_collect()
                .await?;
            assert_eq!(rev, reversed(expected.clone()), "page size {page_size}");
        }
    }
    Ok(())
}

/// Counts `range` in pieces of `cap`, following each piece's resume, as a planner's resumable
/// dive does.
async fn count_in_pieces(reader: &dyn KvRead, range: &KeyRange, cap: u64) -> Result<u64> {
    let mut total = 0;
    let mut next = Some(range.clone());
    while let Some(current) = next {
        let counted = reader.count_page(&current, cap).await?;
        assert!(counted.entries <= cap, "a count stops at its cap");
        if counted.resume.is_some() {
            assert_eq!(counted.entries, cap, "a count with more left is a full one");
        }
        total += counted.entries;
        next = counted.resume;
    }
    Ok(total)
}

pub async fn counts_match_scans(store: Arc<dyn KvStore>) -> Result<()> {
    let expected = seed(&*store).await?;
    let mut batch = WriteBatch::new();
    batch.delete(b"k3".to_vec());
    store.write(batch).await?;
    let snapshot = store.snapshot();
    // Written after the snapshot: only the live store counts it.
    put_all(&*store, &[("k35", "late")]).await?;
    let in_k = expected.len() as u64 - 1;
    for cap in [1, 2, 3, 1000] {
        assert_eq!(
            count_in_pieces(&*snapshot, &KeyRange::prefix(b"k"), cap).await?,
            in_k
        );
        assert_eq!(
            count_in_pieces(&*store, &KeyRange::prefix(b"k"), cap).await?,
            in_k + 1
        );
        assert_eq!(
            count_in_pieces(&*store, &KeyRange::all(), cap).await?,
            in_k + 3
        );
    }
    let exact = store.count_page(&KeyRange::prefix(b"k"), in_k + 1).await?;
    assert_eq!((exact.entries, exact.resume), (in_k + 1, None));
    let short = store.count_page(&KeyRange::prefix(b"k"), 2).await?;
    assert_eq!(
        short.resume,
        Some(KeyRange::new(b"k0\0".to_vec(), Some(b"l".to_vec()))),
        "the rest starts after the last key counted"
    );
    let empty = store.count_page(&range("k5", Some("k1")), 10).await?;
    assert_eq!((empty.entries, empty.resume), (0, None));
    let none = store.count_page(&KeyRange::prefix(b"k"), 0).await?;
    assert_eq!(none.entries, 0);
    assert!(
        none.resume.is_some(),
        "a zero cap still says whether anything is there"
    );

    // Inside a transaction, its own writes count and so do its deletes.
    let mut tx = store.begin().await?;
    tx.put(b"k77".to_vec(), b"mine".to_vec());
    tx.delete(b"k0".to_vec());
    assert_eq!(
        count_in_pieces(&*tx, &KeyRange::prefix(b"k"), 2).await?,
        in_k + 1
    );
    Ok(())
}

pub async fn contains_answers_presence(store: Arc<dyn KvStore>) -> Result<()> {
    put_all(&*store, &[("a", "1"), ("b", ""), ("c", "3")]).await?;
    let snapshot = store.snapshot();
    let mut batch = WriteBatch::new();
    batch.delete(b"c".to_vec());
    batch.put(b"d".to_vec(), b"4".to_vec());
    store.write(batch).await?;
    let keys: Vec<Vec<u8>> = ["a", "b", "c", "d", "", "zz"]
        .iter()
        .map(|k| k.as_bytes().to_vec())
        .collect();
    assert_eq!(
        store.contains(&keys).await?,
        [true, true, false, true, false, false],
        "an empty value is present; a deleted key is not"
    );
    assert_eq!(
        snapshot.contains(&keys).await?,
        [true, true, true, false, false, false]
    );
    let too_long = vec![vec![7u8; rowdex_store::MAX_KEY_LEN + 1]];
    assert_eq!(store.contains(&too_long).await?, [false]);
    let mut tx = store.begin().await?;
    tx.put(b"e".to_vec(), b"5".to_vec());
    tx.delete(b"a".to_vec());
    assert_eq!(
        tx.contains(&[b"a".to_vec(), b"e".to_vec()]).await?,
        [false, true]
    );
    Ok(())
}

/// `visit_page` lends exactly the entries `scan_page` copies out, with the same `resume`, in
/// both directions, for every page size, on the store, a snapshot and a transaction (which
/// sees its own writes).
pub async fn visits_match_scans(store: Arc<dyn KvStore>) -> Result<()> {
    seed(&*store).await?;
    let snapshot = store.snapshot();
    put_all(&*store, &[("k35", "late")]).await?;
    let mut txn = store.begin().await?;
    txn.put(b"k7a".to_vec(), b"mine".to_vec());
    txn.delete(b"k2".to_vec());
    let readers: [(&str, &dyn KvRead); 3] = [
        ("store", &*store),
        ("snapshot", &*snapshot),
        ("transaction", &*txn),
    ];
    let ranges = [
        KeyRange::all(),
        KeyRange::prefix(b"k"),
        range("k3", Some("k8")),
        range("k5", Some("k1")),
    ];
    for (name, reader) in readers {
        for whole in &ranges {
            for direction in [Direction::Forward, Direction::Reverse] {
                for limit in [0, 1, 2, 1000] {
                    let scanned = reader.scan_page(whole, direction, limit).await?;
                    let mut visited = Vec::new();
                    let resume = reader
                        .visit_page(whole, direction, limit, &mut |key, value| {
                            visited.push((key.to_vec(), value.to_vec()));
                        })
                        .await?;
                    assert_eq!(
                        (visited, resume),
                        (scanned.entries, scanned.resume),
                        "{name} {whole:?} {direction:?} limit {limit}"
                    );
                }
            }
        }
    }
    Ok(())
}

/// `scan_pages` answers each range as `scan_page` does (entries and resume), empty and
/// inverted ranges included, in both directions and with pages shorter than a range, from a
/// snapshot; `scan_ranges_stream` reads ranges one after the other, whole, more ranges than
/// one batch holds included. etcd says it batches; the embedded stores read range by range.
pub async fn batched_ranges_match_single_pages(store: Arc<dyn KvStore>) -> Result<()> {
    let pairs: Vec<(String, String)> = (0..300)
        .map(|i| (format!("r{:03}-{}", i / 3, i % 3), format!("v{i}")))
        .collect();
    let refs: Vec<(&str, &str)> = pairs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    put_all(&*store, &refs).await?;
    let snapshot = store.snapshot();
    let mut ranges: Vec<KeyRange> = (0..150)
        .map(|i| KeyRange::prefix(format!("r{:03}-", i).as_bytes()))
        .collect();
    ranges.push(range("r050", Some("r040")));
    ranges.push(range("q", Some("q\0")));
    for direction in [Direction::Forward, Direction::Reverse] {
        for limit in [1, 2, 1000] {
            let batched = snapshot.scan_pages(&ranges, direction, limit).await?;
            assert_eq!(batched.len(), ranges.len());
            for (range, page) in ranges.iter().zip(&batched) {
                let single = snapshot.scan_page(range, direction, limit).await?;
                assert_eq!(
                    page.entries, single.entries,
                    "{range:?} {direction:?} {limit}"
                );
                assert_eq!(
                    page.resume, single.resume,
                    "{range:?} {direction:?} {limit}"
                );
            }
        }
    }
    let streamed: Vec<(Vec<u8>, Vec<u8>)> =
        rowdex_store::scan_ranges_stream(snapshot.clone(), ranges.clone(), Direction::Forward, 2)
            .try_collect()
            .await?;
    let mut expected = Vec::new();
    for range in &ranges {
        expected.extend(scan_all(&*snapshot, range, Direction::Forward, 1000).await?);
    }
    assert_eq!(streamed.len(), 300);
    assert_eq!(streamed, expected);
    let batches = store.capabilities().costs.range_in_batch_ns.is_some();
    assert_eq!(snapshot.batches_ranges(), batches);
    Ok(())
}
