//! Building scalar indexes (format guide "Scalar Indices"; the files pylance 11–14 write
//! and accept, `docs/scalar-index-format.md` §4–§9 and §14): the column's live values of
//! the fragments to cover are scanned in dataset order with their row addresses (and
//! stable row ids where the kind stores those), built into a segment by
//! `lancer_index::scalar::build`, written under `_indices/<uuid>/` and committed as a
//! `CreateIndex` through the usual OCC path. Filters use them through the scan planner.

use lancer_index::scalar::build::{BuiltScalar, ScalarBuilder, ScalarParams};
use lancer_index::scalar::ScalarKind;
use lancer_table::pb;

use crate::scan::{DatasetExt, ROW_ADDRESS, ROW_ID};
use crate::{Dataset, Error, Result};

/// What to build.
#[derive(Clone, Debug)]
pub struct ScalarIndexOptions {
    /// Index name (default `<column>_idx`).
    pub name: Option<String>,
    /// Replace an index of the same name (else that is an error).
    pub replace: bool,
    /// Kind and its parameters (page, zone and bloom sizes).
    pub params: ScalarParams,
}

impl ScalarIndexOptions {
    /// An index of `kind` with the reference's defaults.
    pub fn new(kind: ScalarKind) -> Self {
        Self {
            name: None,
            replace: false,
            params: ScalarParams::new(kind),
        }
    }
}

fn invalid(what: impl Into<String>) -> Error {
    Error::InvalidArgument { what: what.into() }
}

/// Scans `column` of `fragments` (all when None) into a built segment.
pub(crate) fn build(
    ds: &Dataset,
    column: &str,
    fragments: Option<&[u64]>,
    params: &ScalarParams,
) -> Result<BuiltScalar> {
    build_expecting(ds, column, fragments, params, None)
}

/// [`build`]; a JSON path index's values must be of type `expect` when given (the type
/// of the segments an optimize adds to).
pub(crate) fn build_expecting(
    ds: &Dataset,
    column: &str,
    fragments: Option<&[u64]>,
    params: &ScalarParams,
    expect: Option<arrow_schema::DataType>,
) -> Result<BuiltScalar> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::UInt64Type;
    let field = &crate::catalog::arrow_field_at(ds, column)
        .ok_or_else(|| invalid(format!("no column {column:?} to index")))?;
    let mut params = params.clone();
    params.file_version = crate::index::vector::index_file_version(ds);
    // Which id a kind stores on a dataset with stable row ids (§1, §4.5).
    let store_ids = ds.uses_stable_row_ids()
        && !matches!(params.kind, ScalarKind::ZoneMap | ScalarKind::BloomFilter);
    match (
        lancer_format::json::is_jsonb_field(field),
        &params.json_path,
    ) {
        (true, Some(_)) => {
            return crate::index::json::build(ds, column, fragments, &params, store_ids, expect)
        }
        (true, None) => {
            return Err(invalid(format!(
                "column {column:?} is a JSON column: index one of its paths \
                 (index_type=\"json\" with parameters {{\"path\": ..., \
                 \"target_index_type\": \"btree\"}}; `lancer index create --type json \
                 --json-path P`), or create an INVERTED index on it"
            )))
        }
        (false, Some(_)) => {
            return Err(invalid(format!(
                "column {column:?} is not a JSON column: a JSON path index needs one"
            )))
        }
        (false, None) => {}
    }
    let mut builder = ScalarBuilder::new(params.clone(), field)?;
    let rows: u64 = match fragments {
        None => ds.count_rows(),
        Some(f) => ds
            .fragments()
            .iter()
            .filter(|x| f.contains(&x.id))
            .map(|x| x.physical_rows)
            .sum(),
    };
    builder.reserve(usize::try_from(rows).unwrap_or(0));
    let mut scan = ds
        .scan()
        .columns(&[column])
        .with_row_address(true)
        .with_row_id(store_ids);
    if let Some(f) = fragments {
        scan = scan.fragments(f);
    }
    for b in scan.stream()? {
        let b = b?;
        let col = |name: &str| -> Result<&[u64]> {
            Ok(b.column_by_name(name)
                .and_then(|c| c.as_primitive_opt::<UInt64Type>())
                .ok_or_else(|| invalid(format!("{name} missing from the index scan")))?
                .values())
        };
        let addrs = col(ROW_ADDRESS)?;
        let ids = if store_ids { col(ROW_ID)? } else { addrs };
        builder.push(b.column(0).clone(), ids, addrs)?;
    }
    builder.finish().map_err(crate::Error::from)
}

/// Builds a scalar index on `column` of `ds` and commits it; returns the new version.
/// `progress` (when given) is told the `load_data` stage (rows read).
pub fn create_scalar_index(
    ds: &Dataset,
    column: &str,
    opts: &ScalarIndexOptions,
    progress: Option<&lancer_index::progress::Progress>,
) -> Result<Dataset> {
    let field_id = crate::catalog::indexable_field(ds, column, "to index")?;
    let name = opts.name.clone().unwrap_or_else(|| format!("{column}_idx"));
    let existing = crate::index::vector::replaced_segments(ds, &name, opts.replace)?;
    let stage = lancer_index::progress::Stage::start(progress, "load_data", "rows", None);
    let built = build(ds, column, None, &opts.params)?;
    stage.complete();
    let all: Vec<u64> = ds.fragments().iter().map(|f| f.id).collect();
    commit(
        ds,
        field_id,
        name,
        crate::index::json::type_url(&opts.params),
        built.files,
        built.details,
        built.index_version,
        &all,
        existing,
    )
}

/// Adds the fragments the scalar index `name` does not cover as a delta segment with the
/// same parameters (pylance's `optimize_indices(num_indices_to_merge=0)`).
pub(crate) fn optimize(
    ds: &Dataset,
    name: &str,
    kind: ScalarKind,
    first: &pb::IndexMetadata,
    new: &[u64],
    merged: Vec<pb::IndexMetadata>,
) -> Result<Dataset> {
    let (_, field_id, column) = crate::index::vector::named_index(ds, name)?;
    let params = params_of(ds, first, kind)?;
    // a JSON path index's new values must have the type of its existing ones
    let expect = match params.json_path {
        Some(_) => {
            lancer_index::scalar::ScalarSegment::open(ds, first)?.and_then(|s| s.value_type())
        }
        None => None,
    };
    let built = build_expecting(ds, &column, Some(new), &params, expect)?;
    commit(
        ds,
        field_id,
        name.to_string(),
        crate::index::json::type_url(&params),
        built.files,
        built.details,
        built.index_version,
        new,
        merged,
    )
}

/// The build parameters an existing segment was made with (page / zone / bloom sizes).
pub(crate) fn params_of(
    ds: &Dataset,
    meta: &pb::IndexMetadata,
    kind: ScalarKind,
) -> Result<ScalarParams> {
    let mut p = ScalarParams::new(kind);
    p.json_path = lancer_index::scalar::json_details(meta).map(|d| d.path);
    let Some(uuid) = meta.uuid.as_ref().map(|u| u.uuid.clone()) else {
        return Ok(p);
    };
    let key = |file: &str, key: &str| -> Option<String> {
        let r = ds.open_index_file(&uuid, file).ok()?;
        let v = r.metadata().schema.metadata.get(key).cloned();
        v
    };
    match kind {
        ScalarKind::BTree => {
            if let Some(v) = key("page_lookup.lance", "batch_size").and_then(|v| v.parse().ok()) {
                p.btree_page_rows = v;
            }
        }
        ScalarKind::ZoneMap => {
            if let Some(v) = key("zonemap.lance", "rows_per_zone").and_then(|v| v.parse().ok()) {
                p.zone_rows = v;
            }
        }
        ScalarKind::BloomFilter => {
            if let Some(v) =
                key("bloomfilter.lance", "bloomfilter_item").and_then(|v| v.parse().ok())
            {
                p.bloom_items = v;
            }
            if let Some(v) =
                key("bloomfilter.lance", "bloomfilter_probability").and_then(|v| v.parse().ok())
            {
                p.bloom_probability = v;
            }
        }
        _ => {}
    }
    Ok(p)
}

/// Writes a segment's `files` under a new uuid and commits its manifest entry (details
/// of `type_url`) covering `fragments`, dropping the segments `removed`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn commit(
    ds: &Dataset,
    field_id: i32,
    name: String,
    type_url: &str,
    files: Vec<(String, Vec<u8>)>,
    details: Vec<u8>,
    index_version: i32,
    fragments: &[u64],
    removed: Vec<pb::IndexMetadata>,
) -> Result<Dataset> {
    let segment = SegmentFiles {
        type_url,
        files,
        details,
        index_version,
    };
    let uuid = lancer_table::commit::random_uuid_bytes();
    let meta = write(ds, field_id, name, segment, fragments, uuid)?;
    Ok(ds.commit_indices(vec![meta], removed)?)
}

/// A built segment's files and what its manifest entry records of them.
pub(crate) struct SegmentFiles<'a> {
    pub type_url: &'a str,
    pub files: Vec<(String, Vec<u8>)>,
    pub details: Vec<u8>,
    pub index_version: i32,
}

/// Writes a segment's files under `_indices/<uuid>/` and returns its manifest entry
/// (covering `fragments`), not committed.
pub(crate) fn write(
    ds: &Dataset,
    field_id: i32,
    name: String,
    segment: SegmentFiles<'_>,
    fragments: &[u64],
    uuid: Vec<u8>,
) -> Result<pb::IndexMetadata> {
    use lancer_table::commit::IndexSource;
    let SegmentFiles {
        type_url,
        files,
        details,
        index_version,
    } = segment;
    let sources: Vec<(&str, IndexSource<'_>)> = files
        .iter()
        .map(|(n, b)| (n.as_str(), IndexSource::Bytes(b)))
        .collect();
    let files = lancer_table::commit::write_index_files(ds.store(), &uuid, &sources)?;
    let mut covered = roaring::RoaringBitmap::new();
    for &f in fragments {
        covered.insert(
            u32::try_from(f)
                .map_err(|_| invalid(format!("fragment id {f} too large for an index bitmap")))?,
        );
    }
    let mut bitmap = Vec::new();
    covered
        .serialize_into(&mut bitmap)
        .map_err(|e| invalid(format!("fragment bitmap: {e}")))?;
    let created = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let meta = pb::IndexMetadata {
        uuid: Some(pb::Uuid { uuid }),
        fields: vec![field_id],
        name,
        dataset_version: ds.version(),
        fragment_bitmap: bitmap,
        index_details: Some(prost_types::Any {
            type_url: type_url.into(),
            value: details,
        }),
        index_version: Some(index_version),
        created_at: Some(created),
        base_id: None,
        files,
    };
    Ok(meta)
}
