//! Sorted scans: `ORDER BY` of the rows a scan yields (pylance's `order_by`, a list of
//! `ColumnOrdering(column_name, ascending, nulls_first)`; reference: the scanner's
//! `order_by`). The scan's filtered rows are read (with the sort columns, dropped again
//! when not asked for), sorted by the keys in turn — nulls last unless asked first,
//! NaN after every number as in Arrow's and DataFusion's order, ties in the scan's
//! order (a stable sort) — then `offset` and
//! `limit` apply; with a limit only the first `offset + limit` rows are ordered (top-k).

use arrow_row::{RowConverter, SortField};
use arrow_schema::Schema;
use arrow_schema::SortOptions;

use super::{ScanStream, Scanner};
use crate::{Error, Result};

/// One key of an ordering.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SortKey {
    /// An output column (a dataset column, or a computed one by its name).
    pub column: String,
    /// Smallest first (the default) or largest first.
    pub ascending: bool,
    /// Nulls before the values (default after them).
    pub nulls_first: bool,
}

impl SortKey {
    /// Ascending, nulls last (the reference's default ordering of a column).
    pub fn ascending(column: &str) -> Self {
        Self {
            column: column.to_string(),
            ascending: true,
            nulls_first: false,
        }
    }
}

impl Scanner {
    /// Returns the rows sorted by `keys` (first key first); empty keeps dataset order.
    pub fn order_by(mut self, keys: &[SortKey]) -> Self {
        self.order = keys.to_vec();
        self
    }

    /// The sorted scan (see the module docs).
    pub(super) fn sorted_stream(&self) -> Result<ScanStream> {
        let mut inner = self.clone();
        inner.order.clear();
        inner.limit = None;
        inner.offset = 0;
        // read the sort columns too when the projection leaves them out
        let mut added = Vec::new();
        if let Some(computed) = inner.computed.as_mut() {
            // computed columns only: a dataset column to sort by is read as one more
            // (a name as the dialect quotes it)
            for k in &self.order {
                if !computed.iter().any(|(n, _)| n == &k.column) {
                    let quoted = format!("`{}`", k.column.replace('`', "``"));
                    computed.push((k.column.clone(), quoted));
                    added.push(k.column.clone());
                }
            }
        }
        if let Some(cols) = inner.columns.as_mut() {
            let computed: Vec<&str> = inner
                .computed
                .iter()
                .flatten()
                .map(|(n, _)| n.as_str())
                .collect();
            for k in &self.order {
                if !cols.contains(&k.column) && !computed.contains(&k.column.as_str()) {
                    cols.push(k.column.clone());
                    added.push(k.column.clone());
                }
            }
        }
        let all = inner.to_batch()?;
        let schema = all.schema();
        // the keys as Arrow's row format: one byte comparison per pair of rows instead
        // of a comparison per key column (and ties broken by position: a stable order)
        let mut fields = Vec::with_capacity(self.order.len());
        let mut key_cols = Vec::with_capacity(self.order.len());
        for k in &self.order {
            let values = all
                .column_by_name(&k.column)
                .ok_or_else(|| Error::InvalidArgument {
                    what: format!(
                        "order_by names {:?}, which the scan does not have (columns: {})",
                        k.column,
                        super::columns::column_names(&schema)
                    ),
                })?;
            fields.push(SortField::new_with_options(
                values.data_type().clone(),
                SortOptions {
                    descending: !k.ascending,
                    nulls_first: k.nulls_first,
                },
            ));
            key_cols.push(values.clone());
        }
        let rows = RowConverter::new(fields)?.convert_columns(&key_cols)?;
        let n = all.num_rows();
        let count = u32::try_from(n).map_err(|_| Error::InvalidArgument {
            what: format!(
                "order_by sorts at most {} rows at once, the scan has {n}",
                u32::MAX
            ),
        })?;
        // each row's first 16 key bytes beside its position: most comparisons are one
        // integer comparison on contiguous memory; equal prefixes fall back to the whole
        // rows, then to the position (a stable order). Zero padding keeps the prefix
        // order the byte order: a shorter row that is a prefix of a longer one compares
        // equal or less, never greater.
        let mut idx: Vec<(u128, u32)> = (0..count)
            .map(|i| {
                let bytes = rows.row(i as usize);
                let bytes = bytes.as_ref();
                let mut head = [0u8; 16];
                let k = bytes.len().min(16);
                head[..k].copy_from_slice(&bytes[..k]);
                (u128::from_be_bytes(head), i)
            })
            .collect();
        let cmp = |a: &(u128, u32), b: &(u128, u32)| {
            a.0.cmp(&b.0)
                .then_with(|| rows.row(a.1 as usize).cmp(&rows.row(b.1 as usize)))
                .then(a.1.cmp(&b.1))
        };
        let wanted = self
            .limit
            .map(|l| usize::try_from(self.offset.saturating_add(l)).unwrap_or(usize::MAX));
        if let Some(w) = wanted.filter(|&w| w < n) {
            if w == 0 {
                idx.clear();
            } else {
                idx.select_nth_unstable_by(w - 1, cmp);
                idx.truncate(w);
            }
        }
        sort_parallel(&mut idx, &cmp);
        let idx: Vec<u32> = idx.into_iter().map(|(_, i)| i).collect();
        let order = arrow_array::UInt32Array::from(idx);
        let offset = usize::try_from(self.offset)
            .unwrap_or(usize::MAX)
            .min(order.len());
        let order = order.slice(offset, order.len() - offset);
        let keep: Vec<usize> = (0..schema.fields().len())
            .filter(|&i| !added.contains(schema.field(i).name()))
            .collect();
        let out_schema = std::sync::Arc::new(Schema::new(
            keep.iter()
                .map(|&i| schema.field(i).clone())
                .collect::<Vec<_>>(),
        ));
        // each column gathered on a thread of its own (strings dominate: one random
        // read per row)
        let cols = std::thread::scope(|sc| {
            let handles: Vec<_> = keep
                .iter()
                .map(|&i| {
                    let (col, order) = (all.column(i), &order);
                    sc.spawn(move || arrow_select::take::take(col, order, None))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(arrow_schema::ArrowError::ComputeError(
                            "a sort's gather thread panicked".into(),
                        ))
                    })
                })
                .collect::<std::result::Result<Vec<_>, _>>()
        })?;
        let sorted = arrow_array::RecordBatch::try_new_with_options(
            out_schema.clone(),
            cols,
            &arrow_array::RecordBatchOptions::new().with_row_count(Some(order.len())),
        )?;
        let step = self.batch_size.max(1);
        let batches = (0..sorted.num_rows())
            .step_by(step)
            .map(|s| sorted.slice(s, step.min(sorted.num_rows() - s)))
            .collect();
        Ok(ScanStream::ready(out_schema, batches))
    }
}

/// Sorts `items` by `cmp` on all cores: each core sorts a run, the runs are merged
/// (a stable order is `cmp`'s: it breaks ties by position).
fn sort_parallel<T: Copy + Send + Sync>(
    items: &mut Vec<T>,
    cmp: &(dyn Fn(&T, &T) -> std::cmp::Ordering + Sync),
) {
    let parts = lancer_util::cores().max(1);
    if parts == 1 || items.len() < 1 << 16 {
        items.sort_unstable_by(cmp);
        return;
    }
    let per = items.len().div_ceil(parts);
    std::thread::scope(|sc| {
        for chunk in items.chunks_mut(per) {
            sc.spawn(move || chunk.sort_unstable_by(cmp));
        }
    });
    // merge the sorted runs pairwise until one is left
    let mut runs: Vec<Vec<T>> = items.chunks(per).map(<[T]>::to_vec).collect();
    while runs.len() > 1 {
        let mut next = Vec::with_capacity(runs.len().div_ceil(2));
        let mut it = runs.into_iter();
        while let Some(a) = it.next() {
            match it.next() {
                Some(b) => next.push(merge_two(&a, &b, cmp)),
                None => next.push(a),
            }
        }
        runs = next;
    }
    if let Some(one) = runs.pop() {
        *items = one;
    }
}

fn merge_two<T: Copy>(a: &[T], b: &[T], cmp: &dyn Fn(&T, &T) -> std::cmp::Ordering) -> Vec<T> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if cmp(&b[j], &a[i]) == std::cmp::Ordering::Less {
            out.push(b[j]);
            j += 1;
        } else {
            out.push(a[i]);
            i += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}
