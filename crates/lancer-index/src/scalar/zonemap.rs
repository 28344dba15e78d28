//! ZONEMAP segments (`zonemap.lance`, docs/scalar-index-format.md §7; reference "Zone
//! Map Index"): per zone of live rows of one fragment its min, max, null and NaN
//! counts and its span of row offsets; global buffer `null_bitmap` holds every null row.
//! Queries answer candidate zones (every row of their spans), `IS NULL` exactly.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type, UInt32Type, UInt64Type};
use arrow_array::{Array, ArrayRef, BooleanArray, Float32Array, Float64Array};
use arrow_schema::DataType;
use lancer_format::reader::FileReader;
use roaring::RoaringTreemap;

use super::{compare, insert_span, prefix_range, rowmap, Query};
use crate::segment::corrupt;
use crate::Result;

/// Zone spans shared by ZONEMAP and BLOOMFILTER: fragment, first offset, length.
#[derive(Clone, Debug, Default)]
pub struct Zones {
    /// Fragment of each zone.
    pub fragment: Vec<u64>,
    /// First row offset of each zone.
    pub start: Vec<u64>,
    /// Offsets spanned by each zone.
    pub length: Vec<u64>,
}

impl Zones {
    /// Reads the three columns from a batch of the index file.
    pub(crate) fn read(label: &str, b: &arrow_array::RecordBatch) -> Result<Self> {
        let col = |name: &str| -> Result<Vec<u64>> {
            Ok(b.column_by_name(name)
                .and_then(|c| c.as_primitive_opt::<UInt64Type>())
                .ok_or_else(|| corrupt(label, format!("{name} is missing or not uint64")))?
                .values()
                .to_vec())
        };
        Ok(Self {
            fragment: col("fragment_id")?,
            start: col("zone_start")?,
            length: col("zone_length")?,
        })
    }

    /// Every row of the zones where `keep` holds.
    pub(crate) fn rows(&self, keep: impl Fn(usize) -> bool) -> RoaringTreemap {
        let mut out = RoaringTreemap::new();
        for z in 0..self.fragment.len() {
            if keep(z) {
                insert_span(&mut out, self.fragment[z], self.start[z], self.length[z]);
            }
        }
        out
    }
}

/// The null rows of a zoned index (global buffer named by `null_bitmap`), if it has
/// them.
pub(crate) fn null_rows(label: &str, file: &FileReader) -> Result<Option<RoaringTreemap>> {
    let Some(pos) = file.metadata().schema.metadata.get("null_bitmap") else {
        return Ok(None);
    };
    let bytes = crate::segment::global_buffer(file, label, pos)?;
    Ok(Some(
        rowmap::decode_addr_map(&bytes).map_err(|e| corrupt(label, e))?,
    ))
}

/// An opened ZONEMAP segment.
pub struct ZoneMapIndex {
    min: ArrayRef,
    max: ArrayRef,
    null_count: Vec<u32>,
    zones: Zones,
    nulls: Option<RoaringTreemap>,
    /// Rows per zone the index was built with (file metadata `rows_per_zone`).
    rows_per_zone: Option<u64>,
}

impl ZoneMapIndex {
    /// Reads the zones.
    pub fn open(label: &str, file: Arc<FileReader>) -> Result<Self> {
        let b = file.read_all(None)?;
        let zones = Zones::read(label, &b)?;
        let null_count = b
            .column_by_name("null_count")
            .and_then(|c| c.as_primitive_opt::<UInt32Type>())
            .ok_or_else(|| corrupt(label, "null_count is missing or not uint32"))?
            .values()
            .to_vec();
        let (Some(min), Some(max)) = (b.column_by_name("min"), b.column_by_name("max")) else {
            return Err(corrupt(label, "zonemap.lance lacks min / max"));
        };
        Ok(Self {
            min: widen_zeros(min, true),
            max: widen_zeros(max, false),
            null_count,
            zones,
            nulls: null_rows(label, &file)?,
            rows_per_zone: file
                .schema()
                .metadata()
                .get("rows_per_zone")
                .and_then(|v| v.parse().ok()),
        })
    }

    /// The type of the indexed values (the zones' bounds).
    pub fn value_type(&self) -> DataType {
        self.min.data_type().clone()
    }

    /// pylance's statistics of a ZONEMAP segment: zones and rows per zone.
    pub fn statistics(&self) -> serde_json::Value {
        serde_json::json!({
            "num_zones": self.zones.fragment.len(),
            "rows_per_zone": self.rows_per_zone,
        })
    }

    /// Candidate rows for `q` (exact for `IS NULL`).
    pub fn query(&self, q: &Query) -> Result<Option<RoaringTreemap>> {
        let n = self.zones.fragment.len();
        let overlap = |lower: &std::ops::Bound<ArrayRef>,
                       upper: &std::ops::Bound<ArrayRef>|
         -> Result<BooleanArray> {
            // A zone without non-null values has null min / max: never a candidate.
            let a = compare(self.max.as_ref(), lower, false, false)?;
            let b = compare(self.min.as_ref(), upper, true, false)?;
            Ok(BooleanArray::new(a.values() & b.values(), None))
        };
        let mask = match q {
            Query::IsNull => {
                if let Some(n) = &self.nulls {
                    return Ok(Some(n.clone()));
                }
                BooleanArray::from(self.null_count.iter().map(|&c| c > 0).collect::<Vec<_>>())
            }
            Query::Range { lower, upper } => overlap(lower, upper)?,
            Query::In(set) => {
                let mut m = vec![false; n];
                for i in 0..set.len() {
                    if set.is_null(i) {
                        continue;
                    }
                    let b = std::ops::Bound::Included(set.slice(i, 1));
                    let one = overlap(&b, &b)?;
                    for (z, hit) in m.iter_mut().enumerate() {
                        *hit |= one.value(z);
                    }
                }
                BooleanArray::from(m)
            }
            Query::Prefix(p) => {
                let (lo, hi) = prefix_range(p, self.min.as_ref())?;
                overlap(&lo, &hi)?
            }
            _ => return Ok(None),
        };
        Ok(Some(self.zones.rows(|z| mask.value(z))))
    }
}

/// A float zone holding both zeros may store either one as its min / max, and SQL may
/// ask for the other: lowers `+0.0` minimums to `-0.0` and raises `-0.0` maximums to
/// `+0.0`, so pruning in total order never loses a zero.
fn widen_zeros(a: &ArrayRef, is_min: bool) -> ArrayRef {
    let (from, to) = if is_min {
        (0.0f64, -0.0f64)
    } else {
        (-0.0, 0.0)
    };
    match a.data_type() {
        DataType::Float64 => {
            let v = a.as_primitive::<Float64Type>();
            Arc::new(Float64Array::from_iter(v.iter().map(|x| {
                x.map(|x| if x.to_bits() == from.to_bits() { to } else { x })
            })))
        }
        DataType::Float32 => {
            let v = a.as_primitive::<Float32Type>();
            let (from, to) = (from as f32, to as f32);
            Arc::new(Float32Array::from_iter(v.iter().map(|x| {
                x.map(|x| if x.to_bits() == from.to_bits() { to } else { x })
            })))
        }
        _ => a.clone(),
    }
}
