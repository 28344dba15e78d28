//! Decoded, not-yet-Arrow data: what decompressors produce.
//!
//! A [`DataBlock`] holds the values of a run of items without validity (validity comes
//! from definition levels, spec "Repetition and Definition Levels"). [`to_arrow`] turns a
//! block into an Arrow array of the requested type, copying only when a buffer is not
//! aligned for the target type.

use std::sync::Arc;

use arrow_array::{make_array, Array, ArrayRef};
use arrow_buffer::{BooleanBuffer, Buffer, MutableBuffer, NullBuffer};
use arrow_data::ArrayDataBuilder;
use arrow_schema::DataType;

use crate::{FormatError, Result};

/// Offsets of a variable-width block.
#[derive(Debug, Clone)]
pub enum Offsets {
    /// 32-bit offsets (`num_values + 1` of them).
    U32(Vec<u32>),
    /// 64-bit offsets (`num_values + 1` of them).
    U64(Vec<u64>),
}

impl Offsets {
    /// Number of offsets.
    pub fn len(&self) -> usize {
        match self {
            Self::U32(v) => v.len(),
            Self::U64(v) => v.len(),
        }
    }

    /// True if there are no offsets.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Offset `i` widened to u64.
    pub fn get(&self, i: usize) -> Option<u64> {
        match self {
            Self::U32(v) => v.get(i).map(|&x| u64::from(x)),
            Self::U64(v) => v.get(i).copied(),
        }
    }
}

/// Values of a run of items.
#[derive(Debug, Clone)]
pub enum DataBlock {
    /// Fixed-width values, `bits_per_value` each, packed little-endian (bits for 1-bit).
    Fixed {
        /// Width of one value in bits.
        bits_per_value: u64,
        /// The bytes.
        data: Buffer,
        /// Number of values.
        num_values: u64,
    },
    /// Variable-width values: `offsets` index into `data`.
    Variable {
        /// `num_values + 1` offsets.
        offsets: Offsets,
        /// The bytes.
        data: Buffer,
    },
    /// Fixed-size lists of `dim` child items, with optional item validity.
    FixedSizeList {
        /// Items per list.
        dim: u64,
        /// The items.
        child: Box<DataBlock>,
        /// Item validity (one bit per child item), if the items are nullable.
        validity: Option<BooleanBuffer>,
    },
    /// Packed struct: one block per child field.
    Struct {
        /// Child blocks (each with the struct's number of values).
        children: Vec<DataBlock>,
        /// Number of values.
        num_values: u64,
    },
    /// One value repeated.
    Constant {
        /// The value's bytes.
        value: Buffer,
        /// Number of values.
        num_values: u64,
    },
    /// Only nulls (no value bytes).
    AllNull {
        /// Number of values.
        num_values: u64,
    },
}

impl DataBlock {
    /// Number of values in the block.
    pub fn num_values(&self) -> u64 {
        match self {
            Self::Fixed { num_values, .. }
            | Self::Struct { num_values, .. }
            | Self::Constant { num_values, .. }
            | Self::AllNull { num_values } => *num_values,
            Self::Variable { offsets, .. } => offsets.len().saturating_sub(1) as u64,
            Self::FixedSizeList { dim, child, .. } => {
                if *dim == 0 {
                    0
                } else {
                    child.num_values() / dim
                }
            }
        }
    }
}

/// Width in bits of one value of a fixed-width Arrow type.
pub fn fixed_width_bits(dt: &DataType) -> Option<u64> {
    use DataType::*;
    Some(match dt {
        Boolean => 1,
        Int8 | UInt8 => 8,
        Int16 | UInt16 | Float16 => 16,
        Int32 | UInt32 | Float32 | Date32 | Time32(_) => 32,
        Int64 | UInt64 | Float64 | Date64 | Time64(_) | Timestamp(_, _) | Duration(_) => 64,
        Decimal128(_, _) => 128,
        Decimal256(_, _) => 256,
        FixedSizeBinary(n) => u64::try_from(*n).ok()? * 8,
        Interval(arrow_schema::IntervalUnit::YearMonth) => 32,
        Interval(arrow_schema::IntervalUnit::DayTime) => 64,
        Interval(arrow_schema::IntervalUnit::MonthDayNano) => 128,
        FixedSizeList(f, n) => fixed_width_bits(f.data_type())? * u64::try_from(*n).ok()?,
        _ => return None,
    })
}

/// Returns `buf` if it is aligned to `align` bytes, else an aligned copy.
pub fn aligned(buf: Buffer, align: usize) -> Buffer {
    if align <= 1 || (buf.as_ptr() as usize).is_multiple_of(align) {
        buf
    } else {
        Buffer::from_slice_ref(buf.as_slice())
    }
}

fn corrupt_len(what: &str, want: u64, have: usize) -> FormatError {
    FormatError::corrupt(format!(
        "{what}: expected {want} bytes of values, found {have}"
    ))
}

fn repeat_value(value: &[u8], n: usize) -> Result<Buffer> {
    let total = value
        .len()
        .checked_mul(n)
        .ok_or_else(|| FormatError::corrupt("constant block too large"))?;
    let mut out = MutableBuffer::with_capacity(total);
    for _ in 0..n {
        out.extend_from_slice(value);
    }
    Ok(out.into())
}

/// `len` slots of type `dt` with zeroed storage and every slot null, but for the
/// non-nullable children of structs (at any depth), which are zeroed and valid, as
/// Arrow requires of children where their parent may be valid.
fn zeroed(dt: &DataType, len: usize) -> Result<arrow_data::ArrayData> {
    let data = arrow_array::new_null_array(dt, len).to_data();
    let DataType::Struct(fields) = dt else {
        return Ok(data);
    };
    let mut children = Vec::with_capacity(fields.len());
    for f in fields.iter() {
        let c = zeroed(f.data_type(), len)?;
        children.push(if f.is_nullable() {
            c
        } else {
            c.into_builder().nulls(None).build()?
        });
    }
    Ok(data.into_builder().child_data(children).build()?)
}

/// Builds an Arrow array of type `dt` from `block`, with the given validity.
pub fn to_arrow(block: DataBlock, dt: &DataType, nulls: Option<NullBuffer>) -> Result<ArrayRef> {
    let n = block.num_values();
    let len = usize::try_from(n).map_err(|_| FormatError::corrupt("too many values"))?;
    if let Some(nb) = &nulls {
        if nb.len() != len {
            return Err(FormatError::corrupt(format!(
                "validity has {} entries for {len} values",
                nb.len()
            )));
        }
    }
    if *dt == DataType::Null {
        // Null-typed arrays carry no validity: every slot is null by type.
        return Ok(arrow_array::new_null_array(dt, len));
    }
    let nulls_in = nulls.clone();
    let builder = ArrayDataBuilder::new(dt.clone()).len(len).nulls(nulls);
    let data = match (block, dt) {
        (DataBlock::AllNull { .. }, _) => {
            // Value slots that are never valid: zeroed storage, validity comes from levels
            // (a struct's non-nullable children zeroed and valid: the struct's own
            // validity, from the levels above, hides them)
            let data = zeroed(dt, len)?;
            let data = data.into_builder().nulls(nulls_in).build()?;
            return Ok(make_array(data));
        }
        (DataBlock::Constant { value, num_values }, _) => {
            let expanded = match dt {
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary => {
                    let vlen = value.len() as u64;
                    let offs: Vec<u64> = (0..=num_values).map(|i| i * vlen).collect();
                    DataBlock::Variable {
                        offsets: Offsets::U64(offs),
                        data: repeat_value(value.as_slice(), len)?,
                    }
                }
                DataType::Boolean => {
                    let bit = value.as_slice().first().is_some_and(|b| b & 1 == 1);
                    let bb = if bit {
                        BooleanBuffer::new_set(len)
                    } else {
                        BooleanBuffer::new_unset(len)
                    };
                    DataBlock::Fixed {
                        bits_per_value: 1,
                        data: bb.into_inner(),
                        num_values,
                    }
                }
                _ => DataBlock::Fixed {
                    bits_per_value: value.len() as u64 * 8,
                    data: repeat_value(value.as_slice(), len)?,
                    num_values,
                },
            };
            return to_arrow(expanded, dt, nulls_in);
        }
        (
            DataBlock::Fixed {
                bits_per_value,
                data,
                ..
            },
            DataType::FixedSizeList(f, d),
        ) => {
            // A flat fixed-width block holding whole lists: split into items.
            let d64 = u64::try_from(*d).map_err(|_| FormatError::corrupt("negative FSL size"))?;
            let child_bits = fixed_width_bits(f.data_type()).ok_or_else(|| {
                FormatError::unsupported(
                    format!("{dt}"),
                    "fixed-width values for a fixed-size list of variable items",
                )
            })?;
            if bits_per_value != child_bits * d64 && bits_per_value != child_bits {
                return Err(FormatError::corrupt(format!(
                    "fixed-size list of {d} x {child_bits}-bit items stored as {bits_per_value}-bit values"
                )));
            }
            let child = DataBlock::Fixed {
                bits_per_value: child_bits,
                data,
                num_values: n * d64,
            };
            let child = to_arrow(child, f.data_type(), None)?;
            builder.child_data(vec![child.to_data()])
        }
        (
            DataBlock::FixedSizeList {
                child, validity, ..
            },
            DataType::FixedSizeList(f, _),
        ) => {
            let child = to_arrow(*child, f.data_type(), validity.map(NullBuffer::new))?;
            builder.child_data(vec![child.to_data()])
        }
        (
            DataBlock::Fixed {
                bits_per_value,
                data,
                ..
            },
            _,
        ) => {
            let want = fixed_width_bits(dt).ok_or_else(|| {
                FormatError::unsupported(format!("{dt}"), "fixed-width values for this type")
            })?;
            if want != bits_per_value {
                return Err(FormatError::corrupt(format!(
                    "{dt} column stored with {bits_per_value}-bit values (expected {want})"
                )));
            }
            let need = (u64::from(bits_per_value as u32) * n).div_ceil(8);
            if (data.len() as u64) < need {
                return Err(corrupt_len("fixed-width block", need, data.len()));
            }
            let align = (bits_per_value / 8).clamp(1, 16) as usize;
            builder.add_buffer(aligned(data, align))
        }
        (DataBlock::Variable { offsets, data }, _) => {
            let large = matches!(dt, DataType::LargeUtf8 | DataType::LargeBinary);
            if !matches!(
                dt,
                DataType::Utf8 | DataType::Binary | DataType::LargeUtf8 | DataType::LargeBinary
            ) {
                return Err(FormatError::unsupported(
                    format!("{dt}"),
                    "variable-width values for this type",
                ));
            }
            let offs = offsets_buffer(&offsets, large, data.len())?;
            builder.add_buffer(offs).add_buffer(data)
        }
        (DataBlock::Struct { children, .. }, DataType::Struct(fields)) => {
            if children.len() != fields.len() {
                return Err(FormatError::corrupt(format!(
                    "packed struct has {} children, schema has {}",
                    children.len(),
                    fields.len()
                )));
            }
            let kids = children
                .into_iter()
                .zip(fields.iter())
                .map(|(c, f)| to_arrow(c, f.data_type(), None).map(|a| a.to_data()))
                .collect::<Result<Vec<_>>>()?;
            builder.child_data(kids)
        }
        (b, _) => {
            return Err(FormatError::unsupported(
                format!("{dt}"),
                format!("cannot build this type from a {} block", block_name(&b)),
            ))
        }
    };
    Ok(make_array(data.build()?))
}

fn block_name(b: &DataBlock) -> &'static str {
    match b {
        DataBlock::Fixed { .. } => "fixed-width",
        DataBlock::Variable { .. } => "variable-width",
        DataBlock::FixedSizeList { .. } => "fixed-size-list",
        DataBlock::Struct { .. } => "struct",
        DataBlock::Constant { .. } => "constant",
        DataBlock::AllNull { .. } => "all-null",
    }
}

/// Rebased Arrow offsets (starting at 0 is not required; bounds are checked).
fn offsets_buffer(offsets: &Offsets, large: bool, data_len: usize) -> Result<Buffer> {
    let n = offsets.len();
    if n == 0 {
        return Err(FormatError::corrupt("variable-width block without offsets"));
    }
    let mut prev = 0u64;
    let mut check = |o: u64| -> Result<()> {
        if o < prev || o > data_len as u64 {
            return Err(FormatError::corrupt(format!(
                "string offsets are not increasing within the {data_len}-byte data buffer (offset {o})"
            )));
        }
        prev = o;
        Ok(())
    };
    if large {
        let mut v: Vec<i64> = Vec::with_capacity(n);
        for i in 0..n {
            let o = offsets.get(i).unwrap_or(0);
            check(o)?;
            v.push(o as i64);
        }
        Ok(Buffer::from_vec(v))
    } else {
        let mut v: Vec<i32> = Vec::with_capacity(n);
        for i in 0..n {
            let o = offsets.get(i).unwrap_or(0);
            check(o)?;
            v.push(
                i32::try_from(o).map_err(|_| {
                    FormatError::corrupt("string data over 2 GiB in a 32-bit array")
                })?,
            );
        }
        Ok(Buffer::from_vec(v))
    }
}

/// Replaces the validity of `array` (which must have no nulls of its own, or `nulls`
/// must be a superset).
pub fn with_nulls(array: ArrayRef, nulls: Option<NullBuffer>) -> Result<ArrayRef> {
    if (nulls.is_none() && array.nulls().is_none()) || *array.data_type() == DataType::Null {
        // (Null-typed arrays take no validity: they are null everywhere by type.)
        return Ok(array);
    }
    let mut data = array.to_data();
    if data.offset() != 0 {
        // Some slices (booleans) keep a bit offset; copy so validity starts at 0.
        let len = data.len();
        let mut m = arrow_data::transform::MutableArrayData::new(vec![&data], false, len);
        m.try_extend(0, 0, len)?;
        data = m.freeze();
    }
    let data = data.into_builder().nulls(nulls).build()?;
    Ok(make_array(data))
}

/// An empty array of `dt`.
pub fn empty(dt: &DataType) -> ArrayRef {
    arrow_array::new_empty_array(dt)
}

/// Wraps an array as `Arc<dyn Array>` (helper for readability).
pub fn arc(a: impl Array + 'static) -> ArrayRef {
    Arc::new(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::BooleanArray;

    #[test]
    fn with_nulls_on_sliced_booleans() {
        let a: ArrayRef = Arc::new(BooleanArray::from(vec![Some(true); 2500]));
        let s = a.slice(2493, 7);
        let n = NullBuffer::new_null(7);
        let r = with_nulls(s, Some(n));
        assert!(r.is_ok(), "{r:?}");
        let a = to_arrow(
            DataBlock::AllNull { num_values: 2500 },
            &DataType::Boolean,
            None,
        );
        assert!(a.is_ok(), "{a:?}");
        let s = a
            .unwrap_or_else(|_| empty(&DataType::Boolean))
            .slice(2493, 7);
        let r = with_nulls(s, Some(NullBuffer::new_null(7)));
        assert!(r.is_ok(), "{r:?}");
    }
}
