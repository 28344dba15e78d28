//! Vector columns of a shuffled block written to their permuted rows as each piece of
//! the block is read.
//!
//! A block is a shuffle buffer of rows (65,536 by default: 196 MiB of 768-d float32
//! vectors), read as pieces (one per fragment run) and then permuted. Read locally,
//! a vector column is a view of the data file's mapped pages, and the storage layer
//! hands mapped pages back every few MiB read (`lancer_io::MmapFile`): by the time a
//! whole block was read, the pages of its first pieces were gone, and permuting the
//! block faulted every row in again (measured: 394k rows/s at a 65,536-row buffer,
//! 887k at 16,384). Scattering each piece's rows straight into the permuted output
//! while its pages are resident reads every vector once, and needs no concatenated
//! copy of the block either. Other columns (ids, text) are permuted afterwards as
//! before; the order is the same either way.

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, FixedSizeListArray};
use arrow_buffer::{BooleanBufferBuilder, MutableBuffer, NullBuffer};
use arrow_data::ArrayData;
use arrow_schema::{DataType, FieldRef};

use crate::Result;

/// The largest vector column of one block allocated before reading (16 GiB).
const MAX_BLOCK_BYTES: usize = 16 << 30;

/// One vector column's permuted output, filled piece by piece.
pub(crate) struct Scatter {
    field: FieldRef,
    size: i32,
    /// Bytes of one value and of one row.
    width: usize,
    row: usize,
    out: MutableBuffer,
    /// Validity of the output rows, made when the first null row arrives.
    nulls: Option<BooleanBufferBuilder>,
    rows: usize,
}

impl Scatter {
    /// An output for a column of type `dt` and `rows` rows, when the column is a
    /// fixed-size list of fixed-width values (embeddings); `None` for other columns.
    pub(crate) fn new(dt: &DataType, rows: usize) -> Option<Scatter> {
        let DataType::FixedSizeList(field, size) = dt else {
            return None;
        };
        let width = field.data_type().primitive_width()?;
        let row = width.checked_mul(usize::try_from(*size).ok()?)?;
        // zero-width rows, or a block too large to allocate up front (the schema alone
        // decides the size here, before any data is read): the plain path
        let total = row.checked_mul(rows).filter(|&t| t <= MAX_BLOCK_BYTES)?;
        if row == 0 {
            return None;
        }
        Some(Scatter {
            field: field.clone(),
            size: *size,
            width,
            row,
            out: MutableBuffer::from_len_zeroed(total),
            nulls: None,
            rows,
        })
    }

    /// Writes the rows of `piece` (rows `first..` of the block) to their places
    /// `inv[first + r]`. `false` (nothing written) when the piece is not a null-free
    /// list of values of the expected width: the caller reads the block the plain way.
    pub(crate) fn put(&mut self, piece: &ArrayRef, first: usize, inv: &[u32]) -> bool {
        let Some(fsl) = piece.as_any().downcast_ref::<FixedSizeListArray>() else {
            return false;
        };
        let values = fsl.values();
        if values.null_count() != 0
            || fsl.value_length() != self.size
            || values.data_type() != self.field.data_type()
        {
            return false;
        }
        let child = values.to_data();
        let Some(buf) = child.buffers().first() else {
            return false;
        };
        let bytes = buf.as_slice();
        let width = self.width;
        let base = child.offset() * width;
        let Some(dests) = inv.get(first..first + fsl.len()) else {
            return false;
        };
        let out = self.out.as_slice_mut();
        for (r, &d) in dests.iter().enumerate() {
            let d = d as usize;
            if fsl.is_null(r) {
                let rows = self.rows;
                let nulls = self.nulls.get_or_insert_with(|| {
                    let mut b = BooleanBufferBuilder::new(rows);
                    b.append_n(rows, true);
                    b
                });
                nulls.set_bit(d, false);
                continue;
            }
            let Ok(off) = usize::try_from(fsl.value_offset(r)) else {
                return false;
            };
            let start = base + off * width;
            let (Some(src), Some(dst)) = (
                bytes.get(start..start + self.row),
                out.get_mut(d * self.row..(d + 1) * self.row),
            ) else {
                return false;
            };
            dst.copy_from_slice(src);
        }
        true
    }

    /// The permuted column.
    pub(crate) fn finish(self) -> Result<ArrayRef> {
        let len = self.rows * usize::try_from(self.size).unwrap_or(0);
        let values = arrow_array::make_array(
            ArrayData::builder(self.field.data_type().clone())
                .len(len)
                .add_buffer(self.out.into())
                .build()?,
        );
        let nulls = self.nulls.map(|mut b| NullBuffer::new(b.finish()));
        Ok(Arc::new(FixedSizeListArray::try_new(
            self.field, self.size, values, nulls,
        )?))
    }
}

/// The inverse of a permutation: `inv[order[j]] = j`.
pub(crate) fn inverse(order: &[u32]) -> Vec<u32> {
    let mut inv = vec![0u32; order.len()];
    for (j, &i) in order.iter().enumerate() {
        if let Some(slot) = inv.get_mut(i as usize) {
            *slot = j as u32;
        }
    }
    inv
}
