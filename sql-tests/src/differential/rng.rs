//! The generator's seeded pseudo-random numbers: SplitMix64, small and with no dependency, so
//! a seed names the same schemas, rows and queries on every machine and every build.

/// A SplitMix64 stream. Every random choice of the generator draws from one of these, so a
/// case is reproduced from its seed alone.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The seed of the `index`th independent stream derived from `seed` (each scenario of a
    /// run gets its own, so one can be replayed without generating the ones before it).
    pub fn derive(seed: u64, index: u64) -> u64 {
        let mut rng = Rng(seed ^ index.wrapping_mul(0xA076_1D64_78BD_642F));
        rng.next_u64()
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        // The modulo bias is irrelevant for test generation at these sizes.
        (self.next_u64() % n as u64) as usize
    }

    /// A number in `lo..=hi`.
    pub fn between(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi.saturating_sub(lo) + 1)
    }

    /// True with probability `percent` / 100.
    pub fn percent(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    /// One element of `items`.
    ///
    /// # Panics
    /// On an empty slice: every caller passes a constant list or one it has just checked,
    /// so an empty one is a generator bug worth stopping for.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// `items` in a random order.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i + 1);
            items.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_bounded() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        for _ in 0..100 {
            let x = a.below(10);
            assert_eq!(x, b.below(10));
            assert!(x < 10);
            let y = a.between(3, 5);
            assert!((3..=5).contains(&y));
            b.between(3, 5);
        }
        assert_ne!(Rng::derive(1, 0), Rng::derive(1, 1));
        assert_eq!(Rng::new(1).below(0), 0);
    }
}
