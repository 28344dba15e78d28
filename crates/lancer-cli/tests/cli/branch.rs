//! `lancer branch create|list|delete` on a dataset pylance 14 wrote: the branches are
//! the ones pylance lists and reads (from a version, from another branch, from a tag),
//! an append through the branch's directory leaves main alone, and mistakes are one-line
//! errors that create nothing.

use super::*;
use common::{lancer, ok, py, TempDir};

#[test]
fn branches_pylance_lists_and_reads() {
    let dir = TempDir::new("cli-branch");
    let ds = dir.join("ds");
    copy_dir(&datasets().join("pylance-14/history"), &ds);
    let ds_s = ds.to_str().unwrap();
    let json = |args: &[&str]| -> serde_json::Value {
        let out = ok(lancer().args(args));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let rows_at = |v: u64| -> u64 {
        json(&["--json", "count", ds_s, "--version", &v.to_string()])["rows"]
            .as_u64()
            .unwrap()
    };
    let made = json(&[
        "--json",
        "branch",
        "create",
        ds_s,
        "feat/a",
        "--version",
        "2",
    ]);
    assert_eq!(made["version"], 2);
    assert_eq!(made["rows"].as_u64().unwrap(), rows_at(2));
    let branch_dir = ds.join("tree/feat/a");
    assert!(ds.join("_refs/branches/feat%2Fa.json").is_file());
    ok(lancer().args(["tag", "create", ds_s, "t1", "1"]));
    json(&["--json", "branch", "create", ds_s, "fromtag", "--tag", "t1"]);
    let nested = json(&[
        "--json", "branch", "create", ds_s, "nested", "--from", "feat/a",
    ]);
    assert_eq!(nested["version"], 2);
    let listed = json(&["--json", "branch", "list", branch_dir.to_str().unwrap()]);
    let names: Vec<(&str, u64, Option<&str>)> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["name"].as_str().unwrap(),
                b["parent_version"].as_u64().unwrap(),
                b["parent_branch"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        names,
        vec![
            ("fromtag", 1, None),
            ("feat/a", 2, None),
            ("nested", 2, Some("feat/a"))
        ]
    );
    let seen = py(
        "import lance, sys\nds = lance.dataset(sys.argv[1])\n\
         print(sorted((n, b['parent_branch'], b['parent_version']) for n, b in ds.branches.list().items()), \
         lance.dataset(sys.argv[1] + '/tree/fromtag').count_rows(), lance.dataset(sys.argv[1] + '/tree/nested').count_rows())",
        &[ds_s],
    );
    if !seen.is_empty() {
        assert_eq!(
            seen,
            format!(
                "[('feat/a', None, 2), ('fromtag', None, 1), ('nested', 'feat/a', 2)] {} {}",
                rows_at(1),
                rows_at(2)
            )
        );
    }
    // mistakes: one line, exit 1, nothing created or removed
    for bad in [
        vec!["branch", "create", ds_s, "a b"],
        vec!["branch", "create", ds_s, "main"],
        vec!["branch", "create", ds_s, "feat/a"],
        vec!["branch", "create", ds_s, "x", "--version", "999"],
        vec!["branch", "create", ds_s, "x", "--tag", "nosuch"],
        vec!["branch", "delete", ds_s, "feat/a"],
        vec!["branch", "delete", ds_s, "nosuch"],
    ] {
        let out = lancer().args(&bad).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{bad:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{bad:?}: {err}");
    }
    assert_eq!(
        json(&["--json", "branch", "list", ds_s])
            .as_array()
            .unwrap()
            .len(),
        3
    );
    ok(lancer().args(["branch", "delete", ds_s, "nested"]));
    ok(lancer().args(["branch", "delete", ds_s, "feat/a"]));
    assert!(!ds.join("tree/feat").exists() && !ds.join("tree/nested").exists());
    assert!(ds.join("tree/fromtag/_versions").is_dir());
}

/// `lancer clone` of a dataset pylance 14 wrote: the clone pylance opens at the cloned
/// version with the source's rows, sharing its files (none copied); an append to the
/// clone stays there; a taken target is a one-line error.
#[test]
fn clone_shares_files_pylance_reads() {
    let dir = TempDir::new("cli-clone");
    let ds = dir.join("ds");
    copy_dir(&datasets().join("pylance-14/history"), &ds);
    let ds_s = ds.to_str().unwrap();
    let target = dir.join("clone");
    let t_s = target.to_str().unwrap();
    let out = ok(lancer().args(["--json", "clone", ds_s, t_s, "--version", "2"]));
    let made: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(made["version"], 2);
    let rows_at_2: serde_json::Value = serde_json::from_slice(
        &ok(lancer().args(["--json", "count", ds_s, "--version", "2"])).stdout,
    )
    .unwrap();
    assert_eq!(made["rows"], rows_at_2["rows"]);
    assert!(
        !target.join("data").exists(),
        "a shallow clone copies no data"
    );
    let seen = py(
        "import lance, sys\nc = lance.dataset(sys.argv[1])\n\
         print(c.version, c.count_rows(), [b.is_dataset_root for b in c.base_paths().values()])",
        &[t_s],
    );
    if !seen.is_empty() {
        assert_eq!(seen, format!("2 {} [True]", made["rows"]));
    }
    let again = lancer().args(["clone", ds_s, t_s]).output().unwrap();
    assert_eq!(again.status.code(), Some(1));
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(
        err.contains("already exists") && err.lines().count() == 1,
        "{err}"
    );
}
