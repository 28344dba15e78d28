//! Property test: random Arrow arrays of every supported type, random null patterns
//! and random nesting (struct, list, large list, fixed-size list, map) survive
//! write → read with Lancer unchanged, in 2.1 and 2.2, with random page sizes, and
//! random takes agree with slicing. Failures print the seed that reproduces them.
//!
//! Besides random values the generator draws degenerate *shapes*, the classes real
//! data has and single examples miss: no rows, all null, one value repeated in every
//! row (with or without nulls), empty strings / binaries everywhere, empty lists
//! everywhere or cycling `[]`, `[x]`, `[x, x]`, the Null type, dictionary columns, and
//! both offset widths.

use std::sync::Arc;

use arrow_array::builder::BooleanBufferBuilder;
use arrow_array::*;
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use bytes::Bytes;
use lancer_format::container::FileVersion;
use lancer_format::reader::FileReader;
use lancer_format::writer::{write_to_vec, WriteOptions};

pub struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn chance(&mut self, p: f64) -> bool {
        (self.next() % 10_000) as f64 / 10_000.0 < p
    }
}

fn nulls(r: &mut Rng, n: usize, p: f64) -> Option<NullBuffer> {
    if p == 0.0 {
        return None;
    }
    let mut b = BooleanBufferBuilder::new(n);
    for _ in 0..n {
        b.append(!r.chance(p));
    }
    Some(NullBuffer::new(b.finish()))
}

fn leaf_type(r: &mut Rng) -> DataType {
    use DataType::*;
    let all = [
        Boolean,
        Int8,
        Int16,
        Int32,
        Int64,
        UInt8,
        UInt16,
        UInt32,
        UInt64,
        Float16,
        Float32,
        Float64,
        Utf8,
        LargeUtf8,
        Binary,
        LargeBinary,
        Date32,
        Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        Decimal128(20, 3),
        FixedSizeBinary(3),
        FixedSizeList(Arc::new(Field::new("item", Float32, true)), 4),
        FixedSizeList(Arc::new(Field::new("item", Float32, true)), 80),
        Null,
    ];
    all[r.below(all.len() as u64) as usize].clone()
}

fn gen_type(r: &mut Rng, depth: u32, maps: bool) -> DataType {
    if depth == 0 || r.chance(0.45) {
        return leaf_type(r);
    }
    match r.below(if maps { 4 } else { 3 }) {
        0 => {
            let k = 1 + r.below(3);
            DataType::Struct(
                (0..k)
                    .map(|i| Field::new(format!("f{i}"), gen_type(r, depth - 1, maps), true))
                    .collect(),
            )
        }
        1 => DataType::List(Arc::new(Field::new(
            "item",
            gen_type(r, depth - 1, maps),
            true,
        ))),
        2 => DataType::LargeList(Arc::new(Field::new(
            "item",
            gen_type(r, depth - 1, maps),
            true,
        ))),
        _ => {
            let entries = Field::new(
                "entries",
                DataType::Struct(
                    vec![
                        Field::new("key", DataType::Utf8, false),
                        Field::new("value", gen_type(r, depth - 1, maps), true),
                    ]
                    .into(),
                ),
                false,
            );
            DataType::Map(Arc::new(entries), false)
        }
    }
}

fn strings(r: &mut Rng, n: usize) -> Vec<String> {
    if r.chance(0.1) {
        // Every value the empty string.
        return vec![String::new(); n];
    }
    let runs = r.chance(0.3);
    let mut prev = String::new();
    (0..n)
        .map(|_| {
            if runs && r.chance(0.8) && !prev.is_empty() {
                return prev.clone();
            }
            let long = r.chance(0.1);
            let len = r.below(if long { 400 } else { 12 }) as usize;
            prev = (0..len)
                .map(|_| (b'a' + r.below(6) as u8) as char)
                .collect();
            prev.clone()
        })
        .collect()
}

fn gen_array(r: &mut Rng, dt: &DataType, n: usize, nullable: bool) -> ArrayRef {
    let p = if !nullable || r.chance(0.4) {
        0.0
    } else if r.chance(0.1) {
        1.0
    } else {
        0.3
    };
    let nb = nulls(r, n, p);
    let small = r.chance(0.5);
    let ints = |r: &mut Rng| -> Vec<i64> {
        (0..n)
            .map(|_| {
                if small {
                    r.below(50) as i64
                } else {
                    r.next() as i64
                }
            })
            .collect()
    };
    use DataType::*;
    let a: ArrayRef = match dt {
        Boolean => Arc::new(BooleanArray::new(
            (0..n).map(|_| r.chance(0.5)).collect(),
            nb,
        )),
        Int8 => Arc::new(Int8Array::new(
            ints(r).into_iter().map(|v| v as i8).collect(),
            nb,
        )),
        Int16 => Arc::new(Int16Array::new(
            ints(r).into_iter().map(|v| v as i16).collect(),
            nb,
        )),
        Int32 => Arc::new(Int32Array::new(
            ints(r).into_iter().map(|v| v as i32).collect(),
            nb,
        )),
        Int64 => Arc::new(Int64Array::new(ints(r).into(), nb)),
        UInt8 => Arc::new(UInt8Array::new(
            ints(r).into_iter().map(|v| v as u8).collect(),
            nb,
        )),
        UInt16 => Arc::new(UInt16Array::new(
            ints(r).into_iter().map(|v| v as u16).collect(),
            nb,
        )),
        UInt32 => Arc::new(UInt32Array::new(
            ints(r).into_iter().map(|v| v as u32).collect(),
            nb,
        )),
        UInt64 => Arc::new(UInt64Array::new(
            ints(r).into_iter().map(|v| v as u64).collect(),
            nb,
        )),
        Float16 => Arc::new(Float16Array::new(
            (0..n)
                .map(|_| half::f16::from_f32(r.below(1000) as f32 / 7.0))
                .collect(),
            nb,
        )),
        Float32 => Arc::new(Float32Array::new(
            (0..n).map(|_| r.next() as f32 / 3.0).collect(),
            nb,
        )),
        Float64 => Arc::new(Float64Array::new(
            (0..n).map(|_| f64::from_bits(r.next() >> 2)).collect(),
            nb,
        )),
        Utf8 => {
            let s: StringArray = strings(r, n).into_iter().map(Some).collect();
            Arc::new(StringArray::new(
                s.offsets().clone(),
                s.values().clone(),
                nb,
            ))
        }
        LargeUtf8 => {
            Arc::new(arrow_cast::cast(&gen_array(r, &Utf8, n, nullable), &LargeUtf8).unwrap())
        }
        Binary => Arc::new(arrow_cast::cast(&gen_array(r, &Utf8, n, nullable), &Binary).unwrap()),
        LargeBinary => {
            Arc::new(arrow_cast::cast(&gen_array(r, &Utf8, n, nullable), &LargeBinary).unwrap())
        }
        Date32 => Arc::new(Date32Array::new(
            ints(r).into_iter().map(|v| v as i32).collect(),
            nb,
        )),
        Timestamp(_, tz) => Arc::new(
            TimestampMicrosecondArray::new(ints(r).into(), nb).with_timezone_opt(tz.clone()),
        ),
        Decimal128(p, s) => Arc::new(
            Decimal128Array::new(
                ints(r)
                    .into_iter()
                    .map(|v| v as i128 % 10i128.pow(18))
                    .collect(),
                nb,
            )
            .with_precision_and_scale(*p, *s)
            .unwrap(),
        ),
        FixedSizeBinary(w) => {
            let vals: Vec<u8> = (0..n * *w as usize).map(|_| r.below(256) as u8).collect();
            Arc::new(FixedSizeBinaryArray::new(*w, vals.into(), nb))
        }
        FixedSizeList(f, d) => {
            let inner_nulls = r.chance(0.2);
            let items = gen_array(r, f.data_type(), n * *d as usize, inner_nulls);
            Arc::new(FixedSizeListArray::new(f.clone(), *d, items, nb))
        }
        Struct(fields) => {
            let kids = fields
                .iter()
                .map(|f| gen_array(r, f.data_type(), n, true))
                .collect();
            Arc::new(StructArray::new(fields.clone(), kids, nb))
        }
        List(f) | LargeList(f) | Map(f, _) => {
            // Lengths: random, all empty, or cycling 0, 1, 2.
            let lengths = r.below(10);
            let mut offs = vec![0i64];
            for i in 0..n {
                let null = nb.as_ref().is_some_and(|b| b.is_null(i));
                let len = if null || lengths == 0 {
                    0
                } else if lengths == 1 {
                    (i % 3) as i64
                } else if r.chance(0.15) {
                    0
                } else {
                    r.below(5) as i64
                };
                offs.push(offs[offs.len() - 1] + len);
            }
            let total = *offs.last().unwrap() as usize;
            match dt {
                List(_) => {
                    let child = gen_array(r, f.data_type(), total, true);
                    let o: Vec<i32> = offs.iter().map(|&x| x as i32).collect();
                    Arc::new(ListArray::new(
                        f.clone(),
                        OffsetBuffer::new(o.into()),
                        child,
                        nb,
                    ))
                }
                LargeList(_) => {
                    let child = gen_array(r, f.data_type(), total, true);
                    Arc::new(LargeListArray::new(
                        f.clone(),
                        OffsetBuffer::new(offs.into()),
                        child,
                        nb,
                    ))
                }
                _ => {
                    let DataType::Struct(ef) = f.data_type() else {
                        unreachable!()
                    };
                    let keys: ArrayRef = Arc::new(
                        (0..total)
                            .map(|i| Some(format!("k{i}")))
                            .collect::<StringArray>(),
                    );
                    let vals = gen_array(r, ef[1].data_type(), total, true);
                    let entries = StructArray::new(ef.clone(), vec![keys, vals], None);
                    let o: Vec<i32> = offs.iter().map(|&x| x as i32).collect();
                    Arc::new(MapArray::new(
                        f.clone(),
                        OffsetBuffer::new(o.into()),
                        entries,
                        nb,
                        false,
                    ))
                }
            }
        }
        Null => Arc::new(NullArray::new(n)),
        Dictionary(k, v) => {
            // Few distinct values (any key width holds them), drawn with nulls.
            let pool = gen_array(r, v, 40, nullable);
            let idx: UInt32Array = (0..n)
                .map(|i| {
                    let pick = r.below(40) as u32;
                    nb.as_ref().is_none_or(|b| b.is_valid(i)).then_some(pick)
                })
                .collect();
            let values = arrow_select::take::take(pool.as_ref(), &idx, None).unwrap();
            Arc::new(arrow_cast::cast(&values, &Dictionary(k.clone(), v.clone())).unwrap())
        }
        other => panic!("no generator for {other}"),
    };
    if n > 0 && r.chance(0.15) {
        // One value in every row, nulls kept where they were.
        let idx: UInt32Array = (0..n).map(|i| a.is_valid(i).then_some(0u32)).collect();
        return arrow_select::take::take(a.as_ref(), &idx, None).unwrap();
    }
    a
}

/// One random case: the table, how it is fed to the writer, and the write options.
pub fn case(seed: u64) -> (RecordBatch, Vec<RecordBatch>, WriteOptions, Rng) {
    let mut r = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let version = if r.chance(0.5) {
        FileVersion::V2_1
    } else {
        FileVersion::V2_2
    };
    let ncols = 1 + r.below(3) as usize;
    let fields: Vec<Field> = (0..ncols)
        .map(|i| {
            let dt = if r.chance(0.08) {
                // Dictionary columns (top level, as pylance writes them).
                let key = [DataType::Int32, DataType::UInt8, DataType::Int16][r.below(3) as usize]
                    .clone();
                let value = [DataType::Utf8, DataType::LargeUtf8, DataType::Int64]
                    [r.below(3) as usize]
                    .clone();
                DataType::Dictionary(Box::new(key), Box::new(value))
            } else {
                gen_type(&mut r, 3, version == FileVersion::V2_2)
            };
            Field::new(format!("c{i}"), dt, true)
        })
        .collect();
    let schema = Arc::new(Schema::new(fields));
    let n = [0usize, 1, 7, 100, 1500, 5000][r.below(6) as usize];
    let cols: Vec<ArrayRef> = schema
        .fields()
        .iter()
        .map(|f| gen_array(&mut r, f.data_type(), n, true))
        .collect();
    let batch = RecordBatch::try_new(schema.clone(), cols).unwrap();
    let page = if r.chance(0.5) { 4096 } else { 1 << 25 };
    let step = 1 + r.below(n as u64) as usize;
    let batches: Vec<RecordBatch> = (0..n)
        .step_by(step)
        .map(|s| batch.slice(s, step.min(n - s)))
        .collect();
    (
        batch,
        batches,
        WriteOptions {
            version,
            max_page_bytes: page,
            ..Default::default()
        },
        r,
    )
}

#[test]
fn random_arrays_round_trip() {
    let cases: u64 = std::env::var("LANCER_RANDOM_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let mut failures = Vec::new();
    for seed in 1..=cases {
        let (batch, batches, opts, mut r) = case(seed);
        let (version, page, n, schema) = (
            opts.version,
            opts.max_page_bytes,
            batch.num_rows(),
            batch.schema(),
        );
        let ncols = batch.num_columns();
        let label = format!(
            "seed {seed} ({version}, {n} rows, page {page}, schema {:?})",
            schema
                .fields()
                .iter()
                .map(|f| f.data_type().to_string())
                .collect::<Vec<_>>()
        );
        if seed <= 3 {
            eprintln!("{label}");
        }
        let bytes = match write_to_vec(schema.clone(), &batches, opts) {
            Ok(b) => b,
            Err(e) => {
                failures.push(format!("{label}: write: {e}"));
                continue;
            }
        };
        let reader = match FileReader::open(Arc::new(Bytes::from(bytes))) {
            Ok(x) => x,
            Err(e) => {
                failures.push(format!("{label}: open: {e}"));
                continue;
            }
        };
        match reader.read_all(None) {
            Ok(got) => {
                for i in 0..ncols {
                    if got.column(i).to_data() != batch.column(i).to_data() {
                        failures.push(format!("{label}: column {i} differs"));
                    }
                }
            }
            Err(e) => failures.push(format!("{label}: read: {e}")),
        }
        // 20 random rows (a few per chunk at most), and every 9th row (several per
        // chunk, still sparse enough for a take that picks values out of chunks).
        let random: Vec<u64> = if n == 0 {
            Vec::new()
        } else {
            (0..20).map(|_| r.below(n as u64)).collect()
        };
        let strided: Vec<u64> = (0..n as u64).step_by(9).collect();
        for (what, idx) in [("take", random), ("strided take", strided)] {
            match reader.take(&idx, None) {
                Ok(got) => {
                    let ids = UInt64Array::from(idx.clone());
                    for i in 0..ncols {
                        let want =
                            arrow_select::take::take(batch.column(i).as_ref(), &ids, None).unwrap();
                        if got.column(i).to_data() != want.to_data() {
                            failures.push(format!("{label}: {what} of column {i} differs"));
                        }
                    }
                }
                Err(e) => failures.push(format!("{label}: {what}: {e}")),
            }
        }
    }
    eprintln!("{cases} random cases written and read back");
    for f in failures.iter().take(30) {
        eprintln!("{f}");
    }
    assert!(
        failures.is_empty(),
        "{} of {cases} random cases failed",
        failures.len()
    );
}
