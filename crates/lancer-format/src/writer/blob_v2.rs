//! Blob v2 columns of 2.2 data files, as the writer stores them (reference "Blob
//! Columns", lines ~6700–7160: "Blob v2 introduces a new storage layout that requires
//! file format >= 2.2").
//!
//! A blob v2 column's data file holds one descriptor per row, `struct<kind: u8,
//! position: u64, size: u64, blob_id: u32, blob_uri: utf8>` (null for a null blob),
//! encoded as a full-zip page of a variable packed struct. The file's schema lists the
//! column as a struct marked `lance-encoding:blob` and `lance-encoding:packed` with no
//! children, followed by the descriptor's five fields with neither id nor parent (-1 /
//! -1), as pylance 14 writes it.
//!
//! The writer is handed the column as a [`write_type`] struct: the descriptor's fields
//! plus `data`, the payload of rows stored inline (kind 0). It writes each inline
//! payload into the data file itself (64-byte aligned, before the page that describes
//! it) and sets the row's `position` to where it went; the other kinds (sidecar files,
//! external URIs) arrive already placed by the caller, who does the I/O.

use std::sync::Arc;

use arrow_array::builder::{StringBuilder, UInt32Builder, UInt64Builder, UInt8Builder};
use arrow_array::cast::AsArray;
use arrow_array::types::{UInt32Type, UInt64Type, UInt8Type};
use arrow_array::{Array, ArrayRef, StructArray};
use arrow_schema::{DataType, Field, Fields};

use crate::schema::{ARROW_EXT_NAME, BLOB_KEY, BLOB_V2_EXT, PACKED_KEY};
use crate::{pb, FormatError, Result};

/// Kind of a blob stored in the data file itself.
pub const KIND_INLINE: u8 = 0;
/// Kind of a blob stored in a shared (packed) sidecar.
pub const KIND_PACKED: u8 = 1;
/// Kind of a blob stored in a sidecar of its own.
pub const KIND_DEDICATED: u8 = 2;
/// Kind of a blob stored outside the dataset (a URI).
pub const KIND_EXTERNAL: u8 = 3;

/// The descriptor's fields, in stored order.
pub fn descriptor_fields() -> Fields {
    Fields::from(vec![
        Field::new("kind", DataType::UInt8, false),
        Field::new("position", DataType::UInt64, false),
        Field::new("size", DataType::UInt64, false),
        Field::new("blob_id", DataType::UInt32, false),
        Field::new("blob_uri", DataType::Utf8, false),
    ])
}

/// The type the writer is handed for a blob v2 column: the descriptor's fields plus
/// `data`, the payload of inline rows (null for the other kinds).
pub fn write_type() -> DataType {
    let mut fs: Vec<Field> = descriptor_fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fs.push(Field::new("data", DataType::LargeBinary, true));
    DataType::Struct(fs.into())
}

/// A file schema field for blob v2 column `name`: [`write_type`], tagged with the
/// blob v2 extension name.
pub fn write_field(name: &str, nullable: bool) -> Field {
    Field::new(name, write_type(), nullable).with_metadata(
        [(ARROW_EXT_NAME.to_string(), BLOB_V2_EXT.to_string())]
            .into_iter()
            .collect(),
    )
}

/// True if `f` is a field made by [`write_field`].
pub fn is_write_field(f: &Field) -> bool {
    f.metadata().get(ARROW_EXT_NAME).map(String::as_str) == Some(BLOB_V2_EXT)
        && f.data_type() == &write_type()
}

/// True if `f` is a blob v2 write field or a struct holding one (at any depth).
pub fn holds_write_field(f: &Field) -> bool {
    is_write_field(f)
        || matches!(f.data_type(), DataType::Struct(fs) if fs.iter().any(|c| holds_write_field(c)))
}

/// The file schema's entries for blob v2 field `f` (see the module docs): the column
/// under id `id`, then the descriptor's fields without ids.
pub(crate) fn pb_fields(f: &Field, id: i32, parent: i32) -> Vec<pb::file::Field> {
    let marker = |k: &str| (k.to_string(), b"true".to_vec());
    let mut out = vec![pb::file::Field {
        r#type: 0,
        name: f.name().clone(),
        id,
        parent_id: parent,
        logical_type: "struct".into(),
        nullable: f.is_nullable(),
        encoding: pb::file::Encoding::None as i32,
        dictionary: None,
        extension_name: String::new(),
        metadata: [marker(BLOB_KEY), marker(PACKED_KEY)].into_iter().collect(),
        unenforced_primary_key: false,
    }];
    for d in descriptor_fields().iter() {
        let (lt, enc) = match d.data_type() {
            DataType::UInt8 => ("uint8", pb::file::Encoding::Plain),
            DataType::UInt32 => ("uint32", pb::file::Encoding::Plain),
            DataType::UInt64 => ("uint64", pb::file::Encoding::Plain),
            _ => ("string", pb::file::Encoding::VarBinary),
        };
        out.push(pb::file::Field {
            r#type: 0,
            name: d.name().clone(),
            id: -1,
            parent_id: -1,
            logical_type: lt.into(),
            nullable: false,
            encoding: enc as i32,
            dictionary: None,
            extension_name: String::new(),
            metadata: Default::default(),
            unenforced_primary_key: false,
        });
    }
    out
}

/// Turns a [`write_type`] column into descriptors, handing each inline payload to
/// `place` (which writes it and returns its position in the data file). Rows of other
/// kinds keep their position; a null row stays null with zeroed fields.
pub(crate) fn to_descriptors(
    col: &ArrayRef,
    mut place: impl FnMut(&[u8], &arrow_buffer::Buffer, usize) -> Result<u64>,
) -> Result<ArrayRef> {
    let s = col
        .as_struct_opt()
        .filter(|s| s.num_columns() == 6)
        .ok_or_else(|| FormatError::UnsupportedType {
            logical_type: col.data_type().to_string(),
            detail: "a blob v2 column is written from the writer's blob struct".into(),
        })?;
    let kind = s.column(0).as_primitive::<UInt8Type>();
    let position = s.column(1).as_primitive::<UInt64Type>();
    let size = s.column(2).as_primitive::<UInt64Type>();
    let blob_id = s.column(3).as_primitive::<UInt32Type>();
    let uri = s.column(4).as_string::<i32>();
    let data = s.column(5).as_binary::<i64>();
    let n = s.len();
    let mut k = UInt8Builder::with_capacity(n);
    let mut p = UInt64Builder::with_capacity(n);
    let mut z = UInt64Builder::with_capacity(n);
    let mut b = UInt32Builder::with_capacity(n);
    let mut u = StringBuilder::with_capacity(n, 0);
    for i in 0..n {
        if s.is_null(i) {
            k.append_value(0);
            p.append_value(0);
            z.append_value(0);
            b.append_value(0);
            u.append_value("");
            continue;
        }
        let kd = kind.value(i);
        if kd == KIND_INLINE {
            let bytes: &[u8] = if data.is_null(i) { &[] } else { data.value(i) };
            let start = data.value_offsets()[i] as usize;
            let at = place(bytes, data.values(), start)?;
            k.append_value(KIND_INLINE);
            p.append_value(at);
            z.append_value(bytes.len() as u64);
            b.append_value(0);
            u.append_value("");
        } else {
            k.append_value(kd);
            p.append_value(position.value(i));
            z.append_value(size.value(i));
            b.append_value(blob_id.value(i));
            u.append_value(uri.value(i));
        }
    }
    let children: Vec<ArrayRef> = vec![
        Arc::new(k.finish()),
        Arc::new(p.finish()),
        Arc::new(z.finish()),
        Arc::new(b.finish()),
        Arc::new(u.finish()),
    ];
    Ok(Arc::new(StructArray::try_new(
        descriptor_fields(),
        children,
        s.nulls().cloned(),
    )?))
}
