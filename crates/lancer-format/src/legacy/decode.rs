//! Decoding legacy pages into Arrow arrays, for any set of row ranges of one batch.
//!
//! Legacy pages have no null bitmaps, so what comes back is what pylance reads back:
//! fixed-width values as stored (zeros where the writer had nulls), lists without
//! list-level nulls, structs without struct-level nulls, and — in nullable
//! variable-width fields only — empty values read as null.

use std::ops::Range;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    ArrowDictionaryKeyType, BinaryType, ByteArrayType, Int16Type, Int32Type, Int64Type, Int8Type,
    LargeBinaryType, LargeUtf8Type, UInt16Type, UInt32Type, UInt64Type, UInt8Type, Utf8Type,
};
use arrow_array::{
    make_array, Array, ArrayRef, BooleanArray, DictionaryArray, FixedSizeListArray,
    GenericByteArray, LargeListArray, ListArray, NullArray, StructArray,
};
use arrow_buffer::{
    ArrowNativeType, BooleanBufferBuilder, Buffer, MutableBuffer, NullBuffer, OffsetBuffer,
    ScalarBuffer,
};
use arrow_data::ArrayDataBuilder;
use arrow_schema::DataType;

use crate::pb;
use crate::read::{check_range, RangeRead};
use crate::schema::LanceField;
use crate::{FormatError, Result};

use super::meta::{Dictionary, LegacyFile, Page};

/// Width of one stored value of a fixed-stride leaf.
#[derive(Clone, Copy)]
enum Width {
    /// Bit-packed booleans.
    Bits,
    /// Whole bytes.
    Bytes(u64),
}

fn overflow() -> FormatError {
    FormatError::corrupt("legacy page arithmetic overflows")
}

/// The innermost type of nested fixed-size lists and the values per row.
fn flatten(dt: &DataType) -> Result<(&DataType, u64)> {
    match dt {
        DataType::FixedSizeList(item, n) => {
            let (leaf, m) = flatten(item.data_type())?;
            let n = u64::try_from(*n).map_err(|_| FormatError::corrupt("negative list size"))?;
            Ok((leaf, m.checked_mul(n).ok_or_else(overflow)?))
        }
        other => Ok((other, 1)),
    }
}

fn width(dt: &DataType) -> Result<Width> {
    match dt {
        DataType::Boolean => Ok(Width::Bits),
        DataType::FixedSizeBinary(w) => u64::try_from(*w)
            .ok()
            .filter(|&w| w > 0)
            .map(Width::Bytes)
            .ok_or_else(|| FormatError::corrupt(format!("fixed_size_binary width {w}"))),
        other => other
            .primitive_width()
            .map(|w| Width::Bytes(w as u64))
            .ok_or_else(|| FormatError::UnsupportedType {
                logical_type: other.to_string(),
                detail: "not a type the legacy format stores (no pylance writer emits it)".into(),
            }),
    }
}

fn check_rows(ranges: &[Range<u64>], available: u64, what: &str) -> Result<()> {
    match ranges.last() {
        Some(r) if r.end > available => Err(FormatError::corrupt(format!(
            "legacy {what} page holds {available} entries, rows up to {} asked",
            r.end
        ))),
        _ => Ok(()),
    }
}

/// `position + index * width`, checked.
fn at(position: u64, index: u64, width: u64) -> Result<u64> {
    index
        .checked_mul(width)
        .and_then(|o| o.checked_add(position))
        .ok_or_else(overflow)
}

fn read(io: &dyn RangeRead, file_size: u64, ranges: &[Range<u64>]) -> Result<Vec<bytes::Bytes>> {
    for r in ranges {
        check_range(r, file_size)?;
    }
    io.read_ranges(ranges)
}

/// Total rows of `ranges`.
fn total(ranges: &[Range<u64>]) -> u64 {
    ranges.iter().map(|r| r.end - r.start).sum()
}

fn to_usize(n: u64) -> Result<usize> {
    usize::try_from(n).map_err(|_| overflow())
}

/// Plain-encoded fixed-stride values (primitives, booleans, fixed-size binary,
/// fixed-size lists of those) of rows `ranges` of `page`.
pub(crate) fn fixed(
    io: &dyn RangeRead,
    file_size: u64,
    dt: &DataType,
    page: Page,
    ranges: &[Range<u64>],
) -> Result<ArrayRef> {
    check_rows(ranges, page.length, "fixed-width")?;
    let (leaf, per_row) = flatten(dt)?;
    let w = width(leaf)?;
    let mut byte_ranges = Vec::with_capacity(ranges.len());
    let mut elems = Vec::with_capacity(ranges.len());
    for r in ranges.iter().filter(|r| r.start < r.end) {
        let s = r.start.checked_mul(per_row).ok_or_else(overflow)?;
        let e = r.end.checked_mul(per_row).ok_or_else(overflow)?;
        let br = match w {
            Width::Bytes(b) => at(page.position, s, b)?..at(page.position, e, b)?,
            Width::Bits => at(page.position, s / 8, 1)?..at(page.position, e.div_ceil(8), 1)?,
        };
        byte_ranges.push(br);
        elems.push(s..e);
    }
    let got = read(io, file_size, &byte_ranges)?;
    let count = to_usize(total(&elems))?;
    let values: ArrayRef = match w {
        Width::Bits => {
            let mut b = BooleanBufferBuilder::new(count);
            for (e, bytes) in elems.iter().zip(&got) {
                let skip = to_usize(e.start % 8)?;
                let n = to_usize(e.end - e.start)?;
                if bytes.len() * 8 < skip + n {
                    return Err(FormatError::corrupt("legacy boolean page is short"));
                }
                b.append_packed_range(skip..skip + n, bytes);
            }
            Arc::new(BooleanArray::new(b.finish(), None))
        }
        Width::Bytes(_) => {
            let size: usize = got.iter().map(|b| b.len()).sum();
            let buf = if got.len() == 1 {
                Buffer::from(got[0].clone())
            } else {
                let mut m = MutableBuffer::with_capacity(size);
                for b in &got {
                    m.extend_from_slice(b);
                }
                m.into()
            };
            make_array(
                ArrayDataBuilder::new(leaf.clone())
                    .len(count)
                    .add_buffer(buf)
                    .align_buffers(true)
                    .build()?,
            )
        }
    };
    wrap_fixed_lists(dt, values)
}

/// Wraps flat leaf values in the fixed-size list layers of `dt`.
fn wrap_fixed_lists(dt: &DataType, values: ArrayRef) -> Result<ArrayRef> {
    match dt {
        DataType::FixedSizeList(item, n) => {
            let inner = wrap_fixed_lists(item.data_type(), values)?;
            Ok(Arc::new(FixedSizeListArray::try_new(
                item.clone(),
                *n,
                inner,
                None,
            )?))
        }
        _ => Ok(values),
    }
}

fn le_i64(b: &[u8]) -> i64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    i64::from_le_bytes(a)
}

/// Variable-width values (`[bytes...][positions: i64 x (n + 1)]`, the page pointing
/// at the positions, which are absolute file offsets) of rows `ranges` of `page`.
pub(crate) fn binary(
    io: &dyn RangeRead,
    file_size: u64,
    dt: &DataType,
    nullable: bool,
    page: Page,
    ranges: &[Range<u64>],
) -> Result<ArrayRef> {
    check_rows(ranges, page.length, "variable-width")?;
    let live: Vec<&Range<u64>> = ranges.iter().filter(|r| r.start < r.end).collect();
    let pos_ranges = live
        .iter()
        .map(|r| Ok(at(page.position, r.start, 8)?..at(page.position, r.end + 1, 8)?))
        .collect::<Result<Vec<_>>>()?;
    let positions = read(io, file_size, &pos_ranges)?;
    let mut data_ranges = Vec::with_capacity(live.len());
    // Grown as positions are read (bounded by the file), never sized by a row count.
    let mut lens: Vec<u64> = Vec::new();
    let mut floor = 0u64;
    for p in &positions {
        let mut prev: Option<u64> = None;
        for c in p.chunks_exact(8) {
            let v = u64::try_from(le_i64(c))
                .ok()
                .filter(|&v| v <= file_size && v >= prev.unwrap_or(floor))
                .ok_or_else(|| {
                    FormatError::corrupt(format!(
                        "legacy value positions are not ascending inside the {file_size}-byte file"
                    ))
                })?;
            if let Some(pv) = prev {
                lens.push(v - pv);
            }
            prev = Some(v);
        }
        let first = p.get(..8).map(le_i64).unwrap_or(0) as u64;
        let last = prev.unwrap_or(first);
        data_ranges.push(first..last);
        floor = last;
    }
    let data = read(io, file_size, &data_ranges)?;
    let size: usize = data.iter().map(|b| b.len()).sum();
    let mut values = MutableBuffer::with_capacity(size);
    for d in &data {
        values.extend_from_slice(d);
    }
    let nulls = nullable
        .then(|| NullBuffer::from_iter(lens.iter().map(|&l| l > 0)))
        .filter(|n| n.null_count() > 0);
    match dt {
        DataType::Utf8 => bytes_array::<Utf8Type>(&lens, values.into(), nulls),
        DataType::LargeUtf8 => bytes_array::<LargeUtf8Type>(&lens, values.into(), nulls),
        DataType::Binary => bytes_array::<BinaryType>(&lens, values.into(), nulls),
        DataType::LargeBinary => bytes_array::<LargeBinaryType>(&lens, values.into(), nulls),
        other => Err(FormatError::UnsupportedType {
            logical_type: other.to_string(),
            detail: "not a variable-width type".into(),
        }),
    }
}

fn bytes_array<T: ByteArrayType>(
    lens: &[u64],
    values: Buffer,
    nulls: Option<NullBuffer>,
) -> Result<ArrayRef> {
    let mut offsets = Vec::with_capacity(lens.len() + 1);
    let mut acc = 0usize;
    offsets.push(T::Offset::usize_as(0));
    for &l in lens {
        acc = acc.checked_add(to_usize(l)?).ok_or_else(overflow)?;
        offsets.push(T::Offset::from_usize(acc).ok_or_else(|| {
            FormatError::corrupt("legacy values exceed 2 GiB in a 32-bit-offset column")
        })?);
    }
    let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
    Ok(Arc::new(GenericByteArray::<T>::try_new(
        offsets, values, nulls,
    )?))
}

/// Loads the values of a dictionary (at `info.offset`, `info.length` values).
pub(crate) fn dictionary_values(
    io: &dyn RangeRead,
    file_size: u64,
    value_type: &DataType,
    info: &pb::file::Dictionary,
) -> Result<Dictionary> {
    let (Ok(position), Ok(length)) = (u64::try_from(info.offset), u64::try_from(info.length))
    else {
        return Err(FormatError::corrupt(format!(
            "legacy dictionary at {} of {} values",
            info.offset, info.length
        )));
    };
    let page = Page { position, length };
    let all = std::slice::from_ref(&(0..length)).to_vec();
    Ok(match value_type {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary => {
            // Empty dictionary values load as null, as in pylance.
            Dictionary::Values(binary(io, file_size, value_type, true, page, &all)?)
        }
        dt if dt.is_integer() => Dictionary::Values(fixed(io, file_size, dt, page, &all)?),
        other => Dictionary::Unsupported(other.clone()),
    })
}

fn dict_array<K: ArrowDictionaryKeyType>(keys: &ArrayRef, values: &ArrayRef) -> Result<ArrayRef> {
    let keys = keys
        .as_primitive_opt::<K>()
        .ok_or_else(|| FormatError::corrupt("dictionary keys of the wrong type"))?
        .clone();
    Ok(Arc::new(DictionaryArray::<K>::try_new(
        keys,
        values.clone(),
    )?))
}

/// Merges touching ranges and drops empty ones.
fn compact(ranges: Vec<Range<u64>>) -> Vec<Range<u64>> {
    let mut out: Vec<Range<u64>> = Vec::with_capacity(ranges.len());
    for r in ranges.into_iter().filter(|r| r.start < r.end) {
        match out.last_mut() {
            Some(l) if l.end == r.start => l.end = r.end,
            _ => out.push(r),
        }
    }
    out
}

/// Decodes one batch of one file.
pub(crate) struct BatchDecoder<'a> {
    pub(crate) io: &'a dyn RangeRead,
    pub(crate) file: &'a LegacyFile,
    pub(crate) batch: usize,
}

impl BatchDecoder<'_> {
    /// Entries `ranges` (rows for top-level fields, items inside lists) of `field`.
    pub(crate) fn field(&self, field: &LanceField, ranges: &[Range<u64>]) -> Result<ArrayRef> {
        let file_size = self.file.file_size;
        let dt = &field.data_type;
        match dt {
            DataType::Null => {
                let page = self.file.page(field.id, self.batch)?;
                check_rows(ranges, page.length, "null")?;
                Ok(Arc::new(NullArray::new(to_usize(total(ranges))?)))
            }
            DataType::Struct(children) => {
                let n = to_usize(total(ranges))?;
                if children.is_empty() {
                    return Ok(Arc::new(StructArray::new_empty_fields(n, None)));
                }
                let arrays = field
                    .children
                    .iter()
                    .map(|c| self.field(c, ranges))
                    .collect::<Result<Vec<_>>>()?;
                Ok(Arc::new(StructArray::try_new(
                    children.clone(),
                    arrays,
                    None,
                )?))
            }
            DataType::List(item) | DataType::LargeList(item) => {
                let large = matches!(dt, DataType::LargeList(_));
                let child = field
                    .children
                    .first()
                    .ok_or_else(|| FormatError::corrupt("list field without child"))?;
                let page = self.file.page(field.id, self.batch)?;
                // The page holds rows + 1 offsets.
                if ranges.last().is_some_and(|r| r.end >= page.length) {
                    return Err(FormatError::corrupt(format!(
                        "legacy list page holds {} offsets, rows up to {} asked",
                        page.length,
                        ranges.last().map_or(0, |r| r.end)
                    )));
                }
                let w: u64 = if large { 8 } else { 4 };
                let live: Vec<&Range<u64>> = ranges.iter().filter(|r| r.start < r.end).collect();
                let off_ranges = live
                    .iter()
                    .map(|r| Ok(at(page.position, r.start, w)?..at(page.position, r.end + 1, w)?))
                    .collect::<Result<Vec<_>>>()?;
                let got = read(self.io, file_size, &off_ranges)?;
                let mut out: Vec<i64> = vec![0];
                let mut child_ranges = Vec::with_capacity(live.len());
                let mut floor = 0i64;
                for b in &got {
                    let vals: Vec<i64> = if large {
                        b.chunks_exact(8).map(le_i64).collect()
                    } else {
                        b.chunks_exact(4)
                            .map(|c| i64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]])))
                            .collect()
                    };
                    let first = vals.first().copied().unwrap_or(0);
                    if first < floor || vals.windows(2).any(|p| p[1] < p[0]) {
                        return Err(FormatError::corrupt(
                            "legacy list offsets are not ascending",
                        ));
                    }
                    let base = out.last().copied().unwrap_or(0);
                    out.extend(vals.iter().skip(1).map(|v| v - first + base));
                    let last = vals.last().copied().unwrap_or(first);
                    child_ranges.push(first as u64..last as u64);
                    floor = last;
                }
                let child_ranges = compact(child_ranges);
                let values = self.field(child, &child_ranges)?;
                if large {
                    Ok(Arc::new(LargeListArray::try_new(
                        item.clone(),
                        OffsetBuffer::new(ScalarBuffer::from(out)),
                        values,
                        None,
                    )?))
                } else {
                    let o32 = out
                        .iter()
                        .map(|&o| i32::try_from(o))
                        .collect::<std::result::Result<Vec<_>, _>>()
                        .map_err(|_| FormatError::corrupt("list over 2^31 items"))?;
                    Ok(Arc::new(ListArray::try_new(
                        item.clone(),
                        OffsetBuffer::new(ScalarBuffer::from(o32)),
                        values,
                        None,
                    )?))
                }
            }
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary => {
                let page = self.file.page(field.id, self.batch)?;
                binary(self.io, file_size, dt, field.nullable, page, ranges)
            }
            DataType::Dictionary(key, _) => {
                let values = match self.file.dictionaries.get(&field.id) {
                    Some(Dictionary::Values(v)) => v,
                    Some(Dictionary::Unsupported(t)) => {
                        return Err(FormatError::UnsupportedType {
                            logical_type: field.logical_type.clone(),
                            detail: format!(
                                "legacy dictionaries hold integers or strings/binary, not {t} \
                                 (pylance refuses to read this too); rewrite the column without \
                                 dictionary encoding"
                            ),
                        })
                    }
                    None => {
                        return Err(FormatError::corrupt(format!(
                            "legacy dictionary field {:?} has no dictionary",
                            field.name
                        )))
                    }
                };
                let page = self.file.page(field.id, self.batch)?;
                let keys = fixed(self.io, file_size, key, page, ranges)?;
                match key.as_ref() {
                    DataType::Int8 => dict_array::<Int8Type>(&keys, values),
                    DataType::Int16 => dict_array::<Int16Type>(&keys, values),
                    DataType::Int32 => dict_array::<Int32Type>(&keys, values),
                    DataType::Int64 => dict_array::<Int64Type>(&keys, values),
                    DataType::UInt8 => dict_array::<UInt8Type>(&keys, values),
                    DataType::UInt16 => dict_array::<UInt16Type>(&keys, values),
                    DataType::UInt32 => dict_array::<UInt32Type>(&keys, values),
                    DataType::UInt64 => dict_array::<UInt64Type>(&keys, values),
                    other => Err(FormatError::UnsupportedType {
                        logical_type: field.logical_type.clone(),
                        detail: format!("dictionary key type {other}"),
                    }),
                }
            }
            DataType::Map(_, _) => Err(FormatError::UnsupportedType {
                logical_type: field.logical_type.clone(),
                detail: "maps are not stored in legacy files (pylance refuses to write them)"
                    .into(),
            }),
            _ => {
                let page = self.file.page(field.id, self.batch)?;
                fixed(self.io, file_size, dt, page, ranges)
            }
        }
    }
}

/// The parts of `ranges` inside rows `start..end`, relative to `start`.
pub(crate) fn local(ranges: &[Range<u64>], start: u64, end: u64) -> Vec<Range<u64>> {
    ranges
        .iter()
        .filter(|r| r.start < end && r.end > start)
        .map(|r| r.start.max(start) - start..r.end.min(end) - start)
        .collect()
}

impl LegacyFile {
    /// Reads rows `ranges` (sorted, non-overlapping, inside the file) of top-level
    /// field `index`.
    pub fn read_field(
        &self,
        io: &dyn RangeRead,
        index: usize,
        ranges: &[Range<u64>],
    ) -> Result<ArrayRef> {
        let field = self
            .schema
            .fields
            .get(index)
            .ok_or_else(|| FormatError::OutOfRange {
                what: format!("field {index} of a legacy file"),
            })?;
        let mut parts = Vec::new();
        for batch in 0..self.num_batches() {
            let rows = self.batch_rows(batch);
            let l = local(ranges, rows.start, rows.end);
            if l.is_empty() {
                continue;
            }
            let d = BatchDecoder {
                io,
                file: self,
                batch,
            };
            parts.push(d.field(field, &l)?);
        }
        match parts.len() {
            0 => Ok(arrow_array::new_empty_array(&field.data_type)),
            1 => Ok(parts.swap_remove(0)),
            _ => {
                let refs: Vec<&dyn Array> = parts.iter().map(|p| p.as_ref()).collect();
                Ok(arrow_select::concat::concat(&refs)?)
            }
        }
    }
}
