//! A set of row addresses (`fragment << 32 | row`, format guide "Row addresses",
//! table format section) as one bit per physical row of each fragment: what a
//! prefilter passes, asked once for every row an index search meets. A lookup is a
//! search over the few fragments and a bit test (a compressed bitmap's lookup walked
//! a tree per row and was a tenth of a filtered graph search; building it, most of
//! the rest).

/// Row addresses, a bitmap per fragment.
#[derive(Debug, Default, Clone)]
pub struct AddressSet {
    /// (fragment id, one bit per row), sorted by fragment id.
    frags: Vec<(u64, Vec<u64>)>,
    /// Addresses held.
    len: u64,
    /// Names this content once sealed (see [`AddressSet::sealed`]); 0 before.
    token: u64,
}

impl AddressSet {
    /// An empty set sized for `fragments`' (id, physical rows): addresses past a
    /// fragment's rows or of other fragments still insert (the bitmap grows).
    pub fn with_fragments(fragments: impl IntoIterator<Item = (u64, u64)>) -> Self {
        let mut frags: Vec<(u64, Vec<u64>)> = fragments
            .into_iter()
            .map(|(id, rows)| (id, vec![0u64; rows.div_ceil(64) as usize]))
            .collect();
        frags.sort_by_key(|f| f.0);
        frags.dedup_by_key(|f| f.0);
        Self {
            frags,
            len: 0,
            token: 0,
        }
    }

    fn slot(&self, frag: u64) -> Result<usize, usize> {
        self.frags.binary_search_by_key(&frag, |f| f.0)
    }

    /// The set, named by a random token that no other set's content shares (searches
    /// keep masks built from it under the token).
    pub fn sealed(mut self) -> Self {
        let r = lancer_table::commit::random_uuid_bytes();
        let mut b = [0u8; 8];
        b.copy_from_slice(&r[..8]);
        self.token = u64::from_le_bytes(b) | 1;
        self
    }

    /// The token of a sealed set (0 for one still being filled).
    pub fn token(&self) -> u64 {
        self.token
    }

    /// Bytes the bitmaps take.
    pub fn bytes(&self) -> u64 {
        self.frags.iter().map(|f| f.1.len() as u64 * 8 + 16).sum()
    }

    /// Adds `addr`.
    pub fn insert(&mut self, addr: u64) {
        self.token = 0;
        let (frag, row) = (addr >> 32, (addr & 0xffff_ffff) as usize);
        let i = match self.slot(frag) {
            Ok(i) => i,
            Err(i) => {
                self.frags.insert(i, (frag, Vec::new()));
                i
            }
        };
        let bits = &mut self.frags[i].1;
        if bits.len() <= row / 64 {
            bits.resize(row / 64 + 1, 0);
        }
        let (w, b) = (row / 64, 1u64 << (row % 64));
        if bits[w] & b == 0 {
            bits[w] |= b;
            self.len += 1;
        }
    }

    /// Adds every address of `addrs` (runs of one fragment looked up once).
    pub fn extend(&mut self, addrs: &[u64]) {
        self.token = 0;
        let mut i = 0;
        while i < addrs.len() {
            let frag = addrs[i] >> 32;
            let run = addrs[i..]
                .iter()
                .position(|a| a >> 32 != frag)
                .unwrap_or(addrs.len() - i);
            let slot = match self.slot(frag) {
                Ok(s) => s,
                Err(s) => {
                    self.frags.insert(s, (frag, Vec::new()));
                    s
                }
            };
            let bits = &mut self.frags[slot].1;
            for &a in &addrs[i..i + run] {
                let row = (a & 0xffff_ffff) as usize;
                if bits.len() <= row / 64 {
                    bits.resize(row / 64 + 1, 0);
                }
                let (w, b) = (row / 64, 1u64 << (row % 64));
                self.len += u64::from(bits[w] & b == 0);
                bits[w] |= b;
            }
            i += run;
        }
    }

    /// Whether `addr` is in the set.
    #[inline]
    pub fn contains(&self, addr: u64) -> bool {
        let (frag, row) = (addr >> 32, (addr & 0xffff_ffff) as usize);
        match self.slot(frag) {
            Ok(i) => self.frags[i]
                .1
                .get(row / 64)
                .is_some_and(|w| w & (1u64 << (row % 64)) != 0),
            Err(_) => false,
        }
    }

    /// Addresses held.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_exactly_what_was_added() {
        let mut s = AddressSet::with_fragments([(3, 100), (1, 10)]);
        let addrs = [
            1u64 << 32 | 9,
            3 << 32 | 64,
            3 << 32,
            3 << 32 | 64,
            7 << 32 | 500,
        ];
        s.extend(&addrs[..3]);
        s.insert(addrs[3]);
        s.insert(addrs[4]);
        assert_eq!(s.len(), 4);
        for a in addrs {
            assert!(s.contains(a), "{a:#x}");
        }
        for a in [
            1u64 << 32 | 8,
            3 << 32 | 1,
            2 << 32,
            7 << 32 | 499,
            1 << 32 | 10_000,
        ] {
            assert!(!s.contains(a), "{a:#x}");
        }
        assert!(AddressSet::default().is_empty());
    }
}
