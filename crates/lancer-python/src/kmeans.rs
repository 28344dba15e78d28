//! `lancer.util.KMeans`'s native half over `lancer::kmeans`: vectors cross as
//! little-endian float32 bytes (`n × dim`, row-major), assignments as a list of
//! cluster ids (None for a vector with a NaN or infinite value).

use lancer::kmeans::{self, KMeansMetric};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors;

/// Adds the functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(kmeans_fit, m)?)?;
    m.add_function(wrap_pyfunction!(kmeans_predict, m)?)?;
    Ok(())
}

fn floats(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Trains `k` centroids on `data`; returns them as float32 bytes.
#[pyfunction]
#[pyo3(signature = (data, dim, k, metric, max_iters, seed, init=None))]
#[allow(clippy::too_many_arguments)]
fn kmeans_fit<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyBytes>,
    dim: usize,
    k: usize,
    metric: &str,
    max_iters: usize,
    seed: u64,
    init: Option<&Bound<'py, PyBytes>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let metric = KMeansMetric::parse(metric).map_err(errors::lancer)?;
    let data = floats(data.as_bytes());
    let init = init.map(|b| floats(b.as_bytes()));
    let centroids =
        py.detach(|| kmeans::kmeans_fit(&data, dim, k, metric, max_iters, init.as_deref(), seed));
    let centroids = centroids.map_err(errors::lancer)?;
    let bytes: Vec<u8> = centroids.iter().flat_map(|x| x.to_le_bytes()).collect();
    Ok(PyBytes::new(py, &bytes))
}

/// The nearest centroid of each row of `data`.
#[pyfunction]
fn kmeans_predict<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyBytes>,
    dim: usize,
    centroids: &Bound<'py, PyBytes>,
    metric: &str,
) -> PyResult<Vec<Option<u32>>> {
    let metric = KMeansMetric::parse(metric).map_err(errors::lancer)?;
    let data = floats(data.as_bytes());
    let centroids = floats(centroids.as_bytes());
    py.detach(|| kmeans::kmeans_predict(&data, dim, &centroids, metric))
        .map_err(errors::lancer)
}
