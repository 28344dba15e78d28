//! Distance kernels in a free summation order, for graph builds: squared L2 and dot
//! product as [`crate::kernels`] defines them (format guide, "Vector Indices" →
//! distance types), summed in as many independent fused multiply-add chains as the CPU
//! keeps busy (four 16-lane AVX-512 registers, or four 8-lane AVX2 ones) instead of
//! [`crate::kernels::l2`]'s fixed two-register order.
//!
//! The results differ from [`crate::kernels::l2`] / [`crate::kernels::dot`] in the last
//! bits (another rounding order), so they serve only where no answer has to equal a
//! search's or the reference's bit for bit: an HNSW build's neighbour choices, whose
//! distances are its own (a 768-d build spent half its distance time in the
//! two-register chain's add latency).

use crate::kernels::{dot, l2};

/// Squared L2 distance over the common length of `a` and `b`, in a free order.
#[allow(unsafe_code)]
pub fn l2_free(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU supports AVX-512F (checked just above).
            return unsafe { l2_avx512(a, b) };
        }
        if crate::kernels::has_avx2() {
            // SAFETY: the CPU supports AVX2 and FMA (checked just above).
            return unsafe { l2_avx2_fma(a, b) };
        }
    }
    l2(a, b)
}

/// Dot product over the common length of `a` and `b`, in a free order.
#[allow(unsafe_code)]
pub fn dot_free(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU supports AVX-512F (checked just above).
            return unsafe { dot_avx512(a, b) };
        }
        if crate::kernels::has_avx2() {
            // SAFETY: the CPU supports AVX2 and FMA (checked just above).
            return unsafe { dot_avx2_fma(a, b) };
        }
    }
    dot(a, b)
}

/// The AVX-512 frame: `term(x, y, acc)` folds 16 pairs into an accumulator; four
/// accumulators over 64 values a step, then 16 at a time, then the masked rest.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[target_feature(enable = "avx512f")]
#[inline]
fn frame_avx512(
    a: &[f32],
    b: &[f32],
    term: impl Fn(
        std::arch::x86_64::__m512,
        std::arch::x86_64::__m512,
        std::arch::x86_64::__m512,
    ) -> std::arch::x86_64::__m512,
) -> f32 {
    use std::arch::x86_64::*;
    let n = a.len().min(b.len());
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    let mut acc = [_mm512_setzero_ps(); 4];
    let mut i = 0;
    // SAFETY (every load below): offsets stay below `n`, the common length of `a` and
    // `b` (a step of 64 / 16 runs only when that many values are left; the masked load
    // reads only the `n - i < 16` values left).
    unsafe {
        while i + 64 <= n {
            for (k, s) in acc.iter_mut().enumerate() {
                let x = _mm512_loadu_ps(pa.add(i + 16 * k));
                let y = _mm512_loadu_ps(pb.add(i + 16 * k));
                *s = term(x, y, *s);
            }
            i += 64;
        }
        while i + 16 <= n {
            acc[0] = term(
                _mm512_loadu_ps(pa.add(i)),
                _mm512_loadu_ps(pb.add(i)),
                acc[0],
            );
            i += 16;
        }
        if i < n {
            let m: __mmask16 = (1u16 << (n - i)) - 1;
            let x = _mm512_maskz_loadu_ps(m, pa.add(i));
            let y = _mm512_maskz_loadu_ps(m, pb.add(i));
            acc[1] = term(x, y, acc[1]);
        }
    }
    let s = _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3]));
    _mm512_reduce_add_ps(s)
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[target_feature(enable = "avx512f")]
fn l2_avx512(a: &[f32], b: &[f32]) -> f32 {
    use std::arch::x86_64::*;
    frame_avx512(a, b, |x, y, acc| {
        let d = _mm512_sub_ps(x, y);
        _mm512_fmadd_ps(d, d, acc)
    })
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[target_feature(enable = "avx512f")]
fn dot_avx512(a: &[f32], b: &[f32]) -> f32 {
    use std::arch::x86_64::*;
    frame_avx512(a, b, |x, y, acc| _mm512_fmadd_ps(x, y, acc))
}

/// The AVX2 frame: four 8-lane accumulators over 32 values a step, then 8 at a time,
/// then the rest one by one.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[target_feature(enable = "avx2,fma")]
#[inline]
fn frame_avx2(
    a: &[f32],
    b: &[f32],
    term: impl Fn(
        std::arch::x86_64::__m256,
        std::arch::x86_64::__m256,
        std::arch::x86_64::__m256,
    ) -> std::arch::x86_64::__m256,
    tail: impl Fn(f32, f32) -> f32,
) -> f32 {
    use std::arch::x86_64::*;
    let n = a.len().min(b.len());
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    let mut acc = [_mm256_setzero_ps(); 4];
    let mut i = 0;
    // SAFETY (every load below): a step of 32 / 8 runs only when that many values are
    // left of the common length `n`.
    unsafe {
        while i + 32 <= n {
            for (k, s) in acc.iter_mut().enumerate() {
                let x = _mm256_loadu_ps(pa.add(i + 8 * k));
                let y = _mm256_loadu_ps(pb.add(i + 8 * k));
                *s = term(x, y, *s);
            }
            i += 32;
        }
        while i + 8 <= n {
            acc[0] = term(
                _mm256_loadu_ps(pa.add(i)),
                _mm256_loadu_ps(pb.add(i)),
                acc[0],
            );
            i += 8;
        }
    }
    let s = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
    let mut lanes = [0f32; 8];
    // SAFETY: `lanes` holds 8 f32.
    unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), s) };
    let mut total: f32 = lanes.iter().sum();
    for (x, y) in a[i..n].iter().zip(&b[i..n]) {
        total += tail(*x, *y);
    }
    total
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[target_feature(enable = "avx2,fma")]
fn l2_avx2_fma(a: &[f32], b: &[f32]) -> f32 {
    use std::arch::x86_64::*;
    frame_avx2(
        a,
        b,
        |x, y, acc| {
            let d = _mm256_sub_ps(x, y);
            _mm256_fmadd_ps(d, d, acc)
        },
        |x, y| (x - y) * (x - y),
    )
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[target_feature(enable = "avx2,fma")]
fn dot_avx2_fma(a: &[f32], b: &[f32]) -> f32 {
    use std::arch::x86_64::*;
    frame_avx2(a, b, |x, y, acc| _mm256_fmadd_ps(x, y, acc), |x, y| x * y)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every length from 0 to 200 (each remainder of every step), values of mixed
    /// sign and size, the second slice longer and the other way round: within a
    /// relative 1e-5 of an `f64` sum, in both kernels and in the AVX2 frame directly
    /// (whichever the dispatch picks on this CPU).
    #[test]
    #[allow(unsafe_code)]
    fn free_order_kernels_agree_with_an_exact_sum() {
        let mut s = 7u64;
        let mut draw = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 33) as f32 / (1u64 << 31) as f32 - 0.5) * 8.0
        };
        for n in 0..=200 {
            let a: Vec<f32> = (0..n).map(|_| draw()).collect();
            let b: Vec<f32> = (0..n + 3).map(|_| draw()).collect();
            let l2_exact: f64 = a
                .iter()
                .zip(&b)
                .map(|(x, y)| f64::from(x - y).powi(2))
                .sum();
            let dot_exact: f64 = a
                .iter()
                .zip(&b)
                .map(|(x, y)| f64::from(*x) * f64::from(*y))
                .sum();
            let close = |got: f32, want: f64, scale: f64| {
                (f64::from(got) - want).abs() <= 1e-5 * scale.max(1.0)
            };
            let mag: f64 = a
                .iter()
                .zip(&b)
                .map(|(x, y)| f64::from((x * y).abs()))
                .sum();
            assert!(close(l2_free(&a, &b), l2_exact, l2_exact), "l2 n {n}");
            assert!(close(dot_free(&a, &b), dot_exact, mag), "dot n {n}");
            assert!(
                close(l2_free(&b, &a), l2_exact, l2_exact),
                "l2 swapped n {n}"
            );
            assert!(close(dot_free(&b, &a), dot_exact, mag), "dot swapped n {n}");
            #[cfg(target_arch = "x86_64")]
            if crate::kernels::has_avx2() {
                // SAFETY: AVX2 and FMA checked just above.
                let (l, d) = unsafe { (l2_avx2_fma(&a, &b), dot_avx2_fma(&a, &b)) };
                assert!(close(l, l2_exact, l2_exact), "avx2 l2 n {n}");
                assert!(close(d, dot_exact, mag), "avx2 dot n {n}");
            }
        }
    }
}
