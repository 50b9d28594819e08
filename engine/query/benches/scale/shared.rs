//! What the scale bench's modules share: the result type, the number of timed runs, and the
//! pseudo-random values the rows are made of.

pub type BenchResult<T> = Result<T, Box<dyn std::error::Error>>;

/// Timed runs of each case after the first.
pub const REPS: usize = 4;

/// splitmix64: deterministic pseudo-random values from a row number.
pub fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}
