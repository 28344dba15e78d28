//! 2.0 variable-width and dictionary encodings: `Binary` (end offsets with null
//! adjustment + bytes), `Fsst` (a `Binary` of FSST-compressed strings),
//! `FixedSizeBinary` (same-length strings stored as fixed-width values) and
//! `Dictionary` (indices + items; string dictionaries chosen by the writer use index 0
//! for null and `i + 1` for item `i`, while dictionary-typed columns keep their keys).

use std::ops::Range;

use arrow_array::{make_array, Array, ArrayRef, UInt32Array, UInt64Array};
use arrow_buffer::{Buffer, NullBuffer};
use arrow_schema::DataType;

use super::decode::{child, decode, Out};
use super::offsets::{spans, uints};
use super::page::{push_merged, scale, total, PageCtx};
use crate::block::{DataBlock, Offsets};
use crate::compression::fsst as fsst_codec;
use crate::pb::enc20;
use crate::{FormatError, Result};

/// Decodes `enc` as a stream of bytes for byte `ranges` (concatenated).
fn bytes(enc: &enc20::ArrayEncoding, ctx: &PageCtx<'_>, ranges: &[Range<u64>]) -> Result<Buffer> {
    if ranges.is_empty() {
        return Ok(Buffer::from_vec(Vec::<u8>::new()));
    }
    let n = total(ranges);
    match decode(enc, ctx, ranges, &DataType::UInt8)? {
        Out::Block(
            DataBlock::Fixed {
                bits_per_value: 8,
                data,
                num_values,
            },
            None,
        ) if num_values == n && data.len() as u64 >= n => Ok(data),
        _ => Err(FormatError::corrupt(format!(
            "string bytes: expected {n} non-null bytes"
        ))),
    }
}

/// `Binary`: strings of the rows in `ranges`.
pub(crate) fn binary(b: &enc20::Binary, ctx: &PageCtx<'_>, ranges: &[Range<u64>]) -> Result<Out> {
    let s = spans(
        child(&b.indices, "binary indices")?,
        ctx,
        ranges,
        b.null_adjustment,
        None,
        "binary offsets",
    )?;
    let mut byte_ranges = Vec::with_capacity(s.sources.len());
    for r in &s.sources {
        push_merged(&mut byte_ranges, r.clone());
    }
    let data = bytes(child(&b.bytes, "binary bytes")?, ctx, &byte_ranges)?;
    if s.offsets.last().copied().unwrap_or(0) > data.len() as u64 {
        return Err(FormatError::corrupt(
            "binary bytes shorter than their offsets",
        ));
    }
    let validity = Some(s.validity).filter(|v| v.count_set_bits() < v.len());
    Ok(Out::Block(
        DataBlock::Variable {
            offsets: Offsets::U64(s.offsets),
            data,
        },
        validity,
    ))
}

/// `Fsst`: an inner `Binary` whose strings are FSST-compressed.
pub(crate) fn fsst(f: &enc20::Fsst, ctx: &PageCtx<'_>, ranges: &[Range<u64>]) -> Result<Out> {
    let inner = decode(
        child(&f.binary, "fsst strings")?,
        ctx,
        ranges,
        &DataType::Binary,
    )?;
    match inner {
        Out::Block(block @ DataBlock::Variable { .. }, v) => {
            Ok(Out::Block(fsst_codec::decode(&f.symbol_table, block)?, v))
        }
        _ => Err(FormatError::corrupt(
            "fsst over values that are not strings",
        )),
    }
}

/// `FixedSizeBinary`: strings of `byte_width` bytes each.
pub(crate) fn fixed_size_binary(
    f: &enc20::FixedSizeBinary,
    ctx: &PageCtx<'_>,
    ranges: &[Range<u64>],
    dt: &DataType,
) -> Result<Out> {
    let w = u64::from(f.byte_width);
    if w == 0 {
        return Err(FormatError::corrupt("fixed-size binary of width 0"));
    }
    let inner = child(&f.bytes, "fixed-size binary bytes")?;
    let n = total(ranges);
    // The bytes are either one value of `w` bytes per row or `w` one-byte values.
    let data = match decode(
        inner,
        ctx,
        ranges,
        &DataType::FixedSizeBinary(f.byte_width as i32),
    )? {
        Out::Block(
            DataBlock::Fixed {
                bits_per_value,
                data,
                ..
            },
            None,
        ) if bits_per_value == w * 8 => data,
        Out::Block(
            DataBlock::Fixed {
                bits_per_value: 8, ..
            },
            None,
        ) => bytes(inner, ctx, &scale(ranges, w, "fixed-size binary")?)?,
        _ => {
            return Err(FormatError::corrupt(
                "fixed-size binary bytes are not fixed-width",
            ))
        }
    };
    if (data.len() as u64) < n * w {
        return Err(FormatError::corrupt("fixed-size binary bytes truncated"));
    }
    if let DataType::FixedSizeBinary(_) = dt {
        return Ok(Out::Block(
            DataBlock::Fixed {
                bits_per_value: w * 8,
                data,
                num_values: n,
            },
            None,
        ));
    }
    Ok(Out::Block(
        DataBlock::Variable {
            offsets: Offsets::U64((0..=n).map(|i| i * w).collect()),
            data,
        },
        None,
    ))
}

/// `Dictionary`: items decoded whole, then looked up by the rows' indices.
pub(crate) fn dictionary(
    d: &enc20::Dictionary,
    ctx: &PageCtx<'_>,
    ranges: &[Range<u64>],
    dt: &DataType,
) -> Result<Out> {
    let (key_type, value_type) = match dt {
        DataType::Dictionary(k, v) => (Some(k.as_ref()), v.as_ref()),
        other => (None, other),
    };
    let num_items = u64::from(d.num_dictionary_items);
    // Items are stored in the file (at least a bit each, in practice much more).
    if num_items > ctx.file_size.saturating_mul(8).saturating_add(1024) {
        return Err(FormatError::corrupt(format!(
            "dictionary claims {num_items} items in a {}-byte file",
            ctx.file_size
        )));
    }
    let items: ArrayRef = if num_items == 0 {
        arrow_array::new_empty_array(value_type)
    } else {
        let all = 0..num_items;
        decode(
            child(&d.items, "dictionary items")?,
            ctx,
            std::slice::from_ref(&all),
            value_type,
        )?
        .into_array(value_type)?
    };
    if items.len() as u64 != num_items {
        return Err(FormatError::corrupt(format!(
            "dictionary claims {num_items} items, decoded {}",
            items.len()
        )));
    }
    let indices = child(&d.indices, "dictionary indices")?;
    let Some(key_type) = key_type else {
        // Writer-chosen dictionary: index 0 is null, i + 1 is item i.
        let keys = uints(indices, ctx, ranges, "dictionary indices")?;
        let take = keys
            .iter()
            .map(|&k| match k {
                0 => Ok(None),
                k if k <= num_items => Ok(Some((k - 1) as u32)),
                k => Err(FormatError::corrupt(format!(
                    "dictionary index {k} with {num_items} items"
                ))),
            })
            .collect::<Result<UInt32Array>>()?;
        return Ok(Out::Array(arrow_select::take::take(
            items.as_ref(),
            &take,
            None,
        )?));
    };
    // Dictionary-typed column: keep the keys (the writer stores nulls as a null item).
    let (keys, validity) = match decode(indices, ctx, ranges, key_type)? {
        Out::Block(b, v) => (b, v),
        Out::Array(_) => {
            return Err(FormatError::corrupt(
                "dictionary keys are not plain integers",
            ))
        }
    };
    let keys = Out::Block(keys, None).into_array(key_type)?;
    let keys_u64 = arrow_cast::cast(&keys, &DataType::UInt64)?;
    // Keys under null rows are not looked at.
    let valid = |i: usize| validity.as_ref().is_none_or(|v| i < v.len() && v.value(i));
    let in_range = keys_u64.null_count() == 0
        && keys_u64
            .as_any()
            .downcast_ref::<UInt64Array>()
            .is_some_and(|k| {
                k.values()
                    .iter()
                    .enumerate()
                    .all(|(i, &k)| k < num_items || !valid(i))
            });
    if !in_range {
        return Err(FormatError::corrupt(format!(
            "dictionary keys outside the {num_items} items"
        )));
    }
    let nulls = validity.map(NullBuffer::new).filter(|n| n.null_count() > 0);
    let data = keys
        .to_data()
        .into_builder()
        .data_type(dt.clone())
        .nulls(nulls)
        .child_data(vec![items.to_data()]);
    let dict = make_array(data.build()?);
    // Pylance moves null items to null keys (Arrow's preferred form); so do we.
    match dict.logical_nulls().filter(|n| n.null_count() > 0) {
        Some(nulls) => Ok(Out::Array(make_array(
            dict.to_data().into_builder().nulls(Some(nulls)).build()?,
        ))),
        None => Ok(Out::Array(dict)),
    }
}
