//! Arrow schema → the Lance schema stored in files (inverse of `crate::schema`):
//! field ids in pre-order from 0, parent ids (-1 at the top), logical type strings,
//! the legacy per-field encoding hint (plain / var-binary) and metadata.

use arrow_schema::{DataType, Field, Schema, TimeUnit};

use crate::pb;
use crate::schema::{LanceField, LanceSchema, ARROW_EXT_NAME, BFLOAT16_EXT};
use crate::{FormatError, Result};

fn unit(u: &TimeUnit) -> &'static str {
    match u {
        TimeUnit::Second => "s",
        TimeUnit::Millisecond => "ms",
        TimeUnit::Microsecond => "us",
        TimeUnit::Nanosecond => "ns",
    }
}

fn is_bfloat16(f: &Field) -> bool {
    f.metadata().get(ARROW_EXT_NAME).map(|s| s.as_str()) == Some(BFLOAT16_EXT)
}

/// The Lance logical type string of an Arrow type.
pub fn logical_type(dt: &DataType) -> Result<String> {
    use DataType::*;
    Ok(match dt {
        Null => "null".into(),
        Boolean => "bool".into(),
        Int8 => "int8".into(),
        UInt8 => "uint8".into(),
        Int16 => "int16".into(),
        UInt16 => "uint16".into(),
        Int32 => "int32".into(),
        UInt32 => "uint32".into(),
        Int64 => "int64".into(),
        UInt64 => "uint64".into(),
        Float16 => "halffloat".into(),
        Float32 => "float".into(),
        Float64 => "double".into(),
        Decimal128(p, s) => format!("decimal:128:{p}:{s}"),
        Decimal256(p, s) => format!("decimal:256:{p}:{s}"),
        Utf8 => "string".into(),
        Binary => "binary".into(),
        LargeUtf8 => "large_string".into(),
        LargeBinary => "large_binary".into(),
        Date32 => "date32:day".into(),
        Date64 => "date64:ms".into(),
        Time32(u) => format!("time32:{}", unit(u)),
        Time64(u) => format!("time64:{}", unit(u)),
        Timestamp(u, tz) => format!("timestamp:{}:{}", unit(u), tz.as_deref().unwrap_or("-")),
        Duration(u) => format!("duration:{}", unit(u)),
        Struct(_) => "struct".into(),
        Dictionary(k, v) => format!("dict:{}:{}:false", logical_type(v)?, logical_type(k)?),
        List(f) => match f.data_type() {
            Struct(_) => "list.struct".into(),
            _ => "list".into(),
        },
        LargeList(f) => match f.data_type() {
            Struct(_) => "large_list.struct".into(),
            _ => "large_list".into(),
        },
        FixedSizeList(f, n) => {
            if is_bfloat16(f) {
                format!("fixed_size_list:{BFLOAT16_EXT}:{n}")
            } else {
                format!("fixed_size_list:{}:{n}", logical_type(f.data_type())?)
            }
        }
        FixedSizeBinary(n) => format!("fixed_size_binary:{n}"),
        Map(_, _) => "map".into(),
        other => {
            return Err(FormatError::UnsupportedType {
                logical_type: other.to_string(),
                detail: "Lance files cannot store this Arrow type".into(),
            })
        }
    })
}

fn push(f: &Field, parent: i32, next_id: &mut i32, out: &mut Vec<pb::file::Field>) -> Result<()> {
    let id = *next_id;
    *next_id += 1;
    if super::blob_v2::is_write_field(f) {
        out.extend(super::blob_v2::pb_fields(f, id, parent));
        return Ok(());
    }
    let mut metadata: std::collections::BTreeMap<String, Vec<u8>> = Default::default();
    let mut extension_name = String::new();
    // Like the reference writer, extension keys stay in the metadata and the name is
    // also recorded as the field's extension name.
    for (k, v) in f.metadata() {
        if k == ARROW_EXT_NAME {
            extension_name = v.clone();
        }
        metadata.insert(k.clone(), v.clone().into_bytes());
    }
    let encoding = match f.data_type() {
        DataType::Struct(_) => pb::file::Encoding::None,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary => {
            pb::file::Encoding::VarBinary
        }
        _ => pb::file::Encoding::Plain,
    };
    out.push(pb::file::Field {
        r#type: 0,
        name: f.name().clone(),
        id,
        parent_id: parent,
        // a stored JSON column is `json` (its storage, large_binary, is implied)
        logical_type: if crate::json::is_jsonb_field(f) {
            crate::json::JSON_LOGICAL_TYPE.to_string()
        } else {
            logical_type(f.data_type())?
        },
        nullable: f.is_nullable(),
        encoding: encoding as i32,
        dictionary: None,
        extension_name,
        metadata,
        unenforced_primary_key: false,
    });
    match f.data_type() {
        DataType::Struct(children) => {
            for c in children {
                push(c, id, next_id, out)?;
            }
        }
        DataType::List(c) | DataType::LargeList(c) | DataType::Map(c, _) => {
            push(c, id, next_id, out)?;
        }
        // a fixed-size list of structs records its item field (pylance 14, 2.2)
        DataType::FixedSizeList(c, _) if matches!(c.data_type(), DataType::Struct(_)) => {
            push(c, id, next_id, out)?;
        }
        _ => {}
    }
    Ok(())
}

/// The flat protobuf field list of `schema`.
pub fn pb_fields(schema: &Schema) -> Result<Vec<pb::file::Field>> {
    let mut out = Vec::new();
    let mut next = 0;
    for f in schema.fields() {
        push(f, -1, &mut next, &mut out)?;
    }
    Ok(out)
}

/// The protobuf schema of `schema` (with its metadata).
pub fn pb_schema(schema: &Schema) -> Result<pb::file::Schema> {
    Ok(pb::file::Schema {
        fields: pb_fields(schema)?,
        metadata: schema
            .metadata()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone().into_bytes()))
            .collect(),
    })
}

/// The protobuf schema of `schema` with its field ids replaced by `ids`, given in the
/// fields' pre-order (each field, then its children) — the ids a dataset's manifest
/// assigned, which its data files must carry.
pub fn pb_schema_with_ids(schema: &Schema, ids: &[i32]) -> Result<pb::file::Schema> {
    let mut pb = pb_schema(schema)?;
    // a blob v2 column's descriptor fields carry no id (-1 / -1) and keep none
    let numbered = pb.fields.iter().filter(|f| f.id >= 0).count();
    if ids.len() != numbered {
        return Err(FormatError::OutOfRange {
            what: format!(
                "{} field ids for a schema of {} fields (with children)",
                ids.len(),
                numbered
            ),
        });
    }
    // pb_fields numbers the fields 0.. in pre-order: each old id is an index into `ids`.
    let map = |old: i32| -> Result<i32> {
        usize::try_from(old)
            .ok()
            .and_then(|i| ids.get(i).copied())
            .ok_or_else(|| FormatError::corrupt(format!("field id {old} out of range")))
    };
    for f in pb.fields.iter_mut().filter(|f| f.id >= 0) {
        f.id = map(f.id)?;
        if f.parent_id >= 0 {
            f.parent_id = map(f.parent_id)?;
        }
    }
    Ok(pb)
}

/// The Lance schema (tree) of `schema`, as a reader would see it.
pub fn lance_schema(schema: &Schema) -> Result<LanceSchema> {
    LanceSchema::from_pb(&pb_schema(schema)?)
}

/// Top-level Lance fields of `schema`.
pub fn lance_fields(schema: &Schema) -> Result<Vec<LanceField>> {
    Ok(lance_schema(schema)?.fields)
}
