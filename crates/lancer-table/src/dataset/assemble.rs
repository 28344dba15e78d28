//! Columns as the dataset's schema names them, from what data files store.
//!
//! A data file records the schema it was written with; the dataset's schema may have
//! moved on without rewriting it (reference "Data Evolution", lines ~3686–6486 of the
//! table-format guide): a nested field renamed or made non-nullable changes only the
//! manifest, and a nested field cast to another type (pylance's `alter_columns` with
//! `data_type` on `s.a`) gets a new field id stored in a new data file, so one struct's
//! fields live in several files of a fragment. [`conform`] gives an array read from a
//! file the dataset's exact type (names, nullability, metadata of nested fields);
//! [`across_files`] puts a struct together from the files that hold its fields, by
//! field id (a field no file holds reads as null, as the reference reads it).

use std::sync::Arc;

use arrow_array::{Array, ArrayRef, StructArray};
use arrow_data::ArrayData;
use arrow_schema::DataType;
use lancer_format::schema::LanceField;

use crate::{Result, TableError};

/// `a` with the exact type `dt`, when the two differ only in nested fields' names,
/// nullability or metadata; a real type difference is an error naming both.
pub(crate) fn conform(a: ArrayRef, dt: &DataType, column: &str) -> Result<ArrayRef> {
    if a.data_type() == dt {
        return Ok(a);
    }
    let data = conform_data(a.to_data(), dt).map_err(|why| {
        TableError::corrupt(format!(
            "column {column:?}: a data file stores {}, the dataset's schema says {dt} ({why})",
            a.data_type()
        ))
    })?;
    Ok(arrow_array::make_array(data))
}

fn conform_data(d: ArrayData, dt: &DataType) -> std::result::Result<ArrayData, String> {
    if d.data_type() == dt {
        return Ok(d);
    }
    let children: Vec<&DataType> = match (d.data_type(), dt) {
        (DataType::Struct(a), DataType::Struct(b)) if a.len() == b.len() => {
            b.iter().map(|f| f.data_type()).collect()
        }
        (DataType::List(_), DataType::List(f))
        | (DataType::LargeList(_), DataType::LargeList(f))
        | (DataType::Map(_, _), DataType::Map(f, _)) => vec![f.data_type()],
        (DataType::FixedSizeList(_, n), DataType::FixedSizeList(f, m)) if n == m => {
            vec![f.data_type()]
        }
        (from, to) => return Err(format!("{from} is not {to}")),
    };
    if children.len() != d.child_data().len() {
        return Err(format!(
            "{} children stored, {} expected",
            d.child_data().len(),
            children.len()
        ));
    }
    let kids = d
        .child_data()
        .iter()
        .zip(children)
        .map(|(c, t)| conform_data(c.clone(), t))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    d.into_builder()
        .data_type(dt.clone())
        .child_data(kids)
        .build()
        .map_err(|e| e.to_string())
}

/// The column `a` as data file field `flf` stores it, cut to the dataset's field `lf`
/// (type `dt`): nested fields are matched by id at any depth, so fields the dataset
/// dropped since the file was written (pylance's `drop_columns(["s.a"])`) are left
/// out and fields it added later read as nulls; then [`conform`] for names and
/// nullability.
pub(crate) fn project(
    flf: &LanceField,
    a: ArrayRef,
    lf: &LanceField,
    dt: &DataType,
) -> Result<ArrayRef> {
    let mut have = Vec::new();
    subtree(flf, &mut have);
    let mut want = Vec::new();
    subtree(lf, &mut want);
    if have == want || a.data_type() == dt {
        return conform(a, dt, &lf.name);
    }
    let n = a.len();
    let bad = |why: String| {
        TableError::corrupt(format!(
            "column {:?}: a data file stores {}, the dataset's schema says {dt} ({why})",
            lf.name,
            a.data_type()
        ))
    };
    match (dt, a.data_type()) {
        (DataType::Struct(fields), DataType::Struct(_)) if lf.children.len() == fields.len() => {
            let sa = a
                .as_any()
                .downcast_ref::<StructArray>()
                .ok_or_else(|| bad("not a struct array".into()))?;
            let mut children = Vec::with_capacity(fields.len());
            for (c, cf) in lf.children.iter().zip(fields.iter()) {
                let stored = flf.children.iter().position(|fc| fc.id == c.id);
                children.push(match stored {
                    Some(k) if k < sa.num_columns() => {
                        project(&flf.children[k], sa.column(k).clone(), c, cf.data_type())?
                    }
                    _ => arrow_array::new_null_array(cf.data_type(), n),
                });
            }
            let built =
                StructArray::try_new_with_length(fields.clone(), children, sa.nulls().cloned(), n)
                    .map_err(|e| bad(e.to_string()))?;
            Ok(Arc::new(built))
        }
        (
            DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _),
            DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..),
        ) if lf.children.len() == 1 && flf.children.len() == 1 => {
            let d = a.to_data();
            let [values] = d.child_data() else {
                return Err(bad("a list without its values".into()));
            };
            let values = project(
                &flf.children[0],
                arrow_array::make_array(values.clone()),
                &lf.children[0],
                f.data_type(),
            )?;
            // the file's list type around the projected values; conform names it after
            let item = |f: &arrow_schema::FieldRef| {
                Arc::new(
                    f.as_ref()
                        .clone()
                        .with_data_type(values.data_type().clone()),
                )
            };
            let list_type = match a.data_type() {
                DataType::List(f) => DataType::List(item(f)),
                DataType::LargeList(f) => DataType::LargeList(item(f)),
                DataType::FixedSizeList(f, k) => DataType::FixedSizeList(item(f), *k),
                other => other.clone(),
            };
            let rebuilt = d
                .into_builder()
                .data_type(list_type)
                .child_data(vec![values.to_data()])
                .build()
                .map_err(|e| bad(e.to_string()))?;
            conform(arrow_array::make_array(rebuilt), dt, &lf.name)
        }
        _ => conform(a, dt, &lf.name),
    }
}

fn subtree(f: &LanceField, out: &mut Vec<i32>) {
    out.push(f.id);
    f.children.iter().for_each(|c| subtree(c, out));
}

/// Column `lf` (dataset type `dt`, `rows` rows) from `parts`: each the column as one
/// data file stores it (that file's field, with its ids, and the array read). Fields
/// are matched by id; a struct whose fields are in several parts is rebuilt field by
/// field, its validity taken from the first part (the files were written from the
/// same rows).
pub(crate) fn across_files(
    lf: &LanceField,
    dt: &DataType,
    parts: &[(LanceField, ArrayRef)],
    rows: u64,
) -> Result<ArrayRef> {
    let mut want = Vec::new();
    subtree(lf, &mut want);
    // one part holding the whole field under the same id: it is the column
    for (flf, a) in parts {
        if flf.id != lf.id {
            continue;
        }
        let mut have = Vec::new();
        subtree(flf, &mut have);
        if want.iter().all(|id| have.contains(id)) {
            return project(flf, a.clone(), lf, dt);
        }
    }
    let DataType::Struct(arrow_fields) = dt else {
        if parts.is_empty() {
            let n = usize::try_from(rows)
                .map_err(|_| TableError::corrupt("row count does not fit in memory"))?;
            return Ok(arrow_array::new_null_array(dt, n));
        }
        return Err(TableError::invalid(format!(
            "field {:?} ({dt}) is stored in pieces across data files; Lancer puts only structs together from several files",
            lf.name
        )));
    };
    if lf.children.len() != arrow_fields.len() {
        return Err(TableError::corrupt(format!(
            "struct {:?}: {} fields in the manifest, {} in its type",
            lf.name,
            lf.children.len(),
            arrow_fields.len()
        )));
    }
    let mut validity = None;
    let mut children = Vec::with_capacity(arrow_fields.len());
    for (c, cf) in lf.children.iter().zip(arrow_fields.iter()) {
        let mut ids = Vec::new();
        subtree(c, &mut ids);
        let mut sub = Vec::new();
        for (flf, a) in parts {
            let Some(sa) = a.as_any().downcast_ref::<StructArray>() else {
                continue;
            };
            if validity.is_none() {
                validity = Some(sa.nulls().cloned());
            }
            for (k, fc) in flf.children.iter().enumerate() {
                let mut fids = Vec::new();
                subtree(fc, &mut fids);
                if fids.iter().any(|id| ids.contains(id)) && k < sa.num_columns() {
                    sub.push((fc.clone(), sa.column(k).clone()));
                }
            }
        }
        children.push(across_files(c, cf.data_type(), &sub, rows)?);
    }
    let n = usize::try_from(rows)
        .map_err(|_| TableError::corrupt("row count does not fit in memory"))?;
    if let Some(bad) = children.iter().find(|c| c.len() != n) {
        return Err(TableError::corrupt(format!(
            "struct {:?}: a data file gave {} rows of a field, the fragment {n}",
            lf.name,
            bad.len()
        )));
    }
    let built =
        StructArray::try_new_with_length(arrow_fields.clone(), children, validity.flatten(), n)
            .map_err(|e| TableError::corrupt(format!("struct {:?}: {e}", lf.name)))?;
    Ok(Arc::new(built))
}
