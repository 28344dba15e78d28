//! Lance 2.3 files written by pylance 14 (`scripts/gen_golden_v23.py`): every file
//! decodes exactly like pylance's read-back — whole, by row ranges and by random takes —
//! and hostile variants give typed errors, never a panic. Reads the checked-in set
//! under `tests/data/v23/pylance-14/` plus, when `LANCER_GOLDEN_V23_LIVE` is set (by
//! scripts/test.sh), the live output of the generator for every pinned pylance (an
//! `index.json` saying "2.3 not supported" for pylance < 14). With
//! `LANCER_REQUIRE_PYLANCE` set, missing live output is a failure.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use lancer_format::container::FileVersion;
use lancer_format::read::TracingRead;
use lancer_format::reader::FileReader;
use lancer_format::FormatError;

use crate::corrupt::{check_mutant, mutations, Rng};
use crate::golden::run_file;

fn checked_in() -> PathBuf {
    lancer_testkit::repo().join("tests/data/v23")
}

fn roots() -> Vec<PathBuf> {
    let mut roots = vec![checked_in()];
    let required = lancer_testkit::oracle::required();
    if let Some(live) = lancer_testkit::oracle::live_dir("LANCER_GOLDEN_V23_LIVE") {
        // Every pinned pylance leaves an index.json (files, or "2.3 not supported").
        let indexes = std::fs::read_dir(&live)
            .map(|d| {
                d.flatten()
                    .filter(|e| e.path().join("index.json").exists())
                    .count()
            })
            .unwrap_or(0);
        assert!(
            !required || indexes > 0,
            "LANCER_GOLDEN_V23_LIVE={} holds no generator output",
            live.display()
        );
        roots.push(live);
    }
    roots
}

/// The `.lance` files of every generator output directory, split by whether its
/// index.json says the pylance that wrote them has no 2.3 as pylance 14 defines it.
fn lance_files() -> (Vec<PathBuf>, Vec<PathBuf>) {
    let (mut supported, mut prerelease) = (Vec::new(), Vec::new());
    for root in roots() {
        let Ok(dirs) = std::fs::read_dir(&root) else {
            continue;
        };
        for d in dirs.flatten() {
            let index = std::fs::read_to_string(d.path().join("index.json")).unwrap_or_default();
            let unsupported = index.contains("\"unsupported\"");
            let Ok(fs) = std::fs::read_dir(d.path()) else {
                continue;
            };
            for f in fs.flatten() {
                let p = f.path();
                if p.extension().is_some_and(|e| e == "lance") {
                    if unsupported {
                        prerelease.push(p);
                    } else {
                        supported.push(p);
                    }
                }
            }
        }
    }
    supported.sort();
    prerelease.sort();
    (supported, prerelease)
}

/// (lance, arrow) pairs of every 2.3 golden set.
fn files() -> Vec<(PathBuf, PathBuf)> {
    lance_files()
        .0
        .into_iter()
        .map(|p| {
            let exp = p.with_extension("arrow");
            assert!(exp.exists(), "{} has no .arrow beside it", p.display());
            (p, exp)
        })
        .collect()
}

#[test]
fn v23_prerelease_files_are_refused_like_pylance_14() {
    // pylance 11 / 12 accept version="2.3" but write 2.1-grammar pages that pylance 14
    // refuses; Lancer refuses them the same way, with a typed error.
    let files = lance_files().1;
    assert!(!files.is_empty(), "no pre-release 2.3 probe files");
    for p in files {
        let bytes = Bytes::from(std::fs::read(&p).unwrap());
        match FileReader::open(Arc::new(bytes)) {
            Err(e @ FormatError::UnsupportedEncoding { .. }) => {
                assert!(
                    e.to_string().contains("pre-release 2.3"),
                    "{}: {e}",
                    p.display()
                )
            }
            Err(e) => panic!("{}: refused with an unexpected error: {e}", p.display()),
            Ok(_) => panic!("{}: a pre-release 2.3 file was opened", p.display()),
        }
    }
}

/// Golden cases Lancer refuses on purpose (every column, with a typed error naming
/// the corner): file stem, and text the error must contain.
const REFUSED: &[(&str, &str)] = &[("fsl_struct.v2.3", "fixed-size list of Struct")];

fn refused(lance: &Path) -> Option<&'static str> {
    let stem = lance.file_stem()?.to_str()?;
    REFUSED
        .iter()
        .find(|(s, _)| *s == stem)
        .map(|(_, why)| *why)
}

#[test]
fn v23_golden_files_decode_like_pylance() {
    let files = files();
    assert!(files.len() >= 10, "only {} 2.3 golden files", files.len());
    let mut failures = Vec::new();
    for (lance, arrow) in &files {
        let bytes = Bytes::from(std::fs::read(lance).unwrap());
        let opened = FileReader::open(Arc::new(bytes));
        if let (Some(why), Err(e)) = (refused(lance), &opened) {
            // Refused at open (Lancer's schema has no such type): typed.
            if !matches!(e, FormatError::UnsupportedType { .. }) {
                failures.push(format!(
                    "{}: refused with {e}, not a typed {why}",
                    lance.display()
                ));
            }
            continue;
        }
        let r = opened.unwrap();
        assert_eq!(
            r.metadata().version,
            FileVersion::V2_3,
            "{}",
            lance.display()
        );
        if let Some(why) = refused(lance) {
            for f in r.schema().fields() {
                let cols = [f.name().as_str()];
                for got in [
                    r.read_all(Some(&cols)),
                    r.read_range(1..3, Some(&cols)),
                    r.take(&[2, 0], Some(&cols)),
                ] {
                    match got {
                        Err(e @ FormatError::UnsupportedEncoding { .. })
                            if e.to_string().contains(why) => {}
                        other => failures.push(format!(
                            "{}: column {} should be refused ({why}), got {:?}",
                            lance.display(),
                            f.name(),
                            other.map(|b| b.num_rows())
                        )),
                    }
                }
            }
            continue;
        }
        run_file(lance, arrow, &mut failures);
    }
    for f in &failures {
        eprintln!("{f}");
    }
    assert!(
        failures.is_empty(),
        "{} failures over {} files",
        failures.len(),
        files.len()
    );
}

#[test]
fn v23_takes_read_only_needed_chunks() {
    // One row of a sparse and of a dense column reads a small part of the file.
    let path = checked_in().join("pylance-14/sparse.v2.3.lance");
    let bytes = Bytes::from(std::fs::read(&path).unwrap());
    let size = bytes.len() as u64;
    let io = Arc::new(TracingRead::new(bytes));
    let reader = FileReader::open(io.clone()).unwrap();
    for col in ["int_n", "list_str", "long_n"] {
        reader.take(&[1234], Some(&[col])).unwrap(); // warm the page plan
        io.clear();
        let got = reader.take(&[2345], Some(&[col])).unwrap();
        assert_eq!(got.num_rows(), 1);
        let read = io.bytes_read();
        assert!(
            read < 20 * 1024 && read * 4 < size,
            "{col}: take of one row read {read} of {size} bytes"
        );
    }
}

#[test]
fn v23_versions_parse_and_writer_refuses() {
    assert_eq!(FileVersion::parse("2.3").unwrap(), FileVersion::V2_3);
    assert_eq!(FileVersion::from_numbers(2, 3).unwrap(), FileVersion::V2_3);
    assert_eq!(FileVersion::V2_3.to_string(), "2.3");
    assert!(FileVersion::from_numbers(2, 4).is_err());
    let schema = Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new(
        "a",
        arrow_schema::DataType::Int32,
        true,
    )]));
    let opts = lancer_format::writer::WriteOptions {
        version: FileVersion::V2_3,
        ..Default::default()
    };
    let err = lancer_format::writer::FileWriter::try_new(Vec::<u8>::new(), schema, opts)
        .err()
        .expect("2.3 writes are refused");
    assert!(
        matches!(err, FormatError::UnsupportedEncoding { .. }) && err.to_string().contains("2.3"),
        "{err}"
    );
}

#[test]
fn v23_corrupt_files_give_errors_not_panics() {
    let files: Vec<_> = files()
        .into_iter()
        .filter(|(p, _)| p.starts_with(checked_in()) && refused(p).is_none())
        .collect();
    let mut rng = Rng(0x5DEE_CE66_D1CE_4E5B);
    let mut failures = Vec::new();
    let (mut tried, mut errors) = (0, 0);
    for (lance, _) in &files {
        let data = std::fs::read(lance).unwrap();
        let mut cases = mutations(&data, &mut rng);
        // Extra flips inside the column metadata (the planar layouts and their sets).
        let footer = data.len() - 40;
        let cm = u64::from_le_bytes(data[footer..footer + 8].try_into().unwrap()) as usize;
        let cmo = u64::from_le_bytes(data[footer + 8..footer + 16].try_into().unwrap()) as usize;
        for _ in 0..30 {
            let mut d = data.clone();
            let pos = cm + rng.below((cmo - cm).max(1) as u64) as usize;
            d[pos] ^= 1 << rng.below(8);
            cases.push((format!("flip metadata byte {pos}"), d));
        }
        // Flips and zeroed words in the page data (chunk tables, sets, values).
        for _ in 0..10 {
            let mut d = data.clone();
            let pos = rng.below(cm.max(1) as u64) as usize;
            let end = (pos + 8).min(cm);
            d[pos..end].fill(0xFF);
            cases.push((format!("clobber data bytes at {pos}"), d));
        }
        let name = lance.file_name().unwrap().to_string_lossy().to_string();
        for (what, bytes) in cases {
            tried += 1;
            if check_mutant(&name, &what, bytes, &mut failures) {
                errors += 1;
            }
        }
    }
    for f in &failures {
        eprintln!("{f}");
    }
    eprintln!("{tried} mutated 2.3 files, {errors} rejected with an error");
    assert!(failures.is_empty(), "{} failures", failures.len());
    assert!(
        errors > tried / 4,
        "only {errors} of {tried} mutations were rejected"
    );
}

#[test]
fn v23_inspect_describes_every_page() {
    // What `lancer inspect` prints: per page a description and the techniques used, and
    // a row located in its page.
    let mut seen = std::collections::BTreeSet::new();
    for (lance, _) in files() {
        if refused(&lance).is_some() {
            continue;
        }
        let bytes = Bytes::from(std::fs::read(&lance).unwrap());
        let r = FileReader::open(Arc::new(bytes)).unwrap();
        let meta = r.metadata();
        for (c, col) in meta.columns.iter().enumerate() {
            for p in &col.pages {
                let d = lancer_format::inspect::describe_page(p);
                assert!(
                    d.starts_with("2.3 ") && !d.contains("unreadable"),
                    "{}: {d}",
                    lance.display()
                );
                seen.extend(lancer_format::inspect::techniques(p));
            }
            if meta.num_rows > 0 {
                assert!(lancer_format::inspect::locate_row(meta, c, meta.num_rows - 1).is_some());
            }
        }
    }
    for t in [
        "2.3:dense",
        "2.3:sparse",
        "2.3:sparse-list",
        "2.3:indexed",
        "range",
        "delta",
        "mini-block",
        "full-zip",
        "rle",
        "fsst",
    ] {
        assert!(
            seen.contains(t),
            "no 2.3 golden page uses {t} (seen: {seen:?})"
        );
    }
}
