//! Fragment descriptions as JSON, in the shape of pylance 14's
//! `FragmentMetadata.to_json()` (spec: "Distributed Write": workers serialize the
//! fragments they wrote, one driver collects and commits them).
//!
//! The shape, checked against pylance 14, 12 and 11 (all three write the same):
//!
//! ```json
//! {"id": 0,
//!  "files": [{"fields": [0, 1], "column_indices": [0, 1], "file_major_version": 2,
//!             "file_minor_version": 2, "file_size_bytes": 1382, "base_id": null,
//!             "path": "0110….lance"}],
//!  "overlays": [],
//!  "physical_rows": 4,
//!  "deletion_file": {"read_version": 1, "id": 5961…, "file_type": "array",
//!                    "num_deleted_rows": 1, "base_id": null} | null,
//!  "row_id_meta": {"Inline": [bytes…]} | {"External": {"path", "offset", "size"}} | null,
//!  "created_at_version_meta": {"inline": [bytes…]} | null,
//!  "last_updated_at_version_meta": {"inline": [bytes…]} | null}
//! ```
//!
//! Every key is written, absent values as `null` (as pylance's Python side writes
//! them); reading also takes the Rust side's serde shape, which leaves out
//! `deletion_file`, `row_id_meta` and the version sequences when absent and has no
//! `overlays`. An unknown size (`file_size_bytes` null) is 0 in the manifest, as
//! pylance records it; a deletion file's unknown count (`num_deleted_rows` null) is 0
//! likewise. Overlays (data overlay files, pylance 14's unstable reader flag 64) are
//! refused, as Lancer refuses datasets using them.

use lancer_table::pb;
use lancer_table::pb::data_fragment::{
    CreatedAtVersionSequence as Created, LastUpdatedAtVersionSequence as Updated,
    RowIdSequence as RowIds,
};
use serde_json::{json, Map, Value};

use crate::{Error, Result};

/// `frag` as pylance 14's `FragmentMetadata.to_json()` writes it (see the module docs).
pub fn fragment_to_json(frag: &pb::DataFragment) -> Value {
    let files: Vec<Value> = frag.files.iter().map(data_file_to_json).collect();
    let deletion = frag.deletion_file.as_ref().map_or(Value::Null, |d| {
        json!({
            "read_version": d.read_version,
            "id": d.id,
            "file_type": if d.file_type == pb::deletion_file::DeletionFileType::Bitmap as i32 {
                "bitmap"
            } else {
                "array"
            },
            "num_deleted_rows": if d.num_deleted_rows == 0 { Value::Null } else { json!(d.num_deleted_rows) },
            "base_id": d.base_id,
        })
    });
    let row_ids = match &frag.row_id_sequence {
        None => Value::Null,
        Some(RowIds::InlineRowIds(b)) => json!({ "Inline": b }),
        Some(RowIds::ExternalRowIds(f)) => json!({ "External": external_to_json(f) }),
    };
    let created = match &frag.created_at_version_sequence {
        None => Value::Null,
        Some(Created::InlineCreatedAtVersions(b)) => json!({ "inline": b }),
        Some(Created::ExternalCreatedAtVersions(f)) => json!({ "external": external_to_json(f) }),
    };
    let updated = match &frag.last_updated_at_version_sequence {
        None => Value::Null,
        Some(Updated::InlineLastUpdatedAtVersions(b)) => json!({ "inline": b }),
        Some(Updated::ExternalLastUpdatedAtVersions(f)) => {
            json!({ "external": external_to_json(f) })
        }
    };
    json!({
        "id": frag.id,
        "files": files,
        "overlays": [],
        "physical_rows": frag.physical_rows,
        "deletion_file": deletion,
        "row_id_meta": row_ids,
        "created_at_version_meta": created,
        "last_updated_at_version_meta": updated,
    })
}

fn data_file_to_json(f: &pb::DataFile) -> Value {
    json!({
        "fields": f.fields,
        "column_indices": f.column_indices,
        "file_major_version": f.file_major_version,
        "file_minor_version": f.file_minor_version,
        "file_size_bytes": if f.file_size_bytes == 0 { Value::Null } else { json!(f.file_size_bytes) },
        "base_id": f.base_id,
        "path": f.path,
    })
}

fn external_to_json(f: &pb::ExternalFile) -> Value {
    json!({ "path": f.path, "offset": f.offset, "size": f.size })
}

/// The fragment a pylance-shaped JSON object describes (see the module docs); a
/// missing or mistyped member is an [`Error::InvalidArgument`] naming it.
pub fn fragment_from_json(v: &Value) -> Result<pb::DataFragment> {
    let obj = object(v, "a fragment description")?;
    let id = uint(obj, "id", "fragment")?;
    let what = format!("fragment {id}");
    if let Some(o) = obj.get("overlays").and_then(Value::as_array) {
        if !o.is_empty() {
            return Err(bad(format!(
                "{what} carries data overlay files (pylance 14's unstable overlays), which \
                 Lancer does not read or commit: commit it with pylance"
            )));
        }
    }
    let files = obj
        .get("files")
        .and_then(Value::as_array)
        .ok_or_else(|| bad(format!("{what}: \"files\" must be a list of data files")))?
        .iter()
        .map(|f| data_file_from_json(f, &what))
        .collect::<Result<Vec<_>>>()?;
    let physical_rows = uint(obj, "physical_rows", &what)?;
    let deletion_file = match obj.get("deletion_file") {
        None | Some(Value::Null) => None,
        Some(d) => {
            let w = format!("{what}: deletion_file");
            let o = object(d, &w)?;
            let file_type = match o.get("file_type").and_then(Value::as_str) {
                Some("array") => pb::deletion_file::DeletionFileType::ArrowArray,
                Some("bitmap") => pb::deletion_file::DeletionFileType::Bitmap,
                other => {
                    return Err(bad(format!(
                        "{w}: file_type must be \"array\" or \"bitmap\", not {other:?}"
                    )))
                }
            };
            Some(pb::DeletionFile {
                file_type: file_type as i32,
                read_version: uint(o, "read_version", &w)?,
                id: uint(o, "id", &w)?,
                num_deleted_rows: opt_uint(o, "num_deleted_rows", &w)?.unwrap_or(0),
                base_id: opt_u32(o, "base_id", &w)?,
            })
        }
    };
    let row_id_sequence = match obj.get("row_id_meta") {
        None | Some(Value::Null) => None,
        Some(m) => Some(match sequence(m, &format!("{what}: row_id_meta"))? {
            Seq::Inline(b) => RowIds::InlineRowIds(b),
            Seq::External(f) => RowIds::ExternalRowIds(f),
        }),
    };
    let created_at_version_sequence = match obj.get("created_at_version_meta") {
        None | Some(Value::Null) => None,
        Some(m) => Some(
            match sequence(m, &format!("{what}: created_at_version_meta"))? {
                Seq::Inline(b) => Created::InlineCreatedAtVersions(b),
                Seq::External(f) => Created::ExternalCreatedAtVersions(f),
            },
        ),
    };
    let last_updated_at_version_sequence = match obj.get("last_updated_at_version_meta") {
        None | Some(Value::Null) => None,
        Some(m) => Some(
            match sequence(m, &format!("{what}: last_updated_at_version_meta"))? {
                Seq::Inline(b) => Updated::InlineLastUpdatedAtVersions(b),
                Seq::External(f) => Updated::ExternalLastUpdatedAtVersions(f),
            },
        ),
    };
    Ok(pb::DataFragment {
        id,
        files,
        deletion_file,
        physical_rows,
        row_id_sequence,
        last_updated_at_version_sequence,
        created_at_version_sequence,
    })
}

/// Fragments from JSON text: one object, or a list of them (what `lancer
/// write-fragments` prints).
pub fn fragments_from_json_text(text: &str) -> Result<Vec<pb::DataFragment>> {
    let v: Value = serde_json::from_str(text)
        .map_err(|e| bad(format!("fragment descriptions are not JSON: {e}")))?;
    match &v {
        Value::Array(items) => items.iter().map(fragment_from_json).collect(),
        _ => Ok(vec![fragment_from_json(&v)?]),
    }
}

fn data_file_from_json(v: &Value, what: &str) -> Result<pb::DataFile> {
    let w = format!("{what}: a data file");
    let o = object(v, &w)?;
    let path = o
        .get("path")
        .or_else(|| o.get("_path"))
        .and_then(Value::as_str)
        .ok_or_else(|| bad(format!("{w} has no \"path\"")))?
        .to_string();
    let w = format!("{what}: data file {path}");
    let ints = |key: &str| -> Result<Vec<i32>> {
        match o.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(a)) => a
                .iter()
                .map(|x| {
                    x.as_i64()
                        .and_then(|x| i32::try_from(x).ok())
                        .ok_or_else(|| bad(format!("{w}: {key} holds {x}, not a 32-bit integer")))
                })
                .collect(),
            Some(x) => Err(bad(format!("{w}: {key} must be a list, not {x}"))),
        }
    };
    Ok(pb::DataFile {
        fields: ints("fields")?,
        column_indices: ints("column_indices")?,
        file_major_version: opt_u32(o, "file_major_version", &w)?.unwrap_or(0),
        file_minor_version: opt_u32(o, "file_minor_version", &w)?.unwrap_or(0),
        file_size_bytes: opt_uint(o, "file_size_bytes", &w)?.unwrap_or(0),
        base_id: opt_u32(o, "base_id", &w)?,
        path,
    })
}

enum Seq {
    Inline(Vec<u8>),
    External(pb::ExternalFile),
}

/// A row-id or version sequence: `{"Inline"|"inline": [bytes]}` or
/// `{"External"|"external": {path, offset, size}}`.
fn sequence(v: &Value, what: &str) -> Result<Seq> {
    let o = object(v, what)?;
    let get = |k: &str| o.get(k).or_else(|| o.get(&k.to_ascii_lowercase()));
    if let Some(b) = get("Inline") {
        let bytes = b
            .as_array()
            .ok_or_else(|| bad(format!("{what}: Inline must be a list of bytes")))?
            .iter()
            .map(|x| {
                x.as_u64()
                    .and_then(|x| u8::try_from(x).ok())
                    .ok_or_else(|| bad(format!("{what}: {x} is not a byte")))
            })
            .collect::<Result<Vec<u8>>>()?;
        return Ok(Seq::Inline(bytes));
    }
    if let Some(f) = get("External") {
        let w = format!("{what}: External");
        let e = object(f, &w)?;
        return Ok(Seq::External(pb::ExternalFile {
            path: e
                .get("path")
                .and_then(Value::as_str)
                .ok_or_else(|| bad(format!("{w} has no \"path\"")))?
                .to_string(),
            offset: uint(e, "offset", &w)?,
            size: uint(e, "size", &w)?,
        }));
    }
    Err(bad(format!(
        "{what} must be {{\"Inline\": [...]}} or {{\"External\": {{...}}}}"
    )))
}

fn object<'a>(v: &'a Value, what: &str) -> Result<&'a Map<String, Value>> {
    v.as_object()
        .ok_or_else(|| bad(format!("{what} must be a JSON object, not {v}")))
}

fn uint(o: &Map<String, Value>, key: &str, what: &str) -> Result<u64> {
    opt_uint(o, key, what)?.ok_or_else(|| bad(format!("{what}: \"{key}\" is missing")))
}

fn opt_uint(o: &Map<String, Value>, key: &str, what: &str) -> Result<Option<u64>> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(x) => x.as_u64().map(Some).ok_or_else(|| {
            bad(format!(
                "{what}: \"{key}\" must be a non-negative integer, not {x}"
            ))
        }),
    }
}

fn opt_u32(o: &Map<String, Value>, key: &str, what: &str) -> Result<Option<u32>> {
    opt_uint(o, key, what)?
        .map(|x| u32::try_from(x).map_err(|_| bad(format!("{what}: \"{key}\" {x} is too large"))))
        .transpose()
}

fn bad(what: String) -> Error {
    Error::InvalidArgument { what }
}

/// The order pylance's Python side writes an object's keys in, by the kind of object
/// (recognised by its keys); None: sorted.
fn key_order(o: &Map<String, Value>) -> Option<&'static [&'static str]> {
    const FRAGMENT: &[&str] = &[
        "id",
        "files",
        "overlays",
        "physical_rows",
        "deletion_file",
        "row_id_meta",
        "created_at_version_meta",
        "last_updated_at_version_meta",
    ];
    const DATA_FILE: &[&str] = &[
        "fields",
        "column_indices",
        "file_major_version",
        "file_minor_version",
        "file_size_bytes",
        "base_id",
        "path",
    ];
    const DELETION: &[&str] = &[
        "read_version",
        "id",
        "file_type",
        "num_deleted_rows",
        "base_id",
    ];
    const EXTERNAL: &[&str] = &["path", "offset", "size"];
    if o.contains_key("physical_rows") {
        Some(FRAGMENT)
    } else if o.contains_key("fields") && o.contains_key("path") {
        Some(DATA_FILE)
    } else if o.contains_key("read_version") {
        Some(DELETION)
    } else if o.contains_key("offset") {
        Some(EXTERNAL)
    } else {
        None
    }
}

/// `v` as Python's `json.dumps` writes the same value (pylance's key order for
/// fragment descriptions, `", "` and `": "` separators, ASCII only): the text of
/// `json.dumps(fragment.to_json())` for [`fragment_to_json`]'s value, byte for byte.
pub fn python_json_text(v: &Value) -> String {
    let mut out = String::new();
    write_python(v, &mut out);
    out
}

fn write_python(v: &Value, out: &mut String) {
    match v {
        Value::Array(items) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_python(x, out);
            }
            out.push(']');
        }
        Value::Object(o) => {
            let mut keys: Vec<&String> = o.keys().collect();
            match key_order(o) {
                Some(order) => {
                    keys.sort_by_key(|k| order.iter().position(|x| x == k).unwrap_or(order.len()))
                }
                None => keys.sort(),
            }
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_python(&Value::String((*k).clone()), out);
                out.push_str(": ");
                write_python(&o[k.as_str()], out);
            }
            out.push('}');
        }
        Value::String(s) => {
            // serde_json's escaping, then non-ASCII as \uXXXX (Python's ensure_ascii)
            let quoted = Value::String(s.clone()).to_string();
            for c in quoted.chars() {
                if c.is_ascii() {
                    out.push(c);
                } else {
                    let mut buf = [0u16; 2];
                    for unit in c.encode_utf16(&mut buf) {
                        out.push_str(&format!("\\u{unit:04x}"));
                    }
                }
            }
        }
        other => out.push_str(&other.to_string()),
    }
}
