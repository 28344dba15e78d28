//! BLOOMFILTER segments (`bloomfilter.lance`, docs/scalar-index-format.md §8; reference
//! "Bloom Filter Index"): per zone of live rows a split-block bloom filter of its
//! non-null values (Parquet's SBBF: 32-byte blocks of eight words, XXH64 seed 0, the
//! eight salts), a `has_null` flag, and the null rows in global buffer `null_bitmap`.
//! `=` / `IN` answer candidate zones; `IS NULL` is exact.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef};
use arrow_schema::{DataType, TimeUnit};
use lancer_format::reader::FileReader;
use roaring::RoaringTreemap;

use super::zonemap::{null_rows, Zones};
use super::Query;
use crate::segment::corrupt;
use crate::Result;

const SALT: [u32; 8] = [
    0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d, 0x705495c7, 0x2df1424b, 0x9efc4947, 0x5c6bfb31,
];

/// The 64-bit hash of one value's bytes.
pub fn hash(bytes: &[u8]) -> u64 {
    twox_hash::XxHash64::oneshot(0, bytes)
}

/// The eight bit positions (one per word) a hash sets in its block.
fn mask(h: u64) -> [u32; 8] {
    let x = h as u32;
    let mut m = [0u32; 8];
    for (j, w) in m.iter_mut().enumerate() {
        *w = 1 << (x.wrapping_mul(SALT[j]) >> 27);
    }
    m
}

fn block_of(h: u64, blocks: usize) -> usize {
    (((h >> 32) * blocks as u64) >> 32) as usize
}

/// Whether the filter `bits` (a multiple of 32 bytes) may hold the value hashed to `h`.
pub fn probe(bits: &[u8], h: u64) -> bool {
    let blocks = bits.len() / 32;
    if blocks == 0 {
        return true;
    }
    let b = &bits[block_of(h, blocks) * 32..][..32];
    mask(h).iter().enumerate().all(|(j, m)| {
        let w = u32::from_le_bytes([b[4 * j], b[4 * j + 1], b[4 * j + 2], b[4 * j + 3]]);
        w & m == *m
    })
}

/// Adds the value hashed to `h` to the filter `bits`.
pub fn insert(bits: &mut [u8], h: u64) {
    let blocks = bits.len() / 32;
    if blocks == 0 {
        return;
    }
    let at = block_of(h, blocks) * 32;
    for (j, m) in mask(h).iter().enumerate() {
        let p = at + 4 * j;
        let w = u32::from_le_bytes([bits[p], bits[p + 1], bits[p + 2], bits[p + 3]]) | m;
        bits[p..p + 4].copy_from_slice(&w.to_le_bytes());
    }
}

/// ln Γ(x) for x ≥ 1 (Lanczos, g = 7): enough digits for the filter-size search.
fn ln_gamma(x: f64) -> f64 {
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + 7.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// False-positive rate of a filter of `2^log2_bytes` bytes holding `ndv` values.
fn fpp(ndv: u64, log2_bytes: u32) -> f64 {
    if ndv == 0 {
        return 0.0;
    }
    let bits = (1u64 << log2_bytes) as f64 * 8.0;
    if ndv as f64 / bits > 2.0 {
        return 1.0;
    }
    let lambda = 256.0 / (bits / ndv as f64);
    let mut sum = 0.0f64;
    for i in (1..=749u32).rev() {
        let i = f64::from(i);
        sum += (i * lambda.ln() - lambda - ln_gamma(i + 1.0)
            + 8.0 * (1.0 - (31.0f64 / 32.0).powf(i)).ln())
        .exp();
    }
    sum.min(1.0)
}

/// Bytes of every zone's filter for `ndv` items at false-positive rate `p` (the
/// reference's search: smallest power of two meeting `p`, 32 B to 128 MiB).
pub fn filter_bytes(ndv: u64, p: f64) -> usize {
    let (mut low, mut high) = (0u32, 64u32);
    while high > low + 1 {
        let mid = (low + high) / 2;
        if mid < 60 && fpp(ndv, mid) <= p {
            high = mid;
        } else {
            low = mid;
        }
    }
    1usize << high.clamp(5, 27)
}

/// Appends the hash-input bytes of value `i` of `a` (native little-endian width; strings
/// and binary as their bytes). None for types a bloom filter does not index.
pub fn value_bytes(a: &dyn Array, i: usize, out: &mut Vec<u8>) -> Option<()> {
    macro_rules! prim {
        ($t:ty) => {
            out.extend_from_slice(&a.as_primitive::<$t>().value(i).to_le_bytes())
        };
    }
    match a.data_type() {
        DataType::Int8 => prim!(Int8Type),
        DataType::Int16 => prim!(Int16Type),
        DataType::Int32 => prim!(Int32Type),
        DataType::Int64 => prim!(Int64Type),
        DataType::UInt8 => prim!(UInt8Type),
        DataType::UInt16 => prim!(UInt16Type),
        DataType::UInt32 => prim!(UInt32Type),
        DataType::UInt64 => prim!(UInt64Type),
        DataType::Float32 => prim!(Float32Type),
        DataType::Float64 => prim!(Float64Type),
        DataType::Date32 => prim!(Date32Type),
        DataType::Date64 => prim!(Date64Type),
        DataType::Time32(TimeUnit::Second) => prim!(Time32SecondType),
        DataType::Time32(_) => prim!(Time32MillisecondType),
        DataType::Time64(TimeUnit::Microsecond) => prim!(Time64MicrosecondType),
        DataType::Time64(_) => prim!(Time64NanosecondType),
        DataType::Timestamp(TimeUnit::Second, _) => prim!(TimestampSecondType),
        DataType::Timestamp(TimeUnit::Millisecond, _) => prim!(TimestampMillisecondType),
        DataType::Timestamp(TimeUnit::Microsecond, _) => prim!(TimestampMicrosecondType),
        DataType::Timestamp(TimeUnit::Nanosecond, _) => prim!(TimestampNanosecondType),
        DataType::Utf8 => out.extend_from_slice(a.as_string::<i32>().value(i).as_bytes()),
        DataType::LargeUtf8 => out.extend_from_slice(a.as_string::<i64>().value(i).as_bytes()),
        DataType::Binary => out.extend_from_slice(a.as_binary::<i32>().value(i)),
        DataType::LargeBinary => out.extend_from_slice(a.as_binary::<i64>().value(i)),
        _ => return None,
    }
    Some(())
}

/// Whether a bloom filter can index values of `t`.
pub fn indexable(t: &DataType) -> bool {
    let one = arrow_array::new_null_array(t, 1);
    value_bytes(one.as_ref(), 0, &mut Vec::new()).is_some()
}

/// An opened BLOOMFILTER segment.
pub struct BloomIndex {
    label: String,
    zones: Zones,
    has_null: Vec<bool>,
    filters: ArrayRef,
    nulls: Option<RoaringTreemap>,
    /// Items per block and false-positive probability the filters were sized for
    /// (file metadata `bloomfilter_item`, `bloomfilter_probability`).
    sized_for: (Option<u64>, Option<f64>),
}

impl BloomIndex {
    /// Reads the zones and their filters.
    pub fn open(label: &str, file: Arc<FileReader>) -> Result<Self> {
        let b = file.read_all(None)?;
        let zones = Zones::read(label, &b)?;
        let has_null = b
            .column_by_name("has_null")
            .and_then(|c| c.as_boolean_opt())
            .ok_or_else(|| corrupt(label, "has_null is missing or not bool"))?;
        let has_null = (0..has_null.len()).map(|i| has_null.value(i)).collect();
        let filters = b
            .column_by_name("bloom_filter_data")
            .cloned()
            .ok_or_else(|| corrupt(label, "bloom_filter_data is missing"))?;
        super::bitmap::binary_values(label, &filters)?;
        let meta = file.schema().metadata().clone();
        Ok(Self {
            label: label.to_string(),
            zones,
            has_null,
            filters,
            nulls: null_rows(label, &file)?,
            sized_for: (
                meta.get("bloomfilter_item").and_then(|v| v.parse().ok()),
                meta.get("bloomfilter_probability")
                    .and_then(|v| v.parse().ok()),
            ),
        })
    }

    /// pylance's statistics of a BLOOMFILTER segment: blocks and what they were sized
    /// for.
    pub fn statistics(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "BloomFilter",
            "num_blocks": self.zones.fragment.len(),
            "number_of_items": self.sized_for.0,
            "probability": self.sized_for.1,
        })
    }

    /// Candidate rows for `q` (exact for `IS NULL`).
    pub fn query(&self, q: &Query) -> Result<Option<RoaringTreemap>> {
        match q {
            Query::IsNull => Ok(Some(match &self.nulls {
                Some(n) => n.clone(),
                None => self.zones.rows(|z| self.has_null[z]),
            })),
            Query::In(set) => {
                let mut hashes = Vec::new();
                let mut buf = Vec::new();
                for i in 0..set.len() {
                    if set.is_null(i) {
                        continue;
                    }
                    buf.clear();
                    if value_bytes(set.as_ref(), i, &mut buf).is_none() {
                        return Ok(None);
                    }
                    hashes.push(hash(&buf));
                }
                let filters = super::bitmap::binary_values(&self.label, &self.filters)?;
                Ok(Some(
                    self.zones
                        .rows(|z| hashes.iter().any(|&h| probe(filters[z], h))),
                ))
            }
            _ => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_and_bits_match_the_documented_vectors() {
        // docs/scalar-index-format.md §8.2, checked against pylance's bytes.
        assert_eq!(hash(&7i64.to_le_bytes()), 0x0876cd406afde455);
        assert_eq!(hash(b"apple"), 0x5889a1c15c94729f);
        assert_eq!(hash(&1.5f64.to_le_bytes()), 0x49f7b96b6b5ccaf9);
        assert_eq!(hash(&[]), 0xef46db3751d8e999);
        let h = hash(&7i64.to_le_bytes());
        assert_eq!(block_of(h, 2), 0);
        let bits: Vec<u32> = mask(h).iter().map(|m| m.trailing_zeros()).collect();
        assert_eq!(bits, [4, 7, 27, 9, 1, 22, 9, 12]);
        assert_eq!(block_of(hash(&f64::NAN.to_le_bytes()), 2), 1);
        let mut f = vec![0u8; 64];
        insert(&mut f, h);
        assert!(probe(&f, h));
        assert!(!probe(&f, hash(b"apple")));
    }

    #[test]
    fn filter_sizes_match_the_reference() {
        for (ndv, p, bytes) in [
            (8192, 0.00057, 32768),
            (8192, 0.01, 16384),
            (1000, 0.001, 4096),
            (100, 0.01, 256),
            (32, 0.01, 64),
            (32, 0.05, 32),
            (16, 0.01, 32),
        ] {
            assert_eq!(filter_bytes(ndv, p), bytes, "{ndv} {p}");
        }
    }
}
