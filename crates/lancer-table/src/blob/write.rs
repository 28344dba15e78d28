//! Writing blob v2 columns (reference "Blob Columns", lines ~6700–7160; file format
//! 2.2): each value's payload placed by size, as pylance 14 places it.
//!
//! | payload size | stored as (kind) | where |
//! |---|---|---|
//! | ≤ inline threshold (64 KiB) | inline (0) | the data file itself |
//! | ≤ dedicated threshold (4 MiB) | packed (1) | a shared sidecar `data/<file stem>/<id>.blob`, a new one once the next payload would take it past the pack-file threshold (1 GiB) |
//! | larger | dedicated (2) | a sidecar of its own |
//! | a URI | external (3) | the URI (with an optional byte range) |
//!
//! The dedicated threshold is checked first; thresholds are per column (field metadata
//! `lance-encoding:blob-inline-size-threshold` / `-dedicated-size-threshold` /
//! `-pack-file-size-threshold`, as pylance's `blob_field` sets them), the pack-file one
//! also per write ([`BlobWriteOptions`]). Sidecar ids count from 1 per data file, in the
//! order sidecars are started. A blob column is given as pylance's logical struct
//! (`data: large_binary, uri: utf8[, position: u64, size: u64]`, extension
//! `lance.blob.v2`) or as binary values (a `lance-encoding:blob` column, which 2.2
//! stores as blob v2 as pylance 14 does, or Lancer's own read of a blob column).

use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;

use arrow_array::builder::{
    LargeBinaryBuilder, StringBuilder, UInt32Builder, UInt64Builder, UInt8Builder,
};
use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::{Array, ArrayRef, RecordBatch, RecordBatchOptions, StructArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use lancer_format::container::FileVersion;
use lancer_format::schema::{ARROW_EXT_META, ARROW_EXT_NAME, BLOB_KEY, BLOB_V2_EXT};
use lancer_format::writer::blob_v2::{
    self, KIND_DEDICATED, KIND_EXTERNAL, KIND_INLINE, KIND_PACKED,
};

use crate::{Result, TableError};

/// Field metadata: payloads up to this many bytes stay in the data file.
pub const INLINE_THRESHOLD_KEY: &str = "lance-encoding:blob-inline-size-threshold";
/// Field metadata: payloads over this many bytes get a sidecar of their own.
pub const DEDICATED_THRESHOLD_KEY: &str = "lance-encoding:blob-dedicated-size-threshold";
/// Field metadata: a packed sidecar is closed before it would pass this many bytes.
pub const PACK_THRESHOLD_KEY: &str = "lance-encoding:blob-pack-file-size-threshold";

/// pylance 14's default inline threshold (measured: 65,536 bytes inline, 65,537 packed).
pub const DEFAULT_INLINE_THRESHOLD: u64 = 64 * 1024;
/// pylance 14's default dedicated threshold (4 MiB packed, one byte more dedicated).
pub const DEFAULT_DEDICATED_THRESHOLD: u64 = 4 * 1024 * 1024;
/// pylance's default size of a packed sidecar (`blob_pack_file_size_threshold`).
pub const DEFAULT_PACK_FILE_THRESHOLD: u64 = 1 << 30;

/// Write options for blob v2 columns (pylance's `write_dataset` arguments).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BlobWriteOptions {
    /// Size of a packed sidecar at most (`blob_pack_file_size_threshold`); `None`:
    /// the column's metadata, else 1 GiB.
    pub pack_file_size_threshold: Option<u64>,
    /// Store external URIs that lie outside the dataset's registered bases as absolute
    /// URIs (`allow_external_blob_outside_bases`); refused otherwise.
    pub allow_external_outside_bases: bool,
    /// Read external URIs' bytes while writing and store them as any payload
    /// (pylance's `external_blob_mode="ingest"`) instead of referencing them.
    pub ingest_external: bool,
    /// The dataset's registered base paths (id, path): an external URI under one is
    /// stored as the base's id and the relative path (filled by the write from the
    /// dataset, or from `initial_bases` when it creates one).
    pub bases: Vec<(u32, String)>,
}

/// True if `f` (a top-level field of data written at `storage`) is a blob v2 column.
pub(crate) fn is_blob_v2_field(f: &Field, storage: FileVersion) -> bool {
    if storage < FileVersion::V2_2 {
        return false;
    }
    let ext = f.metadata().get(ARROW_EXT_NAME).map(String::as_str) == Some(BLOB_V2_EXT);
    let marked = f.metadata().contains_key(BLOB_KEY)
        && matches!(f.data_type(), DataType::Binary | DataType::LargeBinary);
    (ext && matches!(f.data_type(), DataType::Struct(_))) || marked
}

/// True if a struct of type `dt` holds blob columns at 2.2: blob v2 fields or
/// `lance-encoding:blob` binaries, at any depth of structs.
fn holds_blob(dt: &DataType) -> bool {
    matches!(dt, DataType::Struct(fs) if fs.iter().any(|c| is_blob_v2_field(c, FileVersion::V2_2) || holds_blob(c.data_type())))
}

/// True if a blob v2 field sits inside a list somewhere in `dt`.
fn nested_blob_in_list(dt: &DataType) -> bool {
    match dt {
        DataType::Struct(fs) => fs.iter().any(|f| {
            f.metadata().get(ARROW_EXT_NAME).map(String::as_str) != Some(BLOB_V2_EXT)
                && nested_blob_in_list(f.data_type())
        }),
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::FixedSizeList(f, _)
        | DataType::Map(f, _) => {
            nested_blob_v2(&DataType::Struct(vec![f.clone()].into()), "").is_some()
        }
        _ => false,
    }
}

/// The path of a blob v2 field nested inside `dt` (a column's type), if any.
fn nested_blob_v2(dt: &DataType, name: &str) -> Option<String> {
    let children: Vec<&Field> = match dt {
        DataType::Struct(fs) => fs.iter().map(|f| f.as_ref()).collect(),
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
            vec![f.as_ref()]
        }
        DataType::Map(f, _) => vec![f.as_ref()],
        _ => return None,
    };
    children.into_iter().find_map(|c| {
        let path = format!("{name}.{}", c.name());
        if c.metadata().get(ARROW_EXT_NAME).map(String::as_str) == Some(BLOB_V2_EXT) {
            Some(path)
        } else {
            nested_blob_v2(c.data_type(), &path)
        }
    })
}

/// True if `dt` is one of pylance's logical blob struct shapes (`data`, `uri`, and
/// optionally `position`, `size`).
pub(crate) fn is_logical_blob_type(dt: &DataType) -> bool {
    let DataType::Struct(fs) = dt else {
        return false;
    };
    let names: Vec<&str> = fs.iter().map(|f| f.name().as_str()).collect();
    names == ["data", "uri"] || names == ["data", "uri", "position", "size"]
}

/// The schema a dataset records for data of `schema` written at `storage`: a
/// `lance-encoding:blob` binary column becomes pylance 14's minimal blob v2 struct
/// (`data`, `uri`) at 2.2 and later; a blob v2 struct below 2.2 is refused.
pub fn manifest_schema(schema: &SchemaRef, storage: FileVersion) -> Result<SchemaRef> {
    for f in schema.fields() {
        if let Some(path) = nested_blob_v2(f.data_type(), f.name()) {
            if storage < FileVersion::V2_2 {
                return Err(TableError::invalid(format!(
                    "column {path:?} is a blob v2 column, which needs data storage version \
                     2.2 or later (this write is {storage}); write with \
                     data_storage_version=\"2.2\""
                )));
            }
            if !matches!(f.data_type(), DataType::Struct(_)) || nested_blob_in_list(f.data_type()) {
                return Err(TableError::invalid(format!(
                    "blob column {path:?} sits inside a list: Lancer writes blob v2 columns at \
                     the top level or inside structs; store the blobs as a column of their own"
                )));
            }
        }
        let ext = f.metadata().get(ARROW_EXT_NAME).map(String::as_str) == Some(BLOB_V2_EXT);
        if ext && storage < FileVersion::V2_2 {
            return Err(TableError::invalid(format!(
                "column {:?} is a blob v2 column, which needs data storage version 2.2 or \
                 later (this write is {storage}); write with data_storage_version=\"2.2\", or \
                 mark a large_binary column with lance-encoding:blob for a legacy blob column",
                f.name()
            )));
        }
        if ext && !is_logical_blob_type(f.data_type()) {
            return Err(TableError::invalid(format!(
                "blob v2 column {:?} is {}: its values must be a struct of data: \
                 large_binary, uri: string and optionally position, size: uint64 (pylance's \
                 blob_field / blob_array)",
                f.name(),
                f.data_type()
            )));
        }
    }
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| manifest_field(f, storage))
        .collect();
    Ok(Arc::new(Schema::new_with_metadata(
        fields,
        schema.metadata().clone(),
    )))
}

/// `f` as the manifest records it: a `lance-encoding:blob` binary — a column, or a
/// field inside structs — as pylance 14's minimal blob v2 struct at 2.2 and later.
fn manifest_field(f: &Field, storage: FileVersion) -> Field {
    if is_blob_v2_field(f, storage) && !matches!(f.data_type(), DataType::Struct(_)) {
        let mut md: HashMap<String, String> = f.metadata().clone();
        md.remove(BLOB_KEY);
        md.remove(ARROW_EXT_META);
        md.insert(ARROW_EXT_NAME.into(), BLOB_V2_EXT.into());
        return Field::new(
            f.name(),
            DataType::Struct(
                vec![
                    Field::new("data", DataType::LargeBinary, true),
                    Field::new("uri", DataType::Utf8, true),
                ]
                .into(),
            ),
            f.is_nullable(),
        )
        .with_metadata(md);
    }
    match f.data_type() {
        DataType::Struct(fs) if !is_blob_v2_field(f, storage) && storage >= FileVersion::V2_2 => {
            let children: Vec<Field> = fs.iter().map(|c| manifest_field(c, storage)).collect();
            f.clone().with_data_type(DataType::Struct(children.into()))
        }
        _ => f.clone(),
    }
}

/// The thresholds of one blob column.
#[derive(Debug, Clone)]
struct Column {
    /// The top-level column's index, then child positions down to the blob (a blob
    /// inside structs).
    path: Vec<usize>,
    name: String,
    inline: u64,
    dedicated: u64,
    pack: u64,
}

fn threshold(f: &Field, key: &str, default: u64, zero_ok: bool) -> Result<u64> {
    let Some(v) = f.metadata().get(key) else {
        return Ok(default);
    };
    match v.trim().parse::<u64>() {
        Ok(n) if n > 0 || zero_ok => Ok(n),
        _ => Err(TableError::invalid(format!(
            "blob column {:?}: metadata {key} is {v:?}, not a {} number of bytes",
            f.name(),
            if zero_ok { "non-negative" } else { "positive" }
        ))),
    }
}

/// How a write places the payloads of its blob v2 columns.
#[derive(Debug, Clone)]
pub(crate) struct BlobPlan {
    columns: Vec<Column>,
    allow_outside: bool,
    ingest: bool,
    bases: Vec<(u32, String)>,
    /// The schema the data files are written with (blob columns as
    /// [`blob_v2::write_field`]).
    pub file_schema: SchemaRef,
}

impl Column {
    /// The blob column `f` at `path`, its thresholds from its metadata.
    fn of(f: &Field, path: Vec<usize>, name: String, options: &BlobWriteOptions) -> Result<Self> {
        let inline = threshold(f, INLINE_THRESHOLD_KEY, DEFAULT_INLINE_THRESHOLD, true)?;
        let dedicated = threshold(
            f,
            DEDICATED_THRESHOLD_KEY,
            DEFAULT_DEDICATED_THRESHOLD,
            false,
        )?;
        let pack = match options.pack_file_size_threshold {
            Some(0) => {
                return Err(TableError::invalid(
                    "blob_pack_file_size_threshold must be positive",
                ))
            }
            Some(n) => n,
            None => threshold(f, PACK_THRESHOLD_KEY, DEFAULT_PACK_FILE_THRESHOLD, false)?,
        };
        Ok(Column {
            path,
            name,
            inline,
            dedicated,
            pack,
        })
    }

    /// Struct field `f` at `path` with its blob v2 descendants as the writer's blob
    /// fields (each added to `columns`).
    fn nested(
        f: &Field,
        path: Vec<usize>,
        name: &str,
        options: &BlobWriteOptions,
        columns: &mut Vec<Column>,
    ) -> Result<Field> {
        let DataType::Struct(fs) = f.data_type() else {
            return Ok(f.clone());
        };
        let mut out = Vec::with_capacity(fs.len());
        for (k, c) in fs.iter().enumerate() {
            let mut p = path.clone();
            p.push(k);
            let n = format!("{name}.{}", c.name());
            if is_blob_v2_field(c, FileVersion::V2_2) {
                columns.push(Column::of(c, p, n, options)?);
                out.push(blob_v2::write_field(c.name(), c.is_nullable()));
            } else if holds_blob(c.data_type()) {
                out.push(Column::nested(c, p, &n, options, columns)?);
            } else {
                out.push(c.as_ref().clone());
            }
        }
        Ok(f.clone().with_data_type(DataType::Struct(out.into())))
    }
}

impl BlobPlan {
    /// The plan for data of `schema` at `storage`; `None` without blob v2 columns.
    pub fn new(
        schema: &SchemaRef,
        storage: FileVersion,
        options: &BlobWriteOptions,
    ) -> Result<Option<Self>> {
        let mut columns = Vec::new();
        let mut fields = Vec::with_capacity(schema.fields().len());
        for (index, f) in schema.fields().iter().enumerate() {
            if is_blob_v2_field(f, storage) {
                columns.push(Column::of(f, vec![index], f.name().clone(), options)?);
                fields.push(blob_v2::write_field(f.name(), f.is_nullable()));
            } else if storage >= FileVersion::V2_2 && holds_blob(f.data_type()) {
                fields.push(Column::nested(
                    f,
                    vec![index],
                    f.name(),
                    options,
                    &mut columns,
                )?);
            } else {
                fields.push(f.as_ref().clone());
            }
        }
        if columns.is_empty() {
            return Ok(None);
        }
        if options.ingest_external && options.allow_external_outside_bases {
            return Err(TableError::invalid(
                "allow_external_blob_outside_bases applies to referenced external blobs: \
                 it cannot be combined with external_blob_mode=\"ingest\"",
            ));
        }
        Ok(Some(Self {
            columns,
            allow_outside: options.allow_external_outside_bases,
            ingest: options.ingest_external,
            bases: options.bases.clone(),
            file_schema: Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone())),
        }))
    }

    /// True if column `index` is (or holds) a blob column of this plan.
    pub fn is_blob_column(&self, index: usize) -> bool {
        self.columns.iter().any(|c| c.path.first() == Some(&index))
    }

    /// `batch` with its blob columns placed: payloads over the inline threshold
    /// written to `sidecars`, every blob column in the writer's form.
    pub fn place(&self, batch: &RecordBatch, sidecars: &mut Sidecars<'_>) -> Result<RecordBatch> {
        let mut cols = batch.columns().to_vec();
        for (index, col) in cols.iter_mut().enumerate() {
            if let Some(c) = self.columns.iter().find(|c| c.path == [index]) {
                *col = self.place_column(c, col, sidecars)?;
            } else if self.is_blob_column(index) {
                let target = self.file_schema.field(index).data_type().clone();
                *col = self.place_within(&[index], col, &target, sidecars)?;
            }
        }
        let opts = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
        Ok(RecordBatch::try_new_with_options(
            self.file_schema.clone(),
            cols,
            &opts,
        )?)
    }

    /// `arr` (the struct at `path`) rebuilt as `target` (its file type): the blob
    /// columns below placed, everything else as it is, its nulls kept.
    fn place_within(
        &self,
        path: &[usize],
        arr: &ArrayRef,
        target: &DataType,
        sidecars: &mut Sidecars<'_>,
    ) -> Result<ArrayRef> {
        let (Some(s), DataType::Struct(fields)) = (arr.as_struct_opt(), target) else {
            return Err(TableError::invalid(format!(
                "a struct holding blob columns is {} in the data",
                arr.data_type()
            )));
        };
        let mut children = Vec::with_capacity(fields.len());
        for (k, (child, f)) in s.columns().iter().zip(fields.iter()).enumerate() {
            let mut p = path.to_vec();
            p.push(k);
            children.push(if let Some(c) = self.columns.iter().find(|c| c.path == p) {
                self.place_column(c, child, sidecars)?
            } else if self.columns.iter().any(|c| c.path.starts_with(&p)) {
                self.place_within(&p, child, f.data_type(), sidecars)?
            } else {
                child.clone()
            });
        }
        Ok(Arc::new(StructArray::try_new(
            fields.clone(),
            children,
            s.nulls().cloned(),
        )?))
    }

    fn place_column(
        &self,
        c: &Column,
        col: &ArrayRef,
        sidecars: &mut Sidecars<'_>,
    ) -> Result<ArrayRef> {
        let values = BlobValues::of(col, &c.name)?;
        let n = col.len();
        let mut kind = UInt8Builder::with_capacity(n);
        let mut pos = UInt64Builder::with_capacity(n);
        let mut size = UInt64Builder::with_capacity(n);
        let mut id = UInt32Builder::with_capacity(n);
        let mut uri = StringBuilder::with_capacity(n, 0);
        let mut data = LargeBinaryBuilder::with_capacity(n, 0);
        let place =
            |bytes: &[u8], sidecars: &mut Sidecars<'_>| -> Result<(u8, u64, u64, u32, bool)> {
                let len = bytes.len() as u64;
                Ok(if len > c.dedicated {
                    (KIND_DEDICATED, 0, len, sidecars.dedicated(bytes)?, false)
                } else if len > c.inline {
                    let (i, p) = sidecars.packed(bytes, c.pack)?;
                    (KIND_PACKED, p, len, i, false)
                } else {
                    (KIND_INLINE, 0, len, 0, true)
                })
            };
        for row in 0..n {
            let v = values.get(row, &c.name)?;
            let ingested;
            let relative;
            let (k, p, z, i, u, d): (u8, u64, u64, u32, &str, Option<&[u8]>) = match v {
                Value::Null => (0, 0, 0, 0, "", None),
                Value::Data(bytes) => {
                    let (k, p, z, i, inline) = place(bytes, sidecars)?;
                    (k, p, z, i, "", inline.then_some(bytes))
                }
                Value::Uri(u, range) if self.ingest => {
                    ingested = sidecars.ingest(u, range, &c.name, row)?;
                    let (k, p, z, i, inline) = place(&ingested, sidecars)?;
                    (k, p, z, i, "", inline.then_some(&ingested[..]))
                }
                Value::Uri(u, range) => {
                    let (p, z) = range.unwrap_or((0, 0));
                    // under a registered base: its id and the path relative to it
                    if let Some((base, rel)) = crate::write::relative_to(&self.bases, u) {
                        relative = rel;
                        (KIND_EXTERNAL, p, z, base, relative.as_str(), None)
                    } else {
                        check_uri(u, &c.name, row, self.allow_outside)?;
                        (KIND_EXTERNAL, p, z, 0, u, None)
                    }
                }
            };
            kind.append_value(k);
            pos.append_value(p);
            size.append_value(z);
            id.append_value(i);
            uri.append_value(u);
            data.append_option(d);
        }
        let DataType::Struct(fields) = blob_v2::write_type() else {
            return Err(TableError::corrupt("the blob write type is not a struct"));
        };
        let children: Vec<ArrayRef> = vec![
            Arc::new(kind.finish()),
            Arc::new(pos.finish()),
            Arc::new(size.finish()),
            Arc::new(id.finish()),
            Arc::new(uri.finish()),
            Arc::new(data.finish()),
        ];
        Ok(Arc::new(StructArray::try_new(
            fields,
            children,
            values.nulls(),
        )?))
    }
}

/// An external URI must be absolute (`scheme://...`) and, without registered bases,
/// allowed outside them.
fn check_uri(u: &str, column: &str, row: usize, allow_outside: bool) -> Result<()> {
    let absolute = u
        .split_once("://")
        .is_some_and(|(scheme, rest)| !scheme.is_empty() && !rest.is_empty());
    if !absolute {
        return Err(TableError::invalid(format!(
            "blob column {column:?}, row {row}: external URI {u:?} is not an absolute URI \
             (scheme://...); give e.g. file:///path or s3://bucket/key"
        )));
    }
    if !allow_outside {
        return Err(TableError::invalid(format!(
            "blob column {column:?}, row {row}: external blob URI {u:?} is outside the \
             dataset's registered external bases; set allow_external_blob_outside_bases to \
             store it as an absolute external URI"
        )));
    }
    Ok(())
}

/// One blob value of the input.
enum Value<'a> {
    Null,
    Data(&'a [u8]),
    /// A URI and an optional (position, size) range within it.
    Uri(&'a str, Option<(u64, u64)>),
}

/// A blob column of the input, in either of its forms.
enum BlobValues<'a> {
    Binary(&'a dyn Array),
    Struct(&'a StructArray),
}

impl<'a> BlobValues<'a> {
    fn of(col: &'a ArrayRef, name: &str) -> Result<Self> {
        match col.data_type() {
            DataType::Binary | DataType::LargeBinary => Ok(Self::Binary(col.as_ref())),
            dt if is_logical_blob_type(dt) => Ok(Self::Struct(col.as_struct())),
            dt => Err(TableError::invalid(format!(
                "blob column {name:?} is {dt} in the data: give binary values or pylance's \
                 blob struct (data: large_binary, uri: string[, position, size: uint64]), e.g. \
                 blob_array"
            ))),
        }
    }

    fn nulls(&self) -> Option<arrow_buffer::NullBuffer> {
        match self {
            Self::Binary(a) => a.logical_nulls(),
            Self::Struct(s) => s.nulls().cloned(),
        }
    }

    fn get(&self, row: usize, name: &str) -> Result<Value<'a>> {
        match self {
            Self::Binary(a) => {
                if a.is_null(row) {
                    return Ok(Value::Null);
                }
                Ok(Value::Data(match a.data_type() {
                    DataType::Binary => a.as_binary::<i32>().value(row),
                    _ => a.as_binary::<i64>().value(row),
                }))
            }
            Self::Struct(s) => {
                if s.is_null(row) {
                    return Ok(Value::Null);
                }
                let bad = |what: &str| {
                    TableError::invalid(format!("blob column {name:?}, row {row}: {what}"))
                };
                let data = s.column(0);
                let uri = s.column(1);
                let (has_data, has_uri) = (data.is_valid(row), uri.is_valid(row));
                let range = if s.num_columns() == 4 {
                    let p = s.column(2).as_primitive_opt::<UInt64Type>();
                    let z = s.column(3).as_primitive_opt::<UInt64Type>();
                    let (Some(p), Some(z)) = (p, z) else {
                        return Err(bad("position and size must be uint64"));
                    };
                    match (p.is_valid(row), z.is_valid(row)) {
                        (false, false) => None,
                        (true, true) => Some((p.value(row), z.value(row))),
                        _ => {
                            return Err(bad(
                                "an external blob sets both position and size, or neither",
                            ))
                        }
                    }
                } else {
                    None
                };
                match (has_data, has_uri) {
                    (true, true) => Err(bad("a blob sets data or uri, not both")),
                    (false, false) => Err(bad("a non-null blob sets data or uri (use a null for a null blob, b\"\" for an empty one)")),
                    (true, false) => {
                        if range.is_some() {
                            return Err(bad("position and size select a range of an external uri; inline data has none"));
                        }
                        Ok(Value::Data(match data.data_type() {
                            DataType::Binary => data.as_binary::<i32>().value(row),
                            DataType::LargeBinary => data.as_binary::<i64>().value(row),
                            dt => return Err(bad(&format!("data must be large_binary, not {dt}"))),
                        }))
                    }
                    (false, true) => {
                        let u = match uri.data_type() {
                            DataType::Utf8 => uri.as_string::<i32>().value(row),
                            DataType::LargeUtf8 => uri.as_string::<i64>().value(row),
                            dt => return Err(bad(&format!("uri must be a string, not {dt}"))),
                        };
                        if u.is_empty() {
                            return Err(bad("the uri is empty"));
                        }
                        if let Some((p, z)) = range {
                            if z == 0 {
                                return Err(bad("an external blob range has size > 0"));
                            }
                            if p.checked_add(z).is_none() {
                                return Err(bad("position + size overflows 64 bits"));
                            }
                        }
                        Ok(Value::Uri(u, range))
                    }
                }
            }
        }
    }
}

/// The sidecar files of one data file being written: `<file without .lance>/<id>.blob`
/// in the data file's store (`data/<stem>/` at home, the same beside a file written to
/// a registered base).
pub(crate) struct Sidecars<'a> {
    store: &'a lancer_io::Store,
    dir: String,
    next_id: u32,
    /// The open packed sidecar: its id, writer and bytes so far.
    pack: Option<(u32, lancer_io::storage::ObjectWrite, u64)>,
    /// Dedicated sidecars being uploaded (object stores: a few at once).
    uploads: std::collections::VecDeque<std::thread::JoinHandle<Result<()>>>,
}

/// Dedicated sidecars uploading at once at most (object stores).
const UPLOADS_IN_FLIGHT: usize = 4;

impl<'a> Sidecars<'a> {
    /// The sidecars of data file `file` (`….lance`) of `store`.
    pub fn new(store: &'a lancer_io::Store, file: &str) -> Self {
        Self {
            store,
            dir: file.strip_suffix(".lance").unwrap_or(file).to_string(),
            next_id: 1,
            pack: None,
            uploads: Default::default(),
        }
    }

    fn take_id(&mut self) -> Result<u32> {
        let id = self.next_id;
        self.next_id = id.checked_add(1).ok_or_else(|| {
            TableError::invalid("more than 4 billion blob sidecars for one data file")
        })?;
        Ok(id)
    }

    fn path(&self, id: u32) -> String {
        format!("{}/{}", self.dir, crate::blob::sidecar_name(id))
    }

    fn io_err(&self, id: u32, e: std::io::Error) -> TableError {
        TableError::Io {
            path: self.store.display(&self.path(id)),
            source: e,
        }
    }

    /// Waits for the oldest upload.
    fn join_one(&mut self) -> Result<()> {
        match self.uploads.pop_front() {
            Some(h) => h
                .join()
                .map_err(|_| TableError::corrupt("a blob upload thread panicked"))?,
            None => Ok(()),
        }
    }

    /// Writes `bytes` as a sidecar of its own; returns its id. On object stores the
    /// upload runs in the background (a few at once) while the write goes on.
    fn dedicated(&mut self, bytes: &[u8]) -> Result<u32> {
        let id = self.take_id()?;
        if self.store.local_root().is_none() {
            while self.uploads.len() >= UPLOADS_IN_FLIGHT {
                self.join_one()?;
            }
            let store = self.store.clone();
            let path = self.path(id);
            let data = bytes::Bytes::copy_from_slice(bytes);
            self.uploads
                .push_back(std::thread::spawn(move || Ok(store.put(&path, data)?)));
            return Ok(id);
        }
        let mut w = self.store.writer(&self.path(id))?;
        w.write_all(bytes).map_err(|e| self.io_err(id, e))?;
        w.finish()?;
        Ok(id)
    }

    /// Appends `bytes` to the open packed sidecar (a new one when they would take it
    /// past `limit`); returns its id and the bytes' position in it.
    fn packed(&mut self, bytes: &[u8], limit: u64) -> Result<(u32, u64)> {
        let len = bytes.len() as u64;
        if let Some((_, _, at)) = &self.pack {
            if *at > 0 && at.saturating_add(len) > limit {
                self.close_pack()?;
            }
        }
        if self.pack.is_none() {
            let id = self.take_id()?;
            let w = self.store.writer(&self.path(id))?;
            self.pack = Some((id, w, 0));
        }
        let Some((id, w, at)) = self.pack.as_mut() else {
            return Err(TableError::corrupt("no packed blob sidecar open"));
        };
        let (id, start) = (*id, *at);
        if let Err(e) = w.write_all(bytes) {
            return Err(self.io_err(id, e));
        }
        if let Some((_, _, at)) = self.pack.as_mut() {
            *at += len;
        }
        Ok((id, start))
    }

    fn close_pack(&mut self) -> Result<()> {
        if let Some((id, mut w, _)) = self.pack.take() {
            w.flush().map_err(|e| self.io_err(id, e))?;
            w.finish()?;
        }
        Ok(())
    }

    /// The bytes of external blob `uri` (`range` of it, or all), for ingestion.
    fn ingest(
        &self,
        uri: &str,
        range: Option<(u64, u64)>,
        column: &str,
        row: usize,
    ) -> Result<bytes::Bytes> {
        let bad = |e: String| {
            TableError::invalid(format!(
                "blob column {column:?}, row {row}: external blob {uri:?} cannot be ingested: {e}"
            ))
        };
        let reader = crate::blob::external(uri, &Default::default(), self.store.context())
            .map_err(|e| bad(e.to_string()))?;
        let size = reader.size().map_err(|e| bad(e.to_string()))?;
        let r = match range {
            Some((p, z)) => p..p.saturating_add(z),
            None => 0..size,
        };
        if r.end > size {
            return Err(bad(format!(
                "bytes {}..{} lie past its {size} bytes",
                r.start, r.end
            )));
        }
        let mut got = reader.read_ranges(&[r]).map_err(|e| bad(e.to_string()))?;
        got.pop().ok_or_else(|| bad("no bytes returned".into()))
    }

    /// Completes the sidecars (before the data file that names them is finished).
    pub fn finish(mut self) -> Result<()> {
        self.close_pack()?;
        while !self.uploads.is_empty() {
            self.join_one()?;
        }
        Ok(())
    }
}
