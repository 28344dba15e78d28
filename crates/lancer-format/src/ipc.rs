//! Arrow IPC input (file and stream formats) that cannot crash or over-allocate.
//!
//! arrow-ipc trusts the lengths it reads: a footer, block, metadata or body length, a
//! field node length or the 8-byte uncompressed-length prefix of a compressed buffer
//! is allocated or sliced as declared, so a damaged file panics (slicing, schema
//! conversion) or aborts the process (an allocation of petabytes cannot be caught).
//! This module parses the framing itself and checks every such number through
//! arrow-ipc's verifying flatbuffer accessors *before* arrow-ipc sees the message:
//! blocks and messages lie inside the input, buffers inside their message body, node
//! counts and lengths are sane, compressed buffers declare at most
//! [`MAX_EXPANSION`]x the body plus [`EXPANSION_SLACK`] in total, and the schema holds
//! only types arrow-ipc converts without panicking. Only then is the message handed
//! to arrow-ipc's decoder, inside `catch_unwind` as a last line of defence. Memory
//! is bounded by one message (its bytes plus its bounded decompressed buffers).
//!
//! Used by the deletion-file reader (lancer-table) and `lancer import`.

use std::collections::{HashMap, VecDeque};
use std::io::{Read, Seek, SeekFrom};
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_buffer::Buffer;
use arrow_ipc::{MessageHeader, MetadataVersion};
use arrow_schema::{DataType, Schema, SchemaRef};

use crate::{FormatError, Result};

/// A compressed message may declare at most this many times its body in decompressed
/// buffers (plus [`EXPANSION_SLACK`]); more is taken for a damaged length prefix.
pub const MAX_EXPANSION: u64 = 1024;
/// Decompressed bytes allowed per message regardless of its size.
pub const EXPANSION_SLACK: u64 = 16 << 20;
/// Rows a field node may declare per byte of its message's (decompressed) data, plus
/// [`ROW_SLACK`]: only columns of type Null hold rows without bytes.
const ROWS_PER_BYTE: u64 = 64;
/// Rows a field node may declare regardless of its message's size.
const ROW_SLACK: u64 = 1 << 20;
/// Nesting depth of a schema this reader accepts.
const MAX_DEPTH: usize = 64;

const MAGIC: &[u8; 6] = b"ARROW1";
const CONTINUATION: [u8; 4] = [0xFF; 4];

fn bad(what: impl Into<String>) -> FormatError {
    FormatError::CorruptIpc { what: what.into() }
}

/// Runs a call into arrow-ipc, turning a panic into an error about `what`.
fn guard<T>(
    what: &str,
    f: impl FnOnce() -> std::result::Result<T, arrow_schema::ArrowError>,
) -> Result<T> {
    match lancer_util::contain::contain(f) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(bad(format!("{what}: {e}"))),
        Err(msg) => Err(bad(format!(
            "{what}: arrow-ipc failed on malformed input: {msg}"
        ))),
    }
}

fn nonneg(v: i64, what: &str) -> Result<u64> {
    u64::try_from(v).map_err(|_| bad(format!("negative {what} ({v})")))
}

/// Checks that arrow-ipc's schema conversion will not panic on `fields`, then converts.
fn schema_from_fb(fb: arrow_ipc::Schema<'_>) -> Result<SchemaRef> {
    if fb.endianness() != arrow_ipc::Endianness::Little {
        return Err(bad(
            "big-endian Arrow data is not supported: re-write it little-endian (the default of every Arrow writer)",
        ));
    }
    let fields = fb
        .fields()
        .ok_or_else(|| bad("the schema has no field list"))?;
    for f in fields.iter() {
        check_field(f, 0)?;
    }
    let schema = guard("schema", || Ok(arrow_ipc::convert::fb_to_schema(fb)))?;
    Ok(Arc::new(schema))
}

fn check_int(bits: i32, what: &str) -> Result<()> {
    if matches!(bits, 8 | 16 | 32 | 64) {
        Ok(())
    } else {
        Err(bad(format!("{what} of bit width {bits}")))
    }
}

/// Mirrors the conditions under which `arrow_ipc::convert` panics, as errors.
fn check_field(f: arrow_ipc::Field<'_>, depth: usize) -> Result<()> {
    use arrow_ipc::Type as T;
    if depth > MAX_DEPTH {
        return Err(bad(format!("schema nested deeper than {MAX_DEPTH} levels")));
    }
    let name = f.name().unwrap_or_default();
    let missing = || bad(format!("field {name:?}: its type table is missing"));
    if let Some(d) = f.dictionary() {
        let it = d
            .indexType()
            .ok_or_else(|| bad(format!("dictionary field {name:?} has no index type")))?;
        check_int(it.bitWidth(), "dictionary index")?;
    }
    let children = |n: usize| -> Result<()> {
        let c = f
            .children()
            .ok_or_else(|| bad(format!("field {name:?} of a nested type has no children")))?;
        if c.len() != n {
            return Err(bad(format!(
                "field {name:?} has {} children, its type needs {n}",
                c.len()
            )));
        }
        Ok(())
    };
    match f.type_type() {
        T::Null | T::Bool | T::Binary | T::BinaryView | T::LargeBinary | T::Utf8 | T::Utf8View
        | T::LargeUtf8 => {}
        T::Int => check_int(f.type_as_int().ok_or_else(missing)?.bitWidth(), "integer")?,
        T::FixedSizeBinary => {
            let w = f.type_as_fixed_size_binary().ok_or_else(missing)?.byteWidth();
            if w < 0 {
                return Err(bad(format!("fixed-size binary of width {w}")));
            }
        }
        T::FloatingPoint => {
            let p = f.type_as_floating_point().ok_or_else(missing)?.precision();
            if !(0..=2).contains(&p.0) {
                return Err(bad(format!("floating point of precision {}", p.0)));
            }
        }
        T::Date => {
            if !(0..=1).contains(&f.type_as_date().ok_or_else(missing)?.unit().0) {
                return Err(bad(format!("field {name:?}: unknown date unit")));
            }
        }
        T::Time => {
            let t = f.type_as_time().ok_or_else(missing)?;
            let ok = matches!((t.bitWidth(), t.unit().0), (32, 0 | 1) | (64, 2 | 3));
            if !ok {
                return Err(bad(format!("field {name:?}: unknown time type")));
            }
        }
        T::Timestamp => {
            if !(0..=3).contains(&f.type_as_timestamp().ok_or_else(missing)?.unit().0) {
                return Err(bad(format!("field {name:?}: unknown timestamp unit")));
            }
        }
        T::Duration => {
            if !(0..=3).contains(&f.type_as_duration().ok_or_else(missing)?.unit().0) {
                return Err(bad(format!("field {name:?}: unknown duration unit")));
            }
        }
        T::Interval => {
            if !(0..=2).contains(&f.type_as_interval().ok_or_else(missing)?.unit().0) {
                return Err(bad(format!("field {name:?}: unknown interval unit")));
            }
        }
        T::List | T::LargeList | T::ListView | T::LargeListView => children(1)?,
        T::FixedSizeList => {
            children(1)?;
            let n = f.type_as_fixed_size_list().ok_or_else(missing)?.listSize();
            if n < 0 {
                return Err(bad(format!("fixed-size list of size {n}")));
            }
        }
        T::Map => {
            f.type_as_map().ok_or_else(missing)?;
            children(1)?;
        }
        T::Struct_ => {}
        T::RunEndEncoded => children(2)?,
        T::Decimal => {
            let d = f.type_as_decimal().ok_or_else(missing)?;
            let max = match d.bitWidth() {
                32 => 9,
                64 => 18,
                128 => 38,
                256 => 76,
                w => return Err(bad(format!("decimal of bit width {w}"))),
            };
            let (p, s) = (d.precision(), d.scale());
            if !(1..=max).contains(&p) || s.abs() > p {
                return Err(bad(format!("decimal of precision {p} and scale {s}")));
            }
        }
        T::Union => {
            return Err(bad(format!(
                "field {name:?} is an Arrow union, which Lance cannot store: convert it to a struct first"
            )))
        }
        t => return Err(bad(format!("field {name:?} has unknown type id {}", t.0))),
    }
    if let Some(c) = f.children() {
        for child in c.iter() {
            check_field(child, depth + 1)?;
        }
    }
    Ok(())
}

/// How one record batch's flatbuffer header maps onto the schema: walked in the
/// order arrow-ipc's decoder consumes nodes and buffers.
struct Walk {
    nodes: Vec<(u64, u64)>,
    /// Per buffer: (offset, length in the body, decompressed length).
    buffers: Vec<(u64, u64, u64)>,
    variadic: VecDeque<i64>,
    next_node: usize,
    next_buffer: usize,
}

impl Walk {
    fn node(&mut self) -> Result<(u64, u64)> {
        let n = self
            .nodes
            .get(self.next_node)
            .copied()
            .ok_or_else(|| bad("fewer field nodes than the schema has columns"))?;
        self.next_node += 1;
        Ok(n)
    }

    fn buffer(&mut self) -> Result<u64> {
        let b = self
            .buffers
            .get(self.next_buffer)
            .copied()
            .ok_or_else(|| bad("fewer buffers than the schema needs"))?;
        self.next_buffer += 1;
        Ok(b.2)
    }

    /// The validity buffer of a node of `len` rows with `nulls` nulls: arrow builds
    /// its bitmap (and asserts its size) before validating anything.
    fn validity(&mut self, (len, nulls): (u64, u64)) -> Result<()> {
        let size = self.buffer()?;
        if nulls > 0 && size < len.div_ceil(8) {
            return Err(bad(format!(
                "validity buffer of {size} bytes for {len} rows"
            )));
        }
        Ok(())
    }

    fn buffers(&mut self, n: usize) -> Result<()> {
        for _ in 0..n {
            self.buffer()?;
        }
        Ok(())
    }

    fn walk(&mut self, dt: &DataType, depth: usize) -> Result<()> {
        use DataType as D;
        if depth > MAX_DEPTH {
            return Err(bad(format!("data nested deeper than {MAX_DEPTH} levels")));
        }
        match dt {
            D::Utf8 | D::Binary | D::LargeUtf8 | D::LargeBinary => {
                let n = self.node()?;
                self.validity(n)?;
                self.buffers(2)?;
            }
            D::Utf8View | D::BinaryView => {
                let count = self
                    .variadic
                    .pop_front()
                    .ok_or_else(|| bad("a view column has no variadic buffer count"))?;
                let count = usize::try_from(count)
                    .ok()
                    .filter(|&c| c <= self.buffers.len())
                    .ok_or_else(|| bad(format!("variadic buffer count {count}")))?;
                // arrow-ipc takes the buffers before the node.
                let first = self.next_buffer;
                self.buffers(count + 2)?;
                let (len, nulls) = self.node()?;
                let size = self.buffers.get(first).map_or(0, |b| b.2);
                if nulls > 0 && size < len.div_ceil(8) {
                    return Err(bad(format!(
                        "validity buffer of {size} bytes for {len} rows"
                    )));
                }
            }
            D::List(c) | D::LargeList(c) | D::Map(c, _) => {
                let n = self.node()?;
                self.validity(n)?;
                self.buffers(1)?;
                self.walk(c.data_type(), depth + 1)?;
            }
            D::ListView(c) | D::LargeListView(c) => {
                let n = self.node()?;
                self.validity(n)?;
                self.buffers(2)?;
                self.walk(c.data_type(), depth + 1)?;
            }
            D::FixedSizeList(c, _) => {
                let n = self.node()?;
                self.validity(n)?;
                self.walk(c.data_type(), depth + 1)?;
            }
            D::Struct(fields) => {
                let n = self.node()?;
                self.validity(n)?;
                for f in fields.iter() {
                    self.walk(f.data_type(), depth + 1)?;
                }
            }
            D::RunEndEncoded(r, v) => {
                self.node()?;
                self.walk(r.data_type(), depth + 1)?;
                self.walk(v.data_type(), depth + 1)?;
            }
            D::Union(..) => return Err(bad("Arrow union columns are not supported")),
            D::Null => {
                self.node()?;
            }
            _ => {
                let n = self.node()?;
                self.validity(n)?;
                self.buffers(1)?;
            }
        }
        Ok(())
    }
}

/// Checks a record batch header against its body and schema before arrow-ipc decodes
/// it. `body` is the message body as given.
fn check_batch(rb: arrow_ipc::RecordBatch<'_>, body: &[u8], schema: &Schema) -> Result<()> {
    let body_len = body.len() as u64;
    let mut decompressed: u64 = 0;
    let compressed = match rb.compression() {
        None => false,
        Some(c) => {
            if c.method() != arrow_ipc::BodyCompressionMethod::BUFFER {
                return Err(bad(format!(
                    "unknown body compression method {}",
                    c.method().0
                )));
            }
            match c.codec() {
                arrow_ipc::CompressionType::ZSTD => {}
                arrow_ipc::CompressionType::LZ4_FRAME => {
                    return Err(bad(
                        "LZ4-compressed Arrow IPC is not supported: re-write it uncompressed or with zstd",
                    ))
                }
                o => return Err(bad(format!("unknown compression codec {}", o.0))),
            }
            true
        }
    };
    let cap = body_len
        .saturating_mul(MAX_EXPANSION)
        .saturating_add(EXPANSION_SLACK);
    let mut buffers = Vec::new();
    for b in rb
        .buffers()
        .ok_or_else(|| bad("record batch without a buffer list"))?
        .iter()
    {
        let off = nonneg(b.offset(), "buffer offset")?;
        let len = nonneg(b.length(), "buffer length")?;
        let end = off
            .checked_add(len)
            .filter(|&e| e <= body_len)
            .ok_or_else(|| {
                bad(format!(
                    "buffer at {off}+{len} lies outside its {body_len}-byte message body"
                ))
            })?;
        let size = if compressed && len > 0 {
            if len < 8 {
                return Err(bad(format!(
                    "compressed buffer of {len} bytes has no 8-byte length prefix"
                )));
            }
            let mut le = [0u8; 8];
            le.copy_from_slice(&body[off as usize..off as usize + 8]);
            match i64::from_le_bytes(le) {
                -1 => len - 8,
                n => {
                    let n = nonneg(n, "decompressed buffer length")?;
                    decompressed = decompressed.saturating_add(n);
                    if decompressed > cap {
                        return Err(bad(format!(
                            "compressed buffers declare {decompressed} decompressed bytes for a {body_len}-byte body (at most {cap} accepted)"
                        )));
                    }
                    n
                }
            }
        } else {
            end - off
        };
        buffers.push((off, len, size));
    }
    let row_cap = body_len
        .saturating_add(decompressed)
        .saturating_mul(ROWS_PER_BYTE)
        .saturating_add(ROW_SLACK);
    let rows = nonneg(rb.length(), "record batch length")?;
    if rows > row_cap {
        return Err(bad(format!(
            "record batch declares {rows} rows in a {body_len}-byte body"
        )));
    }
    let mut nodes = Vec::new();
    for n in rb
        .nodes()
        .ok_or_else(|| bad("record batch without field nodes"))?
        .iter()
    {
        let len = nonneg(n.length(), "field node length")?;
        let nulls = nonneg(n.null_count(), "field node null count")?;
        if len > row_cap || nulls > len {
            return Err(bad(format!(
                "field node of {len} rows and {nulls} nulls in a {body_len}-byte body"
            )));
        }
        nodes.push((len, nulls));
    }
    let variadic: VecDeque<i64> = rb.variadicBufferCounts().into_iter().flatten().collect();
    let mut w = Walk {
        nodes,
        buffers,
        variadic,
        next_node: 0,
        next_buffer: 0,
    };
    for f in schema.fields() {
        w.walk(f.data_type(), 0)?;
    }
    if !w.variadic.is_empty() {
        return Err(bad("more variadic buffer counts than view columns"));
    }
    Ok(())
}

/// One decoded message.
enum Decoded {
    Batch(RecordBatch),
    Dictionary,
}

/// Decoding state shared by the file and stream readers: the schema, dictionaries
/// seen so far and the metadata version.
struct State {
    schema: SchemaRef,
    dictionaries: HashMap<i64, ArrayRef>,
    version: MetadataVersion,
}

fn check_version(v: MetadataVersion) -> Result<MetadataVersion> {
    if v == MetadataVersion::V4 || v == MetadataVersion::V5 {
        Ok(v)
    } else {
        Err(bad(format!(
            "metadata version {} is not supported (Arrow IPC V4 and V5 are)",
            v.0
        )))
    }
}

/// The flatbuffer of an encapsulated message's metadata (after the optional
/// continuation marker and the length word), checked to fit `meta`.
fn message_fb(meta: &[u8]) -> Result<arrow_ipc::Message<'_>> {
    let (len_at, rest) = if meta.get(..4) == Some(&CONTINUATION[..]) {
        (4, 8)
    } else {
        (0, 4)
    };
    let word = meta
        .get(len_at..len_at + 4)
        .ok_or_else(|| bad("message metadata shorter than its length word"))?;
    let mut le = [0u8; 4];
    le.copy_from_slice(word);
    let n = i32::from_le_bytes(le);
    let n = usize::try_from(n)
        .ok()
        .filter(|&n| n <= meta.len() - rest)
        .ok_or_else(|| {
            bad(format!(
                "message metadata declares {n} bytes, its block holds {}",
                meta.len() - rest
            ))
        })?;
    parse_message(&meta[rest..rest + n])
}

fn parse_message(fb: &[u8]) -> Result<arrow_ipc::Message<'_>> {
    arrow_ipc::root_as_message(fb).map_err(|e| bad(format!("message metadata: {e}")))
}

impl State {
    /// Validates and decodes one dictionary or record batch message.
    fn decode(&mut self, msg: arrow_ipc::Message<'_>, body: Vec<u8>) -> Result<Decoded> {
        check_version(msg.version())?;
        let declared = nonneg(msg.bodyLength(), "message body length")?;
        if declared > body.len() as u64 {
            return Err(bad(format!(
                "message declares a {declared}-byte body, {} bytes are there",
                body.len()
            )));
        }
        let buf = Buffer::from_vec(body);
        let body = buf.as_slice();
        match msg.header_type() {
            MessageHeader::RecordBatch => {
                let rb = msg
                    .header_as_record_batch()
                    .ok_or_else(|| bad("record batch message without its header"))?;
                check_batch(rb, body, &self.schema)?;
                let schema = self.schema.clone();
                let (dicts, version) = (&self.dictionaries, &self.version);
                let b = guard("record batch", || {
                    arrow_ipc::reader::read_record_batch(&buf, rb, schema, dicts, None, version)
                })?;
                Ok(Decoded::Batch(b))
            }
            MessageHeader::DictionaryBatch => {
                let d = msg
                    .header_as_dictionary_batch()
                    .ok_or_else(|| bad("dictionary message without its header"))?;
                let data = d
                    .data()
                    .ok_or_else(|| bad("dictionary message without data"))?;
                #[allow(deprecated)]
                let value_type = self
                    .schema
                    .fields_with_dict_id(d.id())
                    .first()
                    .and_then(|f| match f.data_type() {
                        DataType::Dictionary(_, v) => Some(v.as_ref().clone()),
                        _ => None,
                    })
                    .ok_or_else(|| bad(format!("dictionary id {} is not in the schema", d.id())))?;
                let one = Schema::new(vec![arrow_schema::Field::new("", value_type, true)]);
                check_batch(data, body, &one)?;
                let (schema, dicts, version) =
                    (&self.schema, &mut self.dictionaries, &self.version);
                guard("dictionary batch", || {
                    arrow_ipc::reader::read_dictionary(&buf, d, schema, dicts, version)
                })?;
                Ok(Decoded::Dictionary)
            }
            MessageHeader::Schema => Err(bad("a second schema message inside the data")),
            h => Err(bad(format!("unexpected message type {}", h.0))),
        }
    }
}

fn read_exact_vec<R: Read>(r: &mut R, n: u64, what: &str) -> Result<Vec<u8>> {
    let n = usize::try_from(n).map_err(|_| bad(format!("{what} of {n} bytes")))?;
    let mut v = vec![0u8; n];
    r.read_exact(&mut v).map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            bad(format!("input ends inside the {what}"))
        } else {
            FormatError::Io(e)
        }
    })?;
    Ok(v)
}

/// Whether `head` (the first bytes of an input) starts an Arrow IPC *file* (rather
/// than a stream).
pub fn is_file_format(head: &[u8]) -> bool {
    head.starts_with(MAGIC)
}

/// A block (dictionary or record batch) of an IPC file: offset, metadata and body
/// lengths, checked to lie inside the file before the footer.
#[derive(Clone, Copy, Debug)]
struct Block {
    offset: u64,
    meta: u64,
    body: u64,
}

/// The blocks of a footer table, each checked to lie inside the first `footer_start`
/// bytes of the file.
fn blocks<'b>(
    table: impl Iterator<Item = &'b arrow_ipc::Block>,
    footer_start: u64,
) -> Result<Vec<Block>> {
    table
        .map(|b| {
            let offset = nonneg(b.offset(), "block offset")?;
            let meta = nonneg(i64::from(b.metaDataLength()), "block metadata length")?;
            let body = nonneg(b.bodyLength(), "block body length")?;
            let end = offset.checked_add(meta).and_then(|e| e.checked_add(body));
            if offset < 8 || meta < 8 || end.is_none_or(|e| e > footer_start) {
                return Err(bad(format!(
                    "block at {offset} (+{meta} metadata, +{body} body) lies outside the {footer_start} bytes before the footer"
                )));
            }
            Ok(Block { offset, meta, body })
        })
        .collect()
}

/// An Arrow IPC file reader that validates every length before arrow-ipc uses it;
/// reads one block at a time (memory bounded by the largest block).
pub struct FileReader<R> {
    reader: R,
    state: State,
    dictionaries: Vec<Block>,
    batches: VecDeque<Block>,
    failed: bool,
}

impl<R: Read + Seek> FileReader<R> {
    /// Opens an IPC file: reads and checks its footer, schema and block table.
    pub fn try_new(mut reader: R) -> Result<Self> {
        let len = reader.seek(SeekFrom::End(0))?;
        if len < 8 + 10 {
            return Err(bad(format!(
                "{len} bytes are too few for an Arrow IPC file"
            )));
        }
        reader.seek(SeekFrom::Start(0))?;
        let head = read_exact_vec(&mut reader, 6, "file magic")?;
        if !is_file_format(&head) {
            return Err(bad("no ARROW1 magic at the start: not an Arrow IPC file"));
        }
        reader.seek(SeekFrom::Start(len - 10))?;
        let tail = read_exact_vec(&mut reader, 10, "file trailer")?;
        if &tail[4..] != MAGIC {
            return Err(bad(
                "no ARROW1 magic at the end: the file is truncated or not an Arrow IPC file",
            ));
        }
        let mut le = [0u8; 4];
        le.copy_from_slice(&tail[..4]);
        let footer_len = i32::from_le_bytes(le);
        let footer_start = u64::try_from(footer_len)
            .ok()
            .and_then(|n| (len - 10).checked_sub(n))
            .filter(|&s| s >= 8)
            .ok_or_else(|| bad(format!("footer length {footer_len} in a {len}-byte file")))?;
        reader.seek(SeekFrom::Start(footer_start))?;
        let footer_bytes = read_exact_vec(&mut reader, len - 10 - footer_start, "footer")?;
        let footer =
            arrow_ipc::root_as_footer(&footer_bytes).map_err(|e| bad(format!("footer: {e}")))?;
        let version = check_version(footer.version())?;
        let schema = schema_from_fb(
            footer
                .schema()
                .ok_or_else(|| bad("the footer holds no schema"))?,
        )?;
        let dictionaries = blocks(footer.dictionaries().into_iter().flatten(), footer_start)?;
        let batches = blocks(footer.recordBatches().into_iter().flatten(), footer_start)?.into();
        Ok(Self {
            reader,
            state: State {
                schema,
                dictionaries: HashMap::new(),
                version,
            },
            dictionaries,
            batches,
            failed: false,
        })
    }

    /// The file's schema.
    pub fn schema(&self) -> SchemaRef {
        self.state.schema.clone()
    }

    /// Number of record batches in the file.
    pub fn num_batches(&self) -> usize {
        self.batches.len()
    }

    fn read_block(&mut self, b: Block, dictionary: bool) -> Result<Decoded> {
        self.reader.seek(SeekFrom::Start(b.offset))?;
        let meta = read_exact_vec(&mut self.reader, b.meta, "block metadata")?;
        let body = read_exact_vec(&mut self.reader, b.body, "block body")?;
        let msg = message_fb(&meta)?;
        let want = if dictionary {
            MessageHeader::DictionaryBatch
        } else {
            MessageHeader::RecordBatch
        };
        if msg.header_type() != want {
            return Err(bad(format!(
                "block at {} holds message type {} where the footer promises {}",
                b.offset,
                msg.header_type().0,
                want.0
            )));
        }
        self.state.decode(msg, body)
    }

    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        for b in std::mem::take(&mut self.dictionaries) {
            self.read_block(b, true)?;
        }
        let Some(b) = self.batches.pop_front() else {
            return Ok(None);
        };
        match self.read_block(b, false)? {
            Decoded::Batch(rb) => Ok(Some(rb)),
            Decoded::Dictionary => Err(bad("a record batch block holds a dictionary")),
        }
    }
}

impl<R: Read + Seek> Iterator for FileReader<R> {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let r = self.next_batch();
        self.failed = r.is_err();
        r.transpose()
    }
}

/// An Arrow IPC stream reader that validates each message before arrow-ipc decodes
/// it; memory is bounded by one message. `limit` is the number of bytes the input
/// holds (a message declaring more is refused before anything is allocated).
pub struct StreamReader<R> {
    reader: R,
    remaining: u64,
    state: State,
    done: bool,
}

/// The next encapsulated message of a stream: its metadata flatbuffer bytes and body,
/// or None at the end-of-stream marker or a clean end of input.
fn next_message<R: Read>(r: &mut R, remaining: &mut u64) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
    let mut word = [0u8; 4];
    // A clean end of input between messages ends the stream.
    let mut got = 0;
    while got < 4 {
        let n = r.read(&mut word[got..])?;
        if n == 0 {
            if got == 0 {
                return Ok(None);
            }
            return Err(bad("stream ends inside a message length"));
        }
        got += n;
    }
    *remaining = remaining.saturating_sub(4);
    if word == CONTINUATION {
        let w = read_exact_vec(r, 4, "message length")?;
        *remaining = remaining.saturating_sub(4);
        word.copy_from_slice(&w);
    }
    let n = i32::from_le_bytes(word);
    if n == 0 {
        return Ok(None);
    }
    let n = u64::try_from(n)
        .ok()
        .filter(|&n| n <= *remaining)
        .ok_or_else(|| {
            bad(format!(
                "message metadata length {n} with {remaining} bytes left in the input"
            ))
        })?;
    let meta = read_exact_vec(r, n, "message metadata")?;
    *remaining -= n;
    let body_len = nonneg(parse_message(&meta)?.bodyLength(), "message body length")?;
    if body_len > *remaining {
        return Err(bad(format!(
            "message body length {body_len} with {remaining} bytes left in the input"
        )));
    }
    let body = read_exact_vec(r, body_len, "message body")?;
    *remaining -= body_len;
    Ok(Some((meta, body)))
}

impl<R: Read> StreamReader<R> {
    /// Reads the stream's schema message. `limit` bounds every declared length (the
    /// input's size when known).
    pub fn try_new(mut reader: R, limit: u64) -> Result<Self> {
        let mut remaining = limit;
        let (meta, _) = next_message(&mut reader, &mut remaining)?
            .ok_or_else(|| bad("the stream is empty (no schema message)"))?;
        let msg = parse_message(&meta)?;
        let version = check_version(msg.version())?;
        let schema = schema_from_fb(
            msg.header_as_schema()
                .ok_or_else(|| bad("the stream does not start with a schema message"))?,
        )?;
        Ok(Self {
            reader,
            remaining,
            state: State {
                schema,
                dictionaries: HashMap::new(),
                version,
            },
            done: false,
        })
    }

    /// The stream's schema.
    pub fn schema(&self) -> SchemaRef {
        self.state.schema.clone()
    }

    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            let Some((meta, body)) = next_message(&mut self.reader, &mut self.remaining)? else {
                return Ok(None);
            };
            let msg = parse_message(&meta)?;
            if let Decoded::Batch(b) = self.state.decode(msg, body)? {
                return Ok(Some(b));
            }
        }
    }
}

impl<R: Read> Iterator for StreamReader<R> {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let r = self.next_batch();
        self.done = !matches!(r, Ok(Some(_)));
        r.transpose()
    }
}

/// Reads a whole in-memory Arrow IPC input, file or stream format.
pub fn read_all(bytes: &[u8]) -> Result<(SchemaRef, Vec<RecordBatch>)> {
    if is_file_format(bytes) {
        let r = FileReader::try_new(std::io::Cursor::new(bytes))?;
        let s = r.schema();
        Ok((s, r.collect::<Result<_>>()?))
    } else {
        let r = StreamReader::try_new(bytes, bytes.len() as u64)?;
        let s = r.schema();
        Ok((s, r.collect::<Result<_>>()?))
    }
}
