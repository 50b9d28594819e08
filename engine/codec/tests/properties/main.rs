//! Property tests of the public key and row encodings.
//!
//! They check the contracts other crates rely on: byte order equals
//! `Datum::key_cmp`, decoding inverts encoding, text prefixes select exactly
//! the matching keys, and no input makes a decoder panic.

mod json;
mod strategies;

use std::cmp::Ordering;

use proptest::prelude::*;
use rowdex_codec::key::{
    decode_datum, decode_key, encode_datum, encode_key, encode_text_prefix, prefix_successor,
};
use rowdex_codec::row::{cells, decode_row, encode_row};
use rowdex_codec::{Datum, SortOrder};
use strategies::{any_datum, composite_pair, order, prefix_case, same_kind_pair};

fn encoded(datum: &Datum, order: SortOrder) -> Vec<u8> {
    let mut out = Vec::new();
    encode_datum(&mut out, datum, order);
    out
}

fn directed(ordering: Ordering, order: SortOrder) -> Ordering {
    match order {
        SortOrder::Asc => ordering,
        SortOrder::Desc => ordering.reverse(),
    }
}

/// What a key gives back: keys cannot tell -0.0 from 0.0 or NaNs apart.
fn key_normalised(datum: &Datum) -> Datum {
    match datum {
        Datum::Float(f) if f.is_nan() => Datum::Float(f64::from_bits(0x7FF8_0000_0000_0000)),
        Datum::Float(f) if *f == 0.0 => Datum::Float(0.0),
        other => other.clone(),
    }
}

/// Equality that compares floats by bits, so NaN equals itself and -0.0 does not equal 0.0.
fn identical(a: &Datum, b: &Datum) -> bool {
    match (a, b) {
        (Datum::Float(x), Datum::Float(y)) => x.to_bits() == y.to_bits(),
        _ => a == b,
    }
}

/// Raw bytes biased towards tags and escape bytes so decoders get past the first byte.
fn fuzz_bytes() -> impl Strategy<Value = Vec<u8>> {
    let interesting = prop::sample::select(vec![
        0x00_u8, 0x01, 0x02, 0x10, 0x20, 0x30, 0x38, 0x40, 0x50, 0x60, 0x70, 0x80, 0xFE, 0xFF,
    ]);
    prop::collection::vec(prop_oneof![interesting, any::<u8>()], 0..40)
}

/// A valid encoding with one byte changed and/or its tail cut off.
fn damaged_key() -> impl Strategy<Value = (Vec<u8>, SortOrder)> {
    (
        any_datum(),
        order(),
        any::<prop::sample::Index>(),
        any::<u8>(),
        any::<bool>(),
    )
        .prop_map(|(datum, order, at, byte, cut)| {
            let mut bytes = encoded(&datum, order);
            let i = at.index(bytes.len());
            if cut {
                bytes.truncate(i);
            } else if let Some(b) = bytes.get_mut(i) {
                *b = byte;
            }
            (bytes, order)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn byte_order_matches_key_cmp((a, b) in same_kind_pair()) {
        let expected = a.key_cmp(&b);
        for order in [SortOrder::Asc, SortOrder::Desc] {
            let actual = encoded(&a, order).cmp(&encoded(&b, order));
            prop_assert_eq!(actual, directed(expected, order), "{:?} vs {:?} {:?}", a, b, order);
        }
    }

    #[test]
    fn composite_byte_order((orders, a, b) in composite_pair()) {
        let expected = a
            .iter()
            .zip(&b)
            .zip(&orders)
            .map(|((x, y), order)| directed(x.key_cmp(y), *order))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal);
        let (mut left, mut right) = (Vec::new(), Vec::new());
        let columns_a: Vec<_> = a.iter().zip(orders.iter().copied()).collect();
        let columns_b: Vec<_> = b.iter().zip(orders.iter().copied()).collect();
        encode_key(&mut left, &columns_a);
        encode_key(&mut right, &columns_b);
        prop_assert_eq!(left.cmp(&right), expected);

        let decoded = decode_key(&left, &orders, true)?;
        prop_assert_eq!(decoded.len(), a.len());
        for (got, original) in decoded.iter().zip(&a) {
            prop_assert!(identical(got, &key_normalised(original)), "{:?} vs {:?}", got, original);
        }
    }

    #[test]
    fn key_round_trip(datum in any_datum(), order in order(), suffix in fuzz_bytes()) {
        let mut bytes = encoded(&datum, order);
        let len = bytes.len();
        bytes.extend_from_slice(&suffix);
        let mut input = bytes.as_slice();
        let decoded = decode_datum(&mut input, order)?;
        prop_assert!(identical(&decoded, &key_normalised(&datum)), "{:?} vs {:?}", decoded, datum);
        prop_assert_eq!(input, &suffix[..]);
        prop_assert_eq!(encoded(&decoded, order).len(), len);
        prop_assert_eq!(decode_key(&bytes, &[order], suffix.is_empty())?.len(), 1);
    }

    #[test]
    fn text_prefix_selects_exactly_matching_keys((prefix, text) in prefix_case(), order in order()) {
        let mut start = Vec::new();
        encode_text_prefix(&mut start, &prefix, order);
        let key = encoded(&Datum::Text(text.clone()), order);
        let matches = text.starts_with(prefix.as_str());
        prop_assert_eq!(key.starts_with(&start), matches);
        if let Some(end) = prefix_successor(&start) {
            let in_range = key >= start && key < end;
            prop_assert_eq!(in_range, matches);
        }
    }

    #[test]
    fn successor_bounds_every_extension(prefix in fuzz_bytes(), tail in fuzz_bytes()) {
        let extended = [prefix.as_slice(), tail.as_slice()].concat();
        match prefix_successor(&prefix) {
            Some(end) => {
                prop_assert!(extended < end);
                prop_assert!(end > prefix);
                prop_assert!(!end.starts_with(&prefix));
            }
            None => prop_assert!(prefix.iter().all(|&b| b == 0xFF)),
        }
    }

    #[test]
    fn row_round_trip(
        version in any::<u32>(),
        cells in prop::collection::vec((any::<u32>(), any_datum()), 0..8),
    ) {
        let refs: Vec<(u32, &Datum)> = cells.iter().map(|(id, d)| (*id, d)).collect();
        let mut bytes = Vec::new();
        encode_row(&mut bytes, version, &refs);
        let row = decode_row(&bytes)?;
        prop_assert_eq!(row.schema_version, version);
        prop_assert_eq!(row.cells.len(), cells.len());
        for ((id, got), (want_id, want)) in row.cells.iter().zip(&cells) {
            prop_assert_eq!(id, want_id);
            prop_assert!(identical(got, want), "{:?} vs {:?}", got, want);
        }
    }

    #[test]
    fn decoders_never_panic(bytes in fuzz_bytes(), orders in prop::collection::vec(order(), 0..4)) {
        for order in [SortOrder::Asc, SortOrder::Desc] {
            let mut input = bytes.as_slice();
            if decode_datum(&mut input, order).is_ok() {
                prop_assert!(input.len() < bytes.len());
            }
        }
        let _ = decode_key(&bytes, &orders, true);
        let _ = decode_key(&bytes, &orders, false);
        let _ = decode_row(&bytes);
        if let Ok((_, cells)) = cells(&bytes) {
            // Ends (after an error at the latest) within the bytes' length in cells.
            prop_assert!(cells.count() <= bytes.len());
        }
    }

    #[test]
    fn damaged_keys_error_or_reencode_identically((bytes, order) in damaged_key()) {
        let mut input = bytes.as_slice();
        if let Ok(datum) = decode_datum(&mut input, order) {
            let consumed = &bytes[..bytes.len() - input.len()];
            prop_assert_eq!(encoded(&datum, order), consumed);
        }
    }
}
