//! Full-text search over pylance-built INVERTED indexes (scripts/gen_golden_fts.py with
//! pylance 14, 12 and 11: 21 index configurations — tokenizers, stemming, stop words,
//! folding, token lengths, positions, formats 1/2/3, block sizes 128/256, several
//! partitions, two columns, optimized (merged and delta) indexes — over 480 multilingual
//! rows with deletions before and after the build and appended unindexed rows; ~930
//! queries per version: match OR / AND, boost, fuzzy, phrase with slop, boolean,
//! boosting, multi-column, prefilter / postfilter, fast_search, limits). Lancer's answer
//! must equal pylance's: the same `_score` sequence (f32 equality) and the same rows,
//! where pylance's order among equal scores (which varies from run to run) is compared
//! as sets; queries pylance refuses Lancer refuses too.

use std::path::{Path, PathBuf};

use lancer::search::{full_text_addresses, FtsOptions};
use lancer::Dataset;
use lancer_index::inverted::search::{FtsQuery, Occur};
use serde_json::Value;

use lancer_testkit::oracle::live_dir;

use crate::common::TempDir;

/// The live golden roots (pylance-14/12/11), or none when the test script did not make
/// them (a failure with LANCER_REQUIRE_PYLANCE).
fn roots() -> Vec<PathBuf> {
    match live_dir("LANCER_GOLDEN_FTS_LIVE") {
        Some(d) => ["14", "12", "11"]
            .iter()
            .map(|v| d.join(format!("pylance-{v}")))
            .collect(),
        None => Vec::new(),
    }
}

fn text(v: &Value, k: &str) -> String {
    v[k].as_str().unwrap_or_default().to_string()
}

/// A golden query spec as Lancer's query.
pub(crate) fn query_of(q: &Value) -> FtsQuery {
    let and = q["operator"]
        .as_str()
        .is_some_and(|o| o.eq_ignore_ascii_case("and"));
    match q["type"].as_str().unwrap() {
        "string" => FtsQuery::matching(&text(q, "query"), None),
        "dict" => {
            let cols: Vec<String> = q["columns"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_str().unwrap().to_string())
                .collect();
            if cols.len() == 1 {
                FtsQuery::matching(&text(q, "query"), Some(&cols[0]))
            } else {
                FtsQuery::MultiMatch {
                    text: text(q, "query"),
                    boosts: vec![1.0; cols.len()],
                    columns: cols,
                    and: false,
                }
            }
        }
        // the generator's MatchQuery / PhraseQuery default to the `text` column
        "match" => FtsQuery::Match {
            column: Some(q["column"].as_str().unwrap_or("text").to_string()),
            text: text(q, "query"),
            and,
            boost: q["boost"].as_f64().unwrap_or(1.0) as f32,
            fuzziness: q["fuzziness"].as_u64().unwrap_or(0) as u32,
            prefix_length: q["prefix_length"].as_u64().unwrap_or(0) as u32,
            max_expansions: q["max_expansions"].as_u64().unwrap_or(50) as usize,
        },
        "phrase" => FtsQuery::Phrase {
            column: Some(q["column"].as_str().unwrap_or("text").to_string()),
            text: text(q, "query"),
            slop: q["slop"].as_u64().unwrap_or(0) as u32,
        },
        "boolean" => FtsQuery::Boolean(
            q["clauses"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| {
                    let occur = match c[0].as_str().unwrap() {
                        "MUST" => Occur::Must,
                        "SHOULD" => Occur::Should,
                        _ => Occur::MustNot,
                    };
                    (occur, query_of(&c[1]))
                })
                .collect(),
        ),
        "boost" => FtsQuery::Boost {
            positive: Box::new(query_of(&q["positive"])),
            negative: Box::new(query_of(&q["negative"])),
            negative_boost: q["negative_boost"].as_f64().unwrap_or(0.5) as f32,
        },
        "multi_match" => {
            let cols: Vec<String> = q["columns"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_str().unwrap().to_string())
                .collect();
            let boosts = match q["boosts"].as_array() {
                Some(b) => b.iter().map(|x| x.as_f64().unwrap() as f32).collect(),
                None => vec![1.0; cols.len()],
            };
            FtsQuery::MultiMatch {
                text: text(q, "query"),
                columns: cols,
                boosts,
                and,
            }
        }
        other => panic!("query type {other}"),
    }
}

pub(crate) fn options_of(o: &Value) -> FtsOptions {
    FtsOptions {
        limit: o["limit"].as_u64().map(|l| l as usize),
        filter: o["filter"].as_str().map(str::to_string),
        prefilter: o["prefilter"].as_bool().unwrap_or(false),
        fast_search: o["fast_search"].as_bool().unwrap_or(false),
        columns: None,
        row_meta: Default::default(),
    }
}

/// The `id` of each row address (ids are the row's position in the written data).
pub(crate) fn ids_of(ds: &Dataset, addrs: &[u64]) -> Vec<i64> {
    use arrow_array::cast::AsArray;
    let b = ds.take_addresses(addrs, Some(&["id"])).unwrap();
    b.column(0)
        .as_primitive::<arrow_array::types::Int64Type>()
        .values()
        .to_vec()
}

/// Compares Lancer's answer (ids, scores) with pylance's: equal score sequences; the
/// same ids above the last score (pylance orders ties differently from run to run);
/// at the last score, the same ids when nothing was cut there.
pub(crate) fn compare(
    got: &(Vec<i64>, Vec<f32>),
    want: &(Vec<i64>, Vec<f32>),
    cut: bool,
) -> Result<(), String> {
    compare_within(got, want, cut, 0.0)
}

/// [`compare`] with scores equal within `rel` (relative).
fn compare_within(
    got: &(Vec<i64>, Vec<f32>),
    want: &(Vec<i64>, Vec<f32>),
    cut: bool,
    rel: f32,
) -> Result<(), String> {
    if got.1.len() != want.1.len() {
        return Err(format!("{} rows, pylance {}", got.1.len(), want.1.len()));
    }
    for (i, (a, b)) in got.1.iter().zip(&want.1).enumerate() {
        if a != b && (a - b).abs() > rel * b.abs() {
            return Err(format!("score {i}: {a} vs pylance {b}"));
        }
    }
    let Some(&last) = want.1.last() else {
        return Ok(());
    };
    let above = |r: &(Vec<i64>, Vec<f32>), all: bool| -> Vec<i64> {
        let mut v: Vec<i64> =
            r.0.iter()
                .zip(&r.1)
                .filter(|(_, s)| all || (**s - last).abs() > rel * last.abs() && **s != last)
                .map(|(i, _)| *i)
                .collect();
        v.sort_unstable();
        v
    };
    if above(got, !cut) != above(want, !cut) {
        return Err(format!("rows {:?} vs pylance {:?}", got.0, want.0));
    }
    Ok(())
}

/// For a post-filtered query with a limit: whether Lancer's answer `r` is the filtered
/// part of its unfiltered best `limit` rows, and those tie at the cut.
fn postfilter_ok(ds: &Dataset, q: &FtsQuery, opts: &FtsOptions, r: &[(u64, f32)]) -> bool {
    let all = FtsOptions {
        limit: None,
        filter: None,
        ..opts.clone()
    };
    let every = full_text_addresses(ds, q, &all).unwrap();
    let k = opts.limit.unwrap_or(usize::MAX);
    let tie = every.len() > k && every[k - 1].1 == every[k].1;
    let last = every.get(k.saturating_sub(1)).map(|x| x.1);
    tie && r
        .iter()
        .all(|(a, s)| every.iter().any(|(b, t)| a == b && s == t) && last.is_some_and(|l| *s >= l))
}

#[test]
fn pylance_built_fts_indexes_answer_like_pylance() {
    let mut all_failures: Vec<String> = Vec::new();
    for root in roots() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&root)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "json") && !p.ends_with("index.json"))
            .collect();
        files.sort();
        assert!(
            files.len() >= 20,
            "{}: {} cases",
            root.display(),
            files.len()
        );
        let (mut run, mut skipped, mut failures) = (0usize, 0usize, Vec::new());
        for f in files {
            let case: Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
            let name = case["name"].as_str().unwrap().to_string();
            let ds = Dataset::open(root.join(&name)).unwrap_or_else(|e| panic!("{name}: {e}"));
            let ngram = case["params"]["base_tokenizer"].as_str() == Some("ngram");
            for q in case["queries"].as_array().unwrap() {
                let spec = &q["query"];
                let at = format!("{name}: {spec} {}", q["options"]);
                if ngram && spec["fuzziness"].as_u64().is_some_and(|f| f > 0) {
                    // Known gap: pylance matches the rows appended since the build
                    // differently for a fuzzy query on an ngram index (the indexed rows
                    // agree: the query's words are expanded against the grams); the rule
                    // is not known yet (docs/fts-index-format.md §15).
                    skipped += 1;
                    continue;
                }
                let query = query_of(spec);
                let res = full_text_addresses(&ds, &query, &options_of(&q["options"]));
                run += 1;
                match (res, q.get("error")) {
                    (Err(_), Some(_)) => {}
                    (Ok(r), Some(e)) => failures.push(format!(
                        "{at}: pylance refuses ({e}), Lancer gives {} rows",
                        r.len()
                    )),
                    (Err(e), None) => failures.push(format!("{at}: {e}")),
                    (Ok(r), None) => {
                        let addrs: Vec<u64> = r.iter().map(|x| x.0).collect();
                        let got = (
                            ids_of(&ds, &addrs),
                            r.iter().map(|x| x.1).collect::<Vec<_>>(),
                        );
                        let want = (
                            q["ids"]
                                .as_array()
                                .unwrap()
                                .iter()
                                .map(|x| x.as_i64().unwrap())
                                .collect(),
                            q["scores"]
                                .as_array()
                                .unwrap()
                                .iter()
                                .map(|x| x.as_f64().unwrap() as f32)
                                .collect(),
                        );
                        let cut = q["tied_at_cut"].as_bool().unwrap_or(false);
                        let opts = options_of(&q["options"]);
                        if let Err(e) = compare(&got, &want, cut) {
                            // A filter after the best `limit` rows: when rows tie at the
                            // cut, which of them survive varies (pylance's too), so the
                            // answer is only checked to be the filtered part of a best
                            // `limit` (Lancer's unfiltered answer has a tie at its cut).
                            let post =
                                opts.filter.is_some() && !opts.prefilter && opts.limit.is_some();
                            if !(post && postfilter_ok(&ds, &query, &opts, &r)) {
                                failures.push(format!("{at}: {e}"));
                            }
                        }
                    }
                }
            }
        }
        eprintln!(
            "{}: {run} queries, {} differ, {skipped} skipped (fuzzy on ngram)",
            root.display(),
            failures.len()
        );
        assert!(skipped <= 16, "{skipped} skipped");
        assert!(run > 900, "{run} queries");
        all_failures.extend(
            failures
                .into_iter()
                .map(|f| format!("{}: {f}", root.display())),
        );
    }
    assert!(all_failures.is_empty(), "{}", all_failures.join("\n"));
}

/// Whether a query's text holds a word pylance 11 / 12 treat as a stop word and 14 not.
fn stop_list_dependent(q: &Value) -> bool {
    use lancer_index::inverted::tokenizer::{
        ENGLISH_STOP_WORDS_NLTK, ENGLISH_STOP_WORDS_PYLANCE14,
    };
    let text = q.to_string().to_lowercase();
    text.split(|c: char| !c.is_alphanumeric() && c != '\'')
        .flat_map(|w| std::iter::once(w).chain(w.split('\'')))
        .any(|w| ENGLISH_STOP_WORDS_NLTK.contains(&w) && !ENGLISH_STOP_WORDS_PYLANCE14.contains(&w))
}

/// Lancer's analyzer settings for pylance's `create_scalar_index` keywords of a case.
fn params_of(create: &Value) -> lancer_index::inverted::tokenizer::AnalyzerParams {
    let mut m = create.as_object().cloned().unwrap_or_default();
    for k in [
        "format_version",
        "block_size",
        "memory_limit",
        "num_workers",
    ] {
        m.remove(k);
    }
    lancer_index::inverted::tokenizer::AnalyzerParams::from_json(&Value::Object(m).to_string())
        .unwrap()
}

/// What `scripts/check_fts_build.py` run by pylance `v` says of each spec, in order;
/// pylance 12 / 11 answer over Lancer's indexes only.
fn check_fts_build(py: &Path, v: &str, specs: &[&PathBuf]) -> Vec<Value> {
    let mut cmd = std::process::Command::new(py);
    cmd.arg(crate::common::repo().join("scripts/check_fts_build.py"));
    if v != "14" {
        cmd.arg("--on-lancer-only");
    }
    let out = cmd.args(specs).output().unwrap();
    assert!(
        out.status.success(),
        "pylance {v}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(seen.len(), specs.len(), "pylance {v} answers every spec");
    seen
}

/// Lancer builds the index of every golden configuration it writes (all but
/// 256-document blocks; `icu` included) on a copy of the case's data; pylance 14 builds its own on
/// another copy. Lancer's answers over its index equal pylance's over pylance's, and
/// pylance's over Lancer's index equal them too (pylance reads Lancer's files as its
/// own: token map, postings, block-max scores, impacts, positions, details).
#[test]
fn lancer_built_fts_indexes_answer_like_pylance_built_ones() {
    use lancer::index::{create_fts_index, FtsIndexOptions};
    use lancer::index::{drop_index, list_indices};
    let Some(root) = roots().into_iter().next() else {
        return;
    };
    let Some(py) = crate::common::pylance("14") else {
        return;
    };
    let tmp = TempDir::new("fts-build");
    let (mut compared, mut read_by_old, mut failures) = (0usize, 0usize, Vec::new());
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json") && !p.ends_with("index.json"))
        .collect();
    cases.sort();
    let mut built = Vec::new();
    for f in cases {
        let case: Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        let name = case["name"].as_str().unwrap().to_string();
        let create = &case["params"];
        if create["block_size"] == 256 {
            continue;
        }
        let (a, b) = (
            tmp.join(format!("{name}-pylance")),
            tmp.join(format!("{name}-lancer")),
        );
        crate::common::copy_dir(&root.join(&name), &a);
        crate::common::copy_dir(&root.join(&name), &b);
        let mut ds = Dataset::open(&b).unwrap();
        for i in list_indices(&ds).unwrap() {
            ds = drop_index(&ds, &i.name).unwrap();
        }
        let mut indexes = vec![serde_json::json!({"column": "text", "params": create})];
        let mut opts = FtsIndexOptions {
            params: params_of(create),
            ..Default::default()
        };
        ds = create_fts_index(&ds, "text", &opts, None).unwrap_or_else(|e| panic!("{name}: {e}"));
        if case["steps"]
            .to_string()
            .contains("create_scalar_index(title")
        {
            opts.params = params_of(&serde_json::json!({}));
            ds = create_fts_index(&ds, "title", &opts, None).unwrap();
            indexes.push(serde_json::json!({"column": "title", "params": {}}));
        }
        let queries: Vec<Value> = case["queries"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|q| {
                !(create["base_tokenizer"] == "ngram"
                    && q["query"]["fuzziness"].as_u64().is_some_and(|f| f > 0))
            })
            .map(|q| serde_json::json!({"query": q["query"], "options": q["options"]}))
            .collect();
        let spec = tmp.join(format!("{name}.json"));
        std::fs::write(
            &spec,
            serde_json::json!({"pylance_dir": a, "lancer_dir": b, "indexes": indexes, "queries": queries})
                .to_string(),
        )
        .unwrap();
        built.push((name, spec, queries, ds, create.clone(), indexes.len()));
    }
    // pylance answers over every case in one process per version (starting pylance
    // costs ~1 s): 14 builds its own indexes and answers over both, 12 and 11 answer
    // over Lancer's
    let specs: Vec<&PathBuf> = built.iter().map(|b| &b.1).collect();
    let all14 = check_fts_build(&py, "14", &specs);
    let old: Vec<(&str, Vec<Value>)> = ["12", "11"]
        .into_iter()
        .filter_map(|v| Some((v, check_fts_build(&crate::common::pylance(v)?, v, &specs))))
        .collect();
    for (k, ((name, _, queries, ds, create, indexes), seen)) in built.iter().zip(&all14).enumerate()
    {
        let name = name.as_str();
        assert_eq!(
            seen["lancer_indices"].as_array().unwrap().len(),
            *indexes,
            "{name}: pylance lists {}",
            seen["lancer_indices"]
        );
        let answer = |v: &Value| -> (Vec<i64>, Vec<f32>) {
            (
                v["ids"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_i64().unwrap())
                    .collect(),
                v["scores"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_f64().unwrap() as f32)
                    .collect(),
            )
        };
        for (q, a) in queries.iter().zip(seen["answers"].as_array().unwrap()) {
            let at = format!("{name}: {} {}", q["query"], q["options"]);
            let (p, on) = (&a["pylance"], &a["on_lancer"]);
            if p.get("error").is_some() {
                if on.get("error").is_none() {
                    failures.push(format!(
                        "{at}: pylance refuses on its index, not on Lancer's"
                    ));
                }
                continue;
            }
            if let Some(e) = on.get("error") {
                failures.push(format!("{at}: pylance on Lancer's index: {e}"));
                continue;
            }
            let want = answer(p);
            // pylance's index of this case has several partitions, whose token ids
            // order the f32 additions differently: scores may differ in the last bit
            let rel = if name == "multi_partition" { 1e-5 } else { 0.0 };
            if let Err(e) = compare_within(&answer(on), &want, true, rel) {
                failures.push(format!("{at}: pylance on Lancer's index: {e}"));
            }
            let opts = options_of(&q["options"]);
            match full_text_addresses(ds, &query_of(&q["query"]), &opts) {
                Ok(r) => {
                    let addrs: Vec<u64> = r.iter().map(|x| x.0).collect();
                    let got = (ids_of(ds, &addrs), r.iter().map(|x| x.1).collect());
                    if let Err(e) = compare_within(&got, &want, true, rel) {
                        let post = opts.filter.is_some() && !opts.prefilter && opts.limit.is_some();
                        if !(post && postfilter_ok(ds, &query_of(&q["query"]), &opts, &r)) {
                            failures.push(format!("{at}: Lancer on its index: {e}"));
                        }
                    }
                }
                Err(e) => failures.push(format!("{at}: Lancer on its index: {e}")),
            }
            compared += 1;
        }
        // pylance 12 and 11 read Lancer's index too: their answers over it are Lancer's
        for (v, seen) in &old {
            if create["base_tokenizer"] == "icu" {
                // with icu, pylance 11 / 12 drop the stop words of every language from
                // queries (`dog` is Danish), 14 a different set: not comparable
                continue;
            }
            let seen = &seen[k];
            for (q, a) in queries.iter().zip(seen["answers"].as_array().unwrap()) {
                let at = format!("pylance {v} {name}: {} {}", q["query"], q["options"]);
                if stop_list_dependent(&q["query"]) {
                    // pylance 11 / 12 drop words like `don`, `t`, `not` from every query
                    // (their stop list); Lancer's index, as pylance 14's, keeps them
                    continue;
                }
                let on = &a["on_lancer"];
                let opts = options_of(&q["options"]);
                let mine = full_text_addresses(ds, &query_of(&q["query"]), &opts);
                match (mine, on.get("error")) {
                    (Err(_), Some(_)) => {}
                    (Ok(_), Some(e)) => failures.push(format!("{at}: {e}")),
                    (Err(e), None) => failures.push(format!("{at}: Lancer: {e}")),
                    (Ok(r), None) => {
                        let addrs: Vec<u64> = r.iter().map(|x| x.0).collect();
                        let got = (ids_of(ds, &addrs), r.iter().map(|x| x.1).collect());
                        if let Err(e) = compare(&answer(on), &got, true) {
                            let post =
                                opts.filter.is_some() && !opts.prefilter && opts.limit.is_some();
                            if !post {
                                failures.push(format!("{at}: {e}"));
                            }
                        }
                    }
                }
                read_by_old += 1;
            }
        }
    }
    eprintln!(
        "{compared} queries compared, {read_by_old} answered by pylance 12 / 11 over Lancer's indexes, {} differ",
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(compared > 600, "{compared} queries compared");
}
