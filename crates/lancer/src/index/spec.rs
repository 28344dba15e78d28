//! One description of an index to build, parsed once for every front end: the index
//! type and parameters in the reference's names (pylance 14's `create_index` /
//! `create_scalar_index`: `IVF_PQ`, `num_sub_vectors`, `num_bits`, …) and its defaults
//! (reference guide, "Vector indexes" and "Scalar indexes"), so the CLI, Python and
//! Rust callers build the same index from the same request.

use lancer_index::distance::Metric;
use lancer_index::inverted::tokenizer::AnalyzerParams;
use lancer_index::scalar::ScalarKind;
use lancer_index::vector::ivf::Quantizer;

use crate::index::fts::FtsIndexOptions;
use crate::index::scalar::ScalarIndexOptions;
use crate::index::vector::VectorIndexOptions;
use crate::{Dataset, Error, Result};

/// Bits per PQ code when `num_bits` is not given (pylance's default).
pub const DEFAULT_PQ_BITS: u32 = 8;
/// Bits per dimension of an IVF_RQ (RabitQ) code when `num_bits` is not given
/// (pylance 14's default, checked against an index it built).
pub const DEFAULT_RQ_BITS: u32 = 5;
/// The metric when none is given.
pub const DEFAULT_METRIC: &str = "l2";

/// The parameters of an index request, in the reference's names; `None` takes the
/// reference's default for the kind. Parameters a kind does not use are refused by
/// [`IndexSpec::parse`], naming them.
#[derive(Clone, Debug, Default)]
pub struct IndexParams {
    /// Index name (default `<column>_idx`).
    pub name: Option<String>,
    /// Replace an index of the same name (else that is an error).
    pub replace: bool,
    /// Vector: `l2`, `cosine` or `dot` (default l2).
    pub metric: Option<String>,
    /// Vector: IVF partitions (default: rows / the reference's target size).
    pub num_partitions: Option<usize>,
    /// IVF_PQ: sub-vectors (required).
    pub num_sub_vectors: Option<usize>,
    /// IVF_PQ: bits per code (4 or 8, default 8); IVF_RQ: bits per dimension (1–9,
    /// default 5).
    pub num_bits: Option<u32>,
    /// Vector: training vectors per centroid (default 256).
    pub sample_rate: Option<usize>,
    /// Vector: k-means iterations at most (default 50).
    pub max_iterations: Option<usize>,
    /// Vector: seed of the training draw (default 42).
    pub seed: Option<u64>,
    /// Vector: encoded bytes held in memory before spilling (default 1 GiB).
    pub memory_budget: Option<usize>,
    /// BTREE: rows per page (`zone_size`, default 4096).
    pub zone_size: Option<usize>,
    /// ZONEMAP: rows per zone (default 8192).
    pub rows_per_zone: Option<u64>,
    /// BLOOMFILTER: items per zone (default 8192).
    pub bloom_items: Option<u64>,
    /// BLOOMFILTER: false-positive rate (default 0.00057).
    pub bloom_probability: Option<f64>,
    /// INVERTED: the analyzer (default pylance 14's).
    pub analyzer: Option<AnalyzerParams>,
    /// IVF_HNSW_*: neighbours per node (default 20; at least 4).
    pub m: Option<usize>,
    /// IVF_HNSW_*: beam width while building (default 150).
    pub ef_construction: Option<usize>,
    /// IVF_HNSW_*: levels of each graph (default 7).
    pub max_level: Option<u16>,
    /// JSON: the JSONPath whose values are indexed (`x`, `$.a.b`; required).
    pub json_path: Option<String>,
    /// JSON: the index over the path's values, `btree` (default) or `bitmap`.
    pub target_index_type: Option<String>,
}

/// An index request, parsed: what to build and how.
#[derive(Clone)]
pub enum IndexSpec {
    /// IVF_FLAT / IVF_PQ / IVF_SQ / IVF_RQ, IVF_HNSW_FLAT / IVF_HNSW_SQ / IVF_HNSW_PQ.
    Vector(VectorIndexOptions),
    /// BTREE / BITMAP / LABEL_LIST / ZONEMAP / BLOOMFILTER / NGRAM.
    Scalar(ScalarIndexOptions),
    /// INVERTED (full text).
    FullText(FtsIndexOptions),
}

fn invalid(what: String) -> Error {
    Error::InvalidArgument { what }
}

/// The index types, as the reference names them, for messages.
pub const INDEX_TYPES: &str = "IVF_FLAT, IVF_PQ, IVF_SQ, IVF_RQ, IVF_HNSW_FLAT, IVF_HNSW_SQ, \
                               IVF_HNSW_PQ, BTREE, BITMAP, LABEL_LIST, ZONEMAP, BLOOMFILTER, \
                               NGRAM, INVERTED or JSON (a path of a JSON column)";

impl IndexSpec {
    /// Parses `index_type` (any case) with `p`: the reference's defaults where `p`
    /// leaves a choice open; a parameter the kind does not use, a missing required one
    /// or an unknown type or metric is an error naming it.
    pub fn parse(index_type: &str, p: IndexParams) -> Result<Self> {
        let lower = index_type.to_ascii_lowercase();
        // IVF_HNSW_SQ is IVF_SQ's storage with a graph per partition
        let hnsw_kind = lower.starts_with("ivf_hnsw_");
        let kind = if hnsw_kind {
            lower.replacen("ivf_hnsw_", "ivf_", 1)
        } else {
            lower
        };
        let hnsw_params = [
            ("m", p.m.is_some()),
            ("ef_construction", p.ef_construction.is_some()),
            ("max_level", p.max_level.is_some()),
        ];
        let unused = |names: &[(&str, bool)]| -> Result<()> {
            match names.iter().find(|(_, given)| *given) {
                Some((n, _)) => Err(invalid(format!(
                    "{n} does not apply to a {} index",
                    index_type.to_ascii_uppercase()
                ))),
                None => Ok(()),
            }
        };
        let vector_params = [
            ("metric", p.metric.is_some()),
            ("num_partitions", p.num_partitions.is_some()),
            ("num_sub_vectors", p.num_sub_vectors.is_some()),
            ("num_bits", p.num_bits.is_some()),
            ("sample_rate", p.sample_rate.is_some()),
            ("max_iterations", p.max_iterations.is_some()),
            ("m", p.m.is_some()),
            ("ef_construction", p.ef_construction.is_some()),
            ("max_level", p.max_level.is_some()),
        ];
        let scalar_params = [
            ("zone_size", p.zone_size.is_some()),
            ("rows_per_zone", p.rows_per_zone.is_some()),
            ("bloom_items", p.bloom_items.is_some()),
            ("bloom_probability", p.bloom_probability.is_some()),
        ];
        let json_params = [
            ("path", p.json_path.is_some()),
            ("target_index_type", p.target_index_type.is_some()),
        ];
        if kind == "json" {
            unused(&vector_params)?;
            let path = p
                .json_path
                .clone()
                .filter(|s| !s.is_empty())
                .ok_or_else(|| {
                    invalid(
                        "a JSON index needs the JSON path to index (parameters \"path\", e.g. \
                     \"x\" or \"$.user.name\")"
                            .into(),
                    )
                })?;
            let target = p.target_index_type.as_deref().unwrap_or("btree");
            let k = crate::index::json::check_target(target)?;
            let mut opts = ScalarIndexOptions::new(k);
            opts.name = p.name;
            opts.replace = p.replace;
            opts.params.json_path = Some(path);
            if let Some(z) = p.zone_size {
                opts.params.btree_page_rows = z;
            }
            if k != ScalarKind::BTree && p.zone_size.is_some() {
                return Err(invalid("zone_size applies to a btree target".into()));
            }
            unused(&scalar_params[1..])?;
            return Ok(IndexSpec::Scalar(opts));
        }
        unused(&json_params)?;
        if kind == "inverted" || kind == "fts" {
            unused(&vector_params)?;
            unused(&scalar_params)?;
            return Ok(IndexSpec::FullText(FtsIndexOptions {
                name: p.name,
                replace: p.replace,
                params: p.analyzer.unwrap_or_else(AnalyzerParams::defaults),
            }));
        }
        if p.analyzer.is_some() {
            return Err(invalid(format!(
                "tokenizer settings apply to INVERTED indexes, not {}",
                index_type.to_ascii_uppercase()
            )));
        }
        if let Some(k) = ScalarKind::parse(&kind) {
            unused(&vector_params)?;
            let mut opts = ScalarIndexOptions::new(k);
            opts.name = p.name;
            opts.replace = p.replace;
            if let Some(z) = p.zone_size {
                opts.params.btree_page_rows = z;
            }
            if let Some(z) = p.rows_per_zone {
                opts.params.zone_rows = z;
            }
            if let Some(z) = p.bloom_items {
                opts.params.bloom_items = z;
            }
            if let Some(q) = p.bloom_probability {
                opts.params.bloom_probability = q;
            }
            return Ok(IndexSpec::Scalar(opts));
        }
        unused(&scalar_params)?;
        let bits_unused = |q: &str| match p.num_bits {
            Some(_) => Err(invalid(format!(
                "num_bits does not apply to {q} (it has 8)"
            ))),
            None => Ok(()),
        };
        let quantizer = match kind.as_str() {
            "ivf_flat" => {
                bits_unused("IVF_FLAT")?;
                Quantizer::Flat
            }
            "ivf_sq" => {
                bits_unused("IVF_SQ")?;
                Quantizer::Sq
            }
            "ivf_pq" => Quantizer::Pq {
                sub_vectors: p.num_sub_vectors.ok_or_else(|| {
                    invalid(
                        "IVF_PQ needs num_sub_vectors (a divisor of the vectors' dimension, \
                         e.g. dimension / 8)"
                            .into(),
                    )
                })?,
                bits: p.num_bits.unwrap_or(DEFAULT_PQ_BITS),
            },
            "ivf_rq" if !hnsw_kind => Quantizer::Rq {
                bits: p.num_bits.unwrap_or(DEFAULT_RQ_BITS),
            },
            _ => {
                return Err(invalid(format!(
                    "unknown index type {index_type:?}: {INDEX_TYPES}"
                )))
            }
        };
        if kind != "ivf_pq" && p.num_sub_vectors.is_some() {
            return Err(invalid(format!(
                "num_sub_vectors applies to IVF_PQ, not {}",
                index_type.to_ascii_uppercase()
            )));
        }
        let m = p.metric.as_deref().unwrap_or(DEFAULT_METRIC);
        let metric = Metric::parse(m)
            .ok()
            .filter(|m| m.indexable())
            .ok_or_else(|| invalid(format!("unknown metric {m:?}: l2, cosine or dot")))?;
        if !hnsw_kind {
            unused(&hnsw_params)?;
        }
        let mut opts = VectorIndexOptions::new(quantizer, metric);
        if hnsw_kind {
            let d = lancer_index::vector::hnsw::HnswBuild::default();
            let h = lancer_index::vector::hnsw::HnswBuild {
                m: p.m.unwrap_or(d.m),
                ef_construction: p.ef_construction.unwrap_or(d.ef_construction),
                max_level: p.max_level.unwrap_or(d.max_level),
            };
            h.validate()
                .map_err(|e| invalid(e.to_string().replace("invalid argument: ", "")))?;
            opts.hnsw = Some(h);
        }
        opts.name = p.name;
        opts.replace = p.replace;
        opts.num_partitions = p.num_partitions;
        opts.sample_rate = p.sample_rate;
        opts.max_iters = p.max_iterations;
        opts.seed = p.seed;
        opts.memory_budget = p.memory_budget;
        Ok(IndexSpec::Vector(opts))
    }

    /// The index type as the reference names it (`IVF_PQ`, `BTREE`, `INVERTED`).
    pub fn type_name(&self) -> String {
        match self {
            IndexSpec::Vector(v) => {
                lancer_index::vector::ivf::type_name(v.quantizer, v.hnsw.is_some())
            }
            IndexSpec::Scalar(s) => s.params.kind.type_name().to_string(),
            IndexSpec::FullText(_) => "INVERTED".into(),
        }
    }

    /// The name the index gets on `column`.
    pub fn name_on(&self, column: &str) -> String {
        let name = match self {
            IndexSpec::Vector(v) => &v.name,
            IndexSpec::Scalar(s) => &s.name,
            IndexSpec::FullText(f) => &f.name,
        };
        name.clone().unwrap_or_else(|| format!("{column}_idx"))
    }
}

/// Builds the index `spec` on `column` of `ds` and commits it; the new version. With
/// `progress`, tells it how the build goes: the reference's stages
/// (`train_ivf`, `train_quantizer`, `shuffle`, `merge_partitions` for vector indexes;
/// `load_data` for scalar ones; `load_data`, `tokenize_docs`, `copy_partitions`,
/// `write_metadata` for full-text ones), each started, advanced and completed.
pub fn create_index(
    ds: &Dataset,
    column: &str,
    spec: &IndexSpec,
    progress: Option<&crate::Progress>,
) -> Result<Dataset> {
    match spec {
        IndexSpec::Vector(o) => {
            let mut o = o.clone();
            if let Some(p) = progress {
                o.progress = Some(p.clone());
            }
            crate::index::vector::create_vector_index(ds, column, &o)
        }
        IndexSpec::Scalar(o) => crate::index::scalar::create_scalar_index(ds, column, o, progress),
        IndexSpec::FullText(o) => crate::index::fts::create_fts_index(ds, column, o, progress),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_references() -> Result<()> {
        let rq = IndexSpec::parse("IVF_RQ", IndexParams::default())?;
        let IndexSpec::Vector(v) = rq else {
            return Err(invalid("not a vector index".into()));
        };
        assert!(matches!(
            v.quantizer,
            Quantizer::Rq {
                bits: DEFAULT_RQ_BITS
            }
        ));
        assert_eq!(DEFAULT_RQ_BITS, 5);
        let pq = IndexSpec::parse(
            "ivf_pq",
            IndexParams {
                num_sub_vectors: Some(4),
                ..Default::default()
            },
        )?;
        assert!(
            matches!(pq, IndexSpec::Vector(ref v) if matches!(v.quantizer, Quantizer::Pq { sub_vectors: 4, bits: 8 }))
        );
        assert_eq!(pq.type_name(), "IVF_PQ");
        assert!(IndexSpec::parse("IVF_PQ", IndexParams::default()).is_err());
        let bad = IndexSpec::parse(
            "btree",
            IndexParams {
                num_bits: Some(4),
                ..Default::default()
            },
        );
        assert!(bad.is_err_and(|e| e.to_string().contains("num_bits")));
        assert!(IndexSpec::parse("nope", IndexParams::default())
            .is_err_and(|e| e.to_string().contains("IVF_FLAT")));
        assert!(matches!(
            IndexSpec::parse("Inverted", IndexParams::default())?,
            IndexSpec::FullText(_)
        ));
        Ok(())
    }
}
