//! Value generators for the property tests.
//!
//! Each type mixes uniformly random values with its edge cases and a few tiny
//! values, so that random pairs are often equal or adjacent, which is where
//! ordering bugs hide.

use proptest::prelude::*;
use proptest::sample::select;
use rowdex_codec::{Datum, SortOrder};

/// Number of non-null kinds accepted by [`value_of_kind`].
pub const KINDS: usize = 9;

/// Awkward characters: NUL (escaped), multi-byte, the largest scalar value.
fn text() -> BoxedStrategy<String> {
    let chars = select(vec!['a', 'b', '\0', '\u{1}', '\u{7f}', 'é', '\u{10FFFF}']);
    prop_oneof![
        3 => prop::collection::vec(chars, 0..6).prop_map(|cs| cs.into_iter().collect()),
        1 => any::<String>(),
    ]
    .boxed()
}

fn bytes() -> BoxedStrategy<Vec<u8>> {
    let byte = prop_oneof![select(vec![0x00_u8, 0x01, 0xFE, 0xFF]), any::<u8>()];
    prop::collection::vec(byte, 0..6).boxed()
}

fn float() -> BoxedStrategy<f64> {
    let specials = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        f64::NAN,
        -f64::NAN,
        f64::from_bits(0x7FF0_0000_0000_0001),
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::MAX,
        f64::MIN,
        f64::MIN_POSITIVE,
        -f64::MIN_POSITIVE,
        f64::from_bits(1),
    ];
    prop_oneof![select(specials), any::<f64>()].boxed()
}

/// A non-null value of kind `kind` (0..KINDS, in key rank order).
pub fn value_of_kind(kind: usize) -> BoxedStrategy<Datum> {
    match kind {
        0 => any::<bool>().prop_map(Datum::Boolean).boxed(),
        1 => prop_oneof![
            any::<i64>(),
            select(vec![i64::MIN, i64::MIN + 1, -1, 0, 1, i64::MAX]),
            -3_i64..3
        ]
        .prop_map(Datum::Int)
        .boxed(),
        2 => float().prop_map(Datum::Float).boxed(),
        3 => prop_oneof![
            any::<i128>(),
            select(vec![i128::MIN, -1, 0, 1, i128::MAX]),
            -3_i128..3
        ]
        .prop_map(Datum::Decimal)
        .boxed(),
        4 => text().prop_map(Datum::Text).boxed(),
        5 => bytes().prop_map(Datum::Bytes).boxed(),
        6 => prop_oneof![
            any::<i32>(),
            select(vec![i32::MIN, -1, 0, i32::MAX]),
            -3_i32..3
        ]
        .prop_map(Datum::Date)
        .boxed(),
        7 => prop_oneof![
            any::<i64>(),
            select(vec![i64::MIN, -1, 0, i64::MAX]),
            -3_i64..3
        ]
        .prop_map(Datum::Timestamp)
        .boxed(),
        // Edge bytes make neighbours (equal prefixes, a last byte apart) likely.
        _ => prop_oneof![
            any::<[u8; 16]>(),
            select(vec![[0x00; 16], [0xFF; 16], [0x01; 16], [0xFE; 16]]),
            (0_u8..3).prop_map(|last| {
                let mut bytes = [0x7F; 16];
                bytes[15] = last;
                bytes
            }),
        ]
        .prop_map(Datum::Uuid)
        .boxed(),
    }
}

/// A value of kind `kind`, or NULL.
pub fn nullable(kind: usize) -> BoxedStrategy<Datum> {
    prop_oneof![1 => Just(Datum::Null), 6 => value_of_kind(kind)].boxed()
}

pub fn any_datum() -> BoxedStrategy<Datum> {
    (0..KINDS).prop_flat_map(nullable).boxed()
}

/// Two values that could share a column.
pub fn same_kind_pair() -> BoxedStrategy<(Datum, Datum)> {
    (0..KINDS)
        .prop_flat_map(|kind| (nullable(kind), nullable(kind)))
        .boxed()
}

pub fn order() -> BoxedStrategy<SortOrder> {
    prop_oneof![Just(SortOrder::Asc), Just(SortOrder::Desc)].boxed()
}

/// Two rows of a 2- or 3-column key schema with random column orders.
pub fn composite_pair() -> BoxedStrategy<(Vec<SortOrder>, Vec<Datum>, Vec<Datum>)> {
    prop::collection::vec((0..KINDS, order()), 2..=3)
        .prop_flat_map(|columns| {
            let orders: Vec<SortOrder> = columns.iter().map(|(_, o)| *o).collect();
            let row = |columns: &[(usize, SortOrder)]| -> Vec<BoxedStrategy<Datum>> {
                columns.iter().map(|(kind, _)| nullable(*kind)).collect()
            };
            (Just(orders), row(&columns), row(&columns))
        })
        .boxed()
}

/// Text for prefix tests: `(prefix, candidate)` where the candidate extends
/// the prefix half of the time.
pub fn prefix_case() -> BoxedStrategy<(String, String)> {
    (text(), text(), any::<bool>())
        .prop_map(|(prefix, tail, extend)| {
            let candidate = if extend {
                format!("{prefix}{tail}")
            } else {
                tail
            };
            (prefix, candidate)
        })
        .boxed()
}
