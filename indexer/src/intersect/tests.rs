//! Edge cases of the cursors and of the leapfrog; the randomized checks against a model live in
//! the `properties` integration test.

use std::collections::BTreeSet;
use std::sync::Arc;

use rowdex_store::{KeyRange, KvRead, KvStore, MemoryStore, WriteBatch};

use super::*;

type TestResult = std::result::Result<(), Box<dyn std::error::Error>>;

/// A store holding exactly `keys` (values are irrelevant to the intersection).
async fn store(keys: impl IntoIterator<Item = Vec<u8>>) -> Arc<dyn KvRead> {
    let store = MemoryStore::new();
    let mut batch = WriteBatch::new();
    for key in keys {
        batch.put(key, b"v".to_vec());
    }
    store.write(batch).await.expect("write");
    Arc::new(store)
}

fn key(prefix: &[u8], pk: &[u8]) -> Vec<u8> {
    [prefix, pk].concat()
}

/// The whole index range of `prefix`, pk right after it.
fn prefix_range(prefix: &[u8]) -> (KeyRange, usize) {
    (KeyRange::prefix(prefix), prefix.len())
}

/// A 2-byte big-endian pk, so numeric order is byte order.
fn pk(n: u16) -> Vec<u8> {
    n.to_be_bytes().to_vec()
}

async fn collect(intersection: Intersection) -> Result<Vec<Vec<u8>>> {
    let mut intersection = intersection;
    collect_from(&mut intersection).await
}

async fn collect_from(intersection: &mut Intersection) -> Result<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    while let Some(pk) = intersection.next().await? {
        out.push(pk);
    }
    // Exhaustion is sticky.
    assert_eq!(intersection.next().await?, None);
    Ok(out)
}

async fn drain(cursor: &mut PkCursor) -> Result<Vec<Vec<u8>>> {
    let mut out = Vec::new();
    while let Some(pk) = cursor.advance().await? {
        out.push(pk.to_vec());
    }
    Ok(out)
}

fn pks(ns: impl IntoIterator<Item = u16>) -> Vec<Vec<u8>> {
    ns.into_iter().map(pk).collect()
}

/// Index entries for `ns` under `prefix`.
fn entries(prefix: &[u8], ns: impl IntoIterator<Item = u16>) -> Vec<Vec<u8>> {
    ns.into_iter().map(|n| key(prefix, &pk(n))).collect()
}

#[test]
fn gallop_matches_partition_point() {
    let items: Vec<Vec<u8>> = pks((0..40).map(|n| n * 3));
    for from in 0..=items.len() {
        for t in 0..125u16 {
            let target = pk(t);
            let expected = from + items[from..].partition_point(|x| *x < target);
            assert_eq!(
                gallop(&items, from, &target, Vec::as_slice),
                expected,
                "from {from} target {t}"
            );
        }
    }
    assert_eq!(gallop(&Vec::<Vec<u8>>::new(), 0, b"x", Vec::as_slice), 0);
}

#[tokio::test]
async fn zero_inputs_yield_nothing() -> TestResult {
    let reader = store(entries(&[1], 0..10)).await;
    let intersection = Intersection::new(reader, Vec::new());
    assert_eq!(collect(intersection).await?, Vec::<Vec<u8>>::new());
    Ok(())
}

#[tokio::test]
async fn one_input_yields_that_input_and_nothing_from_neighbours() -> TestResult {
    let mut keys = entries(&[1], [3, 1, 200, 7]);
    keys.extend(entries(&[0], [2, 4]));
    keys.extend(entries(&[2], [0, 5, 9]));
    keys.push(vec![1]); // the empty pk
    let reader = store(keys).await;
    let got = collect(Intersection::new(
        reader.clone(),
        vec![PkInput::Ranges(vec![prefix_range(&[1])])],
    ))
    .await?;
    let mut expected = vec![Vec::new()];
    expected.extend(pks([1, 3, 7, 200]));
    assert_eq!(got, expected);

    let sorted = pks([4, 8, 9]);
    let got = collect(Intersection::new(
        reader,
        vec![PkInput::Sorted(sorted.clone())],
    ))
    .await?;
    assert_eq!(got, sorted);
    Ok(())
}

#[tokio::test]
async fn empty_inputs_empty_the_result_without_io() -> TestResult {
    let reader = store(entries(&[1], 0..100)).await;
    for empty in [PkInput::Sorted(Vec::new()), PkInput::Ranges(Vec::new())] {
        let mut intersection = Intersection::new(
            reader.clone(),
            vec![PkInput::Ranges(vec![prefix_range(&[1])]), empty],
        );
        assert_eq!(
            collect_from(&mut intersection).await?,
            Vec::<Vec<u8>>::new()
        );
        assert_eq!(intersection.stats(), IntersectionStats::default());
    }
    // An empty range (nothing stored under the prefix) is found empty by reading.
    let mut intersection = Intersection::new(
        reader,
        vec![
            PkInput::Ranges(vec![prefix_range(&[9])]),
            PkInput::Ranges(vec![prefix_range(&[1])]),
        ],
    );
    assert_eq!(intersection.next().await?, None);
    assert_eq!(
        intersection.stats(),
        IntersectionStats {
            entries_read: 0,
            seeks: 1,
            checks: 0
        },
        "the driver ran out first, so the other input is never read"
    );
    Ok(())
}

#[tokio::test]
async fn one_element_inputs() -> TestResult {
    let reader = store([entries(&[1], [5]), entries(&[2], [5]), entries(&[3], [6])].concat()).await;
    let r = |p: u8| PkInput::Ranges(vec![prefix_range(&[p])]);
    let got = collect(Intersection::new(reader.clone(), vec![r(1), r(2)])).await?;
    assert_eq!(got, pks([5]));
    let got = collect(Intersection::new(reader.clone(), vec![r(1), r(3)])).await?;
    assert!(got.is_empty());
    let got = collect(Intersection::new(
        reader.clone(),
        vec![PkInput::Sorted(pks([5])), r(2), r(1)],
    ))
    .await?;
    assert_eq!(got, pks([5]));
    let got = collect(Intersection::new(
        reader,
        vec![r(3), PkInput::Sorted(pks([5]))],
    ))
    .await?;
    assert!(got.is_empty());
    Ok(())
}

#[tokio::test]
async fn union_of_ranges_merges_and_drops_duplicates() -> TestResult {
    // Different prefix lengths, so different pk offsets, in one union.
    let p1: &[u8] = &[1, 1];
    let p2: &[u8] = &[1, 2, 7];
    let p3: &[u8] = &[1, 3];
    let reader = store(
        [
            entries(p1, [1, 4, 9, 12]),
            entries(p2, [4, 5, 12, 30]),
            entries(p3, [0, 4, 9]),
            entries(&[1, 4], [2, 3]), // a neighbour, not in the union
        ]
        .concat(),
    )
    .await;
    let union = || {
        PkInput::Ranges(vec![
            prefix_range(p1),
            prefix_range(p2),
            prefix_range(p3),
            prefix_range(&[1, 9]), // empty range
        ])
    };
    let mut cursor = PkCursor::new(reader.clone(), union());
    assert_eq!(cursor.current(), None);
    assert_eq!(drain(&mut cursor).await?, pks([0, 1, 4, 5, 9, 12, 30]));
    assert_eq!(cursor.advance().await?, None);
    assert_eq!(cursor.seek(&pk(0)).await?, None);

    let mut cursor = PkCursor::new(reader.clone(), union());
    assert_eq!(cursor.seek(&pk(5)).await?, Some(&pk(5)[..]));
    assert_eq!(cursor.seek(&pk(6)).await?, Some(&pk(9)[..]));
    assert_eq!(cursor.advance().await?, Some(&pk(12)[..]));
    assert_eq!(cursor.seek(&pk(13)).await?, Some(&pk(30)[..]));
    assert_eq!(cursor.advance().await?, None);

    let got = collect(Intersection::new(
        reader,
        vec![union(), PkInput::Sorted(pks([2, 4, 9, 29, 30, 31]))],
    ))
    .await?;
    assert_eq!(got, pks([4, 9, 30]));
    Ok(())
}

#[tokio::test]
async fn ranges_narrowed_by_pk_stay_inside_their_bounds() -> TestResult {
    let prefix: &[u8] = &[1];
    let reader = store(entries(prefix, 0..50)).await;
    // Start past the prefix (pk >= 10) and end before the prefix's end (pk < 40).
    let narrowed = || {
        PkInput::Ranges(vec![(
            KeyRange::new(key(prefix, &pk(10)), Some(key(prefix, &pk(40)))),
            prefix.len(),
        )])
    };
    let mut cursor = PkCursor::new(reader.clone(), narrowed());
    // A target below the narrowed start must not reopen the range below it.
    assert_eq!(cursor.seek(&pk(3)).await?, Some(&pk(10)[..]));
    let mut cursor = PkCursor::new(reader.clone(), narrowed());
    assert_eq!(drain(&mut cursor).await?, pks(10..40));
    let mut cursor = PkCursor::new(reader.clone(), narrowed());
    assert_eq!(cursor.seek(&pk(40)).await?, None);

    let got = collect(Intersection::new(
        reader,
        vec![PkInput::Sorted(pks([0, 9, 10, 25, 39, 40, 45])), narrowed()],
    ))
    .await?;
    assert_eq!(got, pks([10, 25, 39]));
    Ok(())
}

#[tokio::test]
async fn page_boundaries_at_matches() -> TestResult {
    let prefix: &[u8] = &[1];
    let reader = store(entries(prefix, 0..200)).await;
    let dense = || PkInput::Ranges(vec![prefix_range(prefix)]);

    // Driven by the dense input, pages are [0, 16) then [16, 48) (the size doubles): matches
    // on both sides of both boundaries.
    let first = INITIAL_PAGE as u16;
    let second = first + 2 * first;
    let wanted = pks([first - 1, first, second - 1, second, 199]);
    let got = collect(Intersection::new(
        reader.clone(),
        vec![dense(), PkInput::Sorted(wanted.clone())],
    ))
    .await?;
    assert_eq!(got, wanted);

    // Seeking: the first page starts at the target; the next seek lands exactly on its last
    // entry, the one after exactly on the first entry of the next page.
    let mut cursor = PkCursor::new(reader.clone(), dense());
    assert_eq!(cursor.seek(&pk(100)).await?, Some(&pk(100)[..]));
    assert_eq!(cursor.stats().seeks, 1);
    assert_eq!(cursor.seek(&pk(100 + first - 1)).await?, Some(&pk(115)[..]));
    assert_eq!(cursor.stats().seeks, 1, "inside the buffered page");
    // Just after the page's last pk, but before the next pk.
    let mut between = pk(115);
    between.push(0);
    assert_eq!(cursor.seek(&between).await?, Some(&pk(116)[..]));
    assert_eq!(cursor.stats().seeks, 2);
    assert_eq!(cursor.advance().await?, Some(&pk(117)[..]));
    // Exactly the last pk of the range, then past it.
    assert_eq!(cursor.seek(&pk(199)).await?, Some(&pk(199)[..]));
    assert_eq!(cursor.advance().await?, None);
    assert_eq!(cursor.current(), None);
    Ok(())
}

#[tokio::test]
async fn cursors_never_move_backwards() -> TestResult {
    let reader = store([entries(&[1], [2, 4, 6]), entries(&[2], [3, 6])].concat()).await;
    let inputs = [
        PkInput::Ranges(vec![prefix_range(&[1])]),
        PkInput::Ranges(vec![prefix_range(&[1]), prefix_range(&[2])]),
        PkInput::Sorted(pks([2, 3, 4, 6])),
    ];
    for input in inputs {
        let mut cursor = PkCursor::new(reader.clone(), input.clone());
        assert_eq!(cursor.seek(&pk(4)).await?, Some(&pk(4)[..]), "{input:?}");
        assert_eq!(cursor.seek(&pk(1)).await?, Some(&pk(4)[..]), "{input:?}");
        assert_eq!(cursor.seek(&pk(4)).await?, Some(&pk(4)[..]), "{input:?}");
        assert_eq!(cursor.advance().await?, Some(&pk(6)[..]), "{input:?}");
        assert_eq!(cursor.seek(&pk(0)).await?, Some(&pk(6)[..]), "{input:?}");
        assert_eq!(cursor.seek(&pk(7)).await?, None, "{input:?}");
        assert_eq!(cursor.seek(&pk(0)).await?, None, "{input:?}");
        assert_eq!(cursor.advance().await?, None, "{input:?}");
    }
    Ok(())
}

#[tokio::test]
async fn leapfrog_raises_the_candidate_from_any_input() -> TestResult {
    let reader = store(
        [
            entries(&[1], [1, 5, 10, 20, 30, 40]),
            entries(&[2], [1, 2, 3, 5, 11, 20, 31, 40]),
            entries(&[3], [0, 5, 12, 20, 29, 40, 41]),
        ]
        .concat(),
    )
    .await;
    let sets: Vec<BTreeSet<u16>> = vec![
        [1, 5, 10, 20, 30, 40].into(),
        [1, 2, 3, 5, 11, 20, 31, 40].into(),
        [0, 5, 12, 20, 29, 40, 41].into(),
    ];
    let expected = pks([5, 20, 40]);
    assert_eq!(
        expected,
        pks(sets[0]
            .iter()
            .filter(|n| sets[1].contains(n) && sets[2].contains(n))
            .copied())
    );
    // Every order of the three inputs gives the same result.
    for order in [
        [1, 2, 3],
        [1, 3, 2],
        [2, 1, 3],
        [2, 3, 1],
        [3, 1, 2],
        [3, 2, 1],
    ] {
        let inputs = order
            .iter()
            .map(|&p| PkInput::Ranges(vec![prefix_range(&[p])]))
            .collect();
        let got = collect(Intersection::new(reader.clone(), inputs)).await?;
        assert_eq!(got, expected, "order {order:?}");
    }
    Ok(())
}

#[tokio::test]
async fn a_key_shorter_than_the_pk_offset_is_malformed() -> TestResult {
    let reader = store([b"ab".to_vec(), b"abcd".to_vec()]).await;
    let mut cursor = PkCursor::new(
        reader,
        PkInput::Ranges(vec![(KeyRange::new(b"a".to_vec(), Some(b"b".to_vec())), 3)]),
    );
    match cursor.advance().await {
        Err(IndexError::MalformedEntry { key, .. }) => assert_eq!(key, b"ab"),
        other => panic!("expected a malformed entry, got {other:?}"),
    }
    Ok(())
}

#[tokio::test]
async fn sequential_reading_grows_pages() -> TestResult {
    let reader = store(entries(&[1], 0..5000)).await;
    let mut cursor = PkCursor::new(reader, PkInput::Ranges(vec![prefix_range(&[1])]));
    assert_eq!(drain(&mut cursor).await?.len(), 5000);
    let stats = cursor.stats();
    assert_eq!(stats.entries_read, 5000, "pages never overlap");
    // 16 + 32 + ... + 1024 = 2032 in 7 pages, then 3 pages of 1024.
    assert!(stats.seeks <= 10, "{stats:?}");
    Ok(())
}

#[tokio::test]
async fn skipping_shrinks_pages_and_seeks_past_the_buffer() -> TestResult {
    let reader = store(entries(&[1], 0..10_000)).await;
    let mut cursor = PkCursor::new(reader, PkInput::Ranges(vec![prefix_range(&[1])]));
    let targets: Vec<u16> = (0..100).map(|i| i * 100 + 7).collect();
    for &t in &targets {
        assert_eq!(cursor.seek(&pk(t)).await?, Some(&pk(t)[..]));
    }
    let stats = cursor.stats();
    assert_eq!(stats.seeks, targets.len() as u64, "one page per far seek");
    // 16 + 8 then 4 per seek once shrunk: nowhere near the 10 000 entries skipped.
    assert!(
        stats.entries_read <= (16 + 8 + 4 * 98) as u64,
        "pages did not shrink: {stats:?}"
    );
    Ok(())
}

#[tokio::test]
async fn moderately_dense_seeks_grow_pages() -> TestResult {
    // Every 4th pk is wanted: a landing per 4 entries is dense enough to grow the pages.
    let reader = store(entries(&[1], 0..4000)).await;
    let mut cursor = PkCursor::new(reader, PkInput::Ranges(vec![prefix_range(&[1])]));
    for t in (0..4000).step_by(4) {
        assert_eq!(cursor.seek(&pk(t)).await?, Some(&pk(t)[..]));
    }
    let stats = cursor.stats();
    assert!(stats.seeks <= 12, "{stats:?}");
    Ok(())
}

#[test]
fn futures_are_send() {
    fn assert_send<T: Send>(_: T) {}
    let reader: Arc<dyn KvRead> = Arc::new(MemoryStore::new());
    let mut intersection = Intersection::new(reader.clone(), Vec::new());
    assert_send(intersection.next());
    let mut cursor = PkCursor::new(reader, PkInput::Sorted(Vec::new()));
    assert_send(cursor.seek(b"x"));
    let mut cursor = PkCursor::new(Arc::new(MemoryStore::new()), PkInput::Ranges(Vec::new()));
    assert_send(cursor.advance());
    let arms = vec![PkInput::Sorted(pks([1])), PkInput::Sorted(pks([2]))];
    let mut cursor = PkCursor::new(Arc::new(MemoryStore::new()), PkInput::Any(arms));
    assert_send(cursor.seek(b"x"));
}

#[tokio::test]
async fn or_arms_merge_in_pk_order_and_empty_arms_vanish() -> TestResult {
    let mut keys = entries(&[1], [1, 4, 9]);
    keys.extend(entries(&[2], [2, 4, 10]));
    let reader = store(keys).await;
    let arms = || {
        vec![
            PkInput::Ranges(vec![prefix_range(&[1])]),
            PkInput::Ranges(Vec::new()),
            PkInput::Any(vec![
                PkInput::Sorted(pks([0, 9, 11])),
                PkInput::Ranges(vec![prefix_range(&[2])]),
            ]),
        ]
    };
    let mut cursor = PkCursor::new(reader.clone(), PkInput::Any(arms()));
    assert_eq!(drain(&mut cursor).await?, pks([0, 1, 2, 4, 9, 10, 11]));
    // Seeks land on the smallest pk of any arm at or after the target, never behind.
    let mut cursor = PkCursor::new(reader.clone(), PkInput::Any(arms()));
    assert_eq!(cursor.seek(&pk(3)).await?, Some(&pk(4)[..]));
    assert_eq!(cursor.seek(&pk(1)).await?, Some(&pk(4)[..]));
    assert_eq!(cursor.advance().await?, Some(&pk(9)[..]));
    assert_eq!(cursor.seek(&pk(10)).await?, Some(&pk(10)[..]));
    assert_eq!(cursor.seek(&pk(12)).await?, None);
    // Arms all empty: known empty, so an intersection with it reads nothing.
    let none = PkInput::Any(vec![
        PkInput::Ranges(Vec::new()),
        PkInput::Sorted(Vec::new()),
    ]);
    let mut intersection = Intersection::new(
        reader,
        vec![PkInput::Ranges(vec![prefix_range(&[1])]), none],
    );
    assert_eq!(intersection.next().await?, None);
    assert_eq!(intersection.stats(), IntersectionStats::default());
    Ok(())
}

#[tokio::test]
async fn checked_inputs_filter_by_lookup_without_reading() -> TestResult {
    // Driver: multiples of 3; checked: multiples of 2 under one of two value parts.
    let mut keys = entries(&[1], (0..300).filter(|n| n % 3 == 0));
    keys.extend(entries(&[2, 0], (0..300).filter(|n| n % 4 == 0)));
    keys.extend(entries(&[2, 1], (0..300).filter(|n| n % 4 == 2)));
    let reader = store(keys).await;
    let mut intersection = Intersection::new(
        reader.clone(),
        vec![PkInput::Ranges(vec![prefix_range(&[1])])],
    )
    .with_checks(vec![vec![vec![2, 0], vec![2, 1]]]);
    let got = collect_from(&mut intersection).await?;
    assert_eq!(got, pks((0..300).filter(|n| n % 6 == 0)));
    let stats = intersection.stats();
    assert_eq!(stats.entries_read, 100, "only the driver is read");
    assert_eq!(
        stats.checks, 200,
        "each of 100 candidates looked up under both parts"
    );

    // A check with no parts matches nothing, without any I/O.
    let mut none = Intersection::new(reader, vec![PkInput::Ranges(vec![prefix_range(&[1])])])
        .with_checks(vec![Vec::new()]);
    assert_eq!(none.next().await?, None);
    assert_eq!(none.stats(), IntersectionStats::default());
    Ok(())
}
