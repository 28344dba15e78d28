//! Packed structs (spec: "Struct Packing"): struct rows stored row-major.
//!
//! * Fixed-width children (`PackedStruct`, 2.1+): each row is the children's values
//!   back to back; the inner encoding yields one fixed-width value per row.
//! * Variable-width children (`VariablePackedStruct`, 2.2): per row, each child in
//!   order: fixed children as their bytes, variable children as a length prefix
//!   (`bits_per_length`) and their bytes. Used as a full-zip per-value encoding.

use arrow_buffer::Buffer;

use crate::block::{DataBlock, Offsets};
use crate::pb::enc21::variable_packed_struct::field_encoding::Layout;
use crate::pb::enc21::{PackedStruct, VariablePackedStruct};
use crate::{FormatError, Result};

/// Splits row-major fixed-width rows into one block per child.
pub fn split_rows(bits: &[u64], rows: &[u8], num_values: u64) -> Result<DataBlock> {
    if bits.iter().any(|b| b % 8 != 0) {
        return Err(FormatError::corrupt("packed struct child not byte aligned"));
    }
    let widths: Vec<usize> = bits.iter().map(|b| (*b / 8) as usize).collect();
    let row: usize = widths.iter().sum();
    let n = num_values as usize;
    if rows.len() < row.saturating_mul(n) {
        return Err(FormatError::corrupt("packed struct rows truncated"));
    }
    let mut children = Vec::with_capacity(widths.len());
    let mut start = 0;
    for (i, &w) in widths.iter().enumerate() {
        let mut buf = Vec::with_capacity(w * n);
        for r in 0..n {
            let s = r * row + start;
            buf.extend_from_slice(&rows[s..s + w]);
        }
        children.push(DataBlock::Fixed {
            bits_per_value: bits[i],
            data: Buffer::from_vec(buf),
            num_values,
        });
        start += w;
    }
    Ok(DataBlock::Struct {
        children,
        num_values,
    })
}

/// A mini-block chunk of fixed-width packed rows.
pub fn decode_fixed(p: &PackedStruct, buffers: Vec<Buffer>, num_values: u64) -> Result<DataBlock> {
    let inner = super::compression_of(p.values.as_deref(), "packed struct values")?;
    let rows = super::miniblock(inner, buffers, num_values)?;
    match rows {
        DataBlock::Fixed { data, .. } => split_rows(&p.bits_per_value, data.as_slice(), num_values),
        _ => Err(FormatError::corrupt(
            "packed struct rows are not fixed width",
        )),
    }
}

/// Splits variable packed rows (given as a variable-width block of rows).
pub fn decode_variable(v: &VariablePackedStruct, rows: &DataBlock) -> Result<DataBlock> {
    let DataBlock::Variable { offsets, data } = rows else {
        return Err(FormatError::corrupt(
            "variable packed struct rows are not variable width",
        ));
    };
    let n = offsets.len().saturating_sub(1);
    enum Acc {
        Fixed(usize, Vec<u8>),
        Var(usize, Vec<u8>, Vec<u64>),
    }
    let mut accs = Vec::with_capacity(v.fields.len());
    for f in &v.fields {
        accs.push(match f.layout {
            // a fixed-width field of a packed row is at most 1 MiB (bounds what a null
            // row's placeholder allocates)
            Some(Layout::BitsPerValue(b)) if b % 8 == 0 && b > 0 && b / 8 <= 1 << 20 => {
                Acc::Fixed((b / 8) as usize, Vec::new())
            }
            Some(Layout::BitsPerLength(32)) => Acc::Var(4, Vec::new(), vec![0]),
            Some(Layout::BitsPerLength(64)) => Acc::Var(8, Vec::new(), vec![0]),
            _ => return Err(FormatError::corrupt("variable packed struct field layout")),
        });
    }
    let src = data.as_slice();
    for r in 0..n {
        let (s, e) = (
            offsets.get(r).unwrap_or(0) as usize,
            offsets.get(r + 1).unwrap_or(0) as usize,
        );
        let row = src
            .get(s..e)
            .ok_or_else(|| FormatError::corrupt("variable packed row out of range"))?;
        if row.is_empty() {
            // A null struct stores no row (pylance 14's blob v2 descriptors): every
            // field gets a placeholder the validity hides (zeros, or an empty value).
            for acc in accs.iter_mut() {
                match acc {
                    Acc::Fixed(w, buf) => buf.resize(buf.len() + *w, 0),
                    Acc::Var(_, buf, offs) => offs.push(buf.len() as u64),
                }
            }
            continue;
        }
        let mut pos = 0usize;
        for acc in accs.iter_mut() {
            match acc {
                Acc::Fixed(w, buf) => {
                    let b = row
                        .get(pos..pos + *w)
                        .ok_or_else(|| FormatError::corrupt("variable packed row truncated"))?;
                    buf.extend_from_slice(b);
                    pos += *w;
                }
                Acc::Var(lw, buf, offs) => {
                    let l = super::read_uints(row.get(pos..).unwrap_or(&[]), *lw, 1)?
                        .first()
                        .copied()
                        .unwrap_or(0) as usize;
                    pos += *lw;
                    let b = row
                        .get(pos..pos.saturating_add(l))
                        .ok_or_else(|| FormatError::corrupt("variable packed value truncated"))?;
                    buf.extend_from_slice(b);
                    offs.push(buf.len() as u64);
                    pos += l;
                }
            }
        }
    }
    let children = accs
        .into_iter()
        .map(|a| match a {
            Acc::Fixed(w, buf) => DataBlock::Fixed {
                bits_per_value: (w * 8) as u64,
                data: Buffer::from_vec(buf),
                num_values: n as u64,
            },
            Acc::Var(_, buf, offs) => DataBlock::Variable {
                offsets: Offsets::U64(offs),
                data: Buffer::from_vec(buf),
            },
        })
        .collect();
    Ok(DataBlock::Struct {
        children,
        num_values: n as u64,
    })
}
