//! One segment of an INVERTED index (docs/fts-index-format.md §2–§6): `metadata.lance`
//! (analyzer params, partition ids, format keys), and per partition the token map (an
//! fst, checksum verified), the documents (row address and token count, read at open)
//! and the posting lists (read per token when a query needs them).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{UInt32Type, UInt64Type};
use arrow_array::{Array, RecordBatch};
use lancer_format::reader::FileReader;
use lancer_table::pb;
use lancer_table::Dataset;
use roaring::RoaringBitmap;

use super::posting::{self, Layout, Postings};
use super::tokenizer::{
    AnalyzerParams, StopWordLists, ENGLISH_STOP_WORDS_NLTK, ENGLISH_STOP_WORDS_PYLANCE14,
};
use crate::segment::corrupt;
use crate::{IndexError, Result};

/// The manifest's type URL of an INVERTED index.
pub const INVERTED_DETAILS_URL: &str = "/lance.table.InvertedIndexDetails";

/// The highest on-disk format (`index_version`) Lancer reads.
pub const MAX_FORMAT: u32 = 3;

/// Whether `meta` is an INVERTED (full-text) index segment.
pub fn is_inverted(meta: &pb::IndexMetadata) -> bool {
    meta.index_details
        .as_ref()
        .is_some_and(|d| d.type_url.ends_with("InvertedIndexDetails"))
}

/// How positions are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Positions {
    /// Not stored (phrase queries are refused).
    None,
    /// Formats 2 / 3: one stream per token, offsets per block.
    Shared,
    /// Format 1: a list per document.
    PerDocument,
}

/// One partition: its tokens, documents and posting lists.
pub struct Partition {
    /// Partition id (the `part_<id>_` file prefix).
    pub id: u64,
    tokens: fst::Map<Vec<u8>>,
    num_token_ids: u32,
    /// Row address (or stable row id) of each document.
    pub row_ids: Vec<u64>,
    /// Token count of each document.
    pub lengths: Vec<u32>,
    /// Sum of `lengths`.
    pub total_tokens: u64,
    invert: Arc<FileReader>,
    cache: std::sync::Mutex<std::collections::HashMap<u32, Arc<Postings>>>,
    bounds: std::sync::Mutex<std::collections::HashMap<BoundKey, Arc<Weights>>>,
    positions_cache: std::sync::Mutex<std::collections::HashMap<u32, Arc<PositionData>>>,
}

/// A token's BM25 weights (before idf) under one average length.
pub struct Weights {
    /// Per document of the posting list.
    pub per_doc: Vec<f32>,
    /// The highest of each group of [`BOUND_GROUP`] documents.
    pub groups: Vec<f32>,
    /// The highest of all.
    pub max: f32,
}

/// A token's weights are kept per (token id, avgdl bits, quantized lengths).
type BoundKey = (u32, u32, bool);

/// Documents per group of a posting list's score bounds.
pub const BOUND_GROUP: usize = 128;

/// Decoded postings kept per partition at most (8 bytes each).
const CACHED_POSTINGS: usize = 16 << 20;

/// Bytes of stored positions kept per partition at most.
const CACHED_POSITION_BYTES: usize = 64 << 20;

/// An opened INVERTED segment.
pub struct InvertedSegment {
    /// Index name.
    pub name: String,
    /// `name (uuid)`, for messages.
    pub label: String,
    /// The indexed column's field id.
    pub field_id: i32,
    /// Fragments whose rows the segment indexed.
    pub fragments: RoaringBitmap,
    /// The analyzer's settings.
    pub params: AnalyzerParams,
    /// The settings as the writer stored them (`params` of `metadata.lance`).
    pub params_json: String,
    /// On-disk format (1, 2, 3).
    pub format: u32,
    /// Posting layout.
    pub layout: Layout,
    /// How positions are stored.
    pub positions: Positions,
    /// The partitions.
    pub partitions: Vec<Partition>,
}

impl std::fmt::Debug for InvertedSegment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InvertedSegment")
            .field("label", &self.label)
            .field("partitions", &self.partitions.len())
            .finish()
    }
}

/// The details of an INVERTED segment whose manifest entry has none (pylance 14 commits
/// one so from an `Index(...)` built by hand after `merge_index_metadata`): read from
/// its `metadata.lance` (the analyzer params and the partition list an inverted index
/// writes there). None when the entry has details already, or its files are not an
/// inverted index's.
pub fn legacy_details(ds: &Dataset, meta: &pb::IndexMetadata) -> Option<prost_types::Any> {
    if meta.index_details.is_some() {
        return None;
    }
    let uuid = &meta.uuid.as_ref()?.uuid;
    let md = ds.open_index_file(uuid, "metadata.lance").ok()?;
    meta_key(&md, "partitions")?;
    let params = AnalyzerParams::from_json(meta_key(&md, "params")?).ok()?;
    Some(prost_types::Any {
        type_url: INVERTED_DETAILS_URL.to_string(),
        value: super::build::details_bytes(&params),
    })
}

fn meta_key<'a>(r: &'a FileReader, key: &str) -> Option<&'a String> {
    r.metadata().schema.metadata.get(key)
}

fn column<'a>(b: &'a RecordBatch, name: &str, label: &str) -> Result<&'a dyn Array> {
    b.column_by_name(name)
        .map(|c| c.as_ref())
        .ok_or_else(|| corrupt(label, format!("no {name} column")))
}

impl InvertedSegment {
    /// Opens the segment `meta` of `ds`: `Ok(None)` when it is not an INVERTED index or
    /// of a newer format than Lancer reads.
    pub fn open(ds: &Dataset, meta: &pb::IndexMetadata) -> Result<Option<Self>> {
        if !is_inverted(meta) {
            return Ok(None);
        }
        let format = meta.index_version.unwrap_or(1).max(0) as u32;
        if format > MAX_FORMAT {
            return Ok(None);
        }
        let crate::segment::SegmentHeader {
            uuid,
            label,
            fragments,
            field_id,
        } = crate::segment::SegmentHeader::of(meta, "an INVERTED index")?;
        let open = |name: &str| -> Result<Arc<FileReader>> { Ok(ds.open_index_file(&uuid, name)?) };
        // An uncommitted segment pylance 14 built (`create_index_uncommitted`) is
        // staged: each partition `staging/part_<id>_*.lance` with its own
        // `part_<id>_metadata.lance`, named in the segment's file list; a built or
        // merged one has `metadata.lance` listing `part_<id>_*.lance` partitions.
        let mut staged: Vec<&str> = meta
            .files
            .iter()
            .filter_map(|f| {
                f.path
                    .strip_prefix("staging/")
                    .and_then(|n| n.strip_suffix("_metadata.lance"))
            })
            .collect();
        staged.sort_unstable();
        staged.dedup();
        let md = match staged.first() {
            Some(first) => open(&format!("staging/{first}_metadata.lance"))?,
            None => open("metadata.lance")?,
        };
        let params_json = meta_key(&md, "params")
            .ok_or_else(|| corrupt(&label, "metadata.lance has no params"))?;
        let mut params = AnalyzerParams::from_json(params_json)
            .map_err(|e| corrupt(&label, format!("analyzer params: {e}")))?;
        params.models = super::tokenizer::LanguageModels::of(ds.store().context());
        let ids: Vec<u64> = match meta_key(&md, "partitions") {
            _ if !staged.is_empty() => {
                let mut ids = Vec::with_capacity(staged.len());
                for n in &staged {
                    // every staged partition written with the same analyzer settings
                    let other = open(&format!("staging/{n}_metadata.lance"))?;
                    if meta_key(&other, "params") != Some(params_json) {
                        return Err(corrupt(
                            &label,
                            format!("staged partition {n} has other analyzer params"),
                        ));
                    }
                    ids.push(
                        n.strip_prefix("part_")
                            .and_then(|id| id.parse::<u64>().ok())
                            .ok_or_else(|| {
                                corrupt(&label, format!("staged partition file {n:?}"))
                            })?,
                    );
                }
                ids.sort_unstable();
                ids
            }
            Some(p) => serde_json::from_str(p)
                .map_err(|e| corrupt(&label, format!("partitions {p:?}: {e}")))?,
            None => vec![0],
        };
        if ids.len() > 1 << 16 {
            return Err(corrupt(&label, format!("{} partitions", ids.len())));
        }
        let dir = if staged.is_empty() { "" } else { "staging/" };
        let block = match meta_key(&md, "posting_block_size").map(|s| s.as_str()) {
            None | Some("128") => 128,
            Some("256") => 256,
            Some(other) => {
                return Err(corrupt(&label, format!("posting block size {other}")));
            }
        };
        let varint_tail = match meta_key(&md, "posting_tail_codec").map(|s| s.as_str()) {
            Some("varint_delta_v1") => true,
            Some("fixed32_v1") => false,
            None => format >= 2,
            Some(other) => return Err(corrupt(&label, format!("posting tail codec {other}"))),
        };
        let mut partitions = Vec::with_capacity(ids.len());
        let mut positions = Positions::None;
        for id in ids {
            let part = Self::open_partition(&open, &label, dir, id)?;
            let schema = part.invert.schema();
            let p = if schema.field_with_name("_compressed_position").is_ok() {
                Positions::Shared
            } else if schema.field_with_name("_position").is_ok() {
                Positions::PerDocument
            } else {
                Positions::None
            };
            positions = p;
            partitions.push(part);
        }
        params.stop_word_lists = stop_lists(ds, field_id, &params, &partitions);
        Ok(Some(Self {
            name: meta.name.clone(),
            label,
            field_id,
            fragments,
            params,
            params_json: params_json.to_string(),
            format,
            layout: Layout { block, varint_tail },
            positions,
            partitions,
        }))
    }

    fn open_partition(
        open: &dyn Fn(&str) -> Result<Arc<FileReader>>,
        label: &str,
        dir: &str,
        id: u64,
    ) -> Result<Partition> {
        let tokens_file = open(&format!("{dir}part_{id}_tokens.lance"))?;
        let t = tokens_file.read_all(None)?;
        let fst_bytes = column(&t, "_token_fst_bytes", label)?;
        let fst_bytes = fst_bytes
            .as_binary_opt::<i64>()
            .map(|a| a.iter().next().flatten().map(<[u8]>::to_vec))
            .or_else(|| {
                fst_bytes
                    .as_binary_opt::<i32>()
                    .map(|a| a.iter().next().flatten().map(<[u8]>::to_vec))
            })
            .flatten()
            .ok_or_else(|| corrupt(label, format!("partition {id}: no token map")))?;
        let tokens = fst::Map::new(fst_bytes)
            .map_err(|e| corrupt(label, format!("partition {id} token map: {e}")))?;
        tokens
            .as_fst()
            .verify()
            .map_err(|e| corrupt(label, format!("partition {id} token map: {e}")))?;
        let num_token_ids = column(&t, "_token_next_id", label)?
            .as_primitive_opt::<UInt32Type>()
            .and_then(|a| a.iter().next().flatten())
            .unwrap_or(tokens.len() as u32);
        let docs = open(&format!("{dir}part_{id}_docs.lance"))?.read_all(None)?;
        let row_ids = column(&docs, "_rowid", label)?
            .as_primitive_opt::<UInt64Type>()
            .ok_or_else(|| corrupt(label, "_rowid is not uint64"))?
            .values()
            .to_vec();
        let lengths = column(&docs, "_num_tokens", label)?
            .as_primitive_opt::<UInt32Type>()
            .ok_or_else(|| corrupt(label, "_num_tokens is not uint32"))?
            .values()
            .to_vec();
        if lengths.len() != row_ids.len() {
            return Err(corrupt(label, "documents with mismatched columns"));
        }
        // documents are in row order when one build wrote them; pylance 14's merge of
        // staged partitions (`merge_index_metadata`) keeps its partitions' order. Either
        // way a row is one document.
        if row_ids.windows(2).any(|w| w[0] >= w[1]) {
            let mut sorted = row_ids.clone();
            sorted.sort_unstable();
            if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
                return Err(corrupt(
                    label,
                    format!("partition {id}: row {} is indexed twice", w[0]),
                ));
            }
        }
        let total_tokens = lengths.iter().map(|&l| u64::from(l)).sum();
        let invert = open(&format!("{dir}part_{id}_invert.lance"))?;
        if invert.num_rows() < u64::from(num_token_ids) {
            return Err(corrupt(
                label,
                format!(
                    "partition {id}: {} posting lists for {num_token_ids} tokens",
                    invert.num_rows()
                ),
            ));
        }
        Ok(Partition {
            id,
            tokens,
            num_token_ids,
            row_ids,
            lengths,
            total_tokens,
            invert,
            cache: Default::default(),
            positions_cache: Default::default(),
            bounds: Default::default(),
        })
    }

    /// pylance's statistics of this segment (`index_statistics`'s `indices` entries):
    /// the analyzer settings as stored, tokens and documents over its partitions.
    pub fn statistics(&self) -> serde_json::Value {
        serde_json::json!({
            "params": serde_json::from_str::<serde_json::Value>(&self.params_json)
                .unwrap_or(serde_json::Value::Null),
            "num_tokens": self.partitions.iter().map(|p| u64::from(p.num_tokens())).sum::<u64>(),
            "num_docs": self.num_docs(),
        })
    }

    /// Documents over all partitions.
    pub fn num_docs(&self) -> u64 {
        self.partitions.iter().map(|p| p.row_ids.len() as u64).sum()
    }

    /// Tokens over all partitions.
    pub fn total_tokens(&self) -> u64 {
        self.partitions.iter().map(|p| p.total_tokens).sum()
    }
}

/// Which English stop-word list built an index: pylance 11 / 12 removed NLTK's, 14 a
/// shorter one, and the files do not say which (docs/fts-index-format.md §10.4).
/// Decided by re-tokenizing a sample of indexed rows with both lists: the one that gives
/// the stored `_num_tokens` wins. When no sampled row tells them apart (no word of
/// one list but not the other: `not`, `no`, `t`, `don`, …), a token only 14 keeps in the
/// index means 14's list, else NLTK's (an index of text without any such word is the
/// same under both; the choice then only decides whether such a word in a query or in a
/// row appended since counts).
fn stop_lists(
    ds: &Dataset,
    field_id: i32,
    params: &AnalyzerParams,
    partitions: &[Partition],
) -> StopWordLists {
    if !params.remove_stop_words
        || params.custom_stop_words.is_some()
        || params.language != "English"
    {
        return StopWordLists::default();
    }
    if let Some(l) = sampled_lists(ds, field_id, params, partitions) {
        return l;
    }
    let kept_by_14 = ENGLISH_STOP_WORDS_NLTK
        .iter()
        .filter(|w| !ENGLISH_STOP_WORDS_PYLANCE14.contains(w));
    for w in kept_by_14 {
        if partitions.iter().any(|p| p.token_id(w).is_some()) {
            return StopWordLists::Pylance14;
        }
    }
    StopWordLists::Nltk
}

/// Rows of the index sampled for [`stop_lists`].
const SAMPLED_ROWS: usize = 2048;

fn sampled_lists(
    ds: &Dataset,
    field_id: i32,
    params: &AnalyzerParams,
    partitions: &[Partition],
) -> Option<StopWordLists> {
    use arrow_array::cast::AsArray;
    if ds.uses_stable_row_ids() {
        return None;
    }
    let column = ds
        .manifest()
        .schema
        .fields
        .iter()
        .find(|f| f.id == field_id && f.parent_id == -1)?
        .name
        .clone();
    let live = ds.live_addresses().ok()?;
    let mut rows = Vec::new();
    let mut lengths = Vec::new();
    'parts: for p in partitions {
        for (&r, &l) in p.row_ids.iter().zip(&p.lengths) {
            if rows.len() >= SAMPLED_ROWS {
                break 'parts;
            }
            if live.contains(r) {
                rows.push(r);
                lengths.push(l);
            }
        }
    }
    let b = ds
        .take_addresses_stored(&rows, Some(&[column.as_str()]))
        .ok()?;
    let col = b.column(0);
    let text = |i: usize| -> Option<&str> {
        if col.is_null(i) {
            return None;
        }
        col.as_string_opt::<i32>()
            .map(|a| a.value(i))
            .or_else(|| col.as_string_opt::<i64>().map(|a| a.value(i)))
    };
    let with = |lists: StopWordLists| {
        let mut p = params.clone();
        p.stop_word_lists = lists;
        p.analyzer().ok()
    };
    let (mut a14, mut nltk) = (with(StopWordLists::Pylance14)?, with(StopWordLists::Nltk)?);
    let (mut t14, mut tn) = (Vec::new(), Vec::new());
    for (i, &len) in lengths.iter().enumerate() {
        let Some(s) = text(i) else { continue };
        a14.tokens(s, &mut t14);
        nltk.tokens(s, &mut tn);
        if t14.len() != tn.len() {
            if t14.len() == len as usize {
                return Some(StopWordLists::Pylance14);
            }
            if tn.len() == len as usize {
                return Some(StopWordLists::Nltk);
            }
        }
    }
    None
}

impl Partition {
    /// The id of `token` in this partition.
    pub fn token_id(&self, token: &str) -> Option<u32> {
        self.tokens
            .get(token)
            .and_then(|v| u32::try_from(v).ok())
            .filter(|&v| v < self.num_token_ids)
    }

    /// Every token of this partition accepted by `automaton`, with its id, in byte order.
    pub fn tokens_matching<A: fst::Automaton>(&self, automaton: A) -> Vec<(String, u32)> {
        use fst::{IntoStreamer, Streamer};
        let mut out = Vec::new();
        let mut s = self.tokens.search(automaton).into_stream();
        while let Some((k, v)) = s.next() {
            if let (Ok(k), Ok(v)) = (std::str::from_utf8(k), u32::try_from(v)) {
                out.push((k.to_string(), v));
            }
        }
        out
    }

    /// The BM25 weights (before idf) of a token's `postings` under `avgdl` (quantized
    /// lengths when `quantized`) — per document, and the highest of each group of
    /// [`BOUND_GROUP`] documents (the bound a top-k search uses to skip groups).
    /// Computed once per token and kept (bounded like the postings).
    pub fn weights(
        &self,
        token_id: u32,
        postings: &Postings,
        avgdl: f32,
        quantized: bool,
    ) -> Arc<Weights> {
        use super::search::{dequantize, doc_weight, quantize};
        let key = (token_id, avgdl.to_bits(), quantized);
        if let Some(b) = self
            .bounds
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return b.clone();
        }
        let per_doc: Vec<f32> = postings
            .docs
            .iter()
            .zip(&postings.freqs)
            .map(|(&d, &f)| {
                let dl = self.lengths.get(d as usize).copied().unwrap_or(0);
                let dl = if quantized {
                    dequantize(quantize(dl))
                } else {
                    dl
                };
                doc_weight(f, dl as f32, avgdl)
            })
            .collect();
        let groups: Vec<f32> = per_doc
            .chunks(BOUND_GROUP)
            .map(|g| g.iter().copied().fold(0f32, f32::max))
            .collect();
        let max = groups.iter().copied().fold(0f32, f32::max);
        let w = Arc::new(Weights {
            per_doc,
            groups,
            max,
        });
        let mut m = self.bounds.lock().unwrap_or_else(|e| e.into_inner());
        let held: usize = m.values().map(|w| w.per_doc.len()).sum();
        if held + w.per_doc.len() > CACHED_POSTINGS {
            m.clear();
        }
        m.insert(key, w.clone());
        w
    }

    /// Number of distinct tokens.
    pub fn num_tokens(&self) -> u32 {
        self.num_token_ids
    }

    /// The posting list of `token_id` (its documents and frequencies), decoded once and
    /// kept (index files never change; the cache is bounded by postings held).
    pub fn postings(&self, seg: &InvertedSegment, token_id: u32) -> Result<Arc<Postings>> {
        if let Some(p) = self
            .cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&token_id)
        {
            return Ok(p.clone());
        }
        let p = Arc::new(self.read_postings(seg, token_id)?);
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        let held: usize = cache.values().map(|p| p.docs.len()).sum::<usize>();
        if held + p.docs.len() > CACHED_POSTINGS {
            cache.clear();
        }
        cache.insert(token_id, p.clone());
        Ok(p)
    }

    fn read_postings(&self, seg: &InvertedSegment, token_id: u32) -> Result<Postings> {
        let b = self
            .invert
            .take(&[u64::from(token_id)], Some(&["_posting", "_length"]))?;
        self.decode_postings(seg, token_id, &b, 0)
    }

    /// Every token's posting list, in token id order, from one read of the postings
    /// (a merge decodes them all; a read per token was a request each).
    pub(crate) fn all_postings(&self, seg: &InvertedSegment) -> Result<Vec<Postings>> {
        let b = self.invert.read_all(Some(&["_posting", "_length"]))?;
        (0..self.num_token_ids)
            .map(|t| self.decode_postings(seg, t, &b, t as usize))
            .collect()
    }

    /// Row `row` of `b` (`_posting`, `_length` of the invert file), the list of
    /// `token_id`, decoded.
    fn decode_postings(
        &self,
        seg: &InvertedSegment,
        token_id: u32,
        b: &RecordBatch,
        row: usize,
    ) -> Result<Postings> {
        let err = |what: String| {
            corrupt(
                &seg.label,
                format!("partition {} token {token_id}: {what}", self.id),
            )
        };
        let length = b
            .column(1)
            .as_primitive_opt::<UInt32Type>()
            .and_then(|a| (row < a.len() && a.is_valid(row)).then(|| a.value(row)))
            .ok_or_else(|| err("no _length".into()))? as usize;
        let list = b
            .column(0)
            .as_list_opt::<i32>()
            .ok_or_else(|| err("_posting is not a list".into()))?;
        if row >= list.len() || list.is_null(row) {
            return Err(err("no posting list".into()));
        }
        let values = list.value(row);
        let blocks: Vec<&[u8]> = match values.as_binary_opt::<i64>() {
            Some(a) => (0..a.len()).map(|i| a.value(i)).collect(),
            None => {
                return Err(err("_posting blocks are not large_binary".into()));
            }
        };
        // `values` borrows from `list`; decode before it goes
        let p = posting::decode(&blocks, length, seg.layout, self.row_ids.len()).map_err(err)?;
        Ok(p)
    }

    /// The positions of every document of `postings` (the list of `token_id`).
    pub fn positions(
        &self,
        seg: &InvertedSegment,
        token_id: u32,
        postings: &Postings,
    ) -> Result<Vec<Vec<u32>>> {
        let data = self.position_data(seg, token_id, postings)?;
        let blocks = postings.freqs.len().div_ceil(seg.layout.block);
        let mut out = Vec::with_capacity(postings.freqs.len());
        for b in 0..blocks {
            out.extend(
                self.position_block(seg, token_id, postings, &data, b)?
                    .to_lists(),
            );
        }
        Ok(out)
    }

    /// The positions of the documents of block `b` of `postings` (documents
    /// `b * block ..`), from `data` ([`Self::position_data`] of the same token).
    pub fn position_block(
        &self,
        seg: &InvertedSegment,
        token_id: u32,
        postings: &Postings,
        data: &PositionData,
        b: usize,
    ) -> Result<posting::PositionBlock> {
        let block = seg.layout.block;
        match data {
            PositionData::Shared { stream, offsets } => {
                posting::decode_position_block(stream, offsets, &postings.freqs, block, b)
                    .map_err(|what| self.positions_error(seg, token_id, what))
            }
            PositionData::Decoded(all) => Ok(posting::PositionBlock::from_lists(
                all.get(b * block..((b + 1) * block).min(all.len()))
                    .unwrap_or_default(),
            )),
        }
    }

    /// The positions of the `idx`-th document of `postings` alone, into `out` (see
    /// [`posting::decode_doc_positions`]).
    pub fn doc_positions(
        &self,
        seg: &InvertedSegment,
        token_id: u32,
        postings: &Postings,
        data: &PositionData,
        idx: usize,
        out: &mut Vec<u32>,
    ) -> Result<()> {
        let block = seg.layout.block;
        match data {
            PositionData::Shared { stream, offsets } => posting::decode_doc_positions(
                stream,
                offsets,
                &postings.freqs,
                block,
                idx / block,
                idx % block,
                out,
            )
            .map_err(|what| self.positions_error(seg, token_id, what)),
            PositionData::Decoded(all) => {
                out.clear();
                out.extend_from_slice(all.get(idx).map_or(&[][..], Vec::as_slice));
                Ok(())
            }
        }
    }

    fn positions_error(&self, seg: &InvertedSegment, token_id: u32, what: String) -> IndexError {
        corrupt(
            &seg.label,
            format!("partition {} token {token_id} positions: {what}", self.id),
        )
    }

    /// A token's stored positions (the stream and its block offsets in formats 2 / 3,
    /// every document's decoded in format 1), read once and kept (bounded by bytes).
    pub fn position_data(
        &self,
        seg: &InvertedSegment,
        token_id: u32,
        postings: &Postings,
    ) -> Result<Arc<PositionData>> {
        if let Some(d) = self
            .positions_cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&token_id)
        {
            return Ok(d.clone());
        }
        let d = Arc::new(self.read_positions(seg, token_id, postings)?);
        let mut cache = self
            .positions_cache
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let held: usize = cache.values().map(|d| d.bytes()).sum::<usize>();
        if held + d.bytes() > CACHED_POSITION_BYTES {
            cache.clear();
        }
        cache.insert(token_id, d.clone());
        Ok(d)
    }

    fn read_positions(
        &self,
        seg: &InvertedSegment,
        token_id: u32,
        postings: &Postings,
    ) -> Result<PositionData> {
        let err = |what: String| self.positions_error(seg, token_id, what);
        match seg.positions {
            Positions::None => Err(IndexError::InvalidArgument {
                what: format!(
                    "index {} stores no positions, which phrase queries need: recreate it with positions stored (with_position)",
                    seg.name
                ),
            }),
            Positions::Shared => {
                let b = self.invert.take(
                    &[u64::from(token_id)],
                    Some(&["_compressed_position", "_position_block_offset"]),
                )?;
                let stream = b
                    .column(0)
                    .as_binary_opt::<i64>()
                    .filter(|a| !a.is_empty())
                    .map(|a| a.value(0).to_vec())
                    .ok_or_else(|| err("no position stream".into()))?;
                let offs = b
                    .column(1)
                    .as_list_opt::<i32>()
                    .filter(|a| !a.is_empty())
                    .map(|a| a.value(0))
                    .ok_or_else(|| err("no block offsets".into()))?;
                let offsets = offs
                    .as_primitive_opt::<UInt32Type>()
                    .ok_or_else(|| err("block offsets are not uint32".into()))?
                    .values()
                    .to_vec();
                posting::check_position_blocks(&offsets, &postings.freqs, seg.layout.block)
                    .map_err(err)?;
                Ok(PositionData::Shared { stream, offsets })
            }
            Positions::PerDocument => {
                let b = self
                    .invert
                    .take(&[u64::from(token_id)], Some(&["_position"]))?;
                let outer = b
                    .column(0)
                    .as_list_opt::<i32>()
                    .filter(|a| !a.is_empty())
                    .map(|a| a.value(0))
                    .ok_or_else(|| err("no _position".into()))?;
                let docs = outer
                    .as_list_opt::<i32>()
                    .ok_or_else(|| err("_position is not a list of lists".into()))?;
                if docs.len() != postings.freqs.len() {
                    return Err(err(format!(
                        "{} position lists for {} documents",
                        docs.len(),
                        postings.freqs.len()
                    )));
                }
                let mut out = Vec::with_capacity(docs.len());
                for (i, &f) in postings.freqs.iter().enumerate() {
                    let parts = docs.value(i);
                    let parts = parts
                        .as_binary_opt::<i64>()
                        .ok_or_else(|| err("position parts are not large_binary".into()))?;
                    let parts: Vec<&[u8]> = (0..parts.len()).map(|k| parts.value(k)).collect();
                    out.push(posting::decode_positions_v1(&parts, f).map_err(err)?);
                }
                Ok(PositionData::Decoded(out))
            }
        }
    }
}

/// A token's stored positions, as read (see [`Partition::position_data`]).
pub enum PositionData {
    /// Formats 2 / 3: the compressed stream and each block's offset in it (checked
    /// against the posting list's block count).
    Shared {
        /// The position stream.
        stream: Vec<u8>,
        /// Where each block's positions start.
        offsets: Vec<u32>,
    },
    /// Format 1: each document's positions.
    Decoded(Vec<Vec<u32>>),
}

impl PositionData {
    fn bytes(&self) -> usize {
        match self {
            Self::Shared { stream, offsets } => stream.len() + 4 * offsets.len(),
            Self::Decoded(d) => d.iter().map(|p| 24 + 4 * p.len()).sum(),
        }
    }
}
