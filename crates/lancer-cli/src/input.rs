//! Input readers of `lancer import` (CSV, JSON lines, Arrow IPC file/stream, Parquet)
//! that end in a typed [`InputError`] on hostile bytes — never a panic, never an
//! allocation sized by a damaged length.
//!
//! Arrow IPC goes through [`lancer::file::ipc`], which validates every length itself.
//! Parquet: the footer, then every thrift structure (file metadata and each page
//! header) is walked by a small compact-protocol checker before the parquet crate
//! decodes it — list and binary lengths must fit the remaining bytes, column chunks
//! must lie inside the file, and a page may declare at most
//! [`lancer::file::ipc::MAX_EXPANSION`]x its compressed size (plus
//! [`lancer::file::ipc::EXPANSION_SLACK`]) decompressed. CSV and JSON readers allocate
//! in proportion to what they read. Every third-party call runs inside
//! `catch_unwind`, so a panic left in a library becomes an error naming the file.

use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{ArrowError, SchemaRef};
use lancer::file::ipc::{EXPANSION_SLACK, MAX_EXPANSION};
use parquet::file::reader::ChunkReader;
use thiserror::Error;

/// What can go wrong reading an import input.
#[derive(Debug, Error)]
pub enum InputError {
    /// The file's extension names no supported format.
    #[error("unknown input format {ext:?}: use .csv, .jsonl, .arrow or .parquet")]
    UnknownFormat {
        /// The extension.
        ext: String,
    },
    /// The input is malformed.
    #[error("{file}: {what} — the file is damaged or not {format}: re-export it, or check the file extension")]
    Corrupt {
        /// The input's name.
        file: String,
        /// The format it was read as.
        format: &'static str,
        /// What is wrong.
        what: String,
    },
    /// A value does not parse as the type the dataset's column has (an append).
    #[error("{file}: {what} — that is the type of the dataset's column: fix the value, or import into a new dataset")]
    Mismatch {
        /// The input's name.
        file: String,
        /// The value, its column and line, as the reader names them.
        what: String,
    },
    /// Reading failed.
    #[error("cannot read {file}: {source}")]
    Io {
        /// The input's name.
        file: String,
        /// The cause.
        source: std::io::Error,
    },
}

/// Result alias of this module.
pub type Result<T, E = InputError> = std::result::Result<T, E>;

/// Record batches as they are read.
pub type Batches = Box<dyn Iterator<Item = Result<RecordBatch>>>;

/// Input formats `lancer import` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// CSV with a header line.
    Csv,
    /// JSON lines.
    Jsonl,
    /// Arrow IPC, file or stream format.
    ArrowIpc,
    /// Parquet.
    Parquet,
}

impl Format {
    /// The format of `path`, by its extension.
    pub fn of(path: &Path) -> Result<Self> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("")
            .to_ascii_lowercase();
        Ok(match ext.as_str() {
            "csv" => Self::Csv,
            "jsonl" | "ndjson" | "json" => Self::Jsonl,
            "arrow" | "arrows" | "ipc" | "feather" => Self::ArrowIpc,
            "parquet" | "pq" => Self::Parquet,
            _ => return Err(InputError::UnknownFormat { ext }),
        })
    }

    fn name(self) -> &'static str {
        match self {
            Self::Csv => "CSV",
            Self::Jsonl => "JSON lines",
            Self::ArrowIpc => "Arrow IPC",
            Self::Parquet => "Parquet",
        }
    }
}

/// An opened input: its schema, its batches (read as consumed) and, for Parquet, the
/// row count its footer declares.
pub struct Input {
    /// The schema of every batch.
    pub schema: SchemaRef,
    /// The batches.
    pub batches: Batches,
    /// Rows the input declares up front (Parquet), for progress.
    pub rows: Option<u64>,
}

/// Builds errors about one input.
#[derive(Clone)]
struct Ctx {
    file: String,
    format: Format,
    /// Columns are parsed as the dataset's own types (an append): a value that does
    /// not parse is a mismatch, not damage.
    typed: bool,
}

impl Ctx {
    fn corrupt(&self, what: impl std::fmt::Display) -> InputError {
        InputError::Corrupt {
            file: self.file.clone(),
            format: self.format.name(),
            what: what.to_string(),
        }
    }

    fn io(&self, source: std::io::Error) -> InputError {
        InputError::Io {
            file: self.file.clone(),
            source,
        }
    }

    /// Runs a third-party call, turning its error or panic into an error about the file.
    fn guard<T, E: std::fmt::Display>(
        &self,
        f: impl FnOnce() -> std::result::Result<T, E>,
    ) -> Result<T> {
        match lancer::internal::contain::contain(f) {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) if self.typed && e.to_string().contains("while parsing value") => {
                Err(InputError::Mismatch {
                    file: self.file.clone(),
                    what: e.to_string(),
                })
            }
            Ok(Err(e)) => Err(self.corrupt(e)),
            Err(msg) => {
                Err(self.corrupt(format_args!("the reader failed on malformed data: {msg}")))
            }
        }
    }
}

/// Wraps a third-party batch iterator: errors and panics become [`InputError`]s, and
/// the iteration stops after the first.
fn guarded<I>(ctx: Ctx, inner: I) -> Batches
where
    I: Iterator<Item = std::result::Result<RecordBatch, ArrowError>> + 'static,
{
    let mut inner = Some(inner);
    Box::new(std::iter::from_fn(move || {
        let it = inner.as_mut()?;
        let r = ctx.guard(|| it.next().transpose()).transpose();
        if !matches!(r, Some(Ok(_))) {
            inner = None;
        }
        r
    }))
}

/// Opens a CSV, JSON-lines or Arrow IPC input read through `reader` (`len` bytes),
/// named `file` in errors. Parquet needs random access: see [`open_parquet`].
pub fn open<R: Read + Seek + 'static>(
    file: &str,
    format: Format,
    reader: R,
    len: u64,
) -> Result<Input> {
    open_like(file, format, reader, len, None)
}

/// As [`open`], a CSV or JSON-lines input's columns that `like` (an existing dataset's
/// schema) has parsed as `like` types them instead of as inferred — an append reads
/// `1.5` into a float column and names the line, column and value that does not fit.
pub fn open_like<R: Read + Seek + 'static>(
    file: &str,
    format: Format,
    mut reader: R,
    len: u64,
    like: Option<&arrow_schema::Schema>,
) -> Result<Input> {
    let ctx = Ctx {
        file: file.to_string(),
        format,
        typed: like.is_some(),
    };
    let typed = |inferred: arrow_schema::Schema| -> arrow_schema::Schema {
        let Some(like) = like else { return inferred };
        let fields: Vec<arrow_schema::Field> = inferred
            .fields()
            .iter()
            .map(|f| match like.field_with_name(f.name()) {
                Ok(t) if parsable(format, t.data_type()) => {
                    arrow_schema::Field::new(f.name(), t.data_type().clone(), true)
                }
                _ => f.as_ref().clone(),
            })
            .collect();
        arrow_schema::Schema::new(fields)
    };
    match format {
        Format::Csv => {
            let (schema, _) = ctx.guard(|| {
                arrow_csv::reader::Format::default()
                    .with_header(true)
                    .infer_schema(BufReader::new(&mut reader), Some(10_000))
            })?;
            reader.seek(SeekFrom::Start(0)).map_err(|e| ctx.io(e))?;
            let schema = Arc::new(typed(schema));
            let r = ctx.guard(|| {
                arrow_csv::ReaderBuilder::new(schema.clone())
                    .with_header(true)
                    .build(reader)
            })?;
            Ok(Input {
                schema,
                batches: guarded(ctx, r),
                rows: None,
            })
        }
        Format::Jsonl => {
            let (schema, _) = ctx.guard(|| {
                arrow_json::reader::infer_json_schema(BufReader::new(&mut reader), Some(10_000))
            })?;
            reader.seek(SeekFrom::Start(0)).map_err(|e| ctx.io(e))?;
            let schema = Arc::new(typed(schema));
            let r = ctx.guard(|| {
                arrow_json::ReaderBuilder::new(schema.clone()).build(BufReader::new(reader))
            })?;
            Ok(Input {
                schema,
                batches: guarded(ctx, r),
                rows: None,
            })
        }
        Format::ArrowIpc => {
            let mut head = [0u8; 6];
            let n = reader.read(&mut head).map_err(|e| ctx.io(e))?;
            reader.seek(SeekFrom::Start(0)).map_err(|e| ctx.io(e))?;
            let bad = |e: lancer::file::FormatError| ctx.corrupt(e);
            if lancer::file::ipc::is_file_format(&head[..n]) {
                let r = lancer::file::ipc::FileReader::try_new(reader).map_err(bad)?;
                let schema = r.schema();
                let c = ctx.clone();
                Ok(Input {
                    schema,
                    batches: Box::new(r.map(move |b| b.map_err(|e| c.corrupt(e)))),
                    rows: None,
                })
            } else {
                let r = lancer::file::ipc::StreamReader::try_new(reader, len).map_err(bad)?;
                let schema = r.schema();
                let c = ctx.clone();
                Ok(Input {
                    schema,
                    batches: Box::new(r.map(move |b| b.map_err(|e| c.corrupt(e)))),
                    rows: None,
                })
            }
        }
        Format::Parquet => Err(ctx.corrupt("internal: Parquet inputs are opened by open_parquet")),
    }
}

/// Whether the `format` reader parses text into `t` (the scalar types; JSON also
/// decodes lists and structs).
fn parsable(format: Format, t: &arrow_schema::DataType) -> bool {
    use arrow_schema::DataType as T;
    let scalar = t.is_primitive()
        || matches!(
            t,
            T::Boolean | T::Utf8 | T::LargeUtf8 | T::Decimal128(..) | T::Decimal256(..)
        );
    match format {
        Format::Jsonl => scalar || t.is_nested(),
        _ => scalar,
    }
}

/// Opens a Parquet input (`file` in errors): the footer and every page header are
/// checked (see the module docs) before the parquet crate reads them.
pub fn open_parquet<T: ChunkReader + 'static>(file: &str, data: T) -> Result<Input> {
    let ctx = Ctx {
        file: file.to_string(),
        format: Format::Parquet,
        typed: false,
    };
    let len = data.len();
    if len < 12 {
        return Err(ctx.corrupt(format_args!("{len} bytes are too few for a Parquet file")));
    }
    let tail = ctx.guard(|| data.get_bytes(len - 8, 8))?;
    if &tail[4..] != b"PAR1" {
        return Err(
            ctx.corrupt("no PAR1 magic at the end (truncated, or encrypted, or not Parquet)")
        );
    }
    let meta_len = u64::from(u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]));
    let meta_start = (len - 8)
        .checked_sub(meta_len)
        .filter(|&s| s >= 4)
        .ok_or_else(|| {
            ctx.corrupt(format_args!(
                "footer length {meta_len} in a {len}-byte file"
            ))
        })?;
    let meta = ctx.guard(|| data.get_bytes(meta_start, meta_len as usize))?;
    thrift::check(&meta).map_err(|e| ctx.corrupt(format_args!("file metadata: {e}")))?;
    let data = Arc::new(data);
    let builder = ctx.guard(|| {
        parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(ArcChunks(
            data.clone(),
        ))
    })?;
    let md = builder.metadata().clone();
    let schema = builder.schema().clone();
    let declared = md.file_metadata().num_rows();
    let rows = u64::try_from(declared)
        .map_err(|_| ctx.corrupt(format_args!("negative row count {declared}")))?;
    let mut row_sum: u64 = 0;
    for rg in md.row_groups() {
        let n = u64::try_from(rg.num_rows())
            .map_err(|_| ctx.corrupt(format_args!("row group of {} rows", rg.num_rows())))?;
        row_sum = row_sum.saturating_add(n);
        for col in rg.columns() {
            let (start, clen) = col.byte_range();
            let end = start
                .checked_add(clen)
                .filter(|&e| e <= meta_start)
                .ok_or_else(|| {
                    ctx.corrupt(format_args!(
                        "column chunk at {start}+{clen} lies outside the {meta_start} bytes of data"
                    ))
                })?;
            check_pages(&ctx, data.as_ref(), start, end)?;
        }
    }
    if row_sum != rows {
        return Err(ctx.corrupt(format_args!(
            "row groups hold {row_sum} rows, the footer says {rows}"
        )));
    }
    // Decoding on several threads (column groups of about equal size) pays when there
    // are several columns to share; each group's decoder is contained like the rest.
    let threads = lancer::internal::cores().min(4);
    let sizes = ctx.guard(|| -> std::result::Result<Vec<u64>, String> {
        let descr = md.file_metadata().schema_descr_ptr();
        let mut size = vec![0u64; schema.fields().len()];
        for rg in md.row_groups() {
            for (leaf, c) in rg.columns().iter().enumerate() {
                if leaf >= descr.num_columns() {
                    return Err(format!(
                        "row group has more than {} columns",
                        descr.num_columns()
                    ));
                }
                if let Some(s) = size.get_mut(descr.get_column_root_idx(leaf)) {
                    *s += u64::try_from(c.uncompressed_size()).unwrap_or(0);
                }
            }
        }
        Ok(size)
    })?;
    let roots = crate::parquet_par::groups(&sizes, threads);
    let batch_rows = crate::parquet_par::batch_rows(sizes.iter().sum::<u64>() / rows.max(1));
    if roots.len() <= 1 {
        let r = ctx.guard(|| builder.with_batch_size(batch_rows).build())?;
        return Ok(Input {
            schema,
            batches: guarded(ctx, r),
            rows: Some(rows),
        });
    }
    let r = ctx.guard(|| {
        crate::parquet_par::start(schema.clone(), roots, batch_rows, || {
            parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(ArcChunks(
                data.clone(),
            ))
        })
    })?;
    Ok(Input {
        schema,
        batches: guarded(ctx, r),
        rows: Some(rows),
    })
}

/// Bytes read at once behind a page header (headers are tens of bytes; statistics can
/// make them longer, and the buffer refills): one copy per header instead of one
/// small read per field.
const HEADER_READ: usize = 4096;

/// A file read through a read-only mapping ([`lancer::file::MmapFile`]): column chunks and
/// page headers are slices of the mapping — no read call and no copy per page (a
/// 200-row-group Parquet file took 4,210 positional reads, and a fresh buffer each).
/// The mapping's pages are handed back as the import moves on (see `MmapFile`). Like
/// every mapping, a file truncated by another process while it is read would fault.
pub struct MappedFile {
    map: Arc<lancer::file::MmapFile>,
    len: u64,
}

impl MappedFile {
    /// Maps the file at `path`.
    pub fn open(path: &Path) -> std::io::Result<Self> {
        let map = lancer::file::MmapFile::open(path).map_err(std::io::Error::other)?;
        let len = lancer::file::RangeRead::size(&map).map_err(std::io::Error::other)?;
        Ok(Self {
            map: Arc::new(map),
            len,
        })
    }
}

/// Bytes `start..end` of a mapped file (a slice of the mapping, not a copy).
fn mapped(
    map: &lancer::file::MmapFile,
    len: u64,
    start: u64,
    end: u64,
) -> std::io::Result<bytes::Bytes> {
    if start > end || end > len {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!("bytes {start}..{end} of a {len}-byte file"),
        ));
    }
    lancer::file::RangeRead::read_range(map, start..end).map_err(std::io::Error::other)
}

/// Reads a mapped file from a byte position onward (page headers: small reads, behind
/// a [`BufReader`] of [`HEADER_READ`] bytes).
pub struct MappedRead {
    map: Arc<lancer::file::MmapFile>,
    len: u64,
    pos: u64,
}

impl Read for MappedRead {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let end = self.len.min(self.pos.saturating_add(buf.len() as u64));
        if end <= self.pos {
            return Ok(0);
        }
        let got = mapped(&self.map, self.len, self.pos, end)?;
        buf[..got.len()].copy_from_slice(&got);
        self.pos = end;
        Ok(got.len())
    }
}

impl parquet::file::reader::Length for MappedFile {
    fn len(&self) -> u64 {
        self.len
    }
}

impl ChunkReader for MappedFile {
    type T = BufReader<MappedRead>;
    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        Ok(BufReader::with_capacity(
            HEADER_READ,
            MappedRead {
                map: self.map.clone(),
                len: self.len,
                pos: start,
            },
        ))
    }
    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<bytes::Bytes> {
        let end = start.checked_add(length as u64).ok_or_else(|| {
            parquet::errors::ParquetError::EOF(format!("{length} bytes at {start}"))
        })?;
        mapped(&self.map, self.len, start, end)
            .map_err(|e| parquet::errors::ParquetError::External(Box::new(e)))
    }
}

/// A shared [`ChunkReader`] (the builder takes ownership; the checks keep a handle).
struct ArcChunks<T>(Arc<T>);

impl<T: ChunkReader> parquet::file::reader::Length for ArcChunks<T> {
    fn len(&self) -> u64 {
        self.0.len()
    }
}

impl<T: ChunkReader> ChunkReader for ArcChunks<T> {
    type T = T::T;
    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        self.0.get_read(start)
    }
    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<bytes::Bytes> {
        self.0.get_bytes(start, length)
    }
}

/// Walks the page headers of the column chunk at `start..end`: each must parse, lie
/// inside the chunk and declare a bounded decompressed size.
fn check_pages<T: ChunkReader>(ctx: &Ctx, data: &T, start: u64, end: u64) -> Result<()> {
    let mut pos = start;
    while pos < end {
        let mut window = 512u64;
        let page = loop {
            let n = window.min(end - pos);
            let head = ctx.guard(|| data.get_bytes(pos, n as usize))?;
            match thrift::page_header(&head) {
                Ok(p) => break p,
                Err(thrift::Error::Short) if n < end - pos => window *= 4,
                Err(e) => return Err(ctx.corrupt(format_args!("page header at byte {pos}: {e}"))),
            }
        };
        let compressed = u64::try_from(page.compressed).map_err(|_| {
            ctx.corrupt(format_args!(
                "page at {pos}: compressed size {}",
                page.compressed
            ))
        })?;
        let uncompressed = u64::try_from(page.uncompressed).map_err(|_| {
            ctx.corrupt(format_args!(
                "page at {pos}: uncompressed size {}",
                page.uncompressed
            ))
        })?;
        if uncompressed > compressed.saturating_mul(MAX_EXPANSION) + EXPANSION_SLACK {
            return Err(ctx.corrupt(format_args!(
                "page at {pos} declares {uncompressed} bytes decompressed from {compressed}"
            )));
        }
        let next = pos
            .checked_add(page.header_len as u64)
            .and_then(|p| p.checked_add(compressed))
            .filter(|&p| p <= end)
            .ok_or_else(|| {
                ctx.corrupt(format_args!(
                    "page at {pos} of {compressed} bytes overruns its column chunk (ends at {end})"
                ))
            })?;
        pos = next;
    }
    Ok(())
}

/// A checker of Thrift compact-protocol structures (what Parquet's footer and page
/// headers are written in): every length must fit the bytes that remain.
mod thrift {
    /// Why a structure was refused.
    #[derive(Debug)]
    pub enum Error {
        /// The bytes end inside the structure.
        Short,
        /// The structure is malformed.
        Bad(String),
    }

    impl std::fmt::Display for Error {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            match self {
                Self::Short => f.write_str("truncated thrift structure"),
                Self::Bad(s) => f.write_str(s),
            }
        }
    }

    type R<T> = std::result::Result<T, Error>;

    const MAX_DEPTH: usize = 64;

    struct Cur<'a> {
        b: &'a [u8],
        at: usize,
    }

    impl Cur<'_> {
        fn byte(&mut self) -> R<u8> {
            let v = *self.b.get(self.at).ok_or(Error::Short)?;
            self.at += 1;
            Ok(v)
        }

        fn varint(&mut self) -> R<u64> {
            let mut v = 0u64;
            for shift in (0..70).step_by(7) {
                let b = self.byte()?;
                if shift == 63 && b > 1 {
                    return Err(Error::Bad("varint overflows 64 bits".into()));
                }
                v |= u64::from(b & 0x7F) << shift;
                if b & 0x80 == 0 {
                    return Ok(v);
                }
            }
            Err(Error::Bad("varint longer than 10 bytes".into()))
        }

        fn zigzag(&mut self) -> R<i64> {
            let v = self.varint()?;
            Ok((v >> 1) as i64 ^ -((v & 1) as i64))
        }

        fn skip(&mut self, n: u64) -> R<()> {
            let left = (self.b.len() - self.at) as u64;
            if n > left {
                return Err(Error::Short);
            }
            self.at += n as usize;
            Ok(())
        }

        fn value(&mut self, ty: u8, depth: usize) -> R<()> {
            if depth > MAX_DEPTH {
                return Err(Error::Bad("thrift nesting too deep".into()));
            }
            match ty {
                1 | 2 => Ok(()),
                3 => self.skip(1),
                4..=6 => self.varint().map(|_| ()),
                7 => self.skip(8),
                8 => {
                    let n = self.varint()?;
                    self.skip(n)
                }
                9 | 10 => {
                    let h = self.byte()?;
                    let et = h & 0x0F;
                    let n = match h >> 4 {
                        15 => self.varint()?,
                        n => u64::from(n),
                    };
                    if n > i32::MAX as u64 || n > (self.b.len() - self.at) as u64 {
                        return Err(Error::Bad(format!(
                            "list of {n} elements in {} remaining bytes",
                            self.b.len() - self.at
                        )));
                    }
                    for _ in 0..n {
                        // Booleans in a list take a byte each.
                        let t = if et == 1 || et == 2 { 3 } else { et };
                        self.value(t, depth + 1)?;
                    }
                    Ok(())
                }
                11 => {
                    let n = self.varint()?;
                    if n > (self.b.len() - self.at) as u64 {
                        return Err(Error::Bad(format!("map of {n} entries")));
                    }
                    if n > 0 {
                        let kv = self.byte()?;
                        for _ in 0..n {
                            let k = if kv >> 4 <= 2 && kv >> 4 >= 1 {
                                3
                            } else {
                                kv >> 4
                            };
                            let v = if kv & 0xF <= 2 && kv & 0xF >= 1 {
                                3
                            } else {
                                kv & 0xF
                            };
                            self.value(k, depth + 1)?;
                            self.value(v, depth + 1)?;
                        }
                    }
                    Ok(())
                }
                12 => self.fields(depth + 1, |_, _, _| Ok(false)),
                13 => self.skip(16),
                t => Err(Error::Bad(format!("unknown thrift type {t}"))),
            }
        }

        /// Walks a struct's fields; `on` may consume a field's value itself (returns
        /// true) given (field id, type, cursor).
        fn fields(
            &mut self,
            depth: usize,
            mut on: impl FnMut(i16, u8, &mut Self) -> R<bool>,
        ) -> R<()> {
            let mut last: i16 = 0;
            loop {
                let h = self.byte()?;
                if h == 0 {
                    return Ok(());
                }
                let ty = h & 0x0F;
                let id = match h >> 4 {
                    0 => i16::try_from(self.zigzag()?)
                        .map_err(|_| Error::Bad("thrift field id out of range".into()))?,
                    d => last.wrapping_add(i16::from(d)),
                };
                last = id;
                if !on(id, ty, self)? {
                    self.value(ty, depth)?;
                }
            }
        }
    }

    /// Checks that `b` starts with a well-formed struct; returns its length.
    pub fn check(b: &[u8]) -> R<usize> {
        let mut c = Cur { b, at: 0 };
        c.fields(0, |_, _, _| Ok(false))?;
        Ok(c.at)
    }

    /// What a page header declares.
    pub struct Page {
        pub header_len: usize,
        pub uncompressed: i64,
        pub compressed: i64,
    }

    /// Parses and checks the page header at the start of `b`.
    pub fn page_header(b: &[u8]) -> R<Page> {
        let mut c = Cur { b, at: 0 };
        let (mut un, mut co) = (None, None);
        c.fields(0, |id, ty, c| {
            if (id == 2 || id == 3) && ty == 5 {
                let v = c.zigzag()?;
                if id == 2 {
                    un = Some(v);
                } else {
                    co = Some(v);
                }
                return Ok(true);
            }
            Ok(false)
        })?;
        match (un, co) {
            (Some(uncompressed), Some(compressed)) => Ok(Page {
                header_len: c.at,
                uncompressed,
                compressed,
            }),
            _ => Err(Error::Bad("page header without its sizes".into())),
        }
    }
}
