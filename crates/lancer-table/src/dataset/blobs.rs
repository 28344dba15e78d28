//! Blob payloads by row without reading them whole (reference "Blob Columns", lines
//! ~6700–7160: `read_blobs`, `read_blob_ranges`, `take_blobs`).
//!
//! [`Dataset::blob_refs`] reads only the rows' descriptors and returns, per row, where
//! its payload lies ([`BlobRef`]: a source — the data file, a sidecar, an external
//! object — and a byte range in it); payload bytes are fetched later, only the ranges
//! asked for, every source's ranges in one batched request ([`read_refs`]). Legacy
//! blob columns (`lance-encoding:blob`, files 2.0 / 2.1) describe each payload as a
//! range of the data file ([`lancer_format::blob_read`]): served the same way.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::Array;
use bytes::Bytes;
use lancer_format::read::RangeRead;
use lancer_io::Store;

use super::Dataset;
use crate::blob::{BlobSources, Source};
use crate::{Result, TableError};

/// Where one row's blob payload lies.
#[derive(Clone)]
pub struct BlobRef {
    /// The row's address.
    pub address: u64,
    source: Arc<dyn RangeRead>,
    start: u64,
    size: u64,
}

impl std::fmt::Debug for BlobRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BlobRef(address {}, {} bytes)", self.address, self.size)
    }
}

impl BlobRef {
    /// The payload's size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The source range of payload bytes `range` (checked against the size).
    fn span(&self, range: &Range<u64>) -> Result<Range<u64>> {
        if range.start > range.end || range.end > self.size {
            return Err(TableError::invalid(format!(
                "blob range {}..{} exceeds the blob's {} bytes (row address {})",
                range.start, range.end, self.size, self.address
            )));
        }
        Ok(self.start + range.start..self.start + range.end)
    }

    /// Payload bytes `range` (relative to the payload's start).
    pub fn read(&self, range: Range<u64>) -> Result<Bytes> {
        if range.is_empty() {
            self.span(&range)?;
            return Ok(Bytes::new());
        }
        Ok(read_refs(&[(self, range)])?.pop().unwrap_or_default())
    }
}

/// A source and the ranges asked of it, by the position of their request.
type Group = (Arc<dyn RangeRead>, Vec<(usize, Range<u64>)>);

/// Reads `(blob, range)` pairs: the ranges of each source in one batched request,
/// empty ranges without I/O; the answers in the pairs' order.
pub fn read_refs(wanted: &[(&BlobRef, Range<u64>)]) -> Result<Vec<Bytes>> {
    let mut out = vec![Bytes::new(); wanted.len()];
    // sources by identity: the same opened file for every row it holds
    let mut groups: Vec<Group> = Vec::new();
    let mut by_ptr: HashMap<usize, usize> = HashMap::new();
    for (k, (b, r)) in wanted.iter().enumerate() {
        let span = b.span(r)?;
        if span.is_empty() {
            continue;
        }
        let key = Arc::as_ptr(&b.source) as *const () as usize;
        let g = *by_ptr.entry(key).or_insert_with(|| {
            groups.push((b.source.clone(), Vec::new()));
            groups.len() - 1
        });
        groups[g].1.push((k, span));
    }
    // sources read side by side (on object stores each is a request of its own)
    let read = |(source, list): &Group| -> Result<Vec<Bytes>> {
        let ranges: Vec<Range<u64>> = list.iter().map(|(_, r)| r.clone()).collect();
        let got = source.read_ranges(&ranges)?;
        if got.len() != ranges.len()
            || got
                .iter()
                .zip(&ranges)
                .any(|(b, r)| b.len() as u64 != r.end - r.start)
        {
            return Err(TableError::corrupt(
                "a blob source returned fewer bytes than its descriptor names (a truncated or \
                 replaced blob file)",
            ));
        }
        Ok(got)
    };
    let results = if groups.len() > 1 {
        crate::par::map_io(&groups, read)?
    } else {
        groups.iter().map(read).collect::<Result<Vec<_>>>()?
    };
    for ((_, list), got) in groups.iter().zip(results) {
        for ((k, _), b) in list.iter().zip(got) {
            out[*k] = b;
        }
    }
    Ok(out)
}

impl Dataset {
    /// `col` (column `lf` as data file `file_idx` of `frag`, read through `r`, stores
    /// it: field `flf` there) with its blob v2 descriptors — the column's own, or its
    /// blob columns inside structs — resolved to their payloads.
    pub(super) fn resolve_blobs(
        &self,
        frag: &crate::pb::DataFragment,
        file_idx: usize,
        r: &lancer_format::reader::FileReader,
        lf: &lancer_format::schema::LanceField,
        flf: &lancer_format::schema::LanceField,
        col: &arrow_array::ArrayRef,
    ) -> Result<arrow_array::ArrayRef> {
        let df = frag
            .files
            .get(file_idx)
            .ok_or_else(|| TableError::corrupt("a data file index past the fragment's files"))?;
        let (store, file) = self.data_file_location(df)?;
        let name = lf.name.clone();
        let base = |id: u32| -> Result<Store> {
            Ok(self
                .base_store(id, || format!("an external blob of {name:?}"))?
                .0)
        };
        let src = crate::blob::BlobSources {
            data: r.io(),
            store: &store,
            file: &file,
            options: &self.options,
            base: &base,
        };
        if lf.is_blob_v2() {
            return crate::blob::resolve_v2(col, &src, &lf.name);
        }
        crate::blob::map_nested_blobs(lf, flf, col, &mut |c, d| {
            crate::blob::resolve_v2(d, &src, &c.name)
        })
    }

    /// The top-level field index and child positions of column `column`: a top-level
    /// name, or a dotted path through structs (`s.b`).
    pub fn column_path(&self, column: &str) -> Option<(usize, Vec<usize>)> {
        if let Some(fi) = self.manifest.schema.field_index(column) {
            return Some((fi, Vec::new()));
        }
        let mut parts = column.split('.');
        let fi = self.manifest.schema.field_index(parts.next()?)?;
        let mut lf = &self.manifest.schema.fields[fi];
        let mut path = Vec::new();
        for p in parts {
            let k = lf.children.iter().position(|c| c.name == p)?;
            path.push(k);
            lf = &lf.children[k];
        }
        Some((fi, path))
    }

    /// The field column `column` names (see [`Self::column_path`]).
    pub fn field_at_path(&self, column: &str) -> Option<&lancer_format::schema::LanceField> {
        let (fi, path) = self.column_path(column)?;
        let mut lf = self.manifest.schema.fields.get(fi)?;
        for k in path {
            lf = lf.children.get(k)?;
        }
        Some(lf)
    }

    /// Where the payloads of blob column `column` lie for rows `addresses` (row
    /// addresses of this version, in any order, repeats allowed): one entry per address,
    /// `None` for a null blob. Only descriptors are read (legacy blob columns: their
    /// descriptions, ranges of the data file).
    pub fn blob_refs(&self, column: &str, addresses: &[u64]) -> Result<Vec<Option<BlobRef>>> {
        // `column` names a top-level column, or a blob inside structs by its path (`s.b`)
        let Some((fi, path)) = self.column_path(column) else {
            return Err(TableError::NotFound {
                what: format!(
                    "column {column:?} (the dataset has {})",
                    self.manifest
                        .schema
                        .fields
                        .iter()
                        .map(|f| f.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        };
        let mut lf = &self.manifest.schema.fields[fi];
        for &k in &path {
            lf = &lf.children[k];
        }
        if !lf.is_blob_v2() && !lf.is_blob() {
            return Err(TableError::invalid(format!(
                "the column {column:?} is not a blob column"
            )));
        }
        let d = self.with_blob_descriptions();
        let top = self.manifest.schema.fields[fi].name.clone();
        let batch = d.take_addresses_stored(addresses, Some(&[top.as_str()]))?;
        let mut desc = batch.column(0).clone();
        for &k in &path {
            let child = desc
                .as_struct_opt()
                .and_then(|s| s.columns().get(k).cloned())
                .ok_or_else(|| {
                    TableError::corrupt(format!("column {column:?}: no such struct field"))
                })?;
            // a null struct holds no blob
            let parent_nulls = desc.nulls().cloned();
            desc = match parent_nulls {
                Some(n) if n.null_count() > 0 => {
                    let merged = arrow_buffer::NullBuffer::union(Some(&n), child.nulls());
                    arrow_array::make_array(child.to_data().into_builder().nulls(merged).build()?)
                }
                _ => child,
            };
        }
        let located = if lf.is_blob_v2() {
            crate::blob::locate(&desc, column)?
        } else {
            crate::blob::locate_legacy(&desc, column)?
        };
        // sidecars are opened knowing the furthest byte their rows' descriptors name
        // (no request for their size; a short read is caught when the bytes arrive)
        let mut furthest: HashMap<(u64, Source), u64> = HashMap::new();
        for (&address, w) in addresses.iter().zip(&located) {
            if let Some((src @ Source::Sidecar(_), Some(r))) = w {
                let e = furthest.entry((address >> 32, src.clone())).or_default();
                *e = (*e).max(r.end);
            }
        }
        // opened sources by (fragment, source): each file opened once
        let mut opened: HashMap<(u64, Source), Arc<dyn RangeRead>> = HashMap::new();
        let mut files: HashMap<u64, (Arc<dyn RangeRead>, Store, String)> = HashMap::new();
        let index: HashMap<u64, usize> = self
            .fragments()
            .iter()
            .enumerate()
            .map(|(i, f)| (f.id, i))
            .collect();
        let mut out = Vec::with_capacity(addresses.len());
        for (&address, w) in addresses.iter().zip(located) {
            let Some((source, range)) = w else {
                out.push(None);
                continue;
            };
            let fid = address >> 32;
            if let std::collections::hash_map::Entry::Vacant(slot) = files.entry(fid) {
                let frag = index
                    .get(&fid)
                    .and_then(|&i| self.fragments().get(i))
                    .ok_or_else(|| TableError::corrupt("a blob row of a missing fragment"))?;
                let df = frag
                    .files
                    .iter()
                    .find(|f| f.fields.contains(&lf.id))
                    .ok_or_else(|| {
                        TableError::corrupt(format!(
                            "fragment {fid} has no data file holding blob column {column:?}"
                        ))
                    })?;
                let r = self.file_reader(frag, df)?;
                let (store, file) = self.data_file_location(df)?;
                slot.insert((r.io().clone(), store, file));
            }
            let key = (fid, source);
            let reader = match opened.get(&key) {
                Some(r) => r.clone(),
                None => {
                    let (data, store, file) = &files[&fid];
                    let base = |id: u32| -> Result<Store> {
                        Ok(self
                            .base_store(id, || format!("an external blob of {column:?}"))?
                            .0)
                    };
                    let src = BlobSources {
                        data,
                        store,
                        file,
                        options: &self.options,
                        base: &base,
                    };
                    let r = crate::blob::open(&key.1, &src, column, furthest.get(&key).copied())?;
                    opened.insert(key.clone(), r.clone());
                    r
                }
            };
            let (start, size) = match range {
                Some(r) => {
                    let total = reader.size()?;
                    if r.end > total {
                        return Err(TableError::corrupt(format!(
                            "blob column {column:?}, row address {address}: bytes {}..{} lie \
                             past the end of a {total}-byte source",
                            r.start, r.end
                        )));
                    }
                    (r.start, r.end - r.start)
                }
                None => (0, reader.size()?),
            };
            out.push(Some(BlobRef {
                address,
                source: reader,
                start,
                size,
            }));
        }
        Ok(out)
    }
}
