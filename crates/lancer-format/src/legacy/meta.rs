//! Opening a legacy file: footer, `Metadata`, the schema-carrying manifest, the page
//! table and the dictionaries.
//!
//! Every position and length read from the file is checked against the file size
//! before it is used, and no buffer is sized by a number from the file before that
//! number has been bounded by the file size.

use std::collections::HashMap;
use std::ops::Range;

use arrow_array::ArrayRef;
use arrow_schema::DataType;
use bytes::Bytes;
use prost::Message;

use crate::container::{Tail, MAGIC};
use crate::pb;
use crate::read::RangeRead;
use crate::schema::{LanceField, LanceSchema};
use crate::{FormatError, Result};

use super::decode;

/// Size of the legacy footer: metadata position (u64), major, minor (u16), `LANC`.
pub const LEGACY_FOOTER_LEN: u64 = 16;

/// The schema-describing message a legacy file embeds: a table `Manifest` of which
/// only the schema parts are filled (fields 1 and 5 of `lance.table.Manifest`).
#[derive(Clone, PartialEq, prost::Message)]
struct EmbeddedManifest {
    #[prost(message, repeated, tag = "1")]
    fields: Vec<pb::file::Field>,
    #[prost(map = "string, bytes", tag = "5")]
    schema_metadata: HashMap<String, Vec<u8>>,
}

/// The (major, minor) version of a legacy file, if `tail` (the last bytes of a file)
/// ends in a legacy footer.
pub fn legacy_version(tail: &[u8]) -> Option<(u16, u16)> {
    let n = tail.len();
    if n < LEGACY_FOOTER_LEN as usize || &tail[n - 4..] != MAGIC {
        return None;
    }
    let major = u16::from_le_bytes([tail[n - 8], tail[n - 7]]);
    let minor = u16::from_le_bytes([tail[n - 6], tail[n - 5]]);
    matches!((major, minor), (0, 1) | (0, 2)).then_some((major, minor))
}

/// Where one field's data lies in one batch: a page-table entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    /// Absolute byte position (meaning depends on the type: values, offsets or the
    /// positions array of variable-width values).
    pub position: u64,
    /// Number of entries (rows, list offsets or items).
    pub length: u64,
}

/// The dictionary of one dictionary-typed field.
#[derive(Debug, Clone)]
pub(crate) enum Dictionary {
    /// Values loaded.
    Values(ArrayRef),
    /// A value type the legacy format cannot hold (pylance refuses to read it too).
    Unsupported(DataType),
}

/// An opened legacy file: everything but the pages' data.
#[derive(Debug)]
pub struct LegacyFile {
    /// File size in bytes.
    pub file_size: u64,
    /// Footer version: 0.1 or 0.2.
    pub major: u16,
    /// Footer minor version.
    pub minor: u16,
    /// Position of the `Metadata` message (its u32 length prefix).
    pub metadata_position: u64,
    /// Position of the embedded manifest (schema).
    pub manifest_position: u64,
    /// Position of the page table.
    pub page_table_position: u64,
    /// Row offset of each batch, plus the row count at the end.
    pub batch_offsets: Vec<u64>,
    /// The schema stored in the file.
    pub schema: LanceSchema,
    /// The smallest field id: page-table row 0.
    pub min_field_id: i32,
    /// Number of field ids the page table covers (max - min + 1).
    pub field_span: u64,
    /// Page table, indexed `(field_id - min_field_id) * batches + batch`.
    pub(crate) pages: Vec<Page>,
    /// Dictionaries by field id.
    pub(crate) dictionaries: HashMap<i32, Dictionary>,
    /// Byte ranges read to open the file.
    pub tail_reads: Vec<Range<u64>>,
}

/// A protobuf message stored as `[u32 length][message]` at `pos`, which must end
/// before `limit`.
fn message(tail: &mut Tail<'_>, pos: u64, limit: u64, what: &str) -> Result<Bytes> {
    let len_end = pos.checked_add(4).filter(|&e| e <= limit).ok_or_else(|| {
        FormatError::corrupt(format!(
            "legacy {what} at {pos} lies outside the {}-byte file",
            tail.file_size
        ))
    })?;
    let l = tail.get_apart(pos..len_end)?;
    let len = u64::from(u32::from_le_bytes([l[0], l[1], l[2], l[3]]));
    let end = len_end
        .checked_add(len)
        .filter(|&e| e <= limit)
        .ok_or_else(|| {
            FormatError::corrupt(format!(
                "legacy {what} of {len} bytes at {pos} overruns the {}-byte file",
                tail.file_size
            ))
        })?;
    tail.get_apart(len_end..end)
}

fn all_ids(f: &LanceField, out: &mut Vec<i32>) {
    out.push(f.id);
    for c in &f.children {
        all_ids(c, out);
    }
}

impl LegacyFile {
    /// Opens the legacy file behind `io`, given its last bytes (`tail`, starting at
    /// `tail_start`, ending at the end of the file).
    pub fn open(io: &dyn RangeRead, tail_start: u64, tail: Bytes) -> Result<Self> {
        let file_size = io.size()?;
        let (major, minor) = legacy_version(&tail)
            .ok_or_else(|| FormatError::corrupt("not a legacy Lance file footer"))?;
        if tail_start.checked_add(tail.len() as u64) != Some(file_size) {
            return Err(FormatError::corrupt("the tail read does not end the file"));
        }
        let n = tail.len();
        let mut p = [0u8; 8];
        p.copy_from_slice(&tail[n - 16..n - 8]);
        let metadata_position = u64::from_le_bytes(p);
        let body_end = file_size - LEGACY_FOOTER_LEN;
        let mut fetch = Tail::new(io, tail_start, tail, file_size);
        let meta_bytes = message(&mut fetch, metadata_position, body_end, "metadata")?;
        let meta =
            pb::file::Metadata::decode(meta_bytes).map_err(|source| FormatError::Protobuf {
                context: "legacy Metadata",
                source,
            })?;
        if meta.manifest_position == 0 {
            return Err(FormatError::unsupported(
                "legacy file without schema",
                "this legacy file does not describe itself (no embedded manifest); \
                 read it through the dataset whose manifest lists it",
            ));
        }
        let manifest_bytes = message(
            &mut fetch,
            meta.manifest_position,
            body_end,
            "schema manifest",
        )?;
        let manifest =
            EmbeddedManifest::decode(manifest_bytes).map_err(|source| FormatError::Protobuf {
                context: "legacy embedded Manifest",
                source,
            })?;
        let schema_metadata = manifest
            .schema_metadata
            .iter()
            .map(|(k, v)| (k.clone(), String::from_utf8_lossy(v).into_owned()))
            .collect();
        let schema = LanceSchema::from_pb_fields(&manifest.fields, schema_metadata)?;

        // Batches: cumulative row offsets starting at 0.
        let mut batch_offsets = Vec::with_capacity(meta.batch_offsets.len());
        for (i, &o) in meta.batch_offsets.iter().enumerate() {
            let o = u64::try_from(o).map_err(|_| {
                FormatError::corrupt(format!("legacy batch offset {i} is negative ({o})"))
            })?;
            if batch_offsets.last().is_some_and(|&prev| o < prev) || (i == 0 && o != 0) {
                return Err(FormatError::corrupt(format!(
                    "legacy batch offsets are not ascending from 0: {:?}",
                    &meta.batch_offsets[..=i]
                )));
            }
            batch_offsets.push(o);
        }
        let batches = batch_offsets.len().saturating_sub(1) as u64;

        // The page table covers every field id from the smallest to the largest.
        let mut ids = Vec::new();
        for f in &schema.fields {
            all_ids(f, &mut ids);
        }
        let (min_field_id, max_field_id) = match (ids.iter().min(), ids.iter().max()) {
            (Some(&a), Some(&b)) => (a, b),
            _ => (0, -1),
        };
        if min_field_id < 0 {
            return Err(FormatError::corrupt(format!(
                "legacy schema has a negative field id {min_field_id}"
            )));
        }
        let field_span =
            u64::try_from(i64::from(max_field_id) - i64::from(min_field_id) + 1).unwrap_or(0);
        let table_bytes = field_span
            .checked_mul(batches)
            .and_then(|e| e.checked_mul(16))
            .filter(|&b| b <= file_size)
            .ok_or_else(|| {
                FormatError::corrupt(format!(
                    "legacy page table of {field_span} fields x {batches} batches cannot fit in the {file_size}-byte file"
                ))
            })?;
        let table_end = meta
            .page_table_position
            .checked_add(table_bytes)
            .filter(|&e| e <= body_end)
            .ok_or_else(|| {
                FormatError::corrupt(format!(
                    "legacy page table at {} ({table_bytes} bytes) lies outside the {file_size}-byte file",
                    meta.page_table_position
                ))
            })?;
        let table = fetch.get_apart(meta.page_table_position..table_end)?;
        let mut pages = Vec::with_capacity(table.len() / 16);
        for (k, e) in table.chunks_exact(16).enumerate() {
            let mut a = [0u8; 8];
            a.copy_from_slice(&e[0..8]);
            let position = i64::from_le_bytes(a);
            a.copy_from_slice(&e[8..16]);
            let length = i64::from_le_bytes(a);
            let (Ok(position), Ok(length)) = (u64::try_from(position), u64::try_from(length))
            else {
                return Err(FormatError::corrupt(format!(
                    "legacy page table entry {k} is negative ({position}, {length})"
                )));
            };
            if position > file_size {
                return Err(FormatError::corrupt(format!(
                    "legacy page {k} at {position} lies outside the {file_size}-byte file"
                )));
            }
            pages.push(Page { position, length });
        }

        let mut file = Self {
            file_size,
            major,
            minor,
            metadata_position,
            manifest_position: meta.manifest_position,
            page_table_position: meta.page_table_position,
            batch_offsets,
            schema,
            min_field_id,
            field_span,
            pages,
            dictionaries: HashMap::new(),
            tail_reads: Vec::new(),
        };
        for pf in &manifest.fields {
            if !pf.logical_type.starts_with("dict:") {
                continue;
            }
            let Some(field) = find(&file.schema.fields, pf.id) else {
                continue;
            };
            let DataType::Dictionary(_, value_type) = &field.data_type else {
                continue;
            };
            let info = pf.dictionary.unwrap_or_default();
            let dict = decode::dictionary_values(io, file_size, value_type, &info)?;
            file.dictionaries.insert(pf.id, dict);
        }
        file.tail_reads = fetch.reads;
        Ok(file)
    }

    /// Rows in the file.
    pub fn num_rows(&self) -> u64 {
        self.batch_offsets.last().copied().unwrap_or(0)
    }

    /// Number of batches (each field has one page per batch).
    pub fn num_batches(&self) -> usize {
        self.batch_offsets.len().saturating_sub(1)
    }

    /// Rows of batch `b`.
    pub fn batch_rows(&self, b: usize) -> Range<u64> {
        match (self.batch_offsets.get(b), self.batch_offsets.get(b + 1)) {
            (Some(&s), Some(&e)) => s..e,
            _ => 0..0,
        }
    }

    /// The page of field `field_id` in batch `batch`.
    pub fn page(&self, field_id: i32, batch: usize) -> Result<Page> {
        let rel = i64::from(field_id) - i64::from(self.min_field_id);
        let idx = u64::try_from(rel)
            .ok()
            .filter(|&r| r < self.field_span)
            .and_then(|r| r.checked_mul(self.num_batches() as u64))
            .and_then(|r| r.checked_add(batch as u64))
            .and_then(|i| usize::try_from(i).ok())
            .and_then(|i| self.pages.get(i));
        idx.copied().ok_or_else(|| {
            FormatError::corrupt(format!(
                "legacy page table has no entry for field {field_id}, batch {batch}"
            ))
        })
    }
}

/// The field with id `id` anywhere in `fields`.
pub(crate) fn find(fields: &[LanceField], id: i32) -> Option<&LanceField> {
    fields.iter().find_map(|f| {
        if f.id == id {
            Some(f)
        } else {
            find(&f.children, id)
        }
    })
}
