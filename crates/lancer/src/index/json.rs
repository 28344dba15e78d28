//! JSON path indexes: pylance 14's `create_scalar_index(col, IndexConfig(index_type="json",
//! parameters={"target_index_type": "btree", "path": "x"}))` (reference: JSON guide
//! "JSON Indexing", lines ~8676–8745; `JsonIndexDetails` in `protos/index.proto`).
//!
//! The first value the JSONPath selects in each row is indexed by a BTREE or BITMAP
//! written exactly as on a plain column (`page_data.lance` / `page_lookup.lance`, or
//! `bitmap_page_lookup.lance`); the manifest entry's details are a `JsonIndexDetails`
//! (the path as given, the target's details inside, type URL
//! [`lancer_index::scalar::JSON_TYPE_URL`]). The values' type is the JSON type of the
//! first non-null value in dataset order, as pylance infers it: integers → Int64,
//! other numbers → Float64 (integers after it widen), strings → Utf8, booleans →
//! Boolean, no value at all → Utf8; a later value of another type, an array or an
//! object is refused naming the row, as pylance 14 refuses them.
//!
//! Filters reach the index only through the four typed accessors
//! (`json_get_int / _float / _bool / _string(col, '<path>')`, the path literal equal to
//! the indexed one and the accessor's type the index's), as since v13, and answer as
//! pylance's do: exactly, from the index. For a plain key (`x`) that is a scan's
//! answer; for a path in JSONPath syntax (`$.a.b`) it is not — the accessor reads the
//! key `$.a.b`, which a scan finds in no document — and, as in pylance, the index's
//! rows (those whose `a.b` matches) are the answer. A filter that also needs a recheck
//! (a conjunct no index answers) evaluates the accessor as a scan would.

use std::sync::Arc;

use arrow_array::builder::{BooleanBuilder, Float64Builder, Int64Builder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::{Array, ArrayRef, LargeBinaryArray, RecordBatch, UInt8Array};
use arrow_schema::{DataType, Field, Schema};
use lancer_index::scalar::build::{BuiltScalar, ScalarBuilder, ScalarParams};
use lancer_index::scalar::{ScalarKind, JSON_TYPE_URL};

use crate::scan::{BatchMap, DatasetExt, ROW_ADDRESS, ROW_ID};
use crate::{Dataset, Error, Result};

/// The index kinds a JSON path index can hold in Lancer (pylance 14 builds BLOOMFILTER
/// targets too; a bloom filter does not record its values' type, which a query's
/// accessor must match for its hashes to, so Lancer neither builds nor uses those).
pub const TARGETS: [ScalarKind; 3] = [ScalarKind::BTree, ScalarKind::Bitmap, ScalarKind::ZoneMap];

fn invalid(what: impl Into<String>) -> Error {
    Error::InvalidArgument { what: what.into() }
}

/// Refuses a target pylance or Lancer does not build over JSON path values.
pub fn check_target(name: &str) -> Result<ScalarKind> {
    if name.eq_ignore_ascii_case("inverted") || name.eq_ignore_ascii_case("fts") {
        return Err(invalid(format!(
            "JSON path indexes do not support target index type {name:?}; create an \
             INVERTED index directly on the JSON column instead"
        )));
    }
    match ScalarKind::parse(name) {
        Some(k) if TARGETS.contains(&k) => Ok(k),
        _ => Err(invalid(format!(
            "target_index_type {name:?} of a JSON path index: Lancer builds \"btree\", \
             \"bitmap\" or \"zonemap\" over a JSON path's values"
        ))),
    }
}

/// JSON types of selected values (pylance's `JsonbType` names, for messages); the
/// discriminant is the tag the scan's map hands on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum JsonType {
    Null,
    Boolean,
    Int64,
    Float64,
    String,
    Array,
    Object,
}

impl JsonType {
    const ALL: [JsonType; 7] = [
        Self::Null,
        Self::Boolean,
        Self::Int64,
        Self::Float64,
        Self::String,
        Self::Array,
        Self::Object,
    ];

    /// The type a tag names (tags are this module's own, made by `as u8`).
    fn from_tag(tag: u8) -> Self {
        Self::ALL
            .get(usize::from(tag))
            .copied()
            .unwrap_or(Self::Null)
    }

    fn of(v: &lance_jsonb::OwnedJsonb) -> Self {
        let r = v.as_raw();
        if r.is_null().unwrap_or(false) {
            Self::Null
        } else if r.is_boolean().unwrap_or(false) {
            Self::Boolean
        } else if r.is_number().unwrap_or(false) {
            // an exact integer (pylance 14: 10.5 is Float64, 10 Int64)
            if r.is_i64().unwrap_or(false) {
                Self::Int64
            } else {
                Self::Float64
            }
        } else if r.is_string().unwrap_or(false) {
            Self::String
        } else if r.is_array().unwrap_or(false) {
            Self::Array
        } else if r.is_object().unwrap_or(false) {
            Self::Object
        } else {
            Self::String
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Null => "Null",
            Self::Boolean => "Boolean",
            Self::Int64 => "Int64",
            Self::Float64 => "Float64",
            Self::String => "String",
            Self::Array => "Array",
            Self::Object => "Object",
        }
    }

    fn arrow(self) -> DataType {
        match self {
            Self::Boolean => DataType::Boolean,
            Self::Int64 => DataType::Int64,
            Self::Float64 => DataType::Float64,
            _ => DataType::Utf8,
        }
    }
}

/// The columns the scan's map leaves per batch: each row's selected value (JSONB) and
/// its JSON type tag, then the row addresses (and ids).
fn selected_schema(store_ids: bool) -> Arc<Schema> {
    let mut f = vec![
        Field::new("value", DataType::LargeBinary, true),
        Field::new("tag", DataType::UInt8, false),
        Field::new(ROW_ADDRESS, DataType::UInt64, true),
    ];
    if store_ids {
        f.push(Field::new(ROW_ID, DataType::UInt64, true));
    }
    Arc::new(Schema::new(f))
}

/// Builds the JSON path index segment of `column` over `fragments` (all when None):
/// its files and the `JsonIndexDetails` bytes. `expect` is the value type of the
/// index's existing segments (an optimize), which new values must have.
pub(crate) fn build(
    ds: &Dataset,
    column: &str,
    fragments: Option<&[u64]>,
    params: &ScalarParams,
    store_ids: bool,
    expect: Option<DataType>,
) -> Result<BuiltScalar> {
    let path = params
        .json_path
        .clone()
        .ok_or_else(|| invalid("a JSON path index needs a path"))?;
    if !TARGETS.contains(&params.kind) {
        return Err(invalid(format!(
            "target_index_type {:?} of a JSON path index: Lancer builds \"btree\", \"bitmap\" or \"zonemap\"",
            params.kind.type_name()
        )));
    }
    let schema = selected_schema(store_ids);
    let (col, p) = (column.to_string(), path.clone());
    let out_schema = schema.clone();
    let select = move |b: RecordBatch| -> Result<RecordBatch> {
        let docs = b
            .column(0)
            .as_any()
            .downcast_ref::<LargeBinaryArray>()
            .ok_or_else(|| invalid(format!("column {col:?} is not stored as JSONB")))?;
        let found = crate::filter::json::select_first(docs, &col, &p).map_err(invalid)?;
        let tags: UInt8Array = found
            .iter()
            .map(|v| v.as_ref().map_or(JsonType::Null, JsonType::of) as u8)
            .collect();
        let values: LargeBinaryArray = found
            .iter()
            .map(|v| v.as_ref().map(|v| v.as_raw().as_ref().to_vec()))
            .collect();
        let mut cols: Vec<ArrayRef> = vec![Arc::new(values), Arc::new(tags)];
        cols.extend(b.columns()[1..].iter().cloned());
        Ok(RecordBatch::try_new(out_schema.clone(), cols)?)
    };
    let mut scan = ds
        .scan()
        .columns(&[column])
        .with_row_address(true)
        .with_row_id(store_ids)
        .map_batches(BatchMap {
            f: Arc::new(select),
            schema,
        });
    if let Some(f) = fragments {
        scan = scan.fragments(f);
    }
    // The type is the first non-null value's, in dataset order (pylance's inference):
    // the selected values are kept until it is known, then converted batch by batch.
    let mut batches = Vec::new();
    let mut first: Option<(JsonType, u64)> = None;
    for b in scan.stream()? {
        let b = b?;
        if first.is_none() {
            let tags = b.column(1).as_primitive::<arrow_array::types::UInt8Type>();
            let addrs = b.column(2).as_primitive::<UInt64Type>();
            first = (0..b.num_rows())
                .map(|i| (JsonType::from_tag(tags.value(i)), addrs.value(i)))
                .find(|(t, _)| *t != JsonType::Null);
        }
        batches.push(b);
    }
    if let Some((t @ (JsonType::Array | JsonType::Object), addr)) = first {
        return Err(invalid(format!(
            "cannot create a JSON index for JSON path '{path}' with JSON type {} (row \
             address {addr}); only scalar values are supported",
            t.name()
        )));
    }
    let inferred = first.map_or(JsonType::String, |f| f.0);
    let target = inferred.arrow();
    if let Some(e) = expect.filter(|e| *e != target) {
        return Err(invalid(format!(
            "JSON path '{path}' of the rows to add holds {} values, the index holds {e}; \
             drop the index and create it again (optimize_indices(retrain=True))",
            inferred.name()
        )));
    }
    let field = Field::new(column, target.clone(), true);
    let mut builder = ScalarBuilder::new(params.clone(), &field)?;
    for b in batches {
        let values = convert(&b, inferred, &path)?;
        let col = |i: usize| b.column(i).as_primitive::<UInt64Type>().values();
        let addrs = col(2);
        let ids = if store_ids { col(3) } else { addrs };
        builder.push(values, ids, addrs)?;
    }
    let mut built = builder.finish()?;
    built.details = lancer_index::scalar::json_details_bytes(
        &path,
        params.kind,
        std::mem::take(&mut built.details),
    );
    Ok(built)
}

/// The type URL a scalar segment built with `params` is recorded under.
pub(crate) fn type_url(params: &ScalarParams) -> &'static str {
    match params.json_path {
        Some(_) => JSON_TYPE_URL,
        None => params.kind.type_url(),
    }
}

/// A batch's selected values as an array of the index's type (`inferred`): a value of
/// another JSON type is refused naming its row, except integers under Float64.
fn convert(b: &RecordBatch, inferred: JsonType, path: &str) -> Result<ArrayRef> {
    let values = b.column(0).as_any().downcast_ref::<LargeBinaryArray>();
    let values = values.ok_or_else(|| invalid("selected JSON values lost their type"))?;
    let tags = b.column(1).as_primitive::<arrow_array::types::UInt8Type>();
    let addrs = b.column(2).as_primitive::<UInt64Type>();
    let n = b.num_rows();
    let refuse = |i: usize, t: JsonType| {
        invalid(format!(
            "JSON path '{path}' expected {}, but the row at address {} has JSON type {}; a \
             JSON path index holds values of one type",
            inferred.arrow(),
            addrs.value(i),
            t.name()
        ))
    };
    let raw = |i: usize| lance_jsonb::RawJsonb::new(values.value(i));
    let bad = |i: usize, e: lance_jsonb::Error| {
        invalid(format!(
            "JSON path '{path}' at row address {}: {e}",
            addrs.value(i)
        ))
    };
    let tag = |i: usize| JsonType::from_tag(tags.value(i));
    Ok(match inferred {
        JsonType::Int64 => {
            let mut o = Int64Builder::with_capacity(n);
            for i in 0..n {
                match tag(i) {
                    JsonType::Null => o.append_null(),
                    JsonType::Int64 => o.append_value(raw(i).to_i64().map_err(|e| bad(i, e))?),
                    t => return Err(refuse(i, t)),
                }
            }
            Arc::new(o.finish())
        }
        JsonType::Float64 => {
            let mut o = Float64Builder::with_capacity(n);
            for i in 0..n {
                match tag(i) {
                    JsonType::Null => o.append_null(),
                    JsonType::Int64 | JsonType::Float64 => {
                        o.append_value(raw(i).to_f64().map_err(|e| bad(i, e))?)
                    }
                    t => return Err(refuse(i, t)),
                }
            }
            Arc::new(o.finish())
        }
        JsonType::Boolean => {
            let mut o = BooleanBuilder::with_capacity(n);
            for i in 0..n {
                match tag(i) {
                    JsonType::Null => o.append_null(),
                    JsonType::Boolean => o.append_value(raw(i).to_bool().map_err(|e| bad(i, e))?),
                    t => return Err(refuse(i, t)),
                }
            }
            Arc::new(o.finish())
        }
        _ => {
            let mut o = StringBuilder::with_capacity(n, 0);
            for i in 0..n {
                match tag(i) {
                    JsonType::Null => o.append_null(),
                    JsonType::String => o.append_value(raw(i).to_str().map_err(|e| bad(i, e))?),
                    t => return Err(refuse(i, t)),
                }
            }
            Arc::new(o.finish())
        }
    })
}
