//! Building IVF indexes in the reference's format (the writing side of [`crate::ivf`];
//! byte layout in `docs/vector-index-format.md` §3–§5, checked there against what
//! pylance 11–14 open): k-means centroids over a training sample, partition
//! assignment, the quantizer (FLAT vectors, PQ codebook + column-major codes per
//! partition, SQ bounds + codes), and the two Lance files `index.idx` and
//! `auxiliary.idx` with their metadata keys and global buffers.
//!
//! Input is every vector to index with its row address, in memory (spilling partitions
//! to disk for datasets larger than memory is not built yet).

use std::sync::Arc;

use arrow_array::{
    ArrayRef, FixedSizeListArray, Float32Array, RecordBatch, UInt64Array, UInt8Array,
};
use arrow_schema::{DataType, Field, Schema};
use lancer_format::container::FileVersion;
use lancer_format::writer::{FileWriter, WriteOptions};
use prost::Message;

use crate::ivf::Metric;
use crate::kernels::dot;
use crate::kmeans::{self, Geometry, KMeansParams, Rng};
use crate::pb;
use crate::rabitq_build::RabitEncoder;
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
    /// Told the name of each phase as it starts (train, assign, quantize, write).
    pub progress: Option<Progress>,
    /// A trained model to reuse instead of training (a delta segment for new rows, as
    /// the reference's `optimize_indices` writes: same centroids and codebook).
    pub fixed: Option<FixedModel>,
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
    /// The model of an opened segment, with the quantizer it uses.
    pub fn of(seg: &crate::ivf::IvfSegment) -> Option<(Self, Quantizer)> {
        use crate::ivf::Storage;
        if let Storage::Rq(r) = &seg.storage {
            let enc = r.encoder();
            let q = Quantizer::Rq { bits: enc.num_bits };
            return Some((
                Self {
                    centroids: seg.centroids.clone(),
                    codebook: None,
                    bounds: None,
                    rabit: Some(enc),
                },
                q,
            ));
        }
        let (codebook, bounds, q) = match &seg.storage {
            Storage::Rq(_) => return None,
            Storage::Flat { .. } => (None, None, Quantizer::Flat),
            Storage::Pq {
                m, nbits, codebook, ..
            } => (
                Some(codebook.clone()),
                None,
                Quantizer::Pq {
                    sub_vectors: *m,
                    bits: *nbits,
                },
            ),
            Storage::Sq { start, end, .. } => (None, Some((*start, *end)), Quantizer::Sq),
        };
        Some((
            Self {
                centroids: seg.centroids.clone(),
                codebook,
                bounds,
                rabit: None,
            },
            q,
        ))
    }
}

/// A phase reporter: called with a short description of the phase starting.
pub type Progress = Arc<dyn Fn(&str) + Send + Sync>;

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
        }
    }
}

/// A built segment: the two files' bytes and what the manifest entry needs.
pub struct BuiltIndex {
    /// `index.idx`.
    pub index_file: Vec<u8>,
    /// `auxiliary.idx`.
    pub auxiliary_file: Vec<u8>,
    /// `VectorIndexDetails` bytes for the manifest's `index_details`.
    pub details: Vec<u8>,
    /// The manifest's `index_version` (1 for FLAT / PQ / SQ, 2 for RQ).
    pub index_version: i32,
    /// Partitions built.
    pub partitions: usize,
    /// Rows indexed.
    pub rows: usize,
}

fn invalid(what: impl Into<String>) -> IndexError {
    IndexError::InvalidArgument { what: what.into() }
}

fn normalized(v: &[f32], dim: usize) -> Vec<f32> {
    let mut out = v.to_vec();
    for x in out.chunks_exact_mut(dim) {
        let n = dot(x, x).sqrt();
        if n > 0.0 {
            x.iter_mut().for_each(|y| *y /= n);
        }
    }
    out
}

/// A random sample of up to `n` rows of `data` (all of them when there are fewer).
fn sample(data: &[f32], dim: usize, n: usize, rng: &mut Rng) -> Vec<f32> {
    let rows = data.len() / dim;
    if rows <= n {
        return data.to_vec();
    }
    // Partial Fisher–Yates over row numbers.
    let mut idx: Vec<usize> = (0..rows).collect();
    for i in 0..n {
        let j = i + rng.below(rows - i);
        idx.swap(i, j);
    }
    let mut picked = idx[..n].to_vec();
    picked.sort_unstable();
    picked
        .iter()
        .flat_map(|&r| data[r * dim..(r + 1) * dim].iter().copied())
        .collect()
}

/// A fixed-size-list column of `width` items per row (items nullable, as the
/// reference writes them) and its field.
fn list_column(
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

fn tensor_f32(shape: Vec<u32>, values: &[f32]) -> pb::Tensor {
    pb::Tensor {
        data_type: pb::tensor::DataType::Float32 as i32,
        shape,
        data: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
    }
}

/// Builds an IVF index over `vectors` (`rows × dim`, row-major, finite) whose rows have
/// the row addresses `row_ids`.
pub fn build(
    vectors: &[f32],
    row_ids: &[u64],
    dim: usize,
    params: &BuildParams,
) -> Result<BuiltIndex> {
    let rows = row_ids.len();
    if dim == 0 || vectors.len() != rows * dim {
        return Err(invalid(format!(
            "{} values for {rows} vectors of {dim} dims",
            vectors.len()
        )));
    }
    if rows == 0 {
        return Err(invalid(
            "no vectors to index (every row is null, deleted or non-finite)",
        ));
    }
    if let Quantizer::Pq { sub_vectors, bits } = params.quantizer {
        if sub_vectors == 0 || dim % sub_vectors != 0 {
            return Err(invalid(format!(
                "{sub_vectors} sub-vectors do not divide {dim} dimensions"
            )));
        }
        if !(bits == 8 || bits == 4) || (bits == 4 && sub_vectors % 2 != 0) {
            return Err(invalid(format!("PQ codes of {bits} bits over {sub_vectors} sub-vectors (8 bits, or 4 with an even count)")));
        }
    }
    if let Quantizer::Rq { bits } = params.quantizer {
        if dim % 8 != 0 || !(1..=9).contains(&bits) {
            return Err(invalid(format!(
                "IVF_RQ of {bits} bits over {dim} dimensions (1 to 9 bits; dimensions a multiple of 8)"
            )));
        }
    }
    let parts = match &params.fixed {
        Some(f) => f.centroids.len() / dim,
        None => params
            .num_partitions
            .unwrap_or(rows / params.quantizer.target_partition_size())
            .clamp(1, 4096)
            .min(rows),
    };
    let phase = |what: &str| {
        if let Some(p) = &params.progress {
            p(what);
        }
    };
    phase(&format!("preparing {rows} vectors"));
    let mut rng = Rng::new(params.seed);
    // Cosine works on unit vectors throughout; dot trains spherical centroids.
    let data: std::borrow::Cow<'_, [f32]> = if params.metric == Metric::Cosine {
        std::borrow::Cow::Owned(normalized(vectors, dim))
    } else {
        std::borrow::Cow::Borrowed(vectors)
    };
    let geometry = if params.metric == Metric::Dot {
        Geometry::Spherical
    } else {
        Geometry::L2
    };
    let (centroids, loss) = match &params.fixed {
        Some(f) => (f.centroids.clone(), 0.0),
        None => {
            let train = sample(&data, dim, parts * params.sample_rate.max(1), &mut rng);
            let kp = KMeansParams {
                k: parts,
                max_iters: params.max_iters,
                tolerance: 1e-4,
                seed: rng.next_u64(),
                geometry,
            };
            phase(&format!(
                "training {parts} IVF centroids on {} vectors",
                train.len() / dim
            ));
            kmeans::train(&train, dim, &kp)
        }
    };
    phase(&format!("assigning {rows} vectors to partitions"));
    let assignment = kmeans::assign(&data, dim, &centroids, geometry);
    // Rows grouped by partition, then by row address.
    let mut order: Vec<usize> = (0..rows).collect();
    order.sort_by_key(|&i| (assignment[i].0, row_ids[i]));
    let mut lengths = vec![0u32; parts];
    for &(p, _) in &assignment {
        lengths[p as usize] += 1;
    }
    let mut offsets = Vec::with_capacity(parts);
    let mut at = 0u64;
    for &l in &lengths {
        offsets.push(at);
        at += u64::from(l);
    }
    let sorted_ids: Vec<u64> = order.iter().map(|&i| row_ids[i]).collect();
    let row_vec = |i: usize| &data[i * dim..(i + 1) * dim];

    let (storage_cols, storage_meta, codebook): (
        Vec<(ArrayRef, Field)>,
        String,
        Option<pb::Tensor>,
    ) = match params.quantizer {
        Quantizer::Flat => {
            let values: Vec<f32> = order
                .iter()
                .flat_map(|&i| row_vec(i).iter().copied())
                .collect();
            let col = list_column("flat", Arc::new(Float32Array::from(values)), dim, false)?;
            (vec![col], format!("{{\"dim\":{dim}}}"), None)
        }
        Quantizer::Sq => {
            let (lo, hi) = match params.fixed.as_ref().and_then(|f| f.bounds) {
                Some(b) => b,
                None => {
                    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
                    for &v in data.iter() {
                        lo = lo.min(f64::from(v));
                        hi = hi.max(f64::from(v));
                    }
                    (lo, hi)
                }
            };
            let code = |v: f32| -> u8 {
                if hi == lo {
                    0
                } else {
                    ((f64::from(v) - lo) * 255.0 / (hi - lo)) as u8
                }
            };
            let codes: Vec<u8> = order
                .iter()
                .flat_map(|&i| row_vec(i).iter().map(|&v| code(v)))
                .collect();
            let col = list_column("__sq_code", Arc::new(UInt8Array::from(codes)), dim, true)?;
            let meta =
                serde_json::json!({"dim": dim, "num_bits": 8, "bounds": {"start": lo, "end": hi}})
                    .to_string();
            (vec![col], meta, None)
        }
        Quantizer::Pq {
            sub_vectors: m,
            bits,
        } => {
            let residual = params.metric != Metric::Dot;
            let target = |i: usize, p: usize| -> Vec<f32> {
                let x = row_vec(i);
                if residual {
                    let c = &centroids[p * dim..(p + 1) * dim];
                    x.iter().zip(c).map(|(a, b)| a - b).collect()
                } else {
                    x.to_vec()
                }
            };
            let ks = 1usize << bits;
            let sub = dim / m;
            // Training residuals: a sample of the rows with their partitions.
            let fixed_book = params.fixed.as_ref().and_then(|f| f.codebook.clone());
            let want = if fixed_book.is_some() {
                0
            } else {
                (ks * params.sample_rate.max(1)).min(rows)
            };
            let mut pick: Vec<usize> = (0..rows).collect();
            for i in 0..want {
                let j = i + rng.below(rows - i);
                pick.swap(i, j);
            }
            let tr: Vec<Vec<f32>> = pick[..want]
                .iter()
                .map(|&i| target(i, assignment[i].0 as usize))
                .collect();
            let mut codebook = fixed_book
                .clone()
                .unwrap_or_else(|| vec![0f32; m * ks * sub]);
            if codebook.len() != m * ks * sub {
                return Err(invalid("the reused PQ codebook has another shape"));
            }
            if fixed_book.is_none() {
                phase(&format!("training {m} PQ codebooks of {ks} entries"));
            }
            for s in (0..m).filter(|_| fixed_book.is_none()) {
                let part: Vec<f32> = tr
                    .iter()
                    .flat_map(|t| t[s * sub..(s + 1) * sub].iter().copied())
                    .collect();
                let kp = KMeansParams {
                    k: ks,
                    max_iters: params.max_iters,
                    tolerance: 1e-4,
                    seed: rng.next_u64(),
                    geometry: Geometry::L2,
                };
                let (c, _) = kmeans::train(&part, sub, &kp);
                codebook[s * ks * sub..(s + 1) * ks * sub].copy_from_slice(&c);
            }
            phase(&format!("encoding {rows} vectors"));
            // Codes, row-major in partition order, then column-major per partition.
            let width = m * bits as usize / 8;
            let mut row_major = vec![0u8; rows * width];
            let threads = std::thread::available_parallelism().map_or(1, |p| p.get());
            let per = rows.div_ceil(threads).max(256);
            let books: Vec<kmeans::Transposed> = (0..m)
                .map(|s| kmeans::Transposed::new(&codebook[s * ks * sub..(s + 1) * ks * sub], sub))
                .collect();
            let (books, order, assignment) = (&books, &order, &assignment);
            std::thread::scope(|sc| {
                for (ci, chunk) in row_major.chunks_mut(per * width).enumerate() {
                    let target = &target;
                    sc.spawn(move || {
                        let mut codes_s = vec![0u8; m];
                        let mut scratch = Vec::new();
                        for (j, out) in chunk.chunks_exact_mut(width).enumerate() {
                            let i = order[ci * per + j];
                            let t = target(i, assignment[i].0 as usize);
                            for (s, code) in codes_s.iter_mut().enumerate() {
                                let x = &t[s * sub..(s + 1) * sub];
                                *code = books[s].nearest(x, Geometry::L2, &mut scratch).0 as u8;
                            }
                            if bits == 8 {
                                out.copy_from_slice(&codes_s);
                            } else {
                                for (b, o) in out.iter_mut().enumerate() {
                                    *o = codes_s[2 * b] | (codes_s[2 * b + 1] << 4);
                                }
                            }
                        }
                    });
                }
            });
            let mut transposed = vec![0u8; rows * width];
            for (p, &len) in lengths.iter().enumerate() {
                let (start, n) = (offsets[p] as usize, len as usize);
                for i in 0..n {
                    for b in 0..width {
                        transposed[start * width + b * n + i] = row_major[(start + i) * width + b];
                    }
                }
            }
            let col = list_column(
                "__pq_code",
                Arc::new(UInt8Array::from(transposed)),
                width,
                true,
            )?;
            let meta = format!(
                    "{{\"codebook_position\":2,\"nbits\":{bits},\"num_sub_vectors\":{m},\"dimension\":{dim},\"codebook_tensor\":[],\"transposed\":true}}"
                );
            (
                vec![col],
                meta,
                Some(tensor_f32(vec![ks as u32, dim as u32], &codebook)),
            )
        }
        Quantizer::Rq { bits } => {
            let enc = match params.fixed.as_ref().and_then(|f| f.rabit.clone()) {
                Some(e) if e.code_dim == dim => e,
                Some(_) => return Err(invalid("the reused RabitQ model has another dimension")),
                None => RabitEncoder::new(dim, bits, &mut rng),
            };
            phase(&format!(
                "encoding {rows} vectors ({} bits per dimension)",
                enc.num_bits
            ));
            let rotated: Vec<Vec<f32>> = (0..parts)
                .map(|p| enc.rotate(&centroids[p * dim..(p + 1) * dim]))
                .collect();
            let encoded = rabit_encode(
                &enc,
                params.metric,
                &order,
                &assignment,
                &data,
                &centroids,
                &rotated,
                dim,
            );
            (rabit_columns(&enc, encoded)?, enc.metadata(), None)
        }
    };

    phase("writing the index files");
    // auxiliary.idx
    let mut meta = std::collections::HashMap::new();
    meta.insert(
        "distance_type".to_string(),
        params.metric.name().to_string(),
    );
    meta.insert("lance:ivf".to_string(), "1".to_string());
    meta.insert(
        "storage_metadata".to_string(),
        serde_json::to_string(&vec![storage_meta])?,
    );
    let mut fields = vec![Field::new("_rowid", DataType::UInt64, true)];
    let mut columns: Vec<ArrayRef> = vec![Arc::new(UInt64Array::from(sorted_ids))];
    for (col, field) in storage_cols {
        fields.push(field);
        columns.push(col);
    }
    let schema = Arc::new(Schema::new(fields).with_metadata(meta));
    let batch = RecordBatch::try_new(schema.clone(), columns)?;
    let opts = || WriteOptions {
        version: params.file_version,
        ..Default::default()
    };
    let mut w = FileWriter::try_new(Vec::new(), schema, opts())?;
    w.write_batch(&batch)?;
    let layout = pb::Ivf {
        offsets: offsets.clone(),
        lengths: lengths.clone(),
        ..Default::default()
    };
    w.add_global_buffer(layout.encode_to_vec());
    if let Some(cb) = codebook {
        w.add_global_buffer(cb.encode_to_vec());
    }
    let auxiliary_file = w.finish()?;

    // index.idx
    let mut meta = std::collections::HashMap::new();
    meta.insert(
        "lance:index".to_string(),
        format!(
            "{{\"type\":\"{}\",\"distance_type\":\"{}\"}}",
            params.quantizer.type_name(),
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
        centroids_tensor: Some(tensor_f32(vec![parts as u32, dim as u32], &centroids)),
        loss: Some(loss),
        ..Default::default()
    };
    w.add_global_buffer(model.encode_to_vec());
    let index_file = w.finish()?;

    use pb::vector_index_details::{Compression, Flat, Metric as PbMetric, Pq, Rq, Sq};
    let details = pb::VectorIndexDetails {
        metric_type: match params.metric {
            Metric::L2 => PbMetric::L2,
            Metric::Cosine => PbMetric::Cosine,
            Metric::Dot => PbMetric::Dot,
        } as i32,
        compression: Some(match params.quantizer {
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
    .encode_to_vec();
    Ok(BuiltIndex {
        index_file,
        auxiliary_file,
        details,
        index_version: if matches!(params.quantizer, Quantizer::Rq { .. }) {
            2
        } else {
            1
        },
        partitions: parts,
        rows,
    })
}

/// Every row's RabitQ encoding, in partition order (`order`), on all cores.
#[allow(clippy::too_many_arguments)]
fn rabit_encode(
    enc: &RabitEncoder,
    metric: Metric,
    order: &[usize],
    assignment: &[(u32, f32)],
    data: &[f32],
    centroids: &[f32],
    rotated: &[Vec<f32>],
    dim: usize,
) -> Vec<crate::rabitq_build::RowCode> {
    let rows = order.len();
    let mut out = vec![crate::rabitq_build::RowCode::default(); rows];
    let threads = std::thread::available_parallelism().map_or(1, |p| p.get());
    let per = rows.div_ceil(threads).max(256);
    std::thread::scope(|sc| {
        for (ci, chunk) in out.chunks_mut(per).enumerate() {
            sc.spawn(move || {
                let mut r = vec![0f32; dim];
                for (j, slot) in chunk.iter_mut().enumerate() {
                    let i = order[ci * per + j];
                    let p = assignment[i].0 as usize;
                    let c = &centroids[p * dim..(p + 1) * dim];
                    for ((ri, xi), ci) in r.iter_mut().zip(&data[i * dim..(i + 1) * dim]).zip(c) {
                        *ri = xi - ci;
                    }
                    *slot = enc.encode(metric, &r, &rotated[p]);
                }
            });
        }
    });
    out
}

/// The auxiliary file's RabitQ columns (as pylance names and types them).
fn rabit_columns(
    enc: &RabitEncoder,
    rows: Vec<crate::rabitq_build::RowCode>,
) -> Result<Vec<(ArrayRef, Field)>> {
    let l = enc.code_dim / 8;
    let f32_col = |name: &str, get: &dyn Fn(&crate::rabitq_build::RowCode) -> f32| {
        let a: ArrayRef = Arc::new(Float32Array::from_iter_values(rows.iter().map(get)));
        (a, Field::new(name, DataType::Float32, true))
    };
    let codes: Vec<u8> = rows.iter().flat_map(|r| r.codes.iter().copied()).collect();
    let mut cols = vec![
        list_column("_rabit_codes", Arc::new(UInt8Array::from(codes)), l, true)?,
        f32_col("__add_factors", &|r| r.add),
        f32_col("__scale_factors", &|r| r.scale),
        f32_col("__error_factors", &|r| r.error),
    ];
    if enc.num_bits > 1 {
        let ex: Vec<u8> = rows.iter().flat_map(|r| r.ex.iter().copied()).collect();
        cols.push(list_column(
            "__blocked_ex_codes",
            Arc::new(UInt8Array::from(ex)),
            enc.ex_width(),
            true,
        )?);
        cols.push(f32_col("__add_factors_ex", &|r| r.add_ex));
        cols.push(f32_col("__scale_factors_ex", &|r| r.scale_ex));
    }
    Ok(cols)
}
