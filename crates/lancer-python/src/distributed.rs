//! Distributed index builds from Python (`LanceDataset.create_index_uncommitted`,
//! `merge_existing_index_segments`, `commit_existing_index_segments`,
//! `lancer.indices.IndicesBuilder`) over `lancer::index`. Segments cross as
//! JSON text in the members of pylance's `Index`; a trained model as a dict of
//! little-endian float32 bytes (the Python side wraps them in numpy arrays).

use lancer::index::{self as di, RabitEncoder, VectorModel};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::dataset::Dataset;
use crate::errors;

/// Adds the functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(train_vector_model, m)?)?;
    m.add_function(wrap_pyfunction!(create_index_segment, m)?)?;
    m.add_function(wrap_pyfunction!(stage_fts_partition, m)?)?;
    m.add_function(wrap_pyfunction!(merge_staged_fts, m)?)?;
    m.add_function(wrap_pyfunction!(merge_index_segments, m)?)?;
    m.add_function(wrap_pyfunction!(commit_index_segments, m)?)?;
    Ok(())
}

/// The build settings of a dict in `create_index`'s keyword names; another key is a
/// TypeError naming it.
fn index_params(p: &Bound<'_, PyDict>) -> PyResult<lancer::IndexParams> {
    let mut out = lancer::IndexParams::default();
    for (k, v) in p.iter() {
        let key: String = k.extract()?;
        if v.is_none() {
            continue;
        }
        match key.as_str() {
            "name" => out.name = Some(v.extract()?),
            "replace" => out.replace = v.extract()?,
            "metric" => out.metric = Some(v.extract()?),
            "num_partitions" => out.num_partitions = Some(v.extract()?),
            "num_sub_vectors" => out.num_sub_vectors = Some(v.extract()?),
            "num_bits" => out.num_bits = Some(v.extract()?),
            "sample_rate" => out.sample_rate = Some(v.extract()?),
            "max_iterations" => out.max_iterations = Some(v.extract()?),
            "zone_size" => out.zone_size = Some(v.extract()?),
            "rows_per_zone" => out.rows_per_zone = Some(v.extract()?),
            "bloom_items" => out.bloom_items = Some(v.extract()?),
            "bloom_probability" => out.bloom_probability = Some(v.extract()?),
            "m" => out.m = Some(v.extract()?),
            "ef_construction" => out.ef_construction = Some(v.extract()?),
            "max_level" => out.max_level = Some(v.extract()?),
            "analyzer_json" => {
                let j: String = v.extract()?;
                let bad = |e: lancer::IndexError| PyValueError::new_err(e.to_string());
                let a = lancer::AnalyzerParams::from_json(&j).map_err(bad)?;
                a.check().map_err(bad)?;
                out.analyzer = Some(a);
            }
            other => {
                return Err(PyTypeError::new_err(format!(
                    "unexpected index build argument {other:?}"
                )))
            }
        }
    }
    Ok(out)
}

fn floats(b: &[u8], what: &str) -> PyResult<Vec<f32>> {
    if !b.len().is_multiple_of(4) {
        return Err(PyValueError::new_err(format!(
            "{what}: {} bytes are not float32 values",
            b.len()
        )));
    }
    Ok(b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

fn float_bytes<'py>(py: Python<'py>, v: &[f32]) -> Bound<'py, PyBytes> {
    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    PyBytes::new(py, &bytes)
}

/// A model from its dict: `centroids` (bytes), optional `codebook` (bytes),
/// `sq_bounds` ((lo, hi)) and `rabitq` ((code_dim, bits, signs bytes)).
fn model_of(d: &Bound<'_, PyDict>) -> PyResult<VectorModel> {
    let get = |k: &str| d.get_item(k).ok().flatten().filter(|v| !v.is_none());
    let centroids: Vec<u8> = get("centroids")
        .ok_or_else(|| PyValueError::new_err("the model has no centroids"))?
        .extract()?;
    let codebook = get("codebook")
        .map(|b| b.extract::<Vec<u8>>())
        .transpose()?
        .map(|b| floats(&b, "codebook"))
        .transpose()?;
    let bounds: Option<(f64, f64)> = get("sq_bounds").map(|b| b.extract()).transpose()?;
    let rabit = get("rabitq")
        .map(|r| {
            let (code_dim, num_bits, signs): (usize, u32, Vec<u8>) = r.extract()?;
            Ok::<_, PyErr>(RabitEncoder {
                code_dim,
                num_bits,
                signs,
            })
        })
        .transpose()?;
    Ok(VectorModel {
        centroids: floats(&centroids, "centroids")?,
        codebook,
        bounds,
        rabit,
    })
}

/// Trains the model of the vector index `index_type` / `params` once on a sample of
/// `column` (of `fragment_ids`, default all; with `given` centroids only the quantizer);
/// a dict for [`model_of`].
#[pyfunction]
#[pyo3(signature = (ds, column, index_type, params, fragment_ids=None, given=None))]
pub fn train_vector_model<'py>(
    py: Python<'py>,
    ds: PyRef<'_, Dataset>,
    column: String,
    index_type: &str,
    params: &Bound<'py, PyDict>,
    fragment_ids: Option<Vec<u64>>,
    given: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyDict>> {
    let given = given.map(model_of).transpose()?;
    let spec =
        lancer::IndexSpec::parse(index_type, index_params(params)?).map_err(errors::lancer)?;
    let lancer::IndexSpec::Vector(opts) = spec else {
        return Err(PyValueError::new_err(format!(
            "{index_type} is not a vector index: only vector indexes train a model"
        )));
    };
    let d = ds.ds.clone();
    let model = py.detach(|| {
        di::train_vector_model(&d, &column, &opts, fragment_ids.as_deref(), given.as_ref())
            .map_err(errors::lancer)
    })?;
    let out = PyDict::new(py);
    out.set_item("centroids", float_bytes(py, &model.centroids))?;
    out.set_item(
        "codebook",
        model.codebook.as_ref().map(|c| float_bytes(py, c)),
    )?;
    out.set_item("sq_bounds", model.bounds)?;
    out.set_item(
        "rabitq",
        model
            .rabit
            .as_ref()
            .map(|r| (r.code_dim, r.num_bits, PyBytes::new(py, &r.signs))),
    )?;
    Ok(out)
}

fn segment_text(meta: &lancer::pb::IndexMetadata) -> PyResult<String> {
    di::segment_to_json(meta)
        .map(|v| v.to_string())
        .map_err(errors::lancer)
}

fn segments_of(texts: &[String]) -> PyResult<Vec<lancer::pb::IndexMetadata>> {
    texts
        .iter()
        .map(|t| {
            let v: serde_json::Value = serde_json::from_str(t)
                .map_err(|e| PyValueError::new_err(format!("an index segment is not JSON: {e}")))?;
            di::segment_from_json(&v).map_err(errors::lancer)
        })
        .collect()
}

/// Builds one segment over `fragment_ids` without committing it; its JSON text.
#[pyfunction]
#[pyo3(signature = (ds, column, index_type, params, fragment_ids, model=None, index_uuid=None))]
#[allow(clippy::too_many_arguments)]
pub fn create_index_segment(
    py: Python<'_>,
    ds: PyRef<'_, Dataset>,
    column: String,
    index_type: &str,
    params: &Bound<'_, PyDict>,
    fragment_ids: Vec<u64>,
    model: Option<&Bound<'_, PyDict>>,
    index_uuid: Option<String>,
) -> PyResult<String> {
    let spec =
        lancer::IndexSpec::parse(index_type, index_params(params)?).map_err(errors::lancer)?;
    let model = model.map(model_of).transpose()?;
    let uuid = index_uuid
        .map(|u| di::parse_uuid(&u))
        .transpose()
        .map_err(errors::lancer)?;
    let d = ds.ds.clone();
    let meta = py.detach(|| {
        di::create_index_segment(&d, &column, &spec, &fragment_ids, model.as_ref(), uuid)
            .map_err(errors::lancer)
    })?;
    segment_text(&meta)
}

/// Builds the full-text index of `column` over `fragment_ids` as one staged partition
/// of the index `index_uuid` (pylance 14's `create_scalar_index(fragment_ids=,
/// index_uuid=)`), not committed.
#[pyfunction]
pub fn stage_fts_partition(
    py: Python<'_>,
    ds: PyRef<'_, Dataset>,
    column: String,
    params: &Bound<'_, PyDict>,
    fragment_ids: Vec<u64>,
    index_uuid: String,
) -> PyResult<()> {
    let spec =
        lancer::IndexSpec::parse("INVERTED", index_params(params)?).map_err(errors::lancer)?;
    let lancer::IndexSpec::FullText(opts) = spec else {
        return Err(errors::lancer(lancer::Error::InvalidArgument {
            what: "a staged partition is of a full-text (INVERTED) index".into(),
        }));
    };
    let uuid = di::parse_uuid(&index_uuid).map_err(errors::lancer)?;
    let d = ds.ds.clone();
    py.detach(|| {
        di::stage_fts_partition(&d, &column, &opts, &fragment_ids, &uuid).map_err(errors::lancer)
    })
}

/// Merges the partitions staged under `index_uuid` into one (pylance 14's
/// `merge_index_metadata(index_uuid, "INVERTED")`), not committed.
#[pyfunction]
pub fn merge_staged_fts(
    py: Python<'_>,
    ds: PyRef<'_, Dataset>,
    index_uuid: String,
) -> PyResult<()> {
    let uuid = di::parse_uuid(&index_uuid).map_err(errors::lancer)?;
    let d = ds.ds.clone();
    py.detach(|| di::merge_staged_fts(&d, &uuid).map_err(errors::lancer))
}

/// Merges uncommitted segments (JSON texts) into one; its JSON text.
#[pyfunction]
pub fn merge_index_segments(
    py: Python<'_>,
    ds: PyRef<'_, Dataset>,
    segments: Vec<String>,
) -> PyResult<String> {
    let segs = segments_of(&segments)?;
    let d = ds.ds.clone();
    let meta = py.detach(|| di::merge_index_segments(&d, &segs).map_err(errors::lancer))?;
    segment_text(&meta)
}

/// Commits segments (JSON texts) as the index `name` on `column`; the dataset after.
#[pyfunction]
#[pyo3(signature = (ds, name, column, segments, replace=true))]
pub fn commit_index_segments(
    py: Python<'_>,
    ds: PyRef<'_, Dataset>,
    name: String,
    column: String,
    segments: Vec<String>,
    replace: bool,
) -> PyResult<Dataset> {
    let segs = segments_of(&segments)?;
    let d = ds.ds.clone();
    let out = py.detach(|| {
        di::commit_index_segments(&d, &name, &column, segs, replace).map_err(errors::lancer)
    })?;
    Ok(ds.wrap(out))
}

/// The JSON text of segments for a `CreateIndex` commit (two-phase `commit`).
pub(crate) fn segments_json(
    v: &serde_json::Value,
    key: &str,
) -> lancer::Result<Vec<lancer::pb::IndexMetadata>> {
    match v.get(key) {
        None | Some(serde_json::Value::Null) => Ok(Vec::new()),
        Some(serde_json::Value::Array(a)) => a.iter().map(di::segment_from_json).collect(),
        Some(other) => Err(lancer::Error::InvalidArgument {
            what: format!("CreateIndex: {key} must be a list of index segments, not {other}"),
        }),
    }
}
