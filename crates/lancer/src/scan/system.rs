//! The system columns a scan may name beside the dataset's own, as pylance 14 offers
//! them (spec: "Row ID and Row Address"): `_rowid` (the stable row id, or the address
//! without stable ids), `_rowaddr` (`fragment id << 32 | physical row`) and
//! `_rowoffset` (the row's position among the version's live rows), in `columns=` at
//! any position; `_rowid` and `_rowaddr` in filters too. A dataset column of the same
//! name wins over the system one.

use std::ops::Range;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use lancer_table::pb::DataFragment;

use super::{ROW_ADDRESS, ROW_ID};
use crate::{Dataset, Error, Result};

/// Name of the row-offset system column (the row's position among live rows).
pub const ROW_OFFSET: &str = "_rowoffset";

/// One system column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum System {
    Id,
    Address,
    Offset,
}

impl System {
    /// The system column `name` names in `schema`, unless the dataset has a column so
    /// named.
    pub(crate) fn named(name: &str, schema: &Schema) -> Option<Self> {
        if schema.field_with_name(name).is_ok() {
            return None;
        }
        match name {
            ROW_ID => Some(Self::Id),
            ROW_ADDRESS => Some(Self::Address),
            ROW_OFFSET => Some(Self::Offset),
            _ => None,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Id => ROW_ID,
            Self::Address => ROW_ADDRESS,
            Self::Offset => ROW_OFFSET,
        }
    }

    pub(crate) fn field(self) -> Field {
        Field::new(self.name(), DataType::UInt64, true)
    }
}

/// `schema` with the system columns filters may name (`_rowid`, `_rowaddr`) appended,
/// those the dataset does not have itself.
pub(crate) fn filter_schema(schema: &Schema) -> Schema {
    let mut fields: Vec<Arc<Field>> = schema.fields().iter().cloned().collect();
    for s in [System::Id, System::Address] {
        if System::named(s.name(), schema).is_some() {
            fields.push(Arc::new(s.field().with_nullable(false)));
        }
    }
    Schema::new(fields).with_metadata(schema.metadata().clone())
}

/// The values of `which` for the physical rows `runs` of fragment `frag`; `offset_base`
/// is the number of live rows in the fragments before it (for `_rowoffset`).
pub(crate) fn values(
    ds: &Dataset,
    which: System,
    frag: &DataFragment,
    runs: &[Range<u64>],
    offset_base: u64,
) -> Result<UInt64Array> {
    let rows = runs.iter().flat_map(|r| r.clone());
    Ok(match which {
        System::Address => rows.map(|row| (frag.id << 32) | row).collect(),
        System::Id => match ds.fragment_row_ids(frag)? {
            Some(ids) => rows
                .map(|row| {
                    usize::try_from(row)
                        .ok()
                        .and_then(|r| ids.get(r).copied())
                        .ok_or_else(|| {
                            Error::Table(lancer_table::TableError::corrupt(format!(
                                "fragment {} has fewer row ids than rows",
                                frag.id
                            )))
                        })
                })
                .collect::<Result<Vec<u64>>>()?
                .into(),
            None => rows.map(|row| (frag.id << 32) | row).collect(),
        },
        System::Offset => {
            let kept = ds.kept_runs(frag)?;
            rows.map(|row| offset_base + kept.rank(row)).collect()
        }
    })
}

/// `batch` (the rows `runs` of fragment `frag`) with the system columns `wanted`
/// appended, for a filter that names them.
pub(crate) fn with_columns(
    ds: &Dataset,
    batch: RecordBatch,
    wanted: &[System],
    frag: &DataFragment,
    runs: &[Range<u64>],
) -> Result<RecordBatch> {
    if wanted.is_empty() {
        return Ok(batch);
    }
    let rows = batch.num_rows();
    let mut fields: Vec<Arc<Field>> = batch.schema().fields().iter().cloned().collect();
    let mut cols = batch.columns().to_vec();
    for &s in wanted {
        fields.push(Arc::new(s.field().with_nullable(false)));
        cols.push(Arc::new(values(ds, s, frag, runs, 0)?) as ArrayRef);
    }
    Ok(RecordBatch::try_new_with_options(
        Arc::new(Schema::new(fields)),
        cols,
        &RecordBatchOptions::new().with_row_count(Some(rows)),
    )?)
}

/// Per fragment of the version (manifest order), the live rows of the fragments before
/// it: where its `_rowoffset`s start.
pub(crate) fn offset_bases(ds: &Dataset) -> Result<Vec<u64>> {
    let mut out = Vec::with_capacity(ds.fragments().len());
    let mut at = 0u64;
    for f in ds.fragments() {
        out.push(at);
        at += ds.kept_runs(f)?.total();
    }
    Ok(out)
}
