//! pylance 14's fragment-level full-text builds: `create_scalar_index(column,
//! "INVERTED", fragment_ids=…, index_uuid=…)` on each worker, then one
//! `merge_index_metadata(index_uuid, "INVERTED")` and a `CreateIndex` commit
//! (reference "Distributed indexing", lines ~7862–8438; the segment workflow of
//! [`super::distributed`] is the newer way to the same index).
//!
//! Each worker's rows become one partition of the shared index directory, staged as
//! pylance stages them: `_indices/<uuid>/staging/part_<id>_{docs,invert,tokens,
//! metadata}.lance`, `<id>` the first fragment id given shifted left 32 bits. The merge
//! lays every staged partition out as one partition (`metadata.lance`,
//! `part_0_*.lance`: what one build over the same rows writes) and removes the staging
//! files. Nothing is committed: the caller commits an `Index` naming the uuid.

use lancer_table::pb;

use super::fts::FtsIndexOptions;
use crate::{Dataset, Error, Result};

fn invalid(what: impl Into<String>) -> Error {
    Error::InvalidArgument { what: what.into() }
}

/// The staged partition id of a build over `fragments` (pylance's: the first fragment
/// id given, in the high 32 bits).
fn partition_id(fragments: &[u64]) -> u64 {
    fragments.first().copied().unwrap_or(0) << 32
}

/// Builds the full-text index of `column` over `fragments` as one staged partition of
/// the index `uuid` (16 bytes), not committed. A partition staged before with the same
/// first fragment is replaced.
pub fn stage_fts_partition(
    ds: &Dataset,
    column: &str,
    opts: &FtsIndexOptions,
    fragments: &[u64],
    uuid: &[u8],
) -> Result<()> {
    crate::catalog::indexable_field(ds, column, "to index")?;
    super::distributed::check_fragments(ds, fragments)?;
    let params = super::fts::column_params(ds, column, &opts.params)?;
    let built = super::fts::build_partition(
        ds,
        column,
        fragments,
        params,
        None,
        partition_id(fragments),
        true,
    )?;
    let names: Vec<String> = built
        .files
        .iter()
        .map(|(n, _)| format!("staging/{n}"))
        .collect();
    let sources: Vec<(&str, lancer_table::commit::IndexSource<'_>)> = names
        .iter()
        .zip(&built.files)
        .map(|(n, (_, b))| (n.as_str(), lancer_table::commit::IndexSource::Bytes(b)))
        .collect();
    lancer_table::commit::write_index_files(ds.store(), uuid, &sources)?;
    Ok(())
}

/// Merges the partitions staged under the index `uuid` into one (see the module docs);
/// the staging files are removed once the merged files are written. An index without
/// staged partitions is an error naming its directory.
pub fn merge_staged_fts(ds: &Dataset, uuid: &[u8]) -> Result<()> {
    use lancer_index::inverted::segment::{InvertedSegment, INVERTED_DETAILS_URL};
    let dir = format!("_indices/{}", lancer_table::dataset::uuid_dir(uuid)?);
    let staged = ds
        .store()
        .list(&format!("{dir}/staging"))
        .map_err(lancer_table::TableError::from)?;
    if !staged.iter().any(|e| e.name.ends_with("_metadata.lance")) {
        return Err(invalid(format!(
            "No partition metadata files found in index directory: {}/{dir}: build its \
             partitions first with create_scalar_index(column, \"INVERTED\", \
             fragment_ids=[...], index_uuid=...)",
            ds.store().uri().trim_end_matches('/')
        )));
    }
    let mut empty = Vec::new();
    roaring::RoaringBitmap::new()
        .serialize_into(&mut empty)
        .map_err(|e| invalid(format!("fragment bitmap: {e}")))?;
    // the staged partitions as one uncommitted segment (the column is not recorded in
    // them, and the merge does not need it)
    let meta = pb::IndexMetadata {
        uuid: Some(pb::Uuid {
            uuid: uuid.to_vec(),
        }),
        fields: vec![-1],
        name: dir.clone(),
        fragment_bitmap: empty,
        index_details: Some(prost_types::Any {
            type_url: INVERTED_DETAILS_URL.to_string(),
            value: Vec::new(),
        }),
        files: staged
            .iter()
            .map(|e| pb::IndexFile {
                path: format!("staging/{}", e.name),
                size_bytes: e.size,
            })
            .collect(),
        ..Default::default()
    };
    let segment = InvertedSegment::open(ds, &meta)?.ok_or_else(|| {
        invalid(format!(
            "the partitions staged in {dir} are of a format Lancer does not merge"
        ))
    })?;
    let built = lancer_index::inverted::merge::merge(
        &[segment],
        crate::index::vector::index_file_version(ds),
    )?;
    let sources: Vec<(&str, lancer_table::commit::IndexSource<'_>)> = built
        .files
        .iter()
        .map(|(n, b)| (n.as_str(), lancer_table::commit::IndexSource::Bytes(b)))
        .collect();
    lancer_table::commit::write_index_files(ds.store(), uuid, &sources)?;
    for e in &staged {
        ds.store()
            .delete(&format!("{dir}/staging/{}", e.name))
            .map_err(lancer_table::TableError::from)?;
    }
    ds.store().remove_empty_dir(&format!("{dir}/staging"));
    Ok(())
}
