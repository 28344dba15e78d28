//! Full-text search over a dataset's INVERTED indexes (docs/fts-index-format.md §8–§9;
//! reference "Full Text Search"): pylance's `full_text_query` — the query is scored over
//! the index segments (`lancer_index::inverted`), the rows appended since the index was
//! built are tokenized and scored with the combined statistics, deleted rows are
//! dropped, a SQL filter applies before ranking (`prefilter`) or after the top `limit`
//! (pylance's default), and the rows are returned best first with `_score`.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, Float32Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use lancer_index::inverted::search::{self, ColumnIndex, FtsQuery};
use lancer_index::inverted::segment::{self, InvertedSegment};
use lancer_table::pb;

use crate::scan::{DatasetExt, ROW_ADDRESS};
use crate::{Dataset, Error, Result};

/// How a full-text search runs and what it returns.
#[derive(Clone, Debug, Default)]
pub struct FtsOptions {
    /// Best rows wanted (None: every matching row, as pylance without a limit).
    pub limit: Option<usize>,
    /// A SQL filter.
    pub filter: Option<String>,
    /// Apply `filter` before ranking (else to the best `limit` rows, pylance's default).
    pub prefilter: bool,
    /// Search only what the indexes cover (skip rows appended since).
    pub fast_search: bool,
    /// Columns to return besides `_score` (default all).
    pub columns: Option<Vec<String>>,
    /// `_rowid` / `_rowaddr` columns to add after `_score`.
    pub row_meta: crate::search::exact::RowMeta,
}

/// The INVERTED indexes of `ds`: per indexed top-level column (by the first index name
/// on it), its segments.
pub fn inverted_indexes(ds: &Dataset) -> Result<Vec<(String, Vec<Arc<InvertedSegment>>)>> {
    let schema = &ds.manifest().schema;
    let mut by_column: Vec<(String, String, Vec<Arc<InvertedSegment>>)> = Vec::new();
    let mut metas: Vec<_> = ds
        .indices()?
        .iter()
        .filter_map(|m| {
            if segment::is_inverted(m) {
                return Some(m.clone());
            }
            // a segment committed without details (pylance's hand-built `Index` after
            // `merge_index_metadata`) whose files are an inverted index's
            segment::legacy_details(ds, m).map(|d| pb::IndexMetadata {
                index_details: Some(d),
                ..m.clone()
            })
        })
        .collect();
    metas.sort_by(|a, b| a.name.cmp(&b.name));
    for m in metas {
        let Some(&field) = m.fields.first() else {
            continue;
        };
        let Some(col) = crate::catalog::field_path(schema, field) else {
            continue;
        };
        if by_column.iter().any(|(c, n, _)| *c == col && *n != m.name) {
            continue;
        }
        let uuid = m.uuid.as_ref().map(|u| u.uuid.clone()).unwrap_or_default();
        // Segments by dataset root and uuid in the session's index cache (index files
        // never change once written).
        let (cache, root) = (
            crate::session::index_cache(ds),
            crate::session::root_key(ds),
        );
        let seg = match cache.get::<InvertedSegment>(&root, &uuid) {
            Some(s) => s,
            None => {
                let Some(s) = InvertedSegment::open(ds, &m)? else {
                    continue;
                };
                let s = Arc::new(s);
                cache.insert(&root, &uuid, s.clone());
                s
            }
        };
        match by_column.iter_mut().find(|(c, _, _)| *c == col) {
            Some(e) => e.2.push(seg),
            None => by_column.push((col, m.name.clone(), vec![seg])),
        }
    }
    Ok(by_column.into_iter().map(|(c, _, s)| (c, s)).collect())
}

/// Columns `q` names (None inside: every indexed column).
fn named_columns(q: &FtsQuery, out: &mut Vec<Option<String>>) {
    match q {
        FtsQuery::Match { column, .. } | FtsQuery::Phrase { column, .. } => {
            out.push(column.clone())
        }
        FtsQuery::MultiMatch { columns, .. } => out.extend(columns.iter().cloned().map(Some)),
        FtsQuery::Boolean(c) => c.iter().for_each(|(_, q)| named_columns(q, out)),
        FtsQuery::Boost {
            positive, negative, ..
        } => {
            named_columns(positive, out);
            named_columns(negative, out);
        }
    }
}

/// Rows of `fragments` with their text in `column` (nulls left out), passing `filter`.
fn texts(
    ds: &Dataset,
    column: &str,
    fragments: &[u64],
    filter: Option<&str>,
) -> Result<Vec<(u64, String)>> {
    if fragments.is_empty() {
        return Ok(Vec::new());
    }
    let mut scan = ds
        .scan()
        .columns(&[column])
        .fragments(fragments)
        .with_row_address(true);
    if let Some(f) = filter {
        scan = scan.filter(f);
    }
    let mut out = Vec::new();
    for b in scan.stream()? {
        let b = b?;
        let addrs = b
            .column_by_name(ROW_ADDRESS)
            .and_then(|c| c.as_primitive_opt::<arrow_array::types::UInt64Type>())
            .ok_or_else(|| Error::InvalidArgument {
                what: "row addresses missing from the text scan".into(),
            })?;
        let col = b.column(0);
        let strings: Box<dyn Fn(usize) -> Option<String>> = match col.data_type() {
            DataType::Utf8 => {
                let a = col.as_string::<i32>();
                Box::new(move |i| a.is_valid(i).then(|| a.value(i).to_string()))
            }
            DataType::LargeUtf8 => {
                let a = col.as_string::<i64>();
                Box::new(move |i| a.is_valid(i).then(|| a.value(i).to_string()))
            }
            // a list of strings: its items, in order, as one text
            DataType::List(_) | DataType::LargeList(_) => {
                let items = |i: usize| -> Option<ArrayRef> {
                    if col.is_null(i) {
                        return None;
                    }
                    col.as_list_opt::<i32>()
                        .map(|l| l.value(i))
                        .or_else(|| col.as_list_opt::<i64>().map(|l| l.value(i)))
                };
                let joined = move |i: usize| -> Option<String> {
                    let v = items(i)?;
                    let texts: Vec<String> = match v.data_type() {
                        DataType::Utf8 => v
                            .as_string::<i32>()
                            .iter()
                            .flatten()
                            .map(String::from)
                            .collect(),
                        DataType::LargeUtf8 => v
                            .as_string::<i64>()
                            .iter()
                            .flatten()
                            .map(String::from)
                            .collect(),
                        _ => return None,
                    };
                    Some(texts.join(" "))
                };
                match col.data_type() {
                    DataType::List(f) | DataType::LargeList(f)
                        if matches!(f.data_type(), DataType::Utf8 | DataType::LargeUtf8) =>
                    {
                        Box::new(joined)
                    }
                    other => {
                        return Err(Error::InvalidArgument {
                            what: format!(
                                "column {column:?} is {other}, not a string column: no full-text search"
                            ),
                        })
                    }
                }
            }
            other => {
                return Err(Error::InvalidArgument {
                    what: format!(
                        "column {column:?} is {other}, not a string column: no full-text search"
                    ),
                })
            }
        };
        for i in 0..b.num_rows() {
            if let Some(s) = strings(i) {
                out.push((addrs.value(i), s));
            }
        }
    }
    Ok(out)
}

/// The rows matching `q`, best first, with `_score` (see [`FtsOptions`]).
pub fn full_text_search(ds: &Dataset, q: &FtsQuery, opts: &FtsOptions) -> Result<RecordBatch> {
    let ranked = full_text_addresses(ds, q, opts)?;
    let cols: Vec<String> = match &opts.columns {
        Some(c) => c.clone(),
        None => ds
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect(),
    };
    let col_refs: Vec<&str> = cols.iter().map(String::as_str).collect();
    let addrs: Vec<u64> = ranked.iter().map(|r| r.0).collect();
    let b = ds.take_addresses(&addrs, Some(&col_refs))?;
    let mut fields: Vec<Field> = b
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields.push(Field::new("_score", DataType::Float32, true)); // nullable, as pylance 14 declares it
    let mut arrays: Vec<ArrayRef> = b.columns().to_vec();
    arrays.push(Arc::new(Float32Array::from_iter_values(
        ranked.iter().map(|r| r.1),
    )));
    for (f, a) in crate::search::exact::row_meta_columns(ds, &addrs, opts.row_meta)? {
        fields.push(f);
        arrays.push(a);
    }
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)?)
}

/// The rows matching `q` as (row address, score), best first (ties by address).
pub fn full_text_addresses(
    ds: &Dataset,
    q: &FtsQuery,
    opts: &FtsOptions,
) -> Result<Vec<(u64, f32)>> {
    let mut indexes = inverted_indexes(ds)?;
    let mut named = Vec::new();
    named_columns(q, &mut named);
    let all = named.iter().any(Option::is_none);
    if indexes.is_empty() && all {
        return Err(Error::InvalidArgument {
            what: "Cannot perform full text search unless an INVERTED index has been created \
                   on at least one column: create one, or name the column to search"
                .into(),
        });
    }
    // a named column without an index is searched flat, as pylance searches it: every
    // row tokenized with the default analyzer, scored with the rows' own statistics
    for n in named.iter().flatten() {
        if !indexes.iter().any(|(c, _)| c == n) {
            if crate::catalog::arrow_field_at(ds, n).is_none() {
                return Err(Error::InvalidArgument {
                    what: format!("no column {n:?} to search"),
                });
            }
            indexes.push((n.clone(), Vec::new()));
        }
    }
    let pre = if opts.prefilter {
        opts.filter.as_deref()
    } else {
        None
    };
    // With stable row ids the index holds ids: unindexed rows are handed in by id too.
    let addresses = crate::catalog::stable_id_addresses(ds)?;
    let ids_of: Option<HashMap<u64, u64>> = addresses
        .as_ref()
        .map(|m| m.iter().map(|(&id, &a)| (a, id)).collect());
    let mut columns = Vec::new();
    for (col, segs) in indexes {
        if !all && !named.iter().flatten().any(|n| *n == col) {
            continue;
        }
        let mut covered = roaring::RoaringBitmap::new();
        for s in &segs {
            covered |= &s.fragments;
        }
        let unindexed: Vec<u64> = if opts.fast_search {
            Vec::new()
        } else {
            crate::catalog::uncovered_fragments(ds, &covered)
        };
        let mut rows = texts(ds, &col, &unindexed, pre)?;
        if let Some(ids) = &ids_of {
            rows.retain_mut(|(a, _)| match ids.get(a) {
                Some(&id) => {
                    *a = id;
                    true
                }
                None => false,
            });
        }
        columns.push(ColumnIndex {
            unindexed: rows,
            column: col,
            segments: segs,
        });
    }
    // Index rows may be stable row ids (mapped to addresses) or addresses of rows
    // deleted since: only live rows are answers; a prefilter keeps its rows only.
    let live = ds.live_addresses()?;
    let pass: Option<Arc<crate::search::address_set::AddressSet>> = pre
        .map(|sql| crate::search::ann::passing(ds, sql))
        .transpose()?;
    let keep = |id: u64| -> Option<u64> {
        let a = match &addresses {
            Some(m) => *m.get(&id)?,
            None => id,
        };
        (live.contains(a) && pass.as_ref().is_none_or(|p| p.contains(a))).then_some(a)
    };
    let mut ranked = search::search_top(q, &columns, opts.limit, &keep)?;
    if let (Some(sql), false) = (opts.filter.as_deref(), opts.prefilter) {
        let pass = crate::search::ann::passing(ds, sql)?;
        ranked.retain(|(a, _)| pass.contains(*a));
    }
    Ok(ranked)
}
