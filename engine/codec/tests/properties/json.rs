//! Property tests of `codec::json`: `jsonb` text is a fixed point (normalising it again, or
//! reading it back, changes nothing), however a document is written (blanks, key order,
//! repeated keys, number spellings); the sort key orders as values compare; and no text makes
//! the parser panic.

use std::cmp::Ordering;

use proptest::prelude::*;
use rowdex_codec::json::{Jsonb, parse_json, sort_key};

/// A JSON number as it may be written: sign, digits, fraction, exponent.
fn number_text() -> impl Strategy<Value = String> {
    (
        any::<bool>(),
        "(0|[1-9][0-9]{0,6})",
        prop::option::of("[0-9]{1,4}"),
        prop::option::of((
            prop_oneof![Just("e"), Just("E")],
            prop_oneof![Just(""), Just("+"), Just("-")],
            0u32..12,
        )),
    )
        .prop_map(|(negative, whole, fraction, exponent)| {
            let mut text = String::new();
            if negative {
                text.push('-');
            }
            text.push_str(&whole);
            if let Some(fraction) = fraction {
                text.push('.');
                text.push_str(&fraction);
            }
            if let Some((e, sign, power)) = exponent {
                text.push_str(&format!("{e}{sign}{power}"));
            }
            text
        })
}

/// A small JSON document as written text, with random blanks and repeated keys.
fn document() -> impl Strategy<Value = String> {
    let blank = prop_oneof![Just(""), Just(" "), Just("\n"), Just("\t ")];
    let leaf = prop_oneof![
        Just("null".to_string()),
        Just("true".to_string()),
        Just("false".to_string()),
        number_text(),
        "[a-zé\"\\\\ ]{0,6}".prop_map(|s| {
            let mut out = String::new();
            rowdex_codec::json::write_json_string(&mut out, &s);
            out
        }),
    ];
    leaf.prop_recursive(4, 32, 5, move |inner| {
        let blank = blank.clone();
        prop_oneof![
            (prop::collection::vec(inner.clone(), 0..5), blank.clone())
                .prop_map(|(items, b)| format!("[{b}{}{b}]", items.join(&format!("{b},{b}")))),
            (prop::collection::vec(("[abc]{1,2}", inner), 0..5), blank).prop_map(|(members, b)| {
                let members: Vec<String> = members
                    .iter()
                    .map(|(k, v)| format!("\"{k}\"{b}:{b}{v}"))
                    .collect();
                format!("{{{b}{}{b}}}", members.join(","))
            }),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn jsonb_text_is_a_fixed_point(text in document()) {
        let value = Jsonb::parse(&text).expect("the strategy writes valid JSON");
        let normalised = value.to_text();
        let again = Jsonb::parse(&normalised).expect("jsonb text is JSON");
        prop_assert_eq!(&again, &value);
        prop_assert_eq!(again.to_text(), normalised);
        prop_assert_eq!(value.compare(&again), Ordering::Equal);
        prop_assert!(value.contains(&value));
    }

    #[test]
    fn json_keeps_the_text_it_was_given(text in document()) {
        let padded = format!("  {text}\n");
        let parsed = parse_json(&padded).expect("the strategy writes valid JSON");
        prop_assert_eq!(parsed.text, text.as_str());
    }

    #[test]
    fn jsonb_order_is_antisymmetric_and_its_sort_key_agrees(a in document(), b in document()) {
        let (a, b) = (Jsonb::parse(&a).expect("valid"), Jsonb::parse(&b).expect("valid"));
        prop_assert_eq!(a.compare(&b), b.compare(&a).reverse());
        prop_assert_eq!(sort_key(&a).cmp(&sort_key(&b)), a.compare(&b));
        // Equal text is an equal value (the converse fails only for numbers equal by value
        // and written apart, `1.0` and `1`).
        if a.to_text() == b.to_text() {
            prop_assert_eq!(a.compare(&b), Ordering::Equal);
        }
    }

    #[test]
    fn no_text_makes_the_parser_panic(text in "[\\[\\]{}\":,0-9a-z\\\\. eE+-]{0,40}") {
        if let Ok(value) = Jsonb::parse(&text) {
            prop_assert_eq!(Jsonb::parse(&value.to_text()).ok(), Some(value));
        }
    }
}
