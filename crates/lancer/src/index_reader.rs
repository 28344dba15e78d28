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
use lancer_format::reader::FileReader;
use lancer_index::ivf::{covers_nothing, is_vector_index};
use lancer_index::pb;
use prost::Message;

use crate::{Dataset, Error, Result};

/// The partition layout of one segment's auxiliary file: each partition's first row
/// and row count.
fn partition_layout(aux: &FileReader, label: &str) -> Result<Vec<(u64, u64)>> {
    let corrupt = |what: String| {
        Error::Index(lancer_index::IndexError::Corrupt {
            index: label.to_string(),
            what,
        })
    };
    let pos = aux
        .metadata()
        .schema
        .metadata
        .get("lance:ivf")
        .ok_or_else(|| corrupt("auxiliary.idx has no lance:ivf key".into()))?;
    let i: usize = pos
        .trim()
        .parse()
        .map_err(|_| corrupt(format!("lance:ivf position {pos:?}")))?;
    let range = aux
        .metadata()
        .global_buffers
        .get(i)
        .cloned()
        .ok_or_else(|| corrupt(format!("global buffer {i} missing")))?;
    if range.end < range.start || range.end > aux.metadata().file_size {
        return Err(corrupt(format!("global buffer {i} past the file's end")));
    }
    let bytes = aux
        .io()
        .read_range(range)
        .map_err(|e| Error::Table(lancer_table::TableError::from(e)))?;
    let ivf = pb::Ivf::decode(bytes.as_ref()).map_err(|e| corrupt(format!("IVF message: {e}")))?;
    if ivf.offsets.len() != ivf.lengths.len() {
        return Err(corrupt(format!(
            "{} partition offsets but {} lengths",
            ivf.offsets.len(),
            ivf.lengths.len()
        )));
    }
    let rows = aux.num_rows();
    ivf.offsets
        .iter()
        .zip(&ivf.lengths)
        .map(|(&o, &l)| match o.checked_add(u64::from(l)) {
            Some(end) if end <= rows => Ok((o, u64::from(l))),
            _ => Err(corrupt(format!("partition rows {o}+{l} past {rows} rows"))),
        })
        .collect()
}

/// The order of a packed block's rows within each half (format facts: the layout
/// pylance's RabitQ storage packs 32 rows' sign codes into).
const PERM0: [usize; 16] = [0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15];

/// `codes` (one partition's rows, `l` bytes each, row-major) in the packed layout:
/// complete 32-row blocks nibble-interleaved, the tail rows column-major.
fn pack_rabit_codes(codes: &[u8], l: usize) -> Vec<u8> {
    let n = codes.len() / l.max(1);
    let blocks = n / 32;
    let mut out = vec![0u8; codes.len()];
    for k in 0..blocks {
        for i in 0..l {
            let base = 32 * l * k + 32 * i;
            for (j, &p) in PERM0.iter().enumerate() {
                let (r0, r1) = (32 * k + p, 32 * k + p + 16);
                let (a, b) = (codes[r0 * l + i], codes[r1 * l + i]);
                out[base + j] = (a & 15) | ((b & 15) << 4);
                out[base + 16 + j] = (a >> 4) | ((b >> 4) << 4);
            }
        }
    }
    let tail = n - 32 * blocks;
    let t0 = 32 * blocks * l;
    for i in 0..l {
        for r in 0..tail {
            out[t0 + i * tail + r] = codes[(32 * blocks + r) * l + i];
        }
    }
    out
}

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
    let packed = UInt8Array::from(pack_rabit_codes(codes, l));
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
    let metas = crate::index::index_segments(ds, name)?;
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
        let layout = partition_layout(&aux, &label)?;
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
            .read_range(start..start + len, projection)
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
