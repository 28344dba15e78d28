//! Data handed in for writing, made to fit the dataset it goes into.
//!
//! The reference accepts an append (or a merge source) whose columns come in another
//! order, whose nullable columns or struct fields are missing (written as nulls), whose
//! fixed-size lists name their item field differently (`element`, as Parquet does, for
//! `item`; a variable-size list's item must keep its name) and whose strings or binaries are Arrow view types (stored as `string` / `binary`:
//! Lance files have no view types); everything else must match the dataset's schema
//! exactly — a `large_string` for a `string`, an `int32` for an `int64`, an extra column,
//! nulls in a non-nullable field or a missing non-nullable column are refused (table
//! format guide, "Schema": the dataset's schema is the schema of every fragment).
//! [`conform_batch`] applies those rules; [`normalize_schema`] / [`normalize_batch`]
//! turn view types into the types Lance stores for a new dataset.

use std::sync::Arc;

use arrow_array::{make_array, Array, ArrayRef, RecordBatch, RecordBatchOptions, StructArray};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, Field, FieldRef, Fields, Schema, SchemaRef};

use crate::{Result, TableError};

/// `dt` with every view type replaced by the type Lance stores (`Utf8View` → `Utf8`,
/// `BinaryView` → `Binary`, list views → lists), at any depth.
pub fn normalize_type(dt: &DataType) -> DataType {
    let field = |f: &FieldRef| -> FieldRef { Arc::new(normalize_field(f)) };
    match dt {
        DataType::Utf8View => DataType::Utf8,
        DataType::BinaryView => DataType::Binary,
        DataType::List(f) | DataType::ListView(f) => DataType::List(field(f)),
        DataType::LargeList(f) | DataType::LargeListView(f) => DataType::LargeList(field(f)),
        DataType::FixedSizeList(f, n) => DataType::FixedSizeList(field(f), *n),
        DataType::Struct(fs) => DataType::Struct(fs.iter().map(field).collect()),
        DataType::Map(f, sorted) => DataType::Map(field(f), *sorted),
        DataType::Dictionary(k, v) => DataType::Dictionary(k.clone(), Box::new(normalize_type(v))),
        other => other.clone(),
    }
}

fn normalize_field(f: &Field) -> Field {
    // Arrow's JSON type (text) is stored as JSONB (`lancer_format::json`)
    lancer_format::json::storage_field(&f.clone().with_data_type(normalize_type(f.data_type())))
}

/// `schema` with view types replaced ([`normalize_type`]).
pub fn normalize_schema(schema: &Schema) -> SchemaRef {
    Arc::new(Schema::new_with_metadata(
        schema
            .fields()
            .iter()
            .map(|f| normalize_field(f))
            .collect::<Vec<_>>(),
        schema.metadata().clone(),
    ))
}

/// `batch` with view-typed columns cast to the types Lance stores.
pub fn normalize_batch(batch: RecordBatch) -> Result<RecordBatch> {
    let batch = lancer_format::json::to_storage(&batch)?;
    let schema = normalize_schema(&batch.schema());
    if schema.fields() == batch.schema().fields() {
        return Ok(batch);
    }
    let cols = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(c, f)| {
            if c.data_type() == f.data_type() {
                Ok(c.clone())
            } else {
                arrow_cast::cast(c, f.data_type()).map_err(TableError::from)
            }
        })
        .collect::<Result<Vec<_>>>()?;
    let opts = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    Ok(RecordBatch::try_new_with_options(schema, cols, &opts)?)
}

/// `batch` as a batch of exactly `target` (a dataset's schema): columns matched by
/// name, missing nullable ones filled with nulls; see the module docs for what is
/// refused (a user error naming the column, the data's type and the dataset's).
pub fn conform_batch(batch: &RecordBatch, target: &SchemaRef) -> Result<RecordBatch> {
    if batch.schema().fields() == target.fields() {
        return Ok(batch.clone());
    }
    json_columns_match(&batch.schema(), target)?;
    // JSON text (Arrow's JSON type) as the JSONB the dataset stores
    let batch = &lancer_format::json::to_storage(batch)?;
    let n = batch.num_rows();
    let source = batch.schema();
    let unexpected: Vec<&str> = source
        .fields()
        .iter()
        .filter(|f| target.field_with_name(f.name()).is_err())
        .map(|f| f.name().as_str())
        .collect();
    if !unexpected.is_empty() {
        return Err(TableError::invalid(format!(
            "the data has columns the dataset does not: {} (the dataset has {}); add them \
             to the dataset first (add_columns) or leave them out",
            unexpected.join(", "),
            names(target.fields())
        )));
    }
    let mut cols = Vec::with_capacity(target.fields().len());
    // a blob column may come as pylance's blob struct: kept so (the writer places it)
    let mut blob_structs = Vec::new();
    for tf in target.fields() {
        let col = match source.index_of(tf.name()) {
            Ok(k)
                if is_blob_target(tf)
                    && crate::blob::is_logical_blob_type(batch.column(k).data_type()) =>
            {
                check_blob_thresholds(source.field(k), tf)?;
                blob_structs.push(cols.len());
                batch.column(k).clone()
            }
            Ok(k) => conform_array(batch.column(k).clone(), tf, tf.name(), None)?,
            Err(_) if tf.is_nullable() => arrow_array::new_null_array(tf.data_type(), n),
            Err(_) => {
                return Err(TableError::invalid(format!(
                    "the data lacks column {:?}, which the dataset's schema marks not \
                     nullable: every row needs a value",
                    tf.name()
                )))
            }
        };
        cols.push(col);
    }
    let opts = RecordBatchOptions::new().with_row_count(Some(n));
    let schema = if blob_structs.is_empty() {
        target.clone()
    } else {
        let fields: Vec<Field> = target
            .fields()
            .iter()
            .enumerate()
            .map(|(i, f)| {
                if blob_structs.contains(&i) {
                    f.as_ref()
                        .clone()
                        .with_data_type(cols[i].data_type().clone())
                } else {
                    f.as_ref().clone()
                }
            })
            .collect();
        Arc::new(Schema::new_with_metadata(fields, target.metadata().clone()))
    };
    Ok(RecordBatch::try_new_with_options(schema, cols, &opts)?)
}

/// A dataset column that takes blob values (a blob column read as binary).
fn is_blob_target(f: &Field) -> bool {
    f.metadata().contains_key(lancer_format::schema::BLOB_KEY)
        && matches!(f.data_type(), DataType::Binary | DataType::LargeBinary)
}

/// Blob thresholds given with appended data must be the column's own (the reference
/// refuses others).
fn check_blob_thresholds(source: &Field, target: &Field) -> Result<()> {
    use crate::blob::{DEDICATED_THRESHOLD_KEY, INLINE_THRESHOLD_KEY, PACK_THRESHOLD_KEY};
    for key in [
        INLINE_THRESHOLD_KEY,
        DEDICATED_THRESHOLD_KEY,
        PACK_THRESHOLD_KEY,
    ] {
        if let Some(v) = source.metadata().get(key) {
            if target.metadata().get(key) != Some(v) {
                return Err(TableError::invalid(format!(
                    "blob column {:?}: the data sets {key} = {v}, the dataset {}: a blob \
                     column's thresholds are fixed when it is created; leave them out of \
                     appended data",
                    target.name(),
                    target
                        .metadata()
                        .get(key)
                        .map_or("the default".to_string(), |t| t.clone())
                )));
            }
        }
    }
    Ok(())
}

/// A JSON column of the dataset takes only JSON (Arrow's JSON type, or JSONB bytes
/// typed `lance.json`), and JSON only goes into a JSON column: as the reference, which
/// refuses a plain string or binary column for a JSON one (and the reverse) by name.
fn json_columns_match(source: &Schema, target: &Schema) -> Result<()> {
    use lancer_format::json::{is_jsonb_field, is_text_json_field};
    for sf in source.fields() {
        let Ok(tf) = target.field_with_name(sf.name()) else {
            continue;
        };
        let source_json = is_jsonb_field(sf) || is_text_json_field(sf);
        if is_jsonb_field(tf) != source_json {
            let (want, got) = if source_json {
                (tf.data_type().to_string(), "JSON".to_string())
            } else {
                ("JSON".to_string(), sf.data_type().to_string())
            };
            return Err(TableError::invalid(format!(
                "column {:?} is {want} in the dataset but {got} in the data: {}",
                sf.name(),
                if source_json {
                    "write it as the dataset's type"
                } else {
                    "hand JSON in as Arrow's JSON type (pyarrow's pa.json_())"
                }
            )));
        }
    }
    Ok(())
}

fn names(fields: &Fields) -> String {
    fields
        .iter()
        .map(|f| f.name().as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether `a` holds a null where `parent` (the enclosing struct's validity) is valid.
fn has_nulls_under(a: &dyn Array, parent: Option<&NullBuffer>) -> bool {
    let Some(nulls) = a.logical_nulls() else {
        return false;
    };
    match parent {
        None => nulls.null_count() > 0,
        Some(p) => nulls
            .iter()
            .zip(p.iter())
            .any(|(valid, parent_valid)| parent_valid && !valid),
    }
}

/// Column `path` of the data (`a`) as the dataset's field `to`; `parent` is the
/// validity of the enclosing struct (nulls under a null struct are allowed).
fn conform_array(
    a: ArrayRef,
    to: &Field,
    path: &str,
    parent: Option<&NullBuffer>,
) -> Result<ArrayRef> {
    let a = match normalize_type(a.data_type()) {
        t if &t == a.data_type() => a,
        t => arrow_cast::cast(&a, &t)?,
    };
    if !to.is_nullable() && has_nulls_under(a.as_ref(), parent) {
        return Err(TableError::invalid(format!(
            "column {path:?} holds nulls, but the dataset's schema marks it not nullable"
        )));
    }
    let want = to.data_type();
    if a.data_type() == want {
        return Ok(a);
    }
    let mismatch = || {
        TableError::invalid(format!(
            "column {path:?} is {} in the data but {want} in the dataset: cast it before \
             writing",
            a.data_type()
        ))
    };
    match (want, a.data_type()) {
        (DataType::Struct(tfs), DataType::Struct(sfs)) => {
            let sa = a
                .as_any()
                .downcast_ref::<StructArray>()
                .ok_or_else(mismatch)?;
            if let Some(extra) = sfs.iter().find(|f| tfs.find(f.name()).is_none()) {
                return Err(TableError::invalid(format!(
                    "struct column {path:?} has a field {:?} the dataset's does not (it \
                     has {})",
                    extra.name(),
                    names(tfs)
                )));
            }
            let n = sa.len();
            let mut children = Vec::with_capacity(tfs.len());
            for tf in tfs {
                let child_path = format!("{path}.{}", tf.name());
                children.push(match sfs.find(tf.name()) {
                    Some((k, _)) => {
                        conform_array(sa.column(k).clone(), tf, &child_path, sa.nulls())?
                    }
                    None if tf.is_nullable() => arrow_array::new_null_array(tf.data_type(), n),
                    None => {
                        return Err(TableError::invalid(format!(
                            "the data lacks field {child_path:?}, which the dataset's \
                             schema marks not nullable"
                        )))
                    }
                });
            }
            let built =
                StructArray::try_new_with_length(tfs.clone(), children, sa.nulls().cloned(), n)?;
            Ok(Arc::new(built))
        }
        // a list's item must keep its name (the reference compares it); a fixed-size
        // list's item may have any (it is stored as the dataset's)
        (DataType::List(tf), DataType::List(sf))
        | (DataType::LargeList(tf), DataType::LargeList(sf))
        | (DataType::Map(tf, _), DataType::Map(sf, _))
            if tf.name() == sf.name() =>
        {
            relist(&a, want, tf, path)
        }
        (DataType::FixedSizeList(tf, n), DataType::FixedSizeList(_, m)) if n == m => {
            relist(&a, want, tf, path)
        }
        _ => Err(mismatch()),
    }
}

/// A list (or map) `a` with its values conformed to the item field `tf` and the
/// dataset's type `want` (the item's name taken from the dataset).
fn relist(a: &ArrayRef, want: &DataType, tf: &FieldRef, path: &str) -> Result<ArrayRef> {
    let d = a.to_data();
    let [values] = d.child_data() else {
        return Err(TableError::invalid(format!(
            "column {path:?}: a list without its values"
        )));
    };
    let values = conform_array(
        make_array(values.clone()),
        tf,
        &format!("{path}.item"),
        None,
    )?;
    let rebuilt = d
        .into_builder()
        .data_type(want.clone())
        .child_data(vec![values.to_data()])
        .build()?;
    Ok(make_array(rebuilt))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{FixedSizeListArray, Float32Array, Int64Array, StringArray, StringViewArray};

    fn schema(fields: Vec<Field>) -> SchemaRef {
        Arc::new(Schema::new(fields))
    }

    #[test]
    fn reorders_fills_and_renames_items() -> Result<()> {
        let item = Arc::new(Field::new("item", DataType::Float32, true));
        let target = schema(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("s", DataType::Utf8, true),
            Field::new("v", DataType::FixedSizeList(item, 2), true),
        ]);
        let element = Arc::new(Field::new("element", DataType::Float32, true));
        let v = FixedSizeListArray::new(
            element.clone(),
            2,
            Arc::new(Float32Array::from(vec![1.0, 2.0])),
            None,
        );
        let data = RecordBatch::try_new(
            schema(vec![
                Field::new("v", DataType::FixedSizeList(element, 2), true),
                Field::new("id", DataType::Int64, true),
            ]),
            vec![Arc::new(v), Arc::new(Int64Array::from(vec![7]))],
        )?;
        let out = conform_batch(&data, &target)?;
        assert_eq!(out.schema(), target);
        assert_eq!(out.column(1).null_count(), 1);
        Ok(())
    }

    #[test]
    fn refuses_what_the_reference_refuses() -> Result<()> {
        let target = schema(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("s", DataType::Utf8, true),
        ]);
        let large = RecordBatch::try_new(
            schema(vec![Field::new("s", DataType::LargeUtf8, true)]),
            vec![Arc::new(arrow_array::LargeStringArray::from(vec!["a"]))],
        )?;
        // a large_string for a string, and the non-nullable id missing
        assert!(conform_batch(&large, &target).is_err());
        let nulls = RecordBatch::try_new(
            schema(vec![Field::new("id", DataType::Int64, true)]),
            vec![Arc::new(Int64Array::from(vec![None, Some(1)]))],
        )?;
        let e = conform_batch(&nulls, &target).err().map(|e| e.to_string());
        assert!(e.is_some_and(|e| e.contains("not nullable")));
        let extra = RecordBatch::try_new(
            schema(vec![
                Field::new("id", DataType::Int64, true),
                Field::new("x", DataType::Int64, true),
            ]),
            vec![
                Arc::new(Int64Array::from(vec![1])),
                Arc::new(Int64Array::from(vec![1])),
            ],
        )?;
        assert!(conform_batch(&extra, &target).is_err());
        // a string view is stored as a string
        let view = RecordBatch::try_new(
            schema(vec![
                Field::new("id", DataType::Int64, false),
                Field::new("s", DataType::Utf8View, true),
            ]),
            vec![
                Arc::new(Int64Array::from(vec![1])),
                Arc::new(StringViewArray::from(vec!["x"])),
            ],
        )?;
        let out = conform_batch(&view, &target)?;
        let s = out.column(1).as_any().downcast_ref::<StringArray>();
        assert_eq!(s.map(|s| s.value(0)), Some("x"));
        Ok(())
    }
}
