//! Writing Lance 2.0, 2.1 and 2.2 data files (spec: "Lance File Format", "Lance
//! Encoding Strategy"). 2.0 pages (`ArrayEncoding` trees, a column per type node) are
//! encoded by [`v20`] on the calling thread; the rest of this module is shared.
//!
//! [`FileWriter`] is streaming: record batches are buffered per top-level field until
//! the field holds `max_page_bytes`, then shredded into leaf columns, encoded as one
//! page per leaf and written out (buffers 64-byte aligned). `finish` writes global
//! buffer 0 (the schema), the column metadata, the offset tables and the footer.
//!
//! Shredding and encoding run on worker threads ([`WriteOptions::threads`]): the
//! fields' flushes (and the leaf columns of each) are encoded in parallel while the
//! calling thread writes finished pages, in the order the flushes were made, so the
//! bytes are the same whatever the number of threads. At most two flushes per worker
//! are in flight.

pub mod blob_v2;
pub mod compress;
pub mod fsst;
pub mod fullzip;
pub mod miniblock;
pub mod page;
mod pool;
pub mod schema;
pub mod shred;
pub mod v20;

use std::collections::{BTreeMap, VecDeque};
use std::io::Write;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, SchemaRef};
use prost::Message;

use crate::container::{FileVersion, FOOTER_LEN, MAGIC};
use crate::pb;
use crate::schema::LanceField;
use crate::structural::unravel::unravel;
use crate::structural::LeafRun;
use crate::{FormatError, Result};

/// Default page size: pages are flushed once a field buffers this many bytes.
pub const DEFAULT_MAX_PAGE_BYTES: u64 = 32 * 1024 * 1024;

/// Bytes a column's rows gather in the reference's writer before they go to its encoder
/// (see [`FileWriter::reference_written_bytes`]).
const REFERENCE_COLUMN_BUFFER: u64 = 8 * 1024 * 1024;
const ALIGN: u64 = 64;

/// Options of a [`FileWriter`].
#[derive(Debug, Clone)]
pub struct WriteOptions {
    /// Data storage version (2.1 or 2.2).
    pub version: FileVersion,
    /// Flush a field's buffered rows as a page at this many bytes.
    pub max_page_bytes: u64,
    /// Field ids to record, in the schema's pre-order (each field, then its children);
    /// `None` numbers them 0, 1, … A dataset passes the ids its manifest assigned.
    pub field_ids: Option<Vec<i32>>,
    /// Threads that shred and encode pages: 0 picks the number of cores (at most 8);
    /// 1 encodes on the calling thread. The file's bytes do not depend on it.
    pub threads: usize,
}

impl Default for WriteOptions {
    fn default() -> Self {
        Self {
            version: FileVersion::V2_1,
            max_page_bytes: DEFAULT_MAX_PAGE_BYTES,
            field_ids: None,
            threads: 0,
        }
    }
}

impl WriteOptions {
    /// The encoding threads to start (0: encode on the calling thread).
    fn workers(&self) -> usize {
        let n = match self.threads {
            0 => lancer_util::cores().min(8),
            n => n,
        };
        if n <= 1 {
            0
        } else {
            n
        }
    }
}

/// A flush on its way to the file: written once complete and every earlier flush is.
struct Flight {
    field: usize,
    priority: u64,
    /// In-memory bytes of the rows this flush encodes (for [`FileWriter::bytes_estimate`]).
    raw: u64,
    kind: FlightKind,
}

enum FlightKind {
    /// The zero-copy wide-vector page, ready.
    Pieces {
        layout: pb::enc21::PageLayout,
        pieces: Vec<arrow_buffer::Buffer>,
        rows: u64,
    },
    /// Leaf pages from the workers; `expected` once the flush is shredded.
    Leaves {
        expected: Option<usize>,
        leaves: BTreeMap<usize, pool::Leaf>,
    },
}

impl Flight {
    fn complete(&self) -> bool {
        match &self.kind {
            FlightKind::Pieces { .. } => true,
            FlightKind::Leaves { expected, leaves } => *expected == Some(leaves.len()),
        }
    }
}

struct PageMeta {
    buffers: Vec<(u64, u64)>,
    num_rows: u64,
    priority: u64,
    layout: PageEnc,
}

/// How a page is described: a 2.1+ layout or a 2.0 `ArrayEncoding`.
enum PageEnc {
    V21(pb::enc21::PageLayout),
    V20(pb::enc20::ArrayEncoding),
}

impl PageEnc {
    fn any(&self) -> prost_types::Any {
        match self {
            Self::V21(l) => prost_types::Any {
                type_url: "/lance.encodings21.PageLayout".into(),
                value: l.encode_to_vec(),
            },
            Self::V20(e) => prost_types::Any {
                type_url: "/lance.encodings.ArrayEncoding".into(),
                value: e.encode_to_vec(),
            },
        }
    }
}

/// Writes one Lance data file to `W`.
pub struct FileWriter<W: Write + Send + 'static> {
    out: Sink<W>,
    pos: u64,
    schema: SchemaRef,
    /// The schema as recorded in the file (with its field ids).
    pb_schema: pb::file::Schema,
    plans: Vec<Arc<pool::FieldPlan>>,
    options: WriteOptions,
    /// Encoding workers (None: encode on the calling thread).
    pool: Option<pool::Pool>,
    /// Flushes submitted and not yet written, by sequence number.
    flights: BTreeMap<u64, Flight>,
    next_seq: u64,
    next_write: u64,
    pending: Vec<(Vec<ArrayRef>, u64)>,
    rows_flushed: Vec<u64>,
    field_first_column: Vec<usize>,
    columns: Vec<Vec<PageMeta>>,
    rows: u64,
    /// In-memory bytes of the flushes not yet written.
    raw_in_flight: u64,
    /// Per field, the bytes the reference's writer would still buffer (see
    /// [`FileWriter::reference_written_bytes`]).
    reference_buffered: Vec<u64>,
    reference_written: u64,
    /// Global buffers after the schema (buffer 0), written by `finish`.
    extra_buffers: Vec<Vec<u8>>,
    /// 2.0 struct columns and their rows so far (one page each, written by `finish`).
    struct_rows: BTreeMap<usize, u64>,
    /// 2.0 blob columns (column encoding `Blob`).
    blob_columns: std::collections::BTreeSet<usize>,
    /// Whether each top-level column is a blob v2 column (its inline payloads written
    /// when a batch arrives).
    blob_v2: Vec<bool>,
}

fn check_writable(dt: &DataType, version: FileVersion, name: &str) -> Result<()> {
    match dt {
        DataType::Map(_, _) if version < FileVersion::V2_2 => Err(FormatError::UnsupportedType {
            logical_type: format!("map (field {name:?})"),
            detail: format!("maps need data storage version 2.2; this file is {version}"),
        }),
        DataType::Struct(fs) => fs
            .iter()
            .try_for_each(|f| check_writable(f.data_type(), version, f.name())),
        DataType::List(f) | DataType::LargeList(f) | DataType::Map(f, _) => {
            check_writable(f.data_type(), version, f.name())
        }
        DataType::FixedSizeList(_, n) if *n <= 0 => Err(FormatError::UnsupportedType {
            logical_type: dt.to_string(),
            detail: format!(
                "field {name:?}: a fixed-size list of {n} items; Lance files hold sizes of 1 or more"
            ),
        }),
        DataType::FixedSizeList(f, _) if matches!(f.data_type(), DataType::Struct(fs) if fs.is_empty()) => {
            Err(FormatError::UnsupportedType {
                logical_type: dt.to_string(),
                detail: format!(
                    "field {name:?}: a fixed-size list of structs without fields; give the struct \
                     a field"
                ),
            })
        }
        DataType::FixedSizeList(f, _) if matches!(f.data_type(), DataType::Struct(_)) => {
            if version < FileVersion::V2_2 {
                return Err(FormatError::UnsupportedType {
                    logical_type: dt.to_string(),
                    detail: format!(
                        "field {name:?}: fixed-size lists of structs need data storage version \
                         2.2 (pylance refuses them below it too); this file is {version}"
                    ),
                });
            }
            check_writable(f.data_type(), version, f.name())
        }
        DataType::FixedSizeList(f, _)
            if crate::block::fixed_width_bits(f.data_type()).is_none() =>
        {
            Err(FormatError::UnsupportedType {
                logical_type: dt.to_string(),
                detail: format!(
                    "field {name:?}: Lancer writes fixed-size lists of fixed-width items and of \
                     structs (2.2) only; store the column as a list"
                ),
            })
        }
        _ => Ok(()),
    }
}

fn leaf_fields<'a>(f: &'a LanceField, out: &mut Vec<&'a LanceField>) {
    match &f.data_type {
        // a struct without fields is one (placeholder) column of its own
        DataType::Struct(fs) if fs.is_empty() => out.push(f),
        DataType::Struct(_) if !f.is_packed_struct() => {
            f.children.iter().for_each(|c| leaf_fields(c, out))
        }
        DataType::List(_) | DataType::LargeList(_) | DataType::Map(_, _) => {
            f.children.iter().for_each(|c| leaf_fields(c, out))
        }
        dt if crate::reader::is_struct_fsl(dt) => {
            f.children.iter().for_each(|c| leaf_fields(c, out))
        }
        _ => out.push(f),
    }
}

/// Where encoded bytes go: written by background threads, so that encoding the next
/// page overlaps with the kernel copying the previous ones; at most a few buffers are
/// in flight. A plain `Write` gets one writer thread; a file opened with
/// [`FileWriter::create`] gets positional writes from one thread (a local file system
/// serialises buffered writes to one file on the inode lock: a second writer thread only
/// spun on it, up to a fifth of the CPU time of a 3 GB write on 2 cores).
struct Sink<W: Write + Send + 'static> {
    tx: Option<std::sync::mpsc::SyncSender<(u64, arrow_buffer::Buffer)>>,
    threads: Vec<std::thread::JoinHandle<std::io::Result<Option<W>>>>,
    /// Recovers the output once the threads are done (positional writes).
    reclaim: Option<Box<dyn FnOnce() -> Option<W> + Send>>,
}

impl<W: Write + Send + 'static> Sink<W> {
    fn stream(mut out: W) -> Self {
        let (tx, rx) = std::sync::mpsc::sync_channel::<(u64, arrow_buffer::Buffer)>(4);
        let thread = std::thread::spawn(move || {
            for (_, b) in rx {
                out.write_all(&b)?;
            }
            out.flush()?;
            Ok(Some(out))
        });
        Self {
            tx: Some(tx),
            threads: vec![thread],
            reclaim: None,
        }
    }

    fn send(&mut self, pos: u64, b: arrow_buffer::Buffer) -> Result<()> {
        let sent = self
            .tx
            .as_ref()
            .map(|tx| tx.send((pos, b)).is_ok())
            .unwrap_or(false);
        if sent {
            return Ok(());
        }
        // A writer thread stopped: report its error.
        match self.close() {
            Err(e) => Err(e),
            Ok(_) => Err(FormatError::Io(std::io::Error::other(
                "the file writer thread stopped",
            ))),
        }
    }

    fn close(&mut self) -> Result<Option<W>> {
        self.tx = None;
        let mut out = None;
        for t in self.threads.drain(..) {
            match t.join() {
                Ok(r) => {
                    if let Some(w) = r? {
                        out = Some(w);
                    }
                }
                Err(_) => {
                    return Err(FormatError::Io(std::io::Error::other(
                        "a file writer thread panicked",
                    )))
                }
            }
        }
        if out.is_none() {
            out = self.reclaim.take().and_then(|f| f());
        }
        Ok(out)
    }
}

impl Sink<std::fs::File> {
    fn positional(file: std::fs::File, threads: usize) -> Self {
        use std::os::unix::fs::FileExt;
        let (tx, rx) = std::sync::mpsc::sync_channel::<(u64, arrow_buffer::Buffer)>(4);
        let rx = std::sync::Arc::new(std::sync::Mutex::new(rx));
        let file = std::sync::Arc::new(file);
        let handles = (0..threads.max(1))
            .map(|k| {
                let rx = rx.clone();
                let file = file.clone();
                std::thread::spawn(move || -> std::io::Result<Option<std::fs::File>> {
                    loop {
                        let next = match rx.lock() {
                            Ok(r) => r.recv(),
                            Err(_) => break,
                        };
                        let Ok((pos, b)) = next else { break };
                        file.write_all_at(&b, pos)?;
                    }
                    let _ = k;
                    Ok(None)
                })
            })
            .collect();
        Self {
            tx: Some(tx),
            threads: handles,
            reclaim: Some(Box::new(move || std::sync::Arc::try_unwrap(file).ok())),
        }
    }
}

impl FileWriter<std::fs::File> {
    /// Creates the file at `path` and writes it with positional writes from a
    /// background thread, while pages are encoded.
    pub fn create(
        path: impl AsRef<std::path::Path>,
        schema: SchemaRef,
        options: WriteOptions,
    ) -> Result<Self> {
        let file = std::fs::File::create(path.as_ref()).map_err(|e| {
            FormatError::Io(std::io::Error::new(
                e.kind(),
                format!("cannot create {}: {e}", path.as_ref().display()),
            ))
        })?;
        Self::try_new_with(Sink::positional(file, 1), schema, options)
    }
}

impl<W: Write + Send + 'static> FileWriter<W> {
    /// Starts a file with `schema`, streamed to `out`.
    pub fn try_new(out: W, schema: SchemaRef, options: WriteOptions) -> Result<Self> {
        Self::try_new_with(Sink::stream(out), schema, options)
    }

    fn try_new_with(out: Sink<W>, schema: SchemaRef, options: WriteOptions) -> Result<Self> {
        if options.version == FileVersion::Legacy {
            return Err(FormatError::unsupported(
                format!("data storage version {}", options.version),
                "Lancer writes 2.0, 2.1 and 2.2 files; choose 2.1 for the widest compatibility",
            ));
        }
        if options.version >= FileVersion::V2_3 {
            return Err(FormatError::unsupported(
                "data storage version 2.3",
                "Lancer reads 2.3 files but does not write them (pylance 14 marks 2.3 unstable); write 2.2 or 2.1",
            ));
        }
        for f in schema.fields() {
            if blob_v2::is_write_field(f) {
                if options.version < FileVersion::V2_2 {
                    return Err(FormatError::UnsupportedType {
                        logical_type: format!("blob v2 (field {:?})", f.name()),
                        detail: format!(
                            "blob v2 columns need data storage version 2.2; this file is {}",
                            options.version
                        ),
                    });
                }
                continue;
            }
            // (2.0 has checks of its own, on the Lance schema below)
            if options.version != FileVersion::V2_0 {
                check_writable(f.data_type(), options.version, f.name())?;
            }
        }
        let pb_schema = match &options.field_ids {
            Some(ids) => schema::pb_schema_with_ids(&schema, ids)?,
            None => schema::pb_schema(&schema)?,
        };
        let fields = crate::schema::LanceSchema::from_pb(&pb_schema)?.fields;
        let v20 = options.version == FileVersion::V2_0;
        if v20 {
            fields.iter().try_for_each(v20::check_writable)?;
        }
        let mut struct_rows = BTreeMap::new();
        let mut field_first_column = Vec::with_capacity(fields.len());
        let mut plans = Vec::with_capacity(fields.len());
        let mut col = 0;
        for f in fields {
            field_first_column.push(col);
            let mut leaves = Vec::new();
            leaf_fields(&f, &mut leaves);
            if v20 {
                for c in v20::struct_columns(&f) {
                    struct_rows.insert(col + c, 0);
                }
            }
            col += if v20 {
                crate::v20::column_count(&f)
            } else {
                leaves.len()
            };
            let knobs = leaves
                .iter()
                .map(|l| page::Knobs::from_metadata(&l.metadata))
                .collect::<Result<Vec<_>>>()?;
            // legacy blobs (binary leaves); a blob v2 column is a packed struct of
            // descriptors, encoded as any other
            let blobs = leaves
                .iter()
                .map(|l| l.is_blob() && !matches!(l.data_type, DataType::Struct(_)))
                .collect();
            plans.push(Arc::new(pool::FieldPlan {
                field: f,
                knobs,
                blobs,
            }));
        }
        let pool = match options.workers() {
            _ if v20 => None,
            0 => None,
            n => Some(pool::Pool::new(n, options.version)?),
        };
        let blob_v2 = schema
            .fields()
            .iter()
            .map(|f| blob_v2::holds_write_field(f))
            .collect();
        let rows_len = plans.len();
        Ok(Self {
            out,
            pos: 0,
            pending: plans.iter().map(|_| (Vec::new(), 0)).collect(),
            rows_flushed: vec![0; plans.len()],
            columns: (0..col).map(|_| Vec::new()).collect(),
            schema,
            pb_schema,
            plans,
            options,
            pool,
            flights: BTreeMap::new(),
            next_seq: 0,
            next_write: 0,
            field_first_column,
            rows: 0,
            raw_in_flight: 0,
            reference_buffered: vec![0; rows_len],
            reference_written: 0,
            extra_buffers: Vec::new(),
            blob_v2,
            struct_rows,
            blob_columns: Default::default(),
        })
    }

    /// Adds a global buffer (e.g. an index's centroids) and returns its position in
    /// the file's global buffer table: 1 for the first (0 is the schema).
    pub fn add_global_buffer(&mut self, bytes: Vec<u8>) -> u32 {
        self.extra_buffers.push(bytes);
        self.extra_buffers.len() as u32
    }

    /// Sets a key of the schema metadata the file's footer records (known only once
    /// the rows are written, e.g. an index's per-partition metadata).
    pub fn set_schema_metadata(&mut self, key: &str, value: &str) {
        self.pb_schema
            .metadata
            .insert(key.to_string(), value.as_bytes().to_vec());
    }

    /// Rows written so far.
    pub fn num_rows(&self) -> u64 {
        self.rows
    }

    /// The bytes the reference's writer would have written by now for the same batches:
    /// it hands each column's buffered rows to the encoder once they hold over 8 MiB
    /// (`cache_bytes_per_column`), and checks `max_bytes_per_file` against what it has
    /// written, so a writer cutting files where pylance cuts them asks this. Counted
    /// from the batches alone (in-memory sizes), not from how fast encoding runs.
    pub fn reference_written_bytes(&self) -> u64 {
        self.reference_written
    }

    /// The file's size so far, counting what is written plus the in-memory size of
    /// rows still buffered or being encoded (an over-estimate for them: encoding
    /// compresses). A writer that caps file sizes rolls over when this reaches the cap.
    pub fn bytes_estimate(&self) -> u64 {
        self.pos + self.raw_in_flight + self.pending.iter().map(|p| p.1).sum::<u64>()
    }

    fn write_bytes(&mut self, b: &[u8]) -> Result<()> {
        self.write_buffer(arrow_buffer::Buffer::from_slice_ref(b))
    }

    fn write_buffer(&mut self, b: arrow_buffer::Buffer) -> Result<()> {
        let at = self.pos;
        self.pos += b.len() as u64;
        self.out.send(at, b)
    }

    /// Writes a page's buffers, each aligned; their (position, length).
    fn write_page_buffers(&mut self, bufs: Vec<arrow_buffer::Buffer>) -> Result<Vec<(u64, u64)>> {
        let mut out = Vec::with_capacity(bufs.len());
        for b in bufs {
            self.align()?;
            let at = self.pos;
            let len = b.len() as u64;
            self.write_buffer(b)?;
            out.push((at, len));
        }
        Ok(out)
    }

    fn align(&mut self) -> Result<()> {
        let pad = (ALIGN - self.pos % ALIGN) % ALIGN;
        if pad > 0 {
            self.write_bytes(&vec![0u8; pad as usize])?;
        }
        Ok(())
    }

    /// Buffers `batch`; fields that reach the page size are encoded and written.
    pub fn write_batch(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.num_columns() != self.schema.fields().len() {
            return Err(FormatError::OutOfRange {
                what: format!(
                    "batch has {} columns, the file schema {}",
                    batch.num_columns(),
                    self.schema.fields().len()
                ),
            });
        }
        for (i, col) in batch.columns().iter().enumerate() {
            let want = self.schema.field(i);
            if col.data_type() != want.data_type() {
                return Err(FormatError::UnsupportedType {
                    logical_type: col.data_type().to_string(),
                    detail: format!(
                        "column {:?} of the file is {}",
                        want.name(),
                        want.data_type()
                    ),
                });
            }
            let col = if self.blob_v2[i] {
                let field = want.clone();
                self.place_inline_within(&field, col)?
            } else {
                col.clone()
            };
            let size = col.to_data().get_slice_memory_size().unwrap_or(0) as u64;
            // the reference's writer hands a column's buffer to its encoder once it
            // holds more than REFERENCE_COLUMN_BUFFER bytes of rows: what it has
            // written by now (the rows' own bytes, not the buffers a slice shares)
            let acc = &mut self.reference_buffered[i];
            *acc += size;
            if *acc > REFERENCE_COLUMN_BUFFER {
                self.reference_written += std::mem::take(acc);
            }
            let p = &mut self.pending[i];
            p.0.push(col);
            p.1 += size;
            if p.1 >= self.options.max_page_bytes {
                self.flush_field(i)?;
            }
        }
        self.rows += batch.num_rows() as u64;
        Ok(())
    }

    /// `col` (of `field`) with every blob v2 column in it — itself, or inside structs —
    /// turned into descriptors by [`Self::place_inline_blobs`].
    fn place_inline_within(&mut self, field: &Field, col: &ArrayRef) -> Result<ArrayRef> {
        if blob_v2::is_write_field(field) {
            return self.place_inline_blobs(col);
        }
        let (DataType::Struct(fields), Some(s)) = (
            field.data_type(),
            arrow_array::cast::AsArray::as_struct_opt(col),
        ) else {
            return Ok(col.clone());
        };
        let mut out_fields = Vec::with_capacity(fields.len());
        let mut children = Vec::with_capacity(fields.len());
        for (f, c) in fields.iter().zip(s.columns()) {
            let c = if blob_v2::holds_write_field(f) {
                self.place_inline_within(f, c)?
            } else {
                c.clone()
            };
            out_fields.push(f.as_ref().clone().with_data_type(c.data_type().clone()));
            children.push(c);
        }
        Ok(std::sync::Arc::new(arrow_array::StructArray::try_new(
            out_fields.into(),
            children,
            s.nulls().cloned(),
        )?))
    }

    /// Writes the inline payloads of a blob v2 column's rows into the file now (64-byte
    /// aligned) and returns the column's descriptors (see [`blob_v2`]).
    fn place_inline_blobs(&mut self, col: &ArrayRef) -> Result<ArrayRef> {
        blob_v2::to_descriptors(col, |bytes, values, start| {
            self.align()?;
            let at = self.pos;
            if !bytes.is_empty() {
                // a slice of the array's value buffer: no copy
                self.write_buffer(values.slice_with_length(start, bytes.len()))?;
            }
            Ok(at)
        })
    }

    /// Hands field `i`'s buffered rows to the encoders (or encodes them here, without
    /// workers); pages are written as they complete, in flush order.
    fn flush_field(&mut self, i: usize) -> Result<()> {
        let (arrays, raw) = std::mem::take(&mut self.pending[i]);
        if arrays.is_empty() {
            return Ok(());
        }
        let plan = self.plans[i].clone();
        let priority = self.rows_flushed[i];
        if self.options.version == FileVersion::V2_0 {
            return self.flush_v20(i, &plan.field, arrays);
        }
        // Wide vectors without nulls: written straight from the input buffers.
        let knobs0 = plan.knobs.first().cloned().unwrap_or_default();
        let kind = if let Some((layout, pieces, rows)) =
            fullzip::encode_pieces(&plan.field, &knobs0, &arrays)
        {
            self.rows_flushed[i] += rows;
            FlightKind::Pieces {
                layout,
                pieces,
                rows,
            }
        } else {
            let rows: u64 = arrays.iter().map(|a| a.len() as u64).sum();
            if rows == 0 {
                return Ok(());
            }
            self.rows_flushed[i] += rows;
            if self.pool.is_none() {
                let leaves = pool::encode_inline(&plan, &arrays, self.options.version)?;
                FlightKind::Leaves {
                    expected: Some(leaves.len()),
                    leaves: leaves.into_iter().enumerate().collect(),
                }
            } else {
                // Bounded memory: at most two flushes per worker in flight.
                let limit = 2 * self.options.workers().max(1);
                while self.flights.len() >= limit {
                    self.pump()?;
                }
                if let Some(p) = &self.pool {
                    p.submit(self.next_seq, plan, arrays);
                }
                FlightKind::Leaves {
                    expected: None,
                    leaves: BTreeMap::new(),
                }
            }
        };
        let seq = self.next_seq;
        self.next_seq += 1;
        self.raw_in_flight += raw;
        self.flights.insert(
            seq,
            Flight {
                field: i,
                priority,
                raw,
                kind,
            },
        );
        self.write_ready()
    }

    /// Waits for one report of the workers and writes what it completes.
    fn pump(&mut self) -> Result<()> {
        let Some(p) = &self.pool else {
            return Err(FormatError::corrupt(
                "pages pending without encoding threads",
            ));
        };
        match p.recv()? {
            pool::Done::Failed(e) => return Err(e),
            pool::Done::Shredded { seq, leaves: n } => {
                if let Some(Flight {
                    kind: FlightKind::Leaves { expected, .. },
                    ..
                }) = self.flights.get_mut(&seq)
                {
                    *expected = Some(n);
                }
            }
            pool::Done::Leaf { seq, k, leaf } => {
                if let Some(Flight {
                    kind: FlightKind::Leaves { leaves, .. },
                    ..
                }) = self.flights.get_mut(&seq)
                {
                    leaves.insert(k, leaf);
                }
            }
        }
        self.write_ready()
    }

    /// Writes the complete flushes at the head of the order.
    fn write_ready(&mut self) -> Result<()> {
        while let Some(entry) = self.flights.first_entry() {
            if *entry.key() != self.next_write || !entry.get().complete() {
                break;
            }
            let flight = entry.remove();
            self.next_write += 1;
            self.write_flight(flight)?;
        }
        Ok(())
    }

    fn write_flight(&mut self, flight: Flight) -> Result<()> {
        let Flight {
            field: i,
            priority,
            raw,
            kind,
        } = flight;
        self.raw_in_flight = self.raw_in_flight.saturating_sub(raw);
        let first = self.field_first_column[i];
        match kind {
            FlightKind::Pieces {
                layout,
                pieces,
                rows,
            } => {
                self.align()?;
                let at = self.pos;
                let mut len = 0;
                for p in pieces {
                    len += p.len() as u64;
                    self.write_buffer(p)?;
                }
                self.columns[first].push(PageMeta {
                    buffers: vec![(at, len)],
                    num_rows: rows,
                    priority,
                    layout: PageEnc::V21(layout),
                });
            }
            FlightKind::Leaves { leaves, .. } => {
                for (k, leaf) in leaves {
                    let page = match leaf {
                        pool::Leaf::Page(p) => p,
                        pool::Leaf::Blob(s) => {
                            let knobs = self.plans[i].knobs.get(k).cloned().unwrap_or_default();
                            self.encode_blob_page(&s, &knobs)?
                        }
                    };
                    let buffers = self.write_page_buffers(page.buffers)?;
                    let schema_columns = self.columns.len();
                    let col = self.columns.get_mut(first + k).ok_or_else(|| {
                        FormatError::UnsupportedType {
                            logical_type: self.schema.field(i).data_type().to_string(),
                            detail: format!(
                                "field {:?} shredded into more columns than its schema has \
                                 ({schema_columns} in the file): a type this writer does not \
                                 lay out",
                                self.schema.field(i).name()
                            ),
                        }
                    })?;
                    col.push(PageMeta {
                        buffers,
                        num_rows: page.num_rows,
                        priority,
                        layout: PageEnc::V21(page.layout),
                    });
                }
            }
        }
        Ok(())
    }

    /// Encodes field `i`'s buffered rows as 2.0 pages and writes them.
    fn flush_v20(&mut self, i: usize, field: &LanceField, arrays: Vec<ArrayRef>) -> Result<()> {
        let all = match arrays.as_slice() {
            [one] => one.clone(),
            _ => {
                let refs: Vec<&dyn Array> = arrays.iter().map(|a| a.as_ref()).collect();
                arrow_select::concat::concat(&refs)?
            }
        };
        if all.is_empty() {
            return Ok(());
        }
        let priority = self.rows_flushed[i];
        self.rows_flushed[i] += all.len() as u64;
        let first = self.field_first_column[i];
        let encoded = v20::encode_field(field, &all)?;
        for (c, rows) in encoded.structs {
            *self.struct_rows.entry(first + c).or_default() += rows;
        }
        let mut pages = encoded.pages;
        for (c, values) in encoded.blobs {
            pages.push(self.write_blobs_v20(c, &values)?);
            self.blob_columns.insert(first + c);
        }
        for page in pages {
            let buffers = self.write_page_buffers(page.buffers)?;
            let col = self.columns.get_mut(first + page.column).ok_or_else(|| {
                FormatError::corrupt(format!("2.0 page for column {} of field {i}", page.column))
            })?;
            col.push(PageMeta {
                buffers,
                num_rows: page.num_rows,
                priority,
                layout: PageEnc::V20(page.encoding),
            });
        }
        Ok(())
    }

    /// Writes the values of a 2.0 blob column out of line and returns the page that
    /// describes them: (1, 0) for a null, (0, 0) for an empty value.
    fn write_blobs_v20(&mut self, column: usize, values: &ArrayRef) -> Result<v20::Page20> {
        use arrow_array::cast::AsArray;
        let bin = values
            .as_binary_opt::<i64>()
            .ok_or_else(|| FormatError::UnsupportedType {
                logical_type: values.data_type().to_string(),
                detail: "blob columns must be large_binary".into(),
            })?;
        let mut positions = Vec::with_capacity(bin.len());
        let mut sizes = Vec::with_capacity(bin.len());
        for i in 0..bin.len() {
            if bin.is_null(i) {
                positions.push(1);
                sizes.push(0);
                continue;
            }
            let v = bin.value(i);
            if v.is_empty() {
                positions.push(0);
                sizes.push(0);
                continue;
            }
            self.align()?;
            positions.push(self.pos);
            sizes.push(v.len() as u64);
            let start = bin.value_offsets()[i] as usize;
            self.write_buffer(bin.values().slice_with_length(start, v.len()))?;
        }
        v20::blob_page(column, positions, sizes)
    }

    /// A blob page (spec: "Blob Page Layout"): every value is written out of line now,
    /// and the page holds one (position, size) description per entry; nulls and empty
    /// lists have size 0 and carry `def << 16 | rep` as their position.
    fn encode_blob_page(
        &mut self,
        s: &shred::Shredded,
        knobs: &page::Knobs,
    ) -> Result<page::EncodedPage> {
        use arrow_array::cast::AsArray;
        let info = crate::structural::LevelInfo::new(&s.layers);
        let n_entries =
            crate::structural::num_entries(s.rep.as_ref(), s.def.as_ref(), s.values.len());
        let values = match s.values.data_type() {
            DataType::LargeBinary => s.values.clone(),
            DataType::Binary | DataType::Utf8 | DataType::LargeUtf8 => {
                arrow_cast::cast(&s.values, &DataType::LargeBinary)?
            }
            other => {
                return Err(FormatError::UnsupportedType {
                    logical_type: other.to_string(),
                    detail: "blob columns must be binary".into(),
                })
            }
        };
        let bin = values.as_binary::<i64>();
        let mut pos = Vec::with_capacity(n_entries);
        let mut size = Vec::with_capacity(n_entries);
        let mut v = 0usize;
        for e in 0..n_entries {
            let r = s.rep.as_ref().map_or(0, |x| x[e]);
            let d = s.def.as_ref().map_or(0, |x| x[e]);
            let visible = d <= info.max_visible_def;
            if d == 0 {
                let bytes = bin.value(v);
                if bytes.is_empty() {
                    pos.push(0);
                    size.push(0);
                } else {
                    self.align()?;
                    pos.push(self.pos);
                    size.push(bytes.len() as u64);
                    // A slice of the array's value buffer: no copy.
                    let start = bin.value_offsets()[v] as usize;
                    self.write_buffer(bin.values().slice_with_length(start, bytes.len()))?;
                }
            } else {
                pos.push((u64::from(d) << 16) | u64::from(r));
                size.push(0);
            }
            if visible {
                v += 1;
            }
        }
        let desc_type = DataType::Struct(
            vec![
                Field::new("position", DataType::UInt64, false),
                Field::new("size", DataType::UInt64, false),
            ]
            .into(),
        );
        let desc: ArrayRef = std::sync::Arc::new(arrow_array::StructArray::try_new(
            match &desc_type {
                DataType::Struct(f) => f.clone(),
                _ => return Err(FormatError::corrupt("unreachable")),
            },
            vec![
                std::sync::Arc::new(arrow_array::UInt64Array::from(pos)),
                std::sync::Arc::new(arrow_array::UInt64Array::from(size)),
            ],
            None,
        )?);
        let inner = shred::Shredded {
            layers: vec![crate::structural::Layer::AllValidItem],
            rep: None,
            def: None,
            values: desc,
            num_rows: n_entries,
        };
        let mut inner_knobs = page::Knobs::from_metadata(&Default::default())?;
        inner_knobs.structural = Some("miniblock".into());
        let _ = knobs;
        let packed = page::encode_packed_descriptions(&inner, &inner_knobs, self.options.version)?;
        Ok(page::EncodedPage {
            buffers: packed.buffers,
            layout: pb::enc21::PageLayout {
                layout: Some(pb::enc21::page_layout::Layout::BlobLayout(Box::new(
                    pb::enc21::BlobLayout {
                        inner_layout: Some(Box::new(packed.layout)),
                        layers: s.layers.iter().map(|l| page::layer_pb(*l)).collect(),
                    },
                ))),
            },
            num_rows: s.num_rows as u64,
        })
    }

    /// Writes the remaining pages and the file's metadata; returns the output.
    pub fn finish(mut self) -> Result<W> {
        for i in 0..self.plans.len() {
            self.flush_field(i)?;
        }
        while !self.flights.is_empty() {
            self.pump()?;
        }
        // The workers are done: stop them before the metadata is written.
        self.pool = None;
        // 2.0 struct columns: one page of all their rows (even none), no data.
        for (c, rows) in std::mem::take(&mut self.struct_rows) {
            if let Some(col) = self.columns.get_mut(c) {
                col.push(PageMeta {
                    buffers: vec![],
                    num_rows: rows,
                    priority: 0,
                    layout: PageEnc::V20(pb::enc20::ArrayEncoding {
                        array_encoding: Some(pb::enc20::array_encoding::ArrayEncoding::Struct(
                            pb::enc20::SimpleStruct {},
                        )),
                    }),
                });
            }
        }
        // Global buffer 0: the schema and row count.
        self.align()?;
        let descriptor = pb::file::FileDescriptor {
            schema: Some(self.pb_schema.clone()),
            length: self.rows,
        }
        .encode_to_vec();
        let gb0 = (self.pos, descriptor.len() as u64);
        self.write_bytes(&descriptor)?;
        let mut globals = vec![gb0];
        for b in std::mem::take(&mut self.extra_buffers) {
            self.align()?;
            globals.push((self.pos, b.len() as u64));
            self.write_bytes(&b)?;
        }
        // Column metadata.
        let column_encoding = prost_types::Any {
            type_url: "/lance.encodings.ColumnEncoding".into(),
            value: pb::enc20::ColumnEncoding {
                column_encoding: Some(pb::enc20::column_encoding::ColumnEncoding::Values(())),
            }
            .encode_to_vec(),
        };
        let direct = |any: &prost_types::Any| pb::file::v2::Encoding {
            location: Some(pb::file::v2::encoding::Location::Direct(
                pb::file::v2::DirectEncoding {
                    encoding: any.encode_to_vec(),
                },
            )),
        };
        self.align()?;
        let column_meta_start = self.pos;
        let mut cmo = Vec::with_capacity(self.columns.len());
        let columns = std::mem::take(&mut self.columns);
        let blob_encoding = prost_types::Any {
            type_url: "/lance.encodings.ColumnEncoding".into(),
            value: pb::enc20::ColumnEncoding {
                column_encoding: Some(pb::enc20::column_encoding::ColumnEncoding::Blob(Box::new(
                    pb::enc20::Blob {
                        inner: Some(Box::new(pb::enc20::ColumnEncoding {
                            column_encoding: Some(
                                pb::enc20::column_encoding::ColumnEncoding::Values(()),
                            ),
                        })),
                    },
                ))),
            }
            .encode_to_vec(),
        };
        for (c, pages) in columns.iter().enumerate() {
            let encoding = if self.blob_columns.contains(&c) {
                &blob_encoding
            } else {
                &column_encoding
            };
            let meta = pb::file::v2::ColumnMetadata {
                encoding: Some(direct(encoding)),
                pages: pages
                    .iter()
                    .map(|p| pb::file::v2::column_metadata::Page {
                        buffer_offsets: p.buffers.iter().map(|b| b.0).collect(),
                        buffer_sizes: p.buffers.iter().map(|b| b.1).collect(),
                        length: p.num_rows,
                        encoding: Some(direct(&p.layout.any())),
                        priority: p.priority,
                    })
                    .collect(),
                buffer_offsets: vec![],
                buffer_sizes: vec![],
            }
            .encode_to_vec();
            cmo.push((self.pos, meta.len() as u64));
            self.write_bytes(&meta)?;
        }
        let cmo_start = self.pos;
        let mut table = Vec::with_capacity(cmo.len() * 16);
        for (p, s) in &cmo {
            table.extend_from_slice(&p.to_le_bytes());
            table.extend_from_slice(&s.to_le_bytes());
        }
        self.write_bytes(&table)?;
        let gbo_start = self.pos;
        let mut gbo = Vec::with_capacity(16 * globals.len());
        for (p, n) in &globals {
            gbo.extend_from_slice(&p.to_le_bytes());
            gbo.extend_from_slice(&n.to_le_bytes());
        }
        self.write_bytes(&gbo)?;
        // 2.0 files carry the footer version 0.3 (as pylance writes them).
        let (major, minor) = match self.options.version {
            FileVersion::V2_0 => (0, 3),
            v => v.numbers(),
        };
        let mut footer = Vec::with_capacity(FOOTER_LEN as usize);
        footer.extend_from_slice(&column_meta_start.to_le_bytes());
        footer.extend_from_slice(&cmo_start.to_le_bytes());
        footer.extend_from_slice(&gbo_start.to_le_bytes());
        footer.extend_from_slice(&(globals.len() as u32).to_le_bytes());
        footer.extend_from_slice(&(cmo.len() as u32).to_le_bytes());
        footer.extend_from_slice(&major.to_le_bytes());
        footer.extend_from_slice(&minor.to_le_bytes());
        footer.extend_from_slice(MAGIC);
        self.write_bytes(&footer)?;
        self.out
            .close()?
            .ok_or_else(|| FormatError::Io(std::io::Error::other("the output was not returned")))
    }
}

/// Writes `batches` to an in-memory file.
pub fn write_to_vec(
    schema: SchemaRef,
    batches: &[RecordBatch],
    options: WriteOptions,
) -> Result<Vec<u8>> {
    let mut w = FileWriter::try_new(Vec::new(), schema, options)?;
    for b in batches {
        w.write_batch(b)?;
    }
    w.finish()
}

/// Shreds `array` and rebuilds it through the reader's unravelling and assembly: the
/// identity for every array the writer can store (used to check the writer's levels).
pub fn reassemble(field: &Field, lf: &LanceField, array: &ArrayRef) -> Result<ArrayRef> {
    let mut leaves = VecDeque::new();
    for s in shred::shred(lf, array)? {
        let run = LeafRun {
            rep: s.rep,
            def: s.def,
            num_rows: s.num_rows as u64,
            values: s.values,
        };
        leaves.push_back(unravel(run, &s.layers)?);
    }
    crate::reader::assemble(field, lf, &mut leaves, 0, array.len())
}
