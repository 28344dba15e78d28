//! Full-text indexes on awkward shapes (scripts/gen_fts_shapes.py: partly / all null,
//! empty, all-empty strings, stop words only, one repeated document, long documents over
//! several pages, `large_string`, accents / CJK / emoji, all deleted): Lancer answers
//! like pylance on pylance's index, builds its own on the same data and answers the
//! same, and pylance 14 / 12 / 11 query Lancer's index with the same answers.

use std::path::PathBuf;
use std::process::Command;

use lancer::index::{create_fts_index, FtsIndexOptions};
use lancer::search::{full_text_addresses, FtsOptions};
use lancer::Dataset;
use serde_json::Value;

use lancer_testkit::oracle::live_dir;

use crate::common::{copy_dir, pylance, repo, TempDir};
use crate::fts::{compare, ids_of, options_of, query_of};

fn roots() -> Vec<PathBuf> {
    let Some(live) = live_dir("LANCER_FTS_SHAPES_LIVE") else {
        return Vec::new();
    };
    ["14", "12", "11"]
        .iter()
        .map(|v| live.join(format!("pylance-{v}")))
        .collect()
}

/// Ids and scores of an answer, or why there is none.
type Answer = Result<(Vec<i64>, Vec<f32>), String>;

fn want(a: &Value) -> Option<(Vec<i64>, Vec<f32>)> {
    let ids = a["ids"].as_array()?;
    Some((
        ids.iter().map(|x| x.as_i64().unwrap()).collect(),
        a["scores"]
            .as_array()?
            .iter()
            .map(|x| x.as_f64().unwrap() as f32)
            .collect(),
    ))
}

/// Lancer's answers to `queries` on `ds` (ids and scores, or the error).
fn lancer_answers(ds: &Dataset, queries: &[Value]) -> Vec<Answer> {
    queries
        .iter()
        .map(|q| {
            let opts: FtsOptions = options_of(&q["options"]);
            full_text_addresses(ds, &query_of(&q["query"]), &opts)
                .map(|r| {
                    let addrs: Vec<u64> = r.iter().map(|x| x.0).collect();
                    (ids_of(ds, &addrs), r.iter().map(|x| x.1).collect())
                })
                .map_err(|e| e.to_string())
        })
        .collect()
}

/// The comparison of `got` with pylance's answers to `queries` on one shape.
fn check(queries: &[Value], pylance_answers: &[Value], got: &[Answer], at: &str) {
    for ((q, w), g) in queries.iter().zip(pylance_answers).zip(got) {
        let at = format!("{at} {}", q["query"]);
        match (g, want(w)) {
            (Ok(g), Some(w)) => {
                let cut = q["options"]["limit"]
                    .as_u64()
                    .is_some_and(|l| w.0.len() as u64 >= l);
                if let Err(e) = compare(g, &w, cut) {
                    panic!("{at}: {e}");
                }
            }
            (Err(e), None) => eprintln!("{at}: both refuse ({e} / {})", w["error"]),
            (g, _) => panic!("{at}: Lancer {g:?}, pylance {w}"),
        }
    }
}

#[test]
fn fts_on_generated_shapes_answers_like_pylance_both_ways() {
    let tmp = TempDir::new("fts-shapes");
    // (what, Lancer-built dataset, the queries, pylance's answers on its own index)
    let mut built: Vec<(String, PathBuf, Vec<Value>, Vec<Value>)> = Vec::new();
    for root in roots() {
        let v = root
            .file_name()
            .unwrap()
            .to_string_lossy()
            .trim_start_matches("pylance-")
            .to_string();
        let summary: Value =
            serde_json::from_slice(&std::fs::read(root.join("shapes.json")).unwrap()).unwrap();
        let queries = summary["queries"].as_array().unwrap();
        for shape in summary["shapes"].as_array().unwrap() {
            let name = shape["name"].as_str().unwrap();
            assert_eq!(shape["status"], "ok", "pylance {v} {name}");
            let pylance_answers = shape["answers"].as_array().unwrap();
            let at = format!("pylance {v} {name}");
            // pylance's index, read by Lancer
            let ds = Dataset::open(root.join(name).join("index")).unwrap();
            let got = lancer_answers(&ds, queries);
            check(
                queries,
                pylance_answers,
                &got,
                &format!("{at} on pylance's index"),
            );
            // Lancer's own index on the same rows
            let mine = tmp.join(format!("{v}-{name}"));
            copy_dir(&root.join(name).join("data"), &mine);
            let ds = Dataset::open(&mine).unwrap();
            let mut opts = FtsIndexOptions::default();
            opts.params.with_position = true;
            let ds = create_fts_index(&ds, "text", &opts, None)
                .unwrap_or_else(|e| panic!("{at}: Lancer's build: {e}"));
            let got = lancer_answers(&ds, queries);
            check(
                queries,
                pylance_answers,
                &got,
                &format!("{at} on Lancer's index"),
            );
            built.push((at, mine, queries.clone(), pylance_answers.clone()));
        }
    }
    // and pylance on Lancer's indexes: one process per version for every shape (starting
    // pylance costs ~1 s)
    for pv in ["14", "12", "11"] {
        let Some(py) = pylance(pv) else { continue };
        let out = Command::new(&py)
            .arg(repo().join("scripts/gen_fts_shapes.py"))
            .arg("--answer")
            .args(built.iter().map(|b| &b.1))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "pylance {pv} on Lancer's indexes: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
        let seen = seen.as_array().unwrap();
        assert_eq!(
            seen.len(),
            built.len(),
            "pylance {pv} answers every dataset"
        );
        for ((at, _, queries, pylance_answers), got) in built.iter().zip(seen) {
            assert_eq!(
                got["indices"], 1,
                "pylance {pv} lists Lancer's index ({at})"
            );
            let answers: Vec<Answer> = got["answers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| want(a).ok_or_else(|| a["error"].to_string()))
                .collect();
            check(
                queries,
                pylance_answers,
                &answers,
                &format!("{at}: pylance {pv} on Lancer's index"),
            );
        }
    }
    if !roots().is_empty() {
        assert_eq!(built.len(), 30, "10 shapes x 3 versions");
    }
}
