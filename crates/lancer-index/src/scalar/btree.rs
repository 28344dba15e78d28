//! BTREE segments (`page_lookup.lance` + `page_data.lance`, docs/scalar-index-format.md
//! §4; reference "BTree Index"): every indexed (value, row) pair sorted by value in
//! pages of `batch_size` rows, and one lookup row per page with its first and last value
//! and null count. A query reads the lookup once, picks the pages whose value span can
//! meet it, reads just those rows and filters them exactly.

use std::ops::{Bound, Range};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{UInt32Type, UInt64Type};
use arrow_array::{Array, ArrayRef, BooleanArray};
use lancer_format::reader::FileReader;
use roaring::RoaringTreemap;

use super::{compare, equals_any, fill_nulls, prefix_range, starts_with_at, Query};
use crate::segment::corrupt;
use crate::Result;

/// The exact per-row test of a query, run on candidate pages.
type RowTest = Box<dyn Fn(&dyn Array) -> Result<BooleanArray>>;

/// An opened BTREE segment.
pub struct BTreeIndex {
    label: String,
    min: ArrayRef,
    max: ArrayRef,
    null_count: Vec<u32>,
    batch_size: u64,
    data: Arc<FileReader>,
}

impl BTreeIndex {
    /// pylance's statistics of a BTREE segment: the smallest and largest value
    /// indexed (as text; `N/A` without values) and the pages.
    pub fn statistics(&self) -> Result<serde_json::Value> {
        let extreme = |a: &ArrayRef, want: std::cmp::Ordering| -> Result<String> {
            let cmp = arrow_ord::ord::make_comparator(a.as_ref(), a.as_ref(), Default::default())?;
            let best = (0..a.len()).filter(|&i| a.is_valid(i)).reduce(|b, i| {
                if cmp(i, b) == want {
                    i
                } else {
                    b
                }
            });
            Ok(match best {
                None => "N/A".to_string(),
                Some(i) => {
                    let f = arrow_cast::display::ArrayFormatter::try_new(
                        a.as_ref(),
                        &Default::default(),
                    )?;
                    f.value(i).to_string()
                }
            })
        };
        Ok(serde_json::json!({
            "min": extreme(&self.min, std::cmp::Ordering::Less)?,
            "max": extreme(&self.max, std::cmp::Ordering::Greater)?,
            "num_pages": self.null_count.len(),
        }))
    }

    /// Reads the page lookup and checks it against the data file.
    pub fn open(label: &str, lookup: Arc<FileReader>, data: Arc<FileReader>) -> Result<Self> {
        let meta = lookup.schema().metadata().clone();
        let batch_size: u64 = meta
            .get("batch_size")
            .ok_or_else(|| corrupt(label, "page_lookup.lance has no batch_size key"))?
            .parse()
            .ok()
            .filter(|&b| b > 0)
            .ok_or_else(|| corrupt(label, "batch_size is not a positive integer"))?;
        let b = lookup.read_all(Some(&["min", "max", "null_count"]))?;
        let null_count = b
            .column(2)
            .as_primitive_opt::<UInt32Type>()
            .ok_or_else(|| corrupt(label, "null_count is not uint32"))?
            .values()
            .to_vec();
        let pages = null_count.len() as u64;
        let rows = data.num_rows();
        if pages != rows.div_ceil(batch_size) {
            return Err(corrupt(
                label,
                format!("{pages} lookup pages for {rows} rows in pages of {batch_size}"),
            ));
        }
        let names: Vec<String> = data
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        if !names.iter().any(|n| n == "values") || !names.iter().any(|n| n == "ids") {
            return Err(corrupt(label, "page_data.lance lacks values / ids columns"));
        }
        Ok(Self {
            label: label.to_string(),
            min: b.column(0).clone(),
            max: b.column(1).clone(),
            null_count,
            batch_size,
            data,
        })
    }

    /// The type of the indexed values.
    pub fn value_type(&self) -> arrow_schema::DataType {
        self.min.data_type().clone()
    }

    /// Rows matching `q` (exact).
    pub fn query(&self, q: &Query) -> Result<Option<RoaringTreemap>> {
        let pages = self.null_count.len();
        let all_null: Vec<bool> = (0..pages).map(|p| self.max.is_null(p)).collect();
        // Candidate pages, then the exact row test.
        let (cands, test): (Vec<bool>, RowTest) = match q {
            Query::IsNull => (
                self.null_count.iter().map(|&n| n > 0).collect(),
                Box::new(|v: &dyn Array| {
                    Ok(BooleanArray::from(
                        (0..v.len()).map(|i| v.is_null(i)).collect::<Vec<_>>(),
                    ))
                }),
            ),
            Query::Range { lower, upper } => {
                let c = self.pages_in(lower, upper, &all_null)?;
                let (lower, upper) = (lower.clone(), upper.clone());
                (
                    c,
                    Box::new(move |v: &dyn Array| {
                        let lo = compare(v, &lower, false, false)?;
                        let hi = compare(v, &upper, true, false)?;
                        Ok(BooleanArray::new(lo.values() & hi.values(), None))
                    }),
                )
            }
            Query::In(set) if set.len() > 16 => {
                let c = match self.pages_for_set(set, &all_null)? {
                    Some(c) => c,
                    None => self.pages_for_each(set, &all_null)?,
                };
                let set = set.clone();
                (
                    c,
                    Box::new(move |v: &dyn Array| equals_any(v, set.as_ref())),
                )
            }
            Query::In(set) => {
                let c = self.pages_for_each(set, &all_null)?;
                let set = set.clone();
                (
                    c,
                    Box::new(move |v: &dyn Array| equals_any(v, set.as_ref())),
                )
            }
            Query::Prefix(p) => {
                let (lo, hi) = prefix_range(p, self.min.as_ref())?;
                let c = self.pages_in(&lo, &hi, &all_null)?;
                let p = p.clone();
                (
                    c,
                    Box::new(move |v: &dyn Array| {
                        Ok(BooleanArray::from(
                            (0..v.len())
                                .map(|i| starts_with_at(v, i, &p))
                                .collect::<Vec<_>>(),
                        ))
                    }),
                )
            }
            _ => return Ok(None),
        };
        let rows = self.data.num_rows();
        let mut ranges: Vec<Range<u64>> = Vec::new();
        for (p, _) in cands.iter().enumerate().filter(|(_, &c)| c) {
            let start = p as u64 * self.batch_size;
            let end = (start + self.batch_size).min(rows);
            match ranges.last_mut() {
                Some(r) if r.end == start => r.end = end,
                _ => ranges.push(start..end),
            }
        }
        let mut out = RoaringTreemap::new();
        if ranges.is_empty() {
            return Ok(Some(out));
        }
        let batch = self.data.read_ranges(&ranges, Some(&["values", "ids"]))?;
        let mask = test(batch.column(0).as_ref())?;
        let ids = batch
            .column(1)
            .as_primitive_opt::<UInt64Type>()
            .ok_or_else(|| corrupt(&self.label, "ids are not uint64"))?;
        for i in 0..mask.len() {
            if mask.value(i) {
                out.insert(ids.value(i));
            }
        }
        Ok(Some(out))
    }

    /// (rows `IN set` reads, rows indexed): the candidate pages' rows, from the lookup.
    pub fn in_estimate(&self, set: &ArrayRef) -> Result<(u64, u64)> {
        let pages = self.null_count.len();
        let all_null: Vec<bool> = (0..pages).map(|p| self.max.is_null(p)).collect();
        let c = match self.pages_for_set(set, &all_null)? {
            Some(c) => c,
            None => self.pages_for_each(set, &all_null)?,
        };
        let rows = self.data.num_rows();
        let read = c
            .iter()
            .enumerate()
            .filter(|(_, &c)| c)
            .map(|(p, _)| (rows - (p as u64 * self.batch_size).min(rows)).min(self.batch_size))
            .sum();
        Ok((read, rows))
    }

    /// Pages that can hold one of `set`'s values: each value against every page.
    fn pages_for_each(&self, set: &ArrayRef, all_null: &[bool]) -> Result<Vec<bool>> {
        let mut c = vec![false; all_null.len()];
        for i in 0..set.len() {
            if set.is_null(i) {
                continue;
            }
            let b = Bound::Included(set.slice(i, 1));
            for (p, hit) in self.pages_in(&b, &b, all_null)?.into_iter().enumerate() {
                c[p] |= hit;
            }
        }
        Ok(c)
    }

    /// Pages that can hold one of `set`'s values, by binary search over the page
    /// bounds in the row format (the same total order as the comparison kernels): a
    /// value's pages are those from the first whose max reaches it to the last whose
    /// min does not pass it. None when the bounds do not ascend (then every value is
    /// tested against every page).
    fn pages_for_set(&self, set: &ArrayRef, all_null: &[bool]) -> Result<Option<Vec<bool>>> {
        use arrow_row::{RowConverter, SortField};
        let t = self.min.data_type();
        if set.data_type() != t || self.max.data_type() != t {
            return Ok(None);
        }
        let Ok(conv) = RowConverter::new(vec![SortField::new(t.clone())]) else {
            return Ok(None);
        };
        let (Ok(mins), Ok(maxs), Ok(vals)) = (
            conv.convert_columns(std::slice::from_ref(&self.min)),
            conv.convert_columns(std::slice::from_ref(&self.max)),
            conv.convert_columns(std::slice::from_ref(set)),
        ) else {
            return Ok(None);
        };
        // pages past the all-null ones must ascend in both bounds
        let live: Vec<usize> = (0..all_null.len()).filter(|&p| !all_null[p]).collect();
        let ascends =
            |rows: &arrow_row::Rows| live.windows(2).all(|w| rows.row(w[0]) <= rows.row(w[1]));
        if !ascends(&mins) || !ascends(&maxs) {
            return Ok(None);
        }
        let mut c = vec![false; all_null.len()];
        for i in 0..set.len() {
            if set.is_null(i) {
                continue;
            }
            let v = vals.row(i);
            let lo = live.partition_point(|&p| maxs.row(p) < v);
            // a null min lies below every value
            let hi = live.partition_point(|&p| self.min.is_null(p) || mins.row(p) <= v);
            for &p in live.get(lo..hi.max(lo)).unwrap_or(&[]) {
                c[p] = true;
            }
        }
        Ok(Some(c))
    }

    /// Pages whose span `[min, max]` can meet `[lower, upper]` (a null min lies below
    /// everything; an all-null page meets no value range).
    fn pages_in(
        &self,
        lower: &Bound<ArrayRef>,
        upper: &Bound<ArrayRef>,
        all_null: &[bool],
    ) -> Result<Vec<bool>> {
        // max >= lower (null max: all-null page, no), min <= upper (null min: yes).
        let hi_ok = compare(self.max.as_ref(), lower, false, false)?;
        let lo_ok = compare(self.min.as_ref(), upper, true, true)?;
        let hi_ok = fill_nulls(&hi_ok, false);
        Ok((0..all_null.len())
            .map(|p| !all_null[p] && hi_ok.value(p) && lo_ok.value(p))
            .collect())
    }
}
