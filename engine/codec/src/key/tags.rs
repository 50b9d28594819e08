//! The tag byte that opens each encoded key value (the table in the crate docs), and the sign
//! bits flipped to make two's-complement numbers sort as unsigned bytes.

pub(super) const TAG_NULL: u8 = 0x01;
pub(super) const TAG_BOOLEAN: u8 = 0x10;
pub(super) const TAG_INT: u8 = 0x20;
pub(super) const TAG_FLOAT: u8 = 0x30;
pub(super) const TAG_DECIMAL: u8 = 0x38;
pub(super) const TAG_TEXT: u8 = 0x40;
pub(super) const TAG_BYTES: u8 = 0x50;
pub(super) const TAG_DATE: u8 = 0x60;
pub(super) const TAG_TIMESTAMP: u8 = 0x70;
pub(super) const TAG_UUID: u8 = 0x80;

pub(super) const SIGN_64: u64 = 1 << 63;
pub(super) const SIGN_32: u32 = 1 << 31;
pub(super) const SIGN_128: u128 = 1 << 127;
