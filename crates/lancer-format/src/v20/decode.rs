//! Decoding one 2.0 page: walks the `ArrayEncoding` tree for some page-local row
//! ranges and yields their values. Structure-free encodings live here (`Nullable`,
//! `FixedSizeList`, `PackedStruct`, `Constant`); the others are in `values` and
//! `binary`.

use std::ops::Range;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, FixedSizeListArray};
use arrow_buffer::{BooleanBuffer, Buffer, MutableBuffer, NullBuffer};
use arrow_schema::DataType;

use super::page::{scale, total, PageCtx};
use super::{binary, values};
use crate::block::{fixed_width_bits, to_arrow, with_nulls, DataBlock};
use crate::pb::enc20::array_encoding::ArrayEncoding as E;
use crate::pb::enc20::nullable::Nullability;
use crate::pb::enc20::{self, ArrayEncoding};
use crate::{FormatError, Result};

/// Decoded rows of a page.
pub(crate) enum Out {
    /// Values and their validity (`None`: all valid).
    Block(DataBlock, Option<BooleanBuffer>),
    /// An Arrow array (dictionaries).
    Array(ArrayRef),
}

impl Out {
    /// Number of rows.
    pub fn len(&self) -> u64 {
        match self {
            Self::Block(b, _) => b.num_values(),
            Self::Array(a) => a.len() as u64,
        }
    }

    /// The rows as an Arrow array of type `dt`.
    pub fn into_array(self, dt: &DataType) -> Result<ArrayRef> {
        match self {
            Self::Block(b @ DataBlock::AllNull { .. }, _) => {
                // No value is valid; to_arrow takes validity from the caller.
                let n = usize::try_from(b.num_values())
                    .map_err(|_| FormatError::corrupt("too many null values"))?;
                to_arrow(b, dt, Some(NullBuffer::new_null(n)))
            }
            Self::Block(b, v) => {
                let nulls = v.map(NullBuffer::new).filter(|n| n.null_count() > 0);
                to_arrow(b, dt, nulls)
            }
            Self::Array(a) if a.data_type() == dt => Ok(a),
            Self::Array(a) => Err(FormatError::corrupt(format!(
                "page decoded to {} where {dt} was expected",
                a.data_type()
            ))),
        }
    }

    /// Marks rows invalid where `validity` is unset (keeping existing nulls).
    fn and_validity(self, validity: BooleanBuffer) -> Result<Self> {
        if validity.len() as u64 != self.len() {
            return Err(FormatError::corrupt(format!(
                "validity has {} entries for {} values",
                validity.len(),
                self.len()
            )));
        }
        Ok(match self {
            Self::Block(b, None) => Self::Block(b, Some(validity)),
            Self::Block(b, Some(v)) => Self::Block(b, Some(&v & &validity)),
            Self::Array(a) => {
                let nulls =
                    NullBuffer::union(a.logical_nulls().as_ref(), Some(&NullBuffer::new(validity)));
                Self::Array(with_nulls(a, nulls)?)
            }
        })
    }
}

/// Takes a required child encoding.
pub(crate) fn child<'a>(
    e: &'a Option<Box<ArrayEncoding>>,
    what: &str,
) -> Result<&'a ArrayEncoding> {
    e.as_deref()
        .ok_or_else(|| FormatError::corrupt(format!("{what} encoding missing")))
}

/// Name of an encoding variant, for messages.
pub(crate) fn name(e: &E) -> &'static str {
    match e {
        E::Flat(_) => "Flat",
        E::Nullable(_) => "Nullable",
        E::FixedSizeList(_) => "FixedSizeList",
        E::List(_) => "List",
        E::Struct(_) => "SimpleStruct",
        E::Binary(_) => "Binary",
        E::Dictionary(_) => "Dictionary",
        E::Fsst(_) => "Fsst",
        E::PackedStruct(_) => "PackedStruct",
        E::Bitpacked(_) => "Bitpacked",
        E::FixedSizeBinary(_) => "FixedSizeBinary",
        E::BitpackedForNonNeg(_) => "BitpackedForNonNeg",
        E::Constant(_) => "Constant",
        E::InlineBitpacking(_) => "InlineBitpacking",
        E::OutOfLineBitpacking(_) => "OutOfLineBitpacking",
        E::Variable(_) => "Variable",
        E::PackedStructFixedWidthMiniBlock(_) => "PackedStructFixedWidthMiniBlock",
        E::Block(_) => "Block",
        E::Rle(_) => "Rle",
        E::GeneralMiniBlock(_) => "GeneralMiniBlock",
        E::ByteStreamSplit(_) => "ByteStreamSplit",
    }
}

/// Decodes the rows in `ranges` (page-local, sorted, non-overlapping) of a page
/// encoded by `enc`, as values of type `dt`.
pub(crate) fn decode(
    enc: &ArrayEncoding,
    ctx: &PageCtx<'_>,
    ranges: &[Range<u64>],
    dt: &DataType,
) -> Result<Out> {
    let n = total(ranges);
    let block = |b: DataBlock| Out::Block(b, None);
    let e = enc.array_encoding.as_ref().ok_or_else(|| {
        FormatError::unsupported(
            "ArrayEncoding",
            "page encoding missing or of a kind unknown to this Lancer (a newer format?)",
        )
    })?;
    match e {
        E::Nullable(nl) => match &nl.nullability {
            Some(Nullability::NoNulls(x)) => decode(child(&x.values, "non-null values")?, ctx, ranges, dt),
            Some(Nullability::SomeNulls(s)) => {
                let validity = bits(child(&s.validity, "validity")?, ctx, ranges)?;
                decode(child(&s.values, "nullable values")?, ctx, ranges, dt)?.and_validity(validity)
            }
            Some(Nullability::AllNulls(_)) => Ok(block(DataBlock::AllNull { num_values: n })),
            None => Err(FormatError::corrupt("Nullable encoding without nullability")),
        },
        E::Flat(f) => values::flat(f, ctx, ranges).map(block),
        E::Bitpacked(b) => values::bitpacked(b, ctx, ranges).map(block),
        E::BitpackedForNonNeg(b) => values::bitpacked_non_neg(b, ctx, ranges).map(block),
        E::Constant(c) => Ok(block(DataBlock::Constant {
            value: Buffer::from_slice_ref(&c.value),
            num_values: n,
        })),
        E::FixedSizeList(l) => fixed_size_list(l, ctx, ranges, dt),
        E::PackedStruct(p) => packed_struct(p, ctx, ranges, dt).map(block),
        E::Binary(b) => binary::binary(b, ctx, ranges),
        E::Fsst(f) => binary::fsst(f, ctx, ranges),
        E::FixedSizeBinary(f) => binary::fixed_size_binary(f, ctx, ranges, dt),
        E::Dictionary(d) => binary::dictionary(d, ctx, ranges, dt),
        E::List(_) | E::Struct(_) => Err(FormatError::corrupt(format!(
            "{} encoding inside the values of a page (lists and structs have columns of their own in 2.0)",
            name(e)
        ))),
        other => Err(FormatError::unsupported(
            name(other),
            "not a 2.0 page encoding (2.1 compression inside a 2.0 file?)",
        )),
    }
}

/// Decodes a validity bitmap for `ranges`.
fn bits(enc: &ArrayEncoding, ctx: &PageCtx<'_>, ranges: &[Range<u64>]) -> Result<BooleanBuffer> {
    let n = total(ranges);
    match decode(enc, ctx, ranges, &DataType::Boolean)? {
        Out::Block(
            DataBlock::Fixed {
                bits_per_value: 1,
                data,
                num_values,
            },
            None,
        ) if num_values == n => {
            if (data.len() as u64) * 8 < n {
                return Err(FormatError::corrupt("validity bitmap too short"));
            }
            Ok(BooleanBuffer::new(data, 0, n as usize))
        }
        Out::Block(DataBlock::Constant { value, num_values }, None) if num_values == n => {
            let set = value.as_slice().first().is_some_and(|b| b & 1 == 1);
            Ok(if set {
                BooleanBuffer::new_set(n as usize)
            } else {
                BooleanBuffer::new_unset(n as usize)
            })
        }
        _ => Err(FormatError::corrupt("validity is not a non-null bitmap")),
    }
}

/// `FixedSizeList`: `dimension` items per row, stored as the items of all rows.
fn fixed_size_list(
    l: &enc20::FixedSizeList,
    ctx: &PageCtx<'_>,
    ranges: &[Range<u64>],
    dt: &DataType,
) -> Result<Out> {
    let DataType::FixedSizeList(item, size) = dt else {
        return Err(FormatError::corrupt(format!(
            "FixedSizeList encoding for a {dt} column"
        )));
    };
    let dim = u64::from(l.dimension);
    if dim == 0 || i64::from(*size) != dim as i64 {
        return Err(FormatError::corrupt(format!(
            "FixedSizeList encoding of dimension {dim} for a {dt} column"
        )));
    }
    let items = scale(ranges, dim, "fixed-size list items")?;
    match decode(
        child(&l.items, "fixed-size list items")?,
        ctx,
        &items,
        item.data_type(),
    )? {
        Out::Block(b, v) => {
            // All-null items carry no bitmap: their validity is all unset.
            let v = match (&b, v) {
                (DataBlock::AllNull { num_values }, None) => {
                    let n = usize::try_from(*num_values)
                        .map_err(|_| FormatError::corrupt("too many fixed-size list items"))?;
                    Some(BooleanBuffer::new_unset(n))
                }
                (_, v) => v,
            };
            Ok(Out::Block(
                DataBlock::FixedSizeList {
                    dim,
                    child: Box::new(b),
                    validity: v,
                },
                None,
            ))
        }
        Out::Array(a) => Ok(Out::Array(Arc::new(FixedSizeListArray::try_new(
            item.clone(),
            *size,
            a,
            None,
        )?))),
    }
}

/// `PackedStruct`: rows of fixed-width fields stored side by side in one buffer.
fn packed_struct(
    p: &enc20::PackedStruct,
    ctx: &PageCtx<'_>,
    ranges: &[Range<u64>],
    dt: &DataType,
) -> Result<DataBlock> {
    let DataType::Struct(fields) = dt else {
        return Err(FormatError::corrupt(format!(
            "PackedStruct encoding for a {dt} column"
        )));
    };
    let widths = fields
        .iter()
        .map(|f| match fixed_width_bits(f.data_type()) {
            Some(b) if b > 0 && b % 8 == 0 => Ok(b / 8),
            _ => Err(FormatError::unsupported(
                format!(
                    "packed struct field {:?} of type {}",
                    f.name(),
                    f.data_type()
                ),
                "2.0 packed structs hold whole-byte fixed-width fields only",
            )),
        })
        .collect::<Result<Vec<u64>>>()?;
    let row: u64 = widths.iter().sum();
    let n = total(ranges);
    let src = ctx.source(p.buffer.as_ref(), "packed struct")?;
    let data = src.read_concat(&scale(ranges, row, "packed struct")?, "packed struct")?;
    let (row, rows) = (row as usize, n as usize);
    if data.len() < row * rows {
        return Err(FormatError::corrupt("packed struct rows truncated"));
    }
    let mut children = Vec::with_capacity(widths.len());
    let mut at = 0usize;
    for w in widths {
        let w = w as usize;
        let mut col = MutableBuffer::with_capacity(w * rows);
        for r in 0..rows {
            let s = r * row + at;
            let v = data
                .as_slice()
                .get(s..s + w)
                .ok_or_else(|| FormatError::corrupt("packed struct rows truncated"))?;
            col.extend_from_slice(v);
        }
        children.push(DataBlock::Fixed {
            bits_per_value: w as u64 * 8,
            data: col.into(),
            num_values: n,
        });
        at += w;
    }
    Ok(DataBlock::Struct {
        children,
        num_values: n,
    })
}
