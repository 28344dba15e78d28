//! Builds an INVERTED index segment in pylance's format (docs/fts-index-format.md §2–§6,
//! §13): one partition, format 2 (128-document blocks with block-max scores, varint
//! tails, quantized impacts, positions in one shared stream per token when asked), an
//! fst token map with ids in first-appearance order, the documents table, and
//! `metadata.lance` with the analyzer's params. Rows are handed in ascending row
//! address (or stable row id) order; rows without tokens are not documents.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::builder::{LargeBinaryBuilder, ListBuilder, UInt32Builder};
use arrow_array::{
    ArrayRef, Float32Array, LargeBinaryArray, RecordBatch, UInt32Array, UInt64Array,
};
use arrow_schema::{DataType, Field, Schema};
use bitpacking::{BitPacker, BitPacker4x};
use lancer_format::container::FileVersion;
use lancer_format::writer::{FileWriter, WriteOptions};

use super::search::{idf, quantize, B, K1};
use super::tokenizer::{Analyzer, AnalyzerParams};
use crate::{IndexError, Result};

/// Documents per posting block.
const BLOCK: usize = 128;
/// Blocks summarized by one level-1 impact entry.
const IMPACT_GROUP: usize = 32;
/// The on-disk format written (`index_version`).
pub const FORMAT: i32 = 2;

/// One token's postings while building.
#[derive(Default)]
pub(crate) struct List {
    pub(crate) docs: Vec<u32>,
    pub(crate) freqs: Vec<u32>,
    /// Positions of each document, concatenated (when positions are kept).
    pub(crate) positions: Vec<u32>,
}

/// Accumulates documents into one partition.
pub struct InvertedBuilder {
    params: AnalyzerParams,
    analyzer: Analyzer,
    ids: HashMap<String, u32>,
    tokens: Vec<String>,
    lists: Vec<List>,
    row_ids: Vec<u64>,
    lengths: Vec<u32>,
}

/// The documents of a run of rows, tokenized apart from the builder (on any thread)
/// and merged into it in row order by [`InvertedBuilder::push_chunk`].
pub struct TokenizedChunk {
    /// The chunk's distinct tokens, in order of first appearance (local ids).
    vocab: Vec<String>,
    /// Per document: row id, tokens, distinct tokens.
    docs: Vec<(u64, u32, u32)>,
    /// Per document, its distinct tokens in order of first appearance: (local id,
    /// frequency).
    entries: Vec<(u32, u32)>,
    /// Each entry's positions, ascending, entries in order.
    positions: Vec<u32>,
    with_position: bool,
}

/// Tokenizes rows into a [`TokenizedChunk`].
pub struct ChunkTokenizer {
    analyzer: Analyzer,
    with_position: bool,
    ids: HashMap<String, u32>,
    chunk: TokenizedChunk,
    /// Per local id: the document (numbered from 1) it last appeared in, and its entry
    /// there.
    seen: Vec<(u32, u32)>,
    /// The current document's (entry, position) per token.
    occurrences: Vec<(u32, u32)>,
    fill: Vec<usize>,
}

impl ChunkTokenizer {
    fn new(analyzer: Analyzer, with_position: bool) -> Self {
        Self {
            analyzer,
            with_position,
            ids: HashMap::new(),
            chunk: TokenizedChunk {
                vocab: Vec::new(),
                docs: Vec::new(),
                entries: Vec::new(),
                positions: Vec::new(),
                with_position,
            },
            seen: Vec::new(),
            occurrences: Vec::new(),
            fill: Vec::new(),
        }
    }

    /// Documents tokenized so far.
    pub fn docs(&self) -> usize {
        self.chunk.docs.len()
    }

    /// Tokenizes one row (a row without tokens is not a document).
    pub fn push(&mut self, row_id: u64, text: &str) {
        self.push_parts(row_id, &[text]);
    }

    /// Tokenizes one row made of several texts (a `list<string>` row: its items, in
    /// order, as one document; positions run on from one item to the next).
    pub fn push_parts(&mut self, row_id: u64, parts: &[&str]) {
        let c = &mut self.chunk;
        let e0 = c.entries.len();
        let doc = c.docs.len() as u32 + 1;
        let (ids, seen, occ) = (&mut self.ids, &mut self.seen, &mut self.occurrences);
        occ.clear();
        let mut count = 0u32;
        let with_position = self.with_position;
        let mut offset = 0u32;
        for text in parts {
            let mut last = None;
            self.analyzer.each_token(text, &mut |tok, pos| {
                last = Some(pos);
                let pos = pos.saturating_add(offset);
                let id = match ids.get(tok) {
                    Some(&id) => id,
                    None => {
                        let id = c.vocab.len() as u32;
                        ids.insert(tok.to_string(), id);
                        c.vocab.push(tok.to_string());
                        seen.push((0, 0));
                        id
                    }
                };
                let s = &mut seen[id as usize];
                if s.0 != doc {
                    *s = (doc, (c.entries.len() - e0) as u32);
                    c.entries.push((id, 0));
                }
                c.entries[e0 + s.1 as usize].1 += 1;
                if with_position {
                    occ.push((s.1, pos));
                }
                count = count.saturating_add(1);
            });
            if let Some(p) = last {
                offset = offset.saturating_add(p).saturating_add(1);
            }
        }
        if count == 0 {
            return;
        }
        if with_position {
            // each entry's positions together, entries in order (a stable counting sort)
            let base = c.positions.len();
            c.positions.resize(base + occ.len(), 0);
            self.fill.clear();
            let mut at = base;
            for &(_, f) in &c.entries[e0..] {
                self.fill.push(at);
                at += f as usize;
            }
            for &(k, pos) in occ.iter() {
                let slot = &mut self.fill[k as usize];
                c.positions[*slot] = pos;
                *slot += 1;
            }
        }
        c.docs.push((row_id, count, (c.entries.len() - e0) as u32));
    }

    /// The chunk so far; the tokenizer starts a new one.
    pub fn finish(&mut self) -> TokenizedChunk {
        self.ids.clear();
        self.seen.clear();
        std::mem::replace(
            &mut self.chunk,
            TokenizedChunk {
                vocab: Vec::new(),
                docs: Vec::new(),
                entries: Vec::new(),
                positions: Vec::new(),
                with_position: self.with_position,
            },
        )
    }
}

/// The files of a built segment and what its manifest entry records.
pub struct BuiltInverted {
    /// (file name, bytes).
    pub files: Vec<(String, Vec<u8>)>,
    /// `InvertedIndexDetails` bytes.
    pub details: Vec<u8>,
    /// Documents indexed.
    pub docs: u64,
}

fn invalid(what: impl Into<String>) -> IndexError {
    IndexError::InvalidArgument { what: what.into() }
}

impl InvertedBuilder {
    /// A builder with `params` (its analyzer must build).
    pub fn new(params: AnalyzerParams) -> Result<Self> {
        if params.block_size != 128 {
            return Err(invalid(format!(
                "posting block size {} (Lancer writes 128)",
                params.block_size
            )));
        }
        let analyzer = params.analyzer()?;
        Ok(Self {
            params,
            analyzer,
            ids: HashMap::new(),
            tokens: Vec::new(),
            lists: Vec::new(),
            row_ids: Vec::new(),
            lengths: Vec::new(),
        })
    }

    /// A builder holding merged partitions' contents ([`super::merge`]): `tokens` in id
    /// order, each one's list (`lists`, documents ascending, indexes into `row_ids`),
    /// the documents' row ids (ascending) and token counts.
    pub(crate) fn from_merged(
        params: AnalyzerParams,
        tokens: Vec<String>,
        lists: Vec<List>,
        row_ids: Vec<u64>,
        lengths: Vec<u32>,
    ) -> Result<Self> {
        let mut b = Self::new(params)?;
        b.ids = tokens
            .iter()
            .enumerate()
            .map(|(i, t)| (t.clone(), i as u32))
            .collect();
        b.tokens = tokens;
        b.lists = lists;
        b.row_ids = row_ids;
        b.lengths = lengths;
        Ok(b)
    }

    /// Adds the row `row_id` with `text` (rows in ascending `row_id` order).
    pub fn push(&mut self, row_id: u64, text: &str) -> Result<()> {
        let mut t = ChunkTokenizer::new(self.analyzer.clone(), self.params.with_position);
        t.push(row_id, text);
        self.push_chunk(t.finish())
    }

    /// A tokenizer of this builder's analyzer for [`Self::push_chunk`] (one per thread).
    pub fn chunk_tokenizer(&self) -> ChunkTokenizer {
        ChunkTokenizer::new(self.analyzer.clone(), self.params.with_position)
    }

    /// Adds the documents of a chunk (chunks in ascending row order, each tokenized by
    /// a [`ChunkTokenizer`] of this builder). Token ids are given in order of first
    /// appearance, as if the rows were pushed one by one.
    pub fn push_chunk(&mut self, c: TokenizedChunk) -> Result<()> {
        let mut prev = self.row_ids.last().copied();
        for &(row, ..) in &c.docs {
            if prev.is_some_and(|p| p >= row) {
                return Err(invalid("rows handed to the index builder out of order"));
            }
            prev = Some(row);
        }
        if self.row_ids.len() + c.docs.len() > u32::MAX as usize {
            return Err(invalid("more than 2^32 documents in one partition"));
        }
        let map: Vec<u32> = c
            .vocab
            .into_iter()
            .map(|t| match self.ids.get(t.as_str()) {
                Some(&id) => id,
                None => {
                    let id = self.tokens.len() as u32;
                    self.ids.insert(t.clone(), id);
                    self.tokens.push(t);
                    self.lists.push(List::default());
                    id
                }
            })
            .collect();
        let (mut e, mut p) = (0usize, 0usize);
        for &(row, len, n) in &c.docs {
            let doc = self.row_ids.len() as u32;
            for &(local, f) in &c.entries[e..e + n as usize] {
                let l = &mut self.lists[map[local as usize] as usize];
                l.docs.push(doc);
                l.freqs.push(f);
                if c.with_position {
                    l.positions
                        .extend_from_slice(&c.positions[p..p + f as usize]);
                    p += f as usize;
                }
            }
            e += n as usize;
            self.row_ids.push(row);
            self.lengths.push(len);
        }
        Ok(())
    }

    /// Documents so far.
    pub fn docs(&self) -> usize {
        self.row_ids.len()
    }

    /// Writes the segment's files (Lance files of `version`): partition 0 and the
    /// segment's `metadata.lance`.
    pub fn finish(self, version: FileVersion) -> Result<BuiltInverted> {
        self.finish_partition(version, 0, false)
    }

    /// Writes the builder's rows as partition `id`: `part_<id>_{invert,tokens,docs}.lance`
    /// and, `staged`, `part_<id>_metadata.lance` (pylance 14's layout of one
    /// fragment-level build under `staging/`, merged later by
    /// `merge_index_metadata`), else `metadata.lance`.
    pub fn finish_partition(
        self,
        version: FileVersion,
        id: u64,
        staged: bool,
    ) -> Result<BuiltInverted> {
        let n_docs = self.row_ids.len() as u64;
        let total: u64 = self.lengths.iter().map(|&l| u64::from(l)).sum();
        let avgdl = total as f32 / n_docs as f32;
        let with_pos = self.params.with_position;
        let mut files = Vec::new();

        // part_<id>_invert.lance
        let mut posting = ListBuilder::new(LargeBinaryBuilder::new());
        let mut impacts = ListBuilder::new(LargeBinaryBuilder::new());
        let mut offsets = ListBuilder::new(UInt32Builder::new());
        let mut max_scores = Vec::with_capacity(self.lists.len());
        let mut lengths = Vec::with_capacity(self.lists.len());
        let mut streams: Vec<Vec<u8>> = Vec::new();
        for l in &self.lists {
            let w = idf(l.docs.len() as u64, n_docs) * (K1 + 1.0);
            let mut max = 0f32;
            let mut pos_at = 0usize;
            let mut stream = Vec::new();
            for (b, (docs, freqs)) in l.docs.chunks(BLOCK).zip(l.freqs.chunks(BLOCK)).enumerate() {
                let mut best = 0f32;
                for (&d, &f) in docs.iter().zip(freqs) {
                    let dl = self.lengths[d as usize] as f32;
                    let f = f as f32;
                    let v = f / (f + K1 * ((1.0 - B) + (B * dl) / avgdl));
                    if v > best {
                        best = v;
                    }
                }
                let score = best * w;
                max = max.max(score);
                posting
                    .values()
                    .append_value(block_bytes(score, docs, freqs));
                if with_pos {
                    let n: usize = freqs.iter().map(|&f| f as usize).sum();
                    offsets.values().append_value(stream.len() as u32);
                    let mut deltas = Vec::with_capacity(n);
                    let mut at = pos_at;
                    for &f in freqs {
                        let ps = &l.positions[at..at + f as usize];
                        let mut prev = 0;
                        for (k, &p) in ps.iter().enumerate() {
                            deltas.push(if k == 0 { p } else { p - prev });
                            prev = p;
                        }
                        at += f as usize;
                    }
                    pos_at = at;
                    position_bytes(&deltas, &mut stream);
                }
                let _ = b;
            }
            posting.append(true);
            if with_pos {
                offsets.append(true);
                streams.push(stream);
            }
            for e in impact_entries(&l.docs, &l.freqs, &self.lengths) {
                impacts.values().append_value(e);
            }
            impacts.append(true);
            max_scores.push(max);
            lengths.push(l.docs.len() as u32);
        }
        let not_null_list =
            |item: DataType| DataType::List(Arc::new(Field::new("item", item, true)));
        let mut fields = vec![
            Field::new("_posting", not_null_list(DataType::LargeBinary), false),
            Field::new("_max_score", DataType::Float32, false),
            Field::new("_length", DataType::UInt32, false),
            Field::new("_impacts", not_null_list(DataType::LargeBinary), false),
        ];
        let mut cols: Vec<ArrayRef> = vec![
            Arc::new(posting.finish()),
            Arc::new(Float32Array::from(max_scores)),
            Arc::new(UInt32Array::from(lengths)),
            Arc::new(impacts.finish()),
        ];
        let mut meta = HashMap::from([
            ("format_version".to_string(), FORMAT.to_string()),
            ("posting_block_size".to_string(), BLOCK.to_string()),
            (
                "posting_tail_codec".to_string(),
                "varint_delta_v1".to_string(),
            ),
        ]);
        if with_pos {
            fields.push(Field::new(
                "_compressed_position",
                DataType::LargeBinary,
                false,
            ));
            fields.push(Field::new(
                "_position_block_offset",
                not_null_list(DataType::UInt32),
                false,
            ));
            cols.push(Arc::new(LargeBinaryArray::from_iter_values(streams.iter())));
            cols.push(Arc::new(offsets.finish()));
            meta.insert("positions_layout".into(), "shared_stream_v2".into());
            meta.insert("positions_codec".into(), "packed_delta_v1".into());
        }
        let schema = Schema::new(fields).with_metadata(meta.clone());
        files.push((
            format!("part_{id}_invert.lance"),
            write(schema, cols, version)?,
        ));

        // part_<id>_tokens.lance
        let mut sorted: Vec<(&str, u32)> = self.ids.iter().map(|(k, &v)| (k.as_str(), v)).collect();
        sorted.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        let mut mb = fst::MapBuilder::memory();
        for (k, v) in &sorted {
            mb.insert(k, u64::from(*v))
                .map_err(|e| invalid(format!("token map: {e}")))?;
        }
        let fst_bytes = mb
            .into_inner()
            .map_err(|e| invalid(format!("token map: {e}")))?;
        let total_len: u64 = self.tokens.iter().map(|t| t.len() as u64).sum();
        let schema = Schema::new(vec![
            Field::new("_token_fst_bytes", DataType::LargeBinary, false),
            Field::new("_token_next_id", DataType::UInt32, false),
            Field::new("_token_total_length", DataType::UInt64, false),
        ]);
        let cols: Vec<ArrayRef> = vec![
            Arc::new(LargeBinaryArray::from_iter_values([fst_bytes])),
            Arc::new(UInt32Array::from(vec![self.tokens.len() as u32])),
            Arc::new(UInt64Array::from(vec![total_len])),
        ];
        files.push((
            format!("part_{id}_tokens.lance"),
            write(schema, cols, version)?,
        ));

        // part_<id>_docs.lance
        let schema = Schema::new(vec![
            Field::new("_rowid", DataType::UInt64, false),
            Field::new("_num_tokens", DataType::UInt32, false),
        ])
        .with_metadata(HashMap::from([(
            "total_tokens".to_string(),
            total.to_string(),
        )]));
        let cols: Vec<ArrayRef> = vec![
            Arc::new(UInt64Array::from(self.row_ids)),
            Arc::new(UInt32Array::from(self.lengths)),
        ];
        files.push((
            format!("part_{id}_docs.lance"),
            write(schema, cols, version)?,
        ));

        // metadata.lance (staged: part_<id>_metadata.lance)
        let mut md = meta;
        md.insert("params".into(), self.params.to_json());
        md.insert("partitions".into(), format!("[{id}]"));
        md.insert("token_set_format".into(), "fst".into());
        let schema = Schema::new(vec![Field::new(
            "deleted_fragments",
            DataType::Binary,
            false,
        )])
        .with_metadata(md);
        let mut empty = Vec::new();
        roaring::RoaringBitmap::new()
            .serialize_into(&mut empty)
            .map_err(|e| invalid(format!("bitmap: {e}")))?;
        let cols: Vec<ArrayRef> = vec![Arc::new(arrow_array::BinaryArray::from_iter_values([
            empty,
        ]))];
        let name = if staged {
            format!("part_{id}_metadata.lance")
        } else {
            "metadata.lance".to_string()
        };
        files.push((name, write(schema, cols, version)?));
        files.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(BuiltInverted {
            files,
            details: details_bytes(&self.params),
            docs: n_docs,
        })
    }
}

fn write(schema: Schema, cols: Vec<ArrayRef>, version: FileVersion) -> Result<Vec<u8>> {
    let schema = Arc::new(schema);
    let batch = RecordBatch::try_new(schema.clone(), cols)?;
    let opts = WriteOptions {
        version,
        threads: 1,
        ..WriteOptions::default()
    };
    let mut w = FileWriter::try_new(Vec::new(), schema, opts)?;
    w.write_batch(&batch)?;
    Ok(w.finish()?)
}

fn put_varint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// One posting block: the block-max score, then 128 documents bit-packed (deltas) and
/// their frequencies, or a shorter tail as varints.
fn block_bytes(score: f32, docs: &[u32], freqs: &[u32]) -> Vec<u8> {
    let mut out = score.to_le_bytes().to_vec();
    if docs.len() == BLOCK {
        let bp = BitPacker4x::new();
        let first = docs[0];
        let nb = bp.num_bits_sorted(first, docs);
        out.extend_from_slice(&first.to_le_bytes());
        out.push(nb);
        let at = out.len();
        out.resize(at + 16 * nb as usize, 0);
        bp.compress_sorted(first, docs, &mut out[at..], nb);
        let nf = bp.num_bits(freqs);
        out.push(nf);
        let at = out.len();
        out.resize(at + 16 * nf as usize, 0);
        bp.compress(freqs, &mut out[at..], nf);
    } else {
        let mut prev = 0;
        for (k, &d) in docs.iter().enumerate() {
            put_varint(&mut out, if k == 0 { d } else { d - prev });
            prev = d;
        }
        for &f in freqs {
            put_varint(&mut out, f);
        }
    }
    out
}

/// A block's position deltas: full groups of 128 bit-packed, the rest as varints.
fn position_bytes(deltas: &[u32], out: &mut Vec<u8>) {
    let bp = BitPacker4x::new();
    let mut chunks = deltas.chunks_exact(BLOCK);
    for c in &mut chunks {
        let nb = bp.num_bits(c);
        out.push(nb);
        let at = out.len();
        out.resize(at + 16 * nb as usize, 0);
        bp.compress(c, &mut out[at..], nb);
    }
    for &d in chunks.remainder() {
        put_varint(out, d);
    }
}

/// The impact entries of a posting list: one per block, then one per group of 32 blocks
/// (docs/fts-index-format.md §6.4).
fn impact_entries(docs: &[u32], freqs: &[u32], lengths: &[u32]) -> Vec<Vec<u8>> {
    let entry = |docs: &[u32], freqs: &[u32]| -> Vec<u8> {
        // the lowest length of each frequency, then the frontier: from the highest
        // frequency down, only pairs of strictly lower length
        let mut best: Vec<(u32, u32)> = Vec::new();
        for (&d, &f) in docs.iter().zip(freqs) {
            let dl = lengths[d as usize];
            match best.iter_mut().find(|(bf, _)| *bf == f) {
                Some(e) => e.1 = e.1.min(dl),
                None => best.push((f, dl)),
            }
        }
        best.sort_unstable();
        let mut frontier: Vec<(u32, u32)> = Vec::new();
        for &(f, dl) in best.iter().rev() {
            if frontier.last().is_none_or(|&(_, l)| dl < l) {
                frontier.push((f, dl));
            }
        }
        frontier.reverse();
        let mut coded: Vec<(u32, u32)> = Vec::new();
        for (f, dl) in frontier {
            let c = quantize(dl);
            match coded.last_mut() {
                Some(last) if last.1 == c => last.0 = f,
                _ => coded.push((f, c)),
            }
        }
        let mut out = Vec::new();
        put_varint(&mut out, docs.last().copied().unwrap_or(0));
        put_varint(&mut out, coded.len() as u32);
        let (mut pf, mut pn) = (0u32, 0u32);
        for (f, c) in coded {
            let df = f - pf - 1;
            let dn = c.wrapping_sub(pn);
            if dn == 1 {
                put_varint(&mut out, df << 1);
            } else {
                put_varint(&mut out, (df << 1) | 1);
                out.push(dn as u8);
            }
            pf = f;
            pn = c;
        }
        out
    };
    let mut out: Vec<Vec<u8>> = docs
        .chunks(BLOCK)
        .zip(freqs.chunks(BLOCK))
        .map(|(d, f)| entry(d, f))
        .collect();
    let group = BLOCK * IMPACT_GROUP;
    out.extend(
        docs.chunks(group)
            .zip(freqs.chunks(group))
            .map(|(d, f)| entry(d, f)),
    );
    out
}

/// `InvertedIndexDetails` (protos index_old.proto; docs/fts-index-format.md §2.1).
pub fn details_bytes(p: &AnalyzerParams) -> Vec<u8> {
    let mut out = Vec::new();
    let bytes_field = |out: &mut Vec<u8>, num: u32, v: &[u8]| {
        put_varint(out, num << 3 | 2);
        put_varint(out, v.len() as u32);
        out.extend_from_slice(v);
    };
    let varint_field = |out: &mut Vec<u8>, num: u32, v: u32| {
        put_varint(out, num << 3);
        put_varint(out, v);
    };
    bytes_field(&mut out, 1, p.base_tokenizer.as_bytes());
    // the language as a JSON string, quotes included (as pylance writes it)
    let lang = serde_json::to_string(&p.language).unwrap_or_default();
    bytes_field(&mut out, 2, lang.as_bytes());
    if p.with_position {
        varint_field(&mut out, 3, 1);
    }
    if let Some(m) = p.max_token_length {
        varint_field(&mut out, 4, m as u32);
    }
    for (num, on) in [
        (5, p.lower_case),
        (6, p.stem),
        (7, p.remove_stop_words),
        (8, p.ascii_folding),
    ] {
        if on {
            varint_field(&mut out, num, 1);
        }
    }
    varint_field(&mut out, 9, p.min_ngram_length);
    varint_field(&mut out, 10, p.max_ngram_length);
    if p.prefix_only {
        varint_field(&mut out, 11, 1);
    }
    varint_field(&mut out, 12, p.block_size);
    varint_field(&mut out, 15, FORMAT as u32);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn details_of_the_defaults_with_positions() {
        // docs/fts-index-format.md §2.1 example (with_position=True)
        let mut p = AnalyzerParams::defaults();
        p.with_position = true;
        let want =
            "0a0673696d706c65120922456e676c69736822180120282801300138014001480350036080017802";
        let got: String = details_bytes(&p)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn impacts_of_the_worked_example() {
        // `dog`: docs 1, 2, 5 with frequencies 1, 1, 3 and lengths 3, 1, 3
        let lengths = [0, 3, 1, 0, 0, 3];
        let e = impact_entries(&[1, 2, 5], &[1, 1, 3], &lengths);
        assert_eq!(e.len(), 2);
        assert_eq!(e[0], vec![0x05, 0x02, 0x00, 0x03, 0x02]);
        assert_eq!(e[1], e[0]);
    }
}
