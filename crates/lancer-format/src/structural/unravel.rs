//! Turning repetition / definition levels back into Arrow validity and offsets
//! (spec: "Repetition and Definition Levels").
//!
//! Levels are processed inner-most layer first. Definition level 0 means "valid at
//! every level"; each nullable (or emptyable) layer, from the inside out, owns the next
//! level number(s) (a list with nulls and empties owns two: null, then empty). An entry
//! with repetition level `r > 0` starts a new list at the `r`-th list layer counted
//! from the inside; after a list layer is decoded only the entries that started a list
//! at that layer (or further out) remain, with their repetition level lowered by one.

use arrow_array::ArrayRef;
use arrow_buffer::{BooleanBufferBuilder, NullBuffer};

use super::{Layer, LeafRun};
use crate::block::with_nulls;
use crate::{FormatError, Result};

/// Structure of one non-leaf layer, decoded.
#[derive(Debug, Clone)]
pub enum LayerOut {
    /// A struct layer: its validity and length.
    Item {
        /// Validity (None = all valid).
        nulls: Option<NullBuffer>,
        /// Number of struct slots.
        len: usize,
    },
    /// A list layer: offsets into the child and validity.
    List {
        /// `len + 1` offsets.
        offsets: Vec<i64>,
        /// Validity (None = all valid).
        nulls: Option<NullBuffer>,
    },
}

/// A leaf column decoded: the leaf array with its validity, and the layers above it
/// (outer-most first).
#[derive(Debug, Clone)]
pub struct Unraveled {
    /// The leaf values with validity applied.
    pub leaf: ArrayRef,
    /// Ancestor layers, outer-most first.
    pub outer: Vec<LayerOut>,
}

fn finish_nulls(b: Option<BooleanBufferBuilder>) -> Option<NullBuffer> {
    b.map(|mut b| NullBuffer::new(b.finish()))
        .filter(|n| n.null_count() > 0)
}

/// Decodes the levels of `run` for `layers` (inner-most first).
pub fn unravel(run: LeafRun, layers: &[Layer]) -> Result<Unraveled> {
    let LeafRun {
        rep, def, values, ..
    } = run;
    let mut rep = rep;
    let mut def = def;
    // levels_to_rep[d] = how many list layers lie at or inside the layer owning level d.
    let mut levels_to_rep: Vec<u16> = vec![0];
    let mut lists = 0u16;
    for l in layers {
        match l {
            Layer::AllValidItem => {}
            Layer::AllValidList => lists += 1,
            Layer::NullableItem => levels_to_rep.push(lists),
            Layer::NullableList | Layer::EmptyableList => {
                lists += 1;
                levels_to_rep.push(lists);
            }
            Layer::NullAndEmptyList => {
                lists += 1;
                levels_to_rep.push(lists);
                levels_to_rep.push(lists);
            }
        }
    }
    let level_rep = |d: u16| -> Result<u16> {
        levels_to_rep.get(d as usize).copied().ok_or_else(|| {
            FormatError::corrupt(format!(
                "definition level {d} exceeds the {} levels of this column",
                levels_to_rep.len() - 1
            ))
        })
    };
    if let (Some(r), Some(d)) = (&rep, &def) {
        if r.len() != d.len() {
            return Err(FormatError::corrupt(
                "repetition and definition lengths differ",
            ));
        }
    }
    if rep.is_some() && lists == 0 {
        // Repetition levels without list layers: every entry is its own row.
        rep = None;
    }
    if lists > 0 && rep.is_none() {
        return Err(FormatError::corrupt(
            "list column page without repetition levels",
        ));
    }

    let mut def_base: u16 = 0; // levels owned by layers already decoded
    let mut cur_rep: u16 = 0;
    let mut outs: Vec<LayerOut> = Vec::with_capacity(layers.len());
    let mut leaf: Option<ArrayRef> = None;
    // Slots at the level just decoded.
    let mut cur_len: Option<usize> = None;
    let mut values = Some(values);

    for (idx, layer) in layers.iter().enumerate() {
        if layer.is_list() {
            if leaf.is_none() {
                return Err(FormatError::corrupt(
                    "a list layer cannot be the leaf layer",
                ));
            }
            let r = rep
                .as_mut()
                .ok_or_else(|| FormatError::corrupt("list layer without repetition levels"))?;
            let empty_level = match layer {
                Layer::EmptyableList => def_base + 1,
                Layer::NullAndEmptyList => def_base + 2,
                _ => u16::MAX,
            };
            let own = layer.def_levels();
            // Levels up to `def_base` are nulls of items inside this list; this list owns
            // the next `own` levels; nullable items just outside it (up to the next list)
            // own the levels up to `max_level` and mask this list as null.
            let own_max = def_base + own;
            let mut max_level = own_max;
            for l in &layers[idx + 1..] {
                match l {
                    Layer::NullableItem => max_level += 1,
                    Layer::AllValidItem => {}
                    _ => break,
                }
            }
            let mut offsets: Vec<i64> = Vec::with_capacity(r.len() / 2 + 1);
            let mut validity: Option<BooleanBufferBuilder> = None;
            let mut n_lists = 0usize;
            let push_valid =
                |valid: bool, validity: &mut Option<BooleanBufferBuilder>, n: usize| {
                    if !valid && validity.is_none() {
                        let mut b = BooleanBufferBuilder::new(n + 16);
                        b.append_n(n, true);
                        *validity = Some(b);
                    }
                    if let Some(b) = validity.as_mut() {
                        b.append(valid);
                    }
                };
            let mut curlen: i64 = 0;
            let mut write = 0usize;
            match def.as_mut() {
                Some(d) => {
                    for read in 0..r.len() {
                        let rv = r[read];
                        if rv != 0 {
                            let dv = d[read];
                            r[write] = rv - 1;
                            d[write] = dv;
                            write += 1;
                            if dv <= def_base {
                                // A valid list whose first item exists (maybe null).
                                offsets.push(curlen);
                                curlen += 1;
                                push_valid(true, &mut validity, n_lists);
                                n_lists += 1;
                            } else if dv > max_level {
                                // Belongs to a null / empty further out: no list here.
                            } else if dv == empty_level {
                                offsets.push(curlen);
                                push_valid(true, &mut validity, n_lists);
                                n_lists += 1;
                            } else {
                                // This list is null, or masked by a null struct outside.
                                offsets.push(curlen);
                                push_valid(false, &mut validity, n_lists);
                                n_lists += 1;
                            }
                        } else {
                            curlen += 1;
                        }
                    }
                    d.truncate(write);
                }
                None => {
                    for read in 0..r.len() {
                        let rv = r[read];
                        if rv != 0 {
                            offsets.push(curlen);
                            r[write] = rv - 1;
                            write += 1;
                        }
                        curlen += 1;
                    }
                }
            }
            r.truncate(write);
            offsets.push(curlen);
            cur_len = Some(offsets.len() - 1);
            def_base += own;
            cur_rep += 1;
            outs.push(LayerOut::List {
                offsets,
                nulls: finish_nulls(validity),
            });
            continue;
        }
        // Item layer: slots are the entries visible at the current repetition depth.
        let mut validity: Option<BooleanBufferBuilder> = None;
        let mut len = 0usize;
        let own_level = def_base + 1;
        match &def {
            Some(d) => {
                for &dv in d.iter() {
                    if level_rep(dv)? > cur_rep {
                        continue;
                    }
                    let valid = !(layer == &Layer::NullableItem && dv >= own_level);
                    if !valid && validity.is_none() {
                        let mut b = BooleanBufferBuilder::new(d.len());
                        b.append_n(len, true);
                        validity = Some(b);
                    }
                    if let Some(b) = validity.as_mut() {
                        b.append(valid);
                    }
                    len += 1;
                }
            }
            None => {
                // Without definition levels every slot of the level below is one here.
                len = match &rep {
                    Some(r) => r.len(),
                    None => cur_len.unwrap_or_else(|| values.as_ref().map_or(0, |v| v.len())),
                };
            }
        }
        def_base += layer.def_levels();
        cur_len = Some(len);
        let nulls = finish_nulls(validity);
        if leaf.is_none() {
            let v = values
                .take()
                .ok_or_else(|| FormatError::corrupt("leaf values consumed twice"))?;
            if v.len() != len {
                return Err(FormatError::corrupt(format!(
                    "levels describe {len} leaf values but {} were decoded",
                    v.len()
                )));
            }
            leaf = Some(with_nulls(v, nulls)?);
        } else {
            outs.push(LayerOut::Item { nulls, len });
        }
    }
    let leaf = leaf.ok_or_else(|| FormatError::corrupt("page has no leaf layer"))?;
    outs.reverse();
    Ok(Unraveled { leaf, outer: outs })
}
