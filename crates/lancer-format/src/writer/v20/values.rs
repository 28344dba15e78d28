//! The value encodings of a 2.0 page (spec: "Lance File Format" 2.0, the
//! `ArrayEncoding` messages of `encodings.proto`), written in their plain forms:
//!
//! - fixed-width values and booleans: `Nullable` (no nulls / some nulls with a
//!   validity bitmap first / all null, no buffers) around `Flat` (uncompressed,
//!   `bits_per_value` bits per value; 1 is a bitmap);
//! - strings and binaries (both offset widths): `Binary` — one 64-bit end offset per
//!   row relative to the page, a null row's end plus `null_adjustment` (the page's byte
//!   count + 1), then the bytes as `Flat` of 8 bits;
//! - fixed-size lists of fixed-width items: `Nullable` around `FixedSizeList`, whose
//!   items (`dimension` per row, under null rows too) are encoded as above;
//! - dictionary-typed columns: `Dictionary` of keys (`Flat`, no nulls: a null key points
//!   at a null item appended to the items) and items;
//! - packed structs: `PackedStruct`, the fields' bytes side by side row by row.
//!
//! Buffers are the page's own, numbered in the order they are pushed.

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, GenericByteArray, OffsetSizeTrait, UInt64Array};
use arrow_buffer::{Buffer, MutableBuffer};
use arrow_schema::DataType;

use crate::block::fixed_width_bits;
use crate::pb::enc20::array_encoding::ArrayEncoding as E;
use crate::pb::enc20::buffer::BufferType;
use crate::pb::enc20::nullable::{AllNull, NoNull, Nullability, SomeNull};
use crate::pb::enc20::{self, ArrayEncoding};
use crate::{FormatError, Result};

/// The buffers of one page, in the order the encoding refers to them.
#[derive(Default)]
pub(crate) struct Bufs {
    /// The page's buffers.
    pub list: Vec<Buffer>,
}

impl Bufs {
    /// Appends `b` and returns the reference to it.
    fn push(&mut self, b: Buffer) -> enc20::Buffer {
        self.list.push(b);
        enc20::Buffer {
            buffer_index: (self.list.len() - 1) as u32,
            buffer_type: BufferType::Page as i32,
        }
    }
}

fn wrap(e: E) -> ArrayEncoding {
    ArrayEncoding {
        array_encoding: Some(e),
    }
}

fn flat(bits: u64, buffer: enc20::Buffer) -> ArrayEncoding {
    wrap(E::Flat(enc20::Flat {
        bits_per_value: bits,
        buffer: Some(buffer),
        compression: None,
    }))
}

/// `Nullable` around the values `inner` pushes (after the validity bitmap, if any).
fn nullable(
    a: &dyn Array,
    bufs: &mut Bufs,
    inner: impl FnOnce(&mut Bufs) -> Result<ArrayEncoding>,
) -> Result<ArrayEncoding> {
    let nulls = a.logical_nulls().filter(|n| n.null_count() > 0);
    let nullability = match nulls {
        Some(n) if n.null_count() == a.len() => Nullability::AllNulls(AllNull {}),
        Some(n) => {
            let validity = bufs.push(n.inner().sliced());
            let values = inner(bufs)?;
            Nullability::SomeNulls(Box::new(SomeNull {
                validity: Some(Box::new(flat(1, validity))),
                values: Some(Box::new(values)),
            }))
        }
        None => Nullability::NoNulls(Box::new(NoNull {
            values: Some(Box::new(inner(bufs)?)),
        })),
    };
    Ok(wrap(E::Nullable(Box::new(enc20::Nullable {
        nullability: Some(nullability),
    }))))
}

/// The bytes of `a`'s fixed-width values (bits a multiple of 8), starting at its offset.
fn fixed_bytes(a: &dyn Array, bits: u64) -> Result<Buffer> {
    let d = a.to_data();
    let w = (bits / 8) as usize;
    let b = d.buffers().first().ok_or_else(|| {
        FormatError::corrupt(format!("{} array without a value buffer", a.data_type()))
    })?;
    let (start, len) = (d.offset() * w, d.len() * w);
    if start + len > b.len() {
        return Err(FormatError::corrupt(format!(
            "{} array shorter than its length",
            a.data_type()
        )));
    }
    Ok(b.slice_with_length(start, len))
}

/// Encodes the values of `a` (one page's rows of a column that is not a struct or
/// list), for `field` (named in errors).
pub(crate) fn encode(a: &ArrayRef, field: &str, bufs: &mut Bufs) -> Result<ArrayEncoding> {
    let dt = a.data_type();
    match dt {
        // No rows (the items of empty lists): no buffers, as pylance writes them.
        _ if a.is_empty() => Ok(wrap(E::Nullable(Box::new(enc20::Nullable {
            nullability: Some(Nullability::AllNulls(AllNull {})),
        })))),
        DataType::Null => Ok(wrap(E::Nullable(Box::new(enc20::Nullable {
            nullability: Some(Nullability::AllNulls(AllNull {})),
        })))),
        DataType::Boolean => nullable(a.as_ref(), bufs, |bufs| {
            let bits = a.as_boolean().values().sliced();
            Ok(flat(1, bufs.push(bits)))
        }),
        DataType::Utf8 | DataType::Binary => {
            let b = arrow_cast::cast(a, &DataType::Binary)?;
            binary(b.as_binary::<i32>(), bufs)
        }
        DataType::LargeUtf8 | DataType::LargeBinary => {
            let b = arrow_cast::cast(a, &DataType::LargeBinary)?;
            binary(b.as_binary::<i64>(), bufs)
        }
        DataType::FixedSizeList(item, dim) => {
            let l = a.as_fixed_size_list();
            if *dim <= 0 {
                return Err(FormatError::UnsupportedType {
                    logical_type: dt.to_string(),
                    detail: format!(
                        "field {field:?}: Lance 2.0 stores fixed-size lists of at least one item; \
                         write data storage version 2.1 or later"
                    ),
                });
            }
            check_fsl_item(item.data_type(), dt, field)?;
            let dim_u = *dim as usize;
            let items = l.values().slice(l.offset() * dim_u, l.len() * dim_u);
            nullable(a.as_ref(), bufs, |bufs| {
                let inner = encode(&items, field, bufs)?;
                Ok(wrap(E::FixedSizeList(Box::new(enc20::FixedSizeList {
                    dimension: *dim as u32,
                    has_validity: false,
                    items: Some(Box::new(inner)),
                }))))
            })
        }
        DataType::Dictionary(_, _) => dictionary(a, field, bufs),
        other => match fixed_width_bits(other) {
            Some(bits) if bits % 8 == 0 => nullable(a.as_ref(), bufs, |bufs| {
                Ok(flat(bits, bufs.push(fixed_bytes(a.as_ref(), bits)?)))
            }),
            _ => Err(FormatError::UnsupportedType {
                logical_type: other.to_string(),
                detail: format!(
                    "field {field:?}: Lance 2.0 has no encoding for this type; write data \
                     storage version 2.1 or later"
                ),
            }),
        },
    }
}

/// Fixed-size lists in 2.0 hold fixed-width items (or fixed-size lists of them).
fn check_fsl_item(item: &DataType, dt: &DataType, field: &str) -> Result<()> {
    let ok = match item {
        DataType::FixedSizeList(inner, _) => return check_fsl_item(inner.data_type(), dt, field),
        other => fixed_width_bits(other).is_some(),
    };
    if ok {
        Ok(())
    } else {
        Err(FormatError::UnsupportedType {
            logical_type: dt.to_string(),
            detail: format!(
                "field {field:?}: Lance 2.0 stores fixed-size lists of fixed-width items only \
                 (pylance cannot write this type at 2.0 either); write data storage version \
                 2.2 (fixed-size lists of structs) or use a list"
            ),
        })
    }
}

/// `Binary`: end offsets (nulls adjusted) and the bytes.
fn binary<O: OffsetSizeTrait>(
    a: &GenericByteArray<arrow_array::types::GenericBinaryType<O>>,
    bufs: &mut Bufs,
) -> Result<ArrayEncoding> {
    let offs = a.value_offsets();
    let first = offs.first().map_or(0, |o| o.as_usize());
    let last = offs.last().map_or(0, |o| o.as_usize());
    let total = (last - first) as u64;
    let adjustment = total + 1;
    let mut ends = MutableBuffer::with_capacity(a.len() * 8);
    for (i, w) in offs.windows(2).enumerate() {
        let end = (w[1].as_usize() - first) as u64;
        let v = if a.is_valid(i) { end } else { end + adjustment };
        ends.push(v);
    }
    let indices = bufs.push(ends.into());
    let bytes = bufs.push(a.values().slice_with_length(first, last - first));
    Ok(wrap(E::Binary(Box::new(enc20::Binary {
        indices: Some(Box::new(wrap(E::Nullable(Box::new(enc20::Nullable {
            nullability: Some(Nullability::NoNulls(Box::new(NoNull {
                values: Some(Box::new(flat(64, indices))),
            }))),
        }))))),
        bytes: Some(Box::new(flat(8, bytes))),
        null_adjustment: adjustment,
    }))))
}

/// `Dictionary` of a dictionary-typed column: keys without nulls (a null key points at
/// a null item appended to the items), then the items.
fn dictionary(a: &ArrayRef, field: &str, bufs: &mut Bufs) -> Result<ArrayEncoding> {
    let DataType::Dictionary(key_type, value_type) = a.data_type() else {
        return Err(FormatError::corrupt(
            "dictionary encoder given another type",
        ));
    };
    let value_ok = matches!(
        value_type.as_ref(),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary
    ) || (fixed_width_bits(value_type).is_some_and(|b| b % 8 == 0)
        && !matches!(value_type.as_ref(), DataType::FixedSizeList(_, _)));
    if !value_ok {
        return Err(FormatError::UnsupportedType {
            logical_type: a.data_type().to_string(),
            detail: format!(
                "field {field:?}: Lance 2.0 dictionaries hold strings, binaries or fixed-width \
                 values; cast the column to its value type"
            ),
        });
    }
    let d = a.as_any_dictionary();
    let keys = arrow_cast::cast(d.keys(), &DataType::UInt64)?;
    let keys = keys
        .as_any()
        .downcast_ref::<UInt64Array>()
        .ok_or_else(|| FormatError::corrupt("dictionary keys did not cast to u64"))?;
    let mut values = d.values().clone();
    let null_item = values.len() as u64;
    let keys: UInt64Array = if keys.null_count() > 0 {
        let nulls = arrow_array::new_null_array(value_type, 1);
        values = arrow_select::concat::concat(&[values.as_ref(), nulls.as_ref()])?;
        keys.iter().map(|k| Some(k.unwrap_or(null_item))).collect()
    } else {
        keys.clone()
    };
    let keys = arrow_cast::cast(&keys, key_type)?;
    let bits = fixed_width_bits(key_type).unwrap_or(64);
    let key_buf = bufs.push(fixed_bytes(keys.as_ref(), bits)?);
    let indices = wrap(E::Nullable(Box::new(enc20::Nullable {
        nullability: Some(Nullability::NoNulls(Box::new(NoNull {
            values: Some(Box::new(flat(bits, key_buf))),
        }))),
    })));
    let items = encode(&values, field, bufs)?;
    Ok(wrap(E::Dictionary(Box::new(enc20::Dictionary {
        indices: Some(Box::new(indices)),
        items: Some(Box::new(items)),
        num_dictionary_items: u32::try_from(values.len()).map_err(|_| {
            FormatError::UnsupportedType {
                logical_type: a.data_type().to_string(),
                detail: format!("field {field:?}: over 2^32 dictionary items"),
            }
        })?,
    }))))
}

/// `PackedStruct`: the whole-byte fixed-width fields of each row side by side.
pub(crate) fn packed_struct(a: &ArrayRef, field: &str, bufs: &mut Bufs) -> Result<ArrayEncoding> {
    let s = a.as_struct();
    let refuse = |what: String| FormatError::UnsupportedType {
        logical_type: a.data_type().to_string(),
        detail: format!(
            "packed struct field {field:?}: {what}; Lance 2.0 packed structs hold whole-byte \
             fixed-width fields without nulls (write data storage version 2.2, or drop the \
             packed flag)"
        ),
    };
    if s.num_columns() == 0 {
        return Err(refuse("it has no fields".into()));
    }
    let mut cols = Vec::with_capacity(s.num_columns());
    for (f, c) in s.fields().iter().zip(s.columns()) {
        let bits = match fixed_width_bits(f.data_type()) {
            Some(b)
                if b > 0
                    && b % 8 == 0
                    && !matches!(f.data_type(), DataType::FixedSizeList(_, _)) =>
            {
                b
            }
            _ => return Err(refuse(format!("field {:?} is {}", f.name(), f.data_type()))),
        };
        if c.logical_nulls().is_some_and(|n| n.null_count() > 0) {
            return Err(refuse(format!("field {:?} has nulls", f.name())));
        }
        cols.push(((bits / 8) as usize, fixed_bytes(c.as_ref(), bits)?));
    }
    if s.logical_nulls().is_some_and(|n| n.null_count() > 0) {
        return Err(refuse("it has null rows".into()));
    }
    let row: usize = cols.iter().map(|c| c.0).sum();
    let mut out = MutableBuffer::with_capacity(row * s.len());
    for r in 0..s.len() {
        for (w, b) in &cols {
            let v = b.as_slice().get(r * w..(r + 1) * w).ok_or_else(|| {
                FormatError::corrupt("packed struct field shorter than the struct")
            })?;
            out.extend_from_slice(v);
        }
    }
    let buffer = bufs.push(out.into());
    let inner = cols
        .iter()
        .map(|(w, _)| {
            wrap(E::Nullable(Box::new(enc20::Nullable {
                nullability: Some(Nullability::NoNulls(Box::new(NoNull {
                    values: Some(Box::new(flat(*w as u64 * 8, buffer))),
                }))),
            })))
        })
        .collect();
    Ok(wrap(E::PackedStruct(enc20::PackedStruct {
        inner,
        buffer: Some(buffer),
    })))
}
