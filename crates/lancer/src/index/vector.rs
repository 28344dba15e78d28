//! Creating, listing and dropping a dataset's vector indexes (format guide "Vector
//! Indices" and "Index section"; layout in `docs/vector-index-format.md`). A build
//! reads the column's live vectors with their row addresses, trains and writes the
//! segment (`lancer_index::vector::ivf`), writes its files under `_indices/<uuid>/` and
//! commits them (a `CreateIndex` transaction through the usual OCC path, so a
//! concurrent append or delete and the build both land).

use lancer_index::distance::Metric;
use lancer_index::vector::ivf::{self, BuildParams, Quantizer};
use lancer_table::pb;

use crate::catalog::uncovered_fragments;
use crate::scan::{DatasetExt, ROW_ADDRESS, ROW_ID};
use crate::{Dataset, Error, Result};

/// What to build.
#[derive(Clone)]
pub struct VectorIndexOptions {
    /// Index name (default `<column>_idx`, as the reference names it).
    pub name: Option<String>,
    /// Replace an index of the same name (else that is an error).
    pub replace: bool,
    /// The quantizer.
    pub quantizer: Quantizer,
    /// Distance.
    pub metric: Metric,
    /// Partitions (default: the reference's rows / target size).
    pub num_partitions: Option<usize>,
    /// Training vectors per centroid (default 256).
    pub sample_rate: Option<usize>,
    /// k-means iterations at most (default 50).
    pub max_iters: Option<usize>,
    /// Seed of the training sample and k-means (default 42: builds are repeatable).
    pub seed: Option<u64>,
    /// Told the build's progress (see `lancer_index::progress`).
    pub progress: Option<ivf::Progress>,
    /// Encoded rows held in memory before spilling to scratch files (default 1 GiB or
    /// `$LANCER_INDEX_MEMORY_MB`).
    pub memory_budget: Option<usize>,
    /// An HNSW graph per partition (IVF_HNSW_FLAT / _SQ / _PQ) with these settings.
    pub hnsw: Option<lancer_index::vector::hnsw::HnswBuild>,
}

impl VectorIndexOptions {
    /// The reference's name of the index these options build (`IVF_PQ`, `IVF_HNSW_SQ`, ...).
    pub fn type_name(&self) -> String {
        lancer_index::vector::ivf::type_name(self.quantizer, self.hnsw.is_some())
    }

    /// An index of `quantizer` for `metric`, every other setting the reference's.
    pub fn new(quantizer: Quantizer, metric: Metric) -> Self {
        Self {
            name: None,
            replace: false,
            quantizer,
            metric,
            num_partitions: None,
            sample_rate: None,
            max_iters: None,
            seed: None,
            progress: None,
            memory_budget: None,
            hnsw: None,
        }
    }
}

/// One index of a dataset, for listing.
#[derive(Clone, Debug)]
pub struct IndexInfo {
    /// Name (shared by its segments).
    pub name: String,
    /// Indexed columns.
    pub columns: Vec<String>,
    /// Segment uuids (hyphenated).
    pub segments: Vec<String>,
    /// Type (`IVF_PQ`, ...) from the first segment's files, when readable.
    pub index_type: Option<String>,
    /// Metric name, when readable.
    pub metric: Option<String>,
    /// Fragments covered by any segment.
    pub fragments: Vec<u32>,
    /// Fragments of the version no segment covers (searched exactly).
    pub unindexed_fragments: Vec<u64>,
}

/// Index files use the dataset's file version when Lancer writes it (2.1 / 2.2), else
/// 2.1 (pylance reads index files of every version).
pub(crate) fn index_file_version(ds: &Dataset) -> lancer_format::container::FileVersion {
    use lancer_format::container::FileVersion;
    match ds.storage_version() {
        v @ (FileVersion::V2_1 | FileVersion::V2_2) => v,
        _ => FileVersion::V2_1,
    }
}

/// The segments of the index `name` (manifest order), its field id and its column.
pub(crate) fn named_index(
    ds: &Dataset,
    name: &str,
) -> Result<(Vec<pb::IndexMetadata>, i32, String)> {
    let metas = index_segments(ds, name)?;
    let (field_id, column) = segment_column(ds, &metas[0])?;
    Ok((metas, field_id, column))
}

/// The field id and top-level column a segment indexes.
pub(crate) fn segment_column(ds: &Dataset, meta: &pb::IndexMetadata) -> Result<(i32, String)> {
    let name = &meta.name;
    let field_id = *meta.fields.first().ok_or_else(|| Error::InvalidArgument {
        what: format!("index {name:?} names no column"),
    })?;
    let column = crate::catalog::field_path(&ds.manifest().schema, field_id).ok_or_else(|| {
        Error::InvalidArgument {
            what: format!("index {name:?} is on field {field_id}, which the schema does not have"),
        }
    })?;
    Ok((field_id, column))
}

/// Builds a vector index on `column` of `ds` and commits it; returns the new version.
pub fn create_vector_index(
    ds: &Dataset,
    column: &str,
    opts: &VectorIndexOptions,
) -> Result<Dataset> {
    let field_id = crate::catalog::indexable_field(ds, column, "to index")?;
    if crate::search::multivector::column_dim(ds, column).is_some() && opts.metric != Metric::Cosine
    {
        return Err(Error::InvalidArgument {
            what: format!(
                "{column:?} holds multivectors, which vector indexes support with the cosine distance only (as pylance): create it with metric cosine"
            ),
        });
    }
    let name = opts.name.clone().unwrap_or_else(|| format!("{column}_idx"));
    let existing = replaced_segments(ds, &name, opts.replace)?;
    let params = build_params(ds, opts);
    let built = match build_streaming(ds, column, None, &params) {
        Err(Error::InvalidArgument { what }) if what.starts_with(NO_VECTORS) => {
            // Nothing to train on (no rows, all deleted, all null): the index is
            // recorded with its settings and no files, covering no fragment, as
            // pylance 14 does; searches scan exactly until `optimize_index` builds it.
            let model = (opts.quantizer, opts.metric, opts.hnsw);
            return commit_empty(ds, field_id, name, model, existing);
        }
        other => other?,
    };
    let all: Vec<u64> = ds.fragments().iter().map(|f| f.id).collect();
    commit_segment(ds, field_id, name, built, &all, existing)
}

/// The build settings of `opts` for `ds` (the index file version its data files imply).
pub(crate) fn build_params(ds: &Dataset, opts: &VectorIndexOptions) -> BuildParams {
    let mut params = BuildParams::new(opts.quantizer, opts.metric);
    params.hnsw = opts.hnsw;
    params.num_partitions = opts.num_partitions;
    params.progress = opts.progress.clone();
    if let Some(s) = opts.sample_rate {
        params.sample_rate = s;
    }
    if let Some(m) = opts.max_iters {
        params.max_iters = m;
    }
    if let Some(s) = opts.seed {
        params.seed = s;
    }
    if let Some(b) = opts.memory_budget {
        params.memory_budget = b;
    }
    params.file_version = index_file_version(ds);
    params
}

/// The segments of the index `name` a new build replaces: none when there is no such
/// index, all of them with `replace`, else an error saying what to do.
pub(crate) fn replaced_segments(
    ds: &Dataset,
    name: &str,
    replace: bool,
) -> Result<Vec<pb::IndexMetadata>> {
    let existing: Vec<pb::IndexMetadata> = ds
        .indices()?
        .iter()
        .filter(|m| m.name == name)
        .cloned()
        .collect();
    if !existing.is_empty() && !replace {
        return Err(Error::InvalidArgument {
            what: format!("an index named {name:?} exists; pass replace to rebuild it, or choose another name"),
        });
    }
    Ok(existing)
}

/// How a build that found no vectors to train on starts its error.
pub(crate) const NO_VECTORS: &str = "no vectors to index";

/// Commits an index entry of `quantizer` / `metric` with no files covering no fragment
/// (replacing `removed`).
fn commit_empty(
    ds: &Dataset,
    field_id: i32,
    name: String,
    (quantizer, metric, hnsw): (
        Quantizer,
        Metric,
        Option<lancer_index::vector::hnsw::HnswBuild>,
    ),
    removed: Vec<pb::IndexMetadata>,
) -> Result<Dataset> {
    let meta = pb::IndexMetadata {
        uuid: Some(pb::Uuid {
            uuid: lancer_table::commit::random_uuid_bytes(),
        }),
        fields: vec![field_id],
        name,
        dataset_version: ds.version(),
        fragment_bitmap: bitmap_of(&[])?,
        index_details: Some(prost_types::Any {
            type_url: ivf::VECTOR_DETAILS_URL.into(),
            value: ivf::details_bytes(quantizer, metric, hnsw),
        }),
        index_version: Some(ivf::index_version(quantizer)),
        created_at: Some(now_ms()),
        base_id: None,
        files: Vec::new(),
    };
    Ok(ds.commit_indices(vec![meta], removed)?)
}

/// A fragment bitmap (the manifest's serialized roaring bitmap) of `fragments`.
fn bitmap_of(fragments: &[u64]) -> Result<Vec<u8>> {
    let mut covered = roaring::RoaringBitmap::new();
    for &f in fragments {
        covered.insert(u32::try_from(f).map_err(|_| Error::InvalidArgument {
            what: format!("fragment id {f} too large for an index bitmap"),
        })?);
    }
    let mut bitmap = Vec::new();
    covered
        .serialize_into(&mut bitmap)
        .map_err(|e| Error::InvalidArgument {
            what: format!("fragment bitmap: {e}"),
        })?;
    Ok(bitmap)
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Calls `f` with each scan batch's live, non-null, finite vectors of `column` (of
/// `fragments`, default all) and their row addresses; returns the dimension (0 when no
/// batch had rows). With `cosine`, zero vectors are left out too (they have no
/// direction: every cosine distance to them is NaN), as the reference leaves them out
/// of cosine indexes — for a multivector row, its other vectors stay.
fn for_each_vectors(
    ds: &Dataset,
    column: &str,
    fragments: Option<&[u64]>,
    cosine: bool,
    mut f: impl FnMut(&[f32], &[u64], usize) -> Result<()>,
) -> Result<usize> {
    use arrow_array::cast::AsArray;
    let mut dim = 0usize;
    // The index records stable row ids when the dataset has them, else addresses.
    let stable = ds.uses_stable_row_ids();
    let id_column = if stable { ROW_ID } else { ROW_ADDRESS };
    let mut scan = ds.scan().columns(&[column]);
    scan = if stable {
        scan.with_row_id(true)
    } else {
        scan.with_row_address(true)
    };
    if let Some(fr) = fragments {
        scan = scan.fragments(fr);
    }
    let (mut vectors, mut ids) = (Vec::<f32>::new(), Vec::<u64>::new());
    for b in scan.stream()? {
        let b = b?;
        // a multivector row is indexed once per vector, each with the row's id
        let (col, rows) = if crate::search::multivector::is_multivector(b.column(0).data_type()) {
            let (offsets, values) = crate::search::multivector::parts(b.column(0))?;
            let valid = b.column(0).logical_nulls();
            let mut rows = Vec::with_capacity(values.len());
            for r in 0..b.num_rows() {
                if valid.as_ref().is_none_or(|n| n.is_valid(r)) {
                    rows.extend((offsets[r]..offsets[r + 1]).map(|_| r));
                } else {
                    rows.extend((offsets[r]..offsets[r + 1]).map(|_| usize::MAX));
                }
            }
            (values, Some(rows))
        } else {
            (b.column(0).clone(), None)
        };
        let (vecs, d) = crate::search::exact::vectors(&col)?;
        let addrs = b
            .column_by_name(id_column)
            .and_then(|c| c.as_primitive_opt::<arrow_array::types::UInt64Type>())
            .ok_or_else(|| Error::InvalidArgument {
                what: "row ids missing from the index scan".into(),
            })?;
        dim = d;
        let valid = col.logical_nulls();
        let values = vecs.as_f32().ok_or_else(|| Error::InvalidArgument {
            what: format!(
                "column {column:?} holds uint8 vectors; IVF indexes of float vectors only"
            ),
        })?;
        vectors.clear();
        ids.clear();
        for i in 0..col.len() {
            let row = rows.as_ref().map_or(i, |r| r[i]);
            if row == usize::MAX || valid.as_ref().is_some_and(|n| n.is_null(i)) {
                continue;
            }
            let v = &values[i * d..(i + 1) * d];
            if v.iter().all(|x| x.is_finite()) && !(cosine && v.iter().all(|&x| x == 0.0)) {
                vectors.extend_from_slice(v);
                ids.push(addrs.value(row));
            }
        }
        if !ids.is_empty() {
            f(&vectors, &ids, d)?;
        }
    }
    Ok(dim)
}

/// One segment from `segments` (opened segments of `column` built with the model
/// `params` carries, FLAT / SQ / PQ storage), their stored records taken as they are
/// (`lancer_index::vector::ivf`): the segment one build over their rows writes, without
/// reading or encoding a vector again.
pub(crate) fn merge_stored(
    ds: &Dataset,
    column: &str,
    segments: &[lancer_index::vector::ivf::IvfSegment],
    params: &BuildParams,
) -> Result<ivf::BuiltIndex> {
    let (params, fixed_dim) = column_params(ds, column, params);
    let dim = fixed_dim.ok_or_else(|| Error::InvalidArgument {
        what: "merging vector segments needs their model's centroids".into(),
    })?;
    let model = lancer_index::vector::ivf::fixed_model(dim, &params)?;
    let writer = lancer_index::vector::ivf::PartitionWriter::new(model, &params)?;
    lancer_index::vector::ivf::merge(segments, writer).map_err(crate::Error::from)
}

/// Builds a segment over `column` (of `fragments`, default all) in two scans and
/// bounded memory: a sample to train on, then every row assigned and encoded (spilled
/// past `params.memory_budget`). A complete `params.fixed` model is used as it is (one
/// scan); given centroids without the quantizer's parts, the quantizer is trained.
pub(crate) fn build_streaming(
    ds: &Dataset,
    column: &str,
    fragments: Option<&[u64]>,
    params: &BuildParams,
) -> Result<ivf::BuiltIndex> {
    use lancer_index::vector::ivf::PartitionWriter;
    let (params, fixed_dim) = column_params(ds, column, params);
    let params = &params;
    let hint = rows_hint(ds, fragments);
    let model = match fixed_dim {
        Some(dim) => lancer_index::vector::ivf::fixed_model(dim, params)?,
        None => train_model(ds, column, fragments, params)?,
    };
    let cosine = params.metric == lancer_index::distance::Metric::Cosine;
    let mut writer = PartitionWriter::new(model, params)?;
    writer.expect_rows(hint as u64);
    for_each_vectors(ds, column, fragments, cosine, |v, ids, _| {
        writer.push(v, ids).map_err(crate::Error::from)
    })?;
    writer.finish().map_err(crate::Error::from)
}

/// `params` with the column's element type (stored floats — centroids, codebook,
/// IVF_FLAT vectors — are written in it), and the column's dimension when
/// `params.fixed` is a complete model for it (a build that needs no training).
pub(crate) fn column_params(
    ds: &Dataset,
    column: &str,
    params: &BuildParams,
) -> (BuildParams, Option<usize>) {
    let mut params = params.clone();
    // a multivector column's vectors are its lists' items
    let vector_type = ds
        .schema()
        .field_with_name(column)
        .map(|f| match f.data_type() {
            arrow_schema::DataType::List(i) | arrow_schema::DataType::LargeList(i) => {
                i.data_type().clone()
            }
            t => t.clone(),
        });
    let mut fixed_dim = None;
    if let Ok(arrow_schema::DataType::FixedSizeList(item, d)) = &vector_type {
        params.element = ivf::Element::of(item.data_type());
        let d = (*d).max(0) as usize;
        if params
            .fixed
            .as_ref()
            .is_some_and(|f| f.complete(params.quantizer, d))
        {
            fixed_dim = Some(d);
        }
    }
    (params, fixed_dim)
}

/// Rows of `fragments` (all live rows when None): sizes the sample and the writer.
fn rows_hint(ds: &Dataset, fragments: Option<&[u64]>) -> usize {
    match fragments {
        None => ds.count_rows() as usize,
        Some(fr) => ds
            .fragments()
            .iter()
            .filter(|f| fr.contains(&f.id))
            .map(|f| f.physical_rows as usize)
            .sum(),
    }
}

/// Trains a model (centroids and the quantizer's parts; given centroids of
/// `params.fixed` kept) on a sample of `column`'s vectors of `fragments`.
pub(crate) fn train_model(
    ds: &Dataset,
    column: &str,
    fragments: Option<&[u64]>,
    params: &BuildParams,
) -> Result<lancer_index::vector::ivf::Model> {
    use lancer_index::vector::ivf::{train, Sampler};
    let cosine = params.metric == lancer_index::distance::Metric::Cosine;
    let hint = rows_hint(ds, fragments);
    let mut sampler: Option<Sampler> = None;
    for_each_vectors(ds, column, fragments, cosine, |v, _, d| {
        sampler
            .get_or_insert_with(|| Sampler::new(d, hint, params))
            .push(v);
        Ok(())
    })?;
    let Some(sampler) = sampler else {
        return Err(Error::InvalidArgument {
            what: format!("{NO_VECTORS} in {column:?} (every row is null, deleted or non-finite, or a zero vector under cosine)"),
        });
    };
    train(sampler, params).map_err(crate::Error::from)
}

/// Writes a built segment's files and commits it as covering `fragments`, dropping
/// the segments `removed`.
fn commit_segment(
    ds: &Dataset,
    field_id: i32,
    name: String,
    built: ivf::BuiltIndex,
    fragments: &[u64],
    removed: Vec<pb::IndexMetadata>,
) -> Result<Dataset> {
    let uuid = lancer_table::commit::random_uuid_bytes();
    let meta = write_segment(ds, field_id, name, built, fragments, uuid)?;
    Ok(ds.commit_indices(vec![meta], removed)?)
}

/// Writes a built segment's files under `_indices/<uuid>/` and returns its manifest
/// entry (covering `fragments`), not committed.
pub(crate) fn write_segment(
    ds: &Dataset,
    field_id: i32,
    name: String,
    built: ivf::BuiltIndex,
    fragments: &[u64],
    uuid: Vec<u8>,
) -> Result<pb::IndexMetadata> {
    use lancer_table::commit::IndexSource;
    let aux = match &built.auxiliary_file {
        ivf::IndexBytes::Memory(b) => IndexSource::Bytes(b),
        ivf::IndexBytes::Spilled { file, .. } => IndexSource::File(file.path()),
    };
    let files = lancer_table::commit::write_index_files(
        ds.store(),
        &uuid,
        &[
            ("auxiliary.idx", aux),
            ("index.idx", IndexSource::Bytes(&built.index_file)),
        ],
    )?;
    let bitmap = bitmap_of(fragments)?;
    let created = now_ms();
    let meta = pb::IndexMetadata {
        uuid: Some(pb::Uuid { uuid }),
        fields: vec![field_id],
        name,
        dataset_version: ds.version(),
        fragment_bitmap: bitmap,
        index_details: Some(prost_types::Any {
            type_url: ivf::VECTOR_DETAILS_URL.into(),
            value: built.details,
        }),
        index_version: Some(built.index_version),
        created_at: Some(created),
        base_id: None,
        files,
    };
    Ok(meta)
}

/// Adds the rows of fragments the index `name` does not cover yet (appended since it
/// was built) as a new segment of it, with the same centroids and quantizer as its
/// existing segments (the reference's `optimize_indices` delta). Returns `ds` itself
/// when every fragment is covered.
pub fn optimize_index(ds: &Dataset, name: &str) -> Result<Dataset> {
    extend_index(ds, name, None)
}

/// Optimizes the index `name` as the reference's `optimize_indices` with
/// `num_indices_to_merge = merge`: the rows of fragments no segment covers and those of
/// its `merge` latest segments are indexed as one segment that replaces them (0: the
/// new rows become a delta segment, as [`optimize_index`]). Vector segments keep their
/// centroids and quantizer. Returns `ds` itself when there is nothing to add or merge.
pub fn optimize_index_merging(ds: &Dataset, name: &str, merge: usize) -> Result<Dataset> {
    update_index(ds, name, None, merge)
}

/// The reference's `optimize_indices` for the index `name`: with `merge` (its
/// `num_indices_to_merge`) the new rows and the `merge` latest segments become one
/// segment; without, a vector index merges all its segments and other kinds their
/// latest one (as pylance 14 does); `retrain` rebuilds a vector index over every row
/// and leaves other kinds to the default.
pub fn optimize_index_as_reference(
    ds: &Dataset,
    name: &str,
    merge: Option<usize>,
    retrain: bool,
) -> Result<Dataset> {
    let (metas, _, _) = named_index(ds, name)?;
    let first = &metas[0];
    let vector = lancer_index::scalar::kind_of(ds, first).is_none()
        && !lancer_index::inverted::segment::is_inverted(first);
    if retrain && vector {
        return retrain_index(ds, name);
    }
    let merge = match (merge, retrain) {
        (Some(m), false) => m,
        _ if vector => usize::MAX,
        _ => 1,
    };
    update_index(ds, name, None, merge)
}

/// Rebuilds the index `name` over every fragment as one segment that replaces all of
/// its segments (the reference's `optimize_indices(retrain=True)`): vector indexes
/// train new centroids and quantizer with the settings they record (metric,
/// quantizer, partition count), scalar and full-text indexes are built again with
/// their parameters.
pub fn retrain_index(ds: &Dataset, name: &str) -> Result<Dataset> {
    let (metas, field_id, column) = named_index(ds, name)?;
    let first = &metas[0];
    let vector = lancer_index::scalar::kind_of(ds, first).is_none()
        && !lancer_index::inverted::segment::is_inverted(first);
    if !vector {
        return update_index(ds, name, None, metas.len());
    }
    let (quantizer, metric) = ivf::details_model(first).ok_or_else(|| Error::InvalidArgument {
        what: format!("index {name:?} records no quantizer or metric to retrain with; drop it and create it again"),
    })?;
    let mut params = BuildParams::new(quantizer, metric);
    params.hnsw = ivf::details_hnsw(first);
    params.file_version = index_file_version(ds);
    params.num_partitions = metas
        .iter()
        .find(|m| !ivf::covers_nothing(m))
        .and_then(|m| ivf::IvfSegment::open(ds, m).ok())
        .map(|s| s.partitions.len());
    let built = match build_streaming(ds, &column, None, &params) {
        Err(Error::InvalidArgument { what }) if what.starts_with(NO_VECTORS) => {
            return Ok(ds.clone())
        }
        other => other?,
    };
    let all: Vec<u64> = ds.fragments().iter().map(|f| f.id).collect();
    commit_segment(ds, field_id, name.to_string(), built, &all, metas)
}

/// [`optimize_index`] for the fragments `only` among those the index does not cover
/// (all of them with None): e.g. the fragments a compaction wrote in place of fragments
/// the index covered.
pub fn extend_index(ds: &Dataset, name: &str, only: Option<&[u64]>) -> Result<Dataset> {
    update_index(ds, name, only, 0)
}

fn update_index(ds: &Dataset, name: &str, only: Option<&[u64]>, merge: usize) -> Result<Dataset> {
    let (metas, field_id, column) = named_index(ds, name)?;
    let first = &metas[0];
    let mut covered = roaring::RoaringBitmap::new();
    for m in &metas {
        covered |= roaring::RoaringBitmap::deserialize_from(m.fragment_bitmap.as_slice())
            .unwrap_or_default();
    }
    let mut new = uncovered_fragments(ds, &covered);
    if let Some(only) = only {
        new.retain(|f| only.contains(f));
    }
    // the latest `merge` segments that index rows are rebuilt with the new rows
    let merged: Vec<pb::IndexMetadata> = {
        let trained: Vec<&pb::IndexMetadata> =
            metas.iter().filter(|m| !ivf::covers_nothing(m)).collect();
        trained[trained.len().saturating_sub(merge)..]
            .iter()
            .map(|m| (*m).clone())
            .collect()
    };
    if new.is_empty() && merged.len() <= 1 {
        return Ok(ds.clone());
    }
    if !merged.is_empty() {
        let mut theirs = roaring::RoaringBitmap::new();
        for m in &merged {
            theirs |= roaring::RoaringBitmap::deserialize_from(m.fragment_bitmap.as_slice())
                .unwrap_or_default();
        }
        new.extend(
            ds.fragments()
                .iter()
                .map(|f| f.id)
                .filter(|&id| u32::try_from(id).is_ok_and(|i| theirs.contains(i))),
        );
        new.sort_unstable();
        new.dedup();
    }
    if let Some(kind) = lancer_index::scalar::kind_of(ds, first) {
        return crate::index::scalar::optimize(ds, name, kind, first, &new, merged);
    }
    if lancer_index::inverted::segment::is_inverted(first) {
        return crate::index::fts::optimize(ds, name, first, &column, &new, merged);
    }
    let Some(trained) = metas.iter().find(|m| !ivf::covers_nothing(m)) else {
        // Only entries of no rows (the dataset had no vectors when it was built):
        // train now, on every fragment, with the settings they record.
        let (quantizer, metric) = ivf::details_model(first).ok_or_else(|| {
            Error::InvalidArgument {
                what: format!("index {name:?} records no quantizer or metric to build with; drop it and create it again"),
            }
        })?;
        let mut params = BuildParams::new(quantizer, metric);
        params.hnsw = ivf::details_hnsw(first);
        params.file_version = index_file_version(ds);
        let built = match build_streaming(ds, &column, None, &params) {
            Err(Error::InvalidArgument { what }) if what.starts_with(NO_VECTORS) => {
                return Ok(ds.clone())
            }
            other => other?,
        };
        let all: Vec<u64> = ds.fragments().iter().map(|f| f.id).collect();
        return commit_segment(ds, field_id, name.to_string(), built, &all, metas);
    };
    let base = ivf::IvfSegment::open(ds, trained)?;
    let params = reuse_params(ds, trained, &base);
    let built = match build_streaming(ds, &column, Some(&new), &params) {
        Err(Error::InvalidArgument { what }) if what.starts_with(NO_VECTORS) => {
            return Ok(ds.clone())
        }
        other => other?,
    };
    commit_segment(ds, field_id, name.to_string(), built, &new, merged)
}

/// Build settings that encode rows with the model of the opened segment `seg`
/// (manifest entry `meta`) as it is: its centroids and quantizer, its metric, and —
/// for an HNSW index — graphs with its settings.
pub(crate) fn reuse_params(
    ds: &Dataset,
    meta: &pb::IndexMetadata,
    seg: &ivf::IvfSegment,
) -> BuildParams {
    let (fixed, quantizer) = ivf::FixedModel::of(seg);
    let mut params = BuildParams::new(quantizer, seg.metric);
    params.fixed = Some(fixed);
    params.hnsw = ivf::details_hnsw(meta).or_else(|| {
        let g = seg.graphs.as_ref()?.iter().flatten().next()?;
        Some(lancer_index::vector::hnsw::HnswBuild {
            m: g.meta.params.m,
            ef_construction: g.meta.params.ef_construction,
            max_level: g.meta.params.max_level,
        })
    });
    params.file_version = index_file_version(ds);
    params
}

/// The indexes of `ds`, one entry per name.
pub fn list_indices(ds: &Dataset) -> Result<Vec<IndexInfo>> {
    let schema = &ds.manifest().schema;
    let column_of =
        |id: i32| crate::catalog::field_path(schema, id).unwrap_or_else(|| format!("field {id}"));
    let mut out: Vec<IndexInfo> = Vec::new();
    for m in ds.indices()? {
        let uuid = m
            .uuid
            .as_ref()
            .and_then(|u| lancer_table::dataset::uuid_dir(&u.uuid).ok())
            .unwrap_or_default();
        let frags = roaring::RoaringBitmap::deserialize_from(m.fragment_bitmap.as_slice())
            .unwrap_or_default();
        let entry = match out.iter_mut().position(|e| e.name == m.name) {
            Some(i) => &mut out[i],
            None => {
                let (kind, metric) = match lancer_index::scalar::kind_of(ds, m) {
                    Some(k) => (Some(k.type_name().to_string()), None),
                    None if lancer_index::inverted::segment::is_inverted(m) => {
                        (Some("INVERTED".to_string()), None)
                    }
                    None if ivf::covers_nothing(m) => match ivf::details_model(m) {
                        Some((q, metric)) => (
                            Some(q.type_name().to_string()),
                            Some(metric.name().to_string()),
                        ),
                        None => (None, None),
                    },
                    None => match ivf::IvfSegment::open(ds, m) {
                        Ok(s) => (
                            Some(s.index_type.clone()),
                            Some(s.metric.name().to_string()),
                        ),
                        Err(_) => (None, None),
                    },
                };
                out.push(IndexInfo {
                    name: m.name.clone(),
                    columns: m.fields.iter().map(|&f| column_of(f)).collect(),
                    segments: Vec::new(),
                    index_type: kind,
                    metric,
                    fragments: Vec::new(),
                    unindexed_fragments: Vec::new(),
                });
                out.last_mut().ok_or_else(|| Error::InvalidArgument {
                    what: "index list".into(),
                })?
            }
        };
        entry.segments.push(uuid);
        entry.fragments.extend(frags.iter());
    }
    for e in &mut out {
        e.fragments.sort_unstable();
        e.fragments.dedup();
        e.unindexed_fragments = ds
            .fragments()
            .iter()
            .map(|f| f.id)
            .filter(|id| {
                u32::try_from(*id).map_or(true, |i| e.fragments.binary_search(&i).is_err())
            })
            .collect();
    }
    Ok(out)
}

/// Everything about the index `name` as JSON: type, metric, column, per segment (uuid,
/// partitions and their sizes, quantizer parameters, rows, fragments, dataset version
/// it was built at, creation time, files and sizes), rows indexed, and the fragments
/// (with their live rows) no segment covers — searched exactly until `optimize_index`.
pub fn describe_index(ds: &Dataset, name: &str) -> Result<serde_json::Value> {
    let info = list_indices(ds)?
        .into_iter()
        .find(|i| i.name == name)
        .ok_or_else(|| Error::InvalidArgument {
            what: format!(
                "no index named {name:?}: list the dataset's indexes for the names there are"
            ),
        })?;
    let mut segments = Vec::new();
    let mut rows = 0usize;
    for m in ds.indices()?.iter().filter(|m| m.name == name) {
        let mut d = match lancer_index::scalar::kind_of(ds, m) {
            Some(kind) => {
                let frags = roaring::RoaringBitmap::deserialize_from(m.fragment_bitmap.as_slice())
                    .unwrap_or_default();
                // Rows indexed: the live rows of the covered fragments still present.
                rows += ds
                    .fragments()
                    .iter()
                    .filter(|f| u32::try_from(f.id).is_ok_and(|id| frags.contains(id)))
                    .map(|f| {
                        let deleted = f.deletion_file.as_ref().map_or(0, |d| d.num_deleted_rows);
                        f.physical_rows.saturating_sub(deleted) as usize
                    })
                    .sum::<usize>();
                serde_json::json!({
                    "uuid": m.uuid.as_ref().and_then(|u| lancer_table::dataset::uuid_dir(&u.uuid).ok()),
                    "type": kind.type_name(),
                    "fragments": frags.iter().collect::<Vec<_>>(),
                    "details_bytes": m.index_details.as_ref().map_or(0, |d| d.value.len()),
                })
            }
            None if lancer_index::inverted::segment::is_inverted(m) => {
                let seg = lancer_index::inverted::segment::InvertedSegment::open(ds, m)?;
                match seg {
                    Some(seg) => {
                        rows += seg.num_docs() as usize;
                        serde_json::json!({
                            "uuid": m.uuid.as_ref().and_then(|u| lancer_table::dataset::uuid_dir(&u.uuid).ok()),
                            "type": "INVERTED",
                            "format": seg.format,
                            "fragments": seg.fragments.iter().collect::<Vec<_>>(),
                            "documents": seg.num_docs(),
                            "tokens_total": seg.total_tokens(),
                            "partitions": seg.partitions.iter().map(|p| serde_json::json!({
                                "id": p.id,
                                "documents": p.row_ids.len(),
                                "distinct_tokens": p.num_tokens(),
                            })).collect::<Vec<_>>(),
                            "positions": format!("{:?}", seg.positions),
                            "params": serde_json::from_str::<serde_json::Value>(&seg.params.to_json()).unwrap_or_default(),
                        })
                    }
                    None => {
                        serde_json::json!({"type": "INVERTED", "note": "a newer format than Lancer reads"})
                    }
                }
            }
            None if ivf::covers_nothing(m) => {
                let model = ivf::details_model(m);
                serde_json::json!({
                    "uuid": m.uuid.as_ref().and_then(|u| lancer_table::dataset::uuid_dir(&u.uuid).ok()),
                    "type": model.map(|(q, _)| q.type_name()),
                    "metric": model.map(|(_, metric)| metric.name()),
                    "rows": 0,
                    "partitions": 0,
                    "note": "built when the dataset had no vectors: covers no fragment; optimize trains it",
                })
            }
            None => {
                let seg = ivf::IvfSegment::open(ds, m)?;
                rows += seg.row_ids.len();
                seg.describe()
            }
        };
        if let Some(o) = d.as_object_mut() {
            o.insert("dataset_version".into(), m.dataset_version.into());
            o.insert("index_version".into(), m.index_version.unwrap_or(0).into());
            o.insert("created_at_ms".into(), m.created_at.into());
            o.insert(
                "files".into(),
                m.files
                    .iter()
                    .map(|f| serde_json::json!({"path": f.path, "bytes": f.size_bytes}))
                    .collect::<Vec<_>>()
                    .into(),
            );
        }
        segments.push(d);
    }
    let unindexed: Vec<serde_json::Value> = ds
        .fragments()
        .iter()
        .filter(|f| info.unindexed_fragments.contains(&f.id))
        .map(|f| {
            let deleted = f.deletion_file.as_ref().map_or(0, |d| d.num_deleted_rows);
            serde_json::json!({"id": f.id, "live_rows": f.physical_rows.saturating_sub(deleted)})
        })
        .collect();
    let unindexed_rows: u64 = unindexed
        .iter()
        .map(|f| f["live_rows"].as_u64().unwrap_or(0))
        .sum();
    Ok(serde_json::json!({
        "name": info.name,
        "columns": info.columns,
        "type": info.index_type,
        "metric": info.metric,
        "dataset_version": ds.version(),
        "rows_indexed": rows,
        "fragments_indexed": info.fragments,
        "unindexed_fragments": unindexed,
        "unindexed_rows": unindexed_rows,
        "segments": segments,
    }))
}

/// Drops the index `name` (all its segments) as a new version; its files stay until
/// `cleanup` removes versions that reference them.
pub fn drop_index(ds: &Dataset, name: &str) -> Result<Dataset> {
    let gone = index_segments(ds, name)?;
    Ok(ds.commit_indices(Vec::new(), gone)?)
}

/// The segments of the index `name`, at least one (an unknown name is an error naming
/// it).
pub(crate) fn index_segments(ds: &Dataset, name: &str) -> Result<Vec<pb::IndexMetadata>> {
    let metas: Vec<pb::IndexMetadata> = ds
        .indices()?
        .iter()
        .filter(|m| m.name == name)
        .cloned()
        .collect();
    if metas.is_empty() {
        return Err(Error::InvalidArgument {
            what: format!(
                "no index named {name:?}: list the dataset's indexes for the names there are"
            ),
        });
    }
    Ok(metas)
}
