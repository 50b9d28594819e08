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
