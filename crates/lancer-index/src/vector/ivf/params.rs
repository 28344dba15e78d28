//! What building an IVF index is asked and gives (the writing side of
//! [`crate::vector::ivf`]; byte layout in `docs/vector-index-format.md` §3–§5): the
//! quantizer and build settings, the manifest details the reference writes for a
//! segment, and the index files a build produces. [`super::partition`] trains and
//! writes; [`super::build`] builds from vectors in memory.

use std::sync::Arc;

use arrow_array::{ArrayRef, FixedSizeListArray};
use arrow_schema::{DataType, Field};
use lancer_format::container::FileVersion;
use prost::Message;

use crate::distance::dot;
use crate::distance::Metric;
use crate::pb;
use crate::vector::rabitq::RabitEncoder;
use crate::{IndexError, Result};

/// The quantizer of a new index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quantizer {
    /// Vectors stored as they are.
    Flat,
    /// Product quantization: `sub_vectors` codes of `bits` (8 or 4) bits.
    Pq {
        /// Sub-vectors (must divide the dimension; even for 4 bits).
        sub_vectors: usize,
        /// Bits per code.
        bits: u32,
    },
    /// 8-bit scalar quantization.
    Sq,
    /// RabitQ: a sign bit per dimension, plus `bits − 1` magnitude bits (1..=9).
    Rq {
        /// Bits per dimension.
        bits: u32,
    },
}

impl Quantizer {
    /// The reference's index type name.
    pub fn type_name(self) -> &'static str {
        match self {
            Quantizer::Flat => "IVF_FLAT",
            Quantizer::Pq { .. } => "IVF_PQ",
            Quantizer::Sq => "IVF_SQ",
            Quantizer::Rq { .. } => "IVF_RQ",
        }
    }

    /// The reference's default partition target size (rows per partition).
    pub fn target_partition_size(self) -> usize {
        match self {
            Quantizer::Flat => 4096,
            _ => 8192,
        }
    }
}

/// Settings of a build (reference defaults in [`BuildParams::new`]).
#[derive(Clone)]
pub struct BuildParams {
    /// The quantizer.
    pub quantizer: Quantizer,
    /// Distance.
    pub metric: Metric,
    /// Partitions (default: rows / target partition size, clamped to 1..=4096).
    pub num_partitions: Option<usize>,
    /// Training vectors per centroid (k-means sample = partitions × this).
    pub sample_rate: usize,
    /// k-means iterations at most (IVF and PQ).
    pub max_iters: usize,
    /// Seed of sampling and k-means seeding.
    pub seed: u64,
    /// Lance file version of the index files.
    pub file_version: FileVersion,
    /// Told the build's progress (stages `train_ivf`, `train_quantizer`, `shuffle`,
    /// `merge_partitions`; see [`crate::progress`]).
    pub progress: Option<Progress>,
    /// A trained model to reuse instead of training (a delta segment for new rows, as
    /// the reference's `optimize_indices` writes: same centroids and codebook).
    pub fixed: Option<FixedModel>,
    /// Encoded rows kept in memory before they are spilled to scratch files (default
    /// 1 GiB, or `$LANCER_INDEX_MEMORY_MB`).
    pub memory_budget: usize,
    /// Element type of the indexed column. Training and encoding run in f32; the
    /// centroids, the PQ codebook and IVF_FLAT's stored vectors are written in this
    /// type, as the reference writes them (it refuses centroids of another type than
    /// the column's when it searches).
    pub element: Element,
    /// An HNSW graph per partition (`IVF_HNSW_FLAT` / `_SQ` / `_PQ`), built with these
    /// settings; None for a plain IVF index.
    pub hnsw: Option<crate::vector::hnsw::HnswBuild>,
}

/// Element type of a vector column (and of an index's stored floats).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Element {
    /// float16.
    F16,
    /// float32.
    F32,
    /// float64.
    F64,
}

impl Element {
    /// The element type of `t`, a vector column's item type (float32 for any other).
    pub fn of(t: &DataType) -> Self {
        match t {
            DataType::Float16 => Element::F16,
            DataType::Float64 => Element::F64,
            _ => Element::F32,
        }
    }

    fn arrow(self) -> DataType {
        match self {
            Element::F16 => DataType::Float16,
            Element::F32 => DataType::Float32,
            Element::F64 => DataType::Float64,
        }
    }
}

/// `values` (f32) as an array of `element`.
pub(crate) fn float_values(values: Vec<f32>, element: Element) -> Result<ArrayRef> {
    let a: ArrayRef = Arc::new(arrow_array::Float32Array::from(values));
    if element == Element::F32 {
        return Ok(a);
    }
    Ok(arrow_cast::cast(&a, &element.arrow())?)
}

/// The trained parts of an existing segment.
#[derive(Clone, Debug)]
pub struct FixedModel {
    /// Centroids, `partitions × dim`.
    pub centroids: Vec<f32>,
    /// PQ codebook (`[m][2^bits][dim/m]`), for IVF_PQ.
    pub codebook: Option<Vec<f32>>,
    /// SQ bounds, for IVF_SQ.
    pub bounds: Option<(f64, f64)>,
    /// RabitQ rotation and bits, for IVF_RQ.
    pub rabit: Option<RabitEncoder>,
}

impl FixedModel {
    /// Whether it holds every part `quantizer` encodes with for `dim`-dimensional
    /// vectors (else a build trains the missing quantizer over its sample, keeping the
    /// centroids: a distributed build given only the IVF centroids).
    pub fn complete(&self, quantizer: Quantizer, dim: usize) -> bool {
        match quantizer {
            Quantizer::Flat => true,
            Quantizer::Sq => self.bounds.is_some(),
            Quantizer::Pq { bits, .. } => self
                .codebook
                .as_ref()
                .is_some_and(|b| b.len() == (1usize << bits) * dim),
            Quantizer::Rq { .. } => self.rabit.as_ref().is_some_and(|e| e.code_dim == dim),
        }
    }

    /// The model of an opened segment, with the quantizer it uses.
    pub fn of(seg: &super::IvfSegment) -> (Self, Quantizer) {
        use super::Storage;
        let (codebook, bounds, rabit, q) = match &seg.storage {
            Storage::Flat { .. } => (None, None, None, Quantizer::Flat),
            Storage::Pq {
                m, nbits, codebook, ..
            } => (
                Some(codebook.clone()),
                None,
                None,
                Quantizer::Pq {
                    sub_vectors: *m,
                    bits: *nbits,
                },
            ),
            Storage::Sq { start, end, .. } => (None, Some((*start, *end)), None, Quantizer::Sq),
            Storage::Rq(r) => {
                let enc = r.encoder();
                let q = Quantizer::Rq { bits: enc.num_bits };
                (None, None, Some(enc), q)
            }
        };
        let model = Self {
            centroids: seg.centroids.clone(),
            codebook,
            bounds,
            rabit,
        };
        (model, q)
    }
}

/// Told the progress of a build (see [`crate::progress`]).
pub type Progress = crate::progress::Progress;

impl BuildParams {
    /// The reference's defaults for `quantizer` and `metric`.
    pub fn new(quantizer: Quantizer, metric: Metric) -> Self {
        Self {
            quantizer,
            metric,
            num_partitions: None,
            sample_rate: 256,
            max_iters: 50,
            seed: 42,
            file_version: FileVersion::V2_1,
            progress: None,
            fixed: None,
            memory_budget: std::env::var("LANCER_INDEX_MEMORY_MB")
                .ok()
                .and_then(|v| v.parse::<usize>().ok())
                .map_or(1 << 30, |mb| mb << 20),
            element: Element::F32,
            hnsw: None,
        }
    }

    /// The reference's default rows per partition: 1,048,576 with HNSW graphs (one
    /// graph per million rows), else the quantizer's.
    pub fn target_partition_size(&self) -> usize {
        if self.hnsw.is_some() {
            1 << 20
        } else {
            self.quantizer.target_partition_size()
        }
    }

    /// The reference's name of the index these settings build (`IVF_PQ`,
    /// `IVF_HNSW_SQ`, ...).
    pub fn type_name(&self) -> String {
        type_name(self.quantizer, self.hnsw.is_some())
    }
}

/// The reference's name of an index of `quantizer`, with HNSW graphs or not.
pub fn type_name(quantizer: Quantizer, hnsw: bool) -> String {
    let t = quantizer.type_name();
    if hnsw {
        t.replacen("IVF_", "IVF_HNSW_", 1)
    } else {
        t.to_string()
    }
}

/// The bytes of a built file: in memory, or in a scratch file (a build that spilled).
pub enum IndexBytes {
    /// In memory.
    Memory(Vec<u8>),
    /// Written to a scratch file (removed with `dir`).
    Spilled {
        /// The file.
        file: lancer_io::scratch::ScratchFile,
        /// Its directory.
        dir: lancer_io::scratch::Scratch,
    },
}

impl IndexBytes {
    /// Length in bytes.
    pub fn len(&self) -> u64 {
        match self {
            IndexBytes::Memory(b) => b.len() as u64,
            IndexBytes::Spilled { file, .. } => file.len(),
        }
    }

    /// Whether empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The whole file in memory.
    pub fn to_vec(&self) -> Result<Vec<u8>> {
        match self {
            IndexBytes::Memory(b) => Ok(b.clone()),
            IndexBytes::Spilled { file, .. } => Ok(file.read_at(0, file.len() as usize)?),
        }
    }
}

/// The manifest's `index_version` of a segment of `quantizer` (1 for FLAT / PQ / SQ,
/// 2 for RQ, as the reference records them).
pub fn index_version(quantizer: Quantizer) -> i32 {
    if matches!(quantizer, Quantizer::Rq { .. }) {
        2
    } else {
        1
    }
}

/// The `VectorIndexDetails` bytes of an index of `quantizer` for `metric` (the
/// manifest's `index_details`; index.proto).
pub fn details_bytes(
    quantizer: Quantizer,
    metric: Metric,
    hnsw: Option<crate::vector::hnsw::HnswBuild>,
) -> Vec<u8> {
    use pb::vector_index_details::{Compression, Flat, Hnsw, Metric as PbMetric, Pq, Rq, Sq};
    pb::VectorIndexDetails {
        hnsw: hnsw.map(|h| Hnsw {
            max_connections: h.m as u32,
            construction_ef: h.ef_construction as u32,
            max_level: u32::from(h.max_level),
        }),
        metric_type: match metric {
            Metric::L2 => PbMetric::L2,
            Metric::Cosine => PbMetric::Cosine,
            Metric::Dot => PbMetric::Dot,
            Metric::Hamming => PbMetric::Hamming,
        } as i32,
        compression: Some(match quantizer {
            Quantizer::Flat => Compression::Flat(Flat {}),
            Quantizer::Sq => Compression::Sq(Sq { num_bits: 8 }),
            Quantizer::Pq { sub_vectors, bits } => Compression::Pq(Pq {
                num_bits: bits,
                num_sub_vectors: sub_vectors as u32,
            }),
            Quantizer::Rq { bits } => Compression::Rq(Rq { num_bits: bits }),
        }),
        ..Default::default()
    }
    .encode_to_vec()
}

/// The HNSW settings the `VectorIndexDetails` of a manifest entry record (None for an
/// index without HNSW graphs, or without details).
pub fn details_hnsw(
    meta: &lancer_table::pb::IndexMetadata,
) -> Option<crate::vector::hnsw::HnswBuild> {
    let d = meta.index_details.as_ref()?;
    if !d.type_url.ends_with("VectorIndexDetails") {
        return None;
    }
    let h = pb::VectorIndexDetails::decode(d.value.as_slice())
        .ok()?
        .hnsw?;
    Some(crate::vector::hnsw::HnswBuild {
        m: h.max_connections as usize,
        ef_construction: h.construction_ef as usize,
        max_level: u16::try_from(h.max_level).ok()?,
    })
}

/// The quantizer and metric the `VectorIndexDetails` of a manifest entry record, when it
/// has decodable details naming both (pylance 0.2x+ and Lancer write them; an entry
/// without files — an index of a dataset with no vectors — has nothing else).
pub fn details_model(meta: &lancer_table::pb::IndexMetadata) -> Option<(Quantizer, Metric)> {
    use pb::vector_index_details::{Compression, Metric as PbMetric};
    let d = meta.index_details.as_ref()?;
    if !d.type_url.ends_with("VectorIndexDetails") {
        return None;
    }
    let v = pb::VectorIndexDetails::decode(d.value.as_slice()).ok()?;
    let metric = match PbMetric::try_from(v.metric_type).ok()? {
        PbMetric::L2 => Metric::L2,
        PbMetric::Cosine => Metric::Cosine,
        PbMetric::Dot => Metric::Dot,
        PbMetric::Hamming => return None,
    };
    let quantizer = match v.compression? {
        Compression::Flat(_) => Quantizer::Flat,
        Compression::Sq(_) => Quantizer::Sq,
        Compression::Pq(p) => Quantizer::Pq {
            sub_vectors: p.num_sub_vectors as usize,
            bits: p.num_bits,
        },
        Compression::Rq(r) => Quantizer::Rq {
            bits: r.num_bits.max(1),
        },
    };
    Some((quantizer, metric))
}

/// The `VectorIndexDetails` of a manifest entry as pylance's `describe_indices`
/// shows them: `metric_type`, the `compression` (`type`, `num_bits`, and
/// `num_sub_vectors` for PQ; none for FLAT), `hnsw` settings, `target_partition_size`
/// and `runtime_hints`, each when recorded. `None` when the entry has no vector details.
pub fn details_json(meta: &lancer_table::pb::IndexMetadata) -> Option<serde_json::Value> {
    use pb::vector_index_details::{Compression, Metric as PbMetric};
    let d = meta.index_details.as_ref()?;
    if !d.type_url.ends_with("VectorIndexDetails") {
        return None;
    }
    let v = pb::VectorIndexDetails::decode(d.value.as_slice()).ok()?;
    let mut out = serde_json::Map::new();
    let metric = match PbMetric::try_from(v.metric_type).ok()? {
        PbMetric::L2 => "L2",
        PbMetric::Cosine => "COSINE",
        PbMetric::Dot => "DOT",
        PbMetric::Hamming => "HAMMING",
    };
    out.insert("metric_type".into(), metric.into());
    if let Some(t) = v.target_partition_size {
        out.insert("target_partition_size".into(), t.into());
    }
    if let Some(h) = &v.hnsw {
        out.insert(
            "hnsw".into(),
            serde_json::json!({"max_connections": h.max_connections, "construction_ef": h.construction_ef, "max_level": h.max_level}),
        );
    }
    match &v.compression {
        Some(Compression::Pq(p)) => {
            out.insert(
                "compression".into(),
                serde_json::json!({"type": "pq", "num_bits": p.num_bits, "num_sub_vectors": p.num_sub_vectors}),
            );
        }
        Some(Compression::Sq(q)) => {
            out.insert(
                "compression".into(),
                serde_json::json!({"type": "sq", "num_bits": q.num_bits}),
            );
        }
        Some(Compression::Rq(r)) => {
            out.insert(
                "compression".into(),
                serde_json::json!({"type": "rq", "num_bits": r.num_bits}),
            );
        }
        Some(Compression::Flat(_)) | None => {}
    }
    if !v.runtime_hints.is_empty() {
        let hints: serde_json::Map<String, serde_json::Value> = v
            .runtime_hints
            .iter()
            .map(|(k, v)| (k.clone(), v.clone().into()))
            .collect();
        out.insert("runtime_hints".into(), hints.into());
    }
    Some(out.into())
}

/// A built segment: the two files' bytes and what the manifest entry needs.
pub struct BuiltIndex {
    /// `index.idx`.
    pub index_file: Vec<u8>,
    /// `auxiliary.idx`.
    pub auxiliary_file: IndexBytes,
    /// `VectorIndexDetails` bytes for the manifest's `index_details`.
    pub details: Vec<u8>,
    /// The manifest's `index_version` (1 for FLAT / PQ / SQ, 2 for RQ).
    pub index_version: i32,
    /// Partitions built.
    pub partitions: usize,
    /// Rows indexed.
    pub rows: usize,
}

pub(crate) fn invalid(what: impl Into<String>) -> IndexError {
    IndexError::InvalidArgument { what: what.into() }
}

pub(crate) fn normalized(v: &[f32], dim: usize) -> Vec<f32> {
    let mut out = v.to_vec();
    for x in out.chunks_exact_mut(dim) {
        let n = dot(x, x).sqrt();
        if n > 0.0 {
            x.iter_mut().for_each(|y| *y /= n);
        }
    }
    out
}

/// A fixed-size-list column of `width` items per row (items nullable, as the
/// reference writes them) and its field.
pub(crate) fn list_column(
    name: &str,
    values: ArrayRef,
    width: usize,
    nullable: bool,
) -> Result<(ArrayRef, Field)> {
    let item = Arc::new(Field::new("item", values.data_type().clone(), true));
    let arr = FixedSizeListArray::try_new(item.clone(), width as i32, values, None)?;
    let field = Field::new(name, DataType::FixedSizeList(item, width as i32), nullable);
    Ok((Arc::new(arr), field))
}

/// A tensor of `values` stored as `element` (float16 / float32 / float64).
pub(crate) fn tensor_of(shape: Vec<u32>, values: &[f32], element: Element) -> pb::Tensor {
    use pb::tensor::DataType as T;
    let (data_type, data) = match element {
        Element::F32 => (
            T::Float32,
            values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        ),
        Element::F16 => (
            T::Float16,
            values
                .iter()
                .flat_map(|v| half::f16::from_f32(*v).to_le_bytes())
                .collect(),
        ),
        Element::F64 => (
            T::Float64,
            values
                .iter()
                .flat_map(|v| f64::from(*v).to_le_bytes())
                .collect(),
        ),
    };
    pb::Tensor {
        data_type: data_type as i32,
        shape,
        data,
    }
}
