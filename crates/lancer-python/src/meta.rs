//! A dataset's config and metadata from Python (pylance's `config`, `metadata`,
//! `schema_metadata`, `update_config`, `update_metadata`, `update_schema_metadata`,
//! `update_field_metadata`): reads of this version's maps, and metadata-only commits
//! through `lancer::table::config`; and the listener that carries an index build's
//! progress events to a Python callable.

use std::collections::BTreeMap;

use lancer::{MapUpdate, MetadataUpdate};
use pyo3::prelude::*;

use crate::dataset::Dataset;
use crate::errors;

/// Adds the functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(update_metadata, m)?)?;
    m.add_function(wrap_pyfunction!(schema_metadata, m)?)?;
    m.add_function(wrap_pyfunction!(tokenize, m)?)?;
    m.add_function(wrap_pyfunction!(language_model_home, m)?)?;
    m.add_function(wrap_pyfunction!(migrate_manifest_paths_v2, m)?)?;
    m.add_function(wrap_pyfunction!(explain_cleanup, m)?)?;
    Ok(())
}

/// One map's changes as Python passes them: `([(key, value or None)], replace)`.
type MapArg = (Vec<(String, Option<String>)>, bool);

fn map_update((entries, replace): MapArg) -> MapUpdate {
    // a replacement keeps only the keys given a value (None means nothing there)
    let entries = if replace {
        entries.into_iter().filter(|(_, v)| v.is_some()).collect()
    } else {
        entries
    };
    MapUpdate { entries, replace }
}

/// Commits changes to the config, table metadata, schema metadata and fields'
/// metadata (by path) as one version; returns it.
#[pyfunction]
#[pyo3(signature = (ds, config=None, table=None, schema=None, fields=None))]
fn update_metadata(
    py: Python<'_>,
    ds: &Dataset,
    config: Option<MapArg>,
    table: Option<MapArg>,
    schema: Option<MapArg>,
    fields: Option<Vec<(String, MapArg)>>,
) -> PyResult<Dataset> {
    let update = MetadataUpdate {
        config: config.map(map_update),
        table: table.map(map_update),
        schema: schema.map(map_update),
        fields: fields
            .unwrap_or_default()
            .into_iter()
            .map(|(path, m)| (path, map_update(m)))
            .collect(),
    };
    let after = py.detach(|| ds.ds.update_metadata(&update).map_err(errors::table))?;
    Ok(ds.wrap(after))
}

/// The schema's metadata of this version (values as text; bytes that are not UTF-8
/// replaced).
#[pyfunction]
fn schema_metadata(ds: &Dataset) -> BTreeMap<String, String> {
    ds.ds
        .manifest()
        .pb
        .schema_metadata
        .iter()
        .map(|(k, v)| (k.clone(), String::from_utf8_lossy(v).into_owned()))
        .collect()
}

/// A progress listener calling the Python callable `f` with `(event, stage, completed,
/// total, unit)` for each event of an index build, and where its first exception is
/// kept (later events are not delivered after one).
pub(crate) fn progress_listener(
    f: Py<PyAny>,
) -> (
    lancer::Progress,
    std::sync::Arc<std::sync::Mutex<Option<PyErr>>>,
) {
    let failed = std::sync::Arc::new(std::sync::Mutex::new(None::<PyErr>));
    let kept = failed.clone();
    let listener: lancer::Progress = std::sync::Arc::new(move |e: &lancer::ProgressEvent<'_>| {
        let mut slot = kept.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_some() {
            return;
        }
        Python::attach(|py| {
            if let Err(err) = f.call1(py, (e.event.name(), e.stage, e.completed, e.total, e.unit)) {
                *slot = Some(err);
            }
        });
    });
    (listener, failed)
}

/// The tokens of `text` under the analyzer `analyzer_json` (an INVERTED index's
/// settings in pylance's names; defaults for the rest): `(text, position)` pairs,
/// positions counted from the first token kept (gaps left by removed tokens stay).
#[pyfunction]
#[pyo3(signature = (text, analyzer_json=None))]
fn tokenize(text: &str, analyzer_json: Option<&str>) -> PyResult<Vec<(String, u32)>> {
    let params = match analyzer_json {
        Some(j) => lancer::AnalyzerParams::from_json(j),
        None => Ok(lancer::AnalyzerParams::defaults()),
    }
    .map_err(|e| crate::errors::invalid_input(e.to_string()))?;
    let mut params = params;
    // dictionary tokenizers read their models from the environment's folder
    // (LANCE_LANGUAGE_MODEL_HOME), as a dataset's session does
    params.models = environment_models();
    let mut analyzer = params
        .analyzer()
        .map_err(|e| crate::errors::invalid_input(e.to_string()))?;
    let mut out: Vec<(String, u32)> = Vec::new();
    analyzer.each_token(text, &mut |t, pos| out.push((t.to_string(), pos)));
    if let Some(first) = out.first().map(|t| t.1) {
        for t in &mut out {
            t.1 -= first;
        }
    }
    Ok(out)
}

/// The language models of a session set up from the environment, as a dataset opened
/// now would have them.
fn environment_models() -> lancer::LanguageModels {
    crate::session::python_session(lancer::Session::builder()).language_models()
}

/// The folder `jieba/<model>` tokenizers read their models from now
/// (`LANCE_LANGUAGE_MODEL_HOME`, else pylance's default); None when there is no home
/// folder to put it in.
#[pyfunction]
fn language_model_home() -> Option<String> {
    environment_models()
        .home()
        .map(|p| p.to_string_lossy().into_owned())
}

/// Renames the dataset's manifests to the newer naming scheme; how many were renamed.
#[pyfunction]
fn migrate_manifest_paths_v2(py: Python<'_>, ds: &Dataset) -> PyResult<usize> {
    py.detach(|| lancer::versions::migrate_manifest_paths_v2(ds.ds.store()).map_err(errors::table))
}

/// Statistics, candidate files and branch-held versions of the cleanup these limits
/// would run (nothing is removed). Files: `(path under the root, kind, unverified,
/// size)`; branches: `(name, version, removed but for the branch)`.
type Explained = (
    crate::dataset::CleanupCounts,
    Vec<(String, &'static str, bool, u64)>,
    Vec<(String, u64, bool)>,
);

#[pyfunction]
#[pyo3(signature = (uri, older_than_seconds=None, retain_versions=None, storage_options=None,
                    delete_unverified=false, error_if_tagged=true))]
fn explain_cleanup(
    py: Python<'_>,
    uri: String,
    older_than_seconds: Option<f64>,
    retain_versions: Option<usize>,
    storage_options: Option<lancer::StorageOptions>,
    delete_unverified: bool,
    error_if_tagged: bool,
) -> PyResult<Explained> {
    let age = crate::dataset::older_than(older_than_seconds)?;
    py.detach(|| {
        let (store, _) = crate::dataset::store_in(&uri, &storage_options, None)?;
        let (s, files, branches) = lancer::versions::explain_cleanup(
            &store,
            age,
            retain_versions,
            delete_unverified,
            error_if_tagged,
        )
        .map_err(errors::table)?;
        Ok((
            crate::dataset::cleanup_counts(&s),
            files
                .into_iter()
                .map(|f| (f.path, f.kind, f.unverified, f.size))
                .collect(),
            branches,
        ))
    })
}
