//! Plans of searches as text (pylance's `explain_plan` for `nearest` and
//! `full_text_query`): which index answers (its name, kind and segments, named as
//! pylance names them), what is searched without it (fragments appended since it was
//! built), how a filter applies (before or after ranking), and the limits. Scans have
//! their plan in [`crate::scan::Scanner::explain`]. Nothing is read but the manifest and
//! the index metadata.

use std::fmt::Write as _;

use lancer_index::inverted::search::{FtsQuery, Occur};
use lancer_table::Dataset;

use crate::search::ann::AnnParams;
use crate::search::exact::{Filtering, Nearest};
use crate::search::fts::FtsOptions;
use crate::Result;

/// Live rows of the fragments `ids`.
fn live_rows(ds: &Dataset, ids: &[u64]) -> u64 {
    ds.fragments()
        .iter()
        .filter(|f| ids.contains(&f.id))
        .map(crate::catalog::live_rows)
        .sum()
}

/// The plan of a nearest-neighbour search.
pub fn explain_nearest(
    ds: &Dataset,
    req: &Nearest<'_>,
    filtering: Filtering<'_>,
    ann: &AnnParams,
) -> Result<String> {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "vector search: column {:?}, k={}, metric {:?}",
        req.column, req.k, req.metric
    );
    let segments = if ann.use_index {
        crate::search::ann::index_segments(ds, req.column)?
    } else {
        Vec::new()
    };
    let usable = !segments.is_empty() && segments.iter().all(|s| s.metric == req.metric);
    out = nearest_operators(ds, req, filtering, ann, &segments, usable) + "\n" + &out;
    if usable {
        let s = &segments[0];
        let mut covered = roaring::RoaringBitmap::new();
        for seg in &segments {
            covered |= &seg.fragments;
        }
        let probes = match ann.nprobes {
            Some(n) => format!("nprobes {n}"),
            None => format!(
                "nprobes {}..{}",
                ann.min_nprobes.unwrap_or(1),
                ann.max_nprobes.map_or("all".to_string(), |n| n.to_string())
            ),
        };
        let _ = writeln!(
            out,
            "index: {} ({}, {} segment(s), {} partitions, {probes}), metric {}",
            s.name,
            s.index_type,
            segments.len(),
            s.partitions.len(),
            s.metric.name()
        );
        let unindexed = crate::catalog::uncovered_fragments(ds, &covered);
        if ann.fast_search {
            let _ = writeln!(
                out,
                "fast_search: the {} fragment(s) the index does not cover are left out",
                unindexed.len()
            );
        } else if !unindexed.is_empty() {
            let _ = writeln!(
                out,
                "unindexed: {} fragment(s), {} rows, searched exactly and merged",
                unindexed.len(),
                live_rows(ds, &unindexed)
            );
        }
        if let Some(r) = ann.refine_factor {
            let _ = writeln!(
                out,
                "refine: {} candidates re-ranked by exact distance",
                req.k * r.max(1) as usize
            );
        }
    } else if !ann.use_index {
        let _ = writeln!(
            out,
            "index: not used (use_index=false): exact search over every row"
        );
    } else if segments.is_empty() {
        let _ = writeln!(
            out,
            "index: none on {:?}: exact search over every row",
            req.column
        );
    } else {
        let _ = writeln!(
            out,
            "index: {} is for metric {}, not {:?}: exact search over every row",
            segments[0].name,
            segments[0].metric.name(),
            req.metric
        );
    }
    match filtering {
        Filtering::None => {}
        Filtering::Pre(f) => {
            let _ = writeln!(out, "filter: {f}, applied before the search (prefilter)");
        }
        Filtering::Post(f) => {
            let _ = writeln!(
                out,
                "filter: {f}, applied to the {} nearest (postfilter)",
                req.k
            );
        }
    }
    let _ = writeln!(out, "read: the {} rows found, by row address", req.k);
    Ok(out)
}

/// A full-text query in words.
fn describe(q: &FtsQuery) -> String {
    let col = |c: &Option<String>| {
        c.as_ref()
            .map_or("every indexed column".to_string(), |c| format!("{c:?}"))
    };
    match q {
        FtsQuery::Match {
            column,
            text,
            and,
            boost,
            fuzziness,
            prefix_length,
            max_expansions,
        } => {
            let mut s = format!(
                "match {text:?} in {} ({})",
                col(column),
                if *and { "all tokens" } else { "any token" }
            );
            if *boost != 1.0 {
                let _ = write!(s, ", boost {boost}");
            }
            if *fuzziness > 0 {
                let _ = write!(
                    s,
                    ", fuzziness {fuzziness}, prefix {prefix_length}, at most {max_expansions} expansions"
                );
            }
            s
        }
        FtsQuery::Phrase { column, text, slop } => {
            format!("phrase {text:?} in {} (slop {slop})", col(column))
        }
        FtsQuery::Boolean(clauses) => {
            let part = |o: Occur| {
                clauses
                    .iter()
                    .filter(|(c, _)| *c == o)
                    .map(|(_, q)| describe(q))
                    .collect::<Vec<_>>()
                    .join("; ")
            };
            format!(
                "boolean (must: [{}], should: [{}], must_not: [{}])",
                part(Occur::Must),
                part(Occur::Should),
                part(Occur::MustNot)
            )
        }
        FtsQuery::Boost {
            positive,
            negative,
            negative_boost,
        } => format!(
            "boost ({}) lowered by {negative_boost} x ({})",
            describe(positive),
            describe(negative)
        ),
        FtsQuery::MultiMatch {
            text,
            columns,
            boosts,
            and,
        } => format!(
            "multi_match {text:?} in {columns:?} (boosts {boosts:?}, {}; best column)",
            if *and { "all tokens" } else { "any token" }
        ),
    }
}

/// The plan of a full-text search.
pub fn explain_full_text(ds: &Dataset, q: &FtsQuery, opts: &FtsOptions) -> Result<String> {
    let indexes = crate::search::fts::inverted_indexes(ds)?;
    let mut out = full_text_operators(ds, q, opts, &indexes) + "\n";
    let _ = writeln!(out, "full-text search: {}", describe(q));
    if indexes.is_empty() {
        let _ = writeln!(out, "index: none (the dataset has no INVERTED index)");
    }
    for (column, segments) in &indexes {
        let name = segments.first().map_or("", |s| s.name.as_str());
        let mut covered = roaring::RoaringBitmap::new();
        for s in segments {
            covered |= &s.fragments;
        }
        let _ = writeln!(
            out,
            "index: {name} (Inverted, {} segment(s)) on {column:?}",
            segments.len()
        );
        let unindexed = crate::catalog::uncovered_fragments(ds, &covered);
        if !unindexed.is_empty() {
            if opts.fast_search {
                let _ = writeln!(
                    out,
                    "fast_search: the {} fragment(s) the index does not cover are left out",
                    unindexed.len()
                );
            } else {
                let _ = writeln!(
                    out,
                    "unindexed: {} fragment(s), {} rows, tokenized and scored at query time",
                    unindexed.len(),
                    live_rows(ds, &unindexed)
                );
            }
        }
    }
    if let Some(f) = &opts.filter {
        let when = if opts.prefilter {
            "before ranking (prefilter)"
        } else {
            "to the best rows (postfilter)"
        };
        let _ = writeln!(out, "filter: {f}, applied {when}");
    }
    let _ = writeln!(
        out,
        "limit: {}",
        opts.limit
            .map_or("every matching row".to_string(), |l| format!(
                "the best {l}"
            ))
    );
    Ok(out)
}

/// Lines of an operator tree, each indented by its depth.
fn tree(lines: &[(usize, String)]) -> String {
    let mut out = String::new();
    for (depth, line) in lines {
        let _ = writeln!(out, "{}{line}", "  ".repeat(*depth));
    }
    out
}

/// The operators of a nearest-neighbour search in pylance's names: the rows found
/// read back by `_rowid` (`LanceRead ... source=stream(_rowid)`), their top-k
/// (`SortExec`), from the index (`ANNSubIndex` over `ANNIvfPartition`) and, for rows
/// the index does not cover or without a usable index, by exact distances
/// (`KNNVectorDistance` over a `LanceRead` of the vectors).
fn nearest_operators(
    ds: &Dataset,
    req: &Nearest<'_>,
    filtering: Filtering<'_>,
    ann: &AnnParams,
    segments: &[std::sync::Arc<lancer_index::vector::ivf::IvfSegment>],
    usable: bool,
) -> String {
    let (pre, post) = match filtering {
        Filtering::None => (None, None),
        Filtering::Pre(f) => (Some(f), None),
        Filtering::Post(f) => (None, Some(f)),
    };
    let mut lines = vec![(
        0,
        format!(
            "LanceRead: uri={}, projection=[*], source=stream(_rowid)",
            crate::scan::data_uri(ds)
        ),
    )];
    let mut depth = 1;
    if let Some(f) = post {
        lines.push((depth, format!("FilterExec: {f}")));
        depth += 1;
    }
    let knn = |depth: usize, frags: usize, lines: &mut Vec<(usize, String)>| {
        lines.push((
            depth,
            format!("KNNVectorDistance: metric={}", req.metric.name()),
        ));
        let proj = [req.column.to_string()];
        lines.push((
            depth + 1,
            crate::scan::lance_read(ds, &proj, frags, (true, false), (pre, pre)),
        ));
    };
    if !usable {
        lines.push((depth, "FilterExec: _distance IS NOT NULL".into()));
        lines.push((
            depth + 1,
            format!(
                "SortExec: TopK(fetch={}), expr=[_distance ASC NULLS LAST, _rowid ASC NULLS LAST]",
                req.k
            ),
        ));
        knn(depth + 2, ds.fragments().len(), &mut lines);
        return tree(&lines);
    }
    let mut covered = roaring::RoaringBitmap::new();
    for seg in segments {
        covered |= &seg.fragments;
    }
    let unindexed = crate::catalog::uncovered_fragments(ds, &covered);
    let merged = !unindexed.is_empty() && !ann.fast_search;
    lines.push((
        depth,
        format!(
            "SortExec: TopK(fetch={}), expr=[_distance ASC NULLS LAST, _rowid ASC NULLS LAST]",
            req.k
        ),
    ));
    depth += 1;
    if merged {
        lines.push((depth, "UnionExec".into()));
        depth += 1;
    }
    let s = &segments[0];
    lines.push((
        depth,
        format!(
            "ANNSubIndex: name={}, k={}, deltas={}, metric={}",
            s.name,
            req.k,
            segments.len(),
            s.metric.name().to_ascii_uppercase()
        ),
    ));
    let (min, max) = match ann.nprobes {
        Some(n) => (n, Some(n)),
        None => (ann.min_nprobes.unwrap_or(1), ann.max_nprobes),
    };
    lines.push((
        depth + 1,
        format!(
            "ANNIvfPartition: uuid={}, minimum_nprobes={min}, maximum_nprobes={}, deltas={}",
            lancer_table::dataset::uuid_dir(&s.uuid).unwrap_or_default(),
            max.map_or_else(|| "None".to_string(), |m| m.to_string()),
            segments.len()
        ),
    ));
    if merged {
        knn(depth, unindexed.len(), &mut lines);
    }
    tree(&lines)
}

/// The operators of a full-text search in pylance's names: `MatchQuery` (or
/// `PhraseQuery`, `BooleanQuery`, ...) over the index, `FlatMatchQuery` over the
/// fragments it does not cover, under a `SortExec` by `_score`.
fn full_text_operators(
    ds: &Dataset,
    q: &FtsQuery,
    opts: &FtsOptions,
    indexes: &[(
        String,
        Vec<std::sync::Arc<lancer_index::inverted::segment::InvertedSegment>>,
    )],
) -> String {
    let (name, column, text) = match q {
        FtsQuery::Match { column, text, .. } => ("MatchQuery", column.clone(), text.clone()),
        FtsQuery::Phrase { column, text, .. } => ("PhraseQuery", column.clone(), text.clone()),
        FtsQuery::Boolean(_) => ("BooleanQuery", None, describe(q)),
        FtsQuery::Boost { .. } => ("BoostQuery", None, describe(q)),
        FtsQuery::MultiMatch { text, .. } => ("MultiMatchQuery", None, text.clone()),
    };
    let filter = opts.filter.as_deref();
    let mut lines = vec![(
        0,
        format!(
            "LanceRead: uri={}, projection=[*], source=stream(_rowid)",
            crate::scan::data_uri(ds)
        ),
    )];
    lines.push((1, "SortExec: expr=[_score DESC NULLS LAST]".into()));
    lines.push((2, "UnionExec".into()));
    let mut any = false;
    for (col, segments) in indexes {
        if column.as_ref().is_some_and(|c| c != col) {
            continue;
        }
        any = true;
        lines.push((3, format!("{name}: column={col}, query=[{text}]")));
        if let (Some(f), true) = (filter, opts.prefilter) {
            lines.push((
                4,
                crate::scan::lance_read(
                    ds,
                    &[],
                    ds.fragments().len(),
                    (true, false),
                    (Some(f), Some(f)),
                ),
            ));
        }
        let mut covered = roaring::RoaringBitmap::new();
        for s in segments {
            covered |= &s.fragments;
        }
        let unindexed = crate::catalog::uncovered_fragments(ds, &covered);
        if !unindexed.is_empty() && !opts.fast_search {
            lines.push((3, format!("FlatMatchQuery: column={col}, query={text}")));
            let proj = [col.clone()];
            lines.push((
                4,
                crate::scan::lance_read(
                    ds,
                    &proj,
                    unindexed.len(),
                    (true, false),
                    (filter, filter),
                ),
            ));
        }
    }
    if !any {
        let col = column.unwrap_or_default();
        lines.push((3, format!("FlatMatchQuery: column={col}, query={text}")));
        let proj = [col];
        lines.push((
            4,
            crate::scan::lance_read(
                ds,
                &proj,
                ds.fragments().len(),
                (true, false),
                (filter, filter),
            ),
        ));
    }
    tree(&lines)
}
