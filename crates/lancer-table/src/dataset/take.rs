//! Takes: rows of a dataset version by offset, by row address or by stable row id,
//! reading only the byte ranges that hold them (spec: "Row ID and Row Address"; the
//! file format's random access, "Structural encoding" → "Repetition index").

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch, UInt64Array};

use super::Dataset;
use crate::pb;
use crate::{Result, TableError};

/// One fragment's part of a take: its index, the rows asked (in order), the distinct
/// ones, and their runs.
type TakeGroup = (usize, Vec<u64>, Vec<u64>, Vec<Range<u64>>);

impl Dataset {
    /// Row addresses (`fragment id << 32 | row in fragment`) of version offsets.
    pub fn row_addresses(&self, offsets: &[u64]) -> Result<Vec<u64>> {
        let all: Vec<&pb::DataFragment> = self.fragments().iter().collect();
        self.prefetch_deletions(&all)?;
        let mut starts = Vec::with_capacity(self.fragments().len());
        let mut kept = Vec::with_capacity(self.fragments().len());
        let mut total = 0u64;
        for frag in self.fragments() {
            let r = self.kept_ranges(frag)?;
            starts.push(total);
            total += r.total;
            kept.push(r);
        }
        offsets
            .iter()
            .map(|&o| {
                if o >= total {
                    return Err(TableError::NotFound {
                        what: format!("row {o} of a {total}-row version"),
                    });
                }
                let fi = starts.partition_point(|&s| s <= o).saturating_sub(1);
                let row = starts
                    .get(fi)
                    .zip(kept.get(fi))
                    .and_then(|(s, k)| k.locate(o - s))
                    .ok_or_else(|| TableError::corrupt("row offset past its fragment"))?;
                Ok((self.fragments()[fi].id << 32) | row)
            })
            .collect()
    }

    /// Stable row ids of version offsets (datasets with the stable-row-ids feature).
    pub fn row_ids(&self, offsets: &[u64]) -> Result<Vec<u64>> {
        let addrs = self.row_addresses(offsets)?;
        let index = self.fragment_index();
        addrs
            .iter()
            .map(|&a| {
                let (fid, row) = (a >> 32, (a & 0xFFFF_FFFF) as usize);
                let frag = index
                    .get(&fid)
                    .and_then(|&i| self.fragments().get(i))
                    .ok_or_else(|| TableError::corrupt("row address of a missing fragment"))?;
                self.stable_row_ids(frag)?
                    .get(row)
                    .copied()
                    .ok_or_else(|| TableError::corrupt("row past its fragment's row ids"))
            })
            .collect()
    }

    /// Position in [`Dataset::fragments`] of each fragment id.
    fn fragment_index(&self) -> HashMap<u64, usize> {
        self.fragments()
            .iter()
            .enumerate()
            .map(|(i, f)| (f.id, i))
            .collect()
    }

    /// Reads rows by stable row id, in order (JSON columns as JSON text, as a scan
    /// returns them).
    pub fn take_row_ids(&self, ids: &[u64], columns: Option<&[&str]>) -> Result<RecordBatch> {
        let addrs = self.addresses_of_row_ids(ids)?;
        self.take_addresses(&addrs, columns)
    }

    /// The row addresses of stable row ids (live rows of this version), in order; an
    /// id no live row has is an error naming it.
    pub fn addresses_of_row_ids(&self, ids: &[u64]) -> Result<Vec<u64>> {
        let mut where_is: HashMap<u64, u64> = HashMap::new();
        for frag in self.fragments() {
            let rids = self.stable_row_ids(frag)?;
            let del = self.deleted(frag)?;
            for (row, &id) in rids.iter().enumerate() {
                if !del.as_ref().is_some_and(|d| d.rows.contains(row as u32)) {
                    where_is.insert(id, (frag.id << 32) | row as u64);
                }
            }
        }
        ids.iter()
            .map(|id| {
                where_is
                    .get(id)
                    .copied()
                    .ok_or_else(|| TableError::NotFound {
                        what: format!("row id {id} in version {}", self.version()),
                    })
            })
            .collect()
    }

    /// Reads rows by row address (`fragment id << 32 | row in fragment`), in order,
    /// JSON columns as JSON text (Arrow's JSON type), as a scan returns them.
    /// Addresses of deleted rows or missing fragments are errors naming the address.
    pub fn take_addresses(
        &self,
        addresses: &[u64],
        columns: Option<&[&str]>,
    ) -> Result<RecordBatch> {
        Ok(lancer_format::json::to_text(
            &self.take_addresses_stored(addresses, columns)?,
        )?)
    }

    /// [`Dataset::take_addresses`] with JSON columns as stored: JSONB in `large_binary`
    /// (`lance.json`), what filters over JSON read and what a rewrite writes back.
    pub fn take_addresses_stored(
        &self,
        addresses: &[u64],
        columns: Option<&[&str]>,
    ) -> Result<RecordBatch> {
        let fields = self.projection(columns)?;
        let mut parts: Vec<Vec<ArrayRef>> = fields.iter().map(|_| Vec::new()).collect();
        let mut order: Vec<(usize, u64, usize)> = Vec::with_capacity(addresses.len());
        let index = self.fragment_index();
        for (k, &a) in addresses.iter().enumerate() {
            let (fid, row) = (a >> 32, a & 0xFFFF_FFFF);
            let fi = index
                .get(&fid)
                .copied()
                .ok_or_else(|| TableError::NotFound {
                    what: format!(
                        "row address {a} (fragment {fid} is not in version {})",
                        self.version()
                    ),
                })?;
            order.push((fi, row, k));
        }
        let mut sorted = order.clone();
        sorted.sort();
        let mut touched: Vec<&pb::DataFragment> = sorted
            .iter()
            .map(|&(fi, _, _)| &self.fragments()[fi])
            .collect();
        touched.dedup_by_key(|f| f.id);
        self.prefetch_deletions(&touched)?;
        let mut pos_of = vec![0u64; addresses.len()];
        let mut n = 0u64;
        let mut i = 0;
        // per fragment: the rows asked (in order), the distinct ones, their runs
        let mut groups: Vec<TakeGroup> = Vec::new();
        while i < sorted.len() {
            let fi = sorted[i].0;
            let frag = &self.fragments()[fi];
            let del = self.deleted(frag)?;
            let mut rows = Vec::new();
            while i < sorted.len() && sorted[i].0 == fi {
                let (_, row, k) = sorted[i];
                let deleted = del.as_ref().is_some_and(|d| d.rows.contains(row as u32));
                if row >= frag.physical_rows || deleted {
                    return Err(TableError::NotFound {
                        what: format!(
                            "row address {} (row {row} of fragment {} is deleted or past its end)",
                            addresses[k], frag.id
                        ),
                    });
                }
                rows.push(row);
                pos_of[k] = n;
                n += 1;
                i += 1;
            }
            let mut uniq = rows.clone();
            uniq.dedup();
            // Consecutive rows read as one run.
            let mut ranges: Vec<Range<u64>> = Vec::new();
            for &r in &uniq {
                match ranges.last_mut() {
                    Some(last) if last.end == r => last.end = r + 1,
                    _ => ranges.push(r..r + 1),
                }
            }
            groups.push((fi, rows, uniq, ranges));
        }
        // local files: one fragment after another (each read is parallel inside);
        // object stores: the fragments' requests in flight together
        let read = |g: &TakeGroup| self.read_fragment(&self.fragments()[g.0], &fields, &g.3);
        let reads: Vec<Vec<ArrayRef>> = if self.store.local_root().is_some() || groups.len() < 2 {
            groups.iter().map(read).collect::<Result<_>>()?
        } else {
            crate::par::map_io(&groups, read)?
        };
        for ((_, rows, uniq, _), cols) in groups.iter().zip(reads) {
            if uniq.len() == rows.len() {
                // No repeated rows: the read is already in the asked order (no copy).
                for (acc, c) in parts.iter_mut().zip(cols) {
                    acc.push(c);
                }
            } else {
                let pos: UInt64Array = rows
                    .iter()
                    .map(|r| uniq.binary_search(r).unwrap_or(0) as u64)
                    .collect();
                for (acc, c) in parts.iter_mut().zip(cols) {
                    acc.push(reorder(&c, &pos)?);
                }
            }
        }
        // Addresses asked in fragment order need no final reordering copy.
        let in_order = pos_of.iter().enumerate().all(|(k, &p)| p == k as u64);
        let inv = UInt64Array::from(pos_of);
        let mut cols = Vec::with_capacity(fields.len());
        for (k, mut p) in parts.into_iter().enumerate() {
            let all = match p.len() {
                0 => arrow_array::new_empty_array(self.schema.field(fields[k]).data_type()),
                1 => p.swap_remove(0),
                _ => {
                    let refs: Vec<&dyn Array> = p.iter().map(|a| a.as_ref()).collect();
                    crate::dataset::concat(&refs)?
                }
            };
            cols.push(if in_order { all } else { reorder(&all, &inv)? });
        }
        self.batch(&fields, cols, addresses.len())
    }

    /// Reads rows at offsets of this version (deleted rows not counted), in order,
    /// JSON columns as JSON text, as a scan returns them.
    pub fn take(&self, offsets: &[u64], columns: Option<&[&str]>) -> Result<RecordBatch> {
        let addresses = self.row_addresses(offsets)?;
        self.take_addresses(&addresses, columns)
    }

    /// [`Dataset::take`] with JSON columns as stored (JSONB; see
    /// [`Dataset::take_addresses_stored`]).
    pub fn take_stored(&self, offsets: &[u64], columns: Option<&[&str]>) -> Result<RecordBatch> {
        let addresses = self.row_addresses(offsets)?;
        self.take_addresses_stored(&addresses, columns)
    }
}

/// `arrow_select::take` of `a` at `pos`, with vectors (fixed-size lists of primitive
/// values without nulls) gathered a row at a time: arrow's kernel takes them one value
/// at a time, building an index per value (a 768-d row is 768 lookups).
fn reorder(a: &ArrayRef, pos: &UInt64Array) -> Result<ArrayRef> {
    use arrow_array::cast::AsArray;
    if let (Some(l), arrow_schema::DataType::FixedSizeList(field, _)) =
        (a.as_fixed_size_list_opt(), a.data_type())
    {
        let values = l.values();
        let width = values.data_type().primitive_width();
        let data = values.to_data();
        if let (Some(w), None, None, [buf]) = (width, l.nulls(), values.nulls(), data.buffers()) {
            let dim = usize::try_from(l.value_length()).unwrap_or(0);
            let row = w * dim;
            let start = data.offset() * w;
            let src = buf
                .as_slice()
                .get(start..start + row * l.len())
                .ok_or_else(|| {
                    TableError::corrupt("a fixed-size list's values are shorter than its rows")
                })?;
            let mut out = Vec::with_capacity(row * pos.len());
            for &p in pos.values() {
                let i = usize::try_from(p)
                    .ok()
                    .filter(|&i| i < l.len())
                    .ok_or_else(|| {
                        TableError::corrupt(format!("take position {p} past {} rows", l.len()))
                    })?;
                out.extend_from_slice(&src[i * row..(i + 1) * row]);
            }
            let child = arrow_data::ArrayData::builder(values.data_type().clone())
                .len(pos.len() * dim)
                .add_buffer(arrow_buffer::Buffer::from_vec(out))
                .build()?;
            return Ok(Arc::new(arrow_array::FixedSizeListArray::try_new(
                field.clone(),
                l.value_length(),
                arrow_array::make_array(child),
                None,
            )?));
        }
    }
    Ok(arrow_select::take::take(a.as_ref(), pos, None)?)
}
