//! Branches for `python/lancer/_branches.py` (pylance's `create_branch`, `branches`,
//! `checkout_version((branch, version))`), through `lancer::versions::branch` (spec:
//! "Branch and Tag Specification"). A branch dataset's `uri` is its directory,
//! `<root>/tree/<name>`, as pylance's `create_branch` returns it.

use std::collections::BTreeMap;

use lancer::versions::{branch, BranchInfo, Reference};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::dataset::Dataset;
use crate::errors;

/// Adds the functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(branch_of, m)?)?;
    m.add_function(wrap_pyfunction!(branch_list, m)?)?;
    m.add_function(wrap_pyfunction!(branch_create, m)?)?;
    m.add_function(wrap_pyfunction!(shallow_clone, m)?)?;
    m.add_function(wrap_pyfunction!(branch_checkout, m)?)?;
    m.add_function(wrap_pyfunction!(branch_delete, m)?)?;
    m.add_function(wrap_pyfunction!(branch_replace_metadata, m)?)?;
    m.add_function(wrap_pyfunction!(version_numbers, m)?)?;
    Ok(())
}

/// One branch as Python receives it: name, parent branch, identifier, parent version,
/// creation time, manifest size, metadata.
type Row = (
    String,
    Option<String>,
    Vec<(u64, String)>,
    u64,
    u64,
    u64,
    BTreeMap<String, String>,
);

fn row(name: String, b: BranchInfo) -> Row {
    (
        name,
        b.parent_branch,
        b.identifier,
        b.parent_version,
        b.create_at,
        b.manifest_size,
        b.metadata,
    )
}

/// A reference as `_branches.py` passes it: `kind` is "current" (a version of this
/// dataset's branch), "branch" (a version of `branch`, None: main; `version` None: its
/// latest) or "tag".
fn reference(
    ds: &Dataset,
    kind: &str,
    branch: Option<String>,
    version: Option<u64>,
    tag: Option<String>,
) -> PyResult<Reference> {
    Ok(match kind {
        "current" => Reference::Version {
            branch: ds.ds.branch().map(String::from),
            version,
        },
        "branch" => Reference::Version { branch, version },
        "tag" => Reference::Tag(
            tag.ok_or_else(|| PyValueError::new_err("a tag reference needs the tag's name"))?,
        ),
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown reference kind {other:?} (current, branch or tag)"
            )))
        }
    })
}

fn opened(ds: lancer::Dataset) -> Dataset {
    let uri = ds.store().uri().to_string();
    Dataset { ds, uri }
}

/// The branch `ds` belongs to (None: main).
#[pyfunction]
fn branch_of(ds: &Dataset) -> Option<String> {
    ds.ds.branch().map(String::from)
}

/// Every branch of `ds`'s dataset (its main root's), by name.
#[pyfunction]
fn branch_list(py: Python<'_>, ds: &Dataset) -> PyResult<Vec<Row>> {
    py.detach(|| {
        let root = ds.ds.main_root().map_err(errors::table)?;
        let all = branch::list(&root).map_err(errors::table)?;
        Ok(all.into_iter().map(|(n, b)| row(n, b)).collect())
    })
}

/// Creates branch `name` from the reference (`kind` None: this version of this
/// dataset's branch) and opens it.
#[pyfunction]
#[pyo3(signature = (ds, name, kind=None, branch=None, version=None, tag=None))]
fn branch_create(
    py: Python<'_>,
    ds: &Dataset,
    name: String,
    kind: Option<String>,
    branch: Option<String>,
    version: Option<u64>,
    tag: Option<String>,
) -> PyResult<Dataset> {
    let r = kind
        .map(|k| reference(ds, &k, branch, version, tag))
        .transpose()?;
    py.detach(|| {
        ds.ds
            .create_branch(&name, r.as_ref())
            .map(opened)
            .map_err(errors::table)
    })
}

/// The reference's version (`kind` None: this version) as a new dataset at `target`
/// sharing `ds`'s files (pylance's `shallow_clone`), opened there with
/// `storage_options`.
#[pyfunction]
#[pyo3(signature = (ds, target, storage_options=None, kind=None, branch=None, version=None, tag=None))]
#[allow(clippy::too_many_arguments)]
fn shallow_clone(
    py: Python<'_>,
    ds: &Dataset,
    target: String,
    storage_options: Option<BTreeMap<String, String>>,
    kind: Option<String>,
    branch: Option<String>,
    version: Option<u64>,
    tag: Option<String>,
) -> PyResult<Dataset> {
    let r = kind
        .map(|k| reference(ds, &k, branch, version, tag))
        .transpose()?;
    let (store, opts) = crate::dataset::store_in(&target, &storage_options, None)?;
    py.detach(|| {
        let cloned = ds
            .ds
            .shallow_clone(r.as_ref(), store, opts)
            .map_err(errors::table)?;
        Ok(Dataset {
            ds: cloned,
            uri: target,
        })
    })
}

/// The version a reference names, opened (on its branch).
#[pyfunction]
#[pyo3(signature = (ds, kind, branch=None, version=None, tag=None))]
fn branch_checkout(
    py: Python<'_>,
    ds: &Dataset,
    kind: String,
    branch: Option<String>,
    version: Option<u64>,
    tag: Option<String>,
) -> PyResult<Dataset> {
    let r = reference(ds, &kind, branch, version, tag)?;
    py.detach(|| ds.ds.checkout_ref(&r).map(opened).map_err(errors::table))
}

/// Deletes branch `name` of `ds`'s dataset.
#[pyfunction]
fn branch_delete(py: Python<'_>, ds: &Dataset, name: String) -> PyResult<()> {
    py.detach(|| {
        let root = ds.ds.main_root().map_err(errors::table)?;
        branch::delete(&root, &name).map_err(errors::table)
    })
}

/// Replaces branch `name`'s metadata.
#[pyfunction]
fn branch_replace_metadata(
    py: Python<'_>,
    ds: &Dataset,
    name: String,
    metadata: BTreeMap<String, String>,
) -> PyResult<()> {
    py.detach(|| {
        let root = ds.ds.main_root().map_err(errors::table)?;
        branch::replace_metadata(&root, &name, metadata).map_err(errors::table)
    })
}

/// The version numbers of `ds`'s branch, oldest first (one listing, no manifest read).
#[pyfunction]
fn version_numbers(py: Python<'_>, ds: &Dataset) -> PyResult<Vec<u64>> {
    py.detach(|| {
        let all = lancer::versions::list_versions(ds.ds.store()).map_err(errors::table)?;
        Ok(all.into_iter().map(|v| v.version).collect())
    })
}
