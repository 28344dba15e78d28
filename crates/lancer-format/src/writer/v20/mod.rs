//! Writing Lance 2.0 pages (spec: "Lance File Format", version 2.0: every node of the
//! type tree has a column of its own, in pre-order, and each page of a column is
//! described by an `ArrayEncoding` tree of `encodings.proto`).
//!
//! A flush of a top-level field becomes one page per column:
//!
//! - a struct's own column holds no data (2.0 stores no struct validity, so a struct
//!   with null rows is refused, as pylance refuses it); it gets one `SimpleStruct` page
//!   covering all its rows when the file is finished ([`FieldPages::structs`],
//!   [`struct_columns`]);
//! - a list's column holds `List` pages: one end offset per row relative to the page's
//!   first item (`null_offset_adjustment`, the page's item count + 1, added for null
//!   lists) and the page's item count; the items follow in the next column(s), in pages
//!   of their own whose item counts add up to the lists' (a page of no rows, encoded
//!   all-null without buffers, where the lists are empty, as pylance writes them);
//! - every other column holds the values ([`values`]).
//!
//! Blob columns (large binaries marked `lance-encoding:blob`) have the column encoding
//! `Blob`: every non-empty value is written out of line in the file, and the pages
//! hold a packed struct of (position, size) per row — (1, 0) for a null, (0, 0) for an
//! empty value. [`FieldPages::blobs`] hands the values to the file writer, which knows
//! the positions, and [`blob_page`] encodes their descriptions.
//!
//! Maps have no 2.0 encoding (pylance refuses them too); the error names 2.2.

mod values;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, OffsetSizeTrait};
use arrow_buffer::{Buffer, MutableBuffer};
use arrow_schema::DataType;

use crate::pb::enc20::array_encoding::ArrayEncoding as E;
use crate::pb::enc20::buffer::BufferType;
use crate::pb::enc20::nullable::{NoNull, Nullability};
use crate::pb::enc20::{self, ArrayEncoding};
use crate::schema::LanceField;
use crate::{FormatError, Result};

pub(crate) use values::Bufs;

/// One encoded 2.0 page.
pub struct Page20 {
    /// Column of the page, relative to the field's first column.
    pub column: usize,
    /// The page's buffers.
    pub buffers: Vec<Buffer>,
    /// The page's encoding.
    pub encoding: ArrayEncoding,
    /// Rows (values, for columns under a list) the page holds.
    pub num_rows: u64,
}

/// The pages of one flush of a field.
#[derive(Default)]
pub struct FieldPages {
    /// Data pages, in column order.
    pub pages: Vec<Page20>,
    /// Struct columns (relative) and the rows this flush adds to them.
    pub structs: Vec<(usize, u64)>,
    /// Blob columns (relative) and their values (large binary): written out of line,
    /// then described by a [`blob_page`].
    pub blobs: Vec<(usize, ArrayRef)>,
}

/// The page of a blob column: `(position, size)` of each row's value.
pub fn blob_page(column: usize, positions: Vec<u64>, sizes: Vec<u64>) -> Result<Page20> {
    let n = positions.len();
    let fields = arrow_schema::Fields::from(vec![
        arrow_schema::Field::new("position", DataType::UInt64, false),
        arrow_schema::Field::new("size", DataType::UInt64, false),
    ]);
    let desc: ArrayRef = std::sync::Arc::new(arrow_array::StructArray::try_new(
        fields,
        vec![
            std::sync::Arc::new(arrow_array::UInt64Array::from(positions)),
            std::sync::Arc::new(arrow_array::UInt64Array::from(sizes)),
        ],
        None,
    )?);
    let mut bufs = Bufs::default();
    let encoding = values::packed_struct(&desc, "blob descriptions", &mut bufs)?;
    Ok(Page20 {
        column,
        buffers: bufs.list,
        encoding,
        num_rows: n as u64,
    })
}

/// Refuses what a 2.0 file cannot hold, before any row is written.
pub fn check_writable(f: &LanceField) -> Result<()> {
    match &f.data_type {
        DataType::Map(_, _) => Err(FormatError::UnsupportedType {
            logical_type: f.data_type.to_string(),
            detail: format!(
                "field {:?}: Lance 2.0 has no map encoding (pylance refuses it too); write data \
                 storage version 2.2",
                f.name
            ),
        }),
        dt if f.is_blob() && !matches!(dt, DataType::LargeBinary) => {
            Err(FormatError::UnsupportedType {
                logical_type: format!("blob ({dt})"),
                detail: format!(
                    "field {:?}: blob columns are large binaries; cast the column to \
                     large_binary or drop the blob marker",
                    f.name
                ),
            })
        }
        DataType::Struct(_) if f.is_packed_struct() => Ok(()),
        _ => f.children.iter().try_for_each(check_writable),
    }
}

/// The struct columns (not packed) of field `f`, relative to its first column: each
/// gets one `SimpleStruct` page when the file is finished, even with no rows.
pub fn struct_columns(f: &LanceField) -> Vec<usize> {
    fn walk(f: &LanceField, column: usize, out: &mut Vec<usize>) {
        match &f.data_type {
            DataType::Struct(_) if f.is_packed_struct() => {}
            DataType::Struct(_) | DataType::List(_) | DataType::LargeList(_) => {
                if matches!(f.data_type, DataType::Struct(_)) {
                    out.push(column);
                }
                let mut col = column + 1;
                for c in &f.children {
                    walk(c, col, out);
                    col += crate::v20::column_count(c);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(f, 0, &mut out);
    out
}

/// Encodes one flush (`a`, the concatenated rows) of field `f`.
pub fn encode_field(f: &LanceField, a: &ArrayRef) -> Result<FieldPages> {
    let mut out = FieldPages::default();
    node(f, a, 0, &mut out)?;
    Ok(out)
}

fn node(f: &LanceField, a: &ArrayRef, column: usize, out: &mut FieldPages) -> Result<()> {
    match &f.data_type {
        DataType::Struct(_) if f.is_packed_struct() => {
            let mut bufs = Bufs::default();
            let encoding = values::packed_struct(a, &f.name, &mut bufs)?;
            push(out, column, bufs, encoding, a.len());
            Ok(())
        }
        DataType::Struct(_) => {
            let nulls = a.logical_nulls().map_or(0, |n| n.null_count());
            if nulls > 0 {
                return Err(FormatError::UnsupportedType {
                    logical_type: f.data_type.to_string(),
                    detail: format!(
                        "struct field {:?} has {nulls} null rows, but Lance 2.0 files do not \
                         store struct validity (pylance refuses them too); write data storage \
                         version 2.1 or later, or make the rows non-null",
                        f.name
                    ),
                });
            }
            out.structs.push((column, a.len() as u64));
            let s = a.as_struct();
            let mut col = column + 1;
            for (c, arr) in f.children.iter().zip(s.columns()) {
                node(c, arr, col, out)?;
                col += crate::v20::column_count(c);
            }
            Ok(())
        }
        DataType::List(_) => list(f, a.as_list::<i32>(), column, out),
        DataType::LargeList(_) => list(f, a.as_list::<i64>(), column, out),
        DataType::Map(_, _) => check_writable(f),
        _ if f.is_blob() => {
            check_writable(f)?;
            out.blobs.push((column, a.clone()));
            Ok(())
        }
        _ => {
            check_writable(f)?;
            let mut bufs = Bufs::default();
            let encoding = values::encode(a, &f.name, &mut bufs)?;
            push(out, column, bufs, encoding, a.len());
            Ok(())
        }
    }
}

fn push(out: &mut FieldPages, column: usize, bufs: Bufs, encoding: ArrayEncoding, rows: usize) {
    out.pages.push(Page20 {
        column,
        buffers: bufs.list,
        encoding,
        num_rows: rows as u64,
    });
}

/// A `List` page of the rows' end offsets, then the items' pages.
fn list<O: OffsetSizeTrait>(
    f: &LanceField,
    l: &arrow_array::GenericListArray<O>,
    column: usize,
    out: &mut FieldPages,
) -> Result<()> {
    let item = f.children.first().ok_or_else(|| {
        FormatError::corrupt(format!("list field {:?} has no item field", f.name))
    })?;
    let offs = l.value_offsets();
    let first = offs.first().map_or(0, |o| o.as_usize());
    let last = offs.last().map_or(0, |o| o.as_usize());
    let num_items = (last - first) as u64;
    let adjustment = num_items + 1;
    let mut ends = MutableBuffer::with_capacity(l.len() * 8);
    for (i, w) in offs.windows(2).enumerate() {
        let end = (w[1].as_usize() - first) as u64;
        ends.push(if l.is_valid(i) { end } else { end + adjustment });
    }
    let offsets = ArrayEncoding {
        array_encoding: Some(E::Nullable(Box::new(enc20::Nullable {
            nullability: Some(Nullability::NoNulls(Box::new(NoNull {
                values: Some(Box::new(ArrayEncoding {
                    array_encoding: Some(E::Flat(enc20::Flat {
                        bits_per_value: 64,
                        buffer: Some(enc20::Buffer {
                            buffer_index: 0,
                            buffer_type: BufferType::Page as i32,
                        }),
                        compression: None,
                    })),
                })),
            }))),
        }))),
    };
    out.pages.push(Page20 {
        column,
        buffers: vec![ends.into()],
        encoding: ArrayEncoding {
            array_encoding: Some(E::List(Box::new(enc20::List {
                offsets: Some(Box::new(offsets)),
                null_offset_adjustment: adjustment,
                num_items,
            }))),
        },
        num_rows: l.len() as u64,
    });
    // Every flush gives each item column a page, empty when the lists are.
    let items = l.values().slice(first, last - first);
    node(item, &items, column + 1, out)
}
