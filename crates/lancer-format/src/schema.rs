//! The schema stored in Lance files and manifests, and its mapping to Arrow.
//!
//! Lance stores a schema as a flat, pre-order list of fields; children name their
//! parent by `parent_id` (-1 for top-level fields). Types are strings ("logical
//! types"), e.g. `int64`, `large_string`, `timestamp:us:UTC`, `decimal:128:12:2`,
//! `fixed_size_list:float:128`, `dict:string:int32:false`, `list`, `list.struct`,
//! `struct`, `map`. Spec: "Table format" → schema, and the Lance logical type table.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields, Schema, TimeUnit};

use crate::pb;
use crate::{FormatError, Result};

/// Arrow extension-name metadata key.
pub const ARROW_EXT_NAME: &str = "ARROW:extension:name";
/// Arrow extension-metadata key.
pub const ARROW_EXT_META: &str = "ARROW:extension:metadata";
/// Lance's bfloat16 extension name.
pub const BFLOAT16_EXT: &str = "lance.bfloat16";
/// Field metadata asking for packed-struct encoding.
pub const PACKED_KEY: &str = "lance-encoding:packed";
/// Legacy packed-struct key.
pub const PACKED_KEY_LEGACY: &str = "packed";
/// Field metadata marking a blob column.
pub const BLOB_KEY: &str = "lance-encoding:blob";
/// The extension name of blob v2 columns (file format 2.2; reference "Blob Columns",
/// lines ~6700–7160). The manifest keeps the logical shape the writer was given
/// (`struct<data: large_binary, uri: utf8[, position, size]>`); a data file stores a
/// packed descriptor per row, `struct<kind: u8, position: u64, size: u64, blob_id: u32,
/// blob_uri: utf8>`, and the payload elsewhere (see `lancer_table::blob`). A dataset
/// reads such a column as its payloads, `large_binary`.
pub const BLOB_V2_EXT: &str = "lance.blob.v2";

/// One field of a Lance schema, with its children attached.
#[derive(Debug, Clone, PartialEq)]
pub struct LanceField {
    /// Field id (unique within a dataset's schema).
    pub id: i32,
    /// Parent field id, -1 for top-level fields.
    pub parent_id: i32,
    /// Name.
    pub name: String,
    /// The logical type string.
    pub logical_type: String,
    /// Nullable flag.
    pub nullable: bool,
    /// Extension type name, if any.
    pub extension_name: String,
    /// Field metadata.
    pub metadata: HashMap<String, String>,
    /// Child fields.
    pub children: Vec<LanceField>,
    /// The Arrow type this field maps to.
    pub data_type: DataType,
}

impl LanceField {
    /// The Arrow field for this Lance field.
    pub fn to_arrow(&self) -> Field {
        let mut md = self.metadata.clone();
        if self.is_blob_v2() {
            // The payloads: marked as a blob column, without the extension name (it
            // names pylance's struct-shaped extension type, not these bytes).
            md.remove(ARROW_EXT_NAME);
            md.remove(ARROW_EXT_META);
            md.insert(BLOB_KEY.into(), "true".into());
        } else if !self.extension_name.is_empty() {
            md.insert(ARROW_EXT_NAME.into(), self.extension_name.clone());
            md.entry(ARROW_EXT_META.into()).or_default();
        }
        Field::new(&self.name, self.data_type.clone(), self.nullable).with_metadata(md)
    }

    /// True if the field asks for packed-struct encoding.
    pub fn is_packed_struct(&self) -> bool {
        matches!(self.data_type, DataType::Struct(_))
            && self
                .metadata
                .get(PACKED_KEY)
                .or_else(|| self.metadata.get(PACKED_KEY_LEGACY))
                .is_some_and(|v| !v.eq_ignore_ascii_case("false"))
    }

    /// True if the field is a blob column.
    pub fn is_blob(&self) -> bool {
        self.metadata.contains_key(BLOB_KEY)
    }

    /// True if the field is a blob v2 column (its data files hold descriptors).
    pub fn is_blob_v2(&self) -> bool {
        self.extension_name == BLOB_V2_EXT
    }
}

/// A Lance schema: top-level fields with children attached, plus schema metadata.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LanceSchema {
    /// Top-level fields.
    pub fields: Vec<LanceField>,
    /// Schema metadata.
    pub metadata: HashMap<String, String>,
}

fn bytes_map(m: &std::collections::BTreeMap<String, Vec<u8>>) -> HashMap<String, String> {
    m.iter()
        .map(|(k, v)| (k.clone(), String::from_utf8_lossy(v).into_owned()))
        .collect()
}

impl LanceSchema {
    /// Builds the tree from the flat protobuf field list.
    pub fn from_pb(schema: &pb::file::Schema) -> Result<Self> {
        Self::from_pb_fields(&schema.fields, bytes_map(&schema.metadata))
    }

    /// Builds the tree from a flat protobuf field list.
    pub fn from_pb_fields(
        fields: &[pb::file::Field],
        metadata: HashMap<String, String>,
    ) -> Result<Self> {
        if fields.len() > 1 << 20 {
            return Err(FormatError::corrupt(format!(
                "schema has {} fields",
                fields.len()
            )));
        }
        let attached = attach_blob_descriptors(fields);
        let fields = attached.as_ref();
        // Children of each parent id, in stored order.
        let mut by_parent: HashMap<i32, Vec<&pb::file::Field>> = HashMap::new();
        for f in fields {
            by_parent.entry(f.parent_id).or_default().push(f);
        }
        let mut visiting = Vec::new();
        let top = by_parent.get(&-1).cloned().unwrap_or_default();
        let fields = top
            .into_iter()
            .map(|f| build_field(f, &by_parent, &mut visiting))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self { fields, metadata })
    }

    /// The Arrow schema.
    pub fn to_arrow(&self) -> Schema {
        Schema::new(self.fields.iter().map(|f| f.to_arrow()).collect::<Vec<_>>())
            .with_metadata(self.metadata.clone())
    }

    /// Index of a top-level field by name.
    pub fn field_index(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }
}

/// A 2.2 data file holding a blob v2 column lists the column as a packed struct with
/// the blob marker and no children, followed by its descriptor's five fields with
/// neither an id nor a parent (-1 / -1); the file has one column for all of them
/// (pylance 14). Those fields become the struct's children here, under ids no real field
/// uses (below every valid id), so the file's columns and schema agree.
fn attach_blob_descriptors(fields: &[pb::file::Field]) -> std::borrow::Cow<'_, [pb::file::Field]> {
    if !fields.iter().any(|f| f.id == -1 && f.parent_id == -1) {
        return std::borrow::Cow::Borrowed(fields);
    }
    let parents: std::collections::HashSet<i32> = fields.iter().map(|f| f.parent_id).collect();
    let mut out: Vec<pb::file::Field> = Vec::with_capacity(fields.len());
    let mut owner: Option<i32> = None;
    let mut next_id = i32::MIN;
    for f in fields {
        if f.id == -1 && f.parent_id == -1 {
            if let Some(parent) = owner {
                let mut c = f.clone();
                c.id = next_id;
                c.parent_id = parent;
                next_id = next_id.saturating_add(1);
                out.push(c);
                continue;
            }
        }
        owner = None;
        let blob = f.metadata.contains_key(BLOB_KEY);
        if blob && f.logical_type == "struct" && !parents.contains(&f.id) {
            owner = Some(f.id);
        }
        out.push(f.clone());
    }
    std::borrow::Cow::Owned(out)
}

fn build_field(
    f: &pb::file::Field,
    by_parent: &HashMap<i32, Vec<&pb::file::Field>>,
    visiting: &mut Vec<i32>,
) -> Result<LanceField> {
    if visiting.contains(&f.id) || visiting.len() > 64 {
        return Err(FormatError::corrupt(format!(
            "schema field {} ({:?}) is nested in itself or too deeply",
            f.id, f.name
        )));
    }
    visiting.push(f.id);
    let children = if f.id == f.parent_id {
        Vec::new()
    } else {
        by_parent
            .get(&f.id)
            .map(|cs| {
                cs.iter()
                    .map(|c| build_field(c, by_parent, visiting))
                    .collect::<Result<Vec<_>>>()
            })
            .transpose()?
            .unwrap_or_default()
    };
    visiting.pop();
    let metadata = bytes_map(&f.metadata);
    let data_type = arrow_type(&f.logical_type, &f.extension_name, &children)?;
    Ok(LanceField {
        id: f.id,
        parent_id: f.parent_id,
        name: f.name.clone(),
        logical_type: f.logical_type.clone(),
        nullable: f.nullable,
        extension_name: f.extension_name.clone(),
        metadata,
        children,
        data_type,
    })
}

fn time_unit(s: &str, lt: &str) -> Result<TimeUnit> {
    match s {
        "s" => Ok(TimeUnit::Second),
        "ms" => Ok(TimeUnit::Millisecond),
        "us" => Ok(TimeUnit::Microsecond),
        "ns" => Ok(TimeUnit::Nanosecond),
        _ => Err(bad_type(lt, "unknown time unit")),
    }
}

fn bad_type(lt: &str, detail: &str) -> FormatError {
    FormatError::UnsupportedType {
        logical_type: lt.to_string(),
        detail: detail.to_string(),
    }
}

/// Maps a primitive logical type string (no children) to an Arrow type.
pub fn primitive_type(lt: &str) -> Result<DataType> {
    use DataType::*;
    Ok(match lt {
        "null" => Null,
        "bool" => Boolean,
        "int8" => Int8,
        "uint8" => UInt8,
        "int16" => Int16,
        "uint16" => UInt16,
        "int32" => Int32,
        "uint32" => UInt32,
        "int64" => Int64,
        "uint64" => UInt64,
        "halffloat" => Float16,
        "float" => Float32,
        "double" => Float64,
        "string" => Utf8,
        "binary" => Binary,
        "large_string" => LargeUtf8,
        "large_binary" | "json" => LargeBinary,
        "date32:day" => Date32,
        "date64:ms" => Date64,
        _ => {
            let parts: Vec<&str> = lt.splitn(3, ':').collect();
            match parts.as_slice() {
                ["time32", u] => Time32(time_unit(u, lt)?),
                ["time64", u] => Time64(time_unit(u, lt)?),
                ["duration", u] => Duration(time_unit(u, lt)?),
                ["timestamp", u, tz] => Timestamp(
                    time_unit(u, lt)?,
                    if *tz == "-" { None } else { Some((*tz).into()) },
                ),
                ["fixed_size_binary", n] => FixedSizeBinary(
                    n.parse()
                        .map_err(|_| bad_type(lt, "bad fixed_size_binary width"))?,
                ),
                ["decimal", bits, rest] => {
                    let (p, s) = rest
                        .split_once(':')
                        .ok_or_else(|| bad_type(lt, "expected decimal:bits:precision:scale"))?;
                    let p: u8 = p.parse().map_err(|_| bad_type(lt, "bad precision"))?;
                    let s: i8 = s.parse().map_err(|_| bad_type(lt, "bad scale"))?;
                    match *bits {
                        "128" => Decimal128(p, s),
                        "256" => Decimal256(p, s),
                        _ => return Err(bad_type(lt, "decimal width must be 128 or 256")),
                    }
                }
                ["fixed_size_list", ..] => {
                    let (inner, n) = lt["fixed_size_list:".len()..]
                        .rsplit_once(':')
                        .ok_or_else(|| bad_type(lt, "expected fixed_size_list:type:size"))?;
                    let n: i32 = n
                        .parse()
                        .ok()
                        .filter(|&n| n > 0)
                        .ok_or_else(|| bad_type(lt, "bad fixed_size_list size"))?;
                    if inner == "struct" {
                        return Err(bad_type(
                            lt,
                            "a fixed-size list of structs needs its item field",
                        ));
                    }
                    let item = if inner == BFLOAT16_EXT {
                        Field::new("item", FixedSizeBinary(2), true).with_metadata(
                            [
                                (ARROW_EXT_NAME.to_string(), BFLOAT16_EXT.to_string()),
                                (ARROW_EXT_META.to_string(), String::new()),
                            ]
                            .into(),
                        )
                    } else {
                        Field::new("item", primitive_type(inner)?, true)
                    };
                    FixedSizeList(Arc::new(item), n)
                }
                ["dict", ..] => {
                    let p: Vec<&str> = lt.split(':').collect();
                    if p.len() != 4 {
                        return Err(bad_type(lt, "expected dict:value:index:ordered"));
                    }
                    Dictionary(
                        Box::new(primitive_type(p[2])?),
                        Box::new(primitive_type(p[1])?),
                    )
                }
                _ => return Err(bad_type(lt, "unknown Lance logical type")),
            }
        }
    })
}

fn arrow_type(lt: &str, ext: &str, children: &[LanceField]) -> Result<DataType> {
    if ext == BLOB_V2_EXT {
        return Ok(DataType::LargeBinary);
    }
    let child_fields = || Fields::from(children.iter().map(|c| c.to_arrow()).collect::<Vec<_>>());
    let single_child = || -> Result<Field> {
        match children {
            [c] => Ok(c.to_arrow()),
            _ => Err(bad_type(
                lt,
                &format!("expected exactly one child field, found {}", children.len()),
            )),
        }
    };
    Ok(match lt {
        "struct" => DataType::Struct(child_fields()),
        "list" | "list.struct" => DataType::List(Arc::new(single_child()?)),
        "large_list" | "large_list.struct" => DataType::LargeList(Arc::new(single_child()?)),
        // pylance 14 (2.2 files): a fixed-size list of structs, its item field the child
        _ if lt.starts_with("fixed_size_list:struct:") => {
            let n: i32 = lt["fixed_size_list:struct:".len()..]
                .parse()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| bad_type(lt, "bad fixed_size_list size"))?;
            let item = single_child()?;
            if !matches!(item.data_type(), DataType::Struct(_)) {
                return Err(bad_type(
                    lt,
                    "the item field of a fixed-size list of structs is not a struct",
                ));
            }
            DataType::FixedSizeList(Arc::new(item), n)
        }
        "map" => {
            let entries = single_child()?;
            if !matches!(entries.data_type(), DataType::Struct(f) if f.len() == 2) {
                return Err(bad_type(
                    lt,
                    "map entries must be a struct of key and value",
                ));
            }
            DataType::Map(Arc::new(entries), false)
        }
        _ => primitive_type(lt)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_size_lists_of_structs_need_their_item_field() {
        let e = primitive_type("fixed_size_list:struct:2").unwrap_err();
        assert!(matches!(e, FormatError::UnsupportedType { .. }), "{e}");
        assert!(e.to_string().contains("item field"), "{e}");
        assert_eq!(
            primitive_type("fixed_size_list:float:4").ok(),
            Some(DataType::FixedSizeList(
                Arc::new(Field::new("item", DataType::Float32, true)),
                4
            ))
        );
    }
}
