//! Grouping a column's values by key for BITMAP and LABEL_LIST builds: each value is
//! encoded in arrow's row format (byte order = the indexes' total order, nulls first,
//! floats by IEEE total order so `-0.0`, `+0.0` and NaN are distinct keys) and hashed to
//! a group as batches arrive; the row ids are bucketed by group at the end (a counting
//! sort) and each group's bitmap encoded from its sorted ids. One pass, no comparison
//! sort of the rows.

use std::collections::HashMap;

use arrow_array::{Array, ArrayRef};
use arrow_row::{RowConverter, SortField};
use arrow_schema::{DataType, SortOptions};
use roaring::RoaringBitmap;

use crate::Result;

/// Distinct keys with the ids holding each, sorted by key.
pub(crate) struct Grouped {
    /// The keys, in total order (null first).
    pub keys: ArrayRef,
    /// Per key, its ids ascending and distinct.
    pub ids: Vec<Vec<u64>>,
}

/// Collects (value, id) pairs by key.
pub(crate) struct Grouper {
    converter: RowConverter,
    map: HashMap<Box<[u8]>, u32, foldhash::fast::RandomState>,
    rows: Vec<Box<[u8]>>,
    group: Vec<u32>,
    ids: Vec<u64>,
}

impl Grouper {
    /// A grouper for values of type `t`.
    pub(crate) fn new(t: &DataType) -> Result<Self> {
        let field = SortField::new_with_options(
            t.clone(),
            SortOptions {
                descending: false,
                nulls_first: true,
            },
        );
        Ok(Self {
            converter: RowConverter::new(vec![field])?,
            map: HashMap::default(),
            rows: Vec::new(),
            group: Vec::new(),
            ids: Vec::new(),
        })
    }

    /// Adds `values` held by `ids` (same length).
    pub(crate) fn push(&mut self, values: &ArrayRef, ids: &[u64]) -> Result<()> {
        let rows = self
            .converter
            .convert_columns(std::slice::from_ref(values))?;
        self.group.reserve(ids.len());
        for (i, &id) in ids.iter().enumerate().take(values.len()) {
            let r = rows.row(i);
            let bytes = r.as_ref();
            let g = match self.map.get(bytes) {
                Some(&g) => g,
                None => {
                    let g = self.rows.len() as u32;
                    let owned: Box<[u8]> = bytes.into();
                    self.map.insert(owned.clone(), g);
                    self.rows.push(owned);
                    g
                }
            };
            self.group.push(g);
            self.ids.push(id);
        }
        Ok(())
    }

    /// The groups in key order.
    pub(crate) fn finish(self) -> Result<Grouped> {
        let n = self.rows.len();
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.sort_unstable_by(|&a, &b| self.rows[a as usize].cmp(&self.rows[b as usize]));
        // Counting sort of the ids by group (stable: ascending ids stay ascending).
        let mut count = vec![0usize; n];
        for &g in &self.group {
            count[g as usize] += 1;
        }
        let mut ids: Vec<Vec<u64>> = order
            .iter()
            .map(|&g| Vec::with_capacity(count[g as usize]))
            .collect();
        let mut rank = vec![0u32; n];
        for (r, &g) in order.iter().enumerate() {
            rank[g as usize] = r as u32;
        }
        for (&g, &id) in self.group.iter().zip(&self.ids) {
            ids[rank[g as usize] as usize].push(id);
        }
        for v in &mut ids {
            if v.windows(2).any(|w| w[0] >= w[1]) {
                v.sort_unstable();
                v.dedup();
            }
        }
        let parser = self.converter.parser();
        let rows: Vec<_> = order
            .iter()
            .map(|&g| parser.parse(&self.rows[g as usize]))
            .collect();
        let keys = match self.converter.convert_rows(rows) {
            Ok(mut cols) if cols.len() == 1 => cols.remove(0),
            Ok(_) => arrow_array::new_empty_array(&DataType::Null),
            Err(e) => return Err(e.into()),
        };
        Ok(Grouped { keys, ids })
    }
}

/// A RowAddrTreeMap of ascending, distinct ids.
pub(crate) fn encode_sorted(ids: &[u64]) -> Vec<u8> {
    let mut parts: Vec<(u32, RoaringBitmap)> = Vec::new();
    let mut start = 0;
    while start < ids.len() {
        let hi = (ids[start] >> 32) as u32;
        let mut end = start;
        while end < ids.len() && (ids[end] >> 32) as u32 == hi {
            end += 1;
        }
        let bm = RoaringBitmap::from_sorted_iter(ids[start..end].iter().map(|&v| v as u32))
            .unwrap_or_else(|_| ids[start..end].iter().map(|&v| v as u32).collect());
        parts.push((hi, bm));
        start = end;
    }
    let mut out = Vec::with_capacity(4 + ids.len() * 2 + parts.len() * 24);
    out.extend_from_slice(&(parts.len() as u32).to_le_bytes());
    for (hi, bm) in parts {
        out.extend_from_slice(&hi.to_le_bytes());
        out.extend_from_slice(&(bm.serialized_size() as u32).to_le_bytes());
        // Writing into a Vec cannot fail.
        let _ = bm.serialize_into(&mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn groups_in_total_order_with_nulls_first_and_zeros_apart() {
        let mut g = Grouper::new(&DataType::Float64).unwrap_or_else(|_| unreachable!());
        let v: ArrayRef = Arc::new(arrow_array::Float64Array::from(vec![
            Some(1.5),
            None,
            Some(-0.0),
            Some(0.0),
            Some(f64::NAN),
            Some(1.5),
            None,
        ]));
        assert!(g.push(&v, &[10, 11, 12, 13, 14, 15, 16]).is_ok());
        let out = g.finish().unwrap_or_else(|_| unreachable!());
        assert_eq!(
            out.ids,
            vec![vec![11, 16], vec![12], vec![13], vec![10, 15], vec![14]]
        );
        let k =
            arrow_array::cast::AsArray::as_primitive::<arrow_array::types::Float64Type>(&out.keys);
        assert!(k.is_null(0));
        assert!(k.value(1).is_sign_negative() && k.value(2).is_sign_positive());
        assert!(k.value(4).is_nan());
        // encode_sorted agrees with the treemap encoder.
        let ids = [1u64, 5, (3 << 32) | 7, (3 << 32) | 9];
        let t: roaring::RoaringTreemap = ids.iter().copied().collect();
        assert_eq!(
            encode_sorted(&ids),
            super::super::rowmap::encode_addr_map(&t)
        );
    }
}
