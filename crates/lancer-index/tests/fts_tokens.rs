//! The INVERTED-index analyzer against pylance 11, 12 and 14: the golden data of
//! `scripts/gen_golden_fts.py` (docs/fts-index-format.md §14). For every case of every
//! version, the `params` JSON of each index segment round-trips byte for byte through
//! [`AnalyzerParams`], and the analyzer of the text index reproduces every
//! `token_streams` entry (what `lance.tokenize` returned, positions rebased to the first
//! kept token); the `tokenizer_probes` of `index.json` (English stop words, English
//! stems, tricky samples) are reproduced too. 11 and 12 use NLTK's stop words. The `icu`
//! and `icu/split` base tokenizers (the `icu` case and the icu samples) must be supported:
//! only `jieba/…` and `lindera/…` may be skipped as unsupported.
//!
//! Runs when `LANCER_GOLDEN_FTS_LIVE` names the generator's output directory (the one
//! holding `pylance-14/`, `pylance-12/`, `pylance-11/`); prints `SKIPPED` otherwise, and
//! fails instead when `LANCER_REQUIRE_PYLANCE` is set.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use lancer_index::inverted::tokenizer::{AnalyzerParams, StopWordLists, Token};
use serde_json::Value;

/// The output directory of scripts/gen_golden_fts.py (`LANCER_GOLDEN_FTS_LIVE`).
fn golden_root() -> Option<PathBuf> {
    lancer_testkit::oracle::live_dir("LANCER_GOLDEN_FTS_LIVE")
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `[[text, position], ...]` of the golden files.
fn golden_tokens(v: &Value) -> Vec<(String, u32)> {
    v.as_array()
        .expect("token list")
        .iter()
        .map(|t| {
            (
                t[0].as_str().expect("token text").to_owned(),
                t[1].as_u64().expect("token position") as u32,
            )
        })
        .collect()
}

/// Our tokens as `lance.tokenize` shows them: positions minus the first token's.
fn rebased(tokens: &[Token]) -> Vec<(String, u32)> {
    let first = tokens.first().map_or(0, |t| t.position);
    tokens
        .iter()
        .map(|t| (t.text.clone(), t.position - first))
        .collect()
}

/// pylance 14's defaults with `overrides` (a JSON object) on top.
fn params_with(overrides: &[(&str, Value)], lists: StopWordLists) -> AnalyzerParams {
    let mut map: serde_json::Map<String, Value> =
        serde_json::from_str(&AnalyzerParams::defaults().to_json()).unwrap();
    for (k, v) in overrides {
        map.insert((*k).to_owned(), v.clone());
    }
    let mut p = AnalyzerParams::from_json(&Value::Object(map).to_string()).unwrap();
    p.stop_word_lists = lists;
    p
}

#[derive(Default)]
struct Counts {
    cases: usize,
    params_round_tripped: usize,
    streams: usize,
    streams_matched: usize,
    unsupported_streams: usize,
    probes: usize,
    probes_matched: usize,
    unsupported_probes: usize,
    icu_streams: usize,
    icu_streams_matched: usize,
    icu_probes: usize,
    icu_probes_matched: usize,
}

/// `icu` or `icu/split`, which Lancer must support.
fn is_icu(base_tokenizer: &str) -> bool {
    matches!(base_tokenizer, "icu" | "icu/split")
}

fn check_version(dir: &Path, major: u32, failures: &mut Vec<String>) -> Counts {
    let lists = StopWordLists::for_pylance_major(major);
    let index = read_json(&dir.join("index.json"));
    let mut n = Counts::default();
    let mut out = Vec::new();

    for case in index["cases"].as_array().expect("cases") {
        let name = case["name"].as_str().expect("case name");
        if case["status"] != "ok" {
            failures.push(format!("pylance-{major} {name}: status {}", case["status"]));
            continue;
        }
        let golden = read_json(&dir.join(format!("{name}.json")));
        n.cases += 1;
        let mut text_params = None;
        for seg in golden["segments"].as_array().expect("segments") {
            let raw = seg["files"]["metadata.lance"]["schema_metadata"]["params"]
                .as_str()
                .expect("params metadata");
            let p = AnalyzerParams::from_json(raw)
                .unwrap_or_else(|e| panic!("pylance-{major} {name}: {e}: {raw}"));
            if p.to_json() == raw {
                n.params_round_tripped += 1;
            } else {
                failures.push(format!(
                    "pylance-{major} {name}: params round trip\n  read  {raw}\n  wrote {}",
                    p.to_json()
                ));
            }
            if seg["name"] == "text_idx" && text_params.is_none() {
                text_params = Some(p);
            }
        }
        let mut p = text_params.expect("a text_idx segment");
        p.stop_word_lists = lists;
        let streams = golden["token_streams"].as_array().expect("token_streams");
        let mut analyzer = match p.analyzer() {
            Ok(a) => a,
            Err(e) => {
                let e = e.to_string();
                if is_icu(&p.base_tokenizer)
                    || !e.contains(&format!(
                        "unsupported base tokenizer '{}'",
                        p.base_tokenizer
                    ))
                {
                    failures.push(format!("pylance-{major} {name}: analyzer: {e}"));
                }
                n.streams += streams.len();
                n.unsupported_streams += streams.len();
                continue;
            }
        };
        let icu = is_icu(&p.base_tokenizer);
        for s in streams {
            n.streams += 1;
            n.icu_streams += usize::from(icu);
            let text = s["text"].as_str().expect("stream text");
            if let Some(e) = s.get("error") {
                failures.push(format!(
                    "pylance-{major} {name}: pylance refused {text:?}: {e}"
                ));
                continue;
            }
            analyzer.tokens(text, &mut out);
            let got = rebased(&out);
            let want = golden_tokens(&s["tokens"]);
            if got == want {
                n.streams_matched += 1;
                n.icu_streams_matched += usize::from(icu);
            } else {
                failures.push(format!(
                    "pylance-{major} {name}: {text:?}\n  pylance {want:?}\n  lancer  {got:?}"
                ));
            }
        }
    }

    // tokenizer_probes: the generator's base settings.
    let probes = &index["tokenizer_probes"];
    let base = [
        ("base_tokenizer", Value::from("simple")),
        ("language", Value::from("English")),
        ("stem", Value::from(false)),
        ("remove_stop_words", Value::from(true)),
        ("lower_case", Value::from(true)),
        ("ascii_folding", Value::from(false)),
        ("max_token_length", Value::Null),
    ];
    let texts = |p: &AnalyzerParams, text: &str| -> Vec<String> {
        let mut out = Vec::new();
        p.analyzer().unwrap().tokens(text, &mut out);
        out.into_iter().map(|t| t.text).collect()
    };
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .expect("string list")
            .iter()
            .map(|s| s.as_str().expect("string").to_owned())
            .collect()
    };
    let stop = params_with(&base, lists);
    let mut plain_over = base.to_vec();
    plain_over[3].1 = Value::from(false);
    let plain = params_with(&plain_over, lists);
    for (word, want) in probes["stop_words_english"]
        .as_object()
        .expect("stop_words_english")
    {
        for (p, key) in [(&stop, "kept"), (&plain, "plain")] {
            n.probes += 1;
            let got = texts(p, word);
            if got == strings(&want[key]) {
                n.probes_matched += 1;
            } else {
                failures.push(format!(
                    "pylance-{major} stop-word probe {word:?} ({key}): pylance {} lancer {got:?}",
                    want[key]
                ));
            }
        }
    }
    let mut stem_over = base.to_vec();
    stem_over[2].1 = Value::from(true);
    stem_over[3].1 = Value::from(false);
    let stem = params_with(&stem_over, lists);
    for (word, want) in probes["stems_english"].as_object().expect("stems_english") {
        n.probes += 1;
        let got = texts(&stem, word);
        if got == strings(want) {
            n.probes_matched += 1;
        } else {
            failures.push(format!(
                "pylance-{major} stem probe {word:?}: pylance {want} lancer {got:?}"
            ));
        }
    }
    for s in probes["samples"].as_array().expect("samples") {
        n.probes += 1;
        let bt = s["base_tokenizer"].as_str().expect("base_tokenizer");
        let text = s["text"].as_str().expect("sample text");
        let mut over = vec![("base_tokenizer", Value::from(bt))];
        for (k, v) in s["options"].as_object().expect("options") {
            over.push((k.as_str(), v.clone()));
        }
        let p = params_with(&over, lists);
        let icu = is_icu(bt);
        n.icu_probes += usize::from(icu);
        let mut analyzer = match p.analyzer() {
            Ok(a) => a,
            Err(e) => {
                if !icu && e.to_string().contains("unsupported base tokenizer") {
                    n.unsupported_probes += 1;
                } else {
                    failures.push(format!("pylance-{major} sample {bt} {text:?}: {e}"));
                }
                continue;
            }
        };
        if let Some(e) = s.get("error") {
            failures.push(format!(
                "pylance-{major} sample {bt} {text:?}: pylance refused: {e}"
            ));
            continue;
        }
        analyzer.tokens(text, &mut out);
        let got = rebased(&out);
        let want = golden_tokens(&s["tokens"]);
        if got == want {
            n.probes_matched += 1;
            n.icu_probes_matched += usize::from(icu);
        } else {
            failures.push(format!(
                "pylance-{major} sample {bt} {} {text:?}\n  pylance {want:?}\n  lancer  {got:?}",
                s["options"]
            ));
        }
    }
    n
}

#[test]
fn token_streams_equal_pylance() {
    let Some(root) = golden_root() else { return };
    let mut failures = Vec::new();
    let mut versions = 0;
    for major in [14, 12, 11] {
        let dir = root.join(format!("pylance-{major}"));
        if !dir.join("index.json").is_file() {
            println!("pylance-{major}: no golden data under {}", dir.display());
            continue;
        }
        versions += 1;
        let n = check_version(&dir, major, &mut failures);
        println!(
            "pylance-{major}: {} cases, {} params round-tripped; token streams {}/{} matched \
             ({} with an unsupported base tokenizer); probes {}/{} matched ({} unsupported); \
             icu / icu-split: token streams {}/{}, probes {}/{}",
            n.cases,
            n.params_round_tripped,
            n.streams_matched,
            n.streams - n.unsupported_streams,
            n.unsupported_streams,
            n.probes_matched,
            n.probes - n.unsupported_probes,
            n.unsupported_probes,
            n.icu_streams_matched,
            n.icu_streams,
            n.icu_probes_matched,
            n.icu_probes,
        );
        if n.icu_streams == 0 || n.icu_probes == 0 {
            failures.push(format!(
                "pylance-{major}: the golden data has no icu case or no icu sample"
            ));
        }
    }
    assert!(
        versions > 0,
        "no pylance-*/index.json under {}",
        root.display()
    );
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
