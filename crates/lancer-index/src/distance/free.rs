//! Distance kernels in a free summation order, for graph builds: squared L2 and dot
//! product as [`crate::distance`] defines them (format guide, "Vector Indices" →
//! distance types), summed in as many independent fused multiply-add chains as the CPU
//! keeps busy (four 16-lane AVX-512 registers, or four 8-lane AVX2 ones) instead of
//! [`crate::distance::l2`]'s fixed two-register order.
//!
//! The results differ from [`crate::distance::l2`] / [`crate::distance::dot`] in the last
//! bits (another rounding order), so they serve only where no answer has to equal a
//! search's or the reference's bit for bit: an HNSW build's neighbour choices, whose
//! distances are its own (at 768 dimensions the two-register chain's add latency bounds
//! a distance; with this and its prefetch change a 200k x 768 graph took 39.7 s
//! instead of 49.4 s to build).

use crate::distance::{dot, l2};

/// Squared L2 distance over the common length of `a` and `b`, in a free order.
pub fn l2_free(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if let Some(f) = pick(l2_avx512, l2_avx2_fma) {
        return f(a, b);
    }
    l2(a, b)
}

/// Dot product over the common length of `a` and `b`, in a free order.
pub fn dot_free(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if let Some(f) = pick(dot_avx512, dot_avx2_fma) {
        return f(a, b);
    }
    dot(a, b)
}

/// The build this CPU runs: AVX-512F, else AVX2 + FMA, else none (the caller's
/// fixed-order kernel).
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[inline]
fn pick(
    avx512: unsafe fn(&[f32], &[f32]) -> f32,
    avx2: unsafe fn(&[f32], &[f32]) -> f32,
) -> Option<impl Fn(&[f32], &[f32]) -> f32> {
    let f = if std::arch::is_x86_feature_detected!("avx512f") {
        avx512
    } else if crate::distance::has_avx2() {
        avx2
    } else {
        return None;
    };
    // SAFETY: `f` needs only the CPU features checked just above.
    Some(move |a: &[f32], b: &[f32]| unsafe { f(a, b) })
}

/// `W` independent fused multiply-add sums over the common length (`term(x, y, acc)`
/// folds one pair into a lane), reduced pairwise, then the rest one by one. Written for
/// the compiler to vectorize: compiled with AVX-512 (`W` = 64: four 16-lane registers)
/// or AVX2 + FMA (`W` = 32: four 8-lane ones); `mul_add` is one instruction there.
#[inline(always)]
fn body<const W: usize>(a: &[f32], b: &[f32], term: impl Fn(f32, f32, f32) -> f32) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0f32; W];
    let (ca, cb) = (a.chunks_exact(W), b.chunks_exact(W));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..W {
            acc[i] = term(x[i], y[i], acc[i]);
        }
    }
    let mut s = crate::distance::reduce(&acc);
    for (x, y) in ra.iter().zip(rb) {
        s = term(*x, *y, s);
    }
    s
}

#[inline(always)]
fn l2_term(x: f32, y: f32, acc: f32) -> f32 {
    let d = x - y;
    d.mul_add(d, acc)
}

#[inline(always)]
fn dot_term(x: f32, y: f32, acc: f32) -> f32 {
    x.mul_add(y, acc)
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[target_feature(enable = "avx512f")]
fn l2_avx512(a: &[f32], b: &[f32]) -> f32 {
    body::<64>(a, b, l2_term)
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[target_feature(enable = "avx512f")]
fn dot_avx512(a: &[f32], b: &[f32]) -> f32 {
    body::<64>(a, b, dot_term)
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[target_feature(enable = "avx2,fma")]
fn l2_avx2_fma(a: &[f32], b: &[f32]) -> f32 {
    body::<32>(a, b, l2_term)
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[target_feature(enable = "avx2,fma")]
fn dot_avx2_fma(a: &[f32], b: &[f32]) -> f32 {
    body::<32>(a, b, dot_term)
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
            if crate::distance::has_avx2() {
                // SAFETY: AVX2 and FMA checked just above.
                let (l, d) = unsafe { (l2_avx2_fma(&a, &b), dot_avx2_fma(&a, &b)) };
                assert!(close(l, l2_exact, l2_exact), "avx2 l2 n {n}");
                assert!(close(d, dot_exact, mag), "avx2 dot n {n}");
            }
        }
    }
}
