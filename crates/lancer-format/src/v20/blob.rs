//! 2.0 blob columns (column encoding `Blob`): the pages hold one description per row,
//! a packed struct of (position, size) in the file; the values are read from there.
//! A null is described as (1, 0) and an empty value as (0, 0).

use std::ops::Range;

use arrow_array::{Array, ArrayRef, StructArray, UInt64Array};
use arrow_buffer::{BooleanBufferBuilder, Buffer, MutableBuffer, NullBuffer};
use arrow_schema::{DataType, Field};

use super::{read_column, Ctx};
use crate::block::{to_arrow, DataBlock, Offsets};
use crate::container::ColumnInfo;
use crate::pb::enc20::column_encoding::ColumnEncoding as CE;
use crate::schema::LanceField;
use crate::{FormatError, Result};

/// True if the column's encoding says it holds blob descriptions.
pub(crate) fn is_blob_column(col: &ColumnInfo) -> bool {
    let mut enc = col
        .encoding
        .as_ref()
        .and_then(|e| e.column_encoding.as_ref());
    // A zone index wraps the encoding of the values.
    while let Some(CE::ZoneIndex(z)) = enc {
        enc = z.inner.as_deref().and_then(|e| e.column_encoding.as_ref());
    }
    matches!(enc, Some(CE::Blob(_)))
}

fn description_type() -> DataType {
    DataType::Struct(
        vec![
            Field::new("position", DataType::UInt64, false),
            Field::new("size", DataType::UInt64, false),
        ]
        .into(),
    )
}

/// Reads `ranges` of blob field `f` stored in `column`.
pub(crate) fn read(
    ctx: &Ctx<'_>,
    f: &LanceField,
    column: usize,
    ranges: &[Range<u64>],
) -> Result<ArrayRef> {
    let what = format!("blob field {:?}", f.name);
    let desc = read_column(ctx, column, &f.name, ranges, &description_type())?;
    let desc = desc
        .as_any()
        .downcast_ref::<StructArray>()
        .ok_or_else(|| FormatError::corrupt(format!("{what}: descriptions are not a struct")))?;
    let col = |i: usize| -> Result<&UInt64Array> {
        desc.columns()
            .get(i)
            .and_then(|c| c.as_any().downcast_ref::<UInt64Array>())
            .ok_or_else(|| FormatError::corrupt(format!("{what}: descriptions are not u64 pairs")))
    };
    if ctx.blobs == crate::blob_read::BlobRead::Descriptions {
        return crate::blob_read::describe_v20(desc);
    }
    let (pos, size) = (col(0)?, col(1)?);
    let file_size = ctx.meta.file_size;
    let mut wanted = Vec::new();
    let mut validity = BooleanBufferBuilder::new(pos.len());
    for (&p, &s) in pos.values().iter().zip(size.values()) {
        validity.append(!(p == 1 && s == 0));
        if s > 0 {
            let end = p
                .checked_add(s)
                .filter(|&e| e <= file_size)
                .ok_or_else(|| {
                    FormatError::corrupt(format!(
                        "{what}: value at {p}+{s} lies outside the {file_size}-byte file"
                    ))
                })?;
            wanted.push(p..end);
        }
    }
    let got = ctx.io.read_ranges(&wanted)?;
    if got.len() != wanted.len() {
        return Err(FormatError::corrupt(format!(
            "{what}: blob reads came back short"
        )));
    }
    let mut offsets = Vec::with_capacity(pos.len() + 1);
    offsets.push(0u64);
    let mut data = MutableBuffer::with_capacity(got.iter().map(|b| b.len()).sum());
    let mut got = got.iter();
    for &s in size.values() {
        if s > 0 {
            let b = got.next().ok_or_else(|| {
                FormatError::corrupt(format!("{what}: blob reads came back short"))
            })?;
            data.extend_from_slice(b);
        }
        offsets.push(data.len() as u64);
    }
    let block = DataBlock::Variable {
        offsets: Offsets::U64(offsets),
        data: Buffer::from(data),
    };
    let nulls = Some(NullBuffer::new(validity.finish())).filter(|n| n.null_count() > 0);
    to_arrow(block, &f.data_type, nulls)
}
