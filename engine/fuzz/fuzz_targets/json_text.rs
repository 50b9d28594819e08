//! Fuzz target `json_text`: arbitrary bytes as the text of a `json` or `jsonb` value.
//!
//! Nothing may panic (deep nesting is refused, not followed down the stack). Whatever reads as
//! a `jsonb` must be a fixed point: its text reads back as the same value with the same text,
//! compares equal to itself and contains itself; whatever reads as `json` keeps its text.

#![no_main]

use std::cmp::Ordering;

use libfuzzer_sys::fuzz_target;
use rowdex_codec::json::{Jsonb, parse_json};

fuzz_target!(|bytes: &[u8]| {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    if let Ok(parsed) = parse_json(text) {
        assert_eq!(parsed.text, text.trim_matches([' ', '\t', '\n', '\r']));
    }
    if let Ok(value) = Jsonb::parse(text) {
        let normalised = value.to_text();
        let again = Jsonb::parse(&normalised).expect("jsonb text reads back");
        assert_eq!(again, value);
        assert_eq!(again.to_text(), normalised);
        assert_eq!(value.compare(&again), Ordering::Equal);
        assert!(value.contains(&again));
    }
});
