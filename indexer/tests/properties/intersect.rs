//! The leapfrog intersection against a `BTreeSet` model, on index entries in a `MemoryStore`.
//!
//! Inputs mix `Sorted` and `Ranges` (split over several prefixes of different lengths, with
//! duplicates across them, sometimes narrowed by pk at either end); entries under neighbouring
//! prefixes and outside the narrowed bounds are stored too and must never be picked up.

use std::collections::BTreeSet;
use std::sync::Arc;

use proptest::prelude::*;
use rowdex_indexer::intersect::{Intersection, IntersectionStats, PkCursor, PkInput};
use rowdex_store::{KeyRange, KvRead, KvStore, MemoryStore, WriteBatch};

type Pk = Vec<u8>;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("tokio runtime")
}

/// Short pks over few symbols (so inputs overlap), including the empty pk and the bytes at
/// both ends of the range, which stress successor and prefix-end arithmetic.
fn pk_strategy() -> impl Strategy<Value = Pk> {
    prop::collection::vec(
        prop::sample::select(vec![0u8, 1, 2, 3, 0x7F, 0xFE, 0xFF]),
        0..4,
    )
}

#[derive(Debug, Clone)]
struct PartSpec {
    /// Narrow the range start to `prefix ‖ lo`.
    lo: Option<Pk>,
    /// Narrow the range end to `prefix ‖ hi`.
    hi: Option<Pk>,
}

#[derive(Debug, Clone)]
struct InputSpec {
    /// Which pool pks the input holds.
    keep: Vec<bool>,
    /// Pks of its own.
    extra: BTreeSet<Pk>,
    sorted: bool,
    parts: Vec<PartSpec>,
    /// Drives which part(s) each pk is stored under.
    seed: u64,
}

fn part_spec() -> impl Strategy<Value = PartSpec> {
    (
        prop::option::weighted(0.25, pk_strategy()),
        prop::option::weighted(0.25, pk_strategy()),
    )
        .prop_map(|(lo, hi)| PartSpec { lo, hi })
}

fn case() -> impl Strategy<Value = (BTreeSet<Pk>, Vec<InputSpec>)> {
    prop::collection::btree_set(pk_strategy(), 0..150).prop_flat_map(|pool| {
        let input = (
            prop::collection::vec(prop::bool::weighted(0.75), pool.len()),
            prop::collection::btree_set(pk_strategy(), 0..8),
            prop::bool::weighted(0.3),
            prop::collection::vec(part_spec(), 1..=3),
            any::<u64>(),
        )
            .prop_map(|(keep, extra, sorted, parts, seed)| InputSpec {
                keep,
                extra,
                sorted,
                parts,
                seed,
            });
        (Just(pool), prop::collection::vec(input, 0..=4))
    })
}

/// xorshift64*: a deterministic spread of pks over parts, fixed by the generated seed.
fn next_random(state: &mut u64) -> u64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

/// Index prefix of part `j` of input `i`: 2 or 3 bytes, never a prefix of another part's.
fn prefix(i: usize, j: usize) -> Vec<u8> {
    let mut p = vec![0x20 + 4 * i as u8, 0x20 + 4 * j as u8 + 2];
    if (i + j) % 2 == 1 {
        p.push(0x77);
    }
    p
}

/// Prefixes right next to `p` (last byte ± 1): their entries sort around the part's range.
fn neighbours(p: &[u8]) -> [Vec<u8>; 2] {
    let (last, init) = p.split_last().expect("prefixes are not empty");
    [[init, &[last - 1]].concat(), [init, &[last + 1]].concat()]
}

/// A built case: the inputs, what each one holds by the model, and the entries stored in the
/// ranges the inputs read (the most a cursor that never re-reads may read).
struct Built {
    inputs: Vec<PkInput>,
    effective: Vec<BTreeSet<Pk>>,
    readable_entries: u64,
    /// Per input, its parts' prefixes when no part is narrowed (so the input can be checked
    /// by lookup instead of read).
    checkable: Vec<Option<Vec<Vec<u8>>>>,
}

fn build(pool: &BTreeSet<Pk>, specs: &[InputSpec], batch: &mut WriteBatch) -> Built {
    let mut built = Built {
        inputs: Vec::new(),
        effective: Vec::new(),
        readable_entries: 0,
        checkable: Vec::new(),
    };
    for (i, spec) in specs.iter().enumerate() {
        let members: BTreeSet<Pk> = pool
            .iter()
            .zip(&spec.keep)
            .filter(|(_, keep)| **keep)
            .map(|(pk, _)| pk.clone())
            .chain(spec.extra.iter().cloned())
            .collect();
        if spec.sorted {
            built
                .inputs
                .push(PkInput::Sorted(members.iter().cloned().collect()));
            built.effective.push(members);
            built.checkable.push(None);
            continue;
        }
        let parts = spec.parts.len();
        let mut assigned: Vec<Vec<&Pk>> = vec![Vec::new(); parts];
        let mut state = spec.seed | 1;
        for pk in &members {
            // A nonempty subset of the parts: duplicates across ranges are common.
            let mut mask = next_random(&mut state) % (1 << parts);
            if mask == 0 {
                mask = 1 << (next_random(&mut state) % parts as u64);
            }
            for (j, part) in assigned.iter_mut().enumerate() {
                if mask & (1 << j) != 0 {
                    part.push(pk);
                }
            }
        }
        let mut ranges = Vec::new();
        let mut effective = BTreeSet::new();
        for (j, (part, pks)) in spec.parts.iter().zip(&assigned).enumerate() {
            let p = prefix(i, j);
            for pk in pks {
                batch.put([&p[..], pk].concat(), vec![i as u8, j as u8]);
            }
            // Every pool pk under both neighbours: a leak would show up in the result.
            for n in neighbours(&p) {
                for pk in pool {
                    batch.put([&n[..], pk].concat(), Vec::new());
                }
            }
            let start = match &part.lo {
                Some(lo) => [&p[..], lo].concat(),
                None => p.clone(),
            };
            let end = match &part.hi {
                Some(hi) => Some([&p[..], hi].concat()),
                None => KeyRange::prefix(&p).end,
            };
            let inside = |pk: &Pk| {
                part.lo.as_ref().is_none_or(|lo| pk >= lo)
                    && part.hi.as_ref().is_none_or(|hi| pk < hi)
            };
            let kept: Vec<&Pk> = pks.iter().copied().filter(|pk| inside(pk)).collect();
            built.readable_entries += kept.len() as u64;
            effective.extend(kept.into_iter().cloned());
            ranges.push((KeyRange::new(start, end), p.len()));
        }
        let narrowed = spec.parts.iter().any(|p| p.lo.is_some() || p.hi.is_some());
        built
            .checkable
            .push((!narrowed).then(|| (0..parts).map(|j| prefix(i, j)).collect()));
        built.inputs.push(PkInput::Ranges(ranges));
        built.effective.push(effective);
    }
    built
}

fn model_intersection(sets: &[BTreeSet<Pk>]) -> Vec<Pk> {
    let Some((first, rest)) = sets.split_first() else {
        return Vec::new();
    };
    first
        .iter()
        .filter(|pk| rest.iter().all(|set| set.contains(*pk)))
        .cloned()
        .collect()
}

async fn collect(
    reader: Arc<dyn KvRead>,
    inputs: Vec<PkInput>,
) -> rowdex_indexer::Result<(Vec<Pk>, IntersectionStats)> {
    let mut intersection = Intersection::new(reader, inputs);
    let mut out = Vec::new();
    while let Some(pk) = intersection.next().await? {
        out.push(pk);
    }
    Ok((out, intersection.stats()))
}

async fn drain(cursor: &mut PkCursor) -> rowdex_indexer::Result<Vec<Pk>> {
    let mut out = Vec::new();
    while let Some(pk) = cursor.advance().await? {
        out.push(pk.to_vec());
    }
    Ok(out)
}

/// Where the model cursor is.
#[derive(Debug, Clone, PartialEq)]
enum ModelPos {
    Before,
    At(Pk),
    Done,
}

impl ModelPos {
    fn after(set: &BTreeSet<Pk>, from: std::ops::Bound<&Pk>) -> ModelPos {
        set.range::<Pk, _>((from, std::ops::Bound::Unbounded))
            .next()
            .map_or(ModelPos::Done, |pk| ModelPos::At(pk.clone()))
    }

    fn as_option(&self) -> Option<&[u8]> {
        match self {
            ModelPos::At(pk) => Some(pk),
            ModelPos::Before | ModelPos::Done => None,
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn intersection_equals_the_set_intersection((pool, specs) in case()) {
        runtime().block_on(async {
            let store = MemoryStore::new();
            let mut batch = WriteBatch::new();
            let built = build(&pool, &specs, &mut batch);
            store.write(batch).await?;
            let reader = store.snapshot();

            let (got, stats) = collect(reader.clone(), built.inputs.clone()).await?;
            prop_assert_eq!(&got, &model_intersection(&built.effective));
            prop_assert!(
                stats.entries_read <= built.readable_entries,
                "an entry was read twice or from outside the ranges: {:?} > {}",
                stats,
                built.readable_entries
            );

            // Every checkable input but the first checked by lookup instead of merged: same
            // answer, and none of the checked inputs' entries is read.
            let mut merged = Vec::new();
            let mut checks = Vec::new();
            for (i, (input, checkable)) in
                built.inputs.iter().zip(&built.checkable).enumerate()
            {
                match checkable {
                    Some(parts) if i > 0 => checks.push(parts.clone()),
                    _ => merged.push(input.clone()),
                }
            }
            let checked_inputs = checks.len();
            let mut intersection = Intersection::new(reader.clone(), merged).with_checks(checks);
            let mut got = Vec::new();
            while let Some(pk) = intersection.next().await? {
                got.push(pk);
            }
            prop_assert_eq!(intersection.next().await?, None);
            prop_assert_eq!(&got, &model_intersection(&built.effective));
            if checked_inputs == 0 {
                prop_assert_eq!(intersection.stats().checks, 0);
            }

            // The inputs as the arms of an OR, flat and nested, and ORs intersected.
            let union: BTreeSet<Pk> = built.effective.iter().flatten().cloned().collect();
            let mut cursor = PkCursor::new(reader.clone(), PkInput::Any(built.inputs.clone()));
            prop_assert_eq!(drain(&mut cursor).await?, union.iter().cloned().collect::<Vec<_>>());
            prop_assert!(cursor.stats().entries_read <= built.readable_entries);
            let half = built.inputs.len() / 2;
            let (left, right) = built.inputs.split_at(half);
            let nested = PkInput::Any(vec![
                PkInput::Any(left.to_vec()),
                PkInput::Any(right.iter().rev().cloned().collect()),
            ]);
            let mut cursor = PkCursor::new(reader.clone(), nested);
            prop_assert_eq!(drain(&mut cursor).await?, union.iter().cloned().collect::<Vec<_>>());
            let arms = |inputs: &[PkInput], sets: &[BTreeSet<Pk>]| {
                (PkInput::Any(inputs.to_vec()), sets.iter().flatten().cloned().collect())
            };
            let (left_any, left_set) = arms(left, &built.effective[..half]);
            let (right_any, right_set) = arms(right, &built.effective[half..]);
            let (got, _) = collect(reader.clone(), vec![left_any, right_any]).await?;
            prop_assert_eq!(got, model_intersection(&[left_set, right_set]));

            // Each input on its own: the union merge, narrowing and neighbours in isolation.
            for (input, effective) in built.inputs.into_iter().zip(&built.effective) {
                let mut cursor = PkCursor::new(reader.clone(), input);
                let all = drain(&mut cursor).await?;
                prop_assert_eq!(all, effective.iter().cloned().collect::<Vec<_>>());
            }
            Ok::<(), TestCaseError>(())
        })?;
    }

    /// Arbitrary interleavings of seek and advance on one input follow the model cursor.
    #[test]
    fn cursor_follows_the_model(
        (pool, specs) in case(),
        ops in prop::collection::vec(prop::option::weighted(0.6, pk_strategy()), 0..40),
    ) {
        runtime().block_on(async {
            let store = MemoryStore::new();
            let mut batch = WriteBatch::new();
            let built = build(&pool, &specs, &mut batch);
            store.write(batch).await?;
            let reader = store.snapshot();
            let union: BTreeSet<Pk> = built.effective.iter().flatten().cloned().collect();
            let any = (PkInput::Any(built.inputs.clone()), union);
            let cases = built.inputs.into_iter().zip(built.effective).chain([any]);
            for (input, set) in cases {
                let set = &set;
                let mut cursor = PkCursor::new(reader.clone(), input);
                let mut model = ModelPos::Before;
                for op in &ops {
                    use std::ops::Bound::{Excluded, Included, Unbounded};
                    let got = match op {
                        Some(target) => {
                            model = match &model {
                                ModelPos::Before => ModelPos::after(set, Included(target)),
                                ModelPos::At(pk) if pk >= target => model.clone(),
                                ModelPos::At(_) => ModelPos::after(set, Included(target)),
                                ModelPos::Done => ModelPos::Done,
                            };
                            cursor.seek(target).await?.map(<[u8]>::to_vec)
                        }
                        None => {
                            model = match &model {
                                ModelPos::Before => ModelPos::after(set, Unbounded),
                                ModelPos::At(pk) => ModelPos::after(set, Excluded(pk)),
                                ModelPos::Done => ModelPos::Done,
                            };
                            cursor.advance().await?.map(<[u8]>::to_vec)
                        }
                    };
                    prop_assert_eq!(got.as_deref(), model.as_option(), "after {:?}", op);
                    prop_assert_eq!(cursor.current(), model.as_option());
                }
            }
            Ok::<(), TestCaseError>(())
        })?;
    }

    /// Big inputs of very different densities: crosses many page boundaries while the page
    /// sizes grow and shrink.
    #[test]
    fn large_inputs_of_mixed_density(
        universe in 1u32..4000,
        inputs in prop::collection::vec(
            (
                prop::sample::select(vec![0.001, 0.01, 0.05, 0.2, 0.5, 0.9, 1.0]),
                any::<u64>(),
                prop::bool::weighted(0.25),
                1usize..=2,
            ),
            1..=4,
        ),
    ) {
        runtime().block_on(async {
            let store = MemoryStore::new();
            let mut batch = WriteBatch::new();
            let mut pk_inputs = Vec::new();
            let mut sets = Vec::new();
            for (i, &(density, seed, sorted, parts)) in inputs.iter().enumerate() {
                let mut state = seed | 1;
                let threshold = (density * f64::from(u32::MAX)) as u64;
                let set: BTreeSet<Pk> = (0..universe)
                    .filter(|_| next_random(&mut state) % (1 << 32) <= threshold)
                    .map(|n| n.to_be_bytes().to_vec())
                    .collect();
                if sorted {
                    pk_inputs.push(PkInput::Sorted(set.iter().cloned().collect()));
                } else {
                    // Split by parity of the pk over `parts` prefixes.
                    for pk in &set {
                        let j = usize::from(pk[3]) % parts;
                        batch.put([&prefix(i, j)[..], pk].concat(), Vec::new());
                    }
                    pk_inputs.push(PkInput::Ranges(
                        (0..parts)
                            .map(|j| (KeyRange::prefix(&prefix(i, j)), prefix(i, j).len()))
                            .collect(),
                    ));
                }
                sets.push(set);
            }
            store.write(batch).await?;
            let (got, _) = collect(store.snapshot(), pk_inputs).await?;
            prop_assert_eq!(got, model_intersection(&sets));
            Ok::<(), TestCaseError>(())
        })?;
    }
}

fn num_pk(n: u32) -> Pk {
    n.to_be_bytes().to_vec()
}

/// `count` index entries `prefix ‖ pk(n)` for n in `ns`.
fn put_all(batch: &mut WriteBatch, prefix: &[u8], ns: impl IntoIterator<Item = u32>) {
    for n in ns {
        batch.put([prefix, &num_pk(n)].concat(), Vec::new());
    }
}

#[test]
fn a_sparse_driver_skips_most_of_a_dense_input() -> Result<(), Box<dyn std::error::Error>> {
    runtime().block_on(async {
        const DENSE: u32 = 100_000;
        let store = MemoryStore::new();
        let mut batch = WriteBatch::new();
        put_all(&mut batch, b"d", 0..DENSE);
        // 10 pks spread across the dense range; 3 of them missing from it.
        let sparse: Vec<u32> = (0..10).map(|i| i * 10_007 + 13).collect();
        put_all(&mut batch, b"s", sparse.iter().copied());
        put_all(&mut batch, b"s", [DENSE + 5]);
        store.write(batch).await?;
        let reader = store.snapshot();

        let dense = || PkInput::Ranges(vec![(KeyRange::prefix(b"d"), 1)]);
        let expected: Vec<Pk> = sparse.iter().map(|&n| num_pk(n)).collect();
        for sparse_input in [
            PkInput::Ranges(vec![(KeyRange::prefix(b"s"), 1)]),
            PkInput::Sorted(expected.clone()),
        ] {
            let (got, stats) = collect(reader.clone(), vec![sparse_input, dense()]).await?;
            assert_eq!(got, expected);
            // Far below 10% of the dense input: each far seek opens one small page.
            assert!(
                stats.entries_read < u64::from(DENSE) / 100,
                "read too much: {stats:?}"
            );
            assert!(stats.seeks <= 2 * 12, "{stats:?}");
        }
        Ok(())
    })
}

#[test]
fn two_dense_inputs_read_each_entry_once_in_big_pages() -> Result<(), Box<dyn std::error::Error>> {
    runtime().block_on(async {
        const N: u32 = 100_000;
        let store = MemoryStore::new();
        let mut batch = WriteBatch::new();
        put_all(&mut batch, b"a", 0..N);
        put_all(&mut batch, b"b", (0..N).filter(|n| n % 3 != 0));
        store.write(batch).await?;
        let inputs = vec![
            PkInput::Ranges(vec![(KeyRange::prefix(b"a"), 1)]),
            PkInput::Ranges(vec![(KeyRange::prefix(b"b"), 1)]),
        ];
        let (got, stats) = collect(store.snapshot(), inputs).await?;
        assert_eq!(got.len(), (0..N).filter(|n| n % 3 != 0).count());
        assert!(got.windows(2).all(|w| w[0] < w[1]));
        let b_len = u64::from(N) - u64::from(N).div_ceil(3);
        assert_eq!(stats.entries_read, u64::from(N) + b_len);
        // Pages grow to 1024 entries: ~100 + ~70 pages, not thousands of small ones.
        assert!(stats.seeks < 250, "{stats:?}");
        Ok(())
    })
}
