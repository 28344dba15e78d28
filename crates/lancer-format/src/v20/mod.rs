//! Lance 2.0 pages: the `ArrayEncoding` tree of `lance.encodings`.
//!
//! In 2.0 every node of the type tree has a column of its own, in pre-order: a struct
//! column (pages encoded `SimpleStruct`, no data; 2.0 stores no struct validity) is
//! followed by its children's columns, a list column (pages encoded `List`, holding
//! offsets) by its item's columns; packed structs and everything else take one column.
//! Pages of a column are independent: each decodes the rows it holds from its own
//! buffers (plus column and file buffers it may refer to).
//!
//! Reads go page by page and, within a page, fetch only the bytes the requested rows
//! need where the encoding allows it (fixed-width and bit-packed values, bitmaps,
//! string offsets and bytes); compressed buffers and dictionaries are read whole.
//!
//! Modules: [`page`] resolves buffers and reads parts of them, [`decode`] walks the
//! encoding tree, [`values`] / [`binary`] / [`offsets`] decode the leaf encodings,
//! [`list`] and [`blob`] handle list columns and blob columns.

mod binary;
mod blob;
mod decode;
mod list;
mod offsets;
mod page;
#[cfg(test)]
mod synthetic;
mod values;

use std::ops::Range;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, StructArray};
use arrow_schema::DataType;

use crate::container::{ColumnInfo, FileMetadata, PageEncoding};
use crate::pb::enc20::array_encoding::ArrayEncoding as E;
use crate::read::RangeRead;
use crate::reader::FileReader;
use crate::schema::LanceField;
use crate::{FormatError, Result};

use page::{local_ranges, total, PageCtx};

/// Columns a field occupies in a 2.0 file.
pub fn column_count(f: &LanceField) -> usize {
    match &f.data_type {
        DataType::Struct(_) if f.is_packed_struct() => 1,
        DataType::Struct(_) | DataType::List(_) | DataType::LargeList(_) | DataType::Map(_, _) => {
            1 + f.children.iter().map(column_count).sum::<usize>()
        }
        _ => 1,
    }
}

/// What a 2.0 read needs from the file.
pub(crate) struct Ctx<'a> {
    /// The byte source.
    pub io: &'a dyn RangeRead,
    /// The file's metadata.
    pub meta: &'a FileMetadata,
    /// How blob columns are read (payloads or descriptions).
    pub blobs: crate::blob_read::BlobRead,
}

impl Ctx<'_> {
    /// Column `i`, or an error naming the field that needs it.
    pub fn column(&self, i: usize, field: &str) -> Result<&ColumnInfo> {
        self.meta.columns.get(i).ok_or_else(|| {
            FormatError::corrupt(format!(
                "field {field:?} needs column {i} but the file has {} columns",
                self.meta.columns.len()
            ))
        })
    }
}

/// Reads `ranges` of top-level field `f`, whose first column is `column`.
pub fn read_field(
    reader: &FileReader,
    f: &LanceField,
    column: usize,
    ranges: &[Range<u64>],
    blobs: crate::blob_read::BlobRead,
) -> Result<ArrayRef> {
    let meta = reader.metadata();
    let ctx = Ctx {
        io: reader.io().as_ref(),
        meta: meta.as_ref(),
        blobs,
    };
    read_node(&ctx, f, column, ranges)
}

/// Reads `ranges` (sorted, non-overlapping rows of this node's columns) of field `f`,
/// whose first column is `column`.
pub(crate) fn read_node(
    ctx: &Ctx<'_>,
    f: &LanceField,
    column: usize,
    ranges: &[Range<u64>],
) -> Result<ArrayRef> {
    match &f.data_type {
        DataType::Struct(fields) if !f.is_packed_struct() => {
            check_struct_column(ctx.column(column, &f.name)?, &f.name, column)?;
            let mut col = column + 1;
            let mut arrays = Vec::with_capacity(f.children.len());
            for c in &f.children {
                arrays.push(read_node(ctx, c, col, ranges)?);
                col += column_count(c);
            }
            if fields.is_empty() {
                return Ok(Arc::new(StructArray::new_empty_fields(
                    total(ranges) as usize,
                    None,
                )));
            }
            // (children read as descriptions change the struct's type)
            if fields
                .iter()
                .zip(&arrays)
                .all(|(f, a)| f.data_type() == a.data_type())
            {
                return Ok(Arc::new(StructArray::try_new(
                    fields.clone(),
                    arrays,
                    None,
                )?));
            }
            let fields: arrow_schema::Fields = fields
                .iter()
                .zip(&arrays)
                .map(|(f, a)| Arc::new(f.as_ref().clone().with_data_type(a.data_type().clone())))
                .collect();
            Ok(Arc::new(StructArray::try_new(fields, arrays, None)?))
        }
        DataType::List(_) | DataType::LargeList(_) => list::read(ctx, f, column, ranges),
        DataType::Map(_, _) => Err(FormatError::unsupported(
            "map in a 2.0 file",
            format!(
                "field {:?}: Lance 2.0 has no map encoding (maps need 2.2)",
                f.name
            ),
        )),
        dt => {
            let col = ctx.column(column, &f.name)?;
            if blob::is_blob_column(col) {
                return blob::read(ctx, f, column, ranges);
            }
            let binary_like = matches!(
                dt,
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary
            );
            let list_pages = col.pages.first().is_some_and(|p| {
                matches!(&p.encoding, PageEncoding::V20(e) if matches!(e.array_encoding, Some(E::List(_))))
            });
            if binary_like && list_pages {
                return Err(FormatError::unsupported(
                    "binary column stored as a list of bytes",
                    format!(
                        "field {:?}: early 2.0 writers stored strings as a list column plus a \
                         byte column; Lancer reads only the Binary page encoding",
                        f.name
                    ),
                ));
            }
            read_column(ctx, column, &f.name, ranges, dt)
        }
    }
}

/// A struct column must hold `SimpleStruct` pages.
fn check_struct_column(col: &ColumnInfo, name: &str, index: usize) -> Result<()> {
    for p in &col.pages {
        match &p.encoding {
            PageEncoding::V20(e) if matches!(e.array_encoding, Some(E::Struct(_))) => {}
            PageEncoding::V20(e) => {
                return Err(FormatError::corrupt(format!(
                    "struct field {name:?}: column {index} has a {} page, expected SimpleStruct",
                    e.array_encoding
                        .as_ref()
                        .map(decode::name)
                        .unwrap_or("unknown")
                )))
            }
            PageEncoding::V21(_) | PageEncoding::V23(_) => {
                return Err(FormatError::corrupt("2.1+ page layout in a 2.0 file"));
            }
        }
    }
    Ok(())
}

/// Reads `ranges` of a column whose pages each decode to values of type `dt`.
pub(crate) fn read_column(
    ctx: &Ctx<'_>,
    column: usize,
    name: &str,
    ranges: &[Range<u64>],
    dt: &DataType,
) -> Result<ArrayRef> {
    let col = ctx.column(column, name)?;
    let mut parts: Vec<ArrayRef> = Vec::new();
    let mut start = 0u64;
    for (p, page) in col.pages.iter().enumerate() {
        let end = start.checked_add(page.num_rows).ok_or_else(|| {
            FormatError::corrupt(format!("column {column}: page row counts overflow"))
        })?;
        let local = local_ranges(ranges, start, end);
        start = end;
        if local.is_empty() {
            continue;
        }
        let PageEncoding::V20(enc) = &page.encoding else {
            return Err(FormatError::corrupt(format!(
                "column {column} page {p}: 2.1 page layout in a 2.0 file"
            )));
        };
        let pctx = PageCtx {
            io: ctx.io,
            page: &page.buffers,
            column: &col.buffers,
            file: &ctx.meta.global_buffers,
            file_size: ctx.meta.file_size,
        };
        let want = total(&local);
        let out =
            decode::decode(enc, &pctx, &local, dt).map_err(|e| in_page(e, column, p, name))?;
        if out.len() != want {
            return Err(FormatError::corrupt(format!(
                "column {column} page {p} ({name:?}): decoded {} rows, {want} expected",
                out.len()
            )));
        }
        parts.push(
            out.into_array(dt)
                .map_err(|e| in_page(e, column, p, name))?,
        );
    }
    let got: u64 = parts.iter().map(|a| a.len() as u64).sum();
    if got != total(ranges) {
        return Err(FormatError::corrupt(format!(
            "column {column} ({name:?}) has {start} rows, rows up to {} were asked for",
            ranges.last().map(|r| r.end).unwrap_or(0)
        )));
    }
    concat(parts, dt)
}

/// Adds the column and page to a corruption message.
fn in_page(e: FormatError, column: usize, page: usize, name: &str) -> FormatError {
    match e {
        FormatError::Corrupt { what } => {
            FormatError::corrupt(format!("column {column} page {page} ({name:?}): {what}"))
        }
        other => other,
    }
}

/// Concatenates arrays of one type (an empty array of `dt` for none).
pub(crate) fn concat(mut parts: Vec<ArrayRef>, dt: &DataType) -> Result<ArrayRef> {
    match parts.len() {
        0 => Ok(arrow_array::new_empty_array(dt)),
        1 => parts
            .pop()
            .ok_or_else(|| FormatError::corrupt("no decoded parts")),
        _ => {
            let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
            Ok(arrow_select::concat::concat(&refs)?)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use bytes::Bytes;

    use crate::read::TracingRead;
    use crate::reader::FileReader;

    fn open(name: &str) -> Option<(Arc<TracingRead<Bytes>>, FileReader)> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/data/files/pylance-14")
            .join(name);
        let bytes = Bytes::from(std::fs::read(path).ok()?);
        let io = Arc::new(TracingRead::new(bytes));
        let reader = FileReader::open(io.clone()).ok()?;
        io.clear();
        Some((io, reader))
    }

    #[test]
    fn take_reads_only_the_bytes_of_the_rows() {
        let opened = open("many_pages.v2.0.lance");
        assert!(opened.is_some(), "golden file missing or unreadable");
        let Some((io, reader)) = opened else { return };
        for col in ["i", "s", "l", "v"] {
            io.clear();
            let got = reader.take(&[4321, 4322, 7000], Some(&[col]));
            assert!(
                got.as_ref().is_ok_and(|b| b.num_rows() == 3),
                "{col}: {got:?}"
            );
            let read = io.bytes_read();
            assert!(read < 512, "take of 3 rows of {col} read {read} bytes");
        }
    }
}
