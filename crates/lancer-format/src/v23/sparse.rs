//! Sparse structure of 2.3 pages (spec: "Sparse Page Layout"; wire as pylance 14.0.2
//! writes it, see `protos/encodings23.proto`).
//!
//! Layers are listed outer-most first. Each maps a *domain* (slots `0..n`; the first
//! domain is the page's rows) to the next: a validity layer keeps the domain and marks
//! some slots null (its set lists the null slots, or the valid ones, per `meaning`); a
//! list layer marks slots null, lists the sorted non-empty slots and their child counts,
//! and its child domain is `0..sum(counts)` (a valid slot that is not non-empty is an
//! empty list). The last domain is the leaf value slots, stored in the value plane
//! (null leaf slots included).
//!
//! Reading rows: the plan (sets decoded once, cached per page) is walked for the rows
//! asked, producing 2.1-style repetition / definition levels for the layers (so the
//! shared [`crate::structural::unravel`] builds offsets and validity) plus the leaf slot
//! ranges to read from the value plane — only the chunks holding them are read.

use std::ops::Range;

use arrow_buffer::Buffer;

use super::seq::{decode_u64s, metadata_only, MAX_SEQ};
use crate::compression::compression_of;
use crate::pb::enc21::compressive_encoding::Compression;
use crate::pb::enc21::CompressiveEncoding;
use crate::pb::enc23::{
    sparse_structural_layer::Layer as PbLayer, SparseStructure, SparseValiditySet,
};
use crate::structural::Layer;
use crate::{FormatError, Result};

/// A sorted set of slots.
#[derive(Debug, Clone)]
enum Set {
    /// `start + i * step` for `i < n` (`step > 0` when `n > 1`).
    Arith { start: u64, step: u64, n: u64 },
    /// Explicit, strictly increasing.
    Explicit(Vec<u64>),
}

impl Set {
    /// Elements smaller than `x`.
    fn rank(&self, x: u64) -> u64 {
        match self {
            Set::Arith { start, step, n } => {
                if x <= *start || *n == 0 {
                    0
                } else if *step == 0 {
                    1.min(*n)
                } else {
                    ((x - start).div_ceil(*step)).min(*n)
                }
            }
            Set::Explicit(v) => v.partition_point(|&p| p < x) as u64,
        }
    }

    fn contains(&self, x: u64) -> bool {
        match self {
            Set::Arith { start, step, n } => {
                if x < *start || *n == 0 {
                    return false;
                }
                let d = x - start;
                if *step == 0 {
                    return d == 0;
                }
                d.is_multiple_of(*step) && d / step < *n
            }
            Set::Explicit(v) => v.binary_search(&x).is_ok(),
        }
    }
}

/// Prefix sums of list child counts: `start(j)` = children before the j-th non-empty slot.
#[derive(Debug, Clone)]
enum Prefix {
    Arith { first: u64, step: u64 },
    Explicit(Vec<u64>),
}

impl Prefix {
    fn start(&self, j: u64) -> u64 {
        match self {
            // sum_{i<j} (first + i * step), checked at load time for the largest j.
            Prefix::Arith { first, step } => {
                first * j + step * (j.saturating_mul(j.saturating_sub(1)) / 2)
            }
            Prefix::Explicit(v) => v.get(j as usize).copied().unwrap_or(0),
        }
    }
}

#[derive(Debug, Clone)]
struct Validity {
    set: Set,
    /// True when the set lists the null slots; false when it lists the valid ones.
    lists_nulls: bool,
}

impl Validity {
    fn is_null(&self, s: u64) -> bool {
        self.set.contains(s) == self.lists_nulls
    }
}

#[derive(Debug, Clone)]
enum SLayer {
    Item(Validity),
    List {
        validity: Validity,
        non_empty: Set,
        prefix: Prefix,
    },
}

/// The decoded structure of one sparse page (the cached "page plan").
#[derive(Debug, Clone)]
pub struct SparsePlan {
    layers: Vec<SLayer>,
    /// Equivalent 2.1 layers, inner-most first.
    layers21: Vec<Layer>,
    /// Definition level of a null at each layer (outer-most first).
    def_null: Vec<u16>,
    /// Repetition level of each list layer (outer-most first; 0 for items).
    rep_of: Vec<u16>,
    max_rep: u16,
    leaf_slots: u64,
    num_rows: u64,
    /// Union of null leaf slots under several validity layers, built on first use.
    union: std::sync::OnceLock<Vec<u64>>,
}

/// Stored value ranges, and per leaf slot its index into them (None = a null slot).
pub type Compacted = (Vec<Range<u64>>, Vec<Option<u64>>);

/// Levels and leaf slot ranges of the rows asked.
#[derive(Debug)]
pub struct Walk {
    /// Repetition levels (None without list layers).
    pub rep: Option<Vec<u16>>,
    /// Definition levels (None when everything is valid).
    pub def: Option<Vec<u16>>,
    /// Leaf slots holding the visible values, in order.
    pub leaf_ranges: Vec<Range<u64>>,
}

/// Counts buffers an explicit set needs (0 or 1).
fn needs_buffer(enc: Option<&CompressiveEncoding>) -> usize {
    match enc.and_then(|e| e.compression.as_ref()) {
        Some(c) if metadata_only(c) => 0,
        _ => 1,
    }
}

/// Buffers the structural sets of `s` use, in order.
pub fn structural_buffers(s: &SparseStructure) -> usize {
    let mut n = 0;
    for l in &s.layers {
        match &l.layer {
            Some(PbLayer::Validity(v)) => n += needs_buffer(v.positions.as_ref()),
            Some(PbLayer::FixedSizeList(f)) => {
                n += f
                    .validity
                    .as_ref()
                    .map_or(0, |v| needs_buffer(v.positions.as_ref()))
            }
            Some(PbLayer::List(l)) => {
                n += needs_buffer(l.non_empty_positions.as_ref());
                n += needs_buffer(l.counts.as_ref());
                n += l
                    .validity
                    .as_ref()
                    .map_or(0, |v| needs_buffer(v.positions.as_ref()));
            }
            None => {}
        }
    }
    n
}

struct Bufs<'a> {
    it: std::slice::Iter<'a, Buffer>,
}

impl Bufs<'_> {
    fn set_values(
        &mut self,
        enc: Option<&CompressiveEncoding>,
        n: u64,
        what: &str,
    ) -> Result<Vec<u64>> {
        let c = compression_of(enc, what)?;
        if metadata_only(c) {
            return decode_u64s(c, None, n);
        }
        let b = self.it.next().ok_or_else(|| {
            FormatError::corrupt(format!("sparse page lacks the buffer of {what}"))
        })?;
        // Every element of an explicit set takes at least about one bit.
        if n > (b.len() as u64).saturating_mul(8).saturating_add(1024) {
            return Err(FormatError::corrupt(format!(
                "{what}: {n} elements claimed from a {}-byte buffer",
                b.len()
            )));
        }
        decode_u64s(c, Some(b), n)
    }

    /// A sorted position set within `0..domain`.
    fn positions(
        &mut self,
        enc: Option<&CompressiveEncoding>,
        n: u64,
        domain: u64,
        what: &str,
    ) -> Result<Set> {
        if n > domain {
            return Err(FormatError::corrupt(format!(
                "{what}: {n} positions in a domain of {domain} slots"
            )));
        }
        let c = compression_of(enc, what)?;
        let set = match c {
            Compression::Range(r) => {
                if n > 1 && r.step == 0 {
                    return Err(FormatError::corrupt(format!(
                        "{what}: range step must be positive"
                    )));
                }
                Set::Arith {
                    start: r.start,
                    step: r.step,
                    n,
                }
            }
            Compression::Constant(k) if k.value.is_none() => {
                if n != 0 {
                    return Err(FormatError::corrupt(format!(
                        "{what}: an empty set claims {n} positions"
                    )));
                }
                Set::Explicit(Vec::new())
            }
            _ => Set::Explicit(self.set_values(enc, n, what)?),
        };
        // Order and bounds.
        match &set {
            Set::Arith { start, step, n } if *n > 0 => {
                let last = step
                    .checked_mul(n - 1)
                    .and_then(|x| x.checked_add(*start))
                    .filter(|&l| l < domain);
                if last.is_none() {
                    return Err(FormatError::corrupt(format!(
                        "{what}: range positions run past the {domain}-slot domain"
                    )));
                }
            }
            Set::Explicit(v)
                if v.windows(2).any(|w| w[0] >= w[1]) || v.last().is_some_and(|&l| l >= domain) =>
            {
                return Err(FormatError::corrupt(format!(
                    "{what}: positions not strictly increasing within 0..{domain}"
                )));
            }
            _ => {}
        }
        Ok(set)
    }

    fn validity(
        &mut self,
        v: Option<&SparseValiditySet>,
        domain: u64,
        what: &str,
    ) -> Result<Validity> {
        let v = v.ok_or_else(|| FormatError::corrupt(format!("{what}: validity set missing")))?;
        let lists_nulls = match v.meaning {
            1 => true,
            2 => false,
            m => {
                return Err(FormatError::corrupt(format!(
                    "{what}: validity meaning {m} (must be null or valid positions)"
                )))
            }
        };
        let set = self.positions(v.positions.as_ref(), v.num_positions, domain, what)?;
        Ok(Validity { set, lists_nulls })
    }
}

impl SparsePlan {
    /// Decodes the structure `s` of a page of `num_rows` rows; `bufs` are the page's
    /// structural buffers, in order.
    pub fn load(s: &SparseStructure, bufs: &[Buffer], num_rows: u64) -> Result<Self> {
        if s.layers.is_empty() || s.layers.len() > 64 {
            return Err(FormatError::corrupt(format!(
                "sparse page with {} structural layers (1..=64 supported)",
                s.layers.len()
            )));
        }
        if num_rows > MAX_SEQ {
            return Err(FormatError::corrupt(format!(
                "sparse page of {num_rows} rows"
            )));
        }
        let mut b = Bufs { it: bufs.iter() };
        let mut domain = num_rows;
        let mut layers = Vec::with_capacity(s.layers.len());
        for (i, l) in s.layers.iter().enumerate() {
            let what = format!("sparse layer {i}");
            match &l.layer {
                Some(PbLayer::Validity(v)) => {
                    layers.push(SLayer::Item(b.validity(Some(v), domain, &what)?))
                }
                Some(PbLayer::List(l)) => {
                    // Buffers follow field order: non-empty positions, counts, validity.
                    let n = l.num_non_empty_positions;
                    let non_empty =
                        b.positions(l.non_empty_positions.as_ref(), n, domain, &what)?;
                    let counts_c = compression_of(l.counts.as_ref(), "sparse list counts")?;
                    let prefix = match counts_c {
                        Compression::Constant(k) if k.value.is_some() || n == 0 => {
                            let c = decode_u64s(counts_c, None, n.min(1))?
                                .first()
                                .copied()
                                .unwrap_or(1);
                            Prefix::Arith { first: c, step: 0 }
                        }
                        Compression::Range(r) => Prefix::Arith {
                            first: r.start,
                            step: r.step,
                        },
                        _ => {
                            let counts =
                                b.set_values(l.counts.as_ref(), n, "sparse list counts")?;
                            let mut p = Vec::with_capacity(counts.len() + 1);
                            let mut acc = 0u64;
                            p.push(0);
                            for c in counts {
                                acc = acc.checked_add(c).ok_or_else(|| {
                                    FormatError::corrupt("sparse list counts overflow")
                                })?;
                                p.push(acc);
                            }
                            Prefix::Explicit(p)
                        }
                    };
                    let validity = b.validity(l.validity.as_ref(), domain, &what)?;
                    // Positive counts, and their sum is the child domain.
                    let total = match &prefix {
                        Prefix::Arith { first, step } => {
                            if n > 0 && *first == 0 {
                                return Err(FormatError::corrupt(
                                    "sparse list counts must be positive",
                                ));
                            }
                            let tri = n.checked_mul(n.saturating_sub(1)).map(|x| x / 2);
                            first
                                .checked_mul(n)
                                .zip(tri.and_then(|t| t.checked_mul(*step)))
                                .and_then(|(a, b)| a.checked_add(b))
                                .ok_or_else(|| {
                                    FormatError::corrupt("sparse list counts overflow")
                                })?
                        }
                        Prefix::Explicit(p) => {
                            if p.windows(2).any(|w| w[1] == w[0]) {
                                return Err(FormatError::corrupt(
                                    "sparse list counts must be positive",
                                ));
                            }
                            p.last().copied().unwrap_or(0)
                        }
                    };
                    if total != l.num_child_slots || total > MAX_SEQ {
                        return Err(FormatError::corrupt(format!(
                            "{what}: counts sum to {total}, the layer claims {} child slots",
                            l.num_child_slots
                        )));
                    }
                    domain = total;
                    layers.push(SLayer::List {
                        validity,
                        non_empty,
                        prefix,
                    });
                }
                Some(PbLayer::FixedSizeList(_)) => {
                    return Err(FormatError::unsupported(
                        "2.3 sparse fixed-size-list layer (a fixed-size list of structs)",
                        "Lancer has no fixed-size-list structural layer to assemble it into",
                    ))
                }
                None => return Err(super::unknown("sparse structural layer of an unknown kind")),
            }
        }
        if b.it.next().is_some() {
            return Err(FormatError::corrupt(
                "sparse page has unused structural buffers",
            ));
        }
        // Level numbering as in 2.1: inner-most layer first.
        let mut def_null = vec![0u16; layers.len()];
        let mut layers21 = Vec::with_capacity(layers.len());
        let mut next = 1u16;
        for (i, l) in layers.iter().enumerate().rev() {
            def_null[i] = next;
            match l {
                SLayer::Item(_) => {
                    layers21.push(Layer::NullableItem);
                    next += 1;
                }
                SLayer::List { .. } => {
                    layers21.push(Layer::NullAndEmptyList);
                    next += 2;
                }
            }
        }
        let nlists = layers
            .iter()
            .filter(|l| matches!(l, SLayer::List { .. }))
            .count() as u16;
        let mut rep_of = Vec::with_capacity(layers.len());
        let mut r = nlists;
        for l in &layers {
            if matches!(l, SLayer::List { .. }) {
                rep_of.push(r);
                r -= 1;
            } else {
                rep_of.push(0);
            }
        }
        Ok(Self {
            layers,
            layers21,
            def_null,
            rep_of,
            max_rep: nlists,
            leaf_slots: domain,
            num_rows,
            union: std::sync::OnceLock::new(),
        })
    }

    /// Leaf value slots of the page.
    pub fn leaf_slots(&self) -> u64 {
        self.leaf_slots
    }

    /// For values stored without the leaf's null slots (sparse zipped values hold
    /// `stored` values for the page's leaf slots): the stored value ranges holding the
    /// non-null slots of `leaf_ranges`, and for every slot its index into those values
    /// (None for a null slot). Only a single validity layer below the last list can
    /// drop slots; other shapes are refused.
    pub fn compact(&self, leaf_ranges: &[Range<u64>], stored: u64) -> Result<Compacted> {
        let dropped = self.dropped()?;
        let kept = self.leaf_slots - dropped.count(self.leaf_slots);
        if kept != stored {
            return Err(FormatError::corrupt(format!(
                "sparse page stores {stored} values for {kept} non-null leaf slots"
            )));
        }
        let mut ranges: Vec<Range<u64>> = Vec::new();
        let mut index = Vec::new();
        let mut next = 0u64;
        for r in leaf_ranges {
            for s in r.clone() {
                if dropped.contains(s) {
                    index.push(None);
                    continue;
                }
                let v = s - dropped.count(s);
                match ranges.last_mut() {
                    Some(x) if x.end == v => x.end = v + 1,
                    _ => ranges.push(v..v + 1),
                }
                index.push(Some(next));
                next += 1;
            }
        }
        Ok((ranges, index))
    }

    /// Leaf slots left out of values stored without nulls: the slots null at any
    /// validity layer below the last list (checked against pylance's read-back for a
    /// leaf alone and for struct<string> / list<struct<string>> leaves).
    fn dropped(&self) -> Result<Dropped<'_>> {
        let last_list = self
            .layers
            .iter()
            .rposition(|l| matches!(l, SLayer::List { .. }));
        let items: Vec<&Validity> = self.layers[last_list.map_or(0, |p| p + 1)..]
            .iter()
            .filter_map(|l| match l {
                SLayer::Item(v) => Some(v),
                SLayer::List { .. } => None,
            })
            .collect();
        if let [one] = items[..] {
            return Ok(Dropped::One(one));
        }
        // Several layers: the union of their null slots, materialised (bounded).
        const MAX_UNION: u64 = 1 << 26;
        if self.leaf_slots > MAX_UNION {
            return Err(FormatError::unsupported(
                "2.3 sparse values without null slots under several validity layers",
                format!(
                    "{} leaf slots exceed Lancer's bound of {MAX_UNION}",
                    self.leaf_slots
                ),
            ));
        }
        let nulls = self.union.get_or_init(|| {
            (0..self.leaf_slots)
                .filter(|&s| items.iter().any(|v| v.is_null(s)))
                .collect()
        });
        Ok(Dropped::Many(nulls))
    }

    /// Equivalent 2.1 layers (inner-most first).
    pub fn layers(&self) -> &[Layer] {
        &self.layers21
    }

    /// Levels and leaf slots for rows `ranges` (page-relative, sorted).
    pub fn walk(&self, ranges: &[Range<u64>]) -> Result<Walk> {
        let mut st = State {
            rep: Vec::new(),
            def: Vec::new(),
            leaves: Vec::new(),
        };
        for r in ranges {
            if r.end > self.num_rows || r.start > r.end {
                return Err(FormatError::OutOfRange {
                    what: format!("rows {r:?} of a {}-row page", self.num_rows),
                });
            }
            for row in r.clone() {
                self.emit(0, row, self.max_rep, None, &mut st)?;
            }
        }
        let has_def = st.def.iter().any(|&d| d != 0);
        Ok(Walk {
            rep: (self.max_rep > 0).then_some(st.rep),
            def: has_def.then_some(st.def),
            leaf_ranges: st.leaves,
        })
    }

    fn emit(
        &self,
        i: usize,
        slot: u64,
        rep: u16,
        pending: Option<u16>,
        st: &mut State,
    ) -> Result<()> {
        let Some(layer) = self.layers.get(i) else {
            if slot >= self.leaf_slots {
                return Err(FormatError::corrupt(
                    "sparse structure points past its leaf slots",
                ));
            }
            st.push(rep, pending.unwrap_or(0), Some(slot));
            return Ok(());
        };
        match layer {
            SLayer::Item(v) => {
                let pending = match pending {
                    None if v.is_null(slot) => Some(self.def_null[i]),
                    p => p,
                };
                // A null above a list ends the entry; below every list it keeps its slot.
                let list_below = self.layers[i + 1..]
                    .iter()
                    .any(|l| matches!(l, SLayer::List { .. }));
                if pending.is_some() && list_below {
                    st.push(rep, pending.unwrap_or(0), None);
                    return Ok(());
                }
                self.emit(i + 1, slot, rep, pending, st)
            }
            SLayer::List {
                validity,
                non_empty,
                prefix,
            } => {
                if validity.is_null(slot) {
                    st.push(rep, self.def_null[i], None);
                    return Ok(());
                }
                let j = non_empty.rank(slot);
                if !non_empty.contains(slot) {
                    st.push(rep, self.def_null[i] + 1, None);
                    return Ok(());
                }
                let (a, b) = (prefix.start(j), prefix.start(j + 1));
                for (k, child) in (a..b).enumerate() {
                    // Later children start a new list one layer further in.
                    let r = if k == 0 { rep } else { self.rep_of[i] - 1 };
                    self.emit(i + 1, child, r, None, st)?;
                }
                Ok(())
            }
        }
    }
}

/// Leaf slots left out of compacted values.
enum Dropped<'a> {
    One(&'a Validity),
    Many(&'a [u64]),
}

impl Dropped<'_> {
    fn contains(&self, s: u64) -> bool {
        match self {
            Dropped::One(v) => v.is_null(s),
            Dropped::Many(n) => n.binary_search(&s).is_ok(),
        }
    }

    /// Dropped slots before `s`.
    fn count(&self, s: u64) -> u64 {
        match self {
            Dropped::One(v) => {
                let r = v.set.rank(s);
                if v.lists_nulls {
                    r
                } else {
                    s - r
                }
            }
            Dropped::Many(n) => n.partition_point(|&x| x < s) as u64,
        }
    }
}

struct State {
    rep: Vec<u16>,
    def: Vec<u16>,
    leaves: Vec<Range<u64>>,
}

impl State {
    fn push(&mut self, rep: u16, def: u16, leaf: Option<u64>) {
        self.rep.push(rep);
        self.def.push(def);
        if let Some(s) = leaf {
            match self.leaves.last_mut() {
                Some(r) if r.end == s => r.end = s + 1,
                _ => self.leaves.push(s..s + 1),
            }
        }
    }
}
