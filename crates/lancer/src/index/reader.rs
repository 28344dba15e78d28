//! Reading one partition of a vector index as stored, as pylance 14's
//! `VectorIndexReader.read_partition` gives it: the rows an IVF segment's
//! `auxiliary.idx` holds for the partition — the `_rowid` column alone, or every stored
//! column (`flat` vectors, `__pq_code` / `__sq_code` codes, RabitQ codes and factors)
//! exactly as written (PQ codes stay transposed within the partition, as pylance hands
//! them out) — with the file's schema metadata (`distance_type`, `lance:ivf`,
//! `storage_metadata`). Every segment of the index contributes its rows of the
//! partition, segment after segment.
//!
//! RabitQ sign codes stored unpacked (row-major, `"packed": false` in the storage
//! metadata, as Lancer writes them) come back in the packed layout pylance converts
//! them to when it loads them: each complete block of 32 rows interleaved by nibbles,
//! the remaining rows column-major.
//!
//! This reads the auxiliary file's partition layout (the `lance:ivf` global buffer)
//! and a row range of the file; it does not open the segment for search, so it also
//! reads the storage of index kinds the searcher skips (IVF_HNSW_*: their auxiliary
//! file has the same layout).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt8Type;
use arrow_array::{Array, FixedSizeListArray, RecordBatch, UInt8Array};
use arrow_schema::{DataType, Schema};
use lancer_index::vector::ivf::{covers_nothing, is_vector_index};

use crate::{Dataset, Error, Result};

/// `batch` with its `_rabit_codes` column packed when the storage metadata says the
/// file holds them unpacked.
fn packed_as_pylance_loads(
    batch: RecordBatch,
    storage_metadata: Option<&String>,
) -> Result<RecordBatch> {
    let unpacked = storage_metadata
        .and_then(|raw| serde_json::from_str::<Vec<String>>(raw).ok())
        .and_then(|outer| outer.first().cloned())
        .and_then(|first| serde_json::from_str::<serde_json::Value>(&first).ok())
        .is_some_and(|m| m["packed"].as_bool() == Some(false));
    let Some(i) = batch
        .schema()
        .index_of("_rabit_codes")
        .ok()
        .filter(|_| unpacked)
    else {
        return Ok(batch);
    };
    let col = batch.column(i);
    let Some(fsl) = col.as_fixed_size_list_opt() else {
        return Ok(batch);
    };
    let Some(values) = fsl.values().as_primitive_opt::<UInt8Type>() else {
        return Ok(batch);
    };
    let l = fsl.value_length() as usize;
    let start = fsl.offset() * l;
    let codes = &values.values()[start..start + fsl.len() * l];
    let packed = UInt8Array::from(lancer_index::vector::rabitq::packed_partition_codes(
        codes, l,
    ));
    let field = match fsl.data_type() {
        DataType::FixedSizeList(f, _) => f.clone(),
        _ => return Ok(batch),
    };
    let list =
        FixedSizeListArray::try_new(field, l as i32, Arc::new(packed), fsl.nulls().cloned())?;
    let mut columns = batch.columns().to_vec();
    columns[i] = Arc::new(list);
    Ok(RecordBatch::try_new(batch.schema(), columns)?)
}

/// The rows of partition `partition` of the vector index `name`, every segment's in
/// turn: `_rowid` alone, or with `with_vector` every column the index stores. A name
/// no index has, an index that is not a vector index, or a partition past the index's
/// partitions is an [`Error::InvalidArgument`] saying so.
pub fn read_index_partition(
    ds: &Dataset,
    name: &str,
    partition: usize,
    with_vector: bool,
) -> Result<RecordBatch> {
    let metas = crate::index::vector::index_segments(ds, name)?;
    if !metas.iter().all(is_vector_index) {
        return Err(Error::InvalidArgument {
            what: format!("index {name:?} is not a vector index"),
        });
    }
    let mut schema: Option<Arc<Schema>> = None;
    let mut batches = Vec::new();
    for m in metas.iter().filter(|m| !covers_nothing(m)) {
        let uuid = m.uuid.as_ref().map(|u| u.uuid.clone()).unwrap_or_default();
        let label = format!(
            "{} ({})",
            m.name,
            lancer_table::dataset::uuid_dir(&uuid).unwrap_or_default()
        );
        let aux = ds.open_index_file(&uuid, "auxiliary.idx")?;
        let layout = lancer_index::vector::ivf::partition_layout(&aux, &label)?;
        let &(start, len) = layout
            .get(partition)
            .ok_or_else(|| Error::InvalidArgument {
                what: format!(
                    "partition {partition} of index {name:?}, which has {} partitions (0..{})",
                    layout.len(),
                    layout.len()
                ),
            })?;
        let projection: Option<&[&str]> = if with_vector { None } else { Some(&["_rowid"]) };
        let batch = aux
            .read_range(start as u64..(start + len) as u64, projection)
            .map_err(|e| Error::Table(lancer_table::TableError::from(e)))?;
        let metadata: HashMap<String, String> = aux.metadata().schema.metadata.clone();
        let s = Arc::new(Schema::new_with_metadata(
            batch.schema().fields().clone(),
            metadata,
        ));
        let batch = batch.with_schema(s.clone())?;
        let batch = packed_as_pylance_loads(batch, s.metadata().get("storage_metadata"))?;
        if schema.is_none() {
            schema = Some(s);
        }
        batches.push(batch);
    }
    match schema {
        // segments after the first take the first one's schema (same columns; their
        // metadata may differ in the stored quantizer settings)
        Some(s) => {
            let aligned = batches
                .into_iter()
                .map(|b| RecordBatch::try_new(s.clone(), b.columns().to_vec()))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            Ok(arrow_select::concat::concat_batches(&s, &aligned)?)
        }
        None => Ok(RecordBatch::new_empty(Arc::new(Schema::empty()))),
    }
}
