//! JSON columns: what Lance stores for them and what callers see.
//!
//! The reference's JSON guide (`lance-reference.txt` lines ~8439–8875, "Storage
//! Format") and its logical type table (line ~5414, `json`: "JSON-encoded data stored
//! as binary"): a column of Arrow's JSON type (extension `arrow.json` over `utf8` or
//! `large_utf8`, pyarrow's `pa.json_()`) is stored as JSONB, a binary JSON encoding,
//! in a `large_binary` column with extension `lance.json`; the manifest and the data
//! files list it with logical type `json` and the metadata `ARROW:extension:name =
//! lance.json`, `ARROW:extension:metadata = ""` (as pylance 11–14 write it). Reads
//! give the values back as JSON text of Arrow's JSON type (`utf8`, `arrow.json`).
//!
//! The JSONB bytes are those of the `lance-jsonb` crate at the version pylance 14
//! builds with (14.0.2), so a value encodes to the same bytes on both sides: object
//! keys sorted, integers kept as `i64` / `u64`, other numbers as `f64`. Text written
//! back is compact (`{"a":1,"b":[true,null]}`), floats in the shortest form that
//! reads back the same (`1e+308`).
//!
//! [`to_storage`] turns a batch's JSON text columns into JSONB (at any depth under
//! structs and lists) before a write; [`to_text`] turns JSONB columns back into text
//! for a reader. Text that does not parse is the caller's mistake and names its column
//! and row ([`FormatError::InvalidJson`]); stored bytes that are not JSONB are damage
//! and name theirs ([`FormatError::CorruptJsonb`]).

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::builder::{GenericStringBuilder, LargeBinaryBuilder};
use arrow_array::cast::AsArray;
use arrow_array::{
    Array, ArrayRef, GenericStringArray, LargeBinaryArray, OffsetSizeTrait, RecordBatch,
    RecordBatchOptions, StructArray,
};
use arrow_schema::{DataType, Field, FieldRef, Fields, Schema, SchemaRef};

use crate::schema::{ARROW_EXT_META, ARROW_EXT_NAME};
use crate::{FormatError, Result};

/// The extension name of a stored JSON column (`large_binary` holding JSONB).
pub const LANCE_JSON_EXT: &str = "lance.json";
/// Arrow's canonical JSON extension name (`utf8` / `large_utf8` holding JSON text).
pub const ARROW_JSON_EXT: &str = "arrow.json";
/// The Lance logical type of a stored JSON column.
pub const JSON_LOGICAL_TYPE: &str = "json";

fn extension(f: &Field) -> Option<&str> {
    f.metadata().get(ARROW_EXT_NAME).map(String::as_str)
}

/// Whether `f` is a stored JSON column: `large_binary` with extension `lance.json`.
pub fn is_jsonb_field(f: &Field) -> bool {
    f.data_type() == &DataType::LargeBinary && extension(f) == Some(LANCE_JSON_EXT)
}

/// Whether `f` is of Arrow's JSON type: `utf8` / `large_utf8` with extension
/// `arrow.json`.
pub fn is_text_json_field(f: &Field) -> bool {
    matches!(f.data_type(), DataType::Utf8 | DataType::LargeUtf8)
        && extension(f) == Some(ARROW_JSON_EXT)
}

/// Whether `dt` holds a JSON field of either form at any depth.
fn holds(dt: &DataType, leaf: fn(&Field) -> bool) -> bool {
    match dt {
        DataType::Struct(fs) => fs.iter().any(|f| leaf(f) || holds(f.data_type(), leaf)),
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
            leaf(f) || holds(f.data_type(), leaf)
        }
        _ => false,
    }
}

/// Whether `schema` has a stored JSON column (at any depth).
pub fn has_jsonb(schema: &Schema) -> bool {
    schema
        .fields()
        .iter()
        .any(|f| is_jsonb_field(f) || holds(f.data_type(), is_jsonb_field))
}

/// Whether `schema` has a JSON text column (at any depth).
pub fn has_text_json(schema: &Schema) -> bool {
    schema
        .fields()
        .iter()
        .any(|f| is_text_json_field(f) || holds(f.data_type(), is_text_json_field))
}

fn with_extension(f: &Field, data_type: DataType, ext: &str) -> Field {
    let mut md: HashMap<String, String> = f.metadata().clone();
    md.insert(ARROW_EXT_NAME.into(), ext.into());
    md.entry(ARROW_EXT_META.into()).or_default();
    Field::new(f.name(), data_type, f.is_nullable()).with_metadata(md)
}

/// `f` with its JSON leaves mapped by `leaf` (fields elsewhere unchanged).
fn map_field(f: &Field, leaf: &dyn Fn(&Field) -> Option<Field>) -> Field {
    if let Some(out) = leaf(f) {
        return out;
    }
    let child = |c: &FieldRef| -> FieldRef { Arc::new(map_field(c, leaf)) };
    let dt = match f.data_type() {
        DataType::Struct(fs) => DataType::Struct(fs.iter().map(child).collect()),
        DataType::List(c) => DataType::List(child(c)),
        DataType::LargeList(c) => DataType::LargeList(child(c)),
        DataType::FixedSizeList(c, n) => DataType::FixedSizeList(child(c), *n),
        _ => return f.clone(),
    };
    f.clone().with_data_type(dt)
}

fn storage_leaf(f: &Field) -> Option<Field> {
    is_text_json_field(f).then(|| with_extension(f, DataType::LargeBinary, LANCE_JSON_EXT))
}

fn text_leaf(f: &Field) -> Option<Field> {
    is_jsonb_field(f).then(|| with_extension(f, DataType::Utf8, ARROW_JSON_EXT))
}

/// The field a JSON text field is stored as (`large_binary`, `lance.json`), at any
/// depth; other fields unchanged.
pub fn storage_field(f: &Field) -> Field {
    map_field(f, &storage_leaf)
}

/// The field a stored JSON field reads as (`utf8`, `arrow.json`), at any depth.
pub fn text_field(f: &Field) -> Field {
    map_field(f, &text_leaf)
}

fn map_schema(s: &Schema, field: fn(&Field) -> Field) -> SchemaRef {
    Arc::new(Schema::new_with_metadata(
        s.fields().iter().map(|f| field(f)).collect::<Vec<_>>(),
        s.metadata().clone(),
    ))
}

/// `schema` with its JSON text fields as stored ([`storage_field`]).
pub fn storage_schema(schema: &Schema) -> SchemaRef {
    map_schema(schema, storage_field)
}

/// `schema` with its stored JSON fields as read ([`text_field`]).
pub fn text_schema(schema: &Schema) -> SchemaRef {
    map_schema(schema, text_field)
}

/// How deeply arrays and objects may nest in a value Lancer encodes or decodes. The
/// JSONB parser and serializer recurse once per level; a limit keeps a hostile value
/// from exhausting a worker thread's stack (an abort, not an error).
pub const MAX_DEPTH: usize = 256;

/// The deepest nesting of arrays / objects in JSON text (brackets inside strings not
/// counted); stops counting past [`MAX_DEPTH`].
fn text_depth(text: &str) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for b in text.bytes() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
                if deepest > MAX_DEPTH {
                    break;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// JSON text → JSONB bytes. `Err` carries the parser's complaint.
pub fn encode(text: &str) -> std::result::Result<Vec<u8>, String> {
    if text_depth(text) > MAX_DEPTH {
        return Err(format!(
            "arrays / objects nest deeper than {MAX_DEPTH} levels; flatten the value"
        ));
    }
    lance_jsonb::parse_value(text.as_bytes())
        .map(|v| v.to_vec())
        .map_err(|e| e.to_string())
}

/// JSONB bytes → compact JSON text (pylance's text for the same bytes). `Err` when
/// the bytes are not a JSONB value ([`check`]).
pub fn decode(bytes: &[u8]) -> std::result::Result<String, String> {
    check(bytes)?;
    serde_json::to_string(&lance_jsonb::RawJsonb::new(bytes)).map_err(|e| e.to_string())
}

// The JSONB layout (as `lance-jsonb` writes it; all integers big-endian): a container
// header (u32: type in the top 3 bits — array, object or scalar — and an entry count
// below, 0 for a scalar, which has one entry), one u32 entry per element (object: keys' entries, then values'), each with a
// type (bits 28–30) and a payload length (low 28 bits), then the payloads in order. A
// nested container's payload is a whole value again; a number's payload is a tag byte
// and 0–34 bytes; a string's is UTF-8.
const HEADER_TYPE: u32 = 0xE000_0000;
const HEADER_LEN: u32 = 0x1FFF_FFFF;
const ARRAY: u32 = 0x8000_0000;
const OBJECT: u32 = 0x4000_0000;
const SCALAR: u32 = 0x2000_0000;
const ENTRY_TYPE: u32 = 0x7000_0000;
const ENTRY_LEN: u32 = 0x0FFF_FFFF;
const T_NULL: u32 = 0;
const T_STRING: u32 = 0x1000_0000;
const T_NUMBER: u32 = 0x2000_0000;
const T_FALSE: u32 = 0x3000_0000;
const T_TRUE: u32 = 0x4000_0000;
const T_CONTAINER: u32 = 0x5000_0000;

fn be_u32(b: &[u8], at: usize) -> std::result::Result<u32, String> {
    at.checked_add(4)
        .and_then(|end| b.get(at..end))
        .and_then(|s| <[u8; 4]>::try_from(s).ok())
        .map(u32::from_be_bytes)
        .ok_or_else(|| format!("truncated at byte {at} of {}", b.len()))
}

fn check_number(p: &[u8]) -> std::result::Result<(), String> {
    let ok = match p.split_first() {
        Some((0x00 | 0x10 | 0x20 | 0x30, _)) => true,
        Some((0x40 | 0x50, rest)) => matches!(rest.len(), 1 | 2 | 4 | 8),
        Some((0x60, rest)) => rest.len() == 8,
        Some((0x70, rest)) => matches!(rest.len(), 9 | 17 | 18 | 33 | 34),
        _ => false,
    };
    ok.then_some(())
        .ok_or_else(|| format!("a number's payload {p:02x?} is not a JSONB number"))
}

fn check_payload(ty: u32, p: &[u8], depth: usize) -> std::result::Result<(), String> {
    match ty {
        T_NULL | T_FALSE | T_TRUE => Ok(()),
        T_STRING => std::str::from_utf8(p)
            .map(|_| ())
            .map_err(|e| format!("a string is not UTF-8: {e}")),
        T_NUMBER => check_number(p),
        T_CONTAINER => check_value(p, depth + 1),
        other => Err(format!(
            "entry type {:#x} is not one JSON text produces",
            other >> 28
        )),
    }
}

fn check_value(b: &[u8], depth: usize) -> std::result::Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!("nested deeper than {MAX_DEPTH} levels"));
    }
    let header = be_u32(b, 0)?;
    let n = (header & HEADER_LEN) as usize;
    let entries = match header & HEADER_TYPE {
        // a scalar's header counts nothing; one entry follows it
        SCALAR => 1,
        ARRAY => n,
        OBJECT => n.checked_mul(2).ok_or("object too large")?,
        other => return Err(format!("container header {other:#x} with {n} entries")),
    };
    // each entry is 4 bytes: refuse counts the bytes cannot hold before reading them
    let mut at = entries
        .checked_mul(4)
        .and_then(|e| e.checked_add(4))
        .filter(|&end| end <= b.len())
        .ok_or_else(|| format!("{entries} entries do not fit in {} bytes", b.len()))?;
    for k in 0..entries {
        let e = be_u32(b, 4 + 4 * k)?;
        let len = (e & ENTRY_LEN) as usize;
        let end = at
            .checked_add(len)
            .filter(|&end| end <= b.len())
            .ok_or_else(|| format!("entry {k}'s {len} bytes run past the value's end"))?;
        let ty = e & ENTRY_TYPE;
        if header & HEADER_TYPE == OBJECT && k < n && ty != T_STRING {
            return Err(format!("object key {k} is not a string"));
        }
        check_payload(ty, &b[at..end], depth)?;
        at = end;
    }
    Ok(())
}

/// Checks that `bytes` are one whole JSONB value that JSON text could have produced:
/// every length inside the bytes, keys and strings UTF-8, numbers well formed,
/// nesting at most [`MAX_DEPTH`]. The JSONB readers index the bytes without these
/// checks, so values are checked before any of them reads them.
pub fn check(bytes: &[u8]) -> std::result::Result<(), String> {
    if bytes.is_empty() {
        return Err("no bytes (a JSONB value has at least a header)".into());
    }
    check_value(bytes, 0)
}

/// The member `key` of the JSONB value `bytes` — by name in an object, by decimal
/// index in an array — as a standalone JSONB value (a scalar member wrapped as a scalar
/// value, a container member as it is stored); None for a scalar, a missing key or an
/// index past the end. Only the outer level's header and entry table and the member
/// found are read, each checked ([`check`] for the member): the lookup a filter's typed
/// accessors (`json_get_int(doc, 'k')`) make per row without walking the whole
/// document. Damaged bytes on the way are an error.
pub fn member(bytes: &[u8], key: &str) -> std::result::Result<Option<Vec<u8>>, String> {
    let header = be_u32(bytes, 0)?;
    let n = (header & HEADER_LEN) as usize;
    let (entries, sought) = match header & HEADER_TYPE {
        SCALAR => return Ok(None),
        OBJECT => (n.checked_mul(2).ok_or("object too large")?, None),
        ARRAY => match key.parse::<usize>() {
            Ok(i) if i < n => (n, Some(i)),
            _ => return Ok(None),
        },
        other => return Err(format!("container header {other:#x} with {n} entries")),
    };
    let table_end = entries
        .checked_mul(4)
        .and_then(|e| e.checked_add(4))
        .filter(|&end| end <= bytes.len())
        .ok_or_else(|| format!("{entries} entries do not fit in {} bytes", bytes.len()))?;
    let entry = |k: usize| -> std::result::Result<(u32, usize), String> {
        let e = be_u32(bytes, 4 + 4 * k)?;
        Ok((e & ENTRY_TYPE, (e & ENTRY_LEN) as usize))
    };
    // the index of the entry holding the member, and where its payload starts
    let (at_entry, mut offset) = match sought {
        Some(i) => (i, table_end),
        None => {
            let mut offset = table_end;
            let mut found = None;
            for k in 0..n {
                let (ty, len) = entry(k)?;
                let end = offset
                    .checked_add(len)
                    .filter(|&end| end <= bytes.len())
                    .ok_or_else(|| format!("key {k}'s {len} bytes run past the value's end"))?;
                if ty != T_STRING {
                    return Err(format!("object key {k} is not a string"));
                }
                if found.is_none() && &bytes[offset..end] == key.as_bytes() {
                    found = Some(k);
                }
                offset = end;
            }
            match found {
                Some(k) => (n + k, offset),
                None => return Ok(None),
            }
        }
    };
    // past the payloads before it (values after the keys in an object)
    let first = if sought.is_some() { 0 } else { n };
    for k in first..at_entry {
        let (_, len) = entry(k)?;
        offset = offset
            .checked_add(len)
            .filter(|&end| end <= bytes.len())
            .ok_or_else(|| format!("entry {k}'s {len} bytes run past the value's end"))?;
    }
    let (ty, len) = entry(at_entry)?;
    let end = offset
        .checked_add(len)
        .filter(|&end| end <= bytes.len())
        .ok_or_else(|| format!("entry {at_entry}'s {len} bytes run past the value's end"))?;
    let payload = &bytes[offset..end];
    check_payload(ty, payload, 0)?;
    if ty == T_CONTAINER {
        return Ok(Some(payload.to_vec()));
    }
    let mut out = Vec::with_capacity(8 + payload.len());
    out.extend_from_slice(&SCALAR.to_be_bytes());
    // `len` came from an entry's 28-bit length field
    out.extend_from_slice(&(ty | len as u32).to_be_bytes());
    out.extend_from_slice(payload);
    Ok(Some(out))
}

/// The values a JSONPath of plain `.name` steps (`keys`) selects in the JSONB value
/// `bytes`, following [`member`] through objects: `Some(vec![value])` where every step
/// lands on an object holding the key, `Some(vec![])` where an object lacks it (the
/// path selects nothing), None where a step reaches something other than an object
/// (arrays and scalars, which JSONPath's lax mode treats its own way: the caller
/// evaluates the path whole). Damaged bytes on the way are an error.
pub fn follow(bytes: &[u8], keys: &[&str]) -> std::result::Result<Option<Vec<Vec<u8>>>, String> {
    let mut cur: std::borrow::Cow<'_, [u8]> = std::borrow::Cow::Borrowed(bytes);
    for key in keys {
        if be_u32(&cur, 0)? & HEADER_TYPE != OBJECT {
            return Ok(None);
        }
        match member(&cur, key)? {
            Some(v) => cur = std::borrow::Cow::Owned(v),
            None => return Ok(Some(Vec::new())),
        }
    }
    Ok(Some(vec![cur.into_owned()]))
}

/// Where a column sits in a batch, for error messages (`meta.doc`).
fn child_path(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_string()
    } else {
        format!("{parent}.{name}")
    }
}

fn encode_text<O: OffsetSizeTrait>(
    a: &GenericStringArray<O>,
    column: &str,
) -> Result<LargeBinaryArray> {
    let mut b = LargeBinaryBuilder::with_capacity(a.len(), a.value_data().len());
    for (row, v) in a.iter().enumerate() {
        match v {
            None => b.append_null(),
            Some(text) => {
                let bytes = encode(text).map_err(|detail| FormatError::InvalidJson {
                    column: column.to_string(),
                    row,
                    detail,
                })?;
                b.append_value(bytes);
            }
        }
    }
    Ok(b.finish())
}

/// Decodes JSONB values into text; `column` names them in errors.
pub fn decode_array(a: &LargeBinaryArray, column: &str) -> Result<ArrayRef> {
    let mut b = GenericStringBuilder::<i32>::with_capacity(a.len(), a.value_data().len());
    for (row, v) in a.iter().enumerate() {
        match v {
            None => b.append_null(),
            Some(bytes) => {
                let text = decode(bytes).map_err(|detail| FormatError::CorruptJsonb {
                    column: column.to_string(),
                    row,
                    detail,
                })?;
                b.append_value(text);
            }
        }
    }
    Ok(Arc::new(b.finish()))
}

/// Converts one JSON column (field, values, path for errors), or `None` when the field
/// is not the JSON form it converts.
type Leaf<'a> = &'a dyn Fn(&Field, &ArrayRef, &str) -> Result<Option<(Field, ArrayRef)>>;

/// [`convert`] of a list or large list `a` (field `f`, item field `item`).
fn convert_list<O: OffsetSizeTrait>(
    f: &Field,
    item: &Arc<Field>,
    a: &ArrayRef,
    path: &str,
    leaf: Leaf<'_>,
) -> Result<Option<(Field, ArrayRef)>> {
    let l = a.as_list::<O>();
    let Some((nf, values)) = convert(item, l.values(), path, leaf)? else {
        return Ok(None);
    };
    let nf = Arc::new(nf);
    let array = arrow_array::GenericListArray::<O>::try_new(
        nf.clone(),
        l.offsets().clone(),
        values,
        l.nulls().cloned(),
    )?;
    let dt = if O::IS_LARGE {
        DataType::LargeList(nf)
    } else {
        DataType::List(nf)
    };
    Ok(Some((f.clone().with_data_type(dt), Arc::new(array))))
}

/// Converts the JSON leaves of `a` (of field `f`, at `path`) with `leaf`; `None` when
/// nothing under `f` is JSON of the kind `leaf` converts.
fn convert(
    f: &Field,
    a: &ArrayRef,
    path: &str,
    leaf: Leaf<'_>,
) -> Result<Option<(Field, ArrayRef)>> {
    if let Some(done) = leaf(f, a, path)? {
        return Ok(Some(done));
    }
    match f.data_type() {
        DataType::Struct(fields) => {
            let s = a.as_struct();
            let Some((out_fields, out_cols)) = convert_all(
                fields.iter().zip(s.columns()),
                |cf| child_path(path, cf.name()),
                leaf,
            )?
            else {
                return Ok(None);
            };
            let fields = Fields::from(out_fields);
            let array = StructArray::try_new_with_length(
                fields.clone(),
                out_cols,
                s.nulls().cloned(),
                s.len(),
            )?;
            Ok(Some((
                f.clone().with_data_type(DataType::Struct(fields)),
                Arc::new(array),
            )))
        }
        DataType::List(item) => convert_list::<i32>(f, item, a, path, leaf),
        DataType::LargeList(item) => convert_list::<i64>(f, item, a, path, leaf),
        DataType::FixedSizeList(item, n) => {
            let l = a.as_fixed_size_list();
            let Some((nf, values)) = convert(item, l.values(), path, leaf)? else {
                return Ok(None);
            };
            let nf = Arc::new(nf);
            let array = arrow_array::FixedSizeListArray::try_new(
                nf.clone(),
                *n,
                values,
                l.nulls().cloned(),
            )?;
            Ok(Some((
                f.clone().with_data_type(DataType::FixedSizeList(nf, *n)),
                Arc::new(array),
            )))
        }
        _ => Ok(None),
    }
}

/// Converts each (field, column) pair ([`convert`], `path_of` naming it in errors);
/// `None` when none of them holds JSON of the kind `leaf` converts.
fn convert_all<'c>(
    pairs: impl Iterator<Item = (&'c FieldRef, &'c ArrayRef)>,
    path_of: impl Fn(&Field) -> String,
    leaf: Leaf<'_>,
) -> Result<Option<(Vec<FieldRef>, Vec<ArrayRef>)>> {
    let mut changed = false;
    let (mut fields, mut cols) = (Vec::new(), Vec::new());
    for (f, c) in pairs {
        match convert(f, c, &path_of(f), leaf)? {
            Some((nf, na)) => {
                changed = true;
                fields.push(Arc::new(nf));
                cols.push(na);
            }
            None => {
                fields.push(f.clone());
                cols.push(c.clone());
            }
        }
    }
    Ok(changed.then_some((fields, cols)))
}

fn to_jsonb_leaf(f: &Field, a: &ArrayRef, path: &str) -> Result<Option<(Field, ArrayRef)>> {
    if is_jsonb_field(f) {
        // JSONB handed in as such: stored as is once its bytes are checked
        if let Some(bytes) = a.as_binary_opt::<i64>() {
            for (row, v) in bytes.iter().enumerate() {
                if let Some(Err(detail)) = v.map(check) {
                    return Err(FormatError::InvalidJson {
                        column: path.to_string(),
                        row,
                        detail: format!(
                            "the JSONB bytes handed in are not a JSONB value: {detail}"
                        ),
                    });
                }
            }
        }
        return Ok(None);
    }
    let Some(nf) = storage_leaf(f) else {
        return Ok(None);
    };
    let bytes = match a.data_type() {
        DataType::Utf8 => encode_text(a.as_string::<i32>(), path)?,
        DataType::LargeUtf8 => encode_text(a.as_string::<i64>(), path)?,
        other => {
            return Err(FormatError::UnsupportedType {
                logical_type: other.to_string(),
                detail: format!("JSON column {path:?} must hold utf8 or large_utf8 text"),
            })
        }
    };
    Ok(Some((nf, Arc::new(bytes))))
}

fn to_text_leaf(f: &Field, a: &ArrayRef, path: &str) -> Result<Option<(Field, ArrayRef)>> {
    let Some(nf) = text_leaf(f) else {
        return Ok(None);
    };
    let bytes = a
        .as_binary_opt::<i64>()
        .ok_or_else(|| FormatError::UnsupportedType {
            logical_type: a.data_type().to_string(),
            detail: format!("stored JSON column {path:?} must be large_binary"),
        })?;
    Ok(Some((nf, decode_array(bytes, path)?)))
}

fn convert_batch(batch: &RecordBatch, leaf: Leaf<'_>) -> Result<RecordBatch> {
    let schema = batch.schema();
    let Some((fields, cols)) = convert_all(
        schema.fields().iter().zip(batch.columns()),
        |f| f.name().clone(),
        leaf,
    )?
    else {
        return Ok(batch.clone());
    };
    let schema = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
    let opts = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    Ok(RecordBatch::try_new_with_options(schema, cols, &opts)?)
}

/// `batch` with its JSON text columns encoded as JSONB (see the module docs); JSONB
/// columns handed in are checked ([`check`]); a batch without either is returned as is.
pub fn to_storage(batch: &RecordBatch) -> Result<RecordBatch> {
    let schema = batch.schema();
    if !has_text_json(&schema) && !has_jsonb(&schema) {
        return Ok(batch.clone());
    }
    convert_batch(batch, &to_jsonb_leaf)
}

/// `batch` with its stored JSON columns decoded to text of Arrow's JSON type.
pub fn to_text(batch: &RecordBatch) -> Result<RecordBatch> {
    if !has_jsonb(&batch.schema()) {
        return Ok(batch.clone());
    }
    convert_batch(batch, &to_text_leaf)
}

/// A single column's JSON text values encoded as JSONB (`column` names it in errors).
pub fn encode_column(a: &dyn Array, column: &str) -> Result<LargeBinaryArray> {
    match a.data_type() {
        DataType::Utf8 => encode_text(a.as_string::<i32>(), column),
        DataType::LargeUtf8 => encode_text(a.as_string::<i64>(), column),
        other => Err(FormatError::UnsupportedType {
            logical_type: other.to_string(),
            detail: format!("JSON column {column:?} must hold utf8 or large_utf8 text"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::StringArray;

    fn json_text_field(name: &str) -> Field {
        Field::new(name, DataType::Utf8, true).with_metadata(
            [
                (ARROW_EXT_NAME.to_string(), ARROW_JSON_EXT.to_string()),
                (ARROW_EXT_META.to_string(), String::new()),
            ]
            .into(),
        )
    }

    #[test]
    fn text_round_trips_through_jsonb_compactly() -> Result<()> {
        let texts = [
            Some(r#"{"b": [1, 2.5, null, true], "a": {"é": "ü"}}"#),
            None,
            Some("{}"),
            Some("[]"),
            Some("null"),
            Some(r#"{"u": 18446744073709551615, "i": -9223372036854775808, "f": 1e308}"#),
        ];
        let schema = Arc::new(Schema::new(vec![json_text_field("j")]));
        let batch = RecordBatch::try_new(
            schema,
            vec![Arc::new(StringArray::from(texts.to_vec())) as ArrayRef],
        )?;
        let stored = to_storage(&batch)?;
        assert!(is_jsonb_field(stored.schema().field(0)));
        let back = to_text(&stored)?;
        assert!(is_text_json_field(back.schema().field(0)));
        let got: Vec<Option<&str>> = back.column(0).as_string::<i32>().iter().collect();
        // keys sorted, compact, numbers at their edges kept
        assert_eq!(
            got,
            vec![
                Some(r#"{"a":{"é":"ü"},"b":[1,2.5,null,true]}"#),
                None,
                Some("{}"),
                Some("[]"),
                Some("null"),
                Some(r#"{"f":1e+308,"i":-9223372036854775808,"u":18446744073709551615}"#),
            ]
        );
        Ok(())
    }

    #[test]
    fn bad_text_and_bad_bytes_name_column_and_row() -> Result<()> {
        let schema = Arc::new(Schema::new(vec![json_text_field("doc")]));
        let batch = RecordBatch::try_new(
            schema,
            vec![Arc::new(StringArray::from(vec!["{}", "{nope"])) as ArrayRef],
        )?;
        match to_storage(&batch) {
            Err(FormatError::InvalidJson { column, row, .. }) => {
                assert_eq!((column.as_str(), row), ("doc", 1));
            }
            other => {
                return Err(FormatError::corrupt(format!(
                    "expected InvalidJson: {other:?}"
                )))
            }
        }
        let bytes = LargeBinaryArray::from(vec![&b"\x20\x00\x00\x00"[..], &[0xff; 3][..], &[][..]]);
        match decode_array(&bytes, "doc") {
            Err(FormatError::CorruptJsonb { column, row, .. }) => {
                assert_eq!(column, "doc");
                assert!(row <= 2);
            }
            other => {
                return Err(FormatError::corrupt(format!(
                    "expected CorruptJsonb: {other:?}"
                )))
            }
        }
        Ok(())
    }

    #[test]
    fn json_under_structs_and_lists_converts_at_any_depth() -> Result<()> {
        use arrow_array::builder::{ListBuilder, StringBuilder};
        let leaf = Arc::new(json_text_field("doc"));
        let mut lb = ListBuilder::new(StringBuilder::new()).with_field(leaf.clone());
        lb.values().append_value(r#"{"b":1,"a":[true]}"#);
        lb.values().append_null();
        lb.append(true);
        lb.append(false);
        let list: ArrayRef = Arc::new(lb.finish());
        let inner: ArrayRef = Arc::new(StringArray::from(vec![Some("[1, 2]"), Some("{}")]));
        let st = StructArray::try_new(
            Fields::from(vec![json_text_field("doc")]),
            vec![inner],
            None,
        )?;
        let schema = Arc::new(Schema::new(vec![
            Field::new("l", list.data_type().clone(), true),
            Field::new("s", st.data_type().clone(), true),
        ]));
        let batch = RecordBatch::try_new(schema, vec![list, Arc::new(st)])?;
        let stored = to_storage(&batch)?;
        assert!(has_jsonb(&stored.schema()) && !has_text_json(&stored.schema()));
        assert_eq!(
            stored.schema().as_ref(),
            storage_schema(&batch.schema()).as_ref()
        );
        let back = to_text(&stored)?;
        assert_eq!(
            back.schema().as_ref(),
            text_schema(&stored.schema()).as_ref()
        );
        // the text as parsed JSON is the text written; nulls stay null
        let l = back.column(0).as_list::<i32>();
        let items = l.value(0);
        let items = items.as_string::<i32>();
        assert!(l.is_null(1) && items.is_null(1));
        let v: serde_json::Value = serde_json::from_str(items.value(0))
            .map_err(|e| FormatError::corrupt(e.to_string()))?;
        assert_eq!(v, serde_json::json!({"a": [true], "b": 1}));
        let s = back
            .column(1)
            .as_struct()
            .column(0)
            .as_string::<i32>()
            .clone();
        assert_eq!(
            s.iter().collect::<Vec<_>>(),
            vec![Some("[1,2]"), Some("{}")]
        );
        Ok(())
    }

    #[test]
    fn damaged_jsonb_never_panics() {
        // every prefix and every single-byte change of a nested value's bytes
        let Ok(good) = encode(r#"{"a":[1,{"b":"xyz"},2.5,-7,18446744073709551615],"c":null}"#)
        else {
            return;
        };
        let mut seen_errors = 0;
        for n in 0..good.len() {
            if decode(&good[..n]).is_err() {
                seen_errors += 1;
            }
        }
        for i in 0..good.len() {
            for v in [0u8, 0x7f, 0xff, 0x10, 0x20, 0x50] {
                let mut b = good.clone();
                b[i] = v;
                let _ = decode(&b);
            }
        }
        assert!(seen_errors > 0, "a truncated value must fail to decode");
        assert_eq!(
            decode(&good).ok().as_deref(),
            Some(r#"{"a":[1,{"b":"xyz"},2.5,-7,18446744073709551615],"c":null}"#)
        );
    }

    /// A filter's typed accessors look members up with [`member`]: it answers as
    /// `lance-jsonb`'s own lookups on whole values, and every single-byte change and
    /// every prefix of a document is refused or read without a panic; a damaged member
    /// is refused while the others stay readable.
    #[test]
    fn member_lookups_answer_as_lance_jsonb_and_never_panic() {
        let text =
            r#"{"a":[1,{"b":"xyz"},null,true],"k":"v","n":7,"f":-2.5,"o":{"p":true},"z":null}"#;
        let Ok(good) = encode(text) else {
            return;
        };
        let doc = lance_jsonb::RawJsonb::new(&good);
        for key in ["a", "k", "n", "f", "o", "z", "zz", ""] {
            let theirs = doc.get_by_name(key, false).ok().flatten();
            let mine = member(&good, key).ok().flatten();
            assert_eq!(
                mine.as_deref(),
                theirs.as_ref().map(|t| t.as_ref()),
                "{key}"
            );
        }
        let Ok(Some(arr)) = member(&good, "a") else {
            return;
        };
        let raw = lance_jsonb::RawJsonb::new(&arr);
        for i in ["0", "1", "2", "3", "4", "x", "-1"] {
            let theirs = i
                .parse::<usize>()
                .ok()
                .and_then(|i| raw.get_by_index(i).ok().flatten());
            let mine = member(&arr, i).ok().flatten();
            assert_eq!(
                mine.as_deref(),
                theirs.as_ref().map(|t| t.as_ref()),
                "[{i}]"
            );
        }
        let read = |b: &[u8]| {
            for key in ["a", "k", "n", "o", "zz", "0"] {
                if let Ok(Some(m)) = member(b, key) {
                    let r = lance_jsonb::RawJsonb::new(&m);
                    let _ = (r.to_str(), r.to_i64(), r.to_f64(), r.to_bool());
                    let _ = decode(&m);
                }
            }
        };
        for n in 0..good.len() {
            read(&good[..n]);
        }
        for i in 0..good.len() {
            for v in [0u8, 0x7f, 0xff, 0x10, 0x20, 0x50, 0x60, 0x70, 0xc3] {
                let mut b = good.clone();
                b[i] = v;
                read(&b);
            }
        }
        // a non-UTF-8 string inside "o": the whole check fails, "k" still reads, "o"
        // is refused
        let Ok(mut bad) = encode(r#"{"k":"v","o":{"p":"qq"}}"#) else {
            return;
        };
        let at = bad.len() - 1;
        bad[at] = 0xff;
        assert!(check(&bad).is_err());
        let k = member(&bad, "k").ok().flatten();
        assert_eq!(
            k.map(|k| lance_jsonb::RawJsonb::new(&k).to_str().ok()),
            Some(Some("v".to_string()))
        );
        assert!(member(&bad, "o").is_err());
    }
}
