//! The two passes of an IVF build in bounded memory (the reference's "transform and
//! shuffle": format guide "Vector Indices" → IVF; layout in
//! `docs/vector-index-format.md` §3–§5).
//!
//! 1. [`Sampler`] sees every vector once and keeps a uniform random sample (a
//!    reservoir of partitions × `sample_rate` rows, or 2^bits × `sample_rate` for PQ),
//!    the row count and the value range; [`train`] fits the [`Model`] on the sample:
//!    k-means centroids, the PQ codebooks (on residuals), the SQ bounds, the RabitQ
//!    rotation.
//! 2. [`PartitionWriter`] sees every vector again, assigns and encodes it, and keeps
//!    the encoded rows per partition; past `memory_budget` bytes it appends every
//!    partition's rows to a scratch file ([`lancer_io::scratch`]) and starts over.
//!    `finish` writes `auxiliary.idx` one partition at a time (rows sorted by row
//!    address), to a scratch file when anything was spilled, and `index.idx`.
//!
//! Memory is the sample, the model, at most `memory_budget` bytes of encoded rows and
//! one partition at write time — not the vectors.

use std::sync::Arc;

use arrow_array::{ArrayRef, Float32Array, RecordBatch, UInt64Array, UInt8Array};
use arrow_schema::{DataType, Field, Schema};
use lancer_format::writer::{FileWriter, WriteOptions};
use lancer_io::scratch::{Scratch, ScratchFile};
use prost::Message;

use super::params::{
    details_bytes, float_values, index_version, invalid, list_column, normalized, tensor_of,
    BuildParams, BuiltIndex, IndexBytes, Quantizer,
};
use crate::distance::Metric;
use crate::pb;
use crate::progress::Stage;
use crate::vector::kmeans::{self, Geometry, KMeansParams, Rng, Transposed};
use crate::vector::rabitq::RabitEncoder;
use crate::Result;

/// Refuses a build with a distance IVF indexes are not built with (hamming).
fn indexable(params: &BuildParams) -> Result<()> {
    if params.metric.indexable() {
        Ok(())
    } else {
        Err(invalid(format!(
            "IVF indexes of {} distance are not built by Lancer (use l2, cosine or dot; hamming is exact search)",
            params.metric.name()
        )))
    }
}

fn geometry(metric: Metric) -> Geometry {
    if metric == Metric::Dot {
        Geometry::Spherical
    } else {
        Geometry::L2
    }
}

/// Partitions of an index over `rows` vectors.
fn partitions(rows: usize, dim: usize, params: &BuildParams) -> usize {
    match &params.fixed {
        Some(f) => f.centroids.len() / dim.max(1),
        None => params
            .num_partitions
            .unwrap_or(rows / params.target_partition_size())
            .clamp(1, 4096)
            .min(rows.max(1)),
    }
}

/// Training rows wanted for `rows` vectors.
fn sample_size(rows: usize, dim: usize, params: &BuildParams) -> usize {
    let sr = params.sample_rate.max(1);
    let ivf = partitions(rows, dim, params) * sr;
    // PQ codebooks and SQ bounds are trained on `sample_rate · 2^bits` vectors (SQ:
    // always 8 bits), as the reference samples them.
    let pq = match params.quantizer {
        Quantizer::Pq { bits, .. } if params.fixed.is_none() => (1usize << bits) * sr,
        Quantizer::Sq if params.fixed.is_none() => SQ_SAMPLE * sr,
        _ => 0,
    };
    ivf.max(pq).max(1)
}

/// Vectors per unit of `sample_rate` the SQ bounds are taken from (`2^8`).
const SQ_SAMPLE: usize = 256;

/// Pass one: a uniform random sample of the vectors (cosine: normalized) and their
/// count.
pub struct Sampler {
    dim: usize,
    cap: usize,
    seen: u64,
    sample: Vec<f32>,
    rng: Rng,
    cosine: bool,
}

impl Sampler {
    /// A sampler for about `rows_hint` vectors of `dim` dimensions (the hint sizes the
    /// sample; an upper bound is right).
    pub fn new(dim: usize, rows_hint: usize, params: &BuildParams) -> Self {
        Self {
            dim,
            cap: sample_size(rows_hint, dim, params),
            seen: 0,
            sample: Vec::new(),
            rng: Rng::new(params.seed ^ SAMPLER_SEED),
            cosine: params.metric == Metric::Cosine,
        }
    }

    /// Sees `vectors` (`rows × dim`, finite).
    pub fn push(&mut self, vectors: &[f32]) {
        let dim = self.dim;
        let data = if self.cosine {
            std::borrow::Cow::Owned(normalized(vectors, dim))
        } else {
            std::borrow::Cow::Borrowed(vectors)
        };
        for v in data.chunks_exact(dim) {
            let k = self.sample.len() / dim;
            if k < self.cap {
                self.sample.extend_from_slice(v);
            } else {
                let j = self.rng.below(self.seen as usize + 1);
                if j < self.cap {
                    self.sample[j * dim..(j + 1) * dim].copy_from_slice(v);
                }
            }
            self.seen += 1;
        }
    }

    /// Vectors seen.
    pub fn rows(&self) -> usize {
        self.seen as usize
    }
}

/// The least and greatest of `values` (finite), in 16 independent lanes (the widening
/// to f64 is exact and monotone, so taking it afterwards changes nothing).
fn value_range(values: &[f32]) -> (f32, f32) {
    let mut lo = [f32::INFINITY; 16];
    let mut hi = [f32::NEG_INFINITY; 16];
    let chunks = values.chunks_exact(16);
    let rest = chunks.remainder();
    for c in chunks {
        for k in 0..16 {
            lo[k] = if c[k] < lo[k] { c[k] } else { lo[k] };
            hi[k] = if c[k] > hi[k] { c[k] } else { hi[k] };
        }
    }
    let mut l = lo.iter().copied().fold(f32::INFINITY, f32::min);
    let mut h = hi.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    for &v in rest {
        l = l.min(v);
        h = h.max(v);
    }
    (l, h)
}

/// Mixed into the seed of the sampler's generator (apart from the model's).
const SAMPLER_SEED: u64 = 0x5eed_5a11;

/// A trained IVF model: what every row is encoded with.
#[derive(Clone)]
pub struct Model {
    /// Dimension.
    pub dim: usize,
    /// Partitions.
    pub parts: usize,
    /// Centroids, `parts × dim`.
    pub centroids: Vec<f32>,
    /// k-means loss of the centroids (0 for a reused model).
    pub loss: f64,
    /// PQ codebook `[m][2^bits][dim/m]`.
    pub codebook: Option<Vec<f32>>,
    /// SQ bounds.
    pub bounds: Option<(f64, f64)>,
    /// RabitQ rotation and bits.
    pub rabit: Option<RabitEncoder>,
}

/// The model of `params.fixed` as it is (a delta segment needs no sample: one pass).
pub fn fixed_model(dim: usize, params: &BuildParams) -> Result<Model> {
    let f = params
        .fixed
        .as_ref()
        .ok_or_else(|| invalid("no fixed model to reuse"))?;
    if dim == 0 || f.centroids.is_empty() || f.centroids.len() % dim != 0 {
        return Err(invalid(format!(
            "{} centroid values for {dim}-dimensional vectors",
            f.centroids.len()
        )));
    }
    let need = |ok: bool, what: &str| {
        if ok {
            Ok(())
        } else {
            Err(invalid(format!("the reused model has no {what}")))
        }
    };
    match params.quantizer {
        Quantizer::Pq { sub_vectors, bits } => need(
            f.codebook
                .as_ref()
                .is_some_and(|b| sub_vectors > 0 && b.len() == (1usize << bits) * dim),
            "PQ codebook of this shape",
        )?,
        Quantizer::Sq => need(f.bounds.is_some(), "SQ bounds")?,
        Quantizer::Rq { .. } => need(
            f.rabit.as_ref().is_some_and(|e| e.code_dim == dim),
            "RabitQ rotation of this dimension",
        )?,
        Quantizer::Flat => {}
    }
    Ok(Model {
        dim,
        parts: f.centroids.len() / dim,
        centroids: f.centroids.clone(),
        loss: 0.0,
        codebook: f.codebook.clone(),
        bounds: f.bounds,
        rabit: f.rabit.clone(),
    })
}

/// Fits the model on the sample of `s` (or takes the fixed one of `params`, see
/// [`fixed_model`]).
pub fn train(s: Sampler, params: &BuildParams) -> Result<Model> {
    indexable(params)?;
    let dim = s.dim;
    let rows = s.rows();
    if rows == 0 {
        return Err(invalid(
            "no vectors to index (every row is null, deleted or non-finite)",
        ));
    }
    // Given centroids (a distributed build's shared model): the quantizer is trained
    // here only when the given model lacks it.
    let given = params.fixed.as_ref();
    if given.is_some_and(|f| f.complete(params.quantizer, dim)) {
        return fixed_model(dim, params);
    }
    if let Some(f) = given {
        if dim == 0 || f.centroids.is_empty() || f.centroids.len() % dim != 0 {
            return Err(invalid(format!(
                "{} centroid values for {dim}-dimensional vectors",
                f.centroids.len()
            )));
        }
    }
    let parts = given.map_or_else(
        || partitions(rows, dim, params),
        |f| f.centroids.len() / dim,
    );
    let mut rng = Rng::new(params.seed);
    // Shuffled, so that any prefix of the reservoir is a uniform sample too.
    let mut sample = s.sample;
    let n = sample.len() / dim;
    for i in (1..n).rev() {
        let j = rng.below(i + 1);
        if i != j {
            for d in 0..dim {
                sample.swap(i * dim + d, j * dim + d);
            }
        }
    }
    let geometry = geometry(params.metric);
    let take = (parts * params.sample_rate.max(1)).min(n);
    let kp = KMeansParams {
        k: parts,
        max_iters: params.max_iters,
        tolerance: 1e-4,
        seed: rng.next_u64(),
        geometry,
        merge_split: true,
    };
    let stage = std::cell::RefCell::new(Stage::start(
        params.progress.as_ref(),
        "train_ivf",
        "iterations",
        Some(kp.max_iters.max(1) as u64),
    ));
    let (centroids, loss) = match given {
        Some(f) => (f.centroids.clone(), 0.0),
        None => kmeans::train_observed(&sample[..take * dim], dim, &kp, &|i| {
            stage.borrow_mut().to(i as u64);
        }),
    };
    stage.into_inner().complete();
    let quantizer_stage = Stage::start(params.progress.as_ref(), "train_quantizer", "", None);
    let mut model = Model {
        dim,
        parts,
        centroids,
        loss,
        codebook: None,
        bounds: None,
        rabit: None,
    };
    match params.quantizer {
        Quantizer::Flat => {}
        Quantizer::Sq => {
            // The least and greatest component of `sample_rate · 256` sampled vectors
            // (the reference's SQ training sample; outliers beyond it saturate).
            let m = (SQ_SAMPLE * params.sample_rate.max(1)).min(n);
            let (lo, hi) = value_range(&sample[..m * dim]);
            model.bounds = Some((f64::from(lo), f64::from(hi)));
        }
        Quantizer::Rq { bits } => {
            model.rabit = Some(RabitEncoder::new(dim, bits, &mut rng));
        }
        Quantizer::Pq { .. } if given.is_some_and(|f| f.codebook.is_some()) => {
            model.codebook = given.and_then(|f| f.codebook.clone());
        }
        Quantizer::Pq {
            sub_vectors: m,
            bits,
        } => {
            let ks = 1usize << bits;
            let sub = dim / m;
            let take = (ks * params.sample_rate.max(1)).min(n);
            let tr = &sample[..take * dim];
            let assign = kmeans::assign(tr, dim, &model.centroids, geometry);
            let residual = params.metric != Metric::Dot;
            let mut targets = tr.to_vec();
            if residual {
                for (i, &(p, _)) in assign.iter().enumerate() {
                    let c = &model.centroids[p as usize * dim..(p as usize + 1) * dim];
                    for (t, ci) in targets[i * dim..(i + 1) * dim].iter_mut().zip(c) {
                        *t -= ci;
                    }
                }
            }
            let mut book = vec![0f32; m * ks * sub];
            for s in 0..m {
                let part: Vec<f32> = targets
                    .chunks_exact(dim)
                    .flat_map(|t| t[s * sub..(s + 1) * sub].iter().copied())
                    .collect();
                let kp = KMeansParams {
                    k: ks,
                    max_iters: params.max_iters,
                    tolerance: 1e-4,
                    seed: rng.next_u64(),
                    geometry: Geometry::L2,
                    merge_split: false,
                };
                let (c, _) = kmeans::train(&part, sub, &kp);
                book[s * ks * sub..(s + 1) * ks * sub].copy_from_slice(&c);
            }
            model.codebook = Some(book);
        }
    }
    quantizer_stage.complete();
    Ok(model)
}

/// One partition's encoded rows: in memory, and blocks of them in the scratch file.
#[derive(Default)]
struct Part {
    ids: Vec<u64>,
    recs: Vec<u8>,
    /// `(offset, rows)` of spilled blocks: `rows` row addresses then their records.
    spilled: Vec<(u64, usize)>,
}

/// Pass two: assigns and encodes rows into partitions, spilling past the budget.
pub struct PartitionWriter {
    model: Model,
    params: BuildParams,
    /// Bytes of one encoded row (without its row address).
    rec: usize,
    parts: Vec<Part>,
    buffered: usize,
    scratch: Option<(Scratch, ScratchFile)>,
    rows: usize,
    books: Vec<Transposed>,
    rotated: Vec<Vec<f32>>,
    /// The `shuffle` stage: rows assigned and encoded.
    shuffle: Option<Stage>,
}

impl PartitionWriter {
    /// A writer encoding with `model`.
    pub fn new(model: Model, params: &BuildParams) -> Result<Self> {
        indexable(params)?;
        let dim = model.dim;
        let (rec, books, rotated) = match params.quantizer {
            Quantizer::Flat => (dim * 4, Vec::new(), Vec::new()),
            Quantizer::Sq => (dim, Vec::new(), Vec::new()),
            Quantizer::Pq {
                sub_vectors: m,
                bits,
            } => {
                let ks = 1usize << bits;
                let sub = dim / m;
                let book = model.codebook.as_deref().unwrap_or_default();
                if book.len() != m * ks * sub {
                    return Err(invalid("PQ codebook missing from the model"));
                }
                let books = (0..m)
                    .map(|s| Transposed::new(&book[s * ks * sub..(s + 1) * ks * sub], sub))
                    .collect();
                (m * bits as usize / 8, books, Vec::new())
            }
            Quantizer::Rq { .. } => {
                let enc = model
                    .rabit
                    .as_ref()
                    .ok_or_else(|| invalid("RabitQ rotation missing from the model"))?;
                let rotated = (0..model.parts)
                    .map(|p| enc.rotate(&model.centroids[p * dim..(p + 1) * dim]))
                    .collect();
                let ex = if enc.num_bits > 1 {
                    enc.ex_width() + 8
                } else {
                    0
                };
                (dim / 8 + 12 + ex, Vec::new(), rotated)
            }
        };
        let parts = (0..model.parts).map(|_| Part::default()).collect();
        Ok(Self {
            model,
            params: params.clone(),
            rec,
            parts,
            buffered: 0,
            scratch: None,
            rows: 0,
            books,
            rotated,
            shuffle: None,
        })
    }

    /// The rows that will be pushed, for progress reports (`shuffle`'s total).
    pub fn expect_rows(&mut self, rows: u64) {
        match &mut self.shuffle {
            Some(s) => s.set_total(rows),
            None => {
                let progress = self.params.progress.clone();
                self.shuffle = Some(Stage::start(
                    progress.as_ref(),
                    "shuffle",
                    "rows",
                    Some(rows),
                ));
            }
        }
    }

    fn shuffle_stage(&mut self) -> &mut Stage {
        let progress = self.params.progress.clone();
        self.shuffle
            .get_or_insert_with(|| Stage::start(progress.as_ref(), "shuffle", "rows", None))
    }

    /// Assigns, encodes and keeps `vectors` (`rows × dim`, finite) with their row
    /// addresses `ids`.
    pub fn push(&mut self, vectors: &[f32], ids: &[u64]) -> Result<()> {
        let dim = self.model.dim;
        if vectors.len() != ids.len() * dim {
            return Err(invalid(format!(
                "{} values for {} vectors of {dim} dims",
                vectors.len(),
                ids.len()
            )));
        }
        let data = if self.params.metric == Metric::Cosine {
            std::borrow::Cow::Owned(normalized(vectors, dim))
        } else {
            std::borrow::Cow::Borrowed(vectors)
        };
        let assignment = kmeans::assign(
            &data,
            dim,
            &self.model.centroids,
            geometry(self.params.metric),
        );
        let recs = self.encode(&data, &assignment);
        let rec = self.rec;
        for (i, &(p, _)) in assignment.iter().enumerate() {
            let part = &mut self.parts[p as usize];
            part.ids.push(ids[i]);
            part.recs.extend_from_slice(&recs[i * rec..(i + 1) * rec]);
        }
        self.rows += ids.len();
        let done = self.rows as u64;
        self.shuffle_stage().to(done);
        self.buffered += ids.len() * (rec + 8);
        if self.buffered > self.params.memory_budget {
            self.spill()?;
        }
        Ok(())
    }

    /// Keeps rows of partition `p` already encoded with this writer's model: `recs`
    /// holds one record of [`Self::record_bytes`] per row address of `ids` (a merge of
    /// segments built with one model, [`super::merge`]).
    pub fn push_encoded(&mut self, p: usize, ids: &[u64], recs: &[u8]) -> Result<()> {
        let rec = self.rec;
        if recs.len() != ids.len() * rec {
            return Err(invalid(format!(
                "{} record bytes for {} rows of {rec}",
                recs.len(),
                ids.len()
            )));
        }
        let parts = self.parts.len();
        let part = self
            .parts
            .get_mut(p)
            .ok_or_else(|| invalid(format!("partition {p} of a {parts}-partition model")))?;
        part.ids.extend_from_slice(ids);
        part.recs.extend_from_slice(recs);
        self.rows += ids.len();
        self.buffered += ids.len() * (rec + 8);
        if self.buffered > self.params.memory_budget {
            self.spill()?;
        }
        Ok(())
    }

    /// Bytes of one encoded row.
    pub fn record_bytes(&self) -> usize {
        self.rec
    }

    /// Encoded records of `data` (rows in order), on all cores.
    fn encode(&self, data: &[f32], assignment: &[(u32, f32)]) -> Vec<u8> {
        let (dim, rec) = (self.model.dim, self.rec);
        let rows = assignment.len();
        let mut out = vec![0u8; rows * rec];
        let threads = lancer_util::cores();
        let per = rows.div_ceil(threads).max(256);
        let this = self;
        std::thread::scope(|sc| {
            for (ci, chunk) in out.chunks_mut(per * rec).enumerate() {
                sc.spawn(move || {
                    let mut scratch = Vec::new();
                    let mut resid = vec![0f32; dim];
                    for (j, slot) in chunk.chunks_exact_mut(rec).enumerate() {
                        let i = ci * per + j;
                        let p = assignment[i].0 as usize;
                        this.encode_row(
                            &data[i * dim..(i + 1) * dim],
                            p,
                            slot,
                            &mut resid,
                            &mut scratch,
                        );
                    }
                });
            }
        });
        out
    }

    fn encode_row(
        &self,
        x: &[f32],
        p: usize,
        out: &mut [u8],
        resid: &mut [f32],
        scratch: &mut Vec<f32>,
    ) {
        let dim = self.model.dim;
        let c = &self.model.centroids[p * dim..(p + 1) * dim];
        match self.params.quantizer {
            Quantizer::Flat => {
                for (o, v) in out.chunks_exact_mut(4).zip(x) {
                    o.copy_from_slice(&v.to_le_bytes());
                }
            }
            Quantizer::Sq => {
                let (lo, hi) = self.model.bounds.unwrap_or((0.0, 0.0));
                for (o, &v) in out.iter_mut().zip(x) {
                    *o = if hi == lo {
                        0
                    } else {
                        ((f64::from(v) - lo) * 255.0 / (hi - lo)) as u8
                    };
                }
            }
            Quantizer::Pq {
                sub_vectors: m,
                bits,
            } => {
                let t: &[f32] = if self.params.metric != Metric::Dot {
                    for ((r, a), b) in resid.iter_mut().zip(x).zip(c) {
                        *r = a - b;
                    }
                    resid
                } else {
                    x
                };
                let sub = dim / m;
                let code = |s: usize, scratch: &mut Vec<f32>| {
                    self.books[s]
                        .nearest(&t[s * sub..(s + 1) * sub], Geometry::L2, scratch)
                        .0 as u8
                };
                if bits == 8 {
                    for (s, o) in out.iter_mut().enumerate() {
                        *o = code(s, scratch);
                    }
                } else {
                    for (b, o) in out.iter_mut().enumerate() {
                        *o = code(2 * b, scratch) | (code(2 * b + 1, scratch) << 4);
                    }
                }
            }
            Quantizer::Rq { .. } => {
                let Some(enc) = &self.model.rabit else { return };
                for ((r, a), b) in resid.iter_mut().zip(x).zip(c) {
                    *r = a - b;
                }
                let code = enc.encode(self.params.metric, resid, &self.rotated[p]);
                let mut at = 0;
                let mut put = |b: &[u8]| {
                    out[at..at + b.len()].copy_from_slice(b);
                    at += b.len();
                };
                put(&code.codes);
                put(&code.add.to_le_bytes());
                put(&code.scale.to_le_bytes());
                put(&code.error.to_le_bytes());
                if enc.num_bits > 1 {
                    put(&code.ex);
                    put(&code.add_ex.to_le_bytes());
                    put(&code.scale_ex.to_le_bytes());
                }
            }
        }
    }

    /// Appends every partition's rows to the scratch file and frees them.
    fn spill(&mut self) -> Result<()> {
        if self.scratch.is_none() {
            let s = Scratch::new("index-build")?;
            let f = s.file("partitions")?;
            self.scratch = Some((s, f));
        }
        let Some((_, file)) = self.scratch.as_mut() else {
            return Ok(());
        };
        for part in &mut self.parts {
            if part.ids.is_empty() {
                continue;
            }
            let mut block = Vec::with_capacity(part.ids.len() * 8 + part.recs.len());
            for id in &part.ids {
                block.extend_from_slice(&id.to_le_bytes());
            }
            block.extend_from_slice(&part.recs);
            let at = file.append(&block)?;
            part.spilled.push((at, part.ids.len()));
            part.ids = Vec::new();
            part.recs = Vec::new();
        }
        self.buffered = 0;
        Ok(())
    }

    /// Whether rows were spilled to scratch files.
    pub fn spilled(&self) -> bool {
        self.scratch.is_some()
    }

    /// Partition `p`'s rows sorted by row address: addresses and records.
    fn take_part(&mut self, p: usize) -> Result<(Vec<u64>, Vec<u8>)> {
        let rec = self.rec;
        let part = std::mem::take(&mut self.parts[p]);
        let mut ids = Vec::new();
        let mut recs = Vec::new();
        if let Some((_, file)) = &self.scratch {
            for &(at, n) in &part.spilled {
                let block = file.read_at(at, n * (8 + rec))?;
                let (head, body) = block.split_at(n * 8);
                ids.extend(
                    head.chunks_exact(8).map(|b| {
                        u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
                    }),
                );
                recs.extend_from_slice(body);
            }
        }
        ids.extend_from_slice(&part.ids);
        recs.extend_from_slice(&part.recs);
        if ids.windows(2).any(|w| w[0] > w[1]) {
            let mut order: Vec<usize> = (0..ids.len()).collect();
            order.sort_by_key(|&i| ids[i]);
            let ids2 = order.iter().map(|&i| ids[i]).collect();
            let mut recs2 = Vec::with_capacity(recs.len());
            for &i in &order {
                recs2.extend_from_slice(&recs[i * rec..(i + 1) * rec]);
            }
            return Ok((ids2, recs2));
        }
        Ok((ids, recs))
    }

    /// The storage columns of one partition's sorted records, and their fields.
    fn columns(&self, n: usize, recs: Vec<u8>) -> Result<Vec<(ArrayRef, Field)>> {
        let dim = self.model.dim;
        Ok(match self.params.quantizer {
            Quantizer::Flat => {
                let values: Vec<f32> = recs
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect();
                vec![list_column(
                    "flat",
                    float_values(values, self.params.element)?,
                    dim,
                    false,
                )?]
            }
            Quantizer::Sq => vec![list_column(
                "__sq_code",
                Arc::new(UInt8Array::from(recs)),
                dim,
                true,
            )?],
            Quantizer::Pq { .. } => {
                // Column-major within the partition: byte b of every row, then b + 1.
                let width = self.rec;
                let mut t = vec![0u8; recs.len()];
                for i in 0..n {
                    for b in 0..width {
                        t[b * n + i] = recs[i * width + b];
                    }
                }
                vec![list_column(
                    "__pq_code",
                    Arc::new(UInt8Array::from(t)),
                    width,
                    true,
                )?]
            }
            Quantizer::Rq { .. } => {
                let Some(enc) = &self.model.rabit else {
                    return Err(invalid("RabitQ rotation missing from the model"));
                };
                let l = dim / 8;
                let exw = enc.ex_width();
                let rec = self.rec;
                let f32_at = |r: &[u8], at: usize| {
                    f32::from_le_bytes([r[at], r[at + 1], r[at + 2], r[at + 3]])
                };
                let rows = || recs.chunks_exact(rec);
                let f32_col = |name: &str, at: usize| {
                    let a: ArrayRef = Arc::new(Float32Array::from_iter_values(
                        rows().map(|r| f32_at(r, at)),
                    ));
                    (a, Field::new(name, DataType::Float32, true))
                };
                let codes: Vec<u8> = rows().flat_map(|r| r[..l].iter().copied()).collect();
                let mut cols = vec![
                    list_column("_rabit_codes", Arc::new(UInt8Array::from(codes)), l, true)?,
                    f32_col("__add_factors", l),
                    f32_col("__scale_factors", l + 4),
                    f32_col("__error_factors", l + 8),
                ];
                if enc.num_bits > 1 {
                    let ex: Vec<u8> = rows()
                        .flat_map(|r| r[l + 12..l + 12 + exw].iter().copied())
                        .collect();
                    cols.push(list_column(
                        "__blocked_ex_codes",
                        Arc::new(UInt8Array::from(ex)),
                        exw,
                        true,
                    )?);
                    cols.push(f32_col("__add_factors_ex", l + 12 + exw));
                    cols.push(f32_col("__scale_factors_ex", l + 16 + exw));
                }
                cols
            }
        })
    }

    /// The `storage_metadata` element of the auxiliary file.
    fn storage_meta(&self) -> String {
        let dim = self.model.dim;
        match self.params.quantizer {
            Quantizer::Flat => format!("{{\"dim\":{dim}}}"),
            Quantizer::Sq => {
                let (lo, hi) = self.model.bounds.unwrap_or((0.0, 0.0));
                serde_json::json!({"dim": dim, "num_bits": 8, "bounds": {"start": lo, "end": hi}}).to_string()
            }
            Quantizer::Pq { sub_vectors: m, bits } => format!(
                "{{\"codebook_position\":2,\"nbits\":{bits},\"num_sub_vectors\":{m},\"dimension\":{dim},\"codebook_tensor\":[],\"transposed\":true}}"
            ),
            Quantizer::Rq { .. } => self.model.rabit.as_ref().map(|e| e.metadata()).unwrap_or_default(),
        }
    }

    /// The HNSW graphs of the partitions `taken` (the first is partition `first`),
    /// built in parallel; empty without HNSW settings.
    fn build_graphs(
        &self,
        first: usize,
        taken: &[(Vec<u64>, Vec<u8>)],
    ) -> Result<Vec<Option<crate::vector::hnsw::BuiltGraph>>> {
        let Some(h) = self.params.hnsw else {
            return Ok(Vec::new());
        };
        // the cores take the window's partitions one at a time, largest first, so a
        // big partition does not leave the others idle at the end
        let mut order: Vec<usize> = (0..taken.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(taken[i].0.len()));
        let next = std::sync::atomic::AtomicUsize::new(0);
        let slots: Vec<std::sync::Mutex<Option<crate::vector::hnsw::BuiltGraph>>> =
            (0..taken.len()).map(|_| Default::default()).collect();
        let cores = lancer_util::cores().max(1);
        let threads = cores.clamp(1, taken.len().max(1));
        // fewer partitions than cores: each graph is built on several
        let per_graph = (cores / threads).max(1);
        let this = self;
        let joined: Vec<std::thread::Result<()>> = std::thread::scope(|sc| {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    sc.spawn(|| loop {
                        let at = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(&i) = order.get(at) else { break };
                        let (ids, recs) = &taken[i];
                        if ids.is_empty() {
                            continue;
                        }
                        let p = first + i;
                        let vectors = this.decode(p, recs);
                        let space = crate::vector::hnsw::Space {
                            vectors: &vectors,
                            dim: this.model.dim,
                            dot: this.params.metric == Metric::Dot,
                        };
                        // every partition's levels from the reference's seed, as
                        // pylance draws them
                        let seed = crate::vector::hnsw::LEVEL_SEED;
                        let g = crate::vector::hnsw::build_graph(space, h, seed, per_graph);
                        *slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(g);
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join()).collect()
        });
        if joined.iter().any(|j| j.is_err()) {
            return Err(invalid("an HNSW graph build failed"));
        }
        Ok(slots
            .into_iter()
            .map(|s| s.into_inner().unwrap_or_else(|e| e.into_inner()))
            .collect())
    }

    /// Partition `p`'s stored vectors as the index's searches see them, from its
    /// records (row-major): FLAT's vectors, SQ's codes mapped back onto the bounds,
    /// PQ's codebook entries (plus the centroid when the codes are residuals).
    fn decode(&self, p: usize, recs: &[u8]) -> Vec<f32> {
        let dim = self.model.dim;
        let rec = self.rec;
        let n = recs.len() / rec.max(1);
        let mut out = Vec::with_capacity(n * dim);
        match self.params.quantizer {
            Quantizer::Flat => out.extend(
                recs.chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            ),
            Quantizer::Sq => {
                let (lo, hi) = self.model.bounds.unwrap_or((0.0, 0.0));
                let step = (hi - lo) / 255.0;
                out.extend(recs.iter().map(|&c| (lo + f64::from(c) * step) as f32));
            }
            Quantizer::Pq {
                sub_vectors: m,
                bits,
            } => {
                let book = self.model.codebook.as_deref().unwrap_or(&[]);
                let (ks, sub) = (1usize << bits, dim / m.max(1));
                let c = &self.model.centroids[p * dim..(p + 1) * dim];
                let residual = self.params.metric != Metric::Dot;
                for r in recs.chunks_exact(rec) {
                    let at = out.len();
                    for s in 0..m {
                        let code = if bits == 8 {
                            usize::from(r[s])
                        } else {
                            usize::from((r[s / 2] >> (4 * (s % 2))) & 15)
                        };
                        let e = (s * ks + code) * sub;
                        match book.get(e..e + sub) {
                            Some(v) => out.extend_from_slice(v),
                            None => out.extend(std::iter::repeat_n(0.0, sub)),
                        }
                    }
                    if residual {
                        for (x, cv) in out[at..].iter_mut().zip(c) {
                            *x += cv;
                        }
                    }
                }
            }
            // refused before the build starts
            Quantizer::Rq { .. } => out.resize(n * dim, 0.0),
        }
        out
    }

    /// Writes the index files.
    pub fn finish(mut self) -> Result<BuiltIndex> {
        let (dim, parts) = (self.model.dim, self.model.parts);
        if self.rows == 0 {
            return Err(invalid(
                "no vectors to index (every row is null, deleted or non-finite)",
            ));
        }
        if let Some(s) = self.shuffle.take() {
            s.complete();
        }
        let mut merge = Stage::start(
            self.params.progress.as_ref(),
            "merge_partitions",
            "partitions",
            Some(parts as u64),
        );
        let mut lengths = Vec::with_capacity(parts);
        for part in &self.parts {
            let spilled: usize = part.spilled.iter().map(|&(_, n)| n).sum();
            lengths.push((spilled + part.ids.len()) as u32);
        }
        let mut offsets = Vec::with_capacity(parts);
        let mut at = 0u64;
        for &l in &lengths {
            offsets.push(at);
            at += u64::from(l);
        }
        let mut meta = std::collections::HashMap::new();
        meta.insert(
            "distance_type".to_string(),
            self.params.metric.name().to_string(),
        );
        meta.insert("lance:ivf".to_string(), "1".to_string());
        meta.insert(
            "storage_metadata".to_string(),
            serde_json::to_string(&vec![self.storage_meta()])?,
        );
        let version = self.params.file_version;
        let opts = || WriteOptions {
            version,
            ..Default::default()
        };
        let mut schema: Option<Arc<Schema>> = None;
        // The auxiliary file streams to scratch when the rows did not fit in memory.
        enum Out {
            Memory(FileWriter<Vec<u8>>),
            File(FileWriter<ScratchFile>),
        }
        let mut out: Option<Out> = None;
        let aux_file = match &self.scratch {
            Some((s, _)) => Some(s.file("auxiliary.idx")?),
            None => None,
        };
        let mut aux_file = aux_file;
        // HNSW graphs are built for a window of partitions at once, on every core.
        let mut graphs = match self.params.hnsw {
            Some(_) => Some(crate::vector::hnsw::GraphFile::new(
                &self.params.type_name(),
                self.params.metric,
                version,
            )?),
            None => None,
        };
        let window = if graphs.is_some() {
            4 * lancer_util::cores().max(1)
        } else {
            1
        };
        let mut first = 0;
        while first < parts {
            let end = (first + window).min(parts);
            let mut taken = Vec::with_capacity(end - first);
            for p in first..end {
                taken.push(self.take_part(p)?);
            }
            let built = self.build_graphs(first, &taken)?;
            for (i, (ids, recs)) in taken.into_iter().enumerate() {
                let p = first + i;
                if let Some(g) = graphs.as_mut() {
                    g.push(built.get(i).and_then(|b| b.as_ref()))?;
                }
                if p > 0 {
                    merge.to(p as u64);
                }
                let n = ids.len();
                if n == 0 && p + 1 < parts {
                    continue;
                }
                let cols = self.columns(n, recs)?;
                let mut fields = vec![Field::new("_rowid", DataType::UInt64, true)];
                let mut arrays: Vec<ArrayRef> = vec![Arc::new(UInt64Array::from(ids))];
                for (a, f) in cols {
                    fields.push(f);
                    arrays.push(a);
                }
                let sch = schema
                    .get_or_insert_with(|| {
                        Arc::new(Schema::new(fields).with_metadata(meta.clone()))
                    })
                    .clone();
                if out.is_none() {
                    out = Some(match aux_file.take() {
                        Some(f) => Out::File(FileWriter::try_new(f, sch.clone(), opts())?),
                        None => {
                            // Sized for every row up front: growing by doubling copied the
                            // file written so far each time and had the kernel zero twice
                            // its size in fresh pages (a fifth of a 768-d IVF_FLAT build).
                            let body = self.rows.saturating_mul(self.rec + 8);
                            let mut buf = Vec::new();
                            // (when the reservation fails the buffer grows as before)
                            let _ = buf.try_reserve(body.saturating_add(body / 64 + (1 << 20)));
                            Out::Memory(FileWriter::try_new(buf, sch.clone(), opts())?)
                        }
                    });
                }
                if n == 0 {
                    continue;
                }
                let batch = RecordBatch::try_new(sch, arrays)?;
                match out.as_mut() {
                    Some(Out::Memory(w)) => w.write_batch(&batch)?,
                    Some(Out::File(w)) => w.write_batch(&batch)?,
                    None => {}
                }
            }
            first = end;
        }
        merge.to(parts as u64);
        merge.complete();
        let layout = pb::Ivf {
            offsets: offsets.clone(),
            lengths: lengths.clone(),
            ..Default::default()
        }
        .encode_to_vec();
        let codebook = self.model.codebook.as_ref().map(|b| {
            let ks = b.len() / dim;
            tensor_of(vec![ks as u32, dim as u32], b, self.params.element).encode_to_vec()
        });
        let auxiliary_file = match out {
            Some(Out::Memory(mut w)) => {
                w.add_global_buffer(layout);
                if let Some(cb) = codebook {
                    w.add_global_buffer(cb);
                }
                IndexBytes::Memory(w.finish()?)
            }
            Some(Out::File(mut w)) => {
                w.add_global_buffer(layout);
                if let Some(cb) = codebook {
                    w.add_global_buffer(cb);
                }
                let file = w.finish()?;
                let Some((dir, _)) = self.scratch.take() else {
                    return Err(invalid("scratch directory vanished"));
                };
                IndexBytes::Spilled { file, dir }
            }
            None => return Err(invalid("no partitions to write")),
        };
        finish_index(&self.params, &self.model, auxiliary_file, self.rows, graphs)
    }
}

/// Writes `index.idx` (the centroids) and the manifest details of a segment whose
/// auxiliary file is written.
pub(crate) fn finish_index(
    params: &BuildParams,
    model: &Model,
    auxiliary_file: IndexBytes,
    rows: usize,
    graphs: Option<crate::vector::hnsw::GraphFile>,
) -> Result<BuiltIndex> {
    let (parts, dim, centroids, loss) = (model.parts, model.dim, &model.centroids, model.loss);
    let details = details_bytes(params.quantizer, params.metric, params.hnsw);
    if let Some(g) = graphs {
        let tensor = tensor_of(vec![parts as u32, dim as u32], centroids, params.element);
        return Ok(BuiltIndex {
            index_file: g.finish(tensor, loss)?,
            auxiliary_file,
            details,
            index_version: index_version(params.quantizer),
            partitions: parts,
            rows,
        });
    }
    let opts = || WriteOptions {
        version: params.file_version,
        ..Default::default()
    };
    // index.idx
    let mut meta = std::collections::HashMap::new();
    meta.insert(
        "lance:index".to_string(),
        format!(
            "{{\"type\":\"{}\",\"distance_type\":\"{}\"}}",
            params.type_name(),
            params.metric.name()
        ),
    );
    meta.insert("lance:ivf".to_string(), "1".to_string());
    meta.insert(
        "lance:flat".to_string(),
        serde_json::to_string(&vec![""; parts])?,
    );
    let schema = Arc::new(
        Schema::new(vec![Field::new("__flat_marker", DataType::UInt64, false)]).with_metadata(meta),
    );
    let mut w = FileWriter::try_new(Vec::new(), schema, opts())?;
    let model = pb::Ivf {
        offsets: vec![0; parts],
        lengths: vec![0; parts],
        centroids_tensor: Some(tensor_of(
            vec![parts as u32, dim as u32],
            centroids,
            params.element,
        )),
        loss: Some(loss),
        ..Default::default()
    };
    w.add_global_buffer(model.encode_to_vec());
    let index_file = w.finish()?;
    Ok(BuiltIndex {
        index_file,
        auxiliary_file,
        details,
        index_version: index_version(params.quantizer),
        partitions: parts,
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_range_matches_a_plain_fold() {
        let mut rng = Rng::new(3);
        for n in (0..40).chain([255, 1000]) {
            let v: Vec<f32> = (0..n).map(|_| (rng.unit() as f32 - 0.5) * 100.0).collect();
            let want = v
                .iter()
                .fold((f32::INFINITY, f32::NEG_INFINITY), |(l, h), &x| {
                    (l.min(x), h.max(x))
                });
            assert_eq!(value_range(&v), want, "n = {n}");
        }
    }
}
