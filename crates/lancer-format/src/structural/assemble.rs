//! Assembly of a 2.1+ field from its leaf columns: the leaves' structural layers
//! (validity, list offsets) rebuild the field's Arrow array level by level (spec:
//! "Repetition and Definition Levels"); pages decoded one by one are concatenated
//! first. Fixed-size lists of structs are an item layer over `dimension` slots per row;
//! a legacy blob leaf read as descriptions is a struct-typed leaf.

use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, FixedSizeListArray, LargeListArray, ListArray, MapArray, StructArray,
};
use arrow_buffer::{BooleanBufferBuilder, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field};

use crate::reader::is_struct_fsl;
use crate::schema::LanceField;
use crate::structural::unravel::{LayerOut, Unraveled};
use crate::{FormatError, Result};

fn concat_nulls(parts: &[(Option<NullBuffer>, usize)]) -> Option<NullBuffer> {
    if parts.iter().all(|(n, _)| n.is_none()) {
        return None;
    }
    let total = parts.iter().map(|(_, l)| l).sum();
    let mut b = BooleanBufferBuilder::new(total);
    for (n, l) in parts {
        match n {
            Some(n) => b.append_buffer(n.inner()),
            None => b.append_n(*l, true),
        }
    }
    Some(NullBuffer::new(b.finish())).filter(|n| n.null_count() > 0)
}

/// Concatenates leaves decoded page by page.
pub(crate) fn concat_unraveled(parts: Vec<Unraveled>) -> Result<Unraveled> {
    let mut parts = parts;
    if parts.len() == 1 {
        if let Some(p) = parts.pop() {
            return Ok(p);
        }
    }
    let depth = parts.first().map(|p| p.outer.len()).unwrap_or(0);
    if parts.iter().any(|p| p.outer.len() != depth) {
        return Err(FormatError::corrupt(
            "pages of one column disagree on nesting depth",
        ));
    }
    let leaves: Vec<&dyn Array> = parts.iter().map(|p| p.leaf.as_ref()).collect();
    let leaf = crate::concat::concat(&leaves)?;
    let mut outer = Vec::with_capacity(depth);
    for d in 0..depth {
        match &parts[0].outer[d] {
            LayerOut::Item { .. } => {
                let mut ns = Vec::new();
                let mut len = 0;
                for p in &parts {
                    let LayerOut::Item { nulls, len: l } = &p.outer[d] else {
                        return Err(FormatError::corrupt("pages disagree on layer kinds"));
                    };
                    ns.push((nulls.clone(), *l));
                    len += l;
                }
                outer.push(LayerOut::Item {
                    nulls: concat_nulls(&ns),
                    len,
                });
            }
            LayerOut::List { .. } => {
                let mut offsets: Vec<i64> = vec![0];
                let mut ns = Vec::new();
                for p in &parts {
                    let LayerOut::List { offsets: o, nulls } = &p.outer[d] else {
                        return Err(FormatError::corrupt("pages disagree on layer kinds"));
                    };
                    let base = *offsets.last().unwrap_or(&0);
                    let first = *o.first().unwrap_or(&0);
                    offsets.extend(o.iter().skip(1).map(|x| x - first + base));
                    ns.push((nulls.clone(), o.len().saturating_sub(1)));
                }
                outer.push(LayerOut::List {
                    offsets,
                    nulls: concat_nulls(&ns),
                });
            }
        }
    }
    Ok(Unraveled { leaf, outer })
}

/// Rebuilds the array of `field` at `depth` from its decoded leaves (consumed in order).
pub(crate) fn assemble(
    field: &Field,
    lf: &LanceField,
    leaves: &mut std::collections::VecDeque<Unraveled>,
    depth: usize,
    len_hint: usize,
) -> Result<ArrayRef> {
    let structural = |leaves: &std::collections::VecDeque<Unraveled>| -> Result<LayerOut> {
        leaves
            .front()
            .and_then(|u| u.outer.get(depth).cloned())
            .ok_or_else(|| {
                FormatError::corrupt(format!(
                    "field {:?}: levels do not describe nesting depth {depth}",
                    field.name()
                ))
            })
    };
    match field.data_type() {
        // (a legacy blob leaf read as descriptions is a struct-typed leaf)
        DataType::Struct(children)
            if !lf.is_packed_struct() && !crate::blob_read::is_legacy_blob(lf) =>
        {
            if children.is_empty() {
                return Ok(Arc::new(StructArray::new_empty_fields(len_hint, None)));
            }
            let (nulls, len) = match structural(leaves)? {
                LayerOut::Item { nulls, len } => (nulls, len),
                LayerOut::List { .. } => {
                    return Err(FormatError::corrupt("struct field decoded as a list"))
                }
            };
            let mut arrays = Vec::with_capacity(children.len());
            for (c, lc) in children.iter().zip(&lf.children) {
                arrays.push(assemble(c, lc, leaves, depth + 1, len)?);
            }
            Ok(Arc::new(StructArray::try_new(
                children.clone(),
                arrays,
                nulls,
            )?))
        }
        DataType::List(child) | DataType::LargeList(child) | DataType::Map(child, _) => {
            let (offsets, nulls) = match structural(leaves)? {
                LayerOut::List { offsets, nulls } => (offsets, nulls),
                LayerOut::Item { .. } => {
                    return Err(FormatError::corrupt("list field decoded as a struct"))
                }
            };
            let lc = lf
                .children
                .first()
                .ok_or_else(|| FormatError::corrupt("list field without child"))?;
            let child_len = offsets.last().copied().unwrap_or(0) as usize;
            let values = assemble(child, lc, leaves, depth + 1, child_len)?;
            match field.data_type() {
                DataType::LargeList(_) => Ok(Arc::new(LargeListArray::try_new(
                    child.clone(),
                    OffsetBuffer::new(ScalarBuffer::from(offsets)),
                    values,
                    nulls,
                )?)),
                DataType::List(_) => {
                    let o32 = offsets
                        .iter()
                        .map(|&o| i32::try_from(o))
                        .collect::<std::result::Result<Vec<_>, _>>()
                        .map_err(|_| FormatError::corrupt("list over 2^31 items"))?;
                    Ok(Arc::new(ListArray::try_new(
                        child.clone(),
                        OffsetBuffer::new(ScalarBuffer::from(o32)),
                        values,
                        nulls,
                    )?))
                }
                DataType::Map(_, sorted) => {
                    let o32 = offsets
                        .iter()
                        .map(|&o| i32::try_from(o))
                        .collect::<std::result::Result<Vec<_>, _>>()
                        .map_err(|_| FormatError::corrupt("map over 2^31 entries"))?;
                    let entries = values
                        .as_any()
                        .downcast_ref::<StructArray>()
                        .ok_or_else(|| FormatError::corrupt("map entries are not a struct"))?
                        .clone();
                    Ok(Arc::new(MapArray::try_new(
                        child.clone(),
                        OffsetBuffer::new(ScalarBuffer::from(o32)),
                        entries,
                        nulls,
                        *sorted,
                    )?))
                }
                _ => Err(FormatError::corrupt("unreachable list kind")),
            }
        }
        DataType::FixedSizeList(child, n) if is_struct_fsl(field.data_type()) => {
            // one item layer over `dimension` slots per row (a null row's slots all
            // carry its null)
            let (nulls, len) = match structural(leaves)? {
                LayerOut::Item { nulls, len } => (nulls, len),
                LayerOut::List { .. } => {
                    return Err(FormatError::corrupt(
                        "fixed-size list of structs decoded as a list",
                    ))
                }
            };
            let dim = usize::try_from(*n).unwrap_or(0);
            if dim == 0 || len % dim != 0 {
                return Err(FormatError::corrupt(format!(
                    "field {:?}: {len} slots do not make rows of {dim}",
                    field.name()
                )));
            }
            let lc = lf
                .children
                .first()
                .ok_or_else(|| FormatError::corrupt("fixed-size list field without child"))?;
            let values = assemble(child, lc, leaves, depth + 1, len)?;
            let validity = nulls
                .map(|nb| {
                    NullBuffer::from(
                        (0..len / dim)
                            .map(|r| nb.is_valid(r * dim))
                            .collect::<Vec<bool>>(),
                    )
                })
                .filter(|v| v.null_count() > 0);
            Ok(Arc::new(FixedSizeListArray::try_new(
                child.clone(),
                *n,
                values,
                validity,
            )?))
        }
        dt => {
            let u = leaves
                .pop_front()
                .ok_or_else(|| FormatError::corrupt("fewer leaf columns than schema leaves"))?;
            if u.outer.len() != depth {
                return Err(FormatError::corrupt(format!(
                    "leaf {:?} has {} structural layers above it, schema nests it {depth} deep",
                    field.name(),
                    u.outer.len()
                )));
            }
            let leaf = u.leaf;
            let leaf = match dt {
                DataType::Dictionary(_, _) => arrow_cast::cast(&leaf, dt)?,
                _ => leaf,
            };
            if leaf.data_type() != dt {
                return retype(leaf, dt);
            }
            Ok(leaf)
        }
    }
}

/// Gives `a` the exact type `dt` when they differ only in child field names or
/// metadata (e.g. fixed-size-list item fields).
fn retype(a: ArrayRef, dt: &DataType) -> Result<ArrayRef> {
    match (a.data_type(), dt) {
        (DataType::FixedSizeList(_, n1), DataType::FixedSizeList(f, n2)) if n1 == n2 => {
            let fsl = a
                .as_any()
                .downcast_ref::<FixedSizeListArray>()
                .ok_or_else(|| FormatError::corrupt("expected a fixed-size list"))?;
            let values = retype(fsl.values().clone(), f.data_type())?;
            Ok(Arc::new(FixedSizeListArray::try_new(
                f.clone(),
                *n2,
                values,
                fsl.nulls().cloned(),
            )?))
        }
        _ => {
            let data = a.to_data().into_builder().data_type(dt.clone()).build()?;
            Ok(arrow_array::make_array(data))
        }
    }
}
