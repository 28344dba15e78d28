//! Stand-alone k-means over float32 vectors (pylance's `lance.util.KMeans`): the
//! trainer Lancer's IVF and PQ builds use, with the metric names of the vector indexes.
//!
//! `l2` minimizes squared Euclidean distance; `cosine` is `l2` on the vectors scaled to
//! unit length; `dot` maximizes the dot product with unit-length centroids (as pylance
//! trains dot indexes). Vectors are `n × dim` row-major slices.

use lancer_index::vector::kmeans::{self as km, Geometry, KMeansParams};

use crate::{Error, Result};

/// The distance a model clusters by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KMeansMetric {
    /// Squared Euclidean distance.
    L2,
    /// One minus the cosine similarity.
    Cosine,
    /// One minus the dot product.
    Dot,
}

impl KMeansMetric {
    /// The metric of a name (`l2` / `euclidean`, `cosine`, `dot`; any case).
    pub fn parse(name: &str) -> Result<Self> {
        match name.to_ascii_lowercase().as_str() {
            "l2" | "euclidean" => Ok(Self::L2),
            "cosine" => Ok(Self::Cosine),
            "dot" => Ok(Self::Dot),
            _ => Err(Error::InvalidArgument {
                what: format!("Invalid metric_type: {name}"),
            }),
        }
    }

    fn geometry(self) -> Geometry {
        match self {
            Self::Dot => Geometry::Spherical,
            Self::L2 | Self::Cosine => Geometry::L2,
        }
    }
}

fn unit(v: &[f32], dim: usize) -> Vec<f32> {
    let mut out = v.to_vec();
    for row in out.chunks_exact_mut(dim.max(1)) {
        let n = row.iter().map(|x| x * x).sum::<f32>().sqrt();
        if n > 0.0 {
            row.iter_mut().for_each(|x| *x /= n);
        }
    }
    out
}

fn check(data: &[f32], dim: usize, what: &str) -> Result<()> {
    if dim == 0 || !data.len().is_multiple_of(dim) {
        return Err(Error::InvalidArgument {
            what: format!("{what}: {} values are not rows of {dim}", data.len()),
        });
    }
    Ok(())
}

/// Trains `k` centroids (`k × dim`) on `data`, from `init` centroids when given (else
/// `k` distinct random rows, drawn with `seed`), for at most `max_iters` Lloyd
/// iterations (until the loss improves by less than 1e-4 of itself). Needs at least `k`
/// rows.
pub fn kmeans_fit(
    data: &[f32],
    dim: usize,
    k: usize,
    metric: KMeansMetric,
    max_iters: usize,
    init: Option<&[f32]>,
    seed: u64,
) -> Result<Vec<f32>> {
    check(data, dim, "kmeans data")?;
    let n = data.len() / dim;
    if k == 0 || n < k {
        return Err(Error::InvalidArgument {
            what: format!(
                "KMeans: training does not have sufficient data points: n({n}) is smaller than k({k})"
            ),
        });
    }
    let params = KMeansParams {
        k,
        max_iters,
        tolerance: 1e-4,
        seed,
        geometry: metric.geometry(),
        merge_split: false,
    };
    let owned;
    let data = if metric == KMeansMetric::Cosine {
        owned = unit(data, dim);
        &owned[..]
    } else {
        data
    };
    let (centroids, _) = match init {
        Some(c) => {
            check(c, dim, "kmeans centroids")?;
            if c.len() / dim != k {
                return Err(Error::InvalidArgument {
                    what: format!("KMeans: {} initial centroids for k={k}", c.len() / dim),
                });
            }
            let c = if metric == KMeansMetric::Cosine {
                unit(c, dim)
            } else {
                c.to_vec()
            };
            km::train_from(data, dim, c, &params)
        }
        None => km::train(data, dim, &params),
    };
    Ok(centroids)
}

/// The nearest centroid of each row of `data` by `metric` (None for a row with a NaN or
/// infinite value).
pub fn kmeans_predict(
    data: &[f32],
    dim: usize,
    centroids: &[f32],
    metric: KMeansMetric,
) -> Result<Vec<Option<u32>>> {
    check(data, dim, "kmeans data")?;
    check(centroids, dim, "kmeans centroids")?;
    let (data, centroids) = if metric == KMeansMetric::Cosine {
        (unit(data, dim), unit(centroids, dim))
    } else {
        (data.to_vec(), centroids.to_vec())
    };
    let assigned = km::assign(&data, dim, &centroids, metric.geometry());
    Ok(assigned
        .into_iter()
        .zip(data.chunks_exact(dim))
        .map(|((j, _), row)| row.iter().all(|x| x.is_finite()).then_some(j))
        .collect())
}
