//! k-means as the IVF and PQ trainers use it (reference defaults: format guide "Vector
//! Indices" → IVF training; `docs/vector-index-format.md` §7): random initialization on
//! the training sample, Lloyd iterations until the loss improves by less than `tolerance`
//! (relative) or `max_iters`, an empty cluster takes half of the largest one
//! ([`split_largest`]). Assignment runs on all cores.
//!
//! Two geometries: squared L2 (l2, and cosine on normalized vectors), and spherical
//! (dot: maximize `x·c` with unit-norm centroids, as pylance 14 trains dot indexes).

use crate::distance::{dot, l2};

/// The clustering objective.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Geometry {
    /// Minimize squared Euclidean distance.
    L2,
    /// Maximize the dot product with unit-norm centroids.
    Spherical,
}

/// Training settings.
#[derive(Clone, Copy, Debug)]
pub struct KMeansParams {
    /// Clusters.
    pub k: usize,
    /// Iterations at most.
    pub max_iters: usize,
    /// Stop when the loss improves by less than this fraction.
    pub tolerance: f64,
    /// Seed of the initialization.
    pub seed: u64,
    /// The objective.
    pub geometry: Geometry,
    /// Whether merge-and-split moves follow the iterations (squared L2 only; see
    /// `merge_split`): for IVF partitions, where a group of vectors cut in two costs
    /// recall at few probes.
    pub merge_split: bool,
}

/// A small deterministic generator (xorshift64*), enough for seeding and sampling.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (any value; distinct seeds start distinct streams: the
    /// seed is mixed by SplitMix64's finalizer, xorshift needs a non-zero state).
    pub fn new(seed: u64) -> Self {
        let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        Self(if z == 0 { 0x9e37_79b9_7f4a_7c15 } else { z })
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A uniform value in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// A uniform value in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn score(geometry: Geometry, x: &[f32], c: &[f32]) -> f32 {
    match geometry {
        Geometry::L2 => l2(x, c),
        Geometry::Spherical => 1.0 - dot(x, c),
    }
}

/// Centroids laid out for scoring one short vector against all of them at once:
/// transposed (`dim × k`), so the inner loop runs over centroids and vectorizes (PQ
/// sub-vectors are 4–32 values; one kernel call per centroid would cost more than the
/// arithmetic).
#[derive(Debug)]
pub struct Transposed {
    cols: Vec<f32>,
    /// Squared norm of each centroid.
    norms: Vec<f32>,
    k: usize,
    dim: usize,
}

impl Transposed {
    /// Lays out `centroids` (`k × dim`, row-major).
    pub fn new(centroids: &[f32], dim: usize) -> Self {
        let k = centroids.len() / dim.max(1);
        let mut cols = vec![0f32; k * dim];
        for (j, c) in centroids.chunks_exact(dim).enumerate() {
            for (i, &v) in c.iter().enumerate() {
                cols[i * k + j] = v;
            }
        }
        let norms = centroids.chunks_exact(dim).map(|c| dot(c, c)).collect();
        Self {
            cols,
            norms,
            k,
            dim,
        }
    }

    /// The score of `x` against every centroid into `out` (`k` values): squared L2, or
    /// for the spherical geometry `1 - x·c`.
    pub fn scores(&self, x: &[f32], geometry: Geometry, out: &mut [f32]) {
        out.iter_mut().for_each(|s| *s = 0.0);
        for (i, &xi) in x.iter().enumerate().take(self.dim) {
            let col = &self.cols[i * self.k..(i + 1) * self.k];
            match geometry {
                Geometry::L2 => {
                    for (s, &c) in out.iter_mut().zip(col) {
                        let d = xi - c;
                        *s += d * d;
                    }
                }
                Geometry::Spherical => {
                    for (s, &c) in out.iter_mut().zip(col) {
                        *s -= xi * c;
                    }
                }
            }
        }
        if geometry == Geometry::Spherical {
            out.iter_mut().for_each(|s| *s += 1.0);
        }
    }

    /// The nearest centroid to `x` (first on ties) and its score, using `scratch`
    /// (`k` values). L2 ranks by `‖c‖² − 2x·c` (one multiply-add per value; the score
    /// returned adds `‖x‖²` back), so near-ties may resolve differently from an exact
    /// distance — fine for training and encoding, not used for reported distances.
    #[allow(unsafe_code)]
    pub fn nearest(&self, x: &[f32], geometry: Geometry, scratch: &mut Vec<f32>) -> (u32, f32) {
        scratch.clear();
        scratch.resize(self.k, 0.0);
        #[cfg(target_arch = "x86_64")]
        if crate::distance::has_avx2() {
            // SAFETY: the CPU supports AVX2 and FMA (checked just above).
            return unsafe { self.nearest_avx2(x, geometry, scratch) };
        }
        self.nearest_body(x, geometry, scratch)
    }

    #[cfg(target_arch = "x86_64")]
    #[allow(unsafe_code)]
    #[target_feature(enable = "avx2,fma")]
    fn nearest_avx2(&self, x: &[f32], geometry: Geometry, scratch: &mut [f32]) -> (u32, f32) {
        self.nearest_body(x, geometry, scratch)
    }

    #[inline(always)]
    fn nearest_body(&self, x: &[f32], geometry: Geometry, scratch: &mut [f32]) -> (u32, f32) {
        // Blocks of 64 centroids keep their sums in registers across the dimensions.
        const B: usize = 64;
        let (k, dim) = (self.k, self.dim.min(x.len()));
        let full = k / B * B;
        for jb in (0..full).step_by(B) {
            let mut acc = [0f32; B];
            for (i, &xi) in x.iter().enumerate().take(dim) {
                let col = &self.cols[i * k + jb..i * k + jb + B];
                for t in 0..B {
                    acc[t] += xi * col[t];
                }
            }
            scratch[jb..jb + B].copy_from_slice(&acc);
        }
        for (i, &xi) in x.iter().enumerate().take(dim) {
            let col = &self.cols[i * k + full..(i + 1) * k];
            for (s, &c) in scratch[full..].iter_mut().zip(col) {
                *s += xi * c;
            }
        }
        self.pick(x, geometry, scratch)
    }

    /// The nearest centroid from the dot products `scratch` (`k` values) of `x`
    /// with every centroid: scores in place, then the minimum and its first position
    /// (two passes that vectorize; a running argmin branches on every centroid).
    #[inline(always)]
    fn pick(&self, x: &[f32], geometry: Geometry, scratch: &mut [f32]) -> (u32, f32) {
        match geometry {
            Geometry::L2 => {
                for (d, &n) in scratch.iter_mut().zip(&self.norms) {
                    *d = n - 2.0 * *d;
                }
            }
            Geometry::Spherical => {
                for d in scratch.iter_mut() {
                    *d = 1.0 - *d;
                }
            }
        }
        let min = scratch.iter().copied().fold(f32::INFINITY, f32::min);
        let j = scratch.iter().position(|&v| v == min).unwrap_or(0);
        let mut best = (j as u32, min);
        if geometry == Geometry::L2 {
            let xx: f32 = x.iter().map(|v| v * v).sum();
            best.1 = (best.1 + xx).max(0.0);
        }
        best
    }
}

impl Transposed {
    /// [`Self::nearest`] of every vector of `xs` (`n × dim`) into `out` (`n` slots),
    /// several vectors at a time: each block of centroids' columns, loaded once, is
    /// multiplied with 4 (AVX2) or 6 (AVX-512) vectors, whose sums stay in registers.
    /// Every (vector, centroid) sum is the same additions in the same order as
    /// [`Self::nearest`] makes, so the answers are identical (tested); measured on
    /// 256 × 128-d centroids, 22–24 (AVX2) and 26–31 (AVX-512) against 17 billion
    /// multiply-adds per second and core one vector at a time.
    #[allow(unsafe_code)]
    pub fn nearest_many(&self, xs: &[f32], geometry: Geometry, out: &mut [(u32, f32)]) {
        let dim = self.dim.max(1);
        let mut scratch = Vec::new();
        let mut done = 0;
        #[cfg(target_arch = "x86_64")]
        if xs.len() >= dim * out.len() {
            if std::arch::is_x86_feature_detected!("avx512f") && self.k >= 64 {
                // SAFETY: the CPU supports AVX-512F (checked just above).
                done = unsafe { self.many_avx512(xs, geometry, out, &mut scratch) };
            } else if crate::distance::has_avx2() && self.k >= 16 {
                // SAFETY: the CPU supports AVX2 and FMA (checked just above).
                done = unsafe { self.many_avx2(xs, geometry, out, &mut scratch) };
            }
        }
        for (slot, x) in out[done..]
            .iter_mut()
            .zip(xs[done * dim..].chunks_exact(dim))
        {
            *slot = self.nearest(x, geometry, &mut scratch);
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[allow(unsafe_code)]
    #[target_feature(enable = "avx512f")]
    fn many_avx512(
        &self,
        xs: &[f32],
        geometry: Geometry,
        out: &mut [(u32, f32)],
        scratch: &mut Vec<f32>,
    ) -> usize {
        self.many_body::<6, 64>(xs, geometry, out, scratch)
    }

    #[cfg(target_arch = "x86_64")]
    #[allow(unsafe_code)]
    #[target_feature(enable = "avx2,fma")]
    fn many_avx2(
        &self,
        xs: &[f32],
        geometry: Geometry,
        out: &mut [(u32, f32)],
        scratch: &mut Vec<f32>,
    ) -> usize {
        self.many_body::<4, 16>(xs, geometry, out, scratch)
    }

    /// Groups of `V` vectors against blocks of `B` centroids (the centroids past the
    /// last whole block one vector at a time); returns the vectors done (a multiple of
    /// `V`).
    #[inline(always)]
    #[allow(clippy::needless_range_loop)] // indices across four arrays, kept in registers
    fn many_body<const V: usize, const B: usize>(
        &self,
        xs: &[f32],
        geometry: Geometry,
        out: &mut [(u32, f32)],
        scratch: &mut Vec<f32>,
    ) -> usize {
        let (k, dim) = (self.k, self.dim);
        let full = k / B * B;
        let groups = out.len() / V;
        scratch.clear();
        scratch.resize(V * k, 0.0);
        for g in 0..groups {
            let base = g * V * dim;
            let x: [&[f32]; V] = std::array::from_fn(|v| &xs[base + v * dim..base + (v + 1) * dim]);
            for jb in (0..full).step_by(B) {
                let mut acc = [[0f32; B]; V];
                for i in 0..dim {
                    let col = &self.cols[i * k + jb..i * k + jb + B];
                    for v in 0..V {
                        let xi = x[v][i];
                        for t in 0..B {
                            acc[v][t] += xi * col[t];
                        }
                    }
                }
                for (v, a) in acc.iter().enumerate() {
                    scratch[v * k + jb..v * k + jb + B].copy_from_slice(a);
                }
            }
            for v in 0..V {
                let s = &mut scratch[v * k..(v + 1) * k];
                s[full..].iter_mut().for_each(|d| *d = 0.0);
                for (i, &xi) in x[v].iter().enumerate() {
                    let col = &self.cols[i * k + full..(i + 1) * k];
                    for (d, &c) in s[full..].iter_mut().zip(col) {
                        *d += xi * c;
                    }
                }
                out[g * V + v] = self.pick(x[v], geometry, s);
            }
        }
        groups * V
    }
}

/// Vectors at most this long are always scored through [`Transposed`] (longer ones
/// too when there are at least 64 centroids: a block of 64 sums stays in registers).
const SHORT: usize = 32;

/// The nearest centroid of each vector and its distance, on all cores.
pub fn assign(data: &[f32], dim: usize, centroids: &[f32], geometry: Geometry) -> Vec<(u32, f32)> {
    let n = data.len() / dim.max(1);
    let mut out = vec![(0u32, 0f32); n];
    let short = (dim <= SHORT || centroids.len() / dim.max(1) >= 64)
        .then(|| Transposed::new(centroids, dim));
    let short = short.as_ref();
    let threads = lancer_util::cores();
    let per = n.div_ceil(threads.max(1)).max(1024);
    std::thread::scope(|s| {
        for (chunk, rows) in out.chunks_mut(per).zip(data.chunks(per * dim)) {
            s.spawn(move || {
                if let Some(t) = short {
                    t.nearest_many(rows, geometry, chunk);
                    return;
                }
                for (slot, x) in chunk.iter_mut().zip(rows.chunks_exact(dim)) {
                    let mut best = (0u32, f32::INFINITY);
                    for (j, c) in centroids.chunks_exact(dim).enumerate() {
                        let d = score(geometry, x, c);
                        if d < best.1 {
                            best = (j as u32, d);
                        }
                    }
                    *slot = best;
                }
            });
        }
    });
    out
}

fn normalize(v: &mut [f32]) {
    let n = dot(v, v).sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
}

/// Random initialization (the reference's): `k` distinct points drawn at random.
fn random_init(data: &[f32], dim: usize, k: usize, rng: &mut Rng) -> Vec<f32> {
    let n = data.len() / dim;
    let mut idx: Vec<usize> = (0..n).collect();
    for i in 0..k.min(n) {
        let j = i + rng.below(n - i);
        idx.swap(i, j);
    }
    idx[..k.min(n)]
        .iter()
        .flat_map(|&p| data[p * dim..(p + 1) * dim].iter().copied())
        .collect()
}

/// Gives every empty cluster half of the currently largest one (the reference's and
/// FAISS's rule for empty clusters, with the largest cluster chosen every time rather
/// than drawn by size): the empty centroid becomes a copy of the largest one nudged by
/// +-1/1024 on alternating coordinates, the largest one nudged the opposite way, so the
/// next assignment splits its points between them. On clustered data this keeps "hub"
/// centroids (means of several far-apart groups, which sit nearer to everything) from
/// collecting ever more rows: on 200k x 768-d bench data the rows scanned per query at
/// 1 / 4 probes fell from ~2,690 / ~20,980 (empty clusters re-seeded elsewhere) to
/// ~2,110 / ~14,570.
fn split_largest(centroids: &mut [f32], counts: &mut [usize], dim: usize, geometry: Geometry) {
    const EPS: f32 = 1.0 / 1024.0;
    for j in 0..counts.len() {
        if counts[j] != 0 {
            continue;
        }
        let Some(big) = (0..counts.len()).max_by_key(|&i| (counts[i], std::cmp::Reverse(i))) else {
            return;
        };
        if counts[big] < 2 {
            return;
        }
        counts[j] = counts[big] / 2;
        counts[big] -= counts[j];
        for d in 0..dim {
            let v = centroids[big * dim + d];
            let (mine, theirs) = if d % 2 == 0 {
                (1.0 + EPS, 1.0 - EPS)
            } else {
                (1.0 - EPS, 1.0 + EPS)
            };
            centroids[j * dim + d] = v * mine;
            centroids[big * dim + d] = v * theirs;
        }
        if geometry == Geometry::Spherical {
            normalize(&mut centroids[j * dim..(j + 1) * dim]);
            normalize(&mut centroids[big * dim..(big + 1) * dim]);
        }
    }
}

/// Trains `params.k` centroids (`k × dim`, row-major) on `data` (`n × dim`); returns
/// them and the final loss (sum of distances to the assigned centroids). With fewer
/// points than clusters, points are repeated as centroids.
pub fn train(data: &[f32], dim: usize, params: &KMeansParams) -> (Vec<f32>, f64) {
    train_observed(data, dim, params, &|_| {})
}

/// [`train`], calling `on_iteration(i)` after each Lloyd iteration `i` (from 1).
pub fn train_observed(
    data: &[f32],
    dim: usize,
    params: &KMeansParams,
    on_iteration: &dyn Fn(usize),
) -> (Vec<f32>, f64) {
    let n = data.len() / dim.max(1);
    let k = params.k.max(1);
    if n == 0 {
        return (vec![0.0; k * dim], 0.0);
    }
    let mut rng = Rng::new(params.seed);
    let centroids = if n <= k {
        (0..k)
            .flat_map(|i| data[(i % n) * dim..(i % n + 1) * dim].iter().copied())
            .collect()
    } else {
        random_init(data, dim, k, &mut rng)
    };
    refine(data, dim, centroids, params, on_iteration)
}

/// Lloyd iterations (and merge-and-split, when asked) from the given `init` centroids
/// (`params.k × dim`, row-major) instead of random ones: pylance's `KMeans(centroids=)`.
/// `data` must not be empty.
pub fn train_from(
    data: &[f32],
    dim: usize,
    init: Vec<f32>,
    params: &KMeansParams,
) -> (Vec<f32>, f64) {
    refine(data, dim, init, params, &|_| {})
}

fn refine(
    data: &[f32],
    dim: usize,
    mut centroids: Vec<f32>,
    params: &KMeansParams,
    on_iteration: &dyn Fn(usize),
) -> (Vec<f32>, f64) {
    let n = data.len() / dim.max(1);
    let k = centroids.len() / dim.max(1);
    if params.geometry == Geometry::Spherical {
        centroids.chunks_exact_mut(dim).for_each(normalize);
    }
    let mut last = f64::INFINITY;
    let mut loss = 0.0;
    for iteration in 1..=params.max_iters.max(1) {
        loss = lloyd_step(data, dim, &mut centroids, params.geometry);
        on_iteration(iteration);
        if last.is_finite()
            && (last - loss).abs() <= params.tolerance * last.abs().max(f64::MIN_POSITIVE)
        {
            break;
        }
        last = loss;
    }
    if params.merge_split && params.geometry == Geometry::L2 && n > k {
        if let Some((moved, after)) = merge_split(data, dim, &centroids, loss) {
            return (moved, after);
        }
    }
    (centroids, loss)
}

/// One Lloyd iteration: assigns `data` to `centroids`, moves each centroid to the mean
/// of its points (empty ones take half of the largest: [`split_largest`]); returns the
/// loss of the assignment.
fn lloyd_step(data: &[f32], dim: usize, centroids: &mut [f32], geometry: Geometry) -> f64 {
    let k = centroids.len() / dim.max(1);
    let a = assign(data, dim, centroids, geometry);
    let loss = a.iter().map(|&(_, d)| f64::from(d)).sum();
    let mut sums = vec![0f64; k * dim];
    let mut counts = vec![0usize; k];
    for (x, &(j, _)) in data.chunks_exact(dim).zip(&a) {
        let j = j as usize;
        counts[j] += 1;
        for (s, &v) in sums[j * dim..(j + 1) * dim].iter_mut().zip(x) {
            *s += f64::from(v);
        }
    }
    for j in 0..k {
        if counts[j] == 0 {
            continue;
        }
        let c = &mut centroids[j * dim..(j + 1) * dim];
        for (cv, s) in c.iter_mut().zip(&sums[j * dim..(j + 1) * dim]) {
            *cv = (s / counts[j] as f64) as f32;
        }
        if geometry == Geometry::Spherical {
            normalize(c);
        }
    }
    split_largest(centroids, &mut counts, dim, geometry);
    loss
}

/// Merge-and-split moves after training (squared L2): Lloyd's iterations cannot undo
/// two centroids started in one group of points (they cut it in two, while elsewhere
/// one centroid sits between several groups). Centroids much nearer to their nearest
/// other centroid than is usual (under a quarter of the median such distance) are
/// merged in pairs; each freed centroid restarts at the point farthest from its
/// centroid in the partitions of largest squared error, one per pair; a few Lloyd
/// iterations follow, and the moves are kept only if the loss fell below `loss`.
/// On the 200k x 768-d bench data (1,000 Gaussian groups, 256 partitions) a replica
/// of this (`bench/kmeans_replica.py SWAP=`) took recall@10 at 1 probe from 0.997 to
/// 1.000 while the rows scanned per query fell (largest partition 5,124 -> 4,372).
/// None when no pair is that near, or the moves did not help. Skipped when the pair
/// search would cost over ~2 G multiply-adds (k² · dim).
fn merge_split(data: &[f32], dim: usize, centroids: &[f32], loss: f64) -> Option<(Vec<f32>, f64)> {
    const STEPS: usize = 4;
    let k = centroids.len() / dim.max(1);
    if k < 4 || (k * k).saturating_mul(dim) > 2_000_000_000 {
        return None;
    }
    // each centroid's nearest other one (squared distance)
    let near: Vec<(u32, f32)> = {
        let t = Transposed::new(centroids, dim);
        let mut scratch = vec![0f32; k];
        (0..k)
            .map(|i| {
                let c = &centroids[i * dim..(i + 1) * dim];
                t.scores(c, Geometry::L2, &mut scratch);
                let mut best = (u32::MAX, f32::INFINITY);
                for (j, &d) in scratch.iter().enumerate() {
                    if j != i && d < best.1 {
                        best = (j as u32, d);
                    }
                }
                best
            })
            .collect()
    };
    let mut sorted: Vec<f32> = near.iter().map(|n| n.1).filter(|d| d.is_finite()).collect();
    if sorted.len() < k / 2 {
        return None;
    }
    sorted.sort_by(f32::total_cmp);
    let limit = sorted[sorted.len() / 2] / 16.0; // (a quarter of the distance, squared)
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    let mut used = vec![false; k];
    let mut order: Vec<usize> = (0..k).collect();
    order.sort_by(|&a, &b| near[a].1.total_cmp(&near[b].1));
    for i in order {
        let (j, d) = (near[i].0 as usize, near[i].1);
        if d.partial_cmp(&limit) != Some(std::cmp::Ordering::Less) || j >= k || used[i] || used[j] {
            continue;
        }
        used[i] = true;
        used[j] = true;
        pairs.push((i, j));
    }
    if pairs.is_empty() {
        return None;
    }
    let a = assign(data, dim, centroids, Geometry::L2);
    let mut counts = vec![0usize; k];
    let mut sse = vec![0f64; k];
    // each partition's point farthest from its centroid (the last of equals)
    let mut far: Vec<Option<(usize, f32)>> = vec![None; k];
    for (r, &(j, d)) in a.iter().enumerate() {
        let j = j as usize;
        counts[j] += 1;
        sse[j] += f64::from(d);
        if far[j].is_none_or(|(_, f)| d.total_cmp(&f) != std::cmp::Ordering::Less) {
            far[j] = Some((r, d));
        }
    }
    let mut moved = centroids.to_vec();
    let mut big: Vec<usize> = (0..k).filter(|&j| !used[j]).collect();
    big.sort_by(|&x, &y| sse[y].total_cmp(&sse[x]));
    for (&(i, j), &b) in pairs.iter().zip(&big) {
        let (ni, nj) = (counts[i] as f32, counts[j] as f32);
        let w = if ni + nj > 0.0 { ni / (ni + nj) } else { 0.5 };
        for d in 0..dim {
            moved[i * dim + d] = w * centroids[i * dim + d] + (1.0 - w) * centroids[j * dim + d];
        }
        let (far, _) = far[b]?;
        moved[j * dim..(j + 1) * dim].copy_from_slice(&data[far * dim..(far + 1) * dim]);
    }
    for _ in 0..STEPS {
        lloyd_step(data, dim, &mut moved, Geometry::L2);
    }
    let after: f64 = assign(data, dim, &moved, Geometry::L2)
        .iter()
        .map(|&(_, d)| f64::from(d))
        .sum();
    (after < loss).then_some((moved, after))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_split_reunites_a_cut_group_and_splits_a_shared_centroid() {
        // 6 far-apart groups of 200 points in 8-d; centroids: two inside group 0 (it is
        // cut in two), one between groups 1 and 2 (shared), one at each of 3, 4, 5
        let (dim, per) = (8usize, 200usize);
        let mut rng = Rng::new(3);
        let centres: Vec<Vec<f32>> = (0..6)
            .map(|g| (0..dim).map(|d| if d == g { 40.0 } else { 0.0 }).collect())
            .collect();
        let mut data = Vec::new();
        for c in &centres {
            for _ in 0..per {
                data.extend(c.iter().map(|&v| v + (rng.unit() as f32 - 0.5) * 2.0));
            }
        }
        let mut cs: Vec<f32> = Vec::new();
        cs.extend(centres[0].iter().map(|v| v + 0.5));
        cs.extend(centres[0].iter().map(|v| v - 0.5));
        cs.extend(
            centres[1]
                .iter()
                .zip(&centres[2])
                .map(|(a, b)| (a + b) / 2.0),
        );
        for c in &centres[3..] {
            cs.extend(c.iter().copied());
        }
        let before: f64 = assign(&data, dim, &cs, Geometry::L2)
            .iter()
            .map(|&(_, d)| f64::from(d))
            .sum();
        let (moved, after) = merge_split(&data, dim, &cs, before).expect("a move that helps");
        assert!(after < before / 10.0, "loss {before} -> {after}");
        // every group whole under one centroid of its own
        let a = assign(&data, dim, &moved, Geometry::L2);
        let mut owners: Vec<u32> = Vec::new();
        for g in 0..6 {
            let first = a[g * per].0;
            assert!(
                a[g * per..(g + 1) * per].iter().all(|x| x.0 == first),
                "group {g} cut"
            );
            owners.push(first);
        }
        owners.sort_unstable();
        owners.dedup();
        assert_eq!(owners.len(), 6, "groups sharing a centroid");
        // nothing to do on that answer
        assert!(merge_split(&data, dim, &moved, after).is_none());
    }

    #[test]
    fn distinct_seeds_start_distinct_streams() {
        // neighbouring seeds (2 and 3, 0 and 1) once collapsed into one state
        let firsts: Vec<u64> = (0..64).map(|s| Rng::new(s).next_u64()).collect();
        let mut unique = firsts.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), firsts.len());
        assert_eq!(Rng::new(7).next_u64(), Rng::new(7).next_u64());
    }

    #[test]
    fn finds_well_separated_clusters() {
        let mut rng = Rng::new(5);
        let centers = [[0.0f32, 0.0], [10.0, 10.0], [-10.0, 10.0]];
        let mut data = Vec::new();
        for i in 0..600 {
            let c = centers[i % 3];
            data.push(c[0] + rng.unit() as f32 - 0.5);
            data.push(c[1] + rng.unit() as f32 - 0.5);
        }
        let p = KMeansParams {
            k: 3,
            max_iters: 50,
            tolerance: 1e-4,
            seed: 1,
            geometry: Geometry::L2,
            merge_split: false,
        };
        let (c, loss) = train(&data, 2, &p);
        for want in centers {
            let near = c.chunks_exact(2).any(|x| l2(x, &want) < 0.1);
            assert!(near, "no centroid near {want:?}: {c:?}");
        }
        assert!(loss < 600.0 * 0.5, "loss {loss}");
    }

    #[test]
    fn many_at_a_time_answers_as_one_at_a_time() {
        let mut rng = Rng::new(11);
        for (k, dim, n) in [
            (256usize, 128usize, 50usize),
            (70, 24, 13),
            (16, 8, 7),
            (64, 3, 9),
            (5, 16, 11),
        ] {
            let centroids: Vec<f32> = (0..k * dim)
                .map(|_| rng.unit() as f32 * 8.0 - 4.0)
                .collect();
            let xs: Vec<f32> = (0..n * dim)
                .map(|_| rng.unit() as f32 * 8.0 - 4.0)
                .collect();
            let t = Transposed::new(&centroids, dim);
            for geometry in [Geometry::L2, Geometry::Spherical] {
                let mut scratch = Vec::new();
                let one: Vec<(u32, f32)> = xs
                    .chunks_exact(dim)
                    .map(|x| t.nearest(x, geometry, &mut scratch))
                    .collect();
                let mut many = vec![(0u32, 0f32); n];
                t.nearest_many(&xs, geometry, &mut many);
                for (a, b) in one.iter().zip(&many) {
                    assert_eq!(
                        (a.0, a.1.to_bits()),
                        (b.0, b.1.to_bits()),
                        "k {k} dim {dim}"
                    );
                }
            }
        }
    }

    #[test]
    fn spherical_centroids_are_unit_and_fewer_points_than_clusters_work() {
        let data = [1.0f32, 0.0, 0.0, 2.0, 3.0, 3.0];
        let p = KMeansParams {
            k: 5,
            max_iters: 5,
            tolerance: 1e-4,
            seed: 1,
            geometry: Geometry::Spherical,
            merge_split: false,
        };
        let (c, _) = train(&data, 2, &p);
        assert_eq!(c.len(), 10);
        for x in c.chunks_exact(2) {
            assert!((dot(x, x) - 1.0).abs() < 1e-5);
        }
    }

    #[test]
    fn an_empty_cluster_takes_half_of_the_largest() {
        let mut c = vec![0.0f32, 0.0, 2.0, 4.0, 9.0, 9.0, 1.0, 1.0];
        let mut counts = vec![0, 10, 4, 0];
        split_largest(&mut c, &mut counts, 2, Geometry::L2);
        // The first empty one (0) halves cluster 1 (10 -> 5 + 5); the second (3) then
        // halves the lowest-indexed of the tied largest, cluster 0 (5 -> 3 + 2).
        assert_eq!(counts, vec![3, 5, 4, 2]);
        let e = 1.0 / 1024.0;
        assert_eq!(&c[2..4], &[2.0 * (1.0 - e), 4.0 * (1.0 + e)]);
        let first = [2.0 * (1.0 + e), 4.0 * (1.0 - e)];
        assert_eq!(&c[6..8], &[first[0] * (1.0 + e), first[1] * (1.0 - e)]);
        assert_eq!(&c[0..2], &[first[0] * (1.0 - e), first[1] * (1.0 + e)]);
        assert_eq!(&c[4..6], &[9.0, 9.0]);
        // The centroids now differ, so the next assignment splits the rows.
        assert_ne!(&c[2..4], &c[0..2]);
        assert_ne!(&c[6..8], &c[0..2]);
        // Nothing to split: a single row.
        let mut one = vec![1.0f32, 2.0, 0.0, 0.0];
        let mut counts = vec![1, 0];
        split_largest(&mut one, &mut counts, 2, Geometry::L2);
        assert_eq!(counts, vec![1, 0]);
    }

    #[test]
    fn clustered_data_leaves_no_cluster_empty() {
        // The bench's shape in small: 500 groups (centres at 4x the spread of their
        // points, in 64 dimensions), 128 clusters. Groups without a seed go to "hub"
        // centroids (means of several groups, nearer to everything), and a centroid
        // can lose all its rows to them. With this seed, leaving such a cluster empty
        // ends with one empty cluster and a largest of 352 rows; splitting the largest
        // cluster for it ends with none empty and a largest of 349.
        let (dim, groups, per, k) = (64usize, 500usize, 16usize, 128usize);
        let mut rng = Rng::new(7);
        let mut normal = || (0..12).map(|_| rng.unit() as f32).sum::<f32>() - 6.0;
        let centres: Vec<f32> = (0..groups * dim).map(|_| normal() * 4.0).collect();
        let mut data = Vec::with_capacity(dim * groups * per);
        for g in 0..groups {
            for _ in 0..per {
                for d in 0..dim {
                    data.push(centres[g * dim + d] + normal());
                }
            }
        }
        let p = KMeansParams {
            k,
            max_iters: 50,
            tolerance: 1e-4,
            seed: 2,
            geometry: Geometry::L2,
            merge_split: false,
        };
        let (c, _) = train(&data, dim, &p);
        let mut sizes = vec![0usize; k];
        for &(j, _) in &assign(&data, dim, &c, Geometry::L2) {
            sizes[j as usize] += 1;
        }
        assert!(sizes.iter().all(|&s| s > 0), "{sizes:?}");
        assert!(*sizes.iter().max().unwrap() < 352, "{sizes:?}");
    }
}
