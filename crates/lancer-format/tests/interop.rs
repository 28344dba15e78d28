//! Interop, the other direction: files Lancer writes are read by pylance (14, 12 and
//! 11, each from its own venv under `.venv/`, installed by `scripts/setup-python.sh`)
//! with identical values. The venvs are required when `LANCER_REQUIRE_PYLANCE` is set
//! (as `scripts/test.sh` does); otherwise a missing venv skips the check loudly.

use std::path::Path;

use lancer_format::container::FileVersion;
use lancer_format::writer::{write_to_vec, WriteOptions};
use lancer_testkit::arrow::write_file as write_arrow;
use lancer_testkit::TempDir;

use crate::roundtrip::inputs;

/// Writes every golden table with Lancer into `dir` (both versions, small pages too).
fn write_all(dir: &Path) -> usize {
    let mut n = 0;
    for (name, batch) in inputs() {
        for v in [FileVersion::V2_1, FileVersion::V2_2] {
            if !crate::roundtrip::writable(&name, v) {
                continue;
            }
            for (tag, page) in [
                ("", lancer_format::writer::DEFAULT_MAX_PAGE_BYTES),
                (".smallpages", 16 * 1024),
            ] {
                let opts = WriteOptions {
                    version: v,
                    max_page_bytes: page,
                    ..Default::default()
                };
                let bytes =
                    write_to_vec(batch.schema(), std::slice::from_ref(&batch), opts).unwrap();
                let stem = format!("{name}.v{v}{tag}");
                std::fs::write(dir.join(format!("{stem}.lance")), bytes).unwrap();
                write_arrow(&dir.join(format!("{stem}.arrow")), &batch);
                n += 1;
            }
        }
    }
    // Random tables from the property test, too.
    for seed in 1..=60 {
        let (batch, batches, opts, _) = crate::random::case(seed);
        let stem = format!("random-{seed}.v{}", opts.version);
        let bytes = write_to_vec(batch.schema(), &batches, opts).unwrap();
        std::fs::write(dir.join(format!("{stem}.lance")), bytes).unwrap();
        write_arrow(&dir.join(format!("{stem}.arrow")), &batch);
        n += 1;
    }
    n
}

#[test]
fn pylance_reads_lancer_files() {
    let dir = TempDir::new("format-written");
    let written = write_all(&dir);
    assert!(written > 20);
    let required = lancer_testkit::oracle::required();
    let mut ran = 0;
    for v in ["14", "12", "11"] {
        let Some(py) = lancer_testkit::pylance(v) else {
            continue;
        };
        // pylance {v} must read Lancer-written files as written (its check fails otherwise)
        let script = lancer_testkit::oracle::script("check_lancer_files.py");
        let text = lancer_testkit::oracle::run_python(&py, [script.as_path(), dir.path()]);
        eprintln!("{text}");
        ran += 1;
    }
    assert!(ran > 0 || !required);
}
