//! Statistics of a dataset and its indexes, in the shapes pylance reports them:
//! [`index_statistics`] (`LanceDataset.stats.index_stats` / `index_statistics`: per
//! segment what its kind records, and how many fragments and rows the index covers),
//! [`describe_indices`] (one [`IndexDescription`] per index), [`dataset_stats`]
//! (deleted rows, fragments, small files) and [`data_stats`] (bytes on disk per field:
//! the page buffers of every data file's columns, reference "File format" → column
//! metadata).
//!
//! Rows an index covers are the live rows (physical rows less deletions) of the
//! dataset's fragments in each segment's fragment bitmap (reference "Indices": the
//! bitmap names the fragments a segment covers); the rest are unindexed.

use lancer_index::{inverted, scalar, vector::ivf};
use lancer_table::pb;
use lancer_table::Dataset;
use roaring::RoaringBitmap;
use serde_json::{json, Value};

use crate::catalog::live_rows;
use crate::{Error, Result};

/// One segment of an index as pylance's `describe_indices` lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct SegmentDescription {
    /// The segment's uuid (hyphenated).
    pub uuid: String,
    /// Fragments it covers.
    pub fragment_ids: Vec<u32>,
    /// The dataset version it was built (or last updated) at.
    pub dataset_version_at_last_update: u64,
    /// The index format version.
    pub index_version: i32,
    /// When it was created, milliseconds since the Unix epoch.
    pub created_at_ms: Option<u64>,
    /// The base path its files live under, when not the dataset's.
    pub base_id: Option<u32>,
    /// Bytes of its files, when the manifest lists them.
    pub size_bytes: Option<u64>,
}

/// One index as pylance's `describe_indices` lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexDescription {
    /// The index name.
    pub name: String,
    /// The kind as pylance names it (`BTree`, `Inverted`, `IVF_PQ`, …).
    pub index_type: String,
    /// Its segments.
    pub segments: Vec<SegmentDescription>,
    /// What the manifest entry's details record, as pylance shows them (vector
    /// indexes: metric, compression, HNSW settings, runtime hints; `{}` for the other
    /// kinds).
    pub details: Value,
    /// The type URL of its details (`/lance.table.BTreeIndexDetails`, …; empty for
    /// legacy segments without details).
    pub type_url: String,
    /// Live rows of the fragments its segments cover.
    pub num_rows_indexed: u64,
    /// Indexed field ids.
    pub fields: Vec<i32>,
    /// Indexed field names (paths for nested fields).
    pub field_names: Vec<String>,
    /// Segments (deltas).
    pub num_segments: usize,
    /// Bytes of its files, when the manifest lists them.
    pub total_size_bytes: Option<u64>,
}

/// pylance's `stats.dataset_stats()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DatasetStats {
    /// Rows deleted (marked in deletion files) in the current fragments.
    pub num_deleted_rows: u64,
    /// Fragments.
    pub num_fragments: u64,
    /// Fragments of fewer physical rows than `max_rows_per_group`.
    pub num_small_files: u64,
}

/// Bytes one field takes on disk ([`data_stats`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldStatistics {
    /// The field id.
    pub id: i32,
    /// Bytes of its columns' page buffers over every data file.
    pub bytes_on_disk: u64,
}

fn segments<'a>(ds: &'a Dataset, name: &str) -> Result<Vec<&'a pb::IndexMetadata>> {
    let metas: Vec<_> = ds.indices()?.iter().filter(|m| m.name == name).collect();
    if metas.is_empty() {
        return Err(Error::InvalidArgument {
            what: format!(
                "Index not found: {name:?}: list the dataset's indexes for the names there are"
            ),
        });
    }
    Ok(metas)
}

fn bitmap(m: &pb::IndexMetadata) -> RoaringBitmap {
    RoaringBitmap::deserialize_from(m.fragment_bitmap.as_slice()).unwrap_or_default()
}

/// Per segment, the live rows of the dataset's fragments it covers; and the distinct
/// fragments covered.
fn coverage(ds: &Dataset, metas: &[&pb::IndexMetadata]) -> (Vec<u64>, u64) {
    let mut all = RoaringBitmap::new();
    let per_delta = metas
        .iter()
        .map(|m| {
            let b = bitmap(m);
            ds.fragments()
                .iter()
                .filter(|f| u32::try_from(f.id).is_ok_and(|id| b.contains(id)))
                .map(|f| {
                    all.insert(f.id as u32);
                    live_rows(f)
                })
                .sum()
        })
        .collect();
    (per_delta, all.len())
}

/// What pylance calls the index's type in statistics.
fn stats_type_name(kind: scalar::ScalarKind) -> &'static str {
    match kind {
        scalar::ScalarKind::BTree => "BTree",
        scalar::ScalarKind::Bitmap => "Bitmap",
        scalar::ScalarKind::LabelList => "LabelList",
        scalar::ScalarKind::ZoneMap => "ZoneMap",
        scalar::ScalarKind::BloomFilter => "BloomFilter",
        scalar::ScalarKind::NGram => "NGram",
    }
}

/// One segment's statistics and its type name.
fn segment_statistics(ds: &Dataset, m: &pb::IndexMetadata) -> Result<(String, Value)> {
    if let Some(kind) = scalar::kind_of(ds, m) {
        let seg = scalar::ScalarSegment::open(ds, m)?.ok_or_else(|| {
            Error::Index(lancer_index::IndexError::Unsupported {
                index: m.name.clone(),
                what: format!("a newer {} version than Lancer reads", kind.type_name()),
            })
        })?;
        return Ok((stats_type_name(kind).into(), seg.statistics()?));
    }
    if inverted::segment::is_inverted(m) {
        let seg = inverted::segment::InvertedSegment::open(ds, m)?.ok_or_else(|| {
            Error::Index(lancer_index::IndexError::Unsupported {
                index: m.name.clone(),
                what: "a newer INVERTED format than Lancer reads".into(),
            })
        })?;
        return Ok(("Inverted".into(), seg.statistics()));
    }
    if ivf::covers_nothing(m) {
        // built over no vectors: no model yet
        let kind = lancer_index::vector::ivf::details_model(m)
            .map(|(q, _)| q.type_name().to_string())
            .unwrap_or_default();
        return Ok((
            kind.clone(),
            json!({"index_type": kind, "num_partitions": 0, "partitions": []}),
        ));
    }
    // through the session's cache: a segment a search opened is not decoded again
    let raw = m.uuid.as_ref().map(|u| u.uuid.clone()).unwrap_or_default();
    let seg = crate::search::ann::cached_ivf_segment(ds, m)?;
    let uuid = lancer_table::dataset::uuid_dir(&raw).unwrap_or_default();
    let uri = ds.store().display(&format!("_indices/{uuid}/index.idx"));
    Ok((seg.index_type.clone(), seg.statistics(&uri)))
}

/// pylance's `index_statistics(name)`: the index's type and name, its segments'
/// statistics (`indices`, and the same list as `segments`), fragments and rows
/// indexed (per segment, too) and not, and when it was last updated.
pub fn index_statistics(ds: &Dataset, name: &str) -> Result<Value> {
    let metas = segments(ds, name)?;
    let mut kind = String::new();
    let mut per_segment = Vec::with_capacity(metas.len());
    for m in &metas {
        let (k, s) = segment_statistics(ds, m)?;
        if kind.is_empty() {
            kind = k;
        }
        per_segment.push(s);
    }
    let (per_delta, indexed_fragments) = coverage(ds, &metas);
    let indexed_rows: u64 = per_delta.iter().sum();
    let fragments = ds.fragments().len() as u64;
    Ok(json!({
        "index_type": kind,
        "name": name,
        "num_indices": metas.len(),
        "num_segments": metas.len(),
        "indices": per_segment,
        "segments": per_segment,
        "num_indexed_fragments": indexed_fragments,
        "num_indexed_rows": indexed_rows,
        "num_unindexed_fragments": fragments.saturating_sub(indexed_fragments),
        "num_unindexed_rows": ds.count_rows().saturating_sub(indexed_rows),
        "num_indexed_rows_per_delta": per_delta,
        "updated_at_timestamp_ms": metas.iter().filter_map(|m| m.created_at).max(),
    }))
}

/// pylance's `describe_indices()`: one description per index name, in name order.
pub fn describe_indices(ds: &Dataset) -> Result<Vec<IndexDescription>> {
    let schema = &ds.manifest().schema;
    let mut names: Vec<&str> = ds.indices()?.iter().map(|m| m.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let metas = segments(ds, name)?;
        let first = metas[0];
        let (per_delta, _) = coverage(ds, &metas);
        let sizes: Vec<u64> = metas
            .iter()
            .flat_map(|m| m.files.iter().map(|f| f.size_bytes))
            .collect();
        let index_type = segment_type(ds, first);
        out.push(IndexDescription {
            name: name.to_string(),
            index_type,
            segments: metas
                .iter()
                .map(|m| SegmentDescription {
                    uuid: m
                        .uuid
                        .as_ref()
                        .and_then(|u| lancer_table::dataset::uuid_dir(&u.uuid).ok())
                        .unwrap_or_default(),
                    fragment_ids: bitmap(m).iter().collect(),
                    dataset_version_at_last_update: m.dataset_version,
                    index_version: m.index_version.unwrap_or(0),
                    created_at_ms: m.created_at,
                    base_id: m.base_id,
                    size_bytes: (!m.files.is_empty())
                        .then(|| m.files.iter().map(|f| f.size_bytes).sum()),
                })
                .collect(),
            details: lancer_index::vector::ivf::details_json(first).unwrap_or_else(|| json!({})),
            type_url: first
                .index_details
                .as_ref()
                .map(|d| d.type_url.clone())
                .unwrap_or_default(),
            num_rows_indexed: per_delta.iter().sum(),
            fields: first.fields.clone(),
            field_names: first
                .fields
                .iter()
                .map(|&id| field_path(schema, id))
                .collect(),
            num_segments: metas.len(),
            total_size_bytes: (!sizes.is_empty()).then(|| sizes.iter().sum()),
        });
    }
    Ok(out)
}

/// The dotted path of field `id` (`a.b` for a struct's child).
fn field_path(schema: &lancer_format::schema::LanceSchema, id: i32) -> String {
    crate::catalog::field_path(schema, id).unwrap_or_else(|| format!("field {id}"))
}

/// pylance's `stats.dataset_stats(max_rows_per_group)`.
pub fn dataset_stats(ds: &Dataset, max_rows_per_group: u64) -> Result<DatasetStats> {
    let mut deleted = 0;
    for f in ds.fragments() {
        deleted += match &f.deletion_file {
            None => 0,
            Some(d) if d.num_deleted_rows > 0 => d.num_deleted_rows,
            // a deletion file that does not record its count is read
            Some(_) => ds.deletions(f)?.len(),
        };
    }
    Ok(DatasetStats {
        num_deleted_rows: deleted,
        num_fragments: ds.fragments().len() as u64,
        num_small_files: ds
            .fragments()
            .iter()
            .filter(|f| f.physical_rows < max_rows_per_group)
            .count() as u64,
    })
}

/// pylance's `stats.data_stats()`: per field of the schema (in schema order), the
/// bytes of its columns' page buffers over every data file (0 for legacy files, as
/// pylance reports them). A column a file maps to no field belongs to the field
/// before it (a field may span several columns).
pub fn data_stats(ds: &Dataset) -> Result<Vec<FieldStatistics>> {
    fn pre_order(f: &lancer_format::schema::LanceField, out: &mut Vec<FieldStatistics>) {
        if !out.iter().any(|s| s.id == f.id) {
            out.push(FieldStatistics {
                id: f.id,
                bytes_on_disk: 0,
            });
        }
        for c in &f.children {
            pre_order(c, out);
        }
    }
    let mut out: Vec<FieldStatistics> = Vec::new();
    for f in &ds.manifest().schema.fields {
        pre_order(f, &mut out);
    }
    if ds.is_legacy_storage() {
        return Ok(out);
    }
    for frag in ds.fragments() {
        for df in &frag.files {
            let reader = ds.data_file_reader(frag, df)?;
            let by_column: std::collections::HashMap<i32, i32> = df
                .column_indices
                .iter()
                .zip(&df.fields)
                .filter(|(c, _)| **c >= 0)
                .map(|(&c, &f)| (c, f))
                .collect();
            let mut field = 0;
            for (i, col) in reader.metadata().columns.iter().enumerate() {
                if let Some(&f) = i32::try_from(i).ok().and_then(|i| by_column.get(&i)) {
                    field = f;
                }
                let bytes: u64 = col
                    .pages
                    .iter()
                    .flat_map(|p| p.buffers.iter().map(|b| b.end - b.start))
                    .sum();
                if let Some(s) = out.iter_mut().find(|s| s.id == field) {
                    s.bytes_on_disk += bytes;
                }
            }
        }
    }
    Ok(out)
}

/// One index segment as pylance's `list_indices` lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct SegmentInfo {
    /// The index name.
    pub name: String,
    /// The kind as pylance names it (`BTree`, `Bitmap`, `Inverted`, `IVF_PQ`, …).
    pub index_type: String,
    /// The segment's uuid (hyphenated).
    pub uuid: String,
    /// Indexed field names (paths for nested fields).
    pub fields: Vec<String>,
    /// The dataset version the segment was built at.
    pub version: u64,
    /// Fragments it covers.
    pub fragment_ids: Vec<u32>,
    /// The base path its files live under, when not the dataset's.
    pub base_id: Option<u32>,
}

/// pylance's `list_indices()`: every segment, by index name (segments of one index in
/// manifest order).
pub fn list_segments(ds: &Dataset) -> Result<Vec<SegmentInfo>> {
    let schema = &ds.manifest().schema;
    let mut out = Vec::new();
    for m in ds.indices()? {
        let index_type = segment_type(ds, m);
        out.push(SegmentInfo {
            name: m.name.clone(),
            index_type,
            uuid: m
                .uuid
                .as_ref()
                .and_then(|u| lancer_table::dataset::uuid_dir(&u.uuid).ok())
                .unwrap_or_default(),
            fields: m.fields.iter().map(|&id| field_path(schema, id)).collect(),
            version: m.dataset_version,
            fragment_ids: bitmap(m).iter().collect(),
            base_id: m.base_id,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// The kind of segment `m` as pylance names it.
fn segment_type(ds: &Dataset, m: &pb::IndexMetadata) -> String {
    if scalar::json_details(m).is_some() {
        "Json".to_string()
    } else if let Some(kind) = scalar::kind_of(ds, m) {
        stats_type_name(kind).to_string()
    } else if inverted::segment::is_inverted(m) {
        "Inverted".to_string()
    } else if let Some((q, _)) = lancer_index::vector::ivf::details_model(m) {
        let hnsw =
            lancer_index::vector::ivf::details_json(m).is_some_and(|d| d.get("hnsw").is_some());
        if hnsw {
            q.type_name().replacen("IVF_", "IVF_HNSW_", 1)
        } else {
            q.type_name().to_string()
        }
    } else {
        // legacy entries without details: the type the index file records
        ivf::IvfSegment::open(ds, m)
            .map(|s| s.index_type.clone())
            .unwrap_or_default()
    }
}
