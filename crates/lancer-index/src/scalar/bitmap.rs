//! BITMAP and LABEL_LIST segments (`bitmap_page_lookup.lance`, docs/scalar-index-format.md
//! §5–§6; reference "Bitmap Index", "Label List Index"): one row per distinct value (for
//! LABEL_LIST, per distinct list element) with the RowAddrTreeMap of the rows holding
//! it; the null key holds the null rows (null elements). The keys are read at open;
//! bitmaps are read when a query needs them, and kept decoded (up to
//! [`DECODED_CACHE_BYTES`] of them over all open segments, as the reference keeps its
//! loaded bitmaps) so that a repeated value is not decoded again.

use std::collections::HashMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, BooleanArray};
use lancer_format::reader::FileReader;
use roaring::RoaringTreemap;

use super::{compare, equals_any, rowmap, Query};
use crate::segment::corrupt;
use crate::Result;

/// The most serialized bytes of bitmaps the open segments keep decoded, together; the
/// bitmaps asked after that are decoded for each query.
pub const DECODED_CACHE_BYTES: usize = 256 << 20;

/// Serialized bytes of the bitmaps kept decoded now (all segments).
static DECODED_BYTES: AtomicUsize = AtomicUsize::new(0);

/// An opened BITMAP or LABEL_LIST segment.
pub struct BitmapIndex {
    label: String,
    keys: ArrayRef,
    file: Arc<FileReader>,
    label_list: bool,
    decoded: Mutex<Decoded>,
}

/// The bitmaps a segment keeps decoded.
#[derive(Default)]
struct Decoded {
    /// By key row.
    bitmaps: HashMap<u64, Arc<RoaringTreemap>>,
    /// Serialized bytes they came from (their share of [`DECODED_BYTES`]).
    bytes: usize,
}

impl BitmapIndex {
    /// The type of the indexed values (a LABEL_LIST's: of the list elements).
    pub fn value_type(&self) -> arrow_schema::DataType {
        self.keys.data_type().clone()
    }

    /// pylance's statistics of a BITMAP / LABEL_LIST segment: its bitmaps (one per
    /// distinct value, and one for nulls).
    pub fn statistics(&self) -> serde_json::Value {
        serde_json::json!({ "num_bitmaps": self.keys.len() })
    }

    /// Reads the keys.
    pub fn open(label: &str, file: Arc<FileReader>, label_list: bool) -> Result<Self> {
        let names: Vec<String> = file
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        if names != ["keys", "bitmaps"] {
            return Err(corrupt(
                label,
                format!("bitmap_page_lookup.lance has columns {names:?}, not keys / bitmaps"),
            ));
        }
        let keys = file.read_all(Some(&["keys"]))?.column(0).clone();
        Ok(Self {
            label: label.to_string(),
            keys,
            file,
            label_list,
            decoded: Mutex::default(),
        })
    }

    /// The union of the bitmaps of the key rows where `mask` is true.
    fn union_of(&self, mask: &BooleanArray) -> Result<RoaringTreemap> {
        let rows: Vec<u64> = (0..mask.len())
            .filter(|&i| mask.value(i))
            .map(|i| i as u64)
            .collect();
        let mut out = RoaringTreemap::new();
        let mut missing = Vec::new();
        if let Ok(cache) = self.decoded.lock() {
            for r in rows {
                match cache.bitmaps.get(&r) {
                    Some(b) => out |= &**b,
                    None => missing.push(r),
                }
            }
        } else {
            missing = rows;
        }
        for chunk in missing.chunks(1024) {
            let b = self.file.take(chunk, Some(&["bitmaps"]))?;
            let values = binary_values(&self.label, b.column(0))?;
            for (&r, bytes) in chunk.iter().zip(values) {
                let one = rowmap::decode_addr_map(bytes).map_err(|e| corrupt(&self.label, e))?;
                out |= &one;
                self.keep(r, one, bytes.len());
            }
        }
        Ok(out)
    }

    /// Rows matching `q` (exact).
    pub fn query(&self, q: &Query) -> Result<Option<RoaringTreemap>> {
        let keys = self.keys.as_ref();
        let mask = match (q, self.label_list) {
            (Query::IsNull, false) => {
                BooleanArray::from((0..keys.len()).map(|i| keys.is_null(i)).collect::<Vec<_>>())
            }
            (Query::In(set), false) => equals_any(keys, set.as_ref())?,
            (Query::Range { lower, upper }, false) => {
                let lo = compare(keys, lower, false, false)?;
                let hi = compare(keys, upper, true, false)?;
                BooleanArray::new(lo.values() & hi.values(), None)
            }
            (Query::HasAny(set), true) => equals_any(keys, set.as_ref())?,
            (Query::HasAll(set), true) => {
                let mut acc: Option<RoaringTreemap> = None;
                for i in 0..set.len() {
                    let one = if set.is_null(i) {
                        // A null element is never "held" by SQL's array_has_all.
                        RoaringTreemap::new()
                    } else {
                        let b = Bound::Included(set.slice(i, 1));
                        let lo = compare(keys, &b, false, false)?;
                        let hi = compare(keys, &b, true, false)?;
                        self.union_of(&BooleanArray::new(lo.values() & hi.values(), None))?
                    };
                    acc = Some(match acc {
                        None => one,
                        Some(a) => a & one,
                    });
                }
                // An empty list: array_has_all is true for every non-null list, which
                // the index cannot enumerate.
                return Ok(acc);
            }
            _ => return Ok(None),
        };
        Ok(Some(self.union_of(&mask)?))
    }
}

impl BitmapIndex {
    /// Keeps `bitmap` (key row `r`, decoded from `n` bytes) when the budget of all
    /// segments has room for it.
    fn keep(&self, r: u64, bitmap: RoaringTreemap, n: usize) {
        if DECODED_BYTES.fetch_add(n, Ordering::Relaxed) + n <= DECODED_CACHE_BYTES {
            if let Ok(mut cache) = self.decoded.lock() {
                if !cache.bitmaps.contains_key(&r) {
                    cache.bytes += n;
                    cache.bitmaps.insert(r, Arc::new(bitmap));
                    return;
                }
            }
        }
        DECODED_BYTES.fetch_sub(n, Ordering::Relaxed);
    }
}

impl Drop for BitmapIndex {
    fn drop(&mut self) {
        let held = match self.decoded.get_mut() {
            Ok(cache) => cache.bytes,
            Err(poisoned) => poisoned.into_inner().bytes,
        };
        DECODED_BYTES.fetch_sub(held, Ordering::Relaxed);
    }
}

/// The values of a binary / large binary column (a null reads as empty, which decodes
/// as an error).
pub(crate) fn binary_values<'a>(label: &str, col: &'a ArrayRef) -> Result<Vec<&'a [u8]>> {
    if let Some(b) = col.as_binary_opt::<i32>() {
        return Ok((0..b.len())
            .map(|i| if b.is_null(i) { &[][..] } else { b.value(i) })
            .collect());
    }
    if let Some(b) = col.as_binary_opt::<i64>() {
        return Ok((0..b.len())
            .map(|i| if b.is_null(i) { &[][..] } else { b.value(i) })
            .collect());
    }
    Err(corrupt(
        label,
        format!("bitmaps of type {}", col.data_type()),
    ))
}
