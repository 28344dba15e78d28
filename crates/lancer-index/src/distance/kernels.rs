//! Distance kernels: squared L2, dot product and Hamming distance over one pair of
//! vectors, the inner loops of exact search and of every index's re-ranking.
//!
//! Distances as the reference defines them (format guide, "Vector Indices" →
//! distance types): `l2` is the squared Euclidean distance, cosine and dot are built
//! from [`dot`] by the caller. Each float kernel is one body written for the compiler to
//! vectorize (16 independent lanes, a fixed summation order), compiled twice: for the
//! baseline target and, on x86-64, for AVX2 + FMA, chosen at run time. Both builds
//! perform the same operations in the same order, so they return identical results;
//! the tests check both against a scalar `f64` reference.

/// Lanes of the accumulators: enough independent sums to hide add latency.
const LANES: usize = 16;

#[inline(always)]
fn l2_body(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0f32; LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..LANES {
            let d = x[i] - y[i];
            acc[i] += d * d;
        }
    }
    let mut s = reduce(&acc);
    for (x, y) in ra.iter().zip(rb) {
        let d = x - y;
        s += d * d;
    }
    s
}

#[inline(always)]
fn dot_body(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0f32; LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..LANES {
            acc[i] += x[i] * y[i];
        }
    }
    let mut s = reduce(&acc);
    for (x, y) in ra.iter().zip(rb) {
        s += x * y;
    }
    s
}

#[inline(always)]
fn dot_u8_body(a: &[f32], b: &[u8]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0f32; LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..LANES {
            acc[i] += x[i] * f32::from(y[i]);
        }
    }
    let mut s = reduce(&acc);
    for (x, &y) in ra.iter().zip(rb) {
        s += x * f32::from(y);
    }
    s
}

/// Pairwise sum of the lanes (a fixed tree, the same in every build; `W` a power of
/// two).
#[inline(always)]
pub(crate) fn reduce<const W: usize>(acc: &[f32; W]) -> f32 {
    let mut v = *acc;
    let mut w = W / 2;
    while w > 0 {
        for i in 0..w {
            v[i] += v[i + w];
        }
        w /= 2;
    }
    v[0]
}

/// Asks the CPU to start loading `items` into its cache (a hint: no effect on
/// results, none on other architectures), so that several rows' loads overlap.
#[allow(unsafe_code)]
#[inline]
pub fn prefetch<T>(items: &[T]) {
    #[cfg(target_arch = "x86_64")]
    for off in (0..std::mem::size_of_val(items)).step_by(64) {
        // SAFETY: the address lies within `items`; a prefetch never faults or writes.
        unsafe {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            _mm_prefetch::<_MM_HINT_T0>(items.as_ptr().cast::<u8>().add(off).cast());
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = items;
}

/// Whether the AVX2 + FMA builds of the kernels run on this CPU.
#[cfg(target_arch = "x86_64")]
pub(crate) fn has_avx2() -> bool {
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
}

/// The frame the AVX2 kernels share: over the common length of `a` and `b`, 16-lane
/// sums held in two registers (lanes 0–7, 8–15), `step` adding one chunk of 16 pairs to
/// them, reduced as [`reduce`] does; then `tail` adds each remaining pair to the sum.
/// The same operations in the same order as the baseline bodies, so the results are
/// bit-identical (no fused multiply-add). The compiler had vectorized those bodies two
/// floats at a time (64-bit loads into eight 2-lane sums), a quarter of the width.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[target_feature(enable = "avx2,fma")]
#[inline]
fn frame_avx2<T>(
    a: &[f32],
    b: &[T],
    step: impl Fn(&[f32], &[T], &mut std::arch::x86_64::__m256, &mut std::arch::x86_64::__m256),
    tail: impl Fn(f32, &T) -> f32,
) -> f32 {
    use std::arch::x86_64::*;
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    let mut lo = _mm256_setzero_ps();
    let mut hi = _mm256_setzero_ps();
    for (x, y) in ca.zip(cb) {
        step(x, y, &mut lo, &mut hi);
    }
    let mut acc = [0f32; LANES];
    // SAFETY: `acc` holds 16 f32: two unaligned 8-lane stores.
    unsafe {
        _mm256_storeu_ps(acc.as_mut_ptr(), lo);
        _mm256_storeu_ps(acc.as_mut_ptr().add(8), hi);
    }
    let mut s = reduce(&acc);
    for (x, y) in ra.iter().zip(rb) {
        s += tail(*x, y);
    }
    s
}

/// [`l2_body`] in AVX2 intrinsics (see [`frame_avx2`]).
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[target_feature(enable = "avx2,fma")]
fn l2_avx2(a: &[f32], b: &[f32]) -> f32 {
    use std::arch::x86_64::*;
    frame_avx2(
        a,
        b,
        |x, y, lo, hi| {
            // SAFETY: `x` and `y` hold 16 f32 each (chunks of LANES = 16); the loads
            // are unaligned loads of exactly those values.
            unsafe {
                let dlo = _mm256_sub_ps(_mm256_loadu_ps(x.as_ptr()), _mm256_loadu_ps(y.as_ptr()));
                let dhi = _mm256_sub_ps(
                    _mm256_loadu_ps(x.as_ptr().add(8)),
                    _mm256_loadu_ps(y.as_ptr().add(8)),
                );
                *lo = _mm256_add_ps(*lo, _mm256_mul_ps(dlo, dlo));
                *hi = _mm256_add_ps(*hi, _mm256_mul_ps(dhi, dhi));
            }
        },
        |x, y| {
            let d = x - y;
            d * d
        },
    )
}

/// [`dot_body`] in AVX2 intrinsics (see [`frame_avx2`]).
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[target_feature(enable = "avx2,fma")]
fn dot_avx2(a: &[f32], b: &[f32]) -> f32 {
    use std::arch::x86_64::*;
    frame_avx2(
        a,
        b,
        |x, y, lo, hi| {
            // SAFETY: as in `l2_avx2`.
            unsafe {
                let plo = _mm256_mul_ps(_mm256_loadu_ps(x.as_ptr()), _mm256_loadu_ps(y.as_ptr()));
                let phi = _mm256_mul_ps(
                    _mm256_loadu_ps(x.as_ptr().add(8)),
                    _mm256_loadu_ps(y.as_ptr().add(8)),
                );
                *lo = _mm256_add_ps(*lo, plo);
                *hi = _mm256_add_ps(*hi, phi);
            }
        },
        |x, y| x * y,
    )
}

/// [`dot_u8_body`] in AVX2 intrinsics (see [`frame_avx2`]; the compiler's own
/// vectorization of the byte widening also moved two values at a time).
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[target_feature(enable = "avx2,fma")]
fn dot_u8_avx2(a: &[f32], b: &[u8]) -> f32 {
    use std::arch::x86_64::*;
    frame_avx2(
        a,
        b,
        |x, y, lo, hi| {
            // SAFETY: `x` holds 16 f32 and `y` 16 bytes (chunks of LANES = 16); the
            // loads are unaligned loads of exactly those bytes.
            unsafe {
                let bytes = _mm_loadu_si128(y.as_ptr().cast());
                let ylo = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
                let yhi = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(bytes, 8)));
                let xlo = _mm256_loadu_ps(x.as_ptr());
                let xhi = _mm256_loadu_ps(x.as_ptr().add(8));
                *lo = _mm256_add_ps(*lo, _mm256_mul_ps(xlo, ylo));
                *hi = _mm256_add_ps(*hi, _mm256_mul_ps(xhi, yhi));
            }
        },
        |x, &y| x * f32::from(y),
    )
}

#[inline(always)]
fn sq_l2_body(a: &[u8], b: &[u8]) -> u32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0u32; LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..LANES {
            let d = i32::from(x[i]) - i32::from(y[i]);
            acc[i] = acc[i].wrapping_add((d * d) as u32);
        }
    }
    let mut s = acc.iter().fold(0u32, |t, &v| t.wrapping_add(v));
    for (x, y) in ra.iter().zip(rb) {
        let d = i32::from(*x) - i32::from(*y);
        s = s.wrapping_add((d * d) as u32);
    }
    s
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[target_feature(enable = "avx2,fma")]
fn sq_l2_avx2(a: &[u8], b: &[u8]) -> u32 {
    sq_l2_body(a, b)
}

/// Squared Euclidean distance between two vectors of 8-bit codes (exact for up to
/// 66,051 dimensions: 255² per component within a u32).
#[allow(unsafe_code)]
pub fn sq_l2(a: &[u8], b: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: the CPU supports AVX2 and FMA (checked just above).
        return unsafe { sq_l2_avx2(a, b) };
    }
    sq_l2_body(a, b)
}

/// Squared Euclidean distance over the common length of `a` and `b`.
#[allow(unsafe_code)]
pub fn l2(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: the CPU supports AVX2 and FMA (checked just above).
        return unsafe { l2_avx2(a, b) };
    }
    l2_body(a, b)
}

/// [`l2`] with early exit: `l2(a, b)` itself (bit for bit) when it is below `bound`,
/// else some value at or above `bound` (the sum so far, checked every 32 values: the
/// terms are never negative and the lane sums and their fixed reduction only grow, so
/// a partial sum at or above `bound` means the whole one is too). A top-k scan that
/// only keeps distances below its current k-th reads most rows only in part.
#[allow(unsafe_code)]
pub fn l2_within(a: &[f32], b: &[f32], bound: f32) -> f32 {
    if !bound.is_finite() {
        // nothing to stop at (and an overflowing partial sum must not stand for a
        // whole one that a later value makes NaN)
        return l2(a, b);
    }
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: the CPU supports AVX2 and FMA (checked just above).
        return unsafe { l2_within_avx2(a, b, bound) };
    }
    l2_within_body(a, b, bound)
}

#[inline(always)]
fn l2_within_body(a: &[f32], b: &[f32], bound: f32) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0f32; LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    let last = ca.len().saturating_sub(1);
    for (j, (x, y)) in ca.zip(cb).enumerate() {
        for i in 0..LANES {
            let d = x[i] - y[i];
            acc[i] += d * d;
        }
        if j % 2 == 1 && j < last {
            let partial = reduce(&acc);
            if partial >= bound {
                return partial;
            }
        }
    }
    let mut s = reduce(&acc);
    for (x, y) in ra.iter().zip(rb) {
        let d = x - y;
        s += d * d;
    }
    s
}

/// [`l2_within_body`] in AVX2 intrinsics: [`l2_avx2`]'s operations in its order, the
/// lanes reduced as [`reduce`] every 32 values to check the bound.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[target_feature(enable = "avx2,fma")]
fn l2_within_avx2(a: &[f32], b: &[f32], bound: f32) -> f32 {
    use std::arch::x86_64::*;
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    let mut lo = _mm256_setzero_ps();
    let mut hi = _mm256_setzero_ps();
    let mut acc = [0f32; LANES];
    let last = ca.len().saturating_sub(1);
    for (j, (x, y)) in ca.zip(cb).enumerate() {
        // SAFETY: `x` and `y` hold 16 f32 each; unaligned loads of exactly those.
        unsafe {
            let dlo = _mm256_sub_ps(_mm256_loadu_ps(x.as_ptr()), _mm256_loadu_ps(y.as_ptr()));
            let dhi = _mm256_sub_ps(
                _mm256_loadu_ps(x.as_ptr().add(8)),
                _mm256_loadu_ps(y.as_ptr().add(8)),
            );
            lo = _mm256_add_ps(lo, _mm256_mul_ps(dlo, dlo));
            hi = _mm256_add_ps(hi, _mm256_mul_ps(dhi, dhi));
        }
        if j % 2 == 1 && j < last {
            // the lanes summed in registers (8, 4, 2, 1: `reduce`'s tree), shrunk by
            // 1e-5 as a margin: at most the partial sum, hence at most the final one
            let s8 = _mm256_add_ps(lo, hi);
            let s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps::<1>(s8));
            let s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
            let s1 = _mm_add_ss(s2, _mm_shuffle_ps::<1>(s2, s2));
            let partial = _mm_cvtss_f32(s1) * (1.0 - 1e-5);
            if partial >= bound {
                return partial;
            }
        }
    }
    // SAFETY: as above.
    unsafe {
        _mm256_storeu_ps(acc.as_mut_ptr(), lo);
        _mm256_storeu_ps(acc.as_mut_ptr().add(8), hi);
    }
    let mut s = reduce(&acc);
    for (x, y) in ra.iter().zip(rb) {
        let d = x - y;
        s += d * d;
    }
    s
}

/// How often a scan's recent [`l2_within`] calls ended at or above their bound (a
/// moving share), to fetch ahead only the first part of the rows while most are cut
/// there and whole rows while most are read whole (fetching part of rows read whole
/// left a sequential scan of a 1% mask at 0.66x, measured with
/// `examples/kept_scoring.rs`).
#[derive(Debug)]
pub struct CutRate(std::cell::Cell<f32>);

impl Default for CutRate {
    fn default() -> Self {
        Self(std::cell::Cell::new(0.0))
    }
}

impl CutRate {
    /// Records one row: whether its distance ended at or above the bound.
    #[inline]
    pub fn record(&self, cut: bool) {
        let r = self.0.get();
        self.0.set(r + (f32::from(u8::from(cut)) - r) / 32.0);
    }

    /// Whether most recent rows were cut.
    #[inline]
    pub fn mostly_cut(&self) -> bool {
        self.0.get() > 0.5
    }
}

/// Dot product over the common length of `a` and `b`.
#[allow(unsafe_code)]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: the CPU supports AVX2 and FMA (checked just above).
        return unsafe { dot_avx2(a, b) };
    }
    dot_body(a, b)
}

/// Dot product of floats with small integer codes, over the common length.
#[allow(unsafe_code)]
pub fn dot_u8(a: &[f32], b: &[u8]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: the CPU supports AVX2 and FMA (checked just above).
        return unsafe { dot_u8_avx2(a, b) };
    }
    dot_u8_body(a, b)
}

/// Dot product of `q` with 4-bit values packed as RabitQ stores 4 ex bits per
/// dimension: 32 bytes per 64 dimensions, byte `8g + b` of a block holding dimension
/// `16g + b` in its low nibble and `16g + 8 + b` in its high one. Blocks past
/// `q.len() / 64` are ignored (`q` covers the padded dimensions).
#[allow(unsafe_code)]
pub fn dot_nib4(q: &[f32], packed: &[u8]) -> f32 {
    let blocks = (packed.len() / 32).min(q.len() / 64);
    #[cfg(target_arch = "x86_64")]
    if has_avx2() {
        // SAFETY: the CPU supports AVX2 and FMA (checked just above); the kernel reads
        // `32·blocks` bytes of `packed` and `64·blocks` floats of `q`, both in bounds.
        return unsafe { dot_nib4_avx2(&q[..64 * blocks], &packed[..32 * blocks]) };
    }
    dot_nib4_body(&q[..64 * blocks], &packed[..32 * blocks])
}

/// [`dot_nib4`] value by value (`q`: 64 floats per 32-byte block of `packed`).
pub(crate) fn dot_nib4_body(q: &[f32], packed: &[u8]) -> f32 {
    let mut s = 0f32;
    for (k, block) in packed.chunks_exact(32).enumerate() {
        for (i, &x) in block.iter().enumerate() {
            let d = 64 * k + 16 * (i / 8) + i % 8;
            s += q[d] * f32::from(x & 15) + q[d + 8] * f32::from(x >> 4);
        }
    }
    s
}

/// [`dot_nib4`] in AVX2: eight bytes at a time widened to 32-bit lanes, their low and
/// high nibbles against the eight query values each covers, four accumulators.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[target_feature(enable = "avx2,fma")]
fn dot_nib4_avx2(q: &[f32], packed: &[u8]) -> f32 {
    use std::arch::x86_64::*;
    let m = _mm256_set1_epi32(15);
    let mut acc = [_mm256_setzero_ps(); 4];
    for (k, block) in packed.chunks_exact(32).enumerate() {
        for (g, a) in acc.iter_mut().enumerate() {
            // SAFETY: `block` holds 32 bytes (8 read at 8g); `q` holds 64 floats per
            // block (the caller's slices), 16 read at 64k + 16g.
            unsafe {
                let bytes = _mm_loadl_epi64(block.as_ptr().add(8 * g).cast());
                let w = _mm256_cvtepu8_epi32(bytes);
                let lo = _mm256_cvtepi32_ps(_mm256_and_si256(w, m));
                let hi = _mm256_cvtepi32_ps(_mm256_srli_epi32::<4>(w));
                let at = q.as_ptr().add(64 * k + 16 * g);
                *a = _mm256_fmadd_ps(_mm256_loadu_ps(at), lo, *a);
                *a = _mm256_fmadd_ps(_mm256_loadu_ps(at.add(8)), hi, *a);
            }
        }
    }
    let mut out = [0f32; 8];
    // SAFETY: `out` holds 8 floats: one unaligned store.
    unsafe {
        let sum = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
        _mm256_storeu_ps(out.as_mut_ptr(), sum);
    }
    out.iter().sum()
}

/// Number of differing bits over the common length of `a` and `b`.
pub fn hamming(a: &[u8], b: &[u8]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    let mut bits = 0u32;
    for (x, y) in ca.zip(cb) {
        let mut wx = [0u8; 8];
        let mut wy = [0u8; 8];
        wx.copy_from_slice(x);
        wy.copy_from_slice(y);
        bits += (u64::from_le_bytes(wx) ^ u64::from_le_bytes(wy)).count_ones();
    }
    for (x, y) in ra.iter().zip(rb) {
        bits += (x ^ y).count_ones();
    }
    bits as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vecs(n: usize, seed: u64) -> Vec<f32> {
        let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s % 20_001) as f32 / 1000.0 - 10.0
            })
            .collect()
    }

    #[test]
    fn bounded_l2_is_l2_below_its_bound_and_at_least_the_bound_above() {
        for n in (0..70).chain([127, 128, 129, 768]) {
            let (a, b) = (vecs(n, n as u64 + 7), vecs(n, n as u64 + 700));
            let full = l2(&a, &b);
            assert_eq!(
                l2_within_body(&a, &b, f32::INFINITY).to_bits(),
                l2_body(&a, &b).to_bits()
            );
            for f in [0.0f32, 0.1, 0.5, 0.9, 0.999, 1.0, 1.001, 2.0] {
                let bound = full * f;
                let got = l2_within(&a, &b, bound);
                if full < bound {
                    assert_eq!(got.to_bits(), full.to_bits(), "n {n} bound {bound}");
                } else {
                    assert!(
                        got >= bound,
                        "n {n}: {got} below the bound {bound} (l2 {full})"
                    );
                    assert!(got <= full, "n {n}: {got} above l2 {full}");
                }
                let body = l2_within_body(&a, &b, bound);
                assert_eq!(body < bound, full < bound, "n {n} bound {bound}");
            }
        }
    }

    #[test]
    fn float_kernels_match_a_scalar_reference_at_every_length() {
        for n in (0..70).chain([127, 128, 129, 768, 1536]) {
            let (a, b) = (vecs(n, n as u64 + 1), vecs(n, n as u64 + 1000));
            let l2_ref: f64 = a
                .iter()
                .zip(&b)
                .map(|(x, y)| (f64::from(*x) - f64::from(*y)).powi(2))
                .sum();
            let dot_ref: f64 = a
                .iter()
                .zip(&b)
                .map(|(x, y)| f64::from(*x) * f64::from(*y))
                .sum();
            let tol = |r: f64| 1e-4 * r.abs().max(1.0) * (n as f64).sqrt().max(1.0);
            assert!(
                (f64::from(l2(&a, &b)) - l2_ref).abs() <= tol(l2_ref),
                "l2 at {n}"
            );
            assert!(
                (f64::from(dot(&a, &b)) - dot_ref).abs() <= tol(dot_ref),
                "dot at {n}"
            );
            // The dispatched build and the baseline build agree bit for bit.
            assert_eq!(
                l2(&a, &b).to_bits(),
                l2_body(&a, &b).to_bits(),
                "l2 builds at {n}"
            );
            assert_eq!(
                dot(&a, &b).to_bits(),
                dot_body(&a, &b).to_bits(),
                "dot builds at {n}"
            );
        }
    }

    #[test]
    fn dot_u8_matches_a_scalar_reference() {
        for n in (0..40).chain([64, 127, 128, 768]) {
            let a = vecs(n, n as u64 + 7);
            let b: Vec<u8> = (0..n).map(|i| (i * 37 % 256) as u8).collect();
            let want: f64 = a
                .iter()
                .zip(&b)
                .map(|(x, y)| f64::from(*x) * f64::from(*y))
                .sum();
            let got = dot_u8(&a, &b);
            assert!(
                (f64::from(got) - want).abs()
                    <= 1e-3 * want.abs().max(1.0) * (n as f64).sqrt().max(1.0),
                "dot_u8 at {n}: {got} vs {want}"
            );
            assert_eq!(
                got.to_bits(),
                dot_u8_body(&a, &b).to_bits(),
                "builds at {n}"
            );
        }
    }

    #[test]
    fn kernels_use_the_common_length() {
        assert_eq!(l2(&[1.0, 2.0, 3.0], &[1.0, 2.0]), 0.0);
        assert_eq!(dot(&[2.0; 20], &[3.0; 17]), 102.0);
        assert_eq!(hamming(&[0xff; 11], &[0x0f; 9]), 36.0);
    }

    #[test]
    fn sq_l2_matches_a_scalar_reference() {
        for n in [0usize, 1, 15, 16, 17, 128, 769] {
            let a: Vec<u8> = (0..n).map(|i| (i * 37 % 256) as u8).collect();
            let b: Vec<u8> = (0..n).map(|i| (i * 101 % 256) as u8).collect();
            let want: u32 = a
                .iter()
                .zip(&b)
                .map(|(x, y)| (i32::from(*x) - i32::from(*y)).pow(2) as u32)
                .sum();
            assert_eq!(sq_l2(&a, &b), want, "at {n}");
            assert_eq!(sq_l2_body(&a, &b), want, "baseline at {n}");
        }
    }

    #[test]
    fn hamming_counts_bits() {
        for n in [0usize, 1, 7, 8, 9, 31, 64, 65] {
            let a: Vec<u8> = (0..n).map(|i| (i * 37 % 256) as u8).collect();
            let b: Vec<u8> = (0..n).map(|i| (i * 101 % 256) as u8).collect();
            let want: u32 = a.iter().zip(&b).map(|(x, y)| (x ^ y).count_ones()).sum();
            assert_eq!(hamming(&a, &b), want as f32);
        }
    }
}
