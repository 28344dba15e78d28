//! The file reader: projection, full reads, row ranges and random takes over any
//! [`RangeRead`], for 2.0, 2.1, 2.2 and 2.3 files (2.3 pages: see [`crate::v23`]) and
//! legacy 0.1 / 0.2 files (decoded by [`crate::legacy`]).
//!
//! Each top-level field is read from its columns (2.1+: one column per leaf, with the
//! structure carried in levels; 2.0: one column per node of the type tree) and only
//! the pages — and within pages only the chunks or byte ranges — that hold the rows
//! asked for are read. Page metadata ("search cache": chunk tables, dictionaries,
//! repetition indexes) is loaded once per reader and reused by later reads.

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use arrow_array::{Array, ArrayRef, RecordBatch, RecordBatchOptions, UInt64Array};
use arrow_schema::{DataType, Field, FieldRef, Schema, SchemaRef};

use crate::blob_read::BlobRead;
use crate::container::{FileMetadata, FileVersion, PageEncoding, DEFAULT_TAIL_READ};
use crate::pb::enc21::page_layout::Layout;
use crate::read::RangeRead;
use crate::schema::LanceField;
pub(crate) use crate::structural::assemble::assemble;
use crate::structural::assemble::concat_unraveled;
use crate::structural::constant::ConstantPage;
use crate::structural::fullzip::FullZipPage;
use crate::structural::miniblock::MiniBlockPage;
use crate::structural::unravel::{unravel, Unraveled};
use crate::structural::{Layer, LeafRun};
use crate::v20;
use crate::v23::sparse::SparsePlan;
use crate::{FormatError, Result};

/// A page prepared for reading (metadata loaded).
#[derive(Debug)]
enum PageState {
    Mini(MiniBlockPage),
    Full(FullZipPage),
    Constant(ConstantPage),
    Blob(Box<PageState>, Vec<Layer>),
    /// A 2.3 sparse page: its structure plan, its leaf values (None = all null), and the
    /// number of values stored when null leaf slots are left out.
    Sparse(Box<SparsePlan>, Option<Box<PageState>>, Option<u64>),
    /// 2.3 indexed values: one item index per value, and the items.
    Indexed(Vec<u64>, Box<PageState>),
}

/// One leaf column of a 2.1+ field.
#[derive(Debug, Clone)]
struct Leaf {
    column: usize,
    /// Type the page values decode to (dictionaries materialised, blobs as binary).
    value_type: DataType,
    /// Page rows per row of the top-level field (> 1 below fixed-size lists of structs).
    scale: u64,
}

/// A page state, loaded once.
type PageSlot = Arc<Mutex<Option<Arc<PageState>>>>;

/// Reads a Lance data file.
pub struct FileReader {
    io: Arc<dyn RangeRead>,
    meta: Arc<FileMetadata>,
    schema: SchemaRef,
    /// First column index of each top-level field, and its column count.
    field_columns: Vec<Range<usize>>,
    /// Loaded page states by (column, page); a slot is locked while its page loads, so
    /// threads decoding the same page wait for one load (one request) instead of racing.
    cache: Mutex<HashMap<(usize, usize), PageSlot>>,
    /// Set for legacy (0.1 / 0.2) files, which decode through [`crate::legacy`].
    legacy: Option<Arc<crate::legacy::LegacyFile>>,
}

impl std::fmt::Debug for FileReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileReader")
            .field("version", &self.meta.version)
            .field("num_rows", &self.meta.num_rows)
            .finish()
    }
}

/// True for a fixed-size list of structs (pylance 14's 2.2 files): its struct's leaves
/// are columns of their own, each fixed-size-list row `dimension` slots of them.
pub(crate) fn is_struct_fsl(dt: &DataType) -> bool {
    matches!(dt, DataType::FixedSizeList(item, _) if matches!(item.data_type(), DataType::Struct(_)))
}

/// True if `dt` is or holds (inside structs, lists, maps) a fixed-size list of structs.
fn holds_struct_fsl(dt: &DataType) -> bool {
    match dt {
        _ if is_struct_fsl(dt) => true,
        DataType::Struct(fs) => fs.iter().any(|f| holds_struct_fsl(f.data_type())),
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::FixedSizeList(f, _)
        | DataType::Map(f, _) => holds_struct_fsl(f.data_type()),
        _ => false,
    }
}

/// Number of columns a field occupies.
pub fn column_count(f: &LanceField, version: FileVersion) -> usize {
    if version.is_structural() {
        match &f.data_type {
            // a struct without fields has a placeholder column (nothing to decode)
            DataType::Struct(fs) if fs.is_empty() => 1,
            DataType::Struct(_) if !f.is_packed_struct() => {
                f.children.iter().map(|c| column_count(c, version)).sum()
            }
            DataType::List(_) | DataType::LargeList(_) | DataType::Map(_, _) => {
                f.children.iter().map(|c| column_count(c, version)).sum()
            }
            _ if is_struct_fsl(&f.data_type) => {
                f.children.iter().map(|c| column_count(c, version)).sum()
            }
            _ => 1,
        }
    } else {
        v20::column_count(f)
    }
}

/// How the rows of a leaf's pages relate to the field's rows: a fixed-size list of
/// structs has no repetition level, so each of its rows is `dimension` page rows of
/// the leaves below it (until a list, whose repetition levels count the rows).
#[derive(Clone, Copy)]
struct Scale {
    by: u64,
    under_list: bool,
}

fn leaves_of(f: &LanceField, first: usize, out: &mut Vec<Leaf>, blobs: BlobRead) -> usize {
    let top = Scale {
        by: 1,
        under_list: false,
    };
    leaves_scaled(f, first, out, blobs, top)
}

fn leaves_scaled(
    f: &LanceField,
    first: usize,
    out: &mut Vec<Leaf>,
    blobs: BlobRead,
    scale: Scale,
) -> usize {
    let children = |out: &mut Vec<Leaf>, scale: Scale| {
        let mut col = first;
        for c in &f.children {
            col = leaves_scaled(c, col, out, blobs, scale);
        }
        col
    };
    match &f.data_type {
        // the placeholder column of a struct without fields is skipped
        DataType::Struct(fs) if fs.is_empty() => first + 1,
        DataType::Struct(_) if !f.is_packed_struct() => children(out, scale),
        DataType::List(_) | DataType::LargeList(_) | DataType::Map(_, _) => children(
            out,
            Scale {
                under_list: true,
                ..scale
            },
        ),
        DataType::FixedSizeList(_, n) if is_struct_fsl(&f.data_type) => {
            let by = if scale.under_list {
                scale.by
            } else {
                scale.by.saturating_mul(u64::try_from(*n).unwrap_or(1))
            };
            children(out, Scale { by, ..scale })
        }
        dt => {
            let value_type = match dt {
                _ if blobs == BlobRead::Descriptions && crate::blob_read::is_legacy_blob(f) => {
                    DataType::Struct(crate::blob_read::description_fields())
                }
                DataType::Dictionary(_, v) => v.as_ref().clone(),
                other => other.clone(),
            };
            out.push(Leaf {
                column: first,
                value_type,
                scale: scale.by,
            });
            first + 1
        }
    }
}

impl FileReader {
    /// Opens the file behind `io`, reading its metadata (one read when the tail fits
    /// in 64 KiB).
    /// Legacy (0.1 / 0.2) files are recognised by their footer and read as well.
    pub fn open(io: Arc<dyn RangeRead>) -> Result<Self> {
        let (start, tail) = crate::container::read_tail(io.as_ref(), DEFAULT_TAIL_READ)?;
        if crate::legacy::legacy_version(&tail).is_some() {
            return Self::open_legacy(io, start, tail);
        }
        let meta = FileMetadata::from_tail(io.as_ref(), start, tail)?;
        Self::with_metadata(io, Arc::new(meta))
    }

    fn open_legacy(io: Arc<dyn RangeRead>, start: u64, tail: bytes::Bytes) -> Result<Self> {
        let legacy = crate::legacy::LegacyFile::open(io.as_ref(), start, tail)?;
        let meta = FileMetadata {
            file_size: legacy.file_size,
            footer: crate::container::Footer {
                column_meta_start: 0,
                cmo_table_start: 0,
                gbo_table_start: 0,
                num_global_buffers: 0,
                num_columns: 0,
                major: legacy.major,
                minor: legacy.minor,
            },
            version: FileVersion::Legacy,
            num_rows: legacy.num_rows(),
            schema: legacy.schema.clone(),
            columns: Vec::new(),
            global_buffers: Vec::new(),
            tail_reads: legacy.tail_reads.clone(),
        };
        Ok(Self {
            io,
            schema: Arc::new(meta.schema.to_arrow()),
            field_columns: vec![0..0; meta.schema.fields.len()],
            meta: Arc::new(meta),
            cache: Mutex::new(HashMap::new()),
            legacy: Some(Arc::new(legacy)),
        })
    }

    /// The legacy-file structures, for a legacy (0.1 / 0.2) file.
    pub fn legacy(&self) -> Option<&Arc<crate::legacy::LegacyFile>> {
        self.legacy.as_ref()
    }

    /// Opens with metadata already parsed (e.g. cached by a dataset).
    pub fn with_metadata(io: Arc<dyn RangeRead>, meta: Arc<FileMetadata>) -> Result<Self> {
        if meta.version == FileVersion::Legacy {
            return Err(FormatError::unsupported(
                "legacy file metadata",
                "legacy files need their page table: open them with FileReader::open",
            ));
        }
        crate::v23::check_pages(&meta)?;
        let schema = Arc::new(meta.schema.to_arrow());
        let mut field_columns = Vec::with_capacity(meta.schema.fields.len());
        let mut col = 0;
        for f in &meta.schema.fields {
            let n = column_count(f, meta.version);
            field_columns.push(col..col + n);
            col += n;
        }
        if col > meta.columns.len() {
            return Err(FormatError::corrupt(format!(
                "schema needs {col} columns but the file has {}",
                meta.columns.len()
            )));
        }
        Ok(Self {
            io,
            meta,
            schema,
            field_columns,
            cache: Mutex::new(HashMap::new()),
            legacy: None,
        })
    }

    /// The parsed file metadata.
    pub fn metadata(&self) -> &Arc<FileMetadata> {
        &self.meta
    }

    /// The Arrow schema of the file.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// Rows in the file.
    pub fn num_rows(&self) -> u64 {
        self.meta.num_rows
    }

    /// The byte source.
    pub fn io(&self) -> &Arc<dyn RangeRead> {
        &self.io
    }

    /// Column indexes of top-level field `i`.
    pub fn field_columns(&self, i: usize) -> Option<Range<usize>> {
        self.field_columns.get(i).cloned()
    }

    fn projection_indices(&self, projection: Option<&[&str]>) -> Result<Vec<usize>> {
        match projection {
            None => Ok((0..self.meta.schema.fields.len()).collect()),
            Some(names) => names
                .iter()
                .map(|n| {
                    self.meta
                        .schema
                        .field_index(n)
                        .ok_or_else(|| FormatError::OutOfRange {
                            what: format!(
                                "column {n:?} is not in the file (columns: {})",
                                self.meta
                                    .schema
                                    .fields
                                    .iter()
                                    .map(|f| f.name.as_str())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                        })
                })
                .collect(),
        }
    }

    /// Asks the byte source to fetch ahead the pages of `projection` that a read of
    /// row `ranges` decodes mostly whole (at least a quarter of their rows, or small
    /// pages), with the columns' own buffers, so that a scan of a remote file costs a
    /// few large requests instead of one per column and page. The bytes are held
    /// while the returned guard lives. Nothing is done (`None`) where the source
    /// reads cheaply anyway (local files), for legacy files, or when the pages come
    /// to more than `max_bytes` (memory stays bounded; the decoders then read as
    /// usual). Sparse reads of other pages leave them to the decoders, which read only
    /// the chunks they need — except fixed-width full-zip rows, whose byte ranges follow
    /// from the row numbers and are fetched ahead too (the byte source joins only
    /// ranges whose gaps are small beside what was asked).
    pub fn prefetch(
        &self,
        ranges: &[Range<u64>],
        projection: Option<&[&str]>,
        max_bytes: u64,
    ) -> Result<Option<crate::read::Prefetched>> {
        if !self.io.prefetches() || self.legacy.is_some() || ranges.is_empty() {
            return Ok(None);
        }
        /// Pages up to this size are fetched ahead whenever a requested row is in them:
        /// one request for the whole page costs less than the two dependent ones
        /// (chunk metadata, then chunks) a sparse read makes (~20 ms each on object
        /// stores, where 256 KiB transfer in a few ms).
        const SMALL_PAGE: u64 = 256 * 1024;
        let mut spans = Vec::new();
        for i in self.projection_indices(projection)? {
            // page rows per row of the field, by column (fixed-size lists of structs)
            let mut scales = HashMap::new();
            let field = self.meta.schema.fields.get(i);
            if self.meta.version.is_structural()
                && field.is_some_and(|f| holds_struct_fsl(&f.data_type))
            {
                if let Some(f) = field {
                    let mut leaves = Vec::new();
                    leaves_of(
                        f,
                        self.field_columns[i].start,
                        &mut leaves,
                        BlobRead::Payloads,
                    );
                    scales.extend(leaves.iter().map(|l| (l.column, l.scale)));
                }
            }
            for c in self.field_columns[i].clone() {
                let Some(col) = self.meta.columns.get(c) else {
                    continue;
                };
                let scale = scales.get(&c).copied().unwrap_or(1);
                let scaled: Vec<Range<u64>>;
                let ranges = if scale == 1 {
                    ranges
                } else {
                    scaled = ranges
                        .iter()
                        .map(|r| r.start.saturating_mul(scale)..r.end.saturating_mul(scale))
                        .collect();
                    &scaled
                };
                spans.extend(col.buffers.iter().cloned());
                let mut first = 0u64;
                for page in &col.pages {
                    let end = first.saturating_add(page.num_rows);
                    let wanted: u64 = ranges
                        .iter()
                        .map(|r| r.end.min(end).saturating_sub(r.start.max(first)))
                        .sum();
                    let bytes: u64 = page.buffers.iter().map(|b| b.end - b.start).sum();
                    if wanted > 0 && (bytes <= SMALL_PAGE || wanted * 4 >= page.num_rows) {
                        spans.extend(page.buffers.iter().cloned());
                    } else if wanted > 0 {
                        // a sparse read of fixed-width full-zip rows: their bytes follow
                        // from the row numbers, so they come with this request too
                        spans.extend(sparse_fixed_rows(page, first, end, ranges));
                    }
                    first = end;
                }
            }
        }
        let bytes: u64 = spans.iter().map(|r| r.end.saturating_sub(r.start)).sum();
        if spans.is_empty() || bytes > max_bytes {
            return Ok(None);
        }
        self.io.prefetch(&spans)
    }

    /// Reads every row.
    pub fn read_all(&self, projection: Option<&[&str]>) -> Result<RecordBatch> {
        let all = 0..self.meta.num_rows;
        self.read_ranges(std::slice::from_ref(&all), projection)
    }

    /// Reads rows `range`.
    pub fn read_range(
        &self,
        range: Range<u64>,
        projection: Option<&[&str]>,
    ) -> Result<RecordBatch> {
        self.read_ranges(&[range], projection)
    }

    /// Reads rows at `indices` (any order, duplicates allowed), in that order.
    pub fn take(&self, indices: &[u64], projection: Option<&[&str]>) -> Result<RecordBatch> {
        if let Some(&bad) = indices.iter().find(|&&i| i >= self.meta.num_rows) {
            return Err(FormatError::OutOfRange {
                what: format!("row {bad} of a {}-row file", self.meta.num_rows),
            });
        }
        let sorted = indices.windows(2).all(|w| w[0] < w[1]);
        let mut uniq: Vec<u64> = indices.to_vec();
        if !sorted {
            uniq.sort_unstable();
            uniq.dedup();
        }
        let mut ranges: Vec<Range<u64>> = Vec::new();
        for &i in &uniq {
            match ranges.last_mut() {
                Some(r) if r.end == i => r.end = i + 1,
                _ => ranges.push(i..i + 1),
            }
        }
        let batch = self.read_ranges(&ranges, projection)?;
        if sorted {
            return Ok(batch);
        }
        let pos: UInt64Array = indices
            .iter()
            .map(|i| uniq.binary_search(i).map(|p| p as u64).unwrap_or(0))
            .collect();
        let cols = batch
            .columns()
            .iter()
            .map(|c| arrow_select::take::take(c.as_ref(), &pos, None))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        Ok(RecordBatch::try_new_with_options(
            batch.schema(),
            cols,
            &RecordBatchOptions::new().with_row_count(Some(indices.len())),
        )?)
    }

    /// Reads sorted, non-overlapping row ranges and concatenates them.
    pub fn read_ranges(
        &self,
        ranges: &[Range<u64>],
        projection: Option<&[&str]>,
    ) -> Result<RecordBatch> {
        self.read_ranges_as(ranges, projection, BlobRead::Payloads)
    }

    /// [`Self::read_ranges`], legacy blob columns read as `blobs` says (payloads or
    /// descriptions; the batch's schema says which).
    pub fn read_ranges_as(
        &self,
        ranges: &[Range<u64>],
        projection: Option<&[&str]>,
        blobs: BlobRead,
    ) -> Result<RecordBatch> {
        let (mut prev, mut total) = (0u64, 0u64);
        for r in ranges {
            if r.start < prev || r.start > r.end || r.end > self.meta.num_rows {
                return Err(FormatError::OutOfRange {
                    what: format!(
                        "row ranges must be sorted, non-overlapping and within the {} rows: {r:?}",
                        self.meta.num_rows
                    ),
                });
            }
            prev = r.end;
            total += r.end - r.start;
        }
        let idx = self.projection_indices(projection)?;
        let mut fields: Vec<FieldRef> = Vec::with_capacity(idx.len());
        let mut arrays = Vec::with_capacity(idx.len());
        let decoded = if total == 0 {
            // Nothing to decode (an empty file, or empty ranges).
            idx.iter()
                .map(|&i| arrow_array::new_empty_array(self.read_type(i, blobs).data_type()))
                .collect()
        } else {
            self.read_fields(&idx, ranges, total, blobs)?
        };
        for (i, arr) in idx.into_iter().zip(decoded) {
            if arr.len() as u64 != total {
                return Err(FormatError::corrupt(format!(
                    "column {:?} decoded {} rows, {total} expected",
                    self.meta.schema.fields[i].name,
                    arr.len()
                )));
            }
            fields.push(Arc::new(self.read_type(i, blobs)));
            arrays.push(arr);
        }
        let schema = Arc::new(Schema::new(fields).with_metadata(self.schema.metadata().clone()));
        Ok(RecordBatch::try_new_with_options(
            schema,
            arrays,
            &RecordBatchOptions::new().with_row_count(Some(total as usize)),
        )?)
    }

    /// Decodes fields, in parallel threads when there is enough work to share; from a
    /// source where requests cost more than their bytes (object stores), every field on
    /// its own thread whatever the rows, so that the fields' requests wait together
    /// (a take's round trips are then those of its slowest field, not their sum).
    fn read_fields(
        &self,
        idx: &[usize],
        ranges: &[Range<u64>],
        rows: u64,
        blobs: BlobRead,
    ) -> Result<Vec<ArrayRef>> {
        const PARALLEL_MIN_ROWS: u64 = 16 * 1024;
        /// Fields read together from a remote source.
        const REMOTE_FIELDS: usize = 16;
        let remote = self.io.prefetches() && self.legacy.is_none();
        let threads = if remote {
            idx.len().min(REMOTE_FIELDS)
        } else {
            lancer_util::cores().min(idx.len())
        };
        if threads <= 1 || (!remote && rows < PARALLEL_MIN_ROWS) {
            return idx
                .iter()
                .map(|&i| self.read_field(i, ranges, rows, blobs))
                .collect();
        }
        let mut slots: Vec<Option<Result<ArrayRef>>> = (0..idx.len()).map(|_| None).collect();
        let next = std::sync::atomic::AtomicUsize::new(0);
        let results = Mutex::new(&mut slots);
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| loop {
                    let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(&i) = idx.get(k) else { break };
                    let r = self.read_field(i, ranges, rows, blobs);
                    if let Ok(mut g) = results.lock() {
                        g[k] = Some(r);
                    }
                });
            }
        });
        slots
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(FormatError::corrupt("a decode thread failed"))))
            .collect()
    }

    /// The Arrow field top-level field `i` is read as.
    fn read_type(&self, i: usize, blobs: BlobRead) -> Field {
        crate::blob_read::read_field_type(&self.meta.schema.fields[i], self.schema.field(i), blobs)
    }

    /// Field `i` at rows `ranges` (`rows` of them in all).
    fn read_field(
        &self,
        i: usize,
        ranges: &[Range<u64>],
        rows: u64,
        blobs: BlobRead,
    ) -> Result<ArrayRef> {
        let f = &self.meta.schema.fields[i];
        if let Some(l) = &self.legacy {
            return l.read_field(self.io.as_ref(), i, ranges);
        }
        let cols = self.field_columns[i].clone();
        if !self.meta.version.is_structural() {
            return v20::read_field(self, f, cols.start, ranges, blobs);
        }
        if self.meta.version == FileVersion::V2_3 {
            crate::v23::check_field(f)?;
        }
        let mut leaves = Vec::new();
        leaves_of(f, cols.start, &mut leaves, blobs);
        let mut decoded = std::collections::VecDeque::with_capacity(leaves.len());
        for leaf in &leaves {
            let u = if leaf.scale == 1 {
                self.read_leaf(leaf, ranges, rows)?
            } else {
                let s = leaf.scale;
                let scaled: Vec<Range<u64>> = ranges
                    .iter()
                    .map(|r| r.start.saturating_mul(s)..r.end.saturating_mul(s))
                    .collect();
                self.read_leaf(leaf, &scaled, rows.saturating_mul(s))?
            };
            decoded.push_back(u);
        }
        let arrow_field = self.read_type(i, blobs);
        assemble(&arrow_field, f, &mut decoded, 0, rows as usize)
    }

    /// Cached page state for `(column, page)`.
    fn page_state(
        &self,
        column: usize,
        page: usize,
        value_type: &DataType,
    ) -> Result<Arc<PageState>> {
        let slot = self
            .cache
            .lock()
            .ok()
            .map(|mut c| c.entry((column, page)).or_default().clone());
        let mut held = slot.as_ref().and_then(|s| s.lock().ok());
        if let Some(s) = held.as_ref().and_then(|g| g.as_ref()) {
            return Ok(s.clone());
        }
        let info = &self.meta.columns[column].pages[page];
        let state = Arc::new(match &info.encoding {
            PageEncoding::V21(layout) => {
                self.make_state(info, layout.layout.as_ref(), value_type)?
            }
            PageEncoding::V23(planar) => self.make_planar_state(info, planar, value_type)?,
            PageEncoding::V20(_) => {
                return Err(FormatError::corrupt("2.0 page encoding in a 2.1+ file"))
            }
        });
        if let Some(g) = held.as_mut() {
            **g = Some(state.clone());
        }
        Ok(state)
    }

    fn make_state(
        &self,
        info: &crate::container::PageInfo,
        layout: Option<&Layout>,
        value_type: &DataType,
    ) -> Result<PageState> {
        Ok(match layout {
            Some(Layout::MiniBlockLayout(m)) => {
                PageState::Mini(MiniBlockPage::load(info, m, self.io.as_ref(), value_type)?)
            }
            Some(Layout::FullZipLayout(z)) => PageState::Full(FullZipPage::new(info, z)?),
            Some(Layout::ConstantLayout(c)) => {
                PageState::Constant(ConstantPage::load(info, c, self.io.as_ref())?)
            }
            Some(Layout::BlobLayout(b)) => {
                let inner = self.make_state(
                    info,
                    b.inner_layout.as_ref().and_then(|l| l.layout.as_ref()),
                    &blob_description_type(),
                )?;
                PageState::Blob(Box::new(inner), Layer::list_from_pb(&b.layers)?)
            }
            None => {
                return Err(FormatError::unsupported(
                    "PageLayout",
                    "page layout missing or of a kind unknown to this Lancer (a newer format?)",
                ))
            }
        })
    }

    /// Prepares a 2.3 page: dense pages as their 2.1 equivalent, sparse pages as a plan
    /// over their structural buffers plus a 2.1 page over the leaf value slots.
    fn make_planar_state(
        &self,
        info: &crate::container::PageInfo,
        planar: &crate::pb::enc23::PlanarLayout,
        value_type: &DataType,
    ) -> Result<PageState> {
        use crate::v23::{classify, sparse, Planar, SparseValues};
        match classify(planar)? {
            Planar::Dense(layout) => self.make_state(info, layout.layout.as_ref(), value_type),
            Planar::Sparse { structure, values } => {
                let first = match &values {
                    SparseValues::Layout { buffers, .. } => *buffers,
                    SparseValues::Indexed { buffers, .. } => *buffers,
                    SparseValues::AllNull => 0,
                };
                let n = sparse::structural_buffers(&structure);
                let wanted = info.buffers.get(first..first + n).ok_or_else(|| {
                    FormatError::corrupt(format!(
                        "sparse page has {} buffers, its values and structure need {}",
                        info.buffers.len(),
                        first + n
                    ))
                })?;
                let got: Vec<arrow_buffer::Buffer> = if wanted.is_empty() {
                    Vec::new()
                } else {
                    self.io
                        .read_ranges(wanted)?
                        .into_iter()
                        .map(arrow_buffer::Buffer::from)
                        .collect()
                };
                let plan = SparsePlan::load(&structure, &got, info.num_rows)?;
                let (inner, stored) = match values {
                    SparseValues::Layout {
                        mut layout,
                        buffers,
                        stored,
                    } => {
                        // Chunk value counts run to the page's leaf slots.
                        if let Some(Layout::MiniBlockLayout(m)) = layout.layout.as_mut() {
                            m.num_items = plan.leaf_slots();
                        }
                        let stored = stored.filter(|&s| s != plan.leaf_slots());
                        let leaf_info = crate::container::PageInfo {
                            buffers: info.buffers.get(..buffers).unwrap_or_default().to_vec(),
                            num_rows: stored.unwrap_or(plan.leaf_slots()),
                            priority: info.priority,
                            encoding: PageEncoding::V21(layout.as_ref().clone()),
                        };
                        let state =
                            self.make_state(&leaf_info, layout.layout.as_ref(), value_type)?;
                        (Some(Box::new(state)), stored)
                    }
                    SparseValues::AllNull => (None, None),
                    SparseValues::Indexed {
                        indices,
                        items,
                        item_count,
                        buffers,
                    } => {
                        let range = info.buffers.first().cloned().ok_or_else(|| {
                            FormatError::corrupt("indexed values without an index buffer")
                        })?;
                        // One index per leaf slot, null slots included.
                        let count = plan.leaf_slots();
                        if count
                            > (range.end - range.start)
                                .saturating_mul(8)
                                .saturating_add(1024)
                        {
                            return Err(FormatError::corrupt(format!(
                                "{count} item indices claimed from a {}-byte buffer",
                                range.end - range.start
                            )));
                        }
                        let c = crate::compression::compression_of(Some(&indices), "indices")?;
                        let bytes = arrow_buffer::Buffer::from(
                            self.io.read_ranges(std::slice::from_ref(&range))?.concat(),
                        );
                        let idx = crate::v23::seq::decode_u64s(c, Some(&bytes), count)?;
                        if let Some(bad) = idx.iter().find(|&&i| i >= item_count) {
                            return Err(FormatError::corrupt(format!(
                                "item index {bad} of {item_count} items"
                            )));
                        }
                        let items_info = crate::container::PageInfo {
                            buffers: info.buffers.get(1..buffers).unwrap_or_default().to_vec(),
                            num_rows: item_count,
                            priority: info.priority,
                            encoding: PageEncoding::V21(items.as_ref().clone()),
                        };
                        let state =
                            self.make_state(&items_info, items.layout.as_ref(), value_type)?;
                        (
                            Some(Box::new(PageState::Indexed(idx, Box::new(state)))),
                            None,
                        )
                    }
                };
                Ok(PageState::Sparse(Box::new(plan), inner, stored))
            }
        }
    }

    fn read_page(
        &self,
        state: &PageState,
        ranges: &[Range<u64>],
        value_type: &DataType,
    ) -> Result<(LeafRun, Vec<Layer>)> {
        let io = self.io.as_ref();
        Ok(match state {
            PageState::Mini(m) => (m.read(io, ranges, value_type)?, m.layers().to_vec()),
            PageState::Full(z) => (z.read(io, ranges, value_type)?, z.layers().to_vec()),
            PageState::Constant(c) => (c.read(ranges, value_type)?, c.layers().to_vec()),
            PageState::Blob(inner, layers) => {
                let (run, _) = self.read_page(inner, ranges, &blob_description_type())?;
                let run = match value_type {
                    // a read of descriptions (the leaf's type says so)
                    DataType::Struct(_) => crate::blob_read::describe(run)?,
                    _ => crate::blob_read::fetch(run, io, self.meta.file_size, value_type)?,
                };
                (run, layers.clone())
            }
            PageState::Indexed(idx, items) => {
                let mut want: Vec<u64> = Vec::new();
                for r in ranges {
                    let part = usize::try_from(r.start)
                        .ok()
                        .zip(usize::try_from(r.end).ok())
                        .and_then(|(a, b)| idx.get(a..b))
                        .ok_or_else(|| FormatError::OutOfRange {
                            what: format!("values {r:?} of {} indexed values", idx.len()),
                        })?;
                    want.extend_from_slice(part);
                }
                let mut uniq = want.clone();
                uniq.sort_unstable();
                uniq.dedup();
                let mut item_ranges: Vec<Range<u64>> = Vec::new();
                for &i in &uniq {
                    match item_ranges.last_mut() {
                        Some(r) if r.end == i => r.end = i + 1,
                        _ => item_ranges.push(i..i + 1),
                    }
                }
                let got = self.read_page(items, &item_ranges, value_type)?.0.values;
                let pos: UInt64Array = want
                    .iter()
                    .map(|i| uniq.binary_search(i).map(|p| p as u64).unwrap_or(0))
                    .collect();
                let values = arrow_select::take::take(got.as_ref(), &pos, None)?;
                let n = values.len() as u64;
                (
                    LeafRun {
                        rep: None,
                        def: None,
                        num_rows: n,
                        values,
                    },
                    vec![Layer::AllValidItem],
                )
            }
            PageState::Sparse(plan, values, stored) => {
                let walk = plan.walk(ranges)?;
                let visible: u64 = walk.leaf_ranges.iter().map(|r| r.end - r.start).sum();
                let values = match (values, stored) {
                    _ if visible == 0 => arrow_array::new_empty_array(value_type),
                    (Some(inner), Some(stored)) => {
                        // Only non-null slots are stored: read those, then spread them.
                        let (value_ranges, index) = plan.compact(&walk.leaf_ranges, *stored)?;
                        let got = if value_ranges.is_empty() {
                            arrow_array::new_empty_array(value_type)
                        } else {
                            self.read_page(inner, &value_ranges, value_type)?.0.values
                        };
                        let idx = UInt64Array::from(index);
                        arrow_select::take::take(got.as_ref(), &idx, None)?
                    }
                    (Some(inner), None) => {
                        self.read_page(inner, &walk.leaf_ranges, value_type)?
                            .0
                            .values
                    }
                    (None, _) => arrow_array::new_null_array(value_type, visible as usize),
                };
                // The null type carries no validity of its own.
                let def = if *value_type == DataType::Null && walk.rep.is_none() {
                    None
                } else {
                    walk.def
                };
                if values.len() as u64 != visible {
                    return Err(FormatError::corrupt(format!(
                        "sparse page values decoded {} slots, {visible} expected",
                        values.len()
                    )));
                }
                let rows: u64 = ranges.iter().map(|r| r.end - r.start).sum();
                let run = LeafRun {
                    rep: walk.rep,
                    def,
                    num_rows: rows,
                    values,
                };
                (run, plan.layers().to_vec())
            }
        })
    }

    /// Replaces blob descriptions (position, size) by the blob bytes, turning the
    /// smuggled definition levels back into levels.
    /// Reads a leaf whose touched pages are all bare fixed-width full-zip values (vector
    /// columns, typically) by gathering every byte range of every page into one buffer:
    /// one copy in total, where decoding page by page and concatenating would copy twice.
    /// `None` when the pages are not all of that kind or a single range would be
    /// zero-copy anyway.
    fn read_leaf_gathered(
        &self,
        leaf: &Leaf,
        pages: &[crate::container::PageInfo],
        locals: &[(usize, Cow<'_, [Range<u64>]>)],
        rows: u64,
    ) -> Result<Option<Unraveled>> {
        let mut states: Vec<Arc<PageState>> = Vec::new();
        let mut byte_ranges = Vec::new();
        for (p, local) in locals {
            let page = &pages[*p];
            if !matches!(page.encoding, PageEncoding::V21(_)) {
                return Ok(None);
            }
            let state = self.page_state(leaf.column, *p, &leaf.value_type)?;
            let PageState::Full(z) = state.as_ref() else {
                return Ok(None);
            };
            if z.gatherable().is_none() || local.iter().any(|r| r.end > page.num_rows) {
                return Ok(None);
            }
            if let Some(PageState::Full(first)) = states.first().map(|s| s.as_ref()) {
                if !first.same_values_as(z) {
                    return Ok(None);
                }
            }
            byte_ranges.extend(z.byte_ranges(self.io.as_ref(), local)?);
            states.push(state);
        }
        let Some(PageState::Full(first)) = states.first().map(|s| s.as_ref()) else {
            return Ok(None);
        };
        if byte_ranges.len() < 2 {
            return Ok(None);
        }
        let total: u64 = byte_ranges
            .iter()
            .map(|r| r.end.saturating_sub(r.start))
            .sum();
        let total = usize::try_from(total)
            .map_err(|_| FormatError::corrupt("gathered full-zip values overflow memory"))?;
        let mut buf = Vec::with_capacity(total);
        // A short read is refused by `decode_gathered`'s length check.
        self.io.read_ranges_into(&byte_ranges, &mut buf)?;
        let run =
            first.decode_gathered(arrow_buffer::Buffer::from_vec(buf), rows, &leaf.value_type)?;
        Ok(Some(unravel(run, first.layers())?))
    }

    fn read_leaf(&self, leaf: &Leaf, ranges: &[Range<u64>], rows: u64) -> Result<Unraveled> {
        let col = self
            .meta
            .columns
            .get(leaf.column)
            .ok_or_else(|| FormatError::corrupt(format!("column {} missing", leaf.column)))?;
        // each page's share of the rows, once (borrowed when one page holds them all)
        let mut locals = Vec::new();
        let mut page_start = 0u64;
        for (p, page) in col.pages.iter().enumerate() {
            let page_end = page_start.saturating_add(page.num_rows);
            let local = page_local(ranges, page_start, page_end);
            if !local.is_empty() {
                locals.push((p, local));
            }
            page_start = page_end;
        }
        if let Some(u) = self.read_leaf_gathered(leaf, &col.pages, &locals, rows)? {
            return Ok(u);
        }
        let mut parts: Vec<Unraveled> = Vec::new();
        for (p, local) in &locals {
            let state = self.page_state(leaf.column, *p, &leaf.value_type)?;
            let (run, layers) = self.read_page(&state, local, &leaf.value_type)?;
            parts.push(unravel(run, &layers)?);
        }
        if parts.is_empty() {
            if rows == 0 {
                // Nothing asked: an empty leaf with no structure is fine for assembly.
                return Ok(Unraveled {
                    leaf: arrow_array::new_empty_array(&leaf.value_type),
                    outer: Vec::new(),
                });
            }
            return Err(FormatError::corrupt(format!(
                "column {} has no pages covering the rows asked for",
                leaf.column
            )));
        }
        concat_unraveled(parts)
    }
}

/// The parts of `ranges` (sorted, non-overlapping) inside the page holding rows
/// `page_start..page_end`, relative to the page.
/// (`ranges` itself when the page starts at row 0 and holds them all: a fragment of one
/// page, read through an index's scattered rows, is not copied range by range.)
fn page_local(ranges: &[Range<u64>], page_start: u64, page_end: u64) -> Cow<'_, [Range<u64>]> {
    let inside = |r: &Range<u64>| r.start < page_end && r.end > page_start;
    if page_start == 0 && ranges.last().is_none_or(|r| r.end <= page_end) {
        // (sorted and non-overlapping, as `read_ranges` checked: after the first range
        // inside, every range ends past row 0 and by the page's end)
        let first = ranges.iter().position(inside).unwrap_or(ranges.len());
        return Cow::Borrowed(&ranges[first..]);
    }
    Cow::Owned(
        ranges
            .iter()
            .filter(|r| inside(r))
            .map(|r| r.start.max(page_start) - page_start..r.end.min(page_end) - page_start)
            .collect(),
    )
}

fn blob_description_type() -> DataType {
    DataType::Struct(
        vec![
            Field::new("position", DataType::UInt64, false),
            Field::new("size", DataType::UInt64, false),
        ]
        .into(),
    )
}

/// The bytes of the rows of `ranges` inside a page spanning rows `first..end`, when the
/// page is full-zip with fixed-width rows and no repetition index (empty otherwise).
fn sparse_fixed_rows(
    page: &crate::container::PageInfo,
    first: u64,
    end: u64,
    ranges: &[Range<u64>],
) -> Vec<Range<u64>> {
    let PageEncoding::V21(layout) = &page.encoding else {
        return Vec::new();
    };
    let Some(Layout::FullZipLayout(z)) = layout.layout.as_ref() else {
        return Vec::new();
    };
    let Ok(fz) = FullZipPage::new(page, z) else {
        return Vec::new();
    };
    let rows: Vec<Range<u64>> = ranges
        .iter()
        .filter(|r| r.end > first && r.start < end)
        .map(|r| r.start.max(first) - first..r.end.min(end) - first)
        .collect();
    fz.fixed_byte_ranges(&rows).unwrap_or_default()
}
