//! `lancer meta`: the config and metadata maps shown and changed by metadata-only
//! commits that pylance 14 reads back; bad requests are one-line errors that commit
//! nothing.

use super::*;
use common::{lancer, ok, py, TempDir};

#[test]
fn meta_changes_maps_pylance_reads() {
    let dir = TempDir::new("cli-meta");
    let ds = dir.join("ds");
    copy_dir(&datasets().join("pylance-14/history"), &ds);
    let ds_s = ds.to_str().unwrap();
    let json = |args: &[&str]| -> serde_json::Value {
        let out = ok(lancer().args(args));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let before = json(&["--json", "meta", ds_s])["version"].as_u64().unwrap();
    let set = json(&[
        "--json",
        "meta",
        ds_s,
        "--set",
        "lance.auto_cleanup.interval=5",
        "--set",
        "k=v",
    ]);
    assert_eq!(set["version"].as_u64().unwrap(), before + 1);
    let config = &set["maps"][0];
    assert_eq!(config[0], "config");
    assert_eq!(config[1]["k"], "v");
    assert_eq!(config[1]["lance.auto_cleanup.interval"], "5");
    json(&["--json", "meta", ds_s, "--unset", "k"]);
    json(&[
        "--json", "meta", ds_s, "--map", "table", "--set", "owner=me",
    ]);
    json(&["--json", "meta", ds_s, "--map", "schema", "--set", "s=1"]);
    let first = json(&["--json", "schema", ds_s])["fields"][0]["name"]
        .as_str()
        .unwrap()
        .to_string();
    let field = format!("field:{first}");
    let last = json(&["--json", "meta", ds_s, "--map", &field, "--set", "d=x"]);
    assert_eq!(last["version"].as_u64().unwrap(), before + 5);
    assert!(last["maps"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m[0] == field.as_str() && m[1]["d"] == "x"));
    let seen = py(
        "import lance, sys\nds = lance.dataset(sys.argv[1])\n\
         print(sorted(ds.config().items()), sorted(ds.metadata.items()), sorted(ds.schema_metadata.items()), \
         ds.schema.field(sys.argv[2]).metadata)",
        &[ds_s, &first],
    );
    if !seen.is_empty() {
        assert_eq!(
            seen,
            "[('lance.auto_cleanup.interval', '5')] [('owner', 'me')] [('s', '1')] {b'd': b'x'}"
        );
    }
    // mistakes: one line, exit 1, no new version
    for bad in [
        vec!["meta", ds_s, "--set", "novalue"],
        vec!["meta", ds_s, "--map", "field:nope", "--set", "a=b"],
        vec!["meta", ds_s, "--map", "columns", "--set", "a=b"],
        vec!["meta", ds_s, "--replace", "--unset", "a"],
    ] {
        let out = lancer().args(&bad).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{bad:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{bad:?}: {err}");
    }
    assert_eq!(
        json(&["--json", "meta", ds_s])["version"].as_u64().unwrap(),
        before + 5
    );
}
