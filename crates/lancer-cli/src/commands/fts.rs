//! `lancer fts`: full-text search over a dataset's INVERTED indexes (pylance's
//! `full_text_query`; docs/fts-index-format.md §9): a match query by default (OR of the
//! query's tokens, BM25), `--all` for AND, `--phrase` with `--slop`, `--fuzzy N`, a SQL
//! `--filter` applied before ranking (`--postfilter`: after), `--limit`; rows best first
//! with `_score`.

use lancer::Session;
use std::path::Path;

use lancer::search::{full_text_search, FtsOptions};
use lancer::FtsQuery;

use super::{source::open_dataset, CmdResult};
use crate::args::{Format, FtsArgs, VersionArgs};

/// Runs `lancer fts`.
pub fn fts(s: &Session, path: &Path, a: &FtsArgs, format: Format, at: &VersionArgs) -> CmdResult {
    let ds = open_dataset(s, path, at)?;
    let q = if a.query_json {
        lancer::search::fts_query_from_json(&a.query)?
    } else if a.phrase {
        FtsQuery::Phrase {
            column: a.column.clone(),
            text: a.query.clone(),
            slop: a.slop,
        }
    } else if let (FtsQuery::Phrase { text, .. }, false, 0) =
        (FtsQuery::from_text(&a.query, None), a.all, a.fuzzy)
    {
        // a query in double quotes is a phrase, as in the reference
        FtsQuery::Phrase {
            column: a.column.clone(),
            text,
            slop: a.slop,
        }
    } else {
        FtsQuery::Match {
            column: a.column.clone(),
            text: a.query.clone(),
            and: a.all,
            boost: 1.0,
            fuzziness: a.fuzzy,
            prefix_length: a.prefix_length,
            max_expansions: a.max_expansions,
        }
    };
    let opts = FtsOptions {
        limit: Some(a.limit),
        filter: a.filter.clone(),
        prefilter: !a.postfilter,
        fast_search: a.fast_search,
        columns: (!a.columns.is_empty()).then(|| a.columns.clone()),
        row_meta: Default::default(),
    };
    let t = std::time::Instant::now();
    let rows = full_text_search(&ds, &q, &opts)?;
    eprintln!(
        "{} rows of {} in {:?}",
        rows.num_rows(),
        ds.count_rows(),
        t.elapsed()
    );
    crate::output::print_batch(&rows, format)
}

/// Postings shown per partition for `--token`.
const SHOWN: usize = 20;

/// `lancer inspect DATASET --index NAME [--token WORD]` on a full-text index: per
/// segment its format, analyzer, fragments and partitions (documents, distinct tokens,
/// tokens); with a word, its postings in each partition.
pub fn inspect(ds: &lancer::Dataset, name: &str, token: Option<&str>, json: bool) -> CmdResult {
    let segments = lancer::inspect::inverted_index_segments(ds, name, token, SHOWN)?;
    let out = serde_json::json!({"index": name, "type": "INVERTED", "segments": segments});
    if json {
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    for s in &segments {
        println!(
            "index {name:?} segment {} (INVERTED format {}, blocks of {}, positions {}): {} documents, {} tokens, fragments {}",
            s["uuid"].as_str().unwrap_or(""),
            s["format"],
            s["block_size"],
            s["positions"].as_str().unwrap_or(""),
            s["documents"],
            s["tokens"],
            s["fragments"]
        );
        println!("  analyzer {}", s["params"]);
        for p in s["partitions"].as_array().into_iter().flatten() {
            println!(
                "  partition {}: {} documents, {} distinct tokens, {} tokens",
                p["id"], p["documents"], p["distinct_tokens"], p["tokens"]
            );
            if let Some(w) = p.get("token") {
                match p.get("token_id") {
                    None => println!("    token {w}: not in this partition"),
                    Some(id) => {
                        println!(
                            "    token {w} (id {id}): {} documents in {} blocks; first {}:",
                            p["documents_with_token"], p["blocks"], SHOWN
                        );
                        for e in p["postings"].as_array().into_iter().flatten() {
                            println!(
                                "      doc {:<8} row {:<12} (fragment {}, offset {}) length {:<5} frequency {:<3} positions {}",
                                e["doc"].to_string(),
                                e["row"].to_string(),
                                e["fragment"],
                                e["offset"],
                                e["length"].to_string(),
                                e["frequency"].to_string(),
                                e["positions"]
                            );
                        }
                    }
                }
            }
        }
    }
    Ok(())
}
