//! Shredding: an Arrow array becomes, per leaf column, repetition / definition levels
//! plus the visible leaf values — the inverse of `structural::unravel` (spec:
//! "Repetition and Definition Levels").
//!
//! Nodes are visited outer-most first. Every top-level row starts one entry with the
//! maximum repetition level. A list node replaces each live entry by one entry per
//! item (the first keeps the entry's repetition level, the rest take the list's own
//! level), or ends it with the list's null / empty definition level. An item node
//! (struct or leaf) ends null entries with its null level but keeps their slot index:
//! inside the inner-most list a null still occupies a value slot.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, UInt64Array};
use arrow_schema::DataType;

use crate::schema::LanceField;
use crate::structural::Layer;
use crate::{FormatError, Result};

/// One leaf column's share of an array.
#[derive(Debug, Clone)]
pub struct Shredded {
    /// Structural layers, inner-most first.
    pub layers: Vec<Layer>,
    /// Repetition levels (None without lists).
    pub rep: Option<Vec<u16>>,
    /// Definition levels (None when every layer is all-valid).
    pub def: Option<Vec<u16>>,
    /// Visible leaf values (null slots included; their contents are irrelevant).
    pub values: ArrayRef,
    /// Top-level rows.
    pub num_rows: usize,
}

#[derive(Clone, Copy)]
struct Entry {
    rep: u16,
    def: u16,
    idx: Option<usize>,
    live: bool,
}

/// A node on the path from the top-level field to a leaf.
enum Node {
    Item(ArrayRef),
    List(ArrayRef),
    /// A fixed-size list of structs and its dimension: an item layer over `dimension`
    /// slots per row (no repetition level), each slot a page row of the leaves below.
    Fsl(ArrayRef, usize),
}

/// Shreds `array` (of `field`) into its leaf columns, in column order. Packed structs
/// are one leaf (2.1+ layout).
pub fn shred(field: &LanceField, array: &ArrayRef) -> Result<Vec<Shredded>> {
    let mut out = Vec::new();
    let mut path = Vec::new();
    walk(field, array.clone(), &mut path, &mut out, array.len())?;
    Ok(out)
}

fn walk(
    f: &LanceField,
    a: ArrayRef,
    path: &mut Vec<Node>,
    out: &mut Vec<Shredded>,
    num_rows: usize,
) -> Result<()> {
    match a.data_type() {
        // A struct without fields is stored as one placeholder column of nulls, as the
        // reference stores it (its rows are valid: a null one, or one under a list or a
        // null parent, has no layout in the reference and is refused as there).
        DataType::Struct(fs) if fs.is_empty() && !f.is_packed_struct() => {
            let under_list_or_null = path.iter().any(|n| match n {
                Node::List(_) => true,
                Node::Item(x) | Node::Fsl(x, _) => null_count(x) > 0,
            });
            if under_list_or_null || null_count(&a) > 0 {
                return Err(FormatError::UnsupportedType {
                    logical_type: "struct<>".into(),
                    detail: format!(
                        "field {:?}: a struct without fields cannot hold nulls or sit in a \
                         list in Lance files (the reference refuses it too): give it a field, \
                         or store it without nulls",
                        f.name
                    ),
                });
            }
            let placeholder: ArrayRef = Arc::new(arrow_array::NullArray::new(a.len()));
            path.push(Node::Item(placeholder));
            out.push(levels(path, num_rows)?);
            path.pop();
        }
        DataType::Struct(_) if !f.is_packed_struct() => {
            let s = a.as_struct();
            if s.num_columns() != f.children.len() {
                return Err(FormatError::corrupt(format!(
                    "struct {:?} has {} children, schema has {}",
                    f.name,
                    s.num_columns(),
                    f.children.len()
                )));
            }
            path.push(Node::Item(a.clone()));
            for (child, cf) in s.columns().iter().zip(&f.children) {
                walk(cf, child.clone(), path, out, num_rows)?;
            }
            path.pop();
        }
        DataType::FixedSizeList(_, n) if crate::reader::is_struct_fsl(a.data_type()) => {
            if !path.is_empty() {
                // pylance 14 writes them nested but cannot read them back ("its children
                // have differing lengths"): what Lancer writes must open in pylance
                return Err(FormatError::UnsupportedType {
                    logical_type: a.data_type().to_string(),
                    detail: format!(
                        "field {:?}: fixed-size lists of structs are written as top-level \
                         columns only (pylance 14 cannot read them inside a struct or list); \
                         store this one as a list",
                        f.name
                    ),
                });
            }
            let cf = f.children.first().ok_or_else(|| {
                FormatError::corrupt(format!("fixed-size list {:?} has no child field", f.name))
            })?;
            let dim = usize::try_from(*n).unwrap_or(0);
            let values = a.as_fixed_size_list().values().clone();
            path.push(Node::Fsl(a.clone(), dim));
            walk(cf, values, path, out, num_rows)?;
            path.pop();
        }
        DataType::List(_) | DataType::LargeList(_) | DataType::Map(_, _) => {
            let child = match a.data_type() {
                DataType::List(_) => a.as_list::<i32>().values().clone(),
                DataType::LargeList(_) => a.as_list::<i64>().values().clone(),
                _ => map_entries(&a),
            };
            let cf = f.children.first().ok_or_else(|| {
                FormatError::corrupt(format!("list field {:?} has no child field", f.name))
            })?;
            path.push(Node::List(a.clone()));
            walk(cf, child, path, out, num_rows)?;
            path.pop();
        }
        _ => {
            path.push(Node::Item(a.clone()));
            out.push(levels(path, num_rows)?);
            path.pop();
        }
    }
    Ok(())
}

/// Nulls of an item; a Null-typed array is null everywhere (it has no validity).
fn null_count(a: &ArrayRef) -> usize {
    if *a.data_type() == DataType::Null {
        a.len()
    } else {
        a.null_count()
    }
}

fn is_null(a: &ArrayRef, i: usize) -> bool {
    *a.data_type() == DataType::Null || a.is_null(i)
}

/// The levels of a path without lists (a top-level leaf, or leaves under structs): one
/// entry per row, the values are the leaf as it is, and a row's definition level is
/// that of its outer-most null item. Computed directly (no per-row entries, no take):
/// the general walk below costs 24 bytes per row and a copy of the values. `None` when
/// the path has a list, or a leaf whose length differs from the rows (the general walk
/// reports that).
fn without_lists(
    path: &[Node],
    layers_outer: &[Layer],
    base: &[u16],
    layers: &[Layer],
    num_rows: usize,
) -> Option<Shredded> {
    let mut items = Vec::with_capacity(path.len());
    for n in path {
        match n {
            Node::Item(a) => items.push(a),
            Node::List(_) | Node::Fsl(..) => return None,
        }
    }
    let leaf = (*items.last()?).clone();
    if leaf.len() != num_rows || items.iter().any(|a| a.len() != num_rows) {
        return None;
    }
    let def = layers.iter().any(|l| l.def_levels() > 0).then(|| {
        let mut def = vec![0u16; num_rows];
        // Inner-most first, so that an outer null overwrites an inner one.
        for k in (0..items.len()).rev() {
            if layers_outer[k] != Layer::NullableItem {
                continue;
            }
            let a = items[k];
            let level = base[k] + 1;
            if *a.data_type() == DataType::Null {
                def.iter_mut().for_each(|d| *d = level);
            } else if let Some(nulls) = a.nulls().filter(|n| n.null_count() > 0) {
                for (i, d) in def.iter_mut().enumerate() {
                    if nulls.is_null(i) {
                        *d = level;
                    }
                }
            }
        }
        def
    });
    Some(Shredded {
        layers: layers.to_vec(),
        rep: None,
        def,
        values: leaf,
        num_rows,
    })
}

fn map_entries(a: &ArrayRef) -> ArrayRef {
    std::sync::Arc::new(a.as_map().entries().clone())
}

fn list_bounds(a: &ArrayRef, i: usize) -> (usize, usize) {
    match a.data_type() {
        DataType::List(_) => {
            let o = a.as_list::<i32>().value_offsets();
            (o[i] as usize, o[i + 1] as usize)
        }
        DataType::LargeList(_) => {
            let o = a.as_list::<i64>().value_offsets();
            (o[i] as usize, o[i + 1] as usize)
        }
        _ => {
            let o = a.as_map().value_offsets();
            (o[i] as usize, o[i + 1] as usize)
        }
    }
}

/// Computes layers and levels for the leaf at the end of `path`.
fn levels(path: &[Node], num_rows: usize) -> Result<Shredded> {
    // Layers (outer-first while we scan, reversed at the end). As in the reference
    // writer, a struct's nulls count as nulls of the nodes directly under it (down to
    // the next list): their layers are nullable even if their own arrays have none.
    let mut layers_outer: Vec<Layer> = Vec::with_capacity(path.len());
    let mut inherited = false;
    for n in path {
        layers_outer.push(match n {
            Node::Item(a) | Node::Fsl(a, _) => {
                let nullable = null_count(a) > 0 || inherited;
                inherited = nullable;
                if nullable {
                    Layer::NullableItem
                } else {
                    Layer::AllValidItem
                }
            }
            Node::List(a) => {
                let mut nulls = inherited;
                inherited = false;
                let mut empties = false;
                for i in 0..a.len() {
                    if a.is_null(i) {
                        nulls = true;
                    } else {
                        let (s, e) = list_bounds(a, i);
                        empties |= s == e;
                    }
                }
                match (nulls, empties) {
                    (true, true) => Layer::NullAndEmptyList,
                    (true, false) => Layer::NullableList,
                    (false, true) => Layer::EmptyableList,
                    (false, false) => Layer::AllValidList,
                }
            }
        });
    }
    let layers: Vec<Layer> = layers_outer.iter().rev().copied().collect();
    // Definition level bases (levels owned by inner layers), by outer-first index.
    let n = layers_outer.len();
    let mut base = vec![0u16; n];
    let mut acc = 0u16;
    for k in (0..n).rev() {
        base[k] = acc;
        acc += layers_outer[k].def_levels();
    }
    let max_rep = layers.iter().filter(|l| l.is_list()).count() as u16;
    if let Some(s) = without_lists(path, &layers_outer, &base, &layers, num_rows) {
        return Ok(s);
    }
    let mut entries: Vec<Entry> = (0..num_rows)
        .map(|i| Entry {
            rep: max_rep,
            def: 0,
            idx: Some(i),
            live: true,
        })
        .collect();
    let mut lists_seen = 0u16;
    for (k, node) in path.iter().enumerate() {
        match node {
            Node::Item(a) => {
                if layers_outer[k] == Layer::NullableItem {
                    for e in entries.iter_mut().filter(|e| e.live) {
                        if let Some(i) = e.idx {
                            if is_null(a, i) {
                                e.def = base[k] + 1;
                                e.live = false;
                            }
                        }
                    }
                }
            }
            Node::Fsl(a, dim) => {
                // every row, null or not, is `dim` slots; a null row's slots carry its
                // null level
                let nullable = layers_outer[k] == Layer::NullableItem;
                let mut next = Vec::with_capacity(entries.len().saturating_mul(*dim));
                for e in entries {
                    let null = nullable && e.live && e.idx.is_some_and(|i| is_null(a, i));
                    for j in 0..*dim {
                        next.push(Entry {
                            rep: e.rep,
                            def: if null { base[k] + 1 } else { e.def },
                            idx: e.idx.map(|i| i * dim + j),
                            live: e.live && !null,
                        });
                    }
                }
                entries = next;
            }
            Node::List(a) => {
                lists_seen += 1;
                // Later items of this list start lists only at the levels inside it.
                let own_rep = max_rep - lists_seen;
                let (null_level, empty_level) = match layers_outer[k] {
                    Layer::NullableList => (base[k] + 1, 0),
                    Layer::EmptyableList => (0, base[k] + 1),
                    Layer::NullAndEmptyList => (base[k] + 1, base[k] + 2),
                    _ => (0, 0),
                };
                let mut next = Vec::with_capacity(entries.len());
                for e in entries {
                    let Some(i) = e.idx.filter(|_| e.live) else {
                        next.push(Entry { idx: None, ..e });
                        continue;
                    };
                    if a.is_null(i) {
                        next.push(Entry {
                            def: null_level,
                            idx: None,
                            live: false,
                            ..e
                        });
                        continue;
                    }
                    let (s, end) = list_bounds(a, i);
                    if s == end {
                        next.push(Entry {
                            def: empty_level,
                            idx: None,
                            live: false,
                            ..e
                        });
                        continue;
                    }
                    for (j, child) in (s..end).enumerate() {
                        next.push(Entry {
                            rep: if j == 0 { e.rep } else { own_rep },
                            def: 0,
                            idx: Some(child),
                            live: true,
                        });
                    }
                }
                entries = next;
            }
        }
    }
    let leaf = match path.last() {
        Some(Node::Item(a)) => a.clone(),
        _ => return Err(FormatError::corrupt("leaf path does not end in an item")),
    };
    let idx: UInt64Array = entries
        .iter()
        .filter_map(|e| e.idx.map(|i| i as u64))
        .collect();
    let values = if idx.len() == leaf.len()
        && idx.values().iter().enumerate().all(|(k, &v)| v == k as u64)
    {
        leaf
    } else {
        arrow_select::take::take(leaf.as_ref(), &idx, None)?
    };
    let rep = (max_rep > 0).then(|| entries.iter().map(|e| e.rep).collect());
    let def = layers
        .iter()
        .any(|l| l.def_levels() > 0)
        .then(|| entries.iter().map(|e| e.def).collect());
    // under a fixed-size list of structs every slot is a page row
    let num_rows = if path.iter().any(|n| matches!(n, Node::Fsl(..))) {
        entries.len()
    } else {
        num_rows
    };
    Ok(Shredded {
        layers,
        rep,
        def,
        values,
        num_rows,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Array, ArrayRef, Int32Array, ListArray};
    use arrow_buffer::{NullBuffer, OffsetBuffer};
    use arrow_schema::{DataType, Field};

    use crate::schema::LanceField;

    fn list_field() -> (Field, LanceField) {
        let item = Field::new("item", DataType::Int32, true);
        let f = Field::new("l", DataType::List(Arc::new(item.clone())), true);
        let child = LanceField {
            id: 1,
            parent_id: 0,
            name: "item".into(),
            logical_type: "int32".into(),
            nullable: true,
            extension_name: String::new(),
            metadata: Default::default(),
            children: vec![],
            data_type: DataType::Int32,
        };
        let lf = LanceField {
            id: 0,
            parent_id: -1,
            name: "l".into(),
            logical_type: "list".into(),
            nullable: true,
            extension_name: String::new(),
            metadata: Default::default(),
            children: vec![child],
            data_type: f.data_type().clone(),
        };
        (f, lf)
    }

    #[test]
    fn list_with_nulls_empties_and_null_items_round_trips() {
        let (f, lf) = list_field();
        let values = Int32Array::from(vec![Some(1), None, Some(3), Some(4), Some(5)]);
        let offsets = OffsetBuffer::new(vec![0, 2, 2, 2, 5].into());
        let nulls = NullBuffer::from(vec![true, false, true, true]);
        let a: ArrayRef = Arc::new(
            ListArray::try_new(
                Arc::new(Field::new("item", DataType::Int32, true)),
                offsets,
                Arc::new(values),
                Some(nulls),
            )
            .unwrap(),
        );
        let s = super::shred(&lf, &a).unwrap();
        assert_eq!(s.len(), 1);
        let got = crate::writer::reassemble(&f, &lf, &a).unwrap();
        assert_eq!(got.to_data(), a.to_data());
    }
}
