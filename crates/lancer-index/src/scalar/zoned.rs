//! Streaming builds of the zoned kinds, ZONEMAP and BLOOMFILTER (docs/scalar-index-format.md
//! §7–§8; reference "Zone Map Index" and "Bloom Filter Index"). Rows arrive in dataset
//! order with their addresses; a zone is a run of `per_zone` rows that never crosses a
//! fragment (`zone_length` spans deleted rows between its first and last row). Only the
//! open zone's rows are held — slices of the arriving batches — and each zone's statistics
//! (min / max / null and NaN counts, or its bloom filter) are taken when it closes, so
//! memory stays near one zone plus the finished statistics whatever the column's size.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::types::*;
use arrow_array::{
    Array, ArrayRef, ArrowNativeTypeOp, ArrowPrimitiveType, BinaryArray, BooleanArray,
    PrimitiveArray, RecordBatch, UInt32Array, UInt64Array,
};
use arrow_ord::ord::make_comparator;
use arrow_schema::{DataType, Field, Schema, SortOptions};
use roaring::RoaringTreemap;

use lancer_format::reader::FileReader;

use super::build::{write_file, ScalarParams};
use super::{bloom, rowmap, ScalarKind};
use crate::{IndexError, Result};

fn invalid(what: impl Into<String>) -> IndexError {
    IndexError::InvalidArgument { what: what.into() }
}

/// Zones under construction and the statistics of the finished ones.
pub(super) struct ZoneBuilder {
    bloom: bool,
    per_zone: usize,
    data_type: DataType,
    /// Addresses of null rows (the segment's null bitmap).
    nulls: RoaringTreemap,
    fragment: Vec<u64>,
    start: Vec<u64>,
    length: Vec<u64>,
    /// ZONEMAP: each zone's min and max as one-row arrays (null when the zone has no
    /// valid value), null and NaN counts.
    mins: Vec<ArrayRef>,
    maxs: Vec<ArrayRef>,
    null_counts: Vec<u32>,
    nan_counts: Vec<u32>,
    /// BLOOMFILTER: whether the zone has a null, its filter bits.
    has_null: Vec<bool>,
    filters: Vec<Vec<u8>>,
    filter_bytes: usize,
    /// The open zone: slices of the arriving batches, its row count, first and last
    /// address.
    open: Vec<ArrayRef>,
    open_rows: usize,
    first: u64,
    last: u64,
}

impl ZoneBuilder {
    pub(super) fn new(p: &ScalarParams, data_type: &DataType) -> Self {
        let bloom = p.kind == ScalarKind::BloomFilter;
        let per_zone = if bloom { p.bloom_items } else { p.zone_rows };
        Self {
            bloom,
            per_zone: usize::try_from(per_zone).unwrap_or(usize::MAX).max(1),
            data_type: data_type.clone(),
            nulls: RoaringTreemap::new(),
            fragment: Vec::new(),
            start: Vec::new(),
            length: Vec::new(),
            mins: Vec::new(),
            maxs: Vec::new(),
            null_counts: Vec::new(),
            nan_counts: Vec::new(),
            has_null: Vec::new(),
            filters: Vec::new(),
            filter_bytes: if bloom {
                bloom::filter_bytes(p.bloom_items, p.bloom_probability)
            } else {
                0
            },
            open: Vec::new(),
            open_rows: 0,
            first: 0,
            last: 0,
        }
    }

    /// Adds rows `values` at `addresses` (ascending, after every earlier row).
    pub(super) fn push(&mut self, values: &ArrayRef, addresses: &[u64]) -> Result<()> {
        if values.null_count() > 0 {
            for (i, &a) in addresses.iter().enumerate() {
                if values.is_null(i) {
                    self.nulls.insert(a);
                }
            }
        }
        let n = addresses.len();
        if values.len() != n {
            return Err(invalid(format!(
                "{} values for {n} row addresses",
                values.len()
            )));
        }
        // a zone's rows ascend within their fragment (fragments may come in any order:
        // a compacted dataset lists its rewritten fragments where the old ones were)
        let pushed = self.open_rows > 0 || !self.fragment.is_empty();
        let mut prev = pushed.then_some(self.last);
        for &a in addresses {
            if let Some(p) = prev.filter(|&p| p >> 32 == a >> 32 && a <= p) {
                return Err(invalid(format!(
                    "row address {a} arrived after {p}: zoned index builds need each fragment's rows in ascending order"
                )));
            }
            prev = Some(a);
        }
        let mut i = 0;
        while i < n {
            let frag = addresses[i] >> 32;
            if self.open_rows > 0 && self.first >> 32 != frag {
                self.close()?;
            }
            if self.open_rows == 0 {
                self.first = addresses[i];
            }
            let limit = i + (n - i).min(self.per_zone - self.open_rows);
            let end = addresses[i..limit]
                .iter()
                .position(|a| a >> 32 != frag)
                .map_or(limit, |p| i + p);
            self.open.push(values.slice(i, end - i));
            self.open_rows += end - i;
            self.last = addresses[end - 1];
            i = end;
            if self.open_rows == self.per_zone {
                self.close()?;
            }
        }
        Ok(())
    }

    /// Takes the open zone's statistics.
    fn close(&mut self) -> Result<()> {
        let pieces = std::mem::take(&mut self.open);
        self.open_rows = 0;
        self.fragment.push(self.first >> 32);
        self.start.push(self.first & 0xFFFF_FFFF);
        self.length.push(self.last - self.first + 1);
        if self.bloom {
            // hashed piece by piece: a filter needs no joined copy of the zone
            let mut f = vec![0u8; self.filter_bytes];
            let mut buf = Vec::new();
            for values in &pieces {
                for i in (0..values.len()).filter(|&i| values.is_valid(i)) {
                    buf.clear();
                    bloom::value_bytes(values.as_ref(), i, &mut buf).ok_or_else(|| {
                        invalid(format!("bloom filter on {}", values.data_type()))
                    })?;
                    bloom::insert(&mut f, bloom::hash(&buf));
                }
            }
            self.has_null
                .push(pieces.iter().any(|v| v.null_count() > 0));
            self.filters.push(f);
            return Ok(());
        }
        let values = match pieces.as_slice() {
            [one] => one.clone(),
            _ => {
                let refs: Vec<&dyn Array> = pieces.iter().map(|a| a.as_ref()).collect();
                arrow_select::concat::concat(&refs)?
            }
        };
        let (lo, hi, nans) = extrema(values.as_ref())?;
        // a zone without a valid value stores a null min / max (zeroed underneath)
        let pick = |i: Option<usize>| -> Result<ArrayRef> {
            Ok(match i {
                // a copy, not a slice: a slice would keep the whole batch alive
                Some(i) => arrow_select::take::take(
                    values.as_ref(),
                    &UInt32Array::from(vec![i as u32]),
                    None,
                )?,
                None => arrow_array::new_null_array(values.data_type(), 1),
            })
        };
        self.mins.push(pick(lo)?);
        self.maxs.push(pick(hi)?);
        self.null_counts.push(values.null_count() as u32);
        self.nan_counts.push(nans);
        Ok(())
    }

    /// Appends the zones of another segment's file, as built (a merge of segments
    /// over disjoint fragments, taken in dataset order: zones never cross a fragment,
    /// so the zones of one build over all of them are these, in this order). Its null
    /// rows join the null bitmap.
    pub(super) fn absorb(&mut self, label: &str, file: &FileReader) -> Result<()> {
        use arrow_array::cast::AsArray;
        let bad = |what: String| crate::segment::corrupt(label, what);
        if self.open_rows > 0 {
            return Err(invalid("zones absorbed after rows were pushed"));
        }
        let b = file.read_all(None)?;
        let zones = super::zonemap::Zones::read(label, &b)?;
        let n = zones.fragment.len();
        if self.bloom {
            let has_null = b
                .column_by_name("has_null")
                .and_then(|c| c.as_boolean_opt())
                .ok_or_else(|| bad("has_null is missing or not boolean".into()))?;
            let filters = b
                .column_by_name("bloom_filter_data")
                .and_then(|c| c.as_binary_opt::<i32>())
                .ok_or_else(|| bad("bloom_filter_data is missing or not binary".into()))?;
            for z in 0..n {
                let f = filters.value(z);
                if f.len() != self.filter_bytes {
                    return Err(invalid(format!(
                        "{label}: filters of {} bytes, this build's are {} (another \
                         number_of_items / probability)",
                        f.len(),
                        self.filter_bytes
                    )));
                }
                self.has_null.push(has_null.value(z));
                self.filters.push(f.to_vec());
            }
        } else {
            let col = |name: &str| {
                b.column_by_name(name)
                    .ok_or_else(|| bad(format!("{name} is missing")))
            };
            let (min, max) = (col("min")?, col("max")?);
            if min.data_type() != &self.data_type || max.data_type() != &self.data_type {
                return Err(invalid(format!(
                    "{label}: zones of {} values, the column holds {}",
                    min.data_type(),
                    self.data_type
                )));
            }
            let counts = |name: &str| -> Result<Vec<u32>> {
                Ok(col(name)?
                    .as_primitive_opt::<UInt32Type>()
                    .ok_or_else(|| bad(format!("{name} is not uint32")))?
                    .values()
                    .to_vec())
            };
            for z in 0..n {
                self.mins.push(min.slice(z, 1));
                self.maxs.push(max.slice(z, 1));
            }
            self.null_counts.extend(counts("null_count")?);
            self.nan_counts.extend(counts("nan_count")?);
        }
        self.fragment.extend(zones.fragment);
        self.start.extend(zones.start);
        self.length.extend(zones.length);
        if let Some(nulls) = super::zonemap::null_rows(label, file)? {
            self.nulls |= nulls;
        }
        Ok(())
    }

    /// The segment's file: `zonemap.lance` or `bloomfilter.lance`.
    pub(super) fn finish(mut self, p: &ScalarParams) -> Result<Vec<(String, Vec<u8>)>> {
        if self.open_rows > 0 {
            self.close()?;
        }
        let u64f = |n: &str| Field::new(n, DataType::UInt64, false);
        let frag: ArrayRef = Arc::new(UInt64Array::from(std::mem::take(&mut self.fragment)));
        let start: ArrayRef = Arc::new(UInt64Array::from(std::mem::take(&mut self.start)));
        let length: ArrayRef = Arc::new(UInt64Array::from(std::mem::take(&mut self.length)));
        let null_map = vec![rowmap::encode_addr_map(&self.nulls)];
        if self.bloom {
            let schema = Schema::new(vec![
                u64f("fragment_id"),
                u64f("zone_start"),
                u64f("zone_length"),
                Field::new("has_null", DataType::Boolean, false),
                // Filter bits are near random: FSST gains ~10% and costs its training
                // on the build and its decoding on every first query of the index, so
                // they are stored plain, as pylance 14 stores them.
                Field::new("bloom_filter_data", DataType::Binary, false).with_metadata(
                    HashMap::from([("lance-encoding:compression".to_string(), "none".to_string())]),
                ),
            ])
            .with_metadata(HashMap::from([
                ("bloomfilter_item".to_string(), p.bloom_items.to_string()),
                (
                    "bloomfilter_probability".to_string(),
                    p.bloom_probability.to_string(),
                ),
                ("null_bitmap".to_string(), "1".to_string()),
            ]));
            let columns: Vec<ArrayRef> = vec![
                frag,
                start,
                length,
                Arc::new(BooleanArray::from(std::mem::take(&mut self.has_null))),
                Arc::new(BinaryArray::from_iter_values(self.filters.iter())),
            ];
            return one_file(p, "bloomfilter.lance", schema, columns, null_map);
        }
        let joined = |parts: &[ArrayRef]| -> Result<ArrayRef> {
            if parts.is_empty() {
                return Ok(arrow_array::new_empty_array(&self.data_type));
            }
            let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
            Ok(arrow_select::concat::concat(&refs)?)
        };
        let min = joined(&self.mins)?;
        let max = joined(&self.maxs)?;
        let t = self.data_type.clone();
        let schema = Schema::new(vec![
            Field::new("min", t.clone(), true),
            Field::new("max", t, true),
            Field::new("null_count", DataType::UInt32, false),
            Field::new("nan_count", DataType::UInt32, false),
            u64f("fragment_id"),
            u64f("zone_start"),
            u64f("zone_length"),
        ])
        .with_metadata(HashMap::from([
            ("rows_per_zone".to_string(), p.zone_rows.to_string()),
            ("null_bitmap".to_string(), "1".to_string()),
        ]));
        let columns: Vec<ArrayRef> = vec![
            min,
            max,
            Arc::new(UInt32Array::from(std::mem::take(&mut self.null_counts))),
            Arc::new(UInt32Array::from(std::mem::take(&mut self.nan_counts))),
            frag,
            start,
            length,
        ];
        one_file(p, "zonemap.lance", schema, columns, null_map)
    }
}

/// The segment's one file `name`: `columns` as one batch of `schema`, with the null map
/// as its global buffer.
fn one_file(
    p: &ScalarParams,
    name: &str,
    schema: Schema,
    columns: Vec<ArrayRef>,
    null_map: Vec<Vec<u8>>,
) -> Result<Vec<(String, Vec<u8>)>> {
    let batch = RecordBatch::try_new(Arc::new(schema.clone()), columns)?;
    Ok(vec![(
        name.into(),
        write_file(p, schema, &[batch], null_map)?,
    )])
}

/// Positions of the first minimum and first maximum of the valid values of `values`
/// (arrow's total order: a NaN sorts above every number, so it is the maximum when
/// present and the minimum only when alone), and the number of NaNs.
fn extrema(values: &dyn Array) -> Result<(Option<usize>, Option<usize>, u32)> {
    macro_rules! typed {
        ($($t:ty),*) => {
            $(if let Some(a) = values.as_any().downcast_ref::<PrimitiveArray<$t>>() {
                return Ok(primitive_extrema(a));
            })*
        };
    }
    typed!(
        Int8Type,
        Int16Type,
        Int32Type,
        Int64Type,
        UInt8Type,
        UInt16Type,
        UInt32Type,
        UInt64Type,
        Float16Type,
        Float32Type,
        Float64Type,
        Date32Type,
        Date64Type,
        Time32SecondType,
        Time32MillisecondType,
        Time64MicrosecondType,
        Time64NanosecondType,
        TimestampSecondType,
        TimestampMillisecondType,
        TimestampMicrosecondType,
        TimestampNanosecondType,
        DurationSecondType,
        DurationMillisecondType,
        DurationMicrosecondType,
        DurationNanosecondType,
        Decimal128Type
    );
    // Every other type: arrow's comparator, one dynamic call per comparison.
    let cmp = make_comparator(values, values, SortOptions::default())?;
    let is_nan = |i: usize| -> bool {
        match values.data_type() {
            DataType::Float32 => values
                .as_any()
                .downcast_ref::<Float32Array>()
                .is_some_and(|a| a.value(i).is_nan()),
            DataType::Float64 => values
                .as_any()
                .downcast_ref::<Float64Array>()
                .is_some_and(|a| a.value(i).is_nan()),
            _ => false,
        }
    };
    let (mut lo, mut hi): (Option<usize>, Option<usize>) = (None, None);
    let mut nans = 0u32;
    for i in (0..values.len()).filter(|&i| values.is_valid(i)) {
        nans += u32::from(is_nan(i));
        if lo.is_none_or(|l| cmp(i, l).is_lt()) {
            lo = Some(i);
        }
        if hi.is_none_or(|h| cmp(i, h).is_gt()) {
            hi = Some(i);
        }
    }
    Ok((lo, hi, nans))
}

type Float32Array = PrimitiveArray<Float32Type>;
type Float64Array = PrimitiveArray<Float64Type>;

/// [`extrema`] of a primitive array: its values compared as arrow compares them
/// (`ArrowNativeTypeOp::compare`, a total order for floats).
fn primitive_extrema<T: ArrowPrimitiveType>(
    a: &PrimitiveArray<T>,
) -> (Option<usize>, Option<usize>, u32) {
    let v = a.values();
    // A value unordered against itself is a NaN (floats only).
    let nan = |x: T::Native| u32::from(x.partial_cmp(&x).is_none());
    if a.null_count() == 0 {
        let Some(&first) = v.first() else {
            return (None, None, 0);
        };
        let (mut lo, mut hi) = (0usize, 0usize);
        let (mut lv, mut hv) = (first, first);
        let mut nans = nan(first);
        for (i, &x) in v.iter().enumerate().skip(1) {
            nans += nan(x);
            if x.compare(lv).is_lt() {
                lo = i;
                lv = x;
            }
            if x.compare(hv).is_gt() {
                hi = i;
                hv = x;
            }
        }
        return (Some(lo), Some(hi), nans);
    }
    let (mut lo, mut hi): (Option<usize>, Option<usize>) = (None, None);
    let mut nans = 0u32;
    for i in (0..v.len()).filter(|&i| a.is_valid(i)) {
        let x = v[i];
        nans += nan(x);
        if lo.is_none_or(|l| x.compare(v[l]).is_lt()) {
            lo = Some(i);
        }
        if hi.is_none_or(|h| x.compare(v[h]).is_gt()) {
            hi = Some(i);
        }
    }
    (lo, hi, nans)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::Float32Array;
    use bytes::Bytes;
    use lancer_format::reader::FileReader;

    /// Rows over three fragments with deleted gaps, NaNs, nulls, a +0.0 / -0.0 pair and a
    /// zone of only NaN / null.
    fn rows() -> (ArrayRef, Vec<u64>) {
        let mut vals: Vec<Option<f32>> = Vec::new();
        let mut addrs = Vec::new();
        for (frag, n) in [(0u64, 150usize), (3, 10), (4, 70)] {
            for r in 0..n {
                if r % 11 == 5 {
                    continue; // deleted
                }
                let v = match (frag, r % 13) {
                    (3, k) if k % 2 == 0 => Some(f32::NAN),
                    (3, _) => None,
                    (_, 0) => None,
                    (_, 1) => Some(f32::NAN),
                    (_, 2) => Some(-0.0),
                    (_, 3) => Some(0.0),
                    _ => Some(((r * 7919 + frag as usize) % 101) as f32 - 50.0),
                };
                vals.push(v);
                addrs.push(frag << 32 | r as u64);
            }
        }
        (Arc::new(Float32Array::from(vals)), addrs)
    }

    fn build(kind: ScalarKind, values: &ArrayRef, addrs: &[u64], split: usize) -> Vec<u8> {
        let mut p = ScalarParams::new(kind);
        p.zone_rows = 16;
        p.bloom_items = 16;
        let mut z = ZoneBuilder::new(&p, values.data_type());
        let mut at = 0;
        while at < addrs.len() {
            let n = split.min(addrs.len() - at);
            z.push(&values.slice(at, n), &addrs[at..at + n]).unwrap();
            at += n;
        }
        z.finish(&p).unwrap().remove(0).1
    }

    #[test]
    fn zones_do_not_depend_on_how_rows_arrive_and_match_a_direct_count() {
        let (values, addrs) = rows();
        for kind in [ScalarKind::ZoneMap, ScalarKind::BloomFilter] {
            let whole = build(kind, &values, &addrs, usize::MAX);
            for split in [1, 3, 16, 17, 100] {
                assert_eq!(
                    build(kind, &values, &addrs, split),
                    whole,
                    "{kind:?} split {split}"
                );
            }
        }
        let file = FileReader::open(Arc::new(Bytes::from(build(
            ScalarKind::ZoneMap,
            &values,
            &addrs,
            7,
        ))))
        .unwrap();
        let b = file.read_all(None).unwrap();
        // The same zones counted directly: runs of 16 rows within a fragment.
        let vals = values.as_primitive::<Float32Type>();
        let mut at = 0;
        let mut z = 0;
        while at < addrs.len() {
            let frag = addrs[at] >> 32;
            let mut end = at;
            while end < addrs.len() && end - at < 16 && addrs[end] >> 32 == frag {
                end += 1;
            }
            let valid: Vec<f32> = (at..end)
                .filter(|&i| vals.is_valid(i))
                .map(|i| vals.value(i))
                .collect();
            let min = valid.iter().copied().min_by(|a, b| a.total_cmp(b));
            let max = valid.iter().copied().max_by(|a, b| a.total_cmp(b));
            let got = |c: &str| {
                b.column_by_name(c)
                    .unwrap()
                    .as_primitive::<Float32Type>()
                    .clone()
            };
            let (gmin, gmax) = (got("min"), got("max"));
            assert_eq!(
                gmin.is_valid(z).then(|| gmin.value(z).to_bits()),
                min.map(f32::to_bits),
                "zone {z} min"
            );
            assert_eq!(
                gmax.is_valid(z).then(|| gmax.value(z).to_bits()),
                max.map(f32::to_bits),
                "zone {z} max"
            );
            let u32s = |c: &str| {
                b.column_by_name(c)
                    .unwrap()
                    .as_primitive::<arrow_array::types::UInt32Type>()
                    .value(z)
            };
            assert_eq!(
                u32s("null_count") as usize,
                (at..end).filter(|&i| vals.is_null(i)).count()
            );
            assert_eq!(
                u32s("nan_count") as usize,
                valid.iter().filter(|v| v.is_nan()).count()
            );
            let u64s = |c: &str| {
                b.column_by_name(c)
                    .unwrap()
                    .as_primitive::<UInt64Type>()
                    .value(z)
            };
            assert_eq!(u64s("fragment_id"), frag);
            assert_eq!(u64s("zone_start"), addrs[at] & 0xFFFF_FFFF);
            assert_eq!(u64s("zone_length"), addrs[end - 1] - addrs[at] + 1);
            at = end;
            z += 1;
        }
        assert_eq!(b.num_rows(), z);
    }

    #[test]
    fn all_null_zones_huge_zones_and_out_of_order_rows() {
        // a zone of only nulls after a valid one: null min / max with zeroed values
        let values: ArrayRef = Arc::new(arrow_array::Int64Array::from(
            [vec![Some(5i64); 16], vec![None; 16]].concat(),
        ));
        let addrs: Vec<u64> = (0..32).collect();
        let file = build(ScalarKind::ZoneMap, &values, &addrs, 10);
        let b = FileReader::open(Arc::new(Bytes::from(file)))
            .unwrap()
            .read_all(None)
            .unwrap();
        for c in ["min", "max"] {
            let col = b.column_by_name(c).unwrap().as_primitive::<Int64Type>();
            assert_eq!((col.is_valid(0), col.value(0)), (true, 5), "{c}");
            assert_eq!((col.is_null(1), col.values()[1]), (true, 0), "{c}");
        }
        // rows_per_zone at its largest: one zone per fragment, no overflow
        let mut p = ScalarParams::new(ScalarKind::ZoneMap);
        p.zone_rows = u64::MAX;
        let mut z = ZoneBuilder::new(&p, &DataType::Int64);
        let two_frags: Vec<u64> = (0..16).chain((0..16).map(|r| 1 << 32 | r)).collect();
        z.push(&values, &two_frags).unwrap();
        let b = FileReader::open(Arc::new(Bytes::from(z.finish(&p).unwrap().remove(0).1)))
            .unwrap()
            .read_all(None)
            .unwrap();
        assert_eq!(b.num_rows(), 2);
        // a fragment's rows going backwards are refused, naming the address
        let mut z = ZoneBuilder::new(&p, &DataType::Int64);
        z.push(&values.slice(0, 2), &[7, 9]).unwrap();
        let err = z.push(&values.slice(0, 1), &[8]).unwrap_err().to_string();
        assert!(err.contains("row address 8 arrived after 9"), "{err}");
        // values and addresses of different lengths
        let err = z.push(&values.slice(0, 2), &[10]).unwrap_err().to_string();
        assert!(err.contains("2 values for 1 row addresses"), "{err}");
    }

    #[test]
    fn typed_and_generic_extrema_agree() {
        let (values, _) = rows();
        let typed = extrema(values.as_ref()).unwrap();
        // The comparator path, reached through a type the typed arms do not list.
        let cmp =
            make_comparator(values.as_ref(), values.as_ref(), SortOptions::default()).unwrap();
        let (mut lo, mut hi) = (None::<usize>, None::<usize>);
        for i in (0..values.len()).filter(|&i| values.is_valid(i)) {
            if lo.is_none_or(|l| cmp(i, l).is_lt()) {
                lo = Some(i);
            }
            if hi.is_none_or(|h| cmp(i, h).is_gt()) {
                hi = Some(i);
            }
        }
        assert_eq!((typed.0, typed.1), (lo, hi));
        let ints: ArrayRef = Arc::new(arrow_array::Int64Array::from(vec![
            Some(3),
            None,
            Some(-9),
            Some(-9),
            Some(40),
            Some(40),
        ]));
        assert_eq!(extrema(ints.as_ref()).unwrap(), (Some(2), Some(4), 0));
        let strs: ArrayRef = Arc::new(arrow_array::StringArray::from(vec![
            Some("b"),
            None,
            Some("a"),
            Some("c"),
        ]));
        assert_eq!(extrema(strs.as_ref()).unwrap(), (Some(2), Some(3), 0));
        let empty: ArrayRef = Arc::new(arrow_array::Int32Array::from(vec![None, None]));
        assert_eq!(extrema(empty.as_ref()).unwrap(), (None, None, 0));
    }
}
