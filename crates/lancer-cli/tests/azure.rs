//! Datasets on Azure Blob Storage through Azurite (the Azure emulator, installed from
//! npm and started by `scripts/test.sh`, which exports `LANCER_AZURE_CONTAINER` and the
//! standard `AZURE_*` settings for the emulator): Lancer writes, deletes and indexes an
//! `az://` dataset and pylance 14 reads it and appends; pylance writes, Lancer reads;
//! four processes committing at once lose nothing (Azure's conditional puts).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{json_ids, lancer, ok, py, pylance14, service, stdout, TempDir};

/// The container of the emulator, or None (a failure under the test script when npm
/// is there to install Azurite).
fn container() -> Option<String> {
    service(
        "LANCER_AZURE_CONTAINER",
        "LANCER_REQUIRE_AZURITE",
        "the Azure emulator",
    )
}

fn uri(container: &str, name: &str) -> String {
    format!("az://{container}/{name}-{}", std::process::id())
}

fn csv(dir: &Path, name: &str, ids: impl Iterator<Item = i64>) -> PathBuf {
    let p = dir.join(format!("{name}.csv"));
    let mut s = String::from("id,name\n");
    for i in ids {
        s.push_str(&format!("{i},n{}\n", i % 13));
    }
    std::fs::write(&p, s).unwrap();
    p
}

fn ids_of(out: &Output) -> Vec<i64> {
    let mut v = json_ids(out);
    v.sort_unstable();
    v
}

#[test]
fn azure_datasets_round_trip_with_pylance() {
    let Some(c) = container() else { return };
    let ds = uri(&c, "round-trip");
    let dir = TempDir::new("az-round-trip");
    let input = csv(&dir, "rt", 0..1_000);
    ok(lancer()
        .args(["import", "--max-rows-per-file", "300"])
        .arg(&input)
        .arg(&ds));
    ok(lancer().args(["delete", &ds, "--where", "id % 10 = 3"]));
    ok(lancer().args(["index", "create", &ds, "--column", "id", "--type", "btree"]));
    assert_eq!(stdout(&ok(lancer().args(["count", &ds]))), "900");
    let got = ok(lancer().args(["--json", "cat", &ds, "--filter", "id BETWEEN 500 AND 519"]));
    let want: Vec<i64> = (500..520).filter(|i| i % 10 != 3).collect();
    assert_eq!(ids_of(&got), want);
    let seen = py(
        "import lance, sys\n\
         ds = lance.dataset(sys.argv[1])\n\
         t = ds.to_table(filter='id BETWEEN 500 AND 519')\n\
         print(ds.count_rows(), sorted(t['id'].to_pylist()) == [i for i in range(500, 520) if i % 10 != 3], [i['name'] for i in ds.list_indices()])\n\
         ds = lance.write_dataset(ds.to_table(limit=5), sys.argv[1], mode='append')\n\
         print(ds.count_rows())",
        &[&ds],
    );
    if !seen.is_empty() {
        assert_eq!(
            seen, "900 True ['id_idx']\n905",
            "pylance's read of Lancer's Azure dataset"
        );
        assert_eq!(stdout(&ok(lancer().args(["count", &ds]))), "905");
    }
    ok(lancer().args(["verify", &ds]));
    let _ = std::fs::remove_file(&input);
}

#[test]
fn pylance_azure_datasets_read_in_lancer() {
    let Some(c) = container() else { return };
    if pylance14().is_none() {
        return;
    }
    let ds = uri(&c, "from-pylance");
    py(
        "import lance, sys, pyarrow as pa\n\
         t = pa.table({'id': pa.array(range(2000), pa.int64()), 's': [f'v{i % 7}' for i in range(2000)]})\n\
         ds = lance.write_dataset(t, sys.argv[1], max_rows_per_file=500, data_storage_version='2.1')\n\
         ds.delete('id % 4 = 1')",
        &[&ds],
    );
    assert_eq!(stdout(&ok(lancer().args(["count", &ds]))), "1500");
    let all = ok(lancer().args(["--json", "cat", &ds, "--columns", "id"]));
    let want: Vec<i64> = (0..2000).filter(|i| i % 4 != 1).collect();
    assert_eq!(ids_of(&all), want);
    let n = stdout(&ok(lancer().args(["count", &ds, "--filter", "s = 'v3'"])));
    let want = (0..2000).filter(|i| i % 4 != 1 && i % 7 == 3).count();
    assert_eq!(n, want.to_string());
}

/// Four processes append twice each at once: Azure's conditional put lets one writer
/// win each version, the others rebase; 8 commits after the first, none lost.
#[test]
fn concurrent_azure_commits_lose_nothing() {
    let Some(c) = container() else { return };
    let ds = uri(&c, "concurrent");
    let dir = TempDir::new("az-concurrent");
    let first = csv(&dir, "c0", 0..10);
    ok(lancer().arg("import").arg(&first).arg(&ds));
    let inputs: Vec<PathBuf> = (0..4)
        .map(|p| {
            csv(
                &dir,
                &format!("c{}", p + 1),
                (1_000 * (p + 1))..(1_000 * (p + 1) + 5),
            )
        })
        .collect();
    let kids: Vec<_> = inputs
        .iter()
        .map(|input| {
            let (ds, input) = (ds.clone(), input.clone());
            std::thread::spawn(move || {
                for _ in 0..2 {
                    ok(lancer()
                        .arg("import")
                        .arg(&input)
                        .arg(&ds)
                        .args(["--mode", "append"]));
                }
            })
        })
        .collect();
    for k in kids {
        k.join().unwrap();
    }
    let v: serde_json::Value =
        serde_json::from_str(&stdout(&ok(lancer().args(["--json", "versions", &ds])))).unwrap();
    let versions: Vec<u64> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_u64().unwrap())
        .collect();
    assert_eq!(
        versions,
        (1..=9).collect::<Vec<_>>(),
        "one version per commit"
    );
    assert_eq!(stdout(&ok(lancer().args(["count", &ds]))), "50");
}
