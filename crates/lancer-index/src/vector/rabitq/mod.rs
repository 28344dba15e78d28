//! IVF_RQ storage (RabitQ) as pylance 11–14 write it, and its distance estimate
//! (format guide "Vector Indices" → RabitQ; byte layout and the estimator checked
//! against pylance's answers in `docs/vector-index-format.md` §5.4 and §6.3).
//!
//! A row stores the sign bits of its rotated residual (`_rabit_codes`, packed in
//! 32-row blocks per partition, the tail transposed), factors that turn an inner
//! product with the rotated query into a distance estimate, and with more than one
//! bit per dimension "ex" codes (extra bits per dimension, in 64-dimension blocks).
//! The rotation is the "fast" one: four rounds of sign flips and Walsh–Hadamard
//! transforms (a Kac walk mixes the halves when the dimension is not a power of two).
//!
//! The estimate reproduces pylance 14: the binary inner product comes from a lookup
//! table over groups of 4 dimensions, quantized to u8 for the rows in complete 32-row
//! blocks of a partition and exact for the tail rows.

use crate::distance::Metric;
use crate::{IndexError, Result};

mod build;

pub use build::{RabitEncoder, RowCode};

/// `PERM0` of the 32-row block layout: block-relative row of each byte's low nibble.
const PERM0: [usize; 16] = [0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15];

/// The RabitQ storage of one segment, unpacked row-major in storage order.
#[derive(Debug)]
pub struct Rabit {
    /// Dimensions of the codes (the vector dimension).
    pub code_dim: usize,
    /// Bits per dimension (1 = sign only).
    pub num_bits: u32,
    signs: Vec<u8>,
    /// Sign bits, `rows × code_dim/8`, bit `i` of a row = dimension `i` (LSB first).
    codes: Vec<u8>,
    add: Vec<f32>,
    scale: Vec<f32>,
    /// `__error_factors`: a bound on the 1-bit estimate's error per unit of
    /// `‖q − c‖` (empty when the file has none: then every row gets the full estimate).
    error: Vec<f32>,
    /// Ex codes (empty for 1 bit), `ex_width` bytes per row: with 4 ex bits as stored
    /// (two per byte, the blocked layout [`crate::distance::dot_nib4`] reads), else one
    /// value in `0..2^(bits-1)` per dimension.
    ex: Vec<u8>,
    ex_width: usize,
    add_ex: Vec<f32>,
    scale_ex: Vec<f32>,
    /// Sign codes of the complete 32-row blocks in the packed layout (block `k` of the
    /// partition starting at row `s` at byte `L·s + 32·L·k`), for the block kernel.
    packed: Vec<u8>,
}

fn corrupt(index: &str, what: impl Into<String>) -> IndexError {
    IndexError::Corrupt {
        index: index.to_string(),
        what: what.into(),
    }
}

/// The raw columns of an IVF_RQ auxiliary file.
pub struct RabitColumns<'a> {
    /// `_rabit_codes` values (`rows × code_dim/8`, as stored).
    pub codes: &'a [u8],
    /// `__add_factors`.
    pub add: &'a [f32],
    /// `__scale_factors`.
    pub scale: &'a [f32],
    /// `__error_factors` (empty when the file has no such column).
    pub error: &'a [f32],
    /// `__blocked_ex_codes` values (as stored), empty for 1 bit.
    pub ex: &'a [u8],
    /// `__add_factors_ex`.
    pub add_ex: &'a [f32],
    /// `__scale_factors_ex`.
    pub scale_ex: &'a [f32],
}

impl Rabit {
    /// Unpacks the storage from its metadata (`storage_metadata`), columns and the
    /// partition layout `(first row, rows)`.
    pub fn new(
        label: &str,
        meta: &serde_json::Value,
        cols: &RabitColumns<'_>,
        partitions: &[(usize, usize)],
        rows: usize,
    ) -> Result<Self> {
        let code_dim = meta["code_dim"].as_u64().unwrap_or(0) as usize;
        let num_bits = meta["num_bits"].as_u64().unwrap_or(1) as u32;
        if code_dim == 0
            || !code_dim.is_multiple_of(8)
            || code_dim > 1 << 16
            || !(1..=9).contains(&num_bits)
        {
            return Err(corrupt(
                label,
                format!("RabitQ of {code_dim} dims and {num_bits} bits"),
            ));
        }
        if meta["rotation_type"].as_str().unwrap_or("matrix") != "fast" {
            return Err(IndexError::Unsupported {
                index: label.to_string(),
                what: "IVF_RQ with a matrix rotation".into(),
            });
        }
        if meta["query_estimator"].as_str() != Some("raw_query") {
            return Err(IndexError::Unsupported {
                index: label.to_string(),
                what: "IVF_RQ with the residual-query estimator".into(),
            });
        }
        let signs: Vec<u8> = meta["fast_rotation_signs"]
            .as_array()
            .map(|a| a.iter().map(|v| v.as_u64().unwrap_or(0) as u8).collect())
            .unwrap_or_default();
        if signs.len() != 4 * code_dim.div_ceil(8) {
            return Err(corrupt(
                label,
                format!("{} rotation sign bytes for {code_dim} dims", signs.len()),
            ));
        }
        let l = code_dim / 8;
        let e = (num_bits - 1) as usize;
        let padded = code_dim.div_ceil(64) * 64;
        let ex_width = padded * e / 8;
        if cols.codes.len() != rows * l
            || cols.add.len() != rows
            || cols.scale.len() != rows
            || (!cols.error.is_empty() && cols.error.len() != rows)
            || (e > 0
                && (cols.ex.len() != rows * ex_width
                    || cols.add_ex.len() != rows
                    || cols.scale_ex.len() != rows))
        {
            return Err(corrupt(label, "RabitQ columns of unexpected lengths"));
        }
        let packed = meta["packed"].as_bool().unwrap_or(false);
        let mut codes = vec![0u8; rows * l];
        let mut packed_codes = vec![0u8; rows * l];
        for &(start, n) in partitions {
            let src = &cols.codes[start * l..(start + n) * l];
            let dst = &mut codes[start * l..(start + n) * l];
            let blocks = n / 32;
            // Complete 32-row blocks are also kept in the packed layout for the block
            // kernel: as stored, or packed here from row-major codes (pylance packs
            // those when it loads them, so both rank full blocks with the u8 table).
            let keep = &mut packed_codes[start * l..(start + 32 * blocks) * l];
            if !packed {
                dst.copy_from_slice(src);
                pack_blocks(src, l, blocks, keep);
                continue;
            }
            keep.copy_from_slice(&src[..32 * l * blocks]);
            for k in 0..blocks {
                for i in 0..l {
                    let base = 32 * l * k + 32 * i;
                    for j in 0..16 {
                        let (lo, hi) = (src[base + j], src[base + 16 + j]);
                        let r0 = 32 * k + PERM0[j];
                        let r1 = r0 + 16;
                        dst[r0 * l + i] = (lo & 15) | ((hi & 15) << 4);
                        dst[r1 * l + i] = (lo >> 4) | ((hi >> 4) << 4);
                    }
                }
            }
            let tail = n - 32 * blocks;
            let t0 = 32 * blocks * l;
            for i in 0..l {
                for r in 0..tail {
                    dst[(32 * blocks + r) * l + i] = src[t0 + i * tail + r];
                }
            }
        }
        let (mut ex, mut ex_row) = (Vec::new(), code_dim);
        if e == 4 {
            (ex, ex_row) = (cols.ex.to_vec(), ex_width);
        } else if e > 0 {
            ex = vec![0u8; rows * code_dim];
            for r in 0..rows {
                let row = &cols.ex[r * ex_width..(r + 1) * ex_width];
                unpack_ex(row, e, code_dim, &mut ex[r * code_dim..(r + 1) * code_dim])
                    .map_err(|w| corrupt(label, w))?;
            }
        }
        Ok(Self {
            code_dim,
            num_bits,
            signs,
            packed: packed_codes,
            codes,
            add: cols.add.to_vec(),
            scale: cols.scale.to_vec(),
            error: cols.error.to_vec(),
            ex,
            ex_width: ex_row,
            add_ex: cols.add_ex.to_vec(),
            scale_ex: cols.scale_ex.to_vec(),
        })
    }

    /// Whether the file stored per-row error factors.
    pub(crate) fn has_error_factors(&self) -> bool {
        !self.error.is_empty() || self.add.is_empty()
    }

    /// Row `r` as the build's encoded record (`ivf_partition`'s layout: sign codes,
    /// add / scale / error factors, blocked ex codes, ex factors), appended to `out`;
    /// None when the row is past the storage or the file has no error factors (which
    /// the build writes), so a record cannot be rebuilt.
    pub(crate) fn record(&self, r: usize, out: &mut Vec<u8>) -> Option<()> {
        let l = self.code_dim / 8;
        let (add, scale, error) = (self.add.get(r)?, self.scale.get(r)?, self.error.get(r)?);
        out.extend_from_slice(self.codes.get(r * l..(r + 1) * l)?);
        for f in [add, scale, error] {
            out.extend_from_slice(&f.to_le_bytes());
        }
        if self.num_bits > 1 {
            let e = (self.num_bits - 1) as usize;
            let w = self.ex_width;
            let row = self.ex.get(r * w..(r + 1) * w)?;
            if w == self.code_dim {
                // unpacked when read (ex bits other than 4): blocked again
                out.extend_from_slice(&build::pack_ex(row, e));
            } else {
                out.extend_from_slice(row);
            }
            out.extend_from_slice(&self.add_ex.get(r)?.to_le_bytes());
            out.extend_from_slice(&self.scale_ex.get(r)?.to_le_bytes());
        }
        Some(())
    }

    /// The fast rotation of `v` (length `code_dim`).
    pub fn rotate(&self, v: &[f32]) -> Vec<f32> {
        fast_rotate(&self.signs, self.code_dim, v)
    }

    /// The model that encoded this storage (to encode more rows the same way).
    pub fn encoder(&self) -> build::RabitEncoder {
        build::RabitEncoder {
            code_dim: self.code_dim,
            num_bits: self.num_bits,
            signs: self.signs.clone(),
        }
    }

    /// Estimated distances of the rows `start..start + n` (one partition with centroid
    /// `c`) to the query `q` (normalized for cosine), whose rotation and lookup tables
    /// are `qr`; `push(distance, row)` receives each at or under `bound`
    /// and returns the bound from then on.
    ///
    /// With more than one bit, a row whose 1-bit estimate minus its error bound
    /// (`__error_factors` × `‖q − c‖`, the RabitQ confidence interval) is already at
    /// or over `bound` is not given the ex-code estimate: it would almost surely not
    /// make the top k (the reference's multi-bit search gates the same way). Rows
    /// that are estimated get exactly the values they get without the gate. Rows go
    /// 32 at a time (the packed blocks): their 1-bit estimates and gate first, then
    /// the ex codes of the rows left, fetched together. Returns how many rows got the
    /// full estimate.
    #[allow(clippy::too_many_arguments)]
    pub fn score_partition(
        &self,
        metric: Metric,
        q: &[f32],
        c: &[f32],
        qr: &QueryTables,
        start: usize,
        n: usize,
        mut bound: f32,
        push: &mut dyn FnMut(f32, usize) -> f32,
    ) -> usize {
        let l = self.code_dim / 8;
        let qdist = crate::distance::l2(q, c);
        let (qf, kappa, qc) = match metric {
            Metric::Dot => {
                let qc = crate::distance::dot(q, c);
                let cc = crate::distance::dot(c, c);
                (0.0, if cc > 0.0 { qc / cc } else { 0.0 }, qc)
            }
            _ => (qdist, 0.0, 0.0),
        };
        let rows = Rows {
            rabit: self,
            qr,
            metric,
            qf,
            kappa,
            qc,
            // `‖q − c‖` (rotation keeps norms) when the multi-bit estimate is gated.
            gate: (self.num_bits > 1 && !self.error.is_empty()).then(|| qdist.max(0.0).sqrt()),
        };
        let mut estimated = 0;
        let mut pending = None;
        let mut sums = [0u32; 32];
        let mut bq = [0f32; 32];
        // Rows of the partition's complete 32-row blocks rank with the u8 table.
        for k in 0..n / 32 {
            let first = start + 32 * k;
            let at = start * l + 32 * l * k;
            qr.block_sums(
                &self.packed[at..at + 32 * l],
                &self.codes[first * l..(first + 32) * l],
                &mut sums,
            );
            for (b, &s) in bq.iter_mut().zip(&sums) {
                *b = qr.estimate_of_sum(s, l);
            }
            bound = rows.score(first, &bq, bound, push, &mut estimated, &mut pending);
        }
        for r in start + n / 32 * 32..start + n {
            let b = [qr.exact(&self.codes[r * l..(r + 1) * l])];
            bound = rows.score(r, &b, bound, push, &mut estimated, &mut pending);
        }
        if let Some(p) = pending {
            rows.finish(&p, bound, push, &mut estimated);
        }
        estimated
    }
}

/// One query's constants for scoring a partition's rows.
struct Rows<'a> {
    rabit: &'a Rabit,
    qr: &'a QueryTables,
    metric: Metric,
    qf: f32,
    kappa: f32,
    qc: f32,
    gate: Option<f32>,
}

/// Rows of one block the gate left for the ex-code estimate, whose codes were
/// requested from memory (estimated while the next block is ranked).
struct Pending {
    first: usize,
    bq: [f32; 32],
    lower: [f32; 32],
    left: u32,
}

impl Rows<'_> {
    /// A row's estimated distance from its scaled inner product `x` and its factors
    /// (the 1-bit or the ex-code ones): `x·scale + add + ‖q − c‖²`, or for dot
    /// pylance 14's `x·scale + κ·(add − 1) + 1 − c·q`.
    #[inline(always)]
    fn distance(&self, x: f32, scale: f32, add: f32) -> f32 {
        match self.metric {
            Metric::Dot => x * scale + self.kappa * (add - 1.0) + 1.0 - self.qc,
            _ => x * scale + add + self.qf,
        }
    }

    /// Scores the rows `first..first + bq.len()` (up to 32) from their binary inner
    /// products `bq`: with one bit, hands `push` those at or under `bound`; with more,
    /// gates them, requests the ex codes of the rows left and estimates the rows left
    /// by the block before (`pending`, which then holds this block's). Returns the
    /// bound.
    fn score(
        &self,
        first: usize,
        bq: &[f32],
        mut bound: f32,
        push: &mut dyn FnMut(f32, usize) -> f32,
        estimated: &mut usize,
        pending: &mut Option<Pending>,
    ) -> f32 {
        let r = self.rabit;
        let m = bq.len().min(32);
        if m == 0 {
            return bound;
        }
        let half = self.qr.sum / 2.0;
        let (scale, add) = (&r.scale[first..first + m], &r.add[first..first + m]);
        // The 1-bit estimates.
        let mut one = [0f32; 32];
        for j in 0..m {
            one[j] = self.distance(bq[j] - half, scale[j], add[j]);
        }
        if r.num_bits == 1 {
            *estimated += m;
            for (j, &d) in one[..m].iter().enumerate() {
                if d <= bound {
                    bound = push(d, first + j);
                }
            }
            return bound;
        }
        // The rows the gate leaves at the current bound (a bound only tightens, so
        // each is checked again when estimated).
        let mut next = Pending {
            first,
            bq: [0.0; 32],
            lower: [0.0; 32],
            left: u32::MAX >> (32 - m),
        };
        next.bq[..m].copy_from_slice(&bq[..m]);
        if let Some(norm) = self.gate {
            let err = &r.error[first..first + m];
            for j in 0..m {
                next.lower[j] = one[j] - err[j] * norm;
            }
            next.left = 0;
            for (j, &lb) in next.lower[..m].iter().enumerate() {
                next.left |= u32::from(lb < bound || lb.is_nan()) << j;
            }
        }
        let w = r.ex_width;
        let mut bits = next.left;
        while bits != 0 {
            let j = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            crate::distance::prefetch(&r.ex[(first + j) * w..(first + j + 1) * w]);
        }
        match pending.replace(next) {
            Some(p) => self.finish(&p, bound, push, estimated),
            None => bound,
        }
    }

    /// The ex-code estimates of a block's rows left by the gate (those still under
    /// `bound`), handed to `push` at or under it; returns the bound.
    fn finish(
        &self,
        p: &Pending,
        mut bound: f32,
        push: &mut dyn FnMut(f32, usize) -> f32,
        estimated: &mut usize,
    ) -> f32 {
        let r = self.rabit;
        let (w, e) = (r.ex_width, r.num_bits - 1);
        let two_e = (1u32 << e) as f32;
        let mut left = p.left;
        while left != 0 {
            let j = left.trailing_zeros() as usize;
            left &= left - 1;
            if self.gate.is_some() && p.lower[j] >= bound {
                continue;
            }
            *estimated += 1;
            let row = p.first + j;
            let x = &r.ex[row * w..(row + 1) * w];
            let sx = if e == 4 {
                crate::distance::dot_nib4(&self.qr.rotated, x)
            } else {
                crate::distance::dot_u8(&self.qr.rotated, x)
            };
            let full = two_e * p.bq[j] + sx - (two_e - 0.5) * self.qr.sum;
            let dist = self.distance(full, r.scale_ex[row], r.add_ex[row]);
            if dist <= bound {
                bound = push(dist, row);
            }
        }
        bound
    }
}

/// The fast rotation of `v` into `d` dimensions with the sign bytes `signs`
/// (`4 · ceil(d/8)`: four rounds of sign flips, each followed by a Walsh–Hadamard
/// transform; a Kac walk mixes the halves when `d` is not a power of two).
pub(crate) fn fast_rotate(signs: &[u8], d: usize, v: &[f32]) -> Vec<f32> {
    let mut x = v.to_vec();
    x.resize(d, 0.0);
    let t = 1usize << (usize::BITS - 1 - d.leading_zeros());
    let s = 1.0 / (t as f32).sqrt();
    let per = d.div_ceil(8);
    for round in 0..4 {
        let signs = &signs[round * per..(round + 1) * per];
        for (i, xi) in x.iter_mut().enumerate() {
            if signs[i / 8] >> (i % 8) & 1 == 1 {
                *xi = -*xi;
            }
        }
        if d == t {
            fwht(&mut x);
            x.iter_mut().for_each(|v| *v *= s);
        } else {
            let part = if round % 2 == 0 {
                &mut x[..t]
            } else {
                &mut x[d - t..]
            };
            fwht(part);
            part.iter_mut().for_each(|v| *v *= s);
            let h = d / 2;
            for i in 0..h {
                let (a, b) = (x[i], x[i + h]);
                x[i] = a + b;
                x[i + h] = a - b;
            }
        }
    }
    if d != t {
        x.iter_mut().for_each(|v| *v *= 0.25);
    }
    x
}

/// In-place fast Walsh–Hadamard transform (length a power of two).
fn fwht(x: &mut [f32]) {
    let n = x.len();
    let mut h = 1;
    while h < n {
        for i in (0..n).step_by(2 * h) {
            for j in i..i + h {
                let (a, b) = (x[j], x[j + h]);
                x[j] = a + b;
                x[j + h] = a - b;
            }
        }
        h *= 2;
    }
}

/// One query's rotation and the lookup tables of its binary inner products.
pub struct QueryTables {
    /// The rotated query, with zeros up to a multiple of 64 dimensions (the ex codes'
    /// blocks; a product with unpacked codes covers only their `code_dim` values).
    rotated: Vec<f32>,
    sum: f32,
    /// Per group of 4 dimensions, the sum of the rotated query over each 4-bit pattern;
    /// 32 entries per code byte (16 for its low nibble, 16 for its high one).
    table: Vec<[f32; 32]>,
    /// The same quantized to u8 over the table's range.
    table8: Vec<[u8; 32]>,
    /// `table8` of code bytes `2p` and `2p + 1` side by side for the 256-bit block
    /// kernel: both low-nibble halves, then both high-nibble halves.
    pairs8: Vec<[u8; 64]>,
    qmin: f32,
    delta: f32,
}

impl QueryTables {
    /// Tables of `rotated` (the rotated query).
    pub fn new(mut rotated: Vec<f32>) -> Self {
        let groups = rotated.len() / 4;
        let mut table = vec![0f32; groups * 16];
        for g in 0..groups {
            for p in 0..16usize {
                let mut s = 0f32;
                for k in 0..4 {
                    if p >> k & 1 == 1 {
                        s += rotated[4 * g + k];
                    }
                }
                table[g * 16 + p] = s;
            }
        }
        let qmin = table.iter().copied().fold(f32::INFINITY, f32::min);
        let qmax = table.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let delta = if qmax > qmin {
            (qmax - qmin) / 255.0
        } else {
            0.0
        };
        // (v − min) · (255 / (max − min)), rounded: the reference's arithmetic, to the
        // last bit (dividing by the step instead rounds a value at a half step the
        // other way: queries whose rotation is flat — a one-hot query — meet those)
        let factor = if qmax > qmin {
            255.0 / (qmax - qmin)
        } else {
            0.0
        };
        let table8: Vec<u8> = table
            .iter()
            .map(|&v| {
                if delta > 0.0 {
                    ((v - qmin) * factor).round() as u8
                } else {
                    0
                }
            })
            .collect();
        // As arrays, the masked nibbles index them without bounds checks.
        let table = table
            .chunks_exact(32)
            .map(|c| <[f32; 32]>::try_from(c).unwrap_or([0.0; 32]))
            .collect();
        let table8: Vec<[u8; 32]> = table8
            .chunks_exact(32)
            .map(|c| <[u8; 32]>::try_from(c).unwrap_or([0; 32]))
            .collect();
        let pairs8 = table8
            .chunks_exact(2)
            .map(|t| {
                let mut p = [0u8; 64];
                p[..16].copy_from_slice(&t[0][..16]);
                p[16..32].copy_from_slice(&t[1][..16]);
                p[32..48].copy_from_slice(&t[0][16..]);
                p[48..].copy_from_slice(&t[1][16..]);
                p
            })
            .collect();
        let sum = rotated.iter().sum();
        rotated.resize(rotated.len().div_ceil(64) * 64, 0.0);
        Self {
            rotated,
            sum,
            table,
            table8,
            pairs8,
            qmin,
            delta,
        }
    }

    fn exact(&self, code: &[u8]) -> f32 {
        let mut s = 0f32;
        for (pair, &byte) in self.table.iter().zip(code) {
            s += pair[(byte & 15) as usize];
            s += pair[16 + (byte >> 4) as usize];
        }
        s
    }

    /// The quantized table's estimate from a row's integer sum (`l` code bytes).
    fn estimate_of_sum(&self, s: u32, l: usize) -> f32 {
        s as f32 * self.delta + (2 * l) as f32 * self.qmin
    }

    /// The quantized tables' integer sums of the 32 rows of one block (`packed`: its
    /// `32·L` bytes in the packed layout; `rows`: the same rows' codes row-major), by
    /// block-relative row. Exact integers either way, so equal to a row-at-a-time sum.
    #[allow(unsafe_code)]
    fn block_sums(&self, packed: &[u8], rows: &[u8], out: &mut [u32; 32]) {
        let l = rows.len() / 32;
        #[cfg(target_arch = "x86_64")]
        if crate::distance::has_avx2() && self.table8.len() >= l && packed.len() == 32 * l {
            let mut wide = [0u32; 32];
            let pairs = (l / 2).min(self.pairs8.len());
            // SAFETY: AVX2 (with SSSE3) is available (checked just above); the slices
            // hold the packed bytes and the tables each kernel reads: `64·pairs` bytes
            // with `pairs` paired tables, then the remaining `32·(L − 2·pairs)` bytes
            // with their `L − 2·pairs` tables.
            unsafe {
                pair_sums_avx2(&packed[..64 * pairs], &self.pairs8[..pairs], &mut wide);
                lane_sums_sse(&packed[64 * pairs..], &self.table8[2 * pairs..l], &mut wide);
            }
            // Lanes 0..16 are rows PERM0[j], lanes 16..32 rows PERM0[j] + 16.
            for (j, &p) in PERM0.iter().enumerate() {
                out[p] = wide[j];
                out[p + 16] = wide[16 + j];
            }
            return;
        }
        for (o, code) in out.iter_mut().zip(rows.chunks_exact(l.max(1))) {
            let mut s = 0u32;
            for (pair, &byte) in self.table8.iter().zip(code) {
                s += u32::from(pair[(byte & 15) as usize])
                    + u32::from(pair[16 + (byte >> 4) as usize]);
            }
            *o = s;
        }
    }

    #[cfg(test)]
    fn quantized(&self, code: &[u8]) -> f32 {
        let mut s = 0u32;
        for (pair, &byte) in self.table8.iter().zip(code) {
            s += u32::from(pair[(byte & 15) as usize]) + u32::from(pair[16 + (byte >> 4) as usize]);
        }
        s as f32 * self.delta + (2 * code.len()) as f32 * self.qmin
    }
}

/// One partition's row-major sign codes (`codes`, `l` bytes a row) in the layout
/// pylance stores and loads them in: complete 32-row blocks packed (see
/// [`Rabit::new`]), the remaining rows column-major.
pub fn packed_partition_codes(codes: &[u8], l: usize) -> Vec<u8> {
    let n = codes.len() / l.max(1);
    let blocks = n / 32;
    let mut out = vec![0u8; codes.len()];
    pack_blocks(codes, l, blocks, &mut out);
    let (tail, t0) = (n - 32 * blocks, 32 * blocks * l);
    for i in 0..l {
        for r in 0..tail {
            out[t0 + i * tail + r] = codes[(32 * blocks + r) * l + i];
        }
    }
    out
}

/// Writes the complete 32-row blocks of one partition's row-major sign codes (`rows`,
/// `l` bytes each) in the packed layout (see [`Rabit::new`]) into `out`.
fn pack_blocks(rows: &[u8], l: usize, blocks: usize, out: &mut [u8]) {
    for k in 0..blocks {
        for i in 0..l {
            let base = 32 * l * k + 32 * i;
            for (j, &p) in PERM0.iter().enumerate() {
                let (r0, r1) = (32 * k + p, 32 * k + p + 16);
                let (a, b) = (rows[r0 * l + i], rows[r1 * l + i]);
                out[base + j] = (a & 15) | ((b & 15) << 4);
                out[base + 16 + j] = (a >> 4) | ((b >> 4) << 4);
            }
        }
    }
}

/// The block kernel for one code byte at a time: 16-entry byte lookups (`pshufb`) of
/// the low and high nibbles of 32 rows at once, summed in 16-bit lanes that are
/// drained into the 32-bit lane sums `wide` every 128 code bytes (`2·128·255` <
/// 65,536).
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[target_feature(enable = "avx2")]
fn lane_sums_sse(packed: &[u8], tables: &[[u8; 32]], wide: &mut [u32; 32]) {
    use std::arch::x86_64::*;
    let l = tables.len();
    let mask = _mm_set1_epi8(0x0f);
    let zero = _mm_setzero_si128();
    let (mut a_lo, mut a_hi, mut b_lo, mut b_hi) = (zero, zero, zero, zero);
    for (i, t) in tables.iter().enumerate() {
        // SAFETY: `packed` holds 32·L bytes (checked by the caller), `t` 32 bytes.
        let (a, b, tlo, thi) = unsafe {
            (
                _mm_loadu_si128(packed.as_ptr().add(32 * i).cast()),
                _mm_loadu_si128(packed.as_ptr().add(32 * i + 16).cast()),
                _mm_loadu_si128(t.as_ptr().cast()),
                _mm_loadu_si128(t.as_ptr().add(16).cast()),
            )
        };
        let ra = _mm_add_epi16(
            _mm_unpacklo_epi8(_mm_shuffle_epi8(tlo, _mm_and_si128(a, mask)), zero),
            _mm_unpacklo_epi8(_mm_shuffle_epi8(thi, _mm_and_si128(b, mask)), zero),
        );
        let ra2 = _mm_add_epi16(
            _mm_unpackhi_epi8(_mm_shuffle_epi8(tlo, _mm_and_si128(a, mask)), zero),
            _mm_unpackhi_epi8(_mm_shuffle_epi8(thi, _mm_and_si128(b, mask)), zero),
        );
        let ah = _mm_and_si128(_mm_srli_epi16(a, 4), mask);
        let bh = _mm_and_si128(_mm_srli_epi16(b, 4), mask);
        let rb = _mm_add_epi16(
            _mm_unpacklo_epi8(_mm_shuffle_epi8(tlo, ah), zero),
            _mm_unpacklo_epi8(_mm_shuffle_epi8(thi, bh), zero),
        );
        let rb2 = _mm_add_epi16(
            _mm_unpackhi_epi8(_mm_shuffle_epi8(tlo, ah), zero),
            _mm_unpackhi_epi8(_mm_shuffle_epi8(thi, bh), zero),
        );
        a_lo = _mm_add_epi16(a_lo, ra);
        a_hi = _mm_add_epi16(a_hi, ra2);
        b_lo = _mm_add_epi16(b_lo, rb);
        b_hi = _mm_add_epi16(b_hi, rb2);
        // Drain the 16-bit lanes before they could overflow (every 128 code bytes).
        if (i + 1) % 128 == 0 || i + 1 == l {
            let mut v = [0u16; 32];
            // SAFETY: `v` holds 32 u16: four unaligned 8-lane stores.
            unsafe {
                _mm_storeu_si128(v.as_mut_ptr().cast(), a_lo);
                _mm_storeu_si128(v.as_mut_ptr().add(8).cast(), a_hi);
                _mm_storeu_si128(v.as_mut_ptr().add(16).cast(), b_lo);
                _mm_storeu_si128(v.as_mut_ptr().add(24).cast(), b_hi);
            }
            for (w, x) in wide.iter_mut().zip(v) {
                *w += u32::from(x);
            }
            (a_lo, a_hi, b_lo, b_hi) = (zero, zero, zero, zero);
        }
    }
}

/// The block kernel for two code bytes at a time in 256-bit registers (`pshufb` looks
/// up within each 128-bit half: the low half serves code byte `2p`, the high half
/// `2p + 1`, with the paired tables `pairs`). Byte sums go into 16-bit lanes without
/// widening: one accumulator adds the looked-up bytes as 16-bit words (even byte +
/// 256 · odd byte), another the odd bytes alone, and the even sum is their difference
/// — exact in 16-bit arithmetic while each lane's sum stays under 65,536, so they are
/// drained into `wide` every 128 pairs (`2·128·255`).
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[target_feature(enable = "avx2")]
fn pair_sums_avx2(packed: &[u8], pairs: &[[u8; 64]], wide: &mut [u32; 32]) {
    use std::arch::x86_64::*;
    let n = pairs.len().min(packed.len() / 64);
    let mask = _mm256_set1_epi8(0x0f);
    let zero = _mm256_setzero_si256();
    // (words, odd bytes) of the rows PERM0[j] and of the rows PERM0[j] + 16
    let (mut lo_w, mut lo_o, mut hi_w, mut hi_o) = (zero, zero, zero, zero);
    for (p, t) in pairs[..n].iter().enumerate() {
        // SAFETY: `packed` holds 64 bytes per pair (`n` bounds `p`), `t` 64 bytes.
        let (r0, r1, tl, th) = unsafe {
            (
                _mm256_loadu_si256(packed.as_ptr().add(64 * p).cast()),
                _mm256_loadu_si256(packed.as_ptr().add(64 * p + 32).cast()),
                _mm256_loadu_si256(t.as_ptr().cast()),
                _mm256_loadu_si256(t.as_ptr().add(32).cast()),
            )
        };
        // Both code bytes' low-nibble index bytes, then both high-nibble ones.
        let x = _mm256_permute2x128_si256::<0x20>(r0, r1);
        let y = _mm256_permute2x128_si256::<0x31>(r0, r1);
        let nib = |v: __m256i| _mm256_and_si256(v, mask);
        let nib_hi = |v: __m256i| _mm256_and_si256(_mm256_srli_epi16::<4>(v), mask);
        let (la, lb) = (
            _mm256_shuffle_epi8(tl, nib(x)),
            _mm256_shuffle_epi8(th, nib(y)),
        );
        let (ha, hb) = (
            _mm256_shuffle_epi8(tl, nib_hi(x)),
            _mm256_shuffle_epi8(th, nib_hi(y)),
        );
        // The odd bytes of each lookup separately (a sum of two may carry out of a
        // byte).
        let odd = |a: __m256i, b: __m256i| {
            _mm256_add_epi16(_mm256_srli_epi16::<8>(a), _mm256_srli_epi16::<8>(b))
        };
        lo_w = _mm256_add_epi16(lo_w, _mm256_add_epi16(la, lb));
        hi_w = _mm256_add_epi16(hi_w, _mm256_add_epi16(ha, hb));
        lo_o = _mm256_add_epi16(lo_o, odd(la, lb));
        hi_o = _mm256_add_epi16(hi_o, odd(ha, hb));
        if (p + 1) % 128 == 0 || p + 1 == n {
            let mut v = [[0u16; 16]; 4];
            // SAFETY: each `v[i]` holds 16 u16: one unaligned 256-bit store each.
            unsafe {
                _mm256_storeu_si256(v[0].as_mut_ptr().cast(), lo_w);
                _mm256_storeu_si256(v[1].as_mut_ptr().cast(), lo_o);
                _mm256_storeu_si256(v[2].as_mut_ptr().cast(), hi_w);
                _mm256_storeu_si256(v[3].as_mut_ptr().cast(), hi_o);
            }
            for (g, (w, o)) in [(&v[0], &v[1]), (&v[2], &v[3])].into_iter().enumerate() {
                // Word k of a half holds that half's bytes 2k and 2k + 1 (lanes
                // 2k, 2k + 1); the two halves are the pair's two code bytes.
                for k in 0..16 {
                    let lane = 16 * g + 2 * (k % 8);
                    let even = w[k].wrapping_sub(o[k] << 8);
                    wide[lane] += u32::from(even);
                    wide[lane + 1] += u32::from(o[k]);
                }
            }
            (lo_w, lo_o, hi_w, hi_o) = (zero, zero, zero, zero);
        }
    }
}

/// Unpacks one row's blocked ex codes (`e` bits per dimension, 64-dimension blocks)
/// into `out` (`code_dim` values).
pub(crate) fn unpack_ex(
    row: &[u8],
    e: usize,
    code_dim: usize,
    out: &mut [u8],
) -> std::result::Result<(), String> {
    let per_block = 64 * e / 8;
    let blocks = code_dim.div_ceil(64);
    if row.len() != blocks * per_block {
        return Err(format!(
            "ex codes of {} bytes for {code_dim} dims of {e} bits",
            row.len()
        ));
    }
    let mut vals = [0u8; 64];
    for k in 0..blocks {
        let b = &row[k * per_block..(k + 1) * per_block];
        vals.iter_mut().for_each(|v| *v = 0);
        let top_plane = |vals: &mut [u8; 64], plane: &[u8], bit: u8| {
            let w = u64::from_le_bytes([
                plane[0], plane[1], plane[2], plane[3], plane[4], plane[5], plane[6], plane[7],
            ]);
            for kk in 0..4 {
                for bb in 0..16 {
                    let pos = 8 * (bb % 8) + 2 * kk + bb / 8;
                    if w >> pos & 1 == 1 {
                        vals[16 * kk + bb] |= 1 << bit;
                    }
                }
            }
        };
        let two_bit = |vals: &mut [u8; 64], p: &[u8]| {
            for (bb, &byte) in p.iter().enumerate().take(16) {
                for j in 0..4 {
                    vals[bb + 16 * j] |= (byte >> (2 * j)) & 3;
                }
            }
        };
        match e {
            1 => {
                let w = u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]);
                for (i, v) in vals.iter_mut().enumerate() {
                    *v = (w >> i & 1) as u8;
                }
            }
            2 => two_bit(&mut vals, &b[..16]),
            3 => {
                two_bit(&mut vals, &b[..16]);
                top_plane(&mut vals, &b[16..24], 2);
            }
            4 => {
                for j in 0..4 {
                    for bb in 0..8 {
                        let byte = b[8 * j + bb];
                        vals[16 * j + bb] = byte & 15;
                        vals[16 * j + 8 + bb] = byte >> 4;
                    }
                }
            }
            5 => {
                for bb in 0..16 {
                    vals[bb] = b[bb] & 15;
                    vals[bb + 16] = b[bb] >> 4;
                    vals[bb + 32] = b[16 + bb] & 15;
                    vals[bb + 48] = b[16 + bb] >> 4;
                }
                top_plane(&mut vals, &b[32..40], 4);
            }
            6 | 7 => {
                for kk in 0..3 {
                    for bb in 0..16 {
                        let byte = b[16 * kk + bb];
                        vals[16 * kk + bb] = byte & 63;
                        vals[48 + bb] |= (byte >> 6) << (2 * kk);
                    }
                }
                if e == 7 {
                    top_plane(&mut vals, &b[48..56], 6);
                }
            }
            8 => vals.copy_from_slice(&b[..64]),
            _ => return Err(format!("ex codes of {e} bits")),
        }
        let n = (code_dim - 64 * k).min(64);
        out[64 * k..64 * k + n].copy_from_slice(&vals[..n]);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fwht_of_a_unit_vector_is_flat() {
        let mut x = vec![1.0, 0.0, 0.0, 0.0];
        fwht(&mut x);
        assert_eq!(x, vec![1.0; 4]);
    }

    /// The block kernel's sums equal row-at-a-time sums of the quantized table, for
    /// code lengths on both sides of the 16-bit drain.
    #[test]
    fn block_sums_equal_row_sums() {
        let mut rng = crate::vector::kmeans::Rng::new(9);
        let lengths = [1usize, 2, 3, 16, 24, 96, 130, 257, 300, 513];
        // Random codes, then the largest sums: a positive query's all-ones pattern is
        // the table's maximum (255) for both nibbles of every byte, 510 per byte.
        for (l, extreme) in lengths
            .iter()
            .map(|&l| (l, false))
            .chain([(513, true), (256, true)])
        {
            let q: Vec<f32> = (0..8 * l)
                .map(|_| {
                    if extreme {
                        1.0
                    } else {
                        rng.unit() as f32 - 0.5
                    }
                })
                .collect();
            let t = QueryTables::new(q);
            let rows: Vec<u8> = (0..32 * l)
                .map(|_| if extreme { 0xff } else { rng.next_u64() as u8 })
                .collect();
            let mut packed = vec![0u8; 32 * l];
            pack_blocks(&rows, l, 1, &mut packed);
            let mut got = [0u32; 32];
            t.block_sums(&packed, &rows, &mut got);
            for (r, code) in rows.chunks_exact(l).enumerate() {
                let want = code.iter().zip(&t.table8).fold(0u32, |s, (&b, pair)| {
                    s + u32::from(pair[(b & 15) as usize]) + u32::from(pair[16 + (b >> 4) as usize])
                });
                assert_eq!(got[r], want, "l={l} row {r}");
                if extreme {
                    assert_eq!(want, 510 * l as u32);
                }
                assert_eq!(
                    t.estimate_of_sum(got[r], l).to_bits(),
                    t.quantized(code).to_bits()
                );
            }
        }
    }

    #[test]
    fn quantized_table_is_close_to_exact() {
        let q: Vec<f32> = (0..32).map(|i| (i as f32 * 0.37).sin()).collect();
        let t = QueryTables::new(q);
        let code = [0b1010_0110u8, 0xff, 0, 0x5a];
        assert!((t.exact(&code) - t.quantized(&code)).abs() < 0.05);
    }

    /// The error-factor gate skips the ex-code estimate of rows that almost surely
    /// cannot make the top k (RabitQ's bound, epsilon 1.9, holds with high probability,
    /// not always — the reference gates the same way): on clustered data, for every
    /// metric and several bit widths, rows in both the gated and the ungated top 10
    /// have bit-identical distances, a query loses at most one row to the gate and all
    /// queries together at most 1%, and the gate skips most rows.
    #[test]
    fn error_gate_keeps_the_top_k() {
        use build::RabitEncoder;
        let mut rng = crate::vector::kmeans::Rng::new(5);
        let mut gauss = || {
            let s: f32 = (0..12).map(|_| rng.unit() as f32).sum();
            s - 6.0
        };
        let (d, rows) = (64usize, 3000usize);
        let c: Vec<f32> = (0..d).map(|_| gauss() * 0.5).collect();
        let xs: Vec<Vec<f32>> = (0..rows)
            .map(|_| c.iter().map(|ci| ci + gauss()).collect())
            .collect();
        let queries: Vec<Vec<f32>> = (0..8)
            .map(|_| c.iter().map(|ci| ci + gauss()).collect())
            .collect();
        let (mut dropped_total, mut compared) = (0usize, 0usize);
        for metric in [Metric::L2, Metric::Cosine, Metric::Dot] {
            for bits in [3u32, 5, 9] {
                let enc = RabitEncoder::new(d, bits, &mut crate::vector::kmeans::Rng::new(3));
                let c_rot = enc.rotate(&c);
                let codes: Vec<_> = xs
                    .iter()
                    .map(|x| {
                        let r: Vec<f32> = x.iter().zip(&c).map(|(a, b)| a - b).collect();
                        enc.encode(metric, &r, &c_rot)
                    })
                    .collect();
                let col = |f: &dyn Fn(&build::RowCode) -> f32| -> Vec<f32> {
                    codes.iter().map(f).collect()
                };
                let (add, scale, error) = (col(&|r| r.add), col(&|r| r.scale), col(&|r| r.error));
                let (add_ex, scale_ex) = (col(&|r| r.add_ex), col(&|r| r.scale_ex));
                let flat: Vec<u8> = codes.iter().flat_map(|r| r.codes.clone()).collect();
                let ex: Vec<u8> = codes.iter().flat_map(|r| r.ex.clone()).collect();
                let meta: serde_json::Value = serde_json::from_str(&enc.metadata()).unwrap();
                let open = |error: &[f32]| {
                    let cols = RabitColumns {
                        codes: &flat,
                        add: &add,
                        scale: &scale,
                        error,
                        ex: &ex,
                        add_ex: &add_ex,
                        scale_ex: &scale_ex,
                    };
                    Rabit::new("t", &meta, &cols, &[(0, rows)], rows).unwrap()
                };
                let (gated, plain) = (open(&error), open(&[]));
                for q in &queries {
                    let top = |r: &Rabit| {
                        let tables = QueryTables::new(r.rotate(q));
                        let mut best: Vec<(f32, usize)> = Vec::new();
                        let seen = r.score_partition(
                            metric,
                            q,
                            &c,
                            &tables,
                            0,
                            rows,
                            f32::INFINITY,
                            &mut |dist, row| {
                                best.push((dist, row));
                                best.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                                best.truncate(10);
                                if best.len() == 10 {
                                    best[9].0
                                } else {
                                    f32::INFINITY
                                }
                            },
                        );
                        let best: Vec<(u32, usize)> = best
                            .iter()
                            .map(|&(dist, row)| (dist.to_bits(), row))
                            .collect();
                        (best, seen)
                    };
                    let ((want, all), (got, few)) = (top(&plain), top(&gated));
                    // A row in both answers has bit-identical distances; a row of the
                    // ungated answer the gate dropped is counted (the bound holds with
                    // high probability, not always).
                    for &(dist, row) in &got {
                        if let Some(w) = want.iter().find(|w| w.1 == row) {
                            assert_eq!(w.0, dist, "{metric:?} {bits} bits: row {row}");
                        }
                    }
                    let dropped = want
                        .iter()
                        .filter(|w| !got.iter().any(|g| g.1 == w.1))
                        .count();
                    dropped_total += dropped;
                    compared += want.len();
                    assert_eq!(got.len(), want.len());
                    assert!(
                        dropped <= 1,
                        "{metric:?} {bits} bits: {dropped} of the top 10 dropped"
                    );
                    assert_eq!(all, rows);
                    assert!(
                        few * 3 < rows,
                        "{metric:?} {bits} bits: {few} of {rows} estimated"
                    );
                }
            }
        }
        // 9 settings x 8 queries x 10 rows: the gate keeps at least 99% of them
        assert!(
            dropped_total * 100 <= compared,
            "{dropped_total} of {compared} top rows dropped by the gate"
        );
    }

    /// The packed 4-bit ex-code dot product equals the dot product with the unpacked
    /// values (to float rounding), padding dimensions included, at several dimensions.
    #[test]
    fn packed_four_bit_dot_matches_the_unpacked_one() {
        let mut rng = crate::vector::kmeans::Rng::new(21);
        for d in [8usize, 64, 72, 128, 200, 768] {
            let vals: Vec<u8> = (0..d).map(|_| (rng.next_u64() % 16) as u8).collect();
            let packed = build::pack_ex(&vals, 4);
            let mut back = vec![0u8; d];
            unpack_ex(&packed, 4, d, &mut back).unwrap();
            assert_eq!(back, vals);
            let q: Vec<f32> = (0..d).map(|_| rng.unit() as f32 - 0.5).collect();
            let mut padded = q.clone();
            padded.resize(d.div_ceil(64) * 64, 0.0);
            let want: f64 = q
                .iter()
                .zip(&vals)
                .map(|(a, &b)| f64::from(*a) * f64::from(b))
                .sum();
            for got in [
                crate::distance::dot_nib4(&padded, &packed),
                crate::distance::dot_nib4_body(&padded, &packed),
                crate::distance::dot_u8(&q, &vals),
            ] {
                assert!(
                    (f64::from(got) - want).abs() < 1e-4 * (1.0 + want.abs()),
                    "d={d}: {got} vs {want}"
                );
            }
        }
    }
}
