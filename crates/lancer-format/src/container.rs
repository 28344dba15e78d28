//! The Lance 2.x file container: footer, offset tables, column metadata, global buffers.
//!
//! Spec: "Lance File Format" → "Detailed Overview". The last 40 bytes of a file are:
//!
//! | bytes | field                                      |
//! |-------|--------------------------------------------|
//! | 8     | position of column metadata 0              |
//! | 8     | position of the column-metadata offset table (CMO) |
//! | 8     | position of the global-buffer offset table (GBO)   |
//! | 4     | number of global buffers                   |
//! | 4     | number of columns                          |
//! | 2     | major version                              |
//! | 2     | minor version                              |
//! | 4     | magic `LANC`                               |
//!
//! The CMO and GBO tables hold `(position: u64, size: u64)` pairs. Global buffer 0 holds
//! the `FileDescriptor` (schema and row count). Versions: 0.3 and 2.0 are "2.0"; 2.1; 2.2; 2.3 (read only).

use std::fmt;
use std::ops::Range;

use bytes::Bytes;
use prost::Message;

use crate::pb;
use crate::read::{check_range, RangeRead};
use crate::schema::LanceSchema;
use crate::{FormatError, Result};

/// Size of the fixed footer.
pub const FOOTER_LEN: u64 = 40;
/// The magic at the very end of every Lance file.
pub const MAGIC: &[u8; 4] = b"LANC";
/// How much of the tail is read in the first request.
pub const DEFAULT_TAIL_READ: u64 = 64 * 1024;
/// Upper bound on column / global buffer counts, to refuse absurd footers early.
const MAX_ENTRIES: u64 = 1 << 24;

/// The data storage version of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FileVersion {
    /// The legacy format (0.1 / 0.2, `data_storage_version="legacy"`): read only, see
    /// [`crate::legacy`].
    Legacy,
    /// 2.0 (also written as 0.3 by early writers).
    V2_0,
    /// 2.1: structural (mini-block / full-zip) encodings.
    V2_1,
    /// 2.2: adds maps, variable packed structs, larger mini-blocks, blob v2.
    V2_2,
    /// 2.3 (read only; marked unstable by pylance 14): planar pages — structure and
    /// values stored apart, dense levels or sparse position sets (see `crate::v23`).
    V2_3,
}

impl FileVersion {
    /// Maps footer numbers to a version, refusing unknown ones.
    pub fn from_numbers(major: u16, minor: u16) -> Result<Self> {
        match (major, minor) {
            (0, 3) | (2, 0) => Ok(Self::V2_0),
            (2, 1) => Ok(Self::V2_1),
            (2, 2) => Ok(Self::V2_2),
            (2, 3) => Ok(Self::V2_3),
            _ => Err(FormatError::UnsupportedVersion { major, minor }),
        }
    }

    /// The (major, minor) pair a writer puts in the footer.
    pub fn numbers(self) -> (u16, u16) {
        match self {
            Self::Legacy => (0, 2),
            Self::V2_0 => (2, 0),
            Self::V2_1 => (2, 1),
            Self::V2_2 => (2, 2),
            Self::V2_3 => (2, 3),
        }
    }

    /// Parses "2.0", "2.1", "2.2", "2.3" (and "stable" = 2.1, "next" = 2.2 aliases are not accepted).
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "2.0" | "0.3" => Ok(Self::V2_0),
            "2.1" => Ok(Self::V2_1),
            "2.2" => Ok(Self::V2_2),
            "2.3" => Ok(Self::V2_3),
            other => Err(FormatError::UnsupportedEncoding {
                name: format!("data storage version {other:?}"),
                detail: "expected 2.0, 2.1, 2.2 or 2.3".into(),
            }),
        }
    }

    /// True for 2.1 and later (structural encodings).
    pub fn is_structural(self) -> bool {
        self >= Self::V2_1
    }
}

impl fmt::Display for FileVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == Self::Legacy {
            return write!(f, "legacy (0.1/0.2)");
        }
        let (a, b) = self.numbers();
        write!(f, "{a}.{b}")
    }
}

/// The fixed-size footer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footer {
    /// Position of column metadata 0.
    pub column_meta_start: u64,
    /// Position of the column-metadata offset table.
    pub cmo_table_start: u64,
    /// Position of the global-buffer offset table.
    pub gbo_table_start: u64,
    /// Number of global buffers.
    pub num_global_buffers: u32,
    /// Number of columns.
    pub num_columns: u32,
    /// Major version number.
    pub major: u16,
    /// Minor version number.
    pub minor: u16,
}

impl Footer {
    /// Parses the last 40 bytes of a file.
    pub fn parse(bytes: &[u8], file_size: u64) -> Result<Self> {
        let tail = bytes
            .len()
            .checked_sub(FOOTER_LEN as usize)
            .and_then(|s| bytes.get(s..))
            .ok_or_else(|| {
                FormatError::corrupt(format!(
                    "file is {file_size} bytes, too short for the {FOOTER_LEN}-byte Lance footer"
                ))
            })?;
        if &tail[36..40] != MAGIC {
            return Err(FormatError::corrupt(format!(
                "not a Lance file: the last 4 bytes are {:?}, expected \"LANC\"",
                String::from_utf8_lossy(&tail[36..40])
            )));
        }
        let u64_at = |i: usize| u64::from_le_bytes(le_array(&tail[i..i + 8]));
        let u32_at = |i: usize| u32::from_le_bytes(le_array(&tail[i..i + 4]));
        let u16_at = |i: usize| u16::from_le_bytes(le_array(&tail[i..i + 2]));
        let footer = Footer {
            column_meta_start: u64_at(0),
            cmo_table_start: u64_at(8),
            gbo_table_start: u64_at(16),
            num_global_buffers: u32_at(24),
            num_columns: u32_at(28),
            major: u16_at(32),
            minor: u16_at(34),
        };
        if (footer.major, footer.minor) == (0, 1) || (footer.major, footer.minor) == (0, 2) {
            return Err(FormatError::UnsupportedEncoding {
                name: format!("legacy Lance file format {}.{}", footer.major, footer.minor),
                detail: "legacy files have a 16-byte footer, not this container's: open them with reader::FileReader::open".into(),
            });
        }
        let body_end = file_size.saturating_sub(FOOTER_LEN);
        let cmo_len = u64::from(footer.num_columns) * 16;
        let gbo_len = u64::from(footer.num_global_buffers) * 16;
        if u64::from(footer.num_columns) > MAX_ENTRIES
            || u64::from(footer.num_global_buffers) > MAX_ENTRIES
            || footer
                .cmo_table_start
                .checked_add(cmo_len)
                .is_none_or(|e| e > body_end)
            || footer
                .gbo_table_start
                .checked_add(gbo_len)
                .is_none_or(|e| e > body_end)
            || footer.column_meta_start > body_end
        {
            return Err(FormatError::corrupt(format!(
                "footer points outside the file: {footer:?}, file size {file_size}"
            )));
        }
        Ok(footer)
    }
}

fn le_array<const N: usize>(b: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[..N]);
    a
}

/// Decoded page encoding.
#[derive(Debug, Clone)]
pub enum PageEncoding {
    /// A 2.0 `ArrayEncoding` tree.
    V20(pb::enc20::ArrayEncoding),
    /// A 2.1+ `PageLayout`.
    V21(pb::enc21::PageLayout),
    /// A 2.3 `PlanarLayout`.
    V23(Box<pb::enc23::PlanarLayout>),
}

/// One page of one column.
#[derive(Debug, Clone)]
pub struct PageInfo {
    /// Absolute byte ranges of the page's buffers.
    pub buffers: Vec<Range<u64>>,
    /// Rows in the page.
    pub num_rows: u64,
    /// Row number of the first row (the page's priority).
    pub priority: u64,
    /// How the page is encoded.
    pub encoding: PageEncoding,
}

/// One column: its pages and column-level buffers.
#[derive(Debug, Clone)]
pub struct ColumnInfo {
    /// Pages, in row order.
    pub pages: Vec<PageInfo>,
    /// Column-level buffers (2.0 dictionaries and the like).
    pub buffers: Vec<Range<u64>>,
    /// The column-level encoding (2.0 `ColumnEncoding`), if any.
    pub encoding: Option<pb::enc20::ColumnEncoding>,
    /// Where the column's metadata message lies in the file.
    pub metadata_range: Range<u64>,
}

/// Everything known about a file once its tail has been read.
#[derive(Debug, Clone)]
pub struct FileMetadata {
    /// File size in bytes.
    pub file_size: u64,
    /// The footer.
    pub footer: Footer,
    /// Data storage version.
    pub version: FileVersion,
    /// Rows in the file.
    pub num_rows: u64,
    /// The stored schema.
    pub schema: LanceSchema,
    /// Columns, by column index.
    pub columns: Vec<ColumnInfo>,
    /// Global buffers, by index.
    pub global_buffers: Vec<Range<u64>>,
    /// Byte ranges read to load this metadata.
    pub tail_reads: Vec<Range<u64>>,
}

/// The tail of a file that has been read, with lookups that fall back to further reads.
pub(crate) struct Tail<'a> {
    source: &'a dyn RangeRead,
    start: u64,
    bytes: Bytes,
    pub(crate) file_size: u64,
    /// Every byte range read so far (the tail first).
    pub(crate) reads: Vec<Range<u64>>,
}

impl<'a> Tail<'a> {
    /// `bytes`, read from `start` to the end of the `file_size`-byte `source`.
    pub(crate) fn new(source: &'a dyn RangeRead, start: u64, bytes: Bytes, file_size: u64) -> Self {
        Self {
            source,
            start,
            bytes,
            file_size,
            reads: std::iter::once(start..file_size).collect(),
        }
    }

    /// `range` when it lies in the tail already read.
    fn in_tail(&self, range: &Range<u64>) -> Result<Option<Bytes>> {
        check_range(range, self.file_size)?;
        if range.start < self.start {
            return Ok(None);
        }
        let s = usize::try_from(range.start - self.start)
            .map_err(|_| FormatError::corrupt("offset overflow"))?;
        let e = usize::try_from(range.end - self.start)
            .map_err(|_| FormatError::corrupt("offset overflow"))?;
        Ok(Some(self.bytes.slice(s..e)))
    }

    /// `range`, from the tail or read on its own (the tail is not extended).
    pub(crate) fn get_apart(&mut self, range: Range<u64>) -> Result<Bytes> {
        if let Some(b) = self.in_tail(&range)? {
            return Ok(b);
        }
        self.reads.push(range.clone());
        self.source.read_range(range)
    }

    /// `range`; the tail grows down to its start, so later lookups in between are free.
    fn get(&mut self, range: Range<u64>) -> Result<Bytes> {
        if let Some(b) = self.in_tail(&range)? {
            return Ok(b);
        }
        // Read everything from range.start to the current tail start once, so later
        // lookups in between are free.
        let extra = range.start..self.start;
        let more = self.source.read_range(extra.clone())?;
        self.reads.push(extra);
        let mut joined = Vec::with_capacity(more.len() + self.bytes.len());
        joined.extend_from_slice(&more);
        joined.extend_from_slice(&self.bytes);
        self.bytes = Bytes::from(joined);
        self.start = range.start;
        self.get(range)
    }
}

fn decode_table(bytes: &[u8], n: u32, what: &str, file_size: u64) -> Result<Vec<Range<u64>>> {
    (0..n as usize)
        .map(|i| {
            let e = bytes
                .get(i * 16..i * 16 + 16)
                .ok_or_else(|| FormatError::corrupt(format!("{what} table truncated")))?;
            let pos = u64::from_le_bytes(le_array(&e[0..8]));
            let size = u64::from_le_bytes(le_array(&e[8..16]));
            let end = pos
                .checked_add(size)
                .filter(|&e| e <= file_size)
                .ok_or_else(|| {
                    FormatError::corrupt(format!(
                        "{what} {i} at {pos}+{size} lies outside the {file_size}-byte file"
                    ))
                })?;
            Ok(pos..end)
        })
        .collect()
}

/// Decodes a `google.protobuf.Any`-wrapped encoding into a page encoding.
fn decode_any(bytes: &[u8]) -> Result<prost_types::Any> {
    prost_types::Any::decode(bytes).map_err(|source| FormatError::Protobuf {
        context: "encoding Any",
        source,
    })
}

fn page_encoding(any: &prost_types::Any) -> Result<PageEncoding> {
    match any.type_url.as_str() {
        "/lance.encodings21.PageLayout" => pb::enc21::PageLayout::decode(any.value.as_slice())
            .map(PageEncoding::V21)
            .map_err(|source| FormatError::Protobuf {
                context: "PageLayout",
                source,
            }),
        "/lance.encodings23.PlanarLayout" => {
            pb::enc23::PlanarLayout::decode(any.value.as_slice())
                .map(|l| PageEncoding::V23(Box::new(l)))
                .map_err(|source| FormatError::Protobuf {
                    context: "PlanarLayout",
                    source,
                })
        }
        "/lance.encodings.ArrayEncoding" => pb::enc20::ArrayEncoding::decode(any.value.as_slice())
            .map(PageEncoding::V20)
            .map_err(|source| FormatError::Protobuf {
                context: "ArrayEncoding",
                source,
            }),
        other => Err(FormatError::unsupported(
            other,
            "page encoding message not known to this Lancer (written by a newer or pre-release Lance?)",
        )),
    }
}

/// Reads the last `tail_read` bytes of a file (all of it when smaller): the first
/// request of every open. Returns the offset the bytes start at, and the bytes.
pub fn read_tail(source: &dyn RangeRead, tail_read: u64) -> Result<(u64, Bytes)> {
    let file_size = source.size()?;
    let start = file_size.saturating_sub(tail_read.max(FOOTER_LEN));
    Ok((start, source.read_range(start..file_size)?))
}

impl FileMetadata {
    /// Reads and parses the metadata of the file behind `source`, reading the tail in one
    /// request when it fits in `tail_read` bytes.
    pub fn read(source: &dyn RangeRead, tail_read: u64) -> Result<Self> {
        let (start, bytes) = read_tail(source, tail_read)?;
        Self::from_tail(source, start, bytes)
    }

    /// Parses the metadata given the file's last bytes (`bytes`, starting at offset
    /// `start`, as [`read_tail`] returns them), reading more only when needed.
    pub fn from_tail(source: &dyn RangeRead, start: u64, bytes: Bytes) -> Result<Self> {
        let file_size = source.size()?;
        if file_size < FOOTER_LEN || start.checked_add(bytes.len() as u64) != Some(file_size) {
            return Err(FormatError::corrupt(format!(
                "file is {file_size} bytes, too short for the {FOOTER_LEN}-byte Lance footer"
            )));
        }
        let footer = Footer::parse(&bytes, file_size)?;
        let version = FileVersion::from_numbers(footer.major, footer.minor)?;
        let mut tail = Tail::new(source, start, bytes, file_size);
        // Everything after column metadata 0 is metadata: make it one read if not yet.
        let meta_start = footer
            .column_meta_start
            .min(footer.cmo_table_start)
            .min(footer.gbo_table_start);
        tail.get(meta_start..file_size)?;

        let cmo = tail.get(
            footer.cmo_table_start..footer.cmo_table_start + u64::from(footer.num_columns) * 16,
        )?;
        let column_ranges = decode_table(&cmo, footer.num_columns, "column metadata", file_size)?;
        let gbo = tail.get(
            footer.gbo_table_start
                ..footer.gbo_table_start + u64::from(footer.num_global_buffers) * 16,
        )?;
        let global_buffers =
            decode_table(&gbo, footer.num_global_buffers, "global buffer", file_size)?;

        let gb0 = global_buffers.first().cloned().ok_or_else(|| {
            FormatError::corrupt("file has no global buffer 0 (the schema)".to_string())
        })?;
        let descriptor_bytes = tail.get(gb0)?;
        let descriptor = pb::file::FileDescriptor::decode(descriptor_bytes).map_err(|source| {
            FormatError::Protobuf {
                context: "FileDescriptor (global buffer 0)",
                source,
            }
        })?;
        let schema = LanceSchema::from_pb(descriptor.schema.as_ref().ok_or_else(|| {
            FormatError::corrupt("FileDescriptor in global buffer 0 has no schema")
        })?)?;

        let mut columns = Vec::with_capacity(column_ranges.len());
        for (i, range) in column_ranges.into_iter().enumerate() {
            let bytes = tail.get(range.clone())?;
            let meta = pb::file::v2::ColumnMetadata::decode(bytes).map_err(|source| {
                FormatError::Protobuf {
                    context: "ColumnMetadata",
                    source,
                }
            })?;
            columns.push(Self::column_info(&mut tail, i, meta, range)?);
        }
        Ok(Self {
            file_size,
            footer,
            version,
            num_rows: descriptor.length,
            schema,
            columns,
            global_buffers,
            tail_reads: tail.reads,
        })
    }

    fn encoding_any(
        tail: &mut Tail<'_>,
        enc: &Option<pb::file::v2::Encoding>,
    ) -> Result<Option<prost_types::Any>> {
        use pb::file::v2::encoding::Location;
        match enc.as_ref().and_then(|e| e.location.as_ref()) {
            None | Some(Location::None(_)) => Ok(None),
            Some(Location::Direct(d)) => decode_any(&d.encoding).map(Some),
            Some(Location::Indirect(d)) => {
                let end = d
                    .buffer_location
                    .checked_add(d.buffer_length)
                    .ok_or_else(|| FormatError::corrupt("indirect encoding range overflows"))?;
                let bytes = tail.get(d.buffer_location..end)?;
                decode_any(&bytes).map(Some)
            }
        }
    }

    fn column_info(
        tail: &mut Tail<'_>,
        index: usize,
        meta: pb::file::v2::ColumnMetadata,
        metadata_range: Range<u64>,
    ) -> Result<ColumnInfo> {
        let file_size = tail.file_size;
        let ranges = |offs: &[u64], sizes: &[u64], what: &str| -> Result<Vec<Range<u64>>> {
            if offs.len() != sizes.len() {
                return Err(FormatError::corrupt(format!(
                    "column {index}: {what} has {} offsets but {} sizes",
                    offs.len(),
                    sizes.len()
                )));
            }
            offs.iter()
                .zip(sizes)
                .map(|(&o, &s)| {
                    o.checked_add(s)
                        .filter(|&e| e <= file_size)
                        .map(|e| o..e)
                        .ok_or_else(|| {
                            FormatError::corrupt(format!(
                                "column {index}: {what} buffer {o}+{s} is outside the {file_size}-byte file"
                            ))
                        })
                })
                .collect()
        };
        let buffers = ranges(&meta.buffer_offsets, &meta.buffer_sizes, "column")?;
        let encoding = match Self::encoding_any(tail, &meta.encoding)? {
            Some(any) if any.type_url == "/lance.encodings.ColumnEncoding" => Some(
                pb::enc20::ColumnEncoding::decode(any.value.as_slice()).map_err(|source| {
                    FormatError::Protobuf {
                        context: "ColumnEncoding",
                        source,
                    }
                })?,
            ),
            Some(any) => {
                return Err(FormatError::unsupported(
                    any.type_url,
                    format!("column {index}: unknown column encoding"),
                ))
            }
            None => None,
        };
        let mut pages = Vec::with_capacity(meta.pages.len());
        for (p, page) in meta.pages.into_iter().enumerate() {
            let any = Self::encoding_any(tail, &page.encoding)?.ok_or_else(|| {
                FormatError::corrupt(format!("column {index} page {p} has no encoding"))
            })?;
            pages.push(PageInfo {
                buffers: ranges(&page.buffer_offsets, &page.buffer_sizes, "page")?,
                num_rows: page.length,
                priority: page.priority,
                encoding: page_encoding(&any)?,
            });
        }
        Ok(ColumnInfo {
            pages,
            buffers,
            encoding,
            metadata_range,
        })
    }
}
