//! `lancer import --mode append` of data shaped otherwise than the dataset (issue 39,
//! class 6): a Parquet file whose fixed-size list names its item `element` (as every
//! Parquet writer does) appends to the dataset imported from it and to one pylance
//! 14 / 12 / 11 wrote, which that pylance then reads; data the reference refuses (a
//! column of another type) is refused as a user error naming the column, not as a
//! corrupt dataset, and without Rust debug text.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;

use lancer_testkit::oracle::run_python_code;

use common::{lancer, ok, pylance, TempDir};

const WRITE: &str = r#"
import sys, pyarrow as pa, pyarrow.parquet as pq, lance
out, ds, bad = sys.argv[1:4]
t = pa.table({
    "id": pa.array([1, 2, 3], pa.int64()),
    "v": pa.array([[1.0, 2.0], [3.0, 4.0], None], pa.list_(pa.float32(), 2)),
    "s": pa.array(["a", None, "c"]),
})
pq.write_table(t, out)
lance.write_dataset(t, ds)
pq.write_table(t.set_column(0, "id", pa.array(["x", "y", "z"])), bad)
"#;

const READ: &str = r#"
import sys, lance
t = lance.dataset(sys.argv[1]).to_table()
print(t.num_rows, t.schema.field("v").type, t.column("v").to_pylist()[-3:])
"#;

fn import(input: &Path, ds: &Path, mode: &str) -> std::process::Output {
    lancer()
        .args(["import", "--mode", mode])
        .arg(input)
        .arg(ds)
        .output()
        .unwrap()
}

#[test]
fn parquet_appends_fit_lancer_and_pylance_datasets() {
    for v in ["14", "12", "11"] {
        let Some(py) = pylance(v) else { continue };
        let dir = TempDir::new(&format!("appends-{v}"));
        let (pq, theirs, bad) = (
            dir.join("t.parquet"),
            dir.join("theirs"),
            dir.join("bad.parquet"),
        );
        run_python_code(&py, WRITE, [&pq, &theirs, &bad]);
        // the dataset imported from the file takes the very file again
        let mine = dir.join("mine");
        ok(lancer().args(["import"]).arg(&pq).arg(&mine));
        let r = import(&pq, &mine, "append");
        assert!(
            r.status.success(),
            "pylance {v}: {}",
            String::from_utf8_lossy(&r.stderr)
        );
        // pylance's dataset takes it, and that pylance reads the new version
        let r = import(&pq, &theirs, "append");
        assert!(
            r.status.success(),
            "pylance {v}: {}",
            String::from_utf8_lossy(&r.stderr)
        );
        for ds in [&mine, &theirs] {
            let seen = run_python_code(&py, READ, [ds]);
            let seen = seen.trim();
            assert_eq!(
                seen,
                "6 fixed_size_list<item: float>[2] [[1.0, 2.0], [3.0, 4.0], None]",
                "pylance {v} reading {}",
                ds.display()
            );
        }
        // a column of another type: a user error naming it, nothing committed
        let r = import(&bad, &theirs, "append");
        assert!(!r.status.success());
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(err.contains("\"id\""), "{err}");
        assert!(
            !err.contains("corrupt") && !err.contains("Field {"),
            "{err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}
