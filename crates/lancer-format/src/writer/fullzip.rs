//! Writing full-zip pages (spec: "Full Zip Page Layout"); the byte layout is described
//! in `crate::structural::fullzip`.

use arrow_schema::DataType;

use super::compress as c;
use super::page::{bits_for, EncodedPage, Knobs, ValueParts};
use super::shred::Shredded;
use crate::pb::enc21::compressive_encoding::Compression;
use crate::pb::enc21::full_zip_layout::Details;
use crate::pb::enc21::{self, page_layout::Layout, PageLayout};
use crate::structural::LevelInfo;
use crate::{FormatError, Result};

/// Encodes a full-zip page.
pub fn encode(
    s: &Shredded,
    values: &ValueParts,
    knobs: &Knobs,
    layers: Vec<i32>,
    info: LevelInfo,
    num_rows: u64,
) -> Result<EncodedPage> {
    let max_def: u16 = s.layers.iter().map(|l| l.def_levels()).sum();
    let bits_rep = if s.rep.is_some() {
        bits_for(u64::from(info.max_rep))
    } else {
        0
    };
    let bits_def = if s.def.is_some() {
        bits_for(u64::from(max_def))
    } else {
        0
    };
    let cw_bytes = match bits_rep + bits_def {
        0 => 0,
        1..=8 => 1,
        9..=16 => 2,
        _ => 4,
    };
    // Entries that carry value bytes (the reference reader's rule).
    let zipped_visible: u16 = s
        .layers
        .iter()
        .filter(|l| !l.is_list())
        .map(|l| l.def_levels())
        .sum();
    let n_entries = crate::structural::num_entries(s.rep.as_ref(), s.def.as_ref(), s.values.len());

    // Per-value payloads.
    let large = matches!(
        s.values.data_type(),
        DataType::LargeUtf8 | DataType::LargeBinary
    );
    enum Payload<'a> {
        /// Row `i` is `validity bytes of row i (if any)` ++ `data[i*row..(i+1)*row]`.
        Fixed {
            data: &'a [u8],
            row: usize,
            validity: Option<(&'a [u8], usize)>,
        },
        /// Value `i` is `data[offsets[i]..offsets[i + 1]]`, behind a `lw`-byte length.
        Variable {
            lw: usize,
            offsets: &'a [u64],
            data: &'a [u8],
        },
    }
    // FSST-compressed strings, when the page compresses them (borrowed by `payload`).
    let compressed: (Vec<u64>, Vec<u8>);
    let (payload, value_compression, details) = match values {
        ValueParts::Fixed { bits, data, .. } => {
            if bits % 8 != 0 {
                return Err(FormatError::unsupported(
                    "full-zip",
                    "values must be whole bytes",
                ));
            }
            let w = (*bits / 8) as usize;
            (
                Payload::Fixed {
                    data,
                    row: w,
                    validity: None,
                },
                c::flat(*bits),
                Details::BitsPerValue(*bits as u32),
            )
        }
        ValueParts::Fsl {
            dim,
            item_bits,
            data,
            validity,
            ..
        } => {
            let row = (*dim * *item_bits / 8) as usize;
            let vbytes = (*dim as usize).div_ceil(8);
            let total = row + if validity.is_some() { vbytes } else { 0 };
            let e = c::enc(Compression::FixedSizeList(Box::new(enc21::FixedSizeList {
                items_per_value: *dim,
                values: Some(Box::new(c::flat(*item_bits))),
                has_validity: validity.is_some(),
            })));
            (
                Payload::Fixed {
                    data,
                    row,
                    validity: validity.as_deref().map(|v| (v, *dim as usize)),
                },
                e,
                Details::BitsPerValue((total * 8) as u32),
            )
        }
        ValueParts::Packed { .. } => {
            return Err(FormatError::unsupported(
                "full-zip",
                "packed structs are written as mini-blocks",
            ))
        }
        ValueParts::VarPacked {
            offsets,
            data,
            fields,
        } => {
            use crate::pb::enc21::variable_packed_struct::{
                field_encoding::Layout as L, FieldEncoding,
            };
            let e = c::enc(Compression::VariablePackedStruct(
                enc21::VariablePackedStruct {
                    fields: fields
                        .iter()
                        .map(|f| match f {
                            Some(bits) => FieldEncoding {
                                value: Some(c::flat(*bits)),
                                layout: Some(L::BitsPerValue(*bits)),
                            },
                            None => FieldEncoding {
                                value: Some(c::variable(32)),
                                layout: Some(L::BitsPerLength(32)),
                            },
                        })
                        .collect(),
                },
            ));
            (
                Payload::Variable {
                    lw: 4,
                    offsets,
                    data,
                },
                e,
                Details::BitsPerOffset(32),
            )
        }
        ValueParts::Variable { offsets, data, .. } => {
            let bits = if large { 64 } else { 32 };
            let max_len = offsets.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
            let fsst = !knobs.no_compression
                && (knobs.fsst_forced
                    || (max_len >= 5 && data.len() >= 32 * 1024 && max_len <= 32 * 1024));
            let lw = bits as usize / 8;
            let (payload, e) = if fsst {
                let (table, coffs, cdata) = super::fsst::compress(offsets, data)?;
                compressed = (coffs, cdata);
                let e = c::enc(Compression::Fsst(Box::new(enc21::Fsst {
                    symbol_table: table,
                    values: Some(Box::new(c::variable(bits))),
                })));
                (
                    Payload::Variable {
                        lw,
                        offsets: &compressed.0,
                        data: &compressed.1,
                    },
                    e,
                )
            } else {
                (Payload::Variable { lw, offsets, data }, c::variable(bits))
            };
            (payload, e, Details::BitsPerOffset(bits as u32))
        }
    };

    let layout = PageLayout {
        layout: Some(Layout::FullZipLayout(enc21::FullZipLayout {
            bits_rep,
            bits_def,
            details: Some(details),
            num_items: n_entries as u32,
            num_visible_items: s.values.len() as u32,
            value_compression: Some(value_compression),
            layers,
        })),
    };
    // No control words and no zipped validity: the values are the page, zero-copy.
    if cw_bytes == 0 {
        if let Payload::Fixed {
            row,
            validity: None,
            ..
        } = &payload
        {
            let whole = match values {
                ValueParts::Fixed { data, .. } | ValueParts::Fsl { data, .. } => {
                    data.slice_with_length(0, n_entries * row)
                }
                ValueParts::Variable { .. }
                | ValueParts::Packed { .. }
                | ValueParts::VarPacked { .. } => arrow_buffer::Buffer::from_vec(Vec::<u8>::new()),
            };
            return Ok(EncodedPage {
                buffers: vec![whole],
                layout,
                num_rows,
            });
        }
    }
    let mut buf = Vec::with_capacity(match values {
        ValueParts::Fixed { data, .. }
        | ValueParts::Fsl { data, .. }
        | ValueParts::Packed { data, .. } => data.len() + n_entries * cw_bytes,
        ValueParts::Variable { data, .. } | ValueParts::VarPacked { data, .. } => {
            data.len() + n_entries * (cw_bytes + 8)
        }
    });
    let mut row_starts: Vec<u64> = Vec::with_capacity(num_rows as usize + 1);
    let mut next_value = 0usize;
    for e in 0..n_entries {
        let r = s.rep.as_ref().map_or(0, |r| r[e]);
        let d = s.def.as_ref().map_or(0, |d| d[e]);
        if s.rep.is_none() || r == info.max_rep {
            row_starts.push(buf.len() as u64);
        }
        if cw_bytes > 0 {
            let word = (u32::from(r) << bits_def) | u32::from(d);
            buf.extend_from_slice(&word.to_le_bytes()[..cw_bytes]);
        }
        let leaf_visible = d <= info.max_visible_def;
        if d > zipped_visible {
            continue;
        }
        match &payload {
            Payload::Fixed {
                data,
                row,
                validity,
            } => {
                if let Some((v, dim)) = validity {
                    let mut bits = vec![0u8; dim.div_ceil(8)];
                    if leaf_visible {
                        for k in 0..*dim {
                            let bit = next_value * dim + k;
                            if v.get(bit / 8).is_some_and(|b| b >> (bit % 8) & 1 == 1) {
                                bits[k / 8] |= 1 << (k % 8);
                            }
                        }
                    }
                    buf.extend_from_slice(&bits);
                }
                if leaf_visible {
                    let slot = data
                        .get(next_value * row..(next_value + 1) * row)
                        .ok_or_else(|| FormatError::corrupt("fewer values than levels"))?;
                    buf.extend_from_slice(slot);
                } else {
                    buf.extend(std::iter::repeat_n(0u8, *row));
                }
            }
            Payload::Variable { lw, offsets, data } => {
                if d == 0 {
                    let v = offsets
                        .get(next_value..next_value + 2)
                        .and_then(|o| data.get(o[0] as usize..o[1] as usize))
                        .ok_or_else(|| FormatError::corrupt("fewer values than levels"))?;
                    buf.extend_from_slice(&(v.len() as u64).to_le_bytes()[..*lw]);
                    buf.extend_from_slice(v);
                }
            }
        }
        if leaf_visible {
            next_value += 1;
        }
    }
    row_starts.push(buf.len() as u64);
    let mut buffers = vec![arrow_buffer::Buffer::from_vec(buf)];
    let needs_index = matches!(
        values,
        ValueParts::Variable { .. } | ValueParts::VarPacked { .. }
    ) || s.rep.is_some();
    if needs_index {
        let max = row_starts.last().copied().unwrap_or(0);
        let w = match max {
            0..=0xFF => 1,
            0x100..=0xFFFF => 2,
            0x1_0000..=0xFFFF_FFFF => 4,
            _ => 8,
        };
        let mut idx = Vec::with_capacity(row_starts.len() * w);
        for o in &row_starts {
            idx.extend_from_slice(&o.to_le_bytes()[..w]);
        }
        buffers.push(arrow_buffer::Buffer::from_vec(idx));
    }
    Ok(EncodedPage {
        buffers,
        layout,
        num_rows,
    })
}

/// Fast path for wide fixed-width values without nulls (vector columns): the page is
/// the arrays' value bytes back to back, written without concatenating them first.
/// Returns None when the arrays do not qualify.
pub fn encode_pieces(
    lf: &crate::schema::LanceField,
    knobs: &Knobs,
    arrays: &[arrow_array::ArrayRef],
) -> Option<(PageLayout, Vec<arrow_buffer::Buffer>, u64)> {
    use arrow_array::cast::AsArray;
    use arrow_array::Array;
    if knobs.structural.as_deref() == Some("miniblock") {
        return None;
    }
    let (dim, item_bits) = match &lf.data_type {
        DataType::FixedSizeList(f, d) => {
            (*d as u64, crate::block::fixed_width_bits(f.data_type())?)
        }
        _ => return None,
    };
    let row = (dim * item_bits / 8) as usize;
    if row < 256 || item_bits % 8 != 0 {
        return None;
    }
    let mut pieces = Vec::with_capacity(arrays.len());
    let mut rows = 0u64;
    for a in arrays {
        if a.null_count() > 0 {
            return None;
        }
        let fsl = a.as_fixed_size_list_opt()?;
        let items = fsl
            .values()
            .slice(fsl.offset() * dim as usize, fsl.len() * dim as usize);
        if items.null_count() > 0 {
            return None;
        }
        let data = items.to_data();
        let w = (item_bits / 8) as usize;
        let buf = data
            .buffers()
            .first()?
            .slice_with_length(data.offset() * w, data.len() * w);
        pieces.push(buf);
        rows += fsl.len() as u64;
    }
    let e = c::enc(Compression::FixedSizeList(Box::new(enc21::FixedSizeList {
        items_per_value: dim,
        values: Some(Box::new(c::flat(item_bits))),
        has_validity: false,
    })));
    let layer = super::page::layer_pb(crate::structural::Layer::AllValidItem);
    let layout = PageLayout {
        layout: Some(Layout::FullZipLayout(enc21::FullZipLayout {
            bits_rep: 0,
            bits_def: 0,
            details: Some(Details::BitsPerValue((row * 8) as u32)),
            num_items: rows as u32,
            num_visible_items: rows as u32,
            value_compression: Some(e),
            layers: vec![layer],
        })),
    };
    Some((layout, pieces, rows))
}
