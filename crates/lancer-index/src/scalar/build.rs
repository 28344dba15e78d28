//! Building scalar index segments in pylance's format (docs/scalar-index-format.md §4–§9
//! and the writer checklist §14). The caller feeds the column's live values in dataset
//! order with each row's stored id (row address, or stable row id where the kind stores
//! those) and address; [`ScalarBuilder::finish`] sorts, groups or zones them and returns
//! the segment's files, details and index version.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, BinaryArray, RecordBatch, UInt32Array, UInt64Array};
use arrow_ord::ord::make_comparator;
use arrow_schema::{DataType, Field, Schema, SortOptions};
use lancer_format::container::FileVersion;
use lancer_format::writer::{FileWriter, WriteOptions};
use roaring::RoaringTreemap;

use super::group::{encode_sorted, Grouped, Grouper};
use super::zoned::ZoneBuilder;
use super::{bloom, ngram, rowmap, ScalarKind};
use crate::{IndexError, Result};

/// How to build.
#[derive(Clone, Debug)]
pub struct ScalarParams {
    /// The kind.
    pub kind: ScalarKind,
    /// Lance file version of the index files.
    pub file_version: FileVersion,
    /// BTREE rows per page (pylance's `zone_size`, default 4096).
    pub btree_page_rows: usize,
    /// ZONEMAP rows per zone (default 8192).
    pub zone_rows: u64,
    /// BLOOMFILTER items per zone (default 8192) and false-positive rate (0.00057).
    pub bloom_items: u64,
    /// See `bloom_items`.
    pub bloom_probability: f64,
    /// On a JSON column: the JSONPath whose values are indexed (pylance's
    /// `index_type="json"`; `kind` is its `target_index_type`).
    pub json_path: Option<String>,
}

impl ScalarParams {
    /// The reference's defaults for `kind`.
    pub fn new(kind: ScalarKind) -> Self {
        Self {
            kind,
            file_version: FileVersion::V2_1,
            btree_page_rows: 4096,
            zone_rows: 8192,
            bloom_items: 8192,
            bloom_probability: 0.00057,
            json_path: None,
        }
    }
}

/// A built segment.
#[derive(Debug)]
pub struct BuiltScalar {
    /// (file name, bytes), sorted by name.
    pub files: Vec<(String, Vec<u8>)>,
    /// `index_details` value bytes (the type URL is [`ScalarKind::type_url`]).
    pub details: Vec<u8>,
    /// `index_version` to record.
    pub index_version: i32,
    /// Rows indexed.
    pub rows: u64,
}

/// Collects a column's values and builds one segment.
pub struct ScalarBuilder {
    params: ScalarParams,
    field: Field,
    acc: Acc,
    rows: u64,
}

/// What a kind keeps while rows arrive.
enum Acc {
    /// BTREE (a global sort): the values and their stored ids.
    Values {
        values: Vec<ArrayRef>,
        ids: Vec<u64>,
    },
    /// ZONEMAP and BLOOMFILTER: zones closed as rows arrive.
    Zoned(Box<ZoneBuilder>),
    /// BITMAP / LABEL_LIST: values (list elements) grouped by key as they come, and
    /// LABEL_LIST's null lists.
    Group {
        grouper: Grouper,
        null_lists: Vec<u64>,
    },
    /// NGRAM: posting lists by token.
    NGram(NGramAcc),
}

/// Posting lists under construction: ids per token, moved into compressed treemaps
/// every few million ids so memory stays near the finished index's size.
struct NGramAcc {
    pending: Vec<Vec<u64>>,
    pending_len: usize,
    trees: Vec<RoaringTreemap>,
}

/// Tokens 0 (null) to zzz.
const TOKENS: usize = 37 * 37 * 37;
/// Ids held in plain vectors before they are compressed.
const NGRAM_PENDING: usize = 8 << 20;

impl NGramAcc {
    fn new() -> Self {
        Self {
            pending: vec![Vec::new(); TOKENS],
            pending_len: 0,
            trees: vec![RoaringTreemap::new(); TOKENS],
        }
    }

    fn add(&mut self, token: u32, id: u64) {
        if let Some(p) = self.pending.get_mut(token as usize) {
            p.push(id);
            self.pending_len += 1;
        }
    }

    fn flush(&mut self) {
        for (p, t) in self.pending.iter_mut().zip(self.trees.iter_mut()) {
            if p.is_empty() {
                continue;
            }
            if t.append(p.iter().copied()).is_err() {
                // Ids not ascending (stable row ids may not be): one at a time.
                t.extend(p.iter().copied());
            }
            p.clear();
        }
        self.pending_len = 0;
    }

    /// Tokenizes `values` (utf8 / large utf8) held by `ids`, the rows split across two
    /// threads for long batches.
    fn push(&mut self, values: &ArrayRef, ids: &[u64]) -> Result<()> {
        let text = |i: usize| -> Option<&str> {
            match values.data_type() {
                DataType::Utf8 => Some(values.as_string::<i32>().value(i)),
                DataType::LargeUtf8 => Some(values.as_string::<i64>().value(i)),
                _ => None,
            }
        };
        if !matches!(values.data_type(), DataType::Utf8 | DataType::LargeUtf8) {
            return Err(invalid("NGRAM on a non-string column"));
        }
        // Per row its tokens (flattened) and where they end; null rows get token 0.
        let tokenize = |range: std::ops::Range<usize>| -> (Vec<u32>, Vec<usize>) {
            let mut toks = Vec::with_capacity(range.len() * 16);
            let mut ends = Vec::with_capacity(range.len());
            for i in range {
                if values.is_null(i) {
                    toks.push(ngram::NULL_TOKEN);
                } else if let Some(t) = text(i) {
                    ngram::tokens_into(t, &mut toks);
                }
                ends.push(toks.len());
            }
            (toks, ends)
        };
        let n = values.len();
        let parts: Vec<(Vec<u32>, Vec<usize>)> = if n >= 4096 && lancer_util::cores() > 1 {
            let mid = n / 2;
            std::thread::scope(|s| {
                let a = s.spawn(|| tokenize(0..mid));
                let b = tokenize(mid..n);
                vec![a.join().unwrap_or_default(), b]
            })
        } else {
            vec![tokenize(0..n)]
        };
        let mut row = 0usize;
        for (toks, ends) in parts {
            let mut start = 0;
            for end in ends {
                for &t in &toks[start..end] {
                    self.add(t, ids[row]);
                }
                start = end;
                row += 1;
            }
        }
        if row != n {
            return Err(invalid("NGRAM tokenizer thread failed"));
        }
        if self.pending_len >= NGRAM_PENDING {
            self.flush();
        }
        Ok(())
    }
}

fn invalid(what: impl Into<String>) -> IndexError {
    IndexError::InvalidArgument { what: what.into() }
}

/// Whether `kind` can index a column of type `t` (the types pylance accepts).
pub fn supports(kind: ScalarKind, t: &DataType) -> bool {
    let ordered = |t: &DataType| {
        !t.is_nested()
            && !matches!(t, DataType::Null | DataType::Dictionary(..))
            && make_comparator(
                arrow_array::new_null_array(t, 1).as_ref(),
                arrow_array::new_null_array(t, 1).as_ref(),
                SortOptions::default(),
            )
            .is_ok()
    };
    match kind {
        ScalarKind::BTree | ScalarKind::Bitmap | ScalarKind::ZoneMap => ordered(t),
        ScalarKind::BloomFilter => bloom::indexable(t),
        ScalarKind::NGram => matches!(t, DataType::Utf8 | DataType::LargeUtf8),
        ScalarKind::LabelList => match t {
            DataType::List(f) | DataType::LargeList(f) => ordered(f.data_type()),
            _ => false,
        },
    }
}

impl ScalarBuilder {
    /// A builder for a column `field` (its type must suit the kind).
    pub fn new(params: ScalarParams, field: &Field) -> Result<Self> {
        if !supports(params.kind, field.data_type()) {
            return Err(invalid(format!(
                "a {} index cannot be built on column {:?} of type {}",
                params.kind.type_name(),
                field.name(),
                field.data_type()
            )));
        }
        if params.btree_page_rows == 0 || params.zone_rows == 0 || params.bloom_items == 0 {
            return Err(invalid("page, zone and bloom sizes must be positive"));
        }
        if !(params.bloom_probability > 0.0 && params.bloom_probability < 1.0) {
            return Err(invalid("the bloom false-positive rate must lie in (0, 1)"));
        }
        let acc = match params.kind {
            ScalarKind::Bitmap => Acc::Group {
                grouper: Grouper::new(field.data_type())?,
                null_lists: Vec::new(),
            },
            ScalarKind::LabelList => {
                let elem = match field.data_type() {
                    DataType::List(f) | DataType::LargeList(f) => f.data_type().clone(),
                    t => return Err(invalid(format!("LABEL_LIST on {t}"))),
                };
                Acc::Group {
                    grouper: Grouper::new(&elem)?,
                    null_lists: Vec::new(),
                }
            }
            ScalarKind::NGram => Acc::NGram(NGramAcc::new()),
            ScalarKind::ZoneMap | ScalarKind::BloomFilter => {
                Acc::Zoned(Box::new(ZoneBuilder::new(&params, field.data_type())))
            }
            ScalarKind::BTree => Acc::Values {
                values: Vec::new(),
                ids: Vec::new(),
            },
        };
        Ok(Self {
            params,
            field: field.clone(),
            acc,
            rows: 0,
        })
    }

    /// Makes room for `rows` more rows (a hint: avoids regrowing the buffers).
    pub fn reserve(&mut self, rows: usize) {
        if let Acc::Values { ids, .. } = &mut self.acc {
            ids.reserve(rows);
        }
    }

    /// Adds rows: values, stored ids and addresses (same length, addresses ascending
    /// across calls).
    pub fn push(&mut self, values: ArrayRef, ids: &[u64], addrs: &[u64]) -> Result<()> {
        if values.len() != ids.len() || ids.len() != addrs.len() {
            return Err(invalid("values, ids and addresses differ in length"));
        }
        if values.data_type() != self.field.data_type() {
            return Err(invalid(format!(
                "values of type {} for a {} column",
                values.data_type(),
                self.field.data_type()
            )));
        }
        self.rows += ids.len() as u64;
        match &mut self.acc {
            Acc::Values { values: v, ids: i } => {
                v.push(values);
                i.extend_from_slice(ids);
            }
            // The zoned kinds place rows by address.
            Acc::Zoned(z) => z.push(&values, addrs)?,
            Acc::Group {
                grouper,
                null_lists,
            } => {
                if self.params.kind == ScalarKind::LabelList {
                    let (elems, elem_ids, nulls) = flatten_lists(&values, ids)?;
                    null_lists.extend(nulls);
                    grouper.push(&elems, &elem_ids)?;
                } else {
                    grouper.push(&values, ids)?;
                }
            }
            Acc::NGram(acc) => acc.push(&values, ids)?,
        }
        Ok(())
    }

    /// A ZONEMAP / BLOOMFILTER build: appends another segment's zones as written
    /// (merging segments over disjoint fragments in dataset order; see
    /// [`super::merge`]). `rows` counts the rows they cover.
    pub fn absorb_zones(
        &mut self,
        label: &str,
        file: &lancer_format::reader::FileReader,
        rows: u64,
    ) -> Result<()> {
        match &mut self.acc {
            Acc::Zoned(z) => {
                z.absorb(label, file)?;
                self.rows += rows;
                Ok(())
            }
            _ => Err(invalid(format!(
                "{} segments do not merge zone by zone",
                self.params.kind.type_name()
            ))),
        }
    }

    /// Builds the segment.
    pub fn finish(self) -> Result<BuiltScalar> {
        let p = &self.params;
        let rows = self.rows;
        let (files, details, index_version) = match self.acc {
            Acc::Group {
                grouper,
                null_lists,
            } => {
                let label_list = p.kind == ScalarKind::LabelList;
                let nulls = label_list.then_some(null_lists.as_slice());
                let files = bitmap_file(p, grouper.finish()?, nulls)?;
                (files, Vec::new(), if label_list { 1 } else { 0 })
            }
            Acc::NGram(mut acc) => {
                acc.flush();
                (ngram_file(p, acc.trees)?, Vec::new(), 0)
            }
            Acc::Zoned(z) => {
                let details = if p.kind == ScalarKind::ZoneMap {
                    let seeds = matches!(
                        self.field.data_type(),
                        DataType::Utf8
                            | DataType::LargeUtf8
                            | DataType::Binary
                            | DataType::LargeBinary
                            | DataType::Decimal128(..)
                            | DataType::Decimal256(..)
                            | DataType::FixedSizeBinary(_)
                    );
                    let mut d = vec![0x08];
                    varint(p.zone_rows, &mut d);
                    d.extend_from_slice(&[0x10, u8::from(seeds), 0x18, 0x01]);
                    d
                } else {
                    Vec::new()
                };
                (z.finish(p)?, details, 0)
            }
            Acc::Values { values, ids } => {
                let parts = values;
                let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
                let values = if refs.is_empty() {
                    arrow_array::new_empty_array(self.field.data_type())
                } else {
                    arrow_select::concat::concat(&refs)?
                };
                drop(refs);
                drop(parts);
                (btree(p, values, ids)?, Vec::new(), 0)
            }
        };
        Ok(BuiltScalar {
            files,
            details,
            index_version,
            rows,
        })
    }
}

/// A batch of lists as their elements with each element's row id (elements repeated
/// within a row are kept: grouping removes them), and the ids of the null lists.
fn flatten_lists(lists: &ArrayRef, ids: &[u64]) -> Result<(ArrayRef, Vec<u64>, Vec<u64>)> {
    let (offsets, child): (Vec<usize>, ArrayRef) = match lists.data_type() {
        DataType::List(_) => {
            let l = lists.as_list::<i32>();
            (
                l.offsets().iter().map(|&o| o as usize).collect(),
                l.values().clone(),
            )
        }
        DataType::LargeList(_) => {
            let l = lists.as_list::<i64>();
            (
                l.offsets().iter().map(|&o| o as usize).collect(),
                l.values().clone(),
            )
        }
        t => return Err(invalid(format!("LABEL_LIST on {t}"))),
    };
    let mut take = Vec::new();
    let mut elem_ids = Vec::new();
    let mut null_lists = Vec::new();
    for (row, id) in ids.iter().enumerate() {
        if lists.is_null(row) {
            null_lists.push(*id);
            continue;
        }
        for e in offsets[row]..offsets[row + 1] {
            take.push(e as u64);
            elem_ids.push(*id);
        }
    }
    let elems = arrow_select::take::take(&child, &UInt64Array::from(take), None)?;
    Ok((elems, elem_ids, null_lists))
}

fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub(super) fn write_file(
    p: &ScalarParams,
    schema: Schema,
    batches: &[RecordBatch],
    buffers: Vec<Vec<u8>>,
) -> Result<Vec<u8>> {
    let opts = WriteOptions {
        version: p.file_version,
        threads: 1,
        ..WriteOptions::default()
    };
    let mut w = FileWriter::try_new(Vec::new(), Arc::new(schema), opts)?;
    for b in buffers {
        w.add_global_buffer(b);
    }
    for b in batches {
        w.write_batch(b)?;
    }
    Ok(w.finish()?)
}

/// Row positions of `values` in the indexes' total order (nulls first).
/// Orders each run of equal values (`vals` sorted) by id: the pages then hold the
/// entries in one total order, whatever order the rows arrived in (segments built apart
/// and merged give the bytes of one build).
fn ties_by_id(vals: &ArrayRef, ids: &mut [u64]) -> Result<()> {
    let opts = SortOptions {
        descending: false,
        nulls_first: true,
    };
    let cmp = arrow_ord::ord::make_comparator(vals.as_ref(), vals.as_ref(), opts)?;
    let mut start = 0;
    for i in 1..=ids.len() {
        if i == ids.len() || cmp(i - 1, i) != std::cmp::Ordering::Equal {
            if i - start > 1 {
                ids[start..i].sort_unstable();
            }
            start = i;
        }
    }
    Ok(())
}

fn sorted(values: &ArrayRef) -> Result<UInt32Array> {
    let opts = SortOptions {
        descending: false,
        nulls_first: true,
    };
    Ok(arrow_ord::sort::sort_to_indices(values, Some(opts), None)?)
}

fn btree(p: &ScalarParams, values: ArrayRef, ids: Vec<u64>) -> Result<Vec<(String, Vec<u8>)>> {
    let order = sorted(&values)?;
    let vals = arrow_select::take::take(&values, &order, None)?;
    let mut ids: Vec<u64> = order.values().iter().map(|&i| ids[i as usize]).collect();
    drop(order);
    ties_by_id(&vals, &mut ids)?;
    let ids: ArrayRef = Arc::new(UInt64Array::from(ids));
    let dtype = values.data_type().clone();
    drop(values);
    let vfield = Field::new("values", dtype.clone(), true);
    let data_schema = Schema::new(vec![
        vfield.clone(),
        Field::new("ids", DataType::UInt64, false),
    ]);
    let data = RecordBatch::try_new(Arc::new(data_schema.clone()), vec![vals.clone(), ids])?;
    let n = vals.len();
    let page = p.btree_page_rows;
    let pages = n.div_ceil(page);
    let firsts = UInt32Array::from_iter_values((0..pages).map(|i| (i * page) as u32));
    let lasts =
        UInt32Array::from_iter_values((0..pages).map(|i| (((i + 1) * page).min(n) - 1) as u32));
    let nulls = UInt32Array::from_iter_values(
        (0..pages).map(|i| vals.slice(i * page, page.min(n - i * page)).null_count() as u32),
    );
    let lookup_schema = Schema::new(vec![
        Field::new("min", dtype.clone(), true),
        Field::new("max", dtype.clone(), true),
        Field::new("null_count", DataType::UInt32, false),
        Field::new("page_idx", DataType::UInt32, false),
    ])
    .with_metadata(HashMap::from([
        ("batch_size".to_string(), page.to_string()),
        ("range_partitioned".to_string(), "false".to_string()),
    ]));
    let lookup = RecordBatch::try_new(
        Arc::new(lookup_schema.clone()),
        vec![
            arrow_select::take::take(&vals, &firsts, None)?,
            arrow_select::take::take(&vals, &lasts, None)?,
            Arc::new(nulls),
            Arc::new(UInt32Array::from_iter_values(0..pages as u32)),
        ],
    )?;
    Ok(vec![
        (
            "page_data.lance".into(),
            write_file(p, data_schema, &[data], Vec::new())?,
        ),
        (
            "page_lookup.lance".into(),
            write_file(p, lookup_schema, &[lookup], Vec::new())?,
        ),
    ])
}

/// The BITMAP / LABEL_LIST file of grouped keys; `null_lists` adds LABEL_LIST's
/// null-list buffer.
fn bitmap_file(
    p: &ScalarParams,
    groups: Grouped,
    null_lists: Option<&[u64]>,
) -> Result<Vec<(String, Vec<u8>)>> {
    let maps: Vec<Vec<u8>> = groups.ids.iter().map(|ids| encode_sorted(ids)).collect();
    let mut meta = HashMap::from([(
        "lance:index_stats".to_string(),
        format!("{{\"num_bitmaps\":{}}}", maps.len()),
    )]);
    let mut buffers = Vec::new();
    if let Some(n) = null_lists {
        let mut n = n.to_vec();
        if n.windows(2).any(|w| w[0] >= w[1]) {
            n.sort_unstable();
            n.dedup();
        }
        buffers.push(encode_sorted(&n));
        meta.insert("lance:label_list_nulls".into(), "1".into());
    }
    let schema = Schema::new(vec![
        Field::new("keys", groups.keys.data_type().clone(), true),
        Field::new("bitmaps", DataType::Binary, true),
    ])
    .with_metadata(meta);
    let bitmaps = BinaryArray::from_iter_values(maps.iter());
    let batch = RecordBatch::try_new(
        Arc::new(schema.clone()),
        vec![groups.keys, Arc::new(bitmaps)],
    )?;
    Ok(vec![(
        "bitmap_page_lookup.lance".into(),
        write_file(p, schema, &[batch], buffers)?,
    )])
}

/// The NGRAM file: one posting list (row-address bitmap) per n-gram token.
fn ngram_file(p: &ScalarParams, trees: Vec<RoaringTreemap>) -> Result<Vec<(String, Vec<u8>)>> {
    let mut tokens = Vec::new();
    let mut lists = Vec::new();
    for (t, tree) in trees.iter().enumerate() {
        if !tree.is_empty() {
            tokens.push(t as u32);
            lists.push(rowmap::encode_treemap(tree));
        }
    }
    let schema = Schema::new(vec![
        Field::new("tokens", DataType::UInt32, true),
        Field::new("posting_list", DataType::Binary, false).with_metadata(HashMap::from([(
            "lance-encoding:compression".to_string(),
            "none".to_string(),
        )])),
    ]);
    let batch = RecordBatch::try_new(
        Arc::new(schema.clone()),
        vec![
            Arc::new(UInt32Array::from(tokens)),
            Arc::new(BinaryArray::from_iter_values(lists.iter())),
        ],
    )?;
    Ok(vec![(
        "ngram_postings.lance".into(),
        write_file(p, schema, &[batch], Vec::new())?,
    )])
}
