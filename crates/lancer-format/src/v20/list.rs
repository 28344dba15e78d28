//! 2.0 list columns: each page of the offsets column is encoded `List`, wrapping the
//! encoding of its rows' end offsets. Offsets are relative to the page (its first list
//! starts at item 0 of the page), `null_offset_adjustment` marks null lists and
//! `num_items` says how many items the page's lists hold, so the items of page `p`
//! start at the sum of `num_items` of the pages before it in the item column(s) that
//! follow.

use std::ops::Range;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, LargeListArray, ListArray};
use arrow_buffer::{BooleanBufferBuilder, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::DataType;

use super::decode::child;
use super::offsets::spans;
use super::page::{local_ranges, push_merged, total, PageCtx};
use super::{read_node, Ctx};
use crate::container::PageEncoding;
use crate::pb::enc20::array_encoding::ArrayEncoding as E;
use crate::schema::LanceField;
use crate::{FormatError, Result};

/// Reads `ranges` of list field `f`, whose offsets column is `column`.
pub(crate) fn read(
    ctx: &Ctx<'_>,
    f: &LanceField,
    column: usize,
    ranges: &[Range<u64>],
) -> Result<ArrayRef> {
    let item = f.children.first().ok_or_else(|| {
        FormatError::corrupt(format!("list field {:?} has no item field", f.name))
    })?;
    let col = ctx.column(column, &f.name)?;
    let n = total(ranges) as usize;
    let mut offsets: Vec<i64> = Vec::with_capacity(n + 1);
    offsets.push(0);
    let mut validity = BooleanBufferBuilder::new(n);
    let mut item_ranges: Vec<Range<u64>> = Vec::new();
    let (mut start, mut items_base) = (0u64, 0u64);
    for (p, page) in col.pages.iter().enumerate() {
        let what = format!("list {:?} column {column} page {p}", f.name);
        let PageEncoding::V20(enc) = &page.encoding else {
            return Err(FormatError::corrupt(format!(
                "{what}: 2.1 page layout in a 2.0 file"
            )));
        };
        let Some(E::List(l)) = &enc.array_encoding else {
            return Err(FormatError::corrupt(format!(
                "{what}: expected a List page, found {}",
                enc.array_encoding
                    .as_ref()
                    .map(super::decode::name)
                    .unwrap_or("an unknown encoding")
            )));
        };
        let end = start
            .checked_add(page.num_rows)
            .ok_or_else(|| FormatError::corrupt(format!("{what}: row counts overflow")))?;
        let local = local_ranges(ranges, start, end);
        start = end;
        if !local.is_empty() {
            let pctx = PageCtx {
                io: ctx.io,
                page: &page.buffers,
                column: &col.buffers,
                file: &ctx.meta.global_buffers,
                file_size: ctx.meta.file_size,
            };
            let s = spans(
                child(&l.offsets, "list offsets")?,
                &pctx,
                &local,
                l.null_offset_adjustment,
                Some(l.num_items),
                &what,
            )?;
            let base = *offsets.last().unwrap_or(&0);
            for &o in s.offsets.iter().skip(1) {
                let o = i64::try_from(o)
                    .ok()
                    .and_then(|o| o.checked_add(base))
                    .ok_or_else(|| FormatError::corrupt(format!("{what}: too many items")))?;
                offsets.push(o);
            }
            validity.append_buffer(&s.validity);
            for r in s.sources {
                let shifted = items_base
                    .checked_add(r.start)
                    .zip(items_base.checked_add(r.end))
                    .ok_or_else(|| {
                        FormatError::corrupt(format!("{what}: item positions overflow"))
                    })?;
                push_merged(&mut item_ranges, shifted.0..shifted.1);
            }
        }
        items_base = items_base
            .checked_add(l.num_items)
            .ok_or_else(|| FormatError::corrupt(format!("{what}: item counts overflow")))?;
    }
    if offsets.len() != n + 1 {
        return Err(FormatError::corrupt(format!(
            "list {:?}: column {column} has {start} rows, rows up to {} were asked for",
            f.name,
            ranges.last().map(|r| r.end).unwrap_or(0)
        )));
    }
    let values = read_node(ctx, item, column + 1, &item_ranges)?;
    let num_items = offsets.last().copied().unwrap_or(0);
    if values.len() as i64 != num_items {
        return Err(FormatError::corrupt(format!(
            "list {:?}: offsets need {num_items} items, {} decoded",
            f.name,
            values.len()
        )));
    }
    let nulls = Some(NullBuffer::new(validity.finish())).filter(|v| v.null_count() > 0);
    // (items read as blob descriptions change the item field's type)
    let retyped = |field: &arrow_schema::FieldRef| {
        if field.data_type() == values.data_type() {
            return field.clone();
        }
        Arc::new(
            field
                .as_ref()
                .clone()
                .with_data_type(values.data_type().clone()),
        )
    };
    match &f.data_type {
        DataType::List(field) => {
            let field = retyped(field);
            let o32 = offsets
                .iter()
                .map(|&o| i32::try_from(o))
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(|_| FormatError::corrupt(format!("list {:?}: over 2^31 items", f.name)))?;
            Ok(Arc::new(ListArray::try_new(
                field,
                OffsetBuffer::new(ScalarBuffer::from(o32)),
                values,
                nulls,
            )?))
        }
        DataType::LargeList(field) => Ok(Arc::new(LargeListArray::try_new(
            retyped(field),
            OffsetBuffer::new(ScalarBuffer::from(offsets)),
            values,
            nulls,
        )?)),
        other => Err(FormatError::corrupt(format!(
            "list reader called for a {other} field"
        ))),
    }
}
