//! Legacy (0.1 / 0.2) data files written by pylance 14 and 11
//! (`scripts/gen_golden_legacy.py`, checked in under `tests/data/legacy/`, plus the
//! ones written live by the test script, `LANCER_GOLDEN_LEGACY_LIVE`): each decodes
//! to exactly what pylance read back — whole, by row ranges, by random takes; files
//! pylance refuses are refused with a typed error; mutated and truncated legacy files
//! give errors, never panics, hangs or outsized allocations.

use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use lancer_format::container::FileVersion;
use lancer_format::read::{RangeRead, TracingRead};
use lancer_format::reader::FileReader;
use lancer_format::FormatError;
use prost::Message;

use crate::corrupt::{check_mutant, Rng};
use crate::golden::run_file;

fn checked_in() -> PathBuf {
    lancer_testkit::repo().join("tests/data/legacy")
}

/// The checked-in legacy sets and the live ones; with `LANCER_REQUIRE_PYLANCE` the
/// live ones must exist.
pub fn legacy_roots() -> Vec<PathBuf> {
    let mut roots = vec![checked_in()];
    roots.extend(lancer_testkit::oracle::live_dir(
        "LANCER_GOLDEN_LEGACY_LIVE",
    ));
    roots
}

/// Every `pylance-*/<case>.expected/index.json` under the roots.
pub fn legacy_cases() -> Vec<(PathBuf, serde_json::Value)> {
    let mut out = Vec::new();
    for root in legacy_roots() {
        let Ok(sets) = std::fs::read_dir(&root) else {
            continue;
        };
        for set in sets.flatten() {
            let Ok(cases) = std::fs::read_dir(set.path()) else {
                continue;
            };
            for case in cases.flatten() {
                let index = case.path().join("index.json");
                if let Ok(text) = std::fs::read_to_string(&index) {
                    out.push((case.path(), serde_json::from_str(&text).unwrap()));
                }
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// (legacy data file, what pylance read of it) pairs.
fn legacy_files() -> Vec<(PathBuf, PathBuf)> {
    let mut out = Vec::new();
    for (exp, index) in legacy_cases() {
        let name = exp.file_name().unwrap().to_string_lossy().to_string();
        let ds = exp.with_file_name(name.trim_end_matches(".expected"));
        for (file, info) in index["files"].as_object().unwrap() {
            let want = exp.join(info["expected"].as_str().unwrap());
            out.push((ds.join("data").join(file), want));
        }
    }
    out
}

#[test]
fn legacy_files_decode_like_pylance() {
    let files = legacy_files();
    // Both checked-in pylance versions, every case.
    for v in ["pylance-14", "pylance-11"] {
        assert!(
            files
                .iter()
                .filter(|(f, _)| f.starts_with(checked_in().join(v)))
                .count()
                >= 8,
            "too few checked-in legacy files of {v}"
        );
    }
    let mut failures = Vec::new();
    for (lance, arrow) in &files {
        let bytes = Bytes::from(std::fs::read(lance).unwrap());
        match FileReader::open(Arc::new(bytes)) {
            Ok(r) if r.metadata().version == FileVersion::Legacy && r.legacy().is_some() => {}
            Ok(r) => failures.push(format!(
                "{}: opened as {}",
                lance.display(),
                r.metadata().version
            )),
            Err(e) => failures.push(format!("{}: {e}", lance.display())),
        }
        run_file(lance, arrow, &mut failures);
    }
    for f in &failures {
        eprintln!("{f}");
    }
    assert!(
        failures.is_empty(),
        "{} failures over {} legacy files",
        failures.len(),
        files.len()
    );
}

#[test]
fn legacy_refusals_match_pylance() {
    for root in legacy_roots() {
        let Ok(sets) = std::fs::read_dir(&root) else {
            continue;
        };
        for set in sets.flatten() {
            let Ok(text) = std::fs::read_to_string(set.path().join("refused.json")) else {
                continue;
            };
            let refused: serde_json::Value = serde_json::from_str(&text).unwrap();
            // What the reader knows pylance refuses, pylance still refuses.
            for t in [
                "map<utf8,int32>",
                "dictionary<int32, float64>",
                "month_day_nano_interval",
            ] {
                let why = refused[t].as_str().unwrap_or("");
                assert!(
                    why.starts_with("write:") || why.starts_with("read:"),
                    "{}: pylance now accepts {t}: {why}",
                    set.path().display()
                );
            }
            // The file pylance writes but will not read: opened, then a typed refusal
            // of that column alone.
            let data = set.path().join("refused_dict_float/data");
            for f in std::fs::read_dir(&data).unwrap().flatten() {
                let bytes = Bytes::from(std::fs::read(f.path()).unwrap());
                let r = FileReader::open(Arc::new(bytes)).unwrap();
                let ids = r.read_all(Some(&["id"])).unwrap();
                assert_eq!(ids.num_rows(), 2);
                match r.read_all(Some(&["c"])) {
                    Err(FormatError::UnsupportedType { detail, .. }) => {
                        assert!(detail.contains("rewrite"), "{detail}")
                    }
                    other => panic!("float dictionary: {other:?}"),
                }
            }
        }
    }
}

#[test]
fn legacy_take_reads_only_needed_bytes() {
    let (lance, _) = legacy_files()
        .into_iter()
        .find(|(f, _)| f.to_string_lossy().contains("pylance-14/types/"))
        .unwrap();
    let bytes = Bytes::from(std::fs::read(&lance).unwrap());
    let size = bytes.len() as u64;
    let io = Arc::new(TracingRead::new(bytes));
    let reader = FileReader::open(io.clone()).unwrap();
    assert!(reader
        .legacy()
        .unwrap()
        .describe()
        .contains("legacy Lance file"));
    io.clear();
    let n = reader.num_rows();
    let got = reader.take(&[n - 1], Some(&["i64", "s", "vec"])).unwrap();
    assert_eq!(got.num_rows(), 1);
    let read = io.bytes_read();
    // 8 bytes of i64, 16 of positions + the string, 64 of vector.
    assert!(read < 200, "take of one row read {read} of {size} bytes");
    let _ = io.size();
}

fn word(d: &mut [u8], at: usize, v: u64) {
    d[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

fn mutations(data: &[u8], rng: &mut Rng) -> Vec<(String, Vec<u8>)> {
    let len = data.len() as u64;
    let mut out = Vec::new();
    for _ in 0..3 {
        let cut = rng.below(len) as usize;
        out.push((format!("truncate at {cut}"), data[..cut].to_vec()));
    }
    let cut = (len - 1 - rng.below(len.min(300))) as usize;
    out.push((format!("truncate at {cut}"), data[..cut].to_vec()));
    for i in 0..8 {
        let mut d = data.to_vec();
        let pos = if i % 4 == 0 {
            rng.below(len)
        } else {
            len - 1 - rng.below(len.min(2048))
        } as usize;
        d[pos] ^= 1 << rng.below(8);
        out.push((format!("flip byte {pos}"), d));
    }
    // The footer's metadata position.
    let footer = data.len() - 16;
    for v in [
        u64::MAX - rng.below(1000),
        len + rng.below(1 << 20),
        rng.below(len),
        1u64 << rng.below(63),
    ] {
        let mut d = data.to_vec();
        word(&mut d, footer, v);
        out.push((format!("metadata position = {v}"), d));
    }
    // Page-table entries (positions and lengths).
    let mp = u64::from_le_bytes(data[footer..footer + 8].try_into().unwrap()) as usize;
    let ml = u32::from_le_bytes(data[mp..mp + 4].try_into().unwrap()) as usize;
    let meta = lancer_format::pb::file::Metadata::decode(&data[mp + 4..mp + 4 + ml]).unwrap();
    let pt = meta.page_table_position as usize;
    let entries = ((meta.manifest_position as usize).min(mp) - pt) / 8;
    for _ in 0..8 {
        let mut d = data.to_vec();
        let at = pt + 8 * rng.below(entries as u64) as usize;
        let v = match rng.below(4) {
            0 => u64::MAX,
            1 => len * 2,
            2 => rng.below(len),
            _ => 1 << 40,
        };
        word(&mut d, at, v);
        out.push((format!("page table word at {at} = {v}"), d));
    }
    // Value bytes: positions arrays and list offsets live among the pages.
    for _ in 0..4 {
        let mut d = data.to_vec();
        let at = (rng.below(pt.saturating_sub(8) as u64) as usize) & !7;
        word(&mut d, at, u64::MAX >> rng.below(40));
        out.push((format!("page word at {at}"), d));
    }
    out
}

#[test]
fn corrupt_legacy_files_never_panic_hang_or_overallocate() {
    let files: Vec<PathBuf> = legacy_files()
        .into_iter()
        .map(|(f, _)| f)
        .filter(|f| f.starts_with(checked_in()))
        .collect();
    assert!(!files.is_empty());
    let mut rng = Rng(0x5DEE_CE66_D1CE_4E5B);
    let mut failures = Vec::new();
    let (mut tried, mut errors) = (0, 0);
    for lance in &files {
        let data = std::fs::read(lance).unwrap();
        let name = lance.file_name().unwrap().to_string_lossy().to_string();
        for (what, bytes) in mutations(&data, &mut rng) {
            tried += 1;
            if check_mutant(&name, &what, bytes, &mut failures) {
                errors += 1;
            }
        }
    }
    for f in &failures {
        eprintln!("{f}");
    }
    eprintln!("{tried} mutated legacy files, {errors} rejected with an error");
    assert!(
        failures.is_empty(),
        "{} of {tried} mutations misbehaved",
        failures.len()
    );
    assert!(
        errors > tried / 3,
        "too few mutations were detected: {errors} of {tried}"
    );
}
