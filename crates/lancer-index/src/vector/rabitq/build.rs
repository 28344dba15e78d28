//! Encoding vectors as IVF_RQ (RabitQ) storage, the writing side of [`crate::vector::rabitq`]
//! (format guide "Vector Indices" → RabitQ; the rotation, codes and factors as
//! `docs/vector-index-format.md` §5.4 records them from pylance 11–14).
//!
//! A row's residual `r` (vector minus its partition's centroid) is rotated (`u = R(r)`);
//! the sign of each component is one bit of `_rabit_codes`, and with `b > 1` bits per
//! dimension the magnitudes are quantized to `b − 1` "ex" bits by the rescale search of
//! extended RabitQ. Per-row factors turn a query's inner product with the codes into a
//! distance estimate ([`super::Rabit::score_partition`] reads them back): they
//! depend on the residual's norm, the codes' inner product with `u` and with the
//! rotated centroid.
//!
//! Codes are written row-major (`"packed": false`), which every pylance version
//! accepts and packs into its 32-row blocks at load time; ex codes are always in the
//! blocked 64-dimension layout.

use super::fast_rotate;
use crate::distance::Metric;
use crate::vector::kmeans::Rng;

/// Thresholds of the rescale search's start, by ex bits (`t_start = t_end · T[e]`).
const T_START: [f32; 9] = [0.0, 0.15, 0.20, 0.52, 0.59, 0.71, 0.75, 0.77, 0.81];

/// The RabitQ model of a new index: dimensions, bits and the rotation's sign bytes.
#[derive(Clone, Debug)]
pub struct RabitEncoder {
    /// Dimensions of the codes (the vector dimension, a multiple of 8).
    pub code_dim: usize,
    /// Bits per dimension (1 = sign only, up to 9).
    pub num_bits: u32,
    /// `4 · code_dim/8` random bytes: the four rounds of sign flips.
    pub signs: Vec<u8>,
}

/// One row's encoding.
#[derive(Clone, Debug, Default)]
pub struct RowCode {
    /// Sign bits, `code_dim/8` bytes, bit `i` = dimension `i` (LSB first).
    pub codes: Vec<u8>,
    /// `__add_factors`.
    pub add: f32,
    /// `__scale_factors`.
    pub scale: f32,
    /// `__error_factors`.
    pub error: f32,
    /// `__blocked_ex_codes` (empty for one bit).
    pub ex: Vec<u8>,
    /// `__add_factors_ex`.
    pub add_ex: f32,
    /// `__scale_factors_ex`.
    pub scale_ex: f32,
}

impl RabitEncoder {
    /// A model for `dim`-dimensional vectors of `num_bits` bits with random signs.
    pub fn new(dim: usize, num_bits: u32, rng: &mut Rng) -> Self {
        let signs = (0..4 * dim.div_ceil(8))
            .map(|_| (rng.next_u64() >> 24) as u8)
            .collect();
        Self {
            code_dim: dim,
            num_bits,
            signs,
        }
    }

    /// Bytes of a row's blocked ex codes.
    pub fn ex_width(&self) -> usize {
        self.code_dim.div_ceil(64) * 64 * (self.num_bits as usize - 1) / 8
    }

    /// The `storage_metadata` JSON of the index (key order as pylance writes it).
    pub fn metadata(&self) -> String {
        format!(
            "{{\"rotate_mat_position\":null,\"fast_rotation_signs\":{},\"rotation_type\":\"fast\",\"code_dim\":{},\"num_bits\":{},\"packed\":false,\"query_estimator\":\"raw_query\"}}",
            serde_json::to_string(&self.signs).unwrap_or_else(|_| "[]".into()),
            self.code_dim,
            self.num_bits
        )
    }

    /// The rotation of a vector.
    pub fn rotate(&self, v: &[f32]) -> Vec<f32> {
        fast_rotate(&self.signs, self.code_dim, v)
    }

    /// Encodes the residual `r` of a row whose partition's rotated centroid is `c_rot`.
    pub fn encode(&self, metric: Metric, r: &[f32], c_rot: &[f32]) -> RowCode {
        let d = self.code_dim;
        let u = self.rotate(r);
        let rr: f32 = r.iter().map(|x| x * x).sum();
        let mut codes = vec![0u8; d / 8];
        let (mut b, mut bc, mut uc) = (0f32, 0f32, 0f32);
        for (i, (&ui, &ci)) in u.iter().zip(c_rot).enumerate() {
            let positive = !ui.is_sign_negative();
            if positive {
                codes[i / 8] |= 1 << (i % 8);
            }
            let beta = if positive { 0.5 } else { -0.5 };
            b += ui * beta;
            bc += ci * beta;
            uc += ui * ci;
        }
        let ratio = |num: f32, den: f32| if den == 0.0 { 0.0 } else { num / den };
        let err = if rr <= 0.0 || b == 0.0 || d <= 1 {
            0.0
        } else {
            let x = (rr * (d as f32 / 4.0) / (b * b) - 1.0).max(0.0);
            rr.sqrt() * 1.9 * (x / (d as f32 - 1.0)).sqrt()
        };
        let (add, scale, error) = match metric {
            Metric::Dot => (1.0 - uc + rr * ratio(bc, b), -ratio(rr, b), err),
            _ => (rr + 2.0 * rr * ratio(bc, b), -2.0 * ratio(rr, b), 2.0 * err),
        };
        let mut out = RowCode {
            codes,
            add,
            scale,
            error,
            ..Default::default()
        };
        let e = self.num_bits as usize - 1;
        if e > 0 {
            let mut vals = vec![0u8; d];
            let ex_dot = ex_codes(&u, e, &mut vals);
            let centre = (1u32 << e) as f32 - 0.5;
            let mut ec = 0f32;
            for (i, (&ui, &ci)) in u.iter().zip(c_rot).enumerate() {
                let sign = u32::from(!ui.is_sign_negative());
                ec += ci * (((sign << e) + u32::from(vals[i])) as f32 - centre);
            }
            let (add_ex, scale_ex) = match metric {
                Metric::Dot => (1.0 - uc + rr * ratio(ec, ex_dot), -ratio(rr, ex_dot)),
                _ => (rr + 2.0 * rr * ratio(ec, ex_dot), -2.0 * ratio(rr, ex_dot)),
            };
            out.add_ex = add_ex;
            out.scale_ex = scale_ex;
            out.ex = pack_ex(&vals, e);
        }
        out
    }
}

/// The `e`-bit magnitude codes of the rotated residual `u` (written to `out`, already
/// bit-inverted for negative components) and their inner product with `u`
/// (`Σ u_i · ((sign_i << e) + c_i − (2^e − 0.5))`).
fn ex_codes(u: &[f32], e: usize, out: &mut [u8]) -> f32 {
    let d = u.len();
    out.iter_mut().for_each(|c| *c = 0);
    let norm2: f32 = u.iter().map(|x| x * x).sum();
    if norm2 <= f32::EPSILON {
        return 0.0;
    }
    let norm = norm2.sqrt();
    let max_code = (1u32 << e) - 1;
    let a: Vec<f32> = u.iter().map(|x| x.abs() / norm).collect();
    let usable = |x: f32| x > 0.0 && x.is_finite();
    let max_a = a
        .iter()
        .copied()
        .filter(|&x| usable(x))
        .fold(0f32, f32::max);
    if max_a <= 0.0 {
        return 0.0;
    }
    let t_end = (max_code + 10) as f32 / max_a;
    let t_start = t_end * T_START[e.min(8)];
    let code_at = |t: f32, x: f32| -> u32 {
        if !usable(x) {
            return 0;
        }
        ((t * x + 1e-5).floor().max(0.0) as u32).min(max_code)
    };
    let mut cur: Vec<u32> = a.iter().map(|&x| code_at(t_start, x)).collect();
    let mut num = 0f32;
    let mut den = d as f32 / 4.0;
    for (&c, &x) in cur.iter().zip(&a) {
        num += (c as f32 + 0.5) * x;
        den += (c * c + c) as f32;
    }
    // Every threshold at which a component's code grows, in increasing order: keyed by
    // (threshold, component) packed in a u64 (thresholds are positive and finite, so
    // their bit patterns order as the values do), generated per component and sorted
    // once (the same order a heap merge would give).
    let mut events: Vec<u64> = Vec::with_capacity(4 * d);
    for (i, &c0) in cur.iter().enumerate() {
        if !usable(a[i]) {
            continue;
        }
        for c in c0..max_code {
            let t = (c + 1) as f32 / a[i];
            if t >= t_end {
                break;
            }
            events.push((u64::from(t.to_bits()) << 32) | i as u64);
        }
    }
    events.sort_unstable();
    let mut best = num / den.sqrt();
    let mut best_t = t_start;
    for key in events {
        let (t, i) = (
            f32::from_bits((key >> 32) as u32),
            (key & 0xffff_ffff) as usize,
        );
        cur[i] += 1;
        den += 2.0 * cur[i] as f32;
        num += a[i];
        let v = num / den.sqrt();
        if v > best {
            best = v;
            best_t = t;
        }
    }
    let centre = (1u32 << e) as f32 - 0.5;
    let mut dot = 0f32;
    for (i, &ui) in u.iter().enumerate() {
        let mut c = code_at(best_t, a[i]);
        let sign = u32::from(!ui.is_sign_negative());
        if sign == 0 {
            c = !c & max_code;
        }
        out[i] = c as u8;
        dot += ui * (((sign << e) + c) as f32 - centre);
    }
    dot
}

/// Packs one row's `e`-bit codes (`vals`, one per dimension) into the blocked layout
/// (64-dimension blocks, zero-padded), the inverse of [`crate::vector::rabitq::unpack_ex`].
pub(crate) fn pack_ex(vals: &[u8], e: usize) -> Vec<u8> {
    let per_block = 64 * e / 8;
    let blocks = vals.len().div_ceil(64);
    let mut out = vec![0u8; blocks * per_block];
    for k in 0..blocks {
        let mut v = [0u8; 64];
        let n = (vals.len() - 64 * k).min(64);
        v[..n].copy_from_slice(&vals[64 * k..64 * k + n]);
        let b = &mut out[k * per_block..(k + 1) * per_block];
        // The top bit of dim 16k+b at bit 8(b%8) + 2k + b/8 of a LE u64.
        let top_plane = |v: &[u8; 64], bit: u32, plane: &mut [u8]| {
            let mut w = 0u64;
            for kk in 0..4 {
                for bb in 0..16 {
                    if v[16 * kk + bb] >> bit & 1 == 1 {
                        w |= 1 << (8 * (bb % 8) + 2 * kk + bb / 8);
                    }
                }
            }
            plane.copy_from_slice(&w.to_le_bytes());
        };
        let two_bit = |v: &[u8; 64], p: &mut [u8]| {
            for (bb, byte) in p.iter_mut().enumerate().take(16) {
                for j in 0..4 {
                    *byte |= (v[bb + 16 * j] & 3) << (2 * j);
                }
            }
        };
        match e {
            1 => {
                let mut w = 0u64;
                for (i, &x) in v.iter().enumerate() {
                    w |= u64::from(x & 1) << i;
                }
                b.copy_from_slice(&w.to_le_bytes());
            }
            2 => two_bit(&v, &mut b[..16]),
            3 => {
                two_bit(&v, &mut b[..16]);
                top_plane(&v, 2, &mut b[16..24]);
            }
            4 => {
                for j in 0..4 {
                    for bb in 0..8 {
                        b[8 * j + bb] = (v[16 * j + bb] & 15) | (v[16 * j + 8 + bb] & 15) << 4;
                    }
                }
            }
            5 => {
                for bb in 0..16 {
                    b[bb] = (v[bb] & 15) | (v[bb + 16] & 15) << 4;
                    b[16 + bb] = (v[bb + 32] & 15) | (v[bb + 48] & 15) << 4;
                }
                top_plane(&v, 4, &mut b[32..40]);
            }
            6 | 7 => {
                for kk in 0..3 {
                    for bb in 0..16 {
                        b[16 * kk + bb] =
                            (v[16 * kk + bb] & 63) | ((v[48 + bb] >> (2 * kk)) & 3) << 6;
                    }
                }
                if e == 7 {
                    top_plane(&v, 6, &mut b[48..56]);
                }
            }
            _ => b.copy_from_slice(&v),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ex_codes_round_trip_through_the_blocked_layout() {
        let mut rng = Rng::new(7);
        for e in 1..=8usize {
            for d in [8usize, 16, 24, 64, 72, 128, 200] {
                let vals: Vec<u8> = (0..d).map(|_| (rng.next_u64() % (1 << e)) as u8).collect();
                let packed = pack_ex(&vals, e);
                let mut back = vec![0u8; d];
                crate::vector::rabitq::unpack_ex(&packed, e, d, &mut back).unwrap();
                assert_eq!(back, vals, "e={e} d={d}");
            }
        }
    }

    /// The estimate the reader computes from the written codes and factors is close to
    /// the true distance (the point of the factors), for each metric and bit width.
    #[test]
    fn factors_estimate_the_distance() {
        let mut rng = Rng::new(11);
        let d = 64;
        let mut gauss = || {
            let s: f32 = (0..12)
                .map(|_| (rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32)
                .sum();
            s - 6.0
        };
        let c: Vec<f32> = (0..d).map(|_| gauss() * 0.3).collect();
        let xs: Vec<Vec<f32>> = (0..50)
            .map(|_| c.iter().map(|ci| ci + gauss()).collect())
            .collect();
        let q: Vec<f32> = c.iter().map(|ci| ci + gauss()).collect();
        for bits in [1u32, 3, 5, 9] {
            let enc = RabitEncoder::new(d, bits, &mut Rng::new(3));
            let c_rot = enc.rotate(&c);
            let q_rot = enc.rotate(&q);
            let (mut err_sum, mut true_sum) = (0f32, 0f32);
            for x in &xs {
                let r: Vec<f32> = x.iter().zip(&c).map(|(a, b)| a - b).collect();
                let code = enc.encode(Metric::L2, &r, &c_rot);
                let e = bits as usize - 1;
                let mut vals = vec![0u8; d];
                if e > 0 {
                    crate::vector::rabitq::unpack_ex(&code.ex, e, d, &mut vals).unwrap();
                }
                let two_e = (1u32 << e) as f32;
                let mut full = 0f32;
                for i in 0..d {
                    let bit = f32::from(code.codes[i / 8] >> (i % 8) & 1);
                    full += q_rot[i] * (bit * two_e + f32::from(vals[i]) - (two_e - 0.5));
                }
                let (scale, add) = if e == 0 {
                    (code.scale, code.add)
                } else {
                    (code.scale_ex, code.add_ex)
                };
                let qc: f32 = q.iter().zip(&c).map(|(a, b)| (a - b) * (a - b)).sum();
                let est = full * scale + add + qc;
                let truth: f32 = q.iter().zip(x).map(|(a, b)| (a - b) * (a - b)).sum();
                err_sum += (est - truth).abs();
                true_sum += truth;
            }
            let rel = err_sum / true_sum;
            let limit = if bits == 1 { 0.2 } else { 0.05 };
            assert!(rel < limit, "{bits} bits: mean relative error {rel}");
        }
    }
}
