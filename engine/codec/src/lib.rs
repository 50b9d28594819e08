//! Value model and byte encodings for rowdex.
//!
//! rowdex stores tables in a sorted key-value store, so this crate provides
//! two encodings of [`Datum`] values:
//!
//! * [`key`]: order-preserving ("memcomparable") bytes for primary and index
//!   keys, where comparing encodings with `memcmp` equals comparing the values
//!   with [`Datum::key_cmp`], column by column;
//! * [`row`]: a compact, not order-preserving form for the stored row.
//!
//! # Key format
//!
//! A key is the concatenation of its column encodings with no separators or
//! length prefix; every column encoding is self-delimiting. A column encoding
//! is a tag byte followed by a payload. ASC form:
//!
//! | tag    | type      | payload                                                     |
//! |--------|-----------|-------------------------------------------------------------|
//! | `0x01` | NULL      | none                                                        |
//! | `0x10` | BOOLEAN   | `0x00` false, `0x01` true                                   |
//! | `0x20` | INTEGER   | 8 bytes, big-endian two's complement, sign bit flipped      |
//! | `0x30` | DOUBLE    | 8 bytes, see below                                          |
//! | `0x38` | DECIMAL   | 16 bytes, big-endian two's complement i128, sign bit flipped|
//! | `0x40` | TEXT      | UTF-8 bytes, escaped and terminated (see below)             |
//! | `0x50` | BYTES     | raw bytes, escaped and terminated (see below)               |
//! | `0x60` | DATE      | 4 bytes, big-endian i32 days, sign bit flipped              |
//! | `0x70` | TIMESTAMP | 8 bytes, big-endian i64 microseconds, sign bit flipped      |
//! | `0x80` | UUID      | its 16 bytes as written (unsigned byte order is its order)  |
//!
//! Tags grow with the cross-type rank used by [`Datum::key_cmp`], and NULL has
//! the lowest tag, so NULL sorts first. Tags `0x00` and `0xFF` are never
//! written, in either order: a scan may use `[0x00]` or `[0xFF]` as a bound
//! that lies below or above every column value.
//!
//! Fixed-width integers: flipping the sign bit maps the signed range onto the
//! unsigned range in order (`i64::MIN` becomes all zeros), and big-endian
//! byte order makes unsigned order equal byte order. `Int(1)` is
//! `20 80 00 00 00 00 00 00 01`; `Int(-1)` is `20 7F FF FF FF FF FF FF FF`.
//!
//! DOUBLE: first -0.0 becomes +0.0 and every NaN becomes the single quiet NaN
//! `0x7FF8_0000_0000_0000`, because [`Datum::key_cmp`] treats those as equal
//! and equal values must encode equally. Then, on the IEEE-754 bits: if the
//! sign bit is set, invert all 64 bits; otherwise flip only the sign bit.
//! Written big-endian. This orders -inf < negatives < 0 < positives < +inf <
//! NaN. `Float(1.5)` is `30 BF F8 00 00 00 00 00 00`. Decoding rejects the
//! bit patterns normalisation removes, so decoding is the inverse of encoding.
//!
//! TEXT and BYTES: every `0x00` byte of the value is written as `00 FF`, other
//! bytes as themselves, and the value ends with `00 01`. The terminator is
//! below any continuation, so `'host1'` sorts before `'host12'` and is not a
//! byte prefix of it. `Text("a\0b")` is `40 61 00 FF 62 00 01`. After a `0x00`
//! only `0xFF` or `0x01` may follow.
//!
//! DESC: a descending column is the ASC encoding of the same value, tag
//! included, with every byte inverted (`b ^ 0xFF`). Inversion reverses byte
//! order, so NULL (`FE`) sorts last; escapes become `FF 00` and the terminator
//! `FF FE`, which keeps values self-delimiting. `Int(1)` DESC is
//! `DF 7F FF FF FF FF FF FF FE`.
//!
//! Decoding checks everything: unknown tags, truncated payloads, bad escapes,
//! invalid UTF-8, booleans other than `00`/`01` and non-canonical floats all
//! produce a [`CodecError`] carrying the byte offset, never a panic.
//!
//! For `LIKE 'abc%'` scans, [`key::encode_text_prefix`] gives the bytes every
//! matching TEXT encoding starts with and [`key::prefix_successor`] the
//! exclusive upper bound of that range.
//!
//! The row format is described in [`row`].

mod bytea;
mod datum;
mod error;
pub mod json;
pub mod key;
pub mod row;
mod temporal;
mod uuid;

pub use bytea::{format_bytea, parse_bytea};
pub use datum::{Datum, SortOrder, decimal_from_text, format_decimal};
pub use error::{CodecError, Result};
pub use temporal::{
    civil_from_days, days_from_civil, days_in_month, format_date, format_timestamp, parse_date,
    parse_timestamp,
};
pub use uuid::{UuidText, format_uuid, parse_uuid};
