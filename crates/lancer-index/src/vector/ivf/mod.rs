//! IVF vector indexes as pylance writes them (index format version 3): a segment is
//! `_indices/<uuid>/index.idx` (the IVF model: centroids in a global buffer) plus
//! `auxiliary.idx` (every indexed vector's row id and stored form, grouped by
//! partition). Reference: format guide "Vector Indices" (lines ~2424–2860); the byte
//! level facts, checked against pylance 11–14, are in `docs/vector-index-format.md`.
//!
//! Reading here: the model, the partition layout and the storage of the quantizers
//! (FLAT, PQ with 8- or 4-bit codes, SQ); a search of the nearest partitions that skips
//! rows the caller says are gone, returning candidates with the index's own distance
//! estimate (§6.3 of the notes). Combining segments, unindexed fragments and refine
//! is the planner's job (`lancer::search`).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{UInt64Type, UInt8Type};
use arrow_array::{Array, FixedSizeListArray};
use lancer_format::reader::FileReader;
use lancer_table::pb as tpb;
use lancer_table::Dataset;
use prost::Message;
use roaring::RoaringBitmap;

use crate::distance::{dot, l2, Metric};
use crate::pb;
use crate::{IndexError, Result};
use graph::Beam;

mod batch;
mod build;
mod graph;
mod info;
mod merge;
mod params;
mod partition;

pub use build::build;
pub use merge::{merge, mergeable};
pub use params::{
    details_bytes, details_hnsw, details_json, details_model, index_version, type_name,
    BuildParams, BuiltIndex, Element, FixedModel, IndexBytes, Progress, Quantizer,
};
pub use partition::{fixed_model, train, Model, PartitionWriter, Sampler};

/// The type URL of a vector index's details in the manifest.
pub const VECTOR_DETAILS_URL: &str = "/lance.index.pb.VectorIndexDetails";

/// How an index stores its vectors.
#[derive(Debug)]
pub enum Storage {
    /// The vectors themselves (normalized for cosine), `rows × dim`.
    Flat { vectors: Vec<f32> },
    /// Product quantization: `m` sub-vectors, `2^nbits` centroids each; codebook laid
    /// out `[m][2^nbits][dim/m]`; codes per partition column-major (byte `b` of the
    /// partition's row `i` at `b·n + i`), 4-bit codes two per byte (low nibble = even
    /// sub-vector). `residual`: codes encode `x - centroid` (l2, cosine), else `x` (dot).
    Pq {
        m: usize,
        nbits: u32,
        codebook: Vec<f32>,
        /// The codebook per sub-vector, laid out for building lookup tables.
        books: Vec<crate::vector::kmeans::Transposed>,
        codes: Vec<u8>,
        residual: bool,
    },
    /// RabitQ: rotated sign bits (and ex bits) with per-row factors.
    Rq(crate::vector::rabitq::Rabit),
    /// Scalar quantization to 8 bits over one range `[start, end]`, row-major codes.
    Sq {
        start: f64,
        end: f64,
        codes: Vec<u8>,
    },
}

impl Storage {
    fn kind(&self) -> &'static str {
        match self {
            Storage::Flat { .. } => "IVF_FLAT",
            Storage::Pq { .. } => "IVF_PQ",
            Storage::Sq { .. } => "IVF_SQ",
            Storage::Rq(_) => "IVF_RQ",
        }
    }
}

/// One opened segment of an IVF index.
#[derive(Debug)]
pub struct IvfSegment {
    /// The index name (shared by its segments).
    pub name: String,
    /// The segment's uuid (16 bytes).
    pub uuid: Vec<u8>,
    /// Fragments the segment covers.
    pub fragments: RoaringBitmap,
    /// The index type as written in `lance:index` (`IVF_FLAT`, `IVF_PQ`, ...).
    pub index_type: String,
    /// Distance.
    pub metric: Metric,
    /// Vector dimension.
    pub dim: usize,
    /// Centroids, `partitions × dim`.
    pub centroids: Vec<f32>,
    /// Each partition's first row and row count in the storage.
    pub partitions: Vec<(usize, usize)>,
    /// Row id (row address) of each stored row.
    pub row_ids: Vec<u64>,
    /// Stored vectors.
    pub storage: Storage,
    /// The k-means loss of the centroids, when the IVF model records it.
    pub loss: Option<f64>,
    /// The quantizer's settings as stored (`storage_metadata` of the auxiliary file).
    pub storage_metadata: serde_json::Value,
    /// Scratch buffers of finished searches, reused by the next ones (a search thread's
    /// fresh buffers cost page faults and zeroing on every query).
    scratch: std::sync::Mutex<Vec<Scratch>>,
    /// Graph searches' per-partition masks of a named fixed filter
    /// ([`Probe::keep_token`]), newest last, at most [`KEPT_MASKS`].
    pub(crate) masks: std::sync::Mutex<Vec<KeptMask>>,
    /// The HNSW graph of each partition (`IVF_HNSW_*` indexes; `None` for an empty
    /// partition), searched instead of scanning the partition.
    pub graphs: Option<Vec<Option<crate::vector::hnsw::Graph>>>,
}

/// One search thread's buffers: per-row sums and a partition's PQ lookup table.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    pub(crate) sums: Vec<f32>,
    pub(crate) table: Vec<f32>,
    /// Graph searches: the visited set and which nodes the caller keeps.
    pub(crate) visited: crate::vector::hnsw::Visited,
    pub(crate) keep: Vec<bool>,
}

/// Scratch buffers kept per segment (one per search thread in flight).
const KEPT_SCRATCH: usize = 16;

/// A candidate from an index search: estimated distance and row id.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Candidate {
    /// The index's distance estimate.
    pub distance: f32,
    /// The row's id (its address without stable row ids).
    pub row_id: u64,
}

#[derive(PartialEq)]
struct Ranked(f32, u64);
impl Eq for Ranked {}
impl PartialOrd for Ranked {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Ranked {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&o.0).then(self.1.cmp(&o.1))
    }
}

/// Search settings of one query.
#[derive(Clone, Copy, Debug)]
pub struct Probe {
    /// Candidates wanted.
    pub k: usize,
    /// Partitions always searched.
    pub min_nprobes: usize,
    /// Partitions searched at most while fewer than `k` candidates were found (None:
    /// all).
    pub max_nprobes: Option<usize>,
    /// The results the caller asked for (before refine), which sets the reference's
    /// early pruning: the minimum is raised to every partition whose centroid lies
    /// within a factor (0.6 for 1 result, 7 up to 10, 81 beyond) of the nearest
    /// centroid's distance, capped by the maximum.
    pub wanted: usize,
    /// Partitions searched per round once the minimum is done (the reference searches
    /// them in rounds of its CPU parallelism).
    pub round: usize,
    /// Beam width of HNSW graph searches (default `k + k/2`; at least `k`).
    pub ef: Option<usize>,
    /// The speed / accuracy trade-off asked for (the reference's `approx_mode`).
    pub approx: ApproxMode,
    /// The caller's `keep` passes every row this segment holds (no prefilter, no
    /// deleted row): graph walks then skip building a per-partition mask, as the
    /// reference skips its prefilter bitset.
    pub keeps_all: bool,
    /// Names the caller's `keep` when it is a fixed set of rows (a prefilter's passing
    /// rows at one version): graph walks reuse the per-partition mask built for it by
    /// an earlier query instead of asking `keep` for every row of the partition.
    pub keep_token: Option<u64>,
}

/// A kept filter mask: (filter token, partition, whether each of its rows is kept).
pub(crate) type KeptMask = (u64, usize, std::sync::Arc<Vec<bool>>);

/// Per-partition filter masks a segment keeps (each a byte per row of a partition).
pub(crate) const KEPT_MASKS: usize = 8;

/// The reference's `approx_mode`: `Fast` walks HNSW graphs past a filter ACORN-style;
/// `Normal` and `Accurate` search as always. IVF_RQ indexes trade precision for speed
/// under it in the reference, which Lancer refuses (see [`IvfSegment::search`]); the
/// other kinds ignore it, as the reference's do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ApproxMode {
    /// Lower latency, maybe lower recall.
    Fast,
    /// The default balance.
    #[default]
    Normal,
    /// Higher recall, maybe higher latency.
    Accurate,
}

impl ApproxMode {
    /// The reference's name: `fast`, `normal` or `accurate`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Fast => "fast",
            Self::Normal => "normal",
            Self::Accurate => "accurate",
        }
    }

    /// Parses `fast`, `normal` or `accurate`.
    pub fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_lowercase().as_str() {
            "fast" => Some(Self::Fast),
            "normal" => Some(Self::Normal),
            "accurate" => Some(Self::Accurate),
            _ => None,
        }
    }
}

/// How many of the partitions at (ascending) centroid distances `d` the reference's
/// early pruning asks to search for `k` results.
pub fn early_pruning(d: &[f32], k: usize) -> usize {
    let Some(&first) = d.first() else { return 0 };
    let factor = match k {
        0 | 1 => 0.6,
        2..=10 => 7.0,
        _ => 81.0,
    };
    let limit = first * factor;
    d.partition_point(|&x| x <= limit)
}

/// Whether `meta` describes a vector index (by its details, or by its files).
pub fn is_vector_index(meta: &tpb::IndexMetadata) -> bool {
    match &meta.index_details {
        Some(d) => d.type_url.ends_with("VectorIndexDetails"),
        None => meta.files.iter().any(|f| f.path == "auxiliary.idx"),
    }
}

/// Whether the segment `meta` covers no fragment: it adds no rows to a search and may
/// have no files (pylance 14 commits such an entry, details only, when the dataset has
/// no vectors to index; so does Lancer). A bitmap that does not decode is not "empty":
/// opening the segment reports it.
pub fn covers_nothing(meta: &tpb::IndexMetadata) -> bool {
    RoaringBitmap::deserialize_from(meta.fragment_bitmap.as_slice()).is_ok_and(|b| b.is_empty())
}

use crate::segment::{corrupt, global_buffer};

fn schema_meta<'a>(r: &'a FileReader, key: &str) -> Option<&'a String> {
    // The schema map outlives the call through the reader's Arc'd schema.
    r.metadata().schema.metadata.get(key)
}

fn ivf_message(r: &FileReader, name: &str) -> Result<pb::Ivf> {
    let pos = schema_meta(r, "lance:ivf").ok_or_else(|| corrupt(name, "no lance:ivf key"))?;
    let bytes = global_buffer(r, name, pos)?;
    pb::Ivf::decode(bytes.as_slice()).map_err(|e| corrupt(name, format!("IVF message: {e}")))
}

/// A tensor's values as f32: float32 as they are, float16 / bfloat16 / float64 (what
/// pylance writes for vectors of those types) converted.
fn f32_tensor(t: &pb::Tensor, name: &str, what: &str) -> Result<(Vec<u32>, Vec<f32>)> {
    use pb::tensor::DataType as T;
    let width = match T::try_from(t.data_type) {
        Ok(T::Float32) => 4,
        Ok(T::Float16 | T::Bfloat16) => 2,
        Ok(T::Float64) => 8,
        _ => {
            return Err(corrupt(
                name,
                format!(
                    "{what} of element type {} (float16 / bfloat16 / float32 / float64 supported)",
                    t.data_type
                ),
            ))
        }
    };
    let n = t
        .shape
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(u64::from(d)))
        .and_then(|n| n.checked_mul(width));
    if n != Some(t.data.len() as u64) {
        return Err(corrupt(
            name,
            format!("{what} of shape {:?} holds {} bytes", t.shape, t.data.len()),
        ));
    }
    let v = match T::try_from(t.data_type) {
        Ok(T::Float16) => t
            .data
            .chunks_exact(2)
            .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32())
            .collect(),
        Ok(T::Bfloat16) => t
            .data
            .chunks_exact(2)
            .map(|c| half::bf16::from_le_bytes([c[0], c[1]]).to_f32())
            .collect(),
        Ok(T::Float64) => t
            .data
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]) as f32)
            .collect(),
        _ => t
            .data
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    };
    Ok((t.shape.clone(), v))
}

/// The single element of `storage_metadata` (a JSON array holding a JSON string).
fn storage_metadata(r: &FileReader, name: &str) -> Result<serde_json::Value> {
    let raw =
        schema_meta(r, "storage_metadata").ok_or_else(|| corrupt(name, "no storage_metadata"))?;
    let outer: Vec<String> =
        serde_json::from_str(raw).map_err(|e| corrupt(name, format!("storage_metadata: {e}")))?;
    let first = outer
        .first()
        .ok_or_else(|| corrupt(name, "storage_metadata is empty"))?;
    serde_json::from_str(first).map_err(|e| corrupt(name, format!("storage_metadata: {e}")))
}

fn u8_codes(col: &dyn Array, width: usize, name: &str, what: &str) -> Result<Vec<u8>> {
    let fsl: &FixedSizeListArray = col
        .as_fixed_size_list_opt()
        .ok_or_else(|| corrupt(name, format!("{what} is not a fixed-size list")))?;
    if fsl.value_length() as usize != width {
        return Err(corrupt(
            name,
            format!(
                "{what} of {} bytes per row, {width} expected",
                fsl.value_length()
            ),
        ));
    }
    let vals = fsl
        .values()
        .as_primitive_opt::<UInt8Type>()
        .ok_or_else(|| corrupt(name, format!("{what} values are not uint8")))?;
    let start = fsl.offset() * width;
    Ok(vals.values()[start..start + fsl.len() * width].to_vec())
}

/// Each partition's first row and row count in an IVF index's `auxiliary.idx` (its
/// `lance:ivf` model), checked against the file's rows.
pub fn partition_layout(aux: &FileReader, label: &str) -> Result<Vec<(usize, usize)>> {
    let layout = ivf_message(aux, label)?;
    if layout.offsets.len() != layout.lengths.len() {
        return Err(corrupt(
            label,
            format!(
                "{} partition offsets but {} lengths",
                layout.offsets.len(),
                layout.lengths.len()
            ),
        ));
    }
    let rows = aux.num_rows();
    layout
        .offsets
        .iter()
        .zip(&layout.lengths)
        .map(|(&o, &l)| match o.checked_add(u64::from(l)) {
            Some(end) if end <= rows => Ok((o as usize, l as usize)),
            _ => Err(corrupt(
                label,
                format!("partition rows {o}+{l} past {rows} rows"),
            )),
        })
        .collect()
}

impl IvfSegment {
    /// Opens the segment `meta` of `ds`.
    pub fn open(ds: &Dataset, meta: &tpb::IndexMetadata) -> Result<Self> {
        let (uuid, label, fragments) = crate::segment::SegmentHeader::identity(meta)?;
        let index = ds.open_index_file(&uuid, "index.idx")?;
        let kind: serde_json::Value = serde_json::from_str(
            schema_meta(&index, "lance:index")
                .ok_or_else(|| corrupt(&label, "no lance:index key"))?,
        )
        .map_err(|e| corrupt(&label, format!("lance:index: {e}")))?;
        let index_type = kind["type"].as_str().unwrap_or("").to_string();
        let hnsw = index_type.starts_with("IVF_HNSW_");
        let metric = kind["distance_type"]
            .as_str()
            .and_then(|m| Metric::parse(m).ok())
            .ok_or_else(|| corrupt(&label, format!("distance type {}", kind["distance_type"])))?;
        if !metric.indexable() {
            return Err(IndexError::Unsupported {
                index: label,
                what: format!("an index of {} distance", metric.name()),
            });
        }
        let model = ivf_message(&index, &label)?;
        let tensor = model
            .centroids_tensor
            .as_ref()
            .ok_or_else(|| corrupt(&label, "IVF model without centroids"))?;
        let (shape, centroids) = f32_tensor(tensor, &label, "centroids")?;
        let [parts, dim] = shape[..] else {
            return Err(corrupt(&label, format!("centroids of shape {shape:?}")));
        };
        let (parts, dim) = (parts as usize, dim as usize);
        if parts == 0 || dim == 0 {
            return Err(corrupt(&label, "no centroids"));
        }
        let aux = ds.open_index_file(&uuid, "auxiliary.idx")?;
        let partitions = partition_layout(&aux, &label)?;
        if partitions.len() != parts {
            return Err(corrupt(
                &label,
                format!("{} centroids but {} partitions", parts, partitions.len()),
            ));
        }
        let meta_json = storage_metadata(&aux, &label)?;
        let batch = aux.read_all(None)?;
        let row_ids = batch
            .column_by_name("_rowid")
            .and_then(|c| c.as_primitive_opt::<UInt64Type>())
            .ok_or_else(|| corrupt(&label, "no uint64 _rowid column"))?
            .values()
            .to_vec();
        let n = row_ids.len();
        let storage = if let Some(col) = batch.column_by_name("flat") {
            let fsl = col
                .as_fixed_size_list_opt()
                .ok_or_else(|| corrupt(&label, "flat is not a fixed-size list"))?;
            if fsl.value_length() as usize != dim {
                return Err(corrupt(&label, "flat vectors of another dimension"));
            }
            let start = fsl.offset() * dim;
            if fsl.values().len() < start + n * dim {
                return Err(corrupt(&label, "fewer flat vectors than row ids"));
            }
            // float16 / float64 vectors (pylance keeps the column's type) as f32
            let values = fsl.values().slice(start, n * dim);
            let values = match values.data_type() {
                arrow_schema::DataType::Float16 | arrow_schema::DataType::Float64 => {
                    arrow_cast::cast(&values, &arrow_schema::DataType::Float32)
                        .map_err(|e| corrupt(&label, format!("flat vectors: {e}")))?
                }
                _ => values,
            };
            let vals = values
                .as_primitive_opt::<arrow_array::types::Float32Type>()
                .ok_or_else(|| corrupt(&label, "flat vectors are not float16 / 32 / 64"))?;
            Storage::Flat {
                vectors: vals.values().to_vec(),
            }
        } else if let Some(col) = batch.column_by_name("__pq_code") {
            let m = meta_json["num_sub_vectors"].as_u64().unwrap_or(0) as usize;
            let nbits = meta_json["nbits"].as_u64().unwrap_or(8) as u32;
            if m == 0
                || dim % m != 0
                || !(nbits == 8 || nbits == 4)
                || (nbits == 4 && !m.is_multiple_of(2))
            {
                return Err(corrupt(
                    &label,
                    format!("PQ with {m} sub-vectors of {nbits} bits over {dim} dims"),
                ));
            }
            if meta_json["transposed"].as_bool() == Some(false) {
                return Err(corrupt(
                    &label,
                    "PQ codes not transposed (not written by pylance 11-14)",
                ));
            }
            let pos = meta_json["codebook_position"]
                .as_u64()
                .ok_or_else(|| corrupt(&label, "PQ without codebook_position"))?;
            let cb = global_buffer(&aux, &label, &pos.to_string())?;
            let t = pb::Tensor::decode(cb.as_slice())
                .map_err(|e| corrupt(&label, format!("PQ codebook: {e}")))?;
            let (_, codebook) = f32_tensor(&t, &label, "PQ codebook")?;
            if codebook.len() != (1usize << nbits) * dim {
                return Err(corrupt(
                    &label,
                    format!("PQ codebook of {} values", codebook.len()),
                ));
            }
            let width = m * nbits as usize / 8;
            let (ks, sub) = (1usize << nbits, dim / m);
            let books = (0..m)
                .map(|s| {
                    crate::vector::kmeans::Transposed::new(
                        &codebook[s * ks * sub..(s + 1) * ks * sub],
                        sub,
                    )
                })
                .collect();
            Storage::Pq {
                m,
                nbits,
                codebook,
                books,
                codes: u8_codes(col.as_ref(), width, &label, "__pq_code")?,
                residual: metric != Metric::Dot,
            }
        } else if let Some(col) = batch.column_by_name("__sq_code") {
            let b = &meta_json["bounds"];
            let (start, end) = (b["start"].as_f64(), b["end"].as_f64());
            let (Some(start), Some(end)) = (start, end) else {
                return Err(corrupt(&label, "SQ without bounds"));
            };
            if meta_json["num_bits"].as_u64().unwrap_or(8) != 8 {
                return Err(corrupt(&label, "SQ of other than 8 bits"));
            }
            Storage::Sq {
                start,
                end,
                codes: u8_codes(col.as_ref(), dim, &label, "__sq_code")?,
            }
        } else if let Some(col) = batch.column_by_name("_rabit_codes") {
            let code_dim = meta_json["code_dim"].as_u64().unwrap_or(0) as usize;
            if code_dim != dim {
                return Err(corrupt(
                    &label,
                    format!("RabitQ codes of {code_dim} dims for {dim}-d centroids"),
                ));
            }
            let bits = meta_json["num_bits"].as_u64().unwrap_or(1) as usize;
            let floats = |name: &str| -> Result<Vec<f32>> {
                Ok(batch
                    .column_by_name(name)
                    .and_then(|c| c.as_primitive_opt::<arrow_array::types::Float32Type>())
                    .ok_or_else(|| corrupt(&label, format!("no float32 {name} column")))?
                    .values()
                    .to_vec())
            };
            let codes = u8_codes(col.as_ref(), dim / 8, &label, "_rabit_codes")?;
            let (add, scale) = (floats("__add_factors")?, floats("__scale_factors")?);
            // Optional: only gates which rows get the multi-bit estimate.
            let error = match batch.column_by_name("__error_factors") {
                Some(_) => floats("__error_factors")?,
                None => Vec::new(),
            };
            let (ex, add_ex, scale_ex) = if bits > 1 {
                let width = dim.div_ceil(64) * 64 * (bits - 1) / 8;
                let exc = batch
                    .column_by_name("__blocked_ex_codes")
                    .ok_or_else(|| corrupt(&label, "no __blocked_ex_codes column"))?;
                (
                    u8_codes(exc.as_ref(), width, &label, "__blocked_ex_codes")?,
                    floats("__add_factors_ex")?,
                    floats("__scale_factors_ex")?,
                )
            } else {
                (Vec::new(), Vec::new(), Vec::new())
            };
            let cols = crate::vector::rabitq::RabitColumns {
                codes: &codes,
                add: &add,
                scale: &scale,
                error: &error,
                ex: &ex,
                add_ex: &add_ex,
                scale_ex: &scale_ex,
            };
            Storage::Rq(crate::vector::rabitq::Rabit::new(
                &label,
                &meta_json,
                &cols,
                &partitions,
                n,
            )?)
        } else {
            return Err(corrupt(&label, format!("unknown storage ({index_type})")));
        };
        // IVF_HNSW_SQ keeps its vectors as IVF_SQ does
        let graphs = if hnsw {
            let parts: Vec<(usize, usize)> = model
                .offsets
                .iter()
                .zip(&model.lengths)
                .map(|(&o, &l)| (o as usize, l as usize))
                .collect();
            if parts.len() != partitions.len() {
                return Err(corrupt(
                    &label,
                    format!(
                        "{} graph partitions for {} centroids",
                        parts.len(),
                        partitions.len()
                    ),
                ));
            }
            let sizes: Vec<usize> = partitions.iter().map(|p| p.1).collect();
            Some(crate::vector::hnsw::Graph::load_all(
                &index, &parts, &sizes, &label,
            )?)
        } else {
            None
        };
        let stored_as = index_type.replacen("IVF_HNSW_", "IVF_", 1);
        if hnsw && matches!(storage, Storage::Rq(_)) {
            return Err(IndexError::Unsupported {
                index: label,
                what: format!("{index_type} (an HNSW graph over RabitQ codes)"),
            });
        }
        if storage.kind() != stored_as && !index_type.is_empty() {
            return Err(corrupt(
                &label,
                format!("{index_type} index with {} storage", storage.kind()),
            ));
        }
        Ok(Self {
            name: meta.name.clone(),
            uuid,
            fragments,
            index_type,
            metric,
            dim,
            centroids,
            partitions,
            row_ids,
            storage,
            loss: model.loss,
            storage_metadata: meta_json,
            scratch: Default::default(),
            masks: Default::default(),
            graphs,
        })
    }

    /// Partitions in the order a query searches them: nearest centroid first, in the
    /// index's own metric (L2 to the normalized query for cosine, `1 - q·c` for dot).
    pub fn probe_order(&self, query: &[f32]) -> Vec<usize> {
        self.probe_distances(query)
            .into_iter()
            .map(|(_, i)| i)
            .collect()
    }

    /// [`Self::probe_order`] with each partition's centroid distance.
    pub fn probe_distances(&self, query: &[f32]) -> Vec<(f32, usize)> {
        let q = self.prepare(query);
        let mut d: Vec<(f32, usize)> = self
            .centroids
            .chunks_exact(self.dim)
            .enumerate()
            .map(|(i, c)| {
                let v = match self.metric {
                    Metric::Dot => 1.0 - dot(&q, c),
                    _ => l2(&q, c),
                };
                (v, i)
            })
            .collect();
        d.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        d
    }

    /// A scratch buffer pair from the pool (or new).
    fn take_scratch(&self) -> Scratch {
        self.scratch
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
            .unwrap_or_default()
    }

    /// Returns a scratch buffer pair to the pool (dropped beyond [`KEPT_SCRATCH`]).
    fn give_scratch(&self, s: Scratch) {
        let mut pool = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
        if pool.len() < KEPT_SCRATCH {
            pool.push(s);
        }
    }

    /// The query as the index compares it (normalized for cosine).
    pub(crate) fn prepare(&self, query: &[f32]) -> Vec<f32> {
        if self.metric == Metric::Cosine {
            let n = dot(query, query).sqrt();
            if n > 0.0 {
                return query.iter().map(|x| x / n).collect();
            }
        }
        query.to_vec()
    }

    /// The `probe.k` best candidates with the index's estimated distances, over the
    /// nearest partitions (see [`Probe`]); rows for which `keep` is false are skipped
    /// before ranking. The partitions always searched are shared among the cores when
    /// they hold enough rows (each thread keeps its own top k, merged after: the same
    /// candidates and distances as one thread finds).
    pub fn search(
        &self,
        query: &[f32],
        probe: &Probe,
        keep: &(dyn Fn(u64) -> bool + Sync),
    ) -> Result<Vec<Candidate>> {
        /// Rows in the partitions always searched from which they are shared among
        /// threads (~0.2 ms of PQ scoring; a thread costs ~30 µs to start).
        const PARALLEL_ROWS: usize = 32 * 1024;
        if query.len() != self.dim {
            return Err(IndexError::InvalidArgument {
                what: format!(
                    "Query vector size {} does not match index column size {} (index {})",
                    query.len(),
                    self.dim,
                    self.name
                ),
            });
        }
        let beam = self.beam(probe)?;
        let q = self.prepare(query);
        let dists = self.probe_distances(query);
        let order: Vec<usize> = dists.iter().map(|d| d.1).collect();
        let cd: Vec<f32> = dists.iter().map(|d| d.0).collect();
        let max = probe.max_nprobes.unwrap_or(order.len()).min(order.len());
        let min = probe
            .min_nprobes
            .max(early_pruning(&cd, probe.wanted))
            .max(1)
            .min(max);
        let round = probe.round.max(1);
        let rq_tables = match &self.storage {
            Storage::Rq(r) => Some(crate::vector::rabitq::QueryTables::new(r.rotate(&q))),
            _ => None,
        };
        let rq = rq_tables.as_ref();
        let mut best = TopK::new(probe.k);
        let mut done = 0usize;
        let first = &order[..min];
        let rows: usize = first.iter().map(|&p| self.partitions[p].1).sum();
        let threads = lancer_util::cores().min(first.len());
        if threads > 1 && rows >= PARALLEL_ROWS {
            let q = &q;
            let shares: Vec<std::thread::Result<TopK>> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..threads)
                    .map(|t| {
                        s.spawn(move || {
                            let mut top = TopK::new(probe.k);
                            let mut scratch = self.take_scratch();
                            // nearest partitions first, dealt round-robin
                            for &p in first.iter().skip(t).step_by(threads) {
                                self.search_partition(p, q, rq, beam, &mut scratch, &mut top, keep);
                            }
                            self.give_scratch(scratch);
                            top
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join()).collect()
            });
            for share in shares {
                let share = share.map_err(|_| IndexError::InvalidArgument {
                    what: format!("a search thread of index {} failed", self.name),
                })?;
                best.merge(share);
            }
            done = min;
        }
        let mut scratch = None;
        for (searched, &p) in order.iter().enumerate().skip(done) {
            // After the minimum, partitions go in rounds; a round starts only while
            // fewer than k candidates were found.
            let round_start = searched >= min && (searched - min).is_multiple_of(round);
            if searched >= max || (round_start && best.found >= probe.k) {
                break;
            }
            let scratch = scratch.get_or_insert_with(|| self.take_scratch());
            self.search_partition(p, &q, rq, beam, scratch, &mut best, keep);
        }
        if let Some(scratch) = scratch {
            self.give_scratch(scratch);
        }
        Ok(best
            .into_sorted()
            .into_iter()
            .map(|Ranked(distance, row_id)| Candidate { distance, row_id })
            .collect())
    }

    /// Offers `top` the rows of partition `p` that could enter it.
    #[allow(clippy::too_many_arguments)]
    fn search_partition(
        &self,
        p: usize,
        q: &[f32],
        rq: Option<&crate::vector::rabitq::QueryTables>,
        beam: Beam,
        scratch: &mut Scratch,
        top: &mut TopK,
        keep: &dyn Fn(u64) -> bool,
    ) {
        if let Some(graphs) = &self.graphs {
            if let Some(g) = graphs.get(p).and_then(|g| g.as_ref()) {
                self.search_graph(g, p, q, beam, scratch, top, keep);
            }
            return;
        }
        let bound = top.bound();
        self.score_partition(p, q, rq, scratch, bound, &mut |d, row| {
            top.offer(d, self.row_ids[row], keep);
            top.bound()
        });
    }

    /// Scores every row of partition `p` against the prepared query `q`, handing
    /// `push` each (estimated distance, row position) at or under `bound`; `push`
    /// returns the bound from then on (see [`TopK::bound`]: rows above it could
    /// change nothing, and are not handed over).
    fn score_partition(
        &self,
        p: usize,
        q: &[f32],
        rq_tables: Option<&crate::vector::rabitq::QueryTables>,
        scratch: &mut Scratch,
        mut bound: f32,
        push: &mut dyn FnMut(f32, usize) -> f32,
    ) {
        let (start, len) = self.partitions[p];
        let c = &self.centroids[p * self.dim..(p + 1) * self.dim];
        match &self.storage {
            Storage::Flat { vectors } => {
                for r in start..start + len {
                    let v = &vectors[r * self.dim..(r + 1) * self.dim];
                    let d = match self.metric {
                        // hamming segments are refused when opened and built
                        Metric::L2 | Metric::Hamming => l2(q, v),
                        Metric::Cosine => l2(q, v) / 2.0,
                        Metric::Dot => 1.0 - dot(q, v),
                    };
                    if d <= bound {
                        bound = push(d, r);
                    }
                }
            }
            Storage::Pq {
                m,
                nbits,
                books,
                codes,
                residual,
                ..
            } => {
                let Scratch { sums, table, .. } = scratch;
                pq_table(q, c, books, *m, *nbits, *residual, self.dim, table);
                let width = m * *nbits as usize / 8;
                let part = &codes[start * width..(start + len) * width];
                let bias = if *residual { 0.0 } else { 1.0 - *m as f32 };
                // Codes are column-major per partition (see `pq_scan`).
                crate::vector::pq::pq_sums(part, len, width, *nbits, table, sums);
                // Blocks of 16 rows none of which is at or under the bound (the bound
                // only falls) are passed over with one vectorized test.
                for (b, block) in sums.chunks(16).enumerate() {
                    if !block
                        .iter()
                        .fold(false, |any, &d| any | (d + bias <= bound))
                    {
                        continue;
                    }
                    for (i, &d) in block.iter().enumerate() {
                        let d = d + bias;
                        if d <= bound {
                            bound = push(d, start + b * 16 + i);
                        }
                    }
                }
            }
            Storage::Rq(r) => {
                if let Some(t) = rq_tables {
                    r.score_partition(self.metric, q, c, t, start, len, bound, push);
                }
            }
            Storage::Sq {
                start: lo,
                end: hi,
                codes,
            } => {
                let span = hi - lo;
                let step = (span / 255.0) as f32;
                let qc: Vec<u8> = q.iter().map(|&x| sq_code(x, *lo, *hi)).collect();
                let qs: Vec<f32> = q.iter().map(|&x| x * step).collect();
                let qlo: f32 = q.iter().map(|&x| x * *lo as f32).sum();
                for r in start..start + len {
                    let code = &codes[r * self.dim..(r + 1) * self.dim];
                    let d = match self.metric {
                        Metric::Dot => {
                            // q · (lo + code · step) = q·lo + (q · step) · code
                            let mut s = 0f32;
                            for (x, &cd) in qs.iter().zip(code) {
                                s += x * f32::from(cd);
                            }
                            1.0 - (qlo + s)
                        }
                        _ => {
                            // Codes and the quantized query are integers: exact
                            // in integer arithmetic, which vectorizes well.
                            crate::distance::sq_l2(&qc, code) as f32 * step * step
                        }
                    };
                    if d <= bound {
                        bound = push(d, r);
                    }
                }
            }
        }
    }
}

/// The best candidates of one search, or of one thread's share of it.
///
/// Candidates are appended to a buffer; when it holds `2k`, the best `k` (by distance,
/// then id) are selected and the k-th distance becomes the bound rows must meet. That
/// costs O(1) per candidate amortized (a heap of `k` costs a sift per entering row,
/// ~7 levels at k = 100, which was a tenth of a refined search on small vectors), and
/// keeps exactly the rows a heap would: the `k` smallest (distance, id) among the rows
/// that passed `keep`.
pub(crate) struct TopK {
    pub(crate) k: usize,
    /// Candidates, best `k` first after each [`Self::compact`]; under `2k` between.
    buf: Vec<Ranked>,
    /// The k-th best distance at the last compaction; infinity before the first.
    limit: f32,
    /// Rows that passed `keep`: every one until `k` were found, then those at or under
    /// the bound (the count only decides whether to probe further).
    found: usize,
}

impl TopK {
    fn new(k: usize) -> Self {
        Self {
            k,
            buf: Vec::with_capacity(k.saturating_mul(2).min(1 << 14)),
            limit: f32::INFINITY,
            found: 0,
        }
    }

    /// Offers row `id` at distance `d`.
    pub(crate) fn offer(&mut self, d: f32, id: u64, keep: &dyn Fn(u64) -> bool) {
        if d.is_nan() || self.k == 0 {
            return;
        }
        let enters = d <= self.limit;
        // Once k rows were found, a row that cannot enter needs no liveness check.
        if !enters && self.found >= self.k {
            return;
        }
        if !keep(id) {
            return;
        }
        self.found += 1;
        if enters {
            self.push(Ranked(d, id));
        }
    }

    fn push(&mut self, r: Ranked) {
        self.buf.push(r);
        if self.buf.len() >= self.k.saturating_mul(2) {
            self.compact();
        }
    }

    /// Keeps the best `k` and makes the k-th distance the bound.
    fn compact(&mut self) {
        if self.buf.len() > self.k && self.k > 0 {
            self.buf.select_nth_unstable(self.k - 1);
            self.buf.truncate(self.k);
            self.limit = self.buf[self.k - 1].0;
        }
    }

    /// The distance above which an offered row can change nothing (a row at it may
    /// still enter on a smaller id): the k-th best's at the last compaction, else
    /// infinity (every row counts or is checked). NaN distances are never at or under
    /// it, as [`Self::offer`] drops them.
    fn bound(&self) -> f32 {
        self.limit
    }

    /// Takes in another share's candidates (the best k of both, by distance then id)
    /// and its count.
    fn merge(&mut self, other: TopK) {
        self.found += other.found;
        for r in other.buf {
            if r.0 <= self.limit {
                self.push(r);
            }
        }
    }

    /// The best `k`, nearest first.
    fn into_sorted(mut self) -> Vec<Ranked> {
        self.compact();
        self.buf.sort_unstable();
        self.buf
    }
}

/// The 8-bit SQ code of one component (saturating, NaN → 0).
pub(crate) fn sq_code(v: f32, start: f64, end: f64) -> u8 {
    if end == start {
        return 0;
    }
    let x = (f64::from(v) - start) * 255.0 / (end - start);
    x as u8
}

/// The PQ lookup table into `table`, `m × 2^nbits`: the distance of each sub-vector of
/// the query (its residual to centroid `c` when `residual`) to each codebook entry —
/// squared L2, or for dot `1 - q_s · entry`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn pq_table(
    q: &[f32],
    c: &[f32],
    books: &[crate::vector::kmeans::Transposed],
    m: usize,
    nbits: u32,
    residual: bool,
    dim: usize,
    table: &mut Vec<f32>,
) {
    use crate::vector::kmeans::Geometry;
    let ks = 1usize << nbits;
    let sub = dim / m;
    let target: Vec<f32> = if residual {
        q.iter().zip(c).map(|(a, b)| a - b).collect()
    } else {
        q.to_vec()
    };
    let geometry = if residual {
        Geometry::L2
    } else {
        Geometry::Spherical
    };
    table.clear();
    table.resize(m * ks, 0.0);
    for (s, book) in books.iter().enumerate().take(m) {
        book.scores(
            &target[s * sub..(s + 1) * sub],
            geometry,
            &mut table[s * ks..(s + 1) * ks],
        );
    }
}

/// Opens every vector index segment of `ds` over field `field_id` (all names; the
/// caller groups by name; segments covering no fragment are left out). Segments of
/// kinds Lancer cannot search yet are errors.
pub fn segments_for_field(ds: &Dataset, field_id: i32) -> Result<Vec<Arc<IvfSegment>>> {
    let mut out = Vec::new();
    for meta in ds.indices()? {
        if meta.fields.as_slice() == [field_id] && is_vector_index(meta) && !covers_nothing(meta) {
            out.push(Arc::new(IvfSegment::open(ds, meta)?));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sq_codes_saturate_like_the_reference() {
        assert_eq!(sq_code(-20.0, -10.0, 10.0), 0);
        assert_eq!(sq_code(20.0, -10.0, 10.0), 255);
        assert_eq!(sq_code(0.0, -10.0, 10.0), 127);
        assert_eq!(sq_code(f32::NAN, -10.0, 10.0), 0);
        assert_eq!(sq_code(3.0, 1.0, 1.0), 0);
    }

    #[test]
    fn pq_table_is_subvector_distance() {
        // dim 4, m 2, 4-bit (16 entries): entry j of sub-vector s = [s*100 + j; 2].
        let mut cb = Vec::new();
        for s in 0..2 {
            for j in 0..16 {
                cb.extend([(s * 100 + j) as f32; 2]);
            }
        }
        let books: Vec<_> = (0..2)
            .map(|s| crate::vector::kmeans::Transposed::new(&cb[s * 32..(s + 1) * 32], 2))
            .collect();
        let mut t = vec![7.0; 3];
        pq_table(
            &[1.0, 1.0, 101.0, 101.0],
            &[0.0; 4],
            &books,
            2,
            4,
            true,
            4,
            &mut t,
        );
        assert_eq!(t.len(), 32);
        assert_eq!(t[1], 0.0);
        assert_eq!(t[16 + 1], 0.0);
        assert_eq!(t[3], 8.0);
    }

    /// The best `k` (distance, id) among the rows `keep` passes, from offers in any
    /// order, with ties, NaN and rows filtered out; also split in two shares and merged.
    #[test]
    fn top_k_keeps_the_k_smallest_kept_rows() {
        let mut rng = crate::vector::kmeans::Rng::new(11);
        for case in 0..300 {
            let n = rng.below(400);
            let k = rng.below(40);
            // Few distinct distances make many ties.
            let levels = 1 + rng.below(50);
            let offers: Vec<(f32, u64)> = (0..n)
                .map(|i| {
                    let d = if rng.below(50) == 0 {
                        f32::NAN
                    } else {
                        rng.below(levels) as f32 / 4.0
                    };
                    (d, (i as u64 * 7919) % 1000)
                })
                .collect();
            let keep = |id: u64| id % 5 != 3;
            let mut want: Vec<(f32, u64)> = offers
                .iter()
                .copied()
                .filter(|&(d, id)| !d.is_nan() && keep(id))
                .collect();
            want.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            want.truncate(k);
            let ranked = |v: Vec<Ranked>| v.into_iter().map(|r| (r.0, r.1)).collect::<Vec<_>>();
            let mut one = TopK::new(k);
            for &(d, id) in &offers {
                if d <= one.bound() || d.is_nan() {
                    one.offer(d, id, &keep);
                }
            }
            let found = one.found;
            assert_eq!(ranked(one.into_sorted()), want, "case {case}");
            assert!(found >= want.len(), "case {case}");
            let (mut a, mut b) = (TopK::new(k), TopK::new(k));
            for (i, &(d, id)) in offers.iter().enumerate() {
                let t = if i % 3 == 0 { &mut a } else { &mut b };
                t.offer(d, id, &keep);
            }
            a.merge(b);
            assert_eq!(ranked(a.into_sorted()), want, "case {case} merged");
        }
    }
}
