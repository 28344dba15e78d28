//! The blob API (reference "Blob Columns", lines ~6700–7160): complete payloads
//! ([`read_blobs`]), byte ranges of many rows in one planned call
//! ([`read_blob_ranges`]) and lazy handles that fetch only what is read
//! ([`take_blobs`] → [`BlobFile`]).
//!
//! Rows are chosen by exactly one selector ([`Selection`]): dataset indices (positions
//! among the version's live rows), stable row ids, or row addresses. Only the selected
//! rows' descriptors are read; payload bytes are fetched per source (the data file, a
//! sidecar, an external object) in one batched request of all the ranges asked from it.

use std::ops::Range;

use bytes::Bytes;
use lancer_table::dataset::{read_refs, BlobRef};

use crate::{Dataset, Result, TableError};

/// Which rows a blob call reads (pylance's `ids=` / `indices=` / `addresses=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selector {
    /// Stable row ids (row addresses in datasets without stable row ids).
    Ids,
    /// Positions among the version's live rows.
    Indices,
    /// Row addresses (`fragment id << 32 | row`).
    Addresses,
}

impl Selector {
    /// The selector pylance names `name` (`ids`, `indices`, `addresses`).
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "ids" => Ok(Self::Ids),
            "indices" => Ok(Self::Indices),
            "addresses" => Ok(Self::Addresses),
            other => Err(TableError::invalid(format!(
                "selector must be one of 'ids', 'addresses', or 'indices', got {other:?}"
            ))
            .into()),
        }
    }
}

/// Rows chosen by one selector.
#[derive(Debug, Clone, Copy)]
pub struct Selection<'a> {
    /// How `rows` are read.
    pub selector: Selector,
    /// The rows.
    pub rows: &'a [u64],
}

/// The row addresses of `sel` in `ds`.
pub fn addresses(ds: &Dataset, sel: Selection<'_>) -> Result<Vec<u64>> {
    Ok(match sel.selector {
        Selector::Addresses => sel.rows.to_vec(),
        Selector::Indices => ds.row_addresses(sel.rows)?,
        Selector::Ids if ds.uses_stable_row_ids() => ds.addresses_of_row_ids(sel.rows)?,
        Selector::Ids => sel.rows.to_vec(),
    })
}

/// A blob's payload as a lazily read file: only the bytes asked for are fetched.
#[derive(Debug, Clone)]
pub struct BlobFile {
    blob: BlobRef,
}

impl BlobFile {
    /// The row's address.
    pub fn address(&self) -> u64 {
        self.blob.address
    }

    /// The payload's size in bytes.
    pub fn size(&self) -> u64 {
        self.blob.size()
    }

    /// Payload bytes `range` (an error past the end).
    pub fn read_range(&self, range: Range<u64>) -> Result<Bytes> {
        Ok(self.blob.read(range)?)
    }

    /// Several ranges of the payload in one request.
    pub fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let wanted: Vec<(&BlobRef, Range<u64>)> =
            ranges.iter().map(|r| (&self.blob, r.clone())).collect();
        Ok(read_refs(&wanted)?)
    }
}

/// Handles on the blobs of `column` at the selected rows, one per row in order (`None`
/// for a null blob): nothing but the descriptors is read until a handle is.
pub fn take_blobs(ds: &Dataset, column: &str, sel: Selection<'_>) -> Result<Vec<Option<BlobFile>>> {
    let addrs = addresses(ds, sel)?;
    Ok(ds
        .blob_refs(column, &addrs)?
        .into_iter()
        .map(|b| b.map(|blob| BlobFile { blob }))
        .collect())
}

/// The complete payloads of `column` at the selected rows: `(row address, bytes)` per
/// row (`None` for a null blob), in the selection's order, or by address when
/// `preserve_order` is false.
pub fn read_blobs(
    ds: &Dataset,
    column: &str,
    sel: Selection<'_>,
    preserve_order: bool,
) -> Result<Vec<(u64, Option<Bytes>)>> {
    let addrs = addresses(ds, sel)?;
    let refs = ds.blob_refs(column, &addrs)?;
    let wanted: Vec<(&BlobRef, Range<u64>)> =
        refs.iter().flatten().map(|b| (b, 0..b.size())).collect();
    let mut got = read_refs(&wanted)?.into_iter();
    let mut out: Vec<(u64, Option<Bytes>)> = addrs
        .iter()
        .zip(&refs)
        .map(|(&a, r)| (a, r.as_ref().and_then(|_| got.next())))
        .collect();
    if !preserve_order {
        out.sort_by_key(|(a, _)| *a);
    }
    Ok(out)
}

/// One byte range of one row's blob: `(row, offset, length)`, `row` read by the call's
/// selector.
pub type RangeRequest = (u64, u64, u64);

/// Byte ranges of many rows' blobs in one planned call: `(request index, row address,
/// bytes)` per request (`None` on a null blob, whatever the range), in request order or
/// by address when `preserve_order` is false. A range past a blob's end is an error
/// naming the request; an empty range on a non-null blob reads nothing.
pub fn read_blob_ranges(
    ds: &Dataset,
    column: &str,
    requests: &[RangeRequest],
    selector: Selector,
    preserve_order: bool,
) -> Result<Vec<(usize, u64, Option<Bytes>)>> {
    let rows: Vec<u64> = requests.iter().map(|r| r.0).collect();
    let addrs = addresses(
        ds,
        Selection {
            selector,
            rows: &rows,
        },
    )?;
    let refs = ds.blob_refs(column, &addrs)?;
    let mut wanted: Vec<(&BlobRef, Range<u64>)> = Vec::new();
    for (k, (req, r)) in requests.iter().zip(&refs).enumerate() {
        let Some(b) = r else { continue };
        let (_, offset, length) = *req;
        let end = offset.checked_add(length).ok_or_else(|| {
            TableError::invalid(format!(
                "blob range request {k}: offset {offset} + length {length} overflows 64 bits"
            ))
        })?;
        if end > b.size() {
            return Err(TableError::invalid(format!(
                "blob range request {k} for row address {}: range end {end} exceeds blob size {}",
                b.address,
                b.size()
            ))
            .into());
        }
        wanted.push((b, offset..end));
    }
    let mut got = read_refs(&wanted)?.into_iter();
    let mut out: Vec<(usize, u64, Option<Bytes>)> = addrs
        .iter()
        .zip(&refs)
        .enumerate()
        .map(|(k, (&a, r))| (k, a, r.as_ref().and_then(|_| got.next())))
        .collect();
    if !preserve_order {
        out.sort_by_key(|(k, a, _)| (*a, *k));
    }
    Ok(out)
}
