//! Distributed compaction from Python (`lancer.optimize.Compaction.plan / commit`,
//! `CompactionTask.execute`) over `lancer::write`. Plans, tasks and results cross
//! as JSON text in pylance 14's `json()` shapes; the Python side keeps the text (so they
//! pickle) and builds its objects from it.

use lancer::write::CommitParams;
use lancer::write::{
    commit_compaction, parse_text, plan_compaction, CompactionTask, RewriteResult,
};
use pyo3::prelude::*;

use crate::dataset::Dataset;
use crate::errors;

/// Adds the functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(compaction_plan, m)?)?;
    m.add_function(wrap_pyfunction!(compaction_task_execute, m)?)?;
    m.add_function(wrap_pyfunction!(compaction_commit, m)?)?;
    Ok(())
}

/// The compaction plan of this version as JSON text (`CompactionPlan.json()`).
#[pyfunction]
#[pyo3(signature = (ds, target_rows_per_fragment=None, materialize_deletions=true,
                    materialize_deletions_threshold=None, max_bytes_per_file=None))]
fn compaction_plan(
    py: Python<'_>,
    ds: PyRef<'_, Dataset>,
    target_rows_per_fragment: Option<u64>,
    materialize_deletions: bool,
    materialize_deletions_threshold: Option<f64>,
    max_bytes_per_file: Option<u64>,
) -> PyResult<String> {
    let opts = crate::evolve::compaction_options(
        target_rows_per_fragment,
        materialize_deletions,
        materialize_deletions_threshold,
        max_bytes_per_file,
    );
    let d = ds.ds.clone();
    py.detach(move || {
        let plan = plan_compaction(&d, &opts).map_err(errors::lancer)?;
        Ok(plan.to_json().to_string())
    })
}

/// Runs the task (`CompactionTask.json()` text) against the dataset's store: the
/// `RewriteResult.json()` text; nothing committed.
#[pyfunction]
fn compaction_task_execute(
    py: Python<'_>,
    ds: PyRef<'_, Dataset>,
    task: String,
) -> PyResult<String> {
    let store = ds.ds.store().clone();
    py.detach(move || {
        let v = parse_text(&task, "compaction task").map_err(errors::lancer)?;
        let t = CompactionTask::from_json(&v).map_err(errors::lancer)?;
        let r = t.execute(&store).map_err(errors::lancer)?;
        Ok(r.to_json().to_string())
    })
}

/// Commits the results (`RewriteResult.json()` texts) of a plan read at
/// `read_version` (None: the first result's): the dataset after and
/// `(fragments_removed, fragments_added, files_removed, files_added)`.
#[pyfunction]
#[pyo3(signature = (ds, results, read_version=None))]
fn compaction_commit(
    py: Python<'_>,
    ds: PyRef<'_, Dataset>,
    results: Vec<String>,
    read_version: Option<u64>,
) -> PyResult<(Dataset, (usize, usize, usize, usize))> {
    let d = ds.ds.clone();
    let (after, m) = py.detach(move || {
        let results = results
            .iter()
            .map(|t| RewriteResult::from_json(&parse_text(t, "rewrite result")?))
            .collect::<lancer::Result<Vec<_>>>()
            .map_err(errors::lancer)?;
        let rv = read_version
            .or_else(|| results.first().map(|r| r.read_version))
            .unwrap_or_else(|| d.version());
        commit_compaction(d.store(), rv, &results, &CommitParams::default()).map_err(errors::lancer)
    })?;
    Ok((
        ds.wrap(after),
        (
            m.fragments_removed,
            m.fragments_added,
            m.files_removed,
            m.files_added,
        ),
    ))
}
