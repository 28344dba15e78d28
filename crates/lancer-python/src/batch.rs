//! Batched vector search from Python (issue 42): `nearest` with a 2-D `q`, as pylance
//! 14 runs it — every query's `k` nearest, stacked by query with an Int32
//! `query_index` column first. A thin call into `lancer::search`, GIL released.

use pyo3::prelude::*;

use crate::dataset::Dataset;
use crate::errors;
use crate::export::PyBatch;

/// Adds the functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(nearest_batch, m)?)?;
    Ok(())
}

/// The `k` nearest rows to each of the query vectors `q` (flattened, `dim` values
/// each) in `column`: `query_index`, the columns asked (all by default), `_distance`
/// (then `_rowid` / `_rowaddr`). Through the column's vector index when it has one
/// for the metric (unless `use_index` is false), else exact. With `explain`, the plan
/// of the search of each query (the first one's shown) as text.
#[pyfunction]
#[pyo3(signature = (ds, column, q, dim, k, metric=None, nprobes=None, refine_factor=None,
                    filter=None, prefilter=true, columns=None, use_index=true, with_row_id=false,
                    with_row_address=false, explain=false, fast_search=false,
                    minimum_nprobes=None, maximum_nprobes=None, ef=None, approx_mode=None))]
#[allow(clippy::too_many_arguments)]
fn nearest_batch(
    py: Python<'_>,
    ds: &Dataset,
    column: String,
    q: Vec<f32>,
    dim: usize,
    k: usize,
    metric: Option<String>,
    nprobes: Option<usize>,
    refine_factor: Option<u32>,
    filter: Option<String>,
    prefilter: bool,
    columns: Option<Vec<String>>,
    use_index: bool,
    with_row_id: bool,
    with_row_address: bool,
    explain: bool,
    fast_search: bool,
    minimum_nprobes: Option<usize>,
    maximum_nprobes: Option<usize>,
    ef: Option<usize>,
    approx_mode: Option<String>,
) -> PyResult<Py<PyAny>> {
    use lancer::search::{nearest_batch, BatchNearest};
    use lancer::search::{Nearest, RowMeta};
    if dim == 0 || !q.len().is_multiple_of(dim) {
        return Err(errors::invalid_input(format!(
            "{} query values are not whole vectors of {dim}",
            q.len()
        )));
    }
    let b = py.detach(|| {
        let ds = &ds.ds;
        let metric = crate::dataset::search_metric(ds, &column, metric.as_deref())?;
        let req = BatchNearest {
            column: &column,
            queries: q.chunks_exact(dim).map(<[f32]>::to_vec).collect(),
            k,
            metric,
        };
        let filtering = crate::dataset::filtering(filter.as_deref(), prefilter);
        let approx_mode = crate::dataset::approx_mode_of(approx_mode.as_deref())?;
        let params = lancer::search::AnnParams {
            use_index,
            nprobes,
            refine_factor,
            fast_search,
            min_nprobes: minimum_nprobes,
            max_nprobes: maximum_nprobes,
            ef,
            approx_mode,
        };
        if explain {
            let first = Nearest {
                column: &column,
                query: req.queries.first().cloned().unwrap_or_default(),
                k,
                metric,
            };
            let plan = lancer::search::explain_nearest(ds, &first, filtering, &params)
                .map_err(errors::lancer)?;
            return Ok(Err(format!(
                "batch of {} queries (query_index first), each searched as:\n{plan}",
                req.queries.len()
            )));
        }
        let c: Option<Vec<&str>> = columns
            .as_ref()
            .map(|c| c.iter().map(String::as_str).collect());
        let meta = RowMeta {
            row_id: with_row_id,
            row_address: with_row_address,
        };
        nearest_batch(ds, &req, filtering, c.as_deref(), &params, meta)
            .map(Ok)
            .map_err(errors::lancer)
    })?;
    match b {
        Ok(b) => Ok(PyBatch(b).into_pyobject(py)?.unbind()),
        Err(plan) => Ok(plan.into_pyobject(py)?.into_any().unbind()),
    }
}
