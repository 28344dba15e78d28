//! Deterministic randomness for shuffles: SplitMix64 (Steele, Lea, Flood 2014), the
//! same sequence on every platform and every run for the same seed — what lets every
//! rank agree on an epoch's shard order without talking, and a resumed run repeat the
//! interrupted one exactly.

/// A SplitMix64 generator.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform integer in `0..n` (n > 0; Lemire's multiply-shift, unbiased by
    /// rejection).
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        let n = n.max(1);
        let threshold = n.wrapping_neg() % n;
        loop {
            let m = self.next_u64() as u128 * n as u128;
            if (m as u64) >= threshold {
                return (m >> 64) as u64;
            }
        }
    }
}

/// One seed from several values (each mixed in turn).
pub fn mix(parts: &[u64]) -> u64 {
    let mut g = SplitMix64::new(0x6C61_6E63_6572);
    let mut out = g.next_u64();
    for &p in parts {
        g = SplitMix64::new(out ^ p);
        out = g.next_u64();
    }
    out
}

/// Fisher–Yates shuffle of `v` from `seed`.
pub fn shuffle<T>(v: &mut [T], seed: u64) {
    let mut g = SplitMix64::new(seed);
    for i in (1..v.len()).rev() {
        let j = g.below(i as u64 + 1) as usize;
        v.swap(i, j);
    }
}

/// A random permutation of `0..n` as `u32` indices (a block's row order).
pub fn permutation(n: usize, seed: u64) -> Vec<u32> {
    let mut v: Vec<u32> = (0..n as u32).collect();
    shuffle(&mut v, seed);
    v
}

/// A bijection of `0..n` onto itself drawn from `seed` that needs no table: a
/// four-round Feistel network over the smallest even-bit domain holding `n`, walked
/// until the value lands inside `0..n` (for the global random-row order of datasets
/// too large to hold a permutation of).
pub fn permute_index(i: u64, n: u64, seed: u64) -> u64 {
    if n <= 1 {
        return 0;
    }
    let bits = (64 - (n - 1).leading_zeros()).max(2);
    let half = bits.div_ceil(2);
    let mask = (1u64 << half) - 1;
    let keys = [
        mix(&[seed, 1]),
        mix(&[seed, 2]),
        mix(&[seed, 3]),
        mix(&[seed, 4]),
    ];
    let mut x = i;
    loop {
        let (mut l, mut r) = (x >> half, x & mask);
        for k in keys {
            let f = SplitMix64::new(r ^ k).next_u64() & mask;
            (l, r) = (r, l ^ f);
        }
        x = (l << half) | r;
        if x < n {
            return x;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_sequence() {
        // SplitMix64 from seed 0: the reference implementation's first outputs.
        let mut g = SplitMix64::new(0);
        assert_eq!(g.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(g.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn permutations_are_bijections() {
        for n in [1u64, 2, 3, 7, 100, 1000, 4097] {
            let mut seen: Vec<u64> = (0..n).map(|i| permute_index(i, n, 9)).collect();
            seen.sort_unstable();
            assert_eq!(seen, (0..n).collect::<Vec<_>>(), "n = {n}");
        }
        let p = permutation(50, 3);
        let mut s = p.clone();
        s.sort_unstable();
        assert_eq!(s, (0..50).collect::<Vec<u32>>());
        assert_ne!(p, (0..50).collect::<Vec<u32>>());
        assert_eq!(p, permutation(50, 3));
    }
}
