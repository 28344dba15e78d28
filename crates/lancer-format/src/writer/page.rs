//! Encoding one page of one leaf column: choosing the structural layout and the
//! compression, the way the reference writer does (spec: "Structural Encoding",
//! "Compression", "Compression Configuration"), and serialising the buffers.
//!
//! * All visible values null (or none at all): constant layout, levels stored as flat
//!   16-bit buffers when there is structure.
//! * 2.2, no nulls, no lists, one distinct value: constant layout with the value inline.
//! * Values of 256 bytes or more (vectors, big strings): full-zip.
//! * Otherwise mini-block, dictionary encoded when that is estimated to shrink the data
//!   below `dict-size-ratio` (default 0.8); values compressed with RLE when runs are
//!   few (`rle-threshold`, default 0.5), bitpacking when it saves bits, FSST for text,
//!   and general zstd/lz4 when the field asks for it (`lance-encoding:compression`).

use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef};
use arrow_buffer::Buffer;
use arrow_schema::DataType;

use super::compress as c;
use super::shred::Shredded;
use crate::container::FileVersion;
use crate::pb::enc21::{self, page_layout::Layout, PageLayout};
use crate::structural::{Layer, LevelInfo};
use crate::{FormatError, Result};

/// An encoded page: its buffers (in order) and layout.
#[derive(Debug)]
pub struct EncodedPage {
    /// Buffers, written 64-byte aligned (may share memory with the input arrays).
    pub buffers: Vec<Buffer>,
    /// The page layout.
    pub layout: PageLayout,
    /// Rows in the page.
    pub num_rows: u64,
}

/// Field-metadata knobs (spec: "Compression Configuration").
#[derive(Debug, Clone, Default)]
pub struct Knobs {
    pub(crate) compression: Option<enc21::CompressionScheme>,
    pub(crate) level: Option<i32>,
    pub(crate) fsst_forced: bool,
    pub(crate) no_compression: bool,
    pub(crate) rle_threshold: f64,
    pub(crate) bss: Option<bool>,
    pub(crate) dict_ratio: f64,
    pub(crate) dict_divisor: Option<u64>,
    pub(crate) structural: Option<String>,
    /// Dictionary-encode whatever the estimate says, with indices of this many bits
    /// (Arrow dictionary columns: the reference's readers expect their pages
    /// dictionary-encoded, indices as wide as the key type).
    pub(crate) dict_key_bits: Option<u64>,
}

impl Knobs {
    /// Reads the knobs from a field's metadata.
    pub fn from_metadata(md: &HashMap<String, String>) -> Result<Self> {
        let mut k = Knobs {
            rle_threshold: 0.5,
            dict_ratio: 0.8,
            ..Default::default()
        };
        if let Some(s) = md.get("lance-encoding:compression") {
            k.compression = c::parse_scheme(s)?;
            k.fsst_forced = s.eq_ignore_ascii_case("fsst");
            k.no_compression = s.eq_ignore_ascii_case("none");
        }
        k.level = md
            .get("lance-encoding:compression-level")
            .and_then(|v| v.parse().ok());
        if let Some(v) = md
            .get("lance-encoding:rle-threshold")
            .and_then(|v| v.parse().ok())
        {
            k.rle_threshold = v;
        }
        k.bss = match md.get("lance-encoding:bss").map(|s| s.to_ascii_lowercase()) {
            Some(s) if s == "on" => Some(true),
            Some(s) if s == "off" => Some(false),
            _ => None,
        };
        if let Some(v) = md
            .get("lance-encoding:dict-size-ratio")
            .and_then(|v| v.parse::<f64>().ok())
        {
            if v > 0.0 && v <= 1.0 {
                k.dict_ratio = v;
            }
        }
        k.dict_divisor = md
            .get("lance-encoding:dict-divisor")
            .and_then(|v| v.parse().ok());
        k.structural = md
            .get("lance-encoding:structural-encoding")
            .map(|s| s.to_ascii_lowercase());
        Ok(k)
    }
}

/// Leaf values flattened to bytes.
enum Values {
    /// Fixed-width values (`bits` each; 1 for booleans).
    Fixed { bits: u64, data: Buffer, n: usize },
    /// Variable-width values (`wide`: 64-bit offsets, for the large types).
    Variable {
        offsets: Vec<u64>,
        data: Buffer,
        wide: bool,
    },
    /// Fixed-size lists of fixed-width items, with optional item validity.
    Fsl {
        dim: u64,
        item_bits: u64,
        data: Buffer,
        validity: Option<Vec<u8>>,
        n: usize,
    },
    /// Packed struct rows: children's values back to back, `bits` per child.
    Packed {
        bits: Vec<u64>,
        data: Buffer,
        n: usize,
    },
    /// Packed struct rows with variable-width children (2.2): per row, fixed children
    /// as bytes and variable ones as a u32 length and bytes. `fields`: Some(bits) for
    /// fixed children, None for variable ones.
    VarPacked {
        offsets: Vec<u64>,
        data: Buffer,
        fields: Vec<Option<u64>>,
    },
}

impl Values {
    fn max_value_bytes(&self) -> u64 {
        match self {
            Values::Fixed { bits, .. } => bits.div_ceil(8),
            Values::Fsl { dim, item_bits, .. } => dim * item_bits / 8,
            Values::Variable { offsets, .. } => {
                offsets.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0)
            }
            Values::Packed { bits, .. } => bits.iter().sum::<u64>() / 8,
            Values::VarPacked { .. } => u64::MAX,
        }
    }
}

fn fixed_bits(dt: &DataType) -> Option<u64> {
    crate::block::fixed_width_bits(dt).filter(|_| !matches!(dt, DataType::FixedSizeList(_, _)))
}

fn flatten(a: &ArrayRef) -> Result<Values> {
    let a = match a.data_type() {
        DataType::Dictionary(_, v) => arrow_cast::cast(a, v)?,
        _ => a.clone(),
    };
    let data = a.to_data();
    let dt = a.data_type().clone();
    match &dt {
        DataType::Boolean => {
            let b = a.as_boolean();
            Ok(Values::Fixed {
                bits: 1,
                // Arrow's bits are already LSB-first packed; `sliced` drops any offset.
                data: b.values().sliced(),
                n: b.len(),
            })
        }
        DataType::Utf8 | DataType::Binary => Ok(variable_values::<i32>(&data)),
        DataType::LargeUtf8 | DataType::LargeBinary => Ok(variable_values::<i64>(&data)),
        DataType::FixedSizeList(f, d) => {
            let fsl = a.as_fixed_size_list();
            let item_bits =
                fixed_bits(f.data_type()).ok_or_else(|| FormatError::UnsupportedType {
                    logical_type: dt.to_string(),
                    detail: "fixed-size lists of non-fixed-width items are not written yet".into(),
                })?;
            let dim = *d as u64;
            let items = fsl
                .values()
                .slice(fsl.offset() * dim as usize, fsl.len() * dim as usize);
            let Values::Fixed { data, .. } = flatten(&items)? else {
                return Err(FormatError::corrupt(
                    "fixed-size list items are not fixed width",
                ));
            };
            let validity = items
                .logical_nulls()
                .filter(|n| n.null_count() > 0)
                .map(|n| {
                    let mut v = vec![0u8; n.len().div_ceil(8)];
                    for i in 0..n.len() {
                        if n.is_valid(i) {
                            v[i / 8] |= 1 << (i % 8);
                        }
                    }
                    v
                });
            Ok(Values::Fsl {
                dim,
                item_bits,
                data,
                validity,
                n: fsl.len(),
            })
        }
        DataType::Struct(fields) => {
            // A packed struct: rows of the children's fixed-width values.
            let st = a.as_struct();
            let mut flat_children = Vec::with_capacity(fields.len());
            for (f, c) in fields.iter().zip(st.columns()) {
                if c.null_count() > 0 {
                    return Err(FormatError::UnsupportedType {
                        logical_type: dt.to_string(),
                        detail: format!(
                            "packed struct child {:?} has nulls; packed structs store none",
                            f.name()
                        ),
                    });
                }
                flat_children.push(flatten(c)?);
            }
            if flat_children
                .iter()
                .any(|c| matches!(c, Values::Variable { .. }))
            {
                // Row-major rows with length-prefixed variable children.
                let n = st.len();
                let mut data = Vec::new();
                let mut offsets = Vec::with_capacity(n + 1);
                offsets.push(0u64);
                let mut kinds = Vec::with_capacity(flat_children.len());
                for c in &flat_children {
                    kinds.push(match c {
                        Values::Fixed { bits, .. } if bits % 8 == 0 => Some(*bits),
                        Values::Variable { .. } => None,
                        _ => {
                            return Err(FormatError::UnsupportedType {
                                logical_type: dt.to_string(),
                                detail:
                                    "packed struct children must be fixed width or strings/binary"
                                        .into(),
                            })
                        }
                    });
                }
                for i in 0..n {
                    for c in &flat_children {
                        match c {
                            Values::Fixed { bits, data: d, .. } => {
                                let w = (*bits / 8) as usize;
                                data.extend_from_slice(&d[i * w..(i + 1) * w]);
                            }
                            Values::Variable {
                                offsets: o,
                                data: d,
                                ..
                            } => {
                                let v = &d[o[i] as usize..o[i + 1] as usize];
                                data.extend_from_slice(&(v.len() as u32).to_le_bytes());
                                data.extend_from_slice(v);
                            }
                            _ => {}
                        }
                    }
                    offsets.push(data.len() as u64);
                }
                return Ok(Values::VarPacked {
                    offsets,
                    data: Buffer::from_vec(data),
                    fields: kinds,
                });
            }
            // Fixed-width children only: reuse the children flattened above.
            let mut bits = Vec::with_capacity(fields.len());
            let mut cols = Vec::with_capacity(fields.len());
            for (f, c) in fields.iter().zip(flat_children) {
                match c {
                    Values::Fixed { bits: b, data, .. } if b % 8 == 0 => {
                        bits.push(b);
                        cols.push(data);
                    }
                    _ => {
                        return Err(FormatError::UnsupportedType {
                            logical_type: dt.to_string(),
                            detail: format!(
                                "packed struct child {:?} is not fixed width (variable packed structs are not written yet)",
                                f.name()
                            ),
                        })
                    }
                }
            }
            let n = st.len();
            let widths: Vec<usize> = bits.iter().map(|b| (*b / 8) as usize).collect();
            let row: usize = widths.iter().sum();
            let mut out = Vec::with_capacity(row * n);
            for i in 0..n {
                for (c, w) in cols.iter().zip(&widths) {
                    out.extend_from_slice(c.get(i * w..(i + 1) * w).ok_or_else(|| {
                        FormatError::corrupt("packed struct child shorter than the struct")
                    })?);
                }
            }
            Ok(Values::Packed {
                bits,
                data: Buffer::from_vec(out),
                n,
            })
        }
        _ => {
            let bits = fixed_bits(&dt).ok_or_else(|| FormatError::UnsupportedType {
                logical_type: dt.to_string(),
                detail: "this type cannot be written as a leaf column yet".into(),
            })?;
            let w = (bits / 8) as usize;
            let buf = &data.buffers()[0];
            let s = data.offset() * w;
            Ok(Values::Fixed {
                bits,
                data: buf.slice_with_length(s, data.len() * w),
                n: data.len(),
            })
        }
    }
}

/// The protobuf value of a layer.
pub fn layer_pb(l: Layer) -> i32 {
    use enc21::RepDefLayer as R;
    (match l {
        Layer::AllValidItem => R::RepdefAllValidItem,
        Layer::NullableItem => R::RepdefNullableItem,
        Layer::AllValidList => R::RepdefAllValidList,
        Layer::NullableList => R::RepdefNullableList,
        Layer::EmptyableList => R::RepdefEmptyableList,
        Layer::NullAndEmptyList => R::RepdefNullAndEmptyList,
    }) as i32
}

fn u16_bytes(v: &[u16]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Encodes one page.
pub fn encode_page(s: &Shredded, knobs: &Knobs, version: FileVersion) -> Result<EncodedPage> {
    let info = LevelInfo::new(&s.layers);
    let layers: Vec<i32> = s.layers.iter().map(|l| layer_pb(*l)).collect();
    let num_rows = s.num_rows as u64;
    let visible_nulls = match &s.def {
        Some(d) => d
            .iter()
            .filter(|&&x| x > 0 && x <= info.max_visible_def)
            .count(),
        None => 0,
    };
    let n_values = s.values.len();
    if n_values == visible_nulls {
        return Ok(constant_null(s, layers, num_rows));
    }
    let values = flatten(&s.values)?;
    if let DataType::Dictionary(key, _) = s.values.data_type() {
        // Arrow dictionary columns: always a dictionary-encoded mini-block page (never a
        // constant or full-zip one), as the reference writes them and its readers need.
        let knobs = Knobs {
            dict_key_bits: Some(key.primitive_width().map_or(32, |w| w as u64 * 8)),
            ..knobs.clone()
        };
        return super::miniblock::encode(
            s,
            values_parts(values),
            &knobs,
            version,
            layers,
            info,
            num_rows,
        );
    }
    if version >= FileVersion::V2_2 && s.rep.is_none() && s.def.is_none() {
        if let Some(page) = constant_value(&values, layers.clone(), num_rows) {
            return Ok(page);
        }
    }
    let wide = values.max_value_bytes() >= 256;
    if let Values::VarPacked { .. } = values {
        if version < FileVersion::V2_2 {
            return Err(FormatError::UnsupportedType {
                logical_type: s.values.data_type().to_string(),
                detail: format!("packed structs with variable-width children need data storage version 2.2 (this file is {version})"),
            });
        }
    }
    let full_zip = match knobs.structural.as_deref() {
        _ if matches!(values, Values::VarPacked { .. }) => true,
        _ if matches!(values, Values::Packed { .. }) => false,
        Some("fullzip") => true,
        Some("miniblock") => false,
        _ => wide,
    };
    if full_zip {
        return super::fullzip::encode(s, &values_parts(values), knobs, layers, info, num_rows);
    }
    super::miniblock::encode(
        s,
        values_parts(values),
        knobs,
        version,
        layers,
        info,
        num_rows,
    )
}

/// Values in the shape the layout encoders take.
pub enum ValueParts {
    /// Fixed-width values.
    Fixed {
        /// Bits per value.
        bits: u64,
        /// Little-endian values.
        data: Buffer,
        /// Count.
        n: usize,
    },
    /// Variable-width values.
    Variable {
        /// `n + 1` offsets from 0.
        offsets: Vec<u64>,
        /// Bytes.
        data: Buffer,
        /// 64-bit offsets (the large types).
        wide: bool,
    },
    /// Packed struct rows with variable-width children.
    VarPacked {
        /// Row offsets.
        offsets: Vec<u64>,
        /// Row bytes.
        data: Buffer,
        /// Bits of fixed children; None for variable ones.
        fields: Vec<Option<u64>>,
    },
    /// Packed struct rows.
    Packed {
        /// Bits of each child.
        bits: Vec<u64>,
        /// Row-major values.
        data: Buffer,
        /// Rows.
        n: usize,
    },
    /// Fixed-size lists.
    Fsl {
        /// Items per list.
        dim: u64,
        /// Bits per item.
        item_bits: u64,
        /// Items, little-endian.
        data: Buffer,
        /// Item validity bitmap.
        validity: Option<Vec<u8>>,
        /// Lists.
        n: usize,
    },
}

fn values_parts(v: Values) -> ValueParts {
    match v {
        Values::Packed { bits, data, n } => ValueParts::Packed { bits, data, n },
        Values::VarPacked {
            offsets,
            data,
            fields,
        } => ValueParts::VarPacked {
            offsets,
            data,
            fields,
        },
        Values::Fixed { bits, data, n } => ValueParts::Fixed { bits, data, n },
        Values::Variable {
            offsets,
            data,
            wide,
        } => ValueParts::Variable {
            offsets,
            data,
            wide,
        },
        Values::Fsl {
            dim,
            item_bits,
            data,
            validity,
            n,
        } => ValueParts::Fsl {
            dim,
            item_bits,
            data,
            validity,
            n,
        },
    }
}

fn constant_null(s: &Shredded, layers: Vec<i32>, num_rows: u64) -> EncodedPage {
    let simple = s.rep.is_none() && s.layers == [Layer::NullableItem];
    let buffers = if simple {
        Vec::new()
    } else {
        vec![
            Buffer::from_vec(s.rep.as_deref().map(u16_bytes).unwrap_or_default()),
            Buffer::from_vec(s.def.as_deref().map(u16_bytes).unwrap_or_default()),
        ]
    };
    EncodedPage {
        buffers,
        layout: PageLayout {
            layout: Some(Layout::ConstantLayout(enc21::ConstantLayout {
                layers,
                inline_value: None,
                rep_compression: None,
                def_compression: None,
                num_rep_values: s.rep.as_ref().map_or(0, |r| r.len() as u64),
                num_def_values: if simple {
                    0
                } else {
                    s.def.as_ref().map_or(0, |d| d.len() as u64)
                },
            })),
        },
        num_rows,
    }
}

/// 2.2: a page whose values are all one (non-null) scalar.
fn constant_value(values: &Values, layers: Vec<i32>, num_rows: u64) -> Option<EncodedPage> {
    let (inline, buffers) = match values {
        Values::Fixed { bits, data, n } if *bits % 8 == 0 && *n > 0 => {
            let w = (*bits / 8) as usize;
            let first = &data[..w];
            if !data.chunks_exact(w).all(|c| c == first) {
                return None;
            }
            (Some(first.to_vec()), Vec::new())
        }
        Values::Variable {
            offsets,
            data,
            wide,
        } if offsets.len() > 1 => {
            let first = &data[offsets[0] as usize..offsets[1] as usize];
            if !offsets
                .windows(2)
                .all(|o| &data[o[0] as usize..o[1] as usize] == first)
            {
                return None;
            }
            // A serialized scalar: the buffer count, each buffer's size (u32), then the
            // buffers — here a one-value Arrow array: offsets [0, len] in the type's
            // offset width (32-bit, 64-bit for the large types), then the bytes.
            let len = first.len() as u64;
            let mut b = Vec::new();
            b.extend_from_slice(&2u32.to_le_bytes());
            b.extend_from_slice(&(if *wide { 16u32 } else { 8u32 }).to_le_bytes());
            b.extend_from_slice(&u32::try_from(len).ok()?.to_le_bytes());
            if *wide {
                b.extend_from_slice(&0u64.to_le_bytes());
                b.extend_from_slice(&len.to_le_bytes());
            } else {
                b.extend_from_slice(&0u32.to_le_bytes());
                b.extend_from_slice(&u32::try_from(len).ok()?.to_le_bytes());
            }
            b.extend_from_slice(first);
            (None, vec![Buffer::from_vec(b)])
        }
        _ => return None,
    };
    Some(EncodedPage {
        buffers,
        layout: PageLayout {
            layout: Some(Layout::ConstantLayout(enc21::ConstantLayout {
                layers,
                inline_value: inline,
                rep_compression: None,
                def_compression: None,
                num_rep_values: 0,
                num_def_values: 0,
            })),
        },
        num_rows,
    })
}

/// Encodes blob descriptions (a struct of two u64s) as a packed-struct mini-block page.
pub fn encode_packed_descriptions(
    s: &Shredded,
    knobs: &Knobs,
    version: FileVersion,
) -> Result<EncodedPage> {
    let info = LevelInfo::new(&s.layers);
    let layers: Vec<i32> = s.layers.iter().map(|l| layer_pb(*l)).collect();
    let values = flatten(&s.values)?;
    super::miniblock::encode(
        s,
        values_parts(values),
        knobs,
        version,
        layers,
        info,
        s.num_rows as u64,
    )
}

/// Bits needed to store `max`.
pub fn bits_for(max: u64) -> u32 {
    64 - max.leading_zeros()
}

/// The offsets (rebased to 0) and value bytes of a utf8 / binary array of offset type `O`.
fn variable_values<O: arrow_array::OffsetSizeTrait>(data: &arrow_data::ArrayData) -> Values {
    let o = data.buffers()[0].typed_data::<O>();
    let o = &o[data.offset()..data.offset() + data.len() + 1];
    let base = o[0].as_usize();
    let end = o[data.len()].as_usize();
    Values::Variable {
        offsets: o.iter().map(|x| (x.as_usize() - base) as u64).collect(),
        data: data.buffers()[1].slice_with_length(base, end - base),
        wide: O::IS_LARGE,
    }
}
