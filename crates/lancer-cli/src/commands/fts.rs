//! `lancer fts`: full-text search over a dataset's INVERTED indexes (pylance's
//! `full_text_query`; docs/fts-index-format.md §9): a match query by default (OR of the
//! query's tokens, BM25), `--all` for AND, `--phrase` with `--slop`, `--fuzzy N`, a SQL
//! `--filter` applied before ranking (`--postfilter`: after), `--limit`; rows best first
//! with `_score`.

use std::path::Path;

use lancer::fts::{full_text_search, FtsOptions};
use lancer_index::inverted::search::FtsQuery;

use super::{source::open_dataset, CmdResult};
use crate::args::{Format, FtsArgs, VersionArgs};

/// Runs `lancer fts`.
pub fn fts(path: &Path, a: &FtsArgs, format: Format, at: &VersionArgs) -> CmdResult {
    let ds = open_dataset(path, at)?;
    let q = if a.phrase {
        FtsQuery::Phrase {
            column: a.column.clone(),
            text: a.query.clone(),
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
