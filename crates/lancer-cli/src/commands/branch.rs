//! `lancer branch create|list|delete`: branches of a dataset (spec: "Branch and Tag
//! Specification"), through `lancer::versions::branch`. A branch is read and written by
//! passing its directory, `<root>/tree/<name>`, to the other commands. `lancer clone`:
//! a shallow clone (a branch's clone made a dataset of its own elsewhere).

use lancer::versions::rfc3339;
use lancer::versions::{list_ordered, BranchInfo, Reference};
use lancer::Session;

use super::{report, CmdResult};
use crate::args::{BranchAction, SourceVersion};

fn info_json(name: &str, b: &BranchInfo) -> serde_json::Value {
    serde_json::json!({
        "name": name,
        "parent_branch": b.parent_branch,
        "parent_version": b.parent_version,
        "create_at": b.create_at,
        "manifest_size": b.manifest_size,
        "metadata": b.metadata,
    })
}

/// The reference `--from` / `--version` / `--tag` name for the dataset `ds` (None:
/// its own version).
fn reference(ds: &lancer::Dataset, source: SourceVersion) -> Option<Reference> {
    let SourceVersion { from, version, tag } = source;
    match (tag, from, version) {
        (Some(t), _, _) => Some(Reference::Tag(t)),
        (None, None, None) => None,
        (None, from, version) => Some(Reference::Version {
            branch: from.or_else(|| ds.branch().map(String::from)),
            version,
        }),
    }
}

/// `lancer clone`: a shallow clone of a version of the dataset at `path` into `target`.
pub fn clone(
    s: &Session,
    path: &std::path::Path,
    target: &str,
    which: SourceVersion,
    json: bool,
) -> CmdResult {
    let ds = s.open(path)?;
    let reference = reference(&ds, which);
    let store = s.store(target)?;
    let c = ds.shallow_clone(reference.as_ref(), store, s.storage_options().clone())?;
    let (v, rows) = (c.version(), c.count_rows());
    report(
        json,
        serde_json::json!({ "cloned": target, "version": v, "rows": rows,
                            "source": ds.store().uri() }),
        || {
            format!(
                "shallow clone at {target}: version {v} ({rows} rows), sharing the files of {}",
                ds.store().uri()
            )
        },
    )
}

/// Runs one `lancer branch` action.
pub fn run(s: &Session, action: BranchAction, json: bool) -> CmdResult {
    match action {
        BranchAction::Create { path, name, source } => {
            let ds = s.open(&path)?;
            let reference = reference(&ds, source);
            let b = ds.create_branch(&name, reference.as_ref())?;
            let (v, rows, at) = (b.version(), b.count_rows(), b.store().uri().to_string());
            report(
                json,
                serde_json::json!({ "created": name, "version": v, "rows": rows, "path": at }),
                || format!("branch {name} at version {v} ({rows} rows): {at}"),
            )
        }
        BranchAction::List { path } => {
            let root = s.open(&path)?.main_root()?;
            let all = list_ordered(&root, true)?;
            let v: Vec<serde_json::Value> = all.iter().map(|(n, b)| info_json(n, b)).collect();
            report(json, serde_json::Value::Array(v), || {
                all.iter()
                    .map(|(n, b)| {
                        format!(
                            "{n}\tfrom {}:{}\t{}",
                            b.parent_branch.as_deref().unwrap_or("main"),
                            b.parent_version,
                            rfc3339(b.create_at, 0)
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            })
        }
        BranchAction::Delete { path, name } => {
            let root = s.open(&path)?.main_root()?;
            lancer::versions::branch::delete(&root, &name)?;
            report(json, serde_json::json!({ "deleted": name }), || {
                format!("deleted branch {name}")
            })
        }
    }
}
