//! Synthetic 2.0 pages for the encodings the golden files do not exercise (bit
//! packing, FSST, fixed-size binary, constants, compressed flat buffers) and for
//! corrupt encodings.

// Row ranges like `&[0..4]` are exactly what these tests mean.
#![allow(clippy::single_range_in_vec_init)]

use std::ops::Range;
use std::sync::Arc;

use arrow_array::{
    Array, ArrayRef, BooleanArray, Int32Array, Int64Array, StringArray, UInt16Array, UInt32Array,
};
use arrow_schema::DataType;
use bytes::Bytes;
use fastlanes::BitPacking;

use super::decode::decode;
use super::page::PageCtx;
use crate::pb::enc20::array_encoding::ArrayEncoding as E;
use crate::pb::enc20::{self, ArrayEncoding};
use crate::Result;

/// Page buffers laid out one after another in a fake file.
struct Page {
    file: Bytes,
    buffers: Vec<Range<u64>>,
}

impl Page {
    fn new(buffers: &[&[u8]]) -> Self {
        let mut file = Vec::new();
        let mut ranges = Vec::new();
        for b in buffers {
            let s = file.len() as u64;
            file.extend_from_slice(b);
            ranges.push(s..file.len() as u64);
        }
        Self {
            file: Bytes::from(file),
            buffers: ranges,
        }
    }

    fn read(&self, enc: &ArrayEncoding, ranges: &[Range<u64>], dt: &DataType) -> Result<ArrayRef> {
        let ctx = PageCtx {
            io: &self.file,
            page: &self.buffers,
            column: &[],
            file: &[],
            file_size: self.file.len() as u64,
        };
        decode(enc, &ctx, ranges, dt)?.into_array(dt)
    }
}

fn buf(i: u32) -> Option<enc20::Buffer> {
    Some(enc20::Buffer {
        buffer_index: i,
        buffer_type: enc20::buffer::BufferType::Page as i32,
    })
}

fn enc(e: E) -> ArrayEncoding {
    ArrayEncoding {
        array_encoding: Some(e),
    }
}

fn flat(bits: u64, i: u32) -> ArrayEncoding {
    enc(E::Flat(enc20::Flat {
        bits_per_value: bits,
        buffer: buf(i),
        compression: None,
    }))
}

fn rows(ranges: &[Range<u64>]) -> Vec<usize> {
    ranges
        .iter()
        .flat_map(|r| r.start as usize..r.end as usize)
        .collect()
}

/// Packs `vals` as a little-endian bit stream of `w` bits each.
fn bitstream(vals: &[u64], w: u64) -> Vec<u8> {
    let mut out = vec![0u8; (vals.len() as u64 * w).div_ceil(8) as usize];
    for (i, &v) in vals.iter().enumerate() {
        for b in 0..w {
            if (v >> b) & 1 == 1 {
                let bit = i as u64 * w + b;
                out[(bit / 8) as usize] |= 1 << (bit % 8);
            }
        }
    }
    out
}

#[test]
fn bitpacked_unsigned_and_signed() {
    let vals: Vec<u16> = (0..100).map(|i| (i * 5 % 7) as u16).collect();
    let packed = bitstream(&vals.iter().map(|&v| u64::from(v)).collect::<Vec<_>>(), 3);
    let page = Page::new(&[&packed]);
    let e = enc(E::Bitpacked(enc20::Bitpacked {
        compressed_bits_per_value: 3,
        uncompressed_bits_per_value: 16,
        buffer: buf(0),
        signed: false,
    }));
    let ranges = [0..5, 50..61, 97..100];
    let got = page.read(&e, &ranges, &DataType::UInt16);
    let want: UInt16Array = rows(&ranges).into_iter().map(|i| vals[i]).collect();
    assert_eq!(got.ok().map(|a| a.to_data()), Some(want.to_data()));

    let vals: Vec<i32> = (0..77).map(|i| (i % 16) - 8).collect();
    let packed = bitstream(&vals.iter().map(|&v| v as u64 & 0xF).collect::<Vec<_>>(), 4);
    let page = Page::new(&[&packed]);
    let e = enc(E::Bitpacked(enc20::Bitpacked {
        compressed_bits_per_value: 4,
        uncompressed_bits_per_value: 32,
        buffer: buf(0),
        signed: true,
    }));
    let ranges = [3..9, 70..77];
    let got = page.read(&e, &ranges, &DataType::Int32);
    let want: Int32Array = rows(&ranges).into_iter().map(|i| vals[i]).collect();
    assert_eq!(got.ok().map(|a| a.to_data()), Some(want.to_data()));
}

#[test]
fn bitpacked_for_non_negative_reads_fastlanes_blocks() {
    let vals: Vec<u32> = (0..2500u32).map(|i| i * 7 % 13).collect();
    let mut packed = Vec::new();
    for chunk in vals.chunks(1024) {
        let mut block = [0u32; 1024];
        block[..chunk.len()].copy_from_slice(chunk);
        let mut out = [0u32; 128];
        u32::pack::<4, 128>(&block, &mut out);
        packed.extend(out.iter().flat_map(|w| w.to_le_bytes()));
    }
    // An odd offset in the file so the words are not aligned.
    let page = Page::new(&[&[0u8; 3], &packed]);
    let e = enc(E::BitpackedForNonNeg(enc20::BitpackedForNonNeg {
        compressed_bits_per_value: 4,
        uncompressed_bits_per_value: 32,
        buffer: buf(1),
    }));
    let ranges = [0..3, 1020..1030, 1100..1101, 2490..2500];
    let got = page.read(&e, &ranges, &DataType::UInt32);
    let want: UInt32Array = rows(&ranges).into_iter().map(|i| vals[i]).collect();
    assert_eq!(got.ok().map(|a| a.to_data()), Some(want.to_data()));
}

fn binary(indices: &[u64], null_adjustment: u64) -> (Vec<u8>, ArrayEncoding) {
    let idx: Vec<u8> = indices.iter().flat_map(|v| v.to_le_bytes()).collect();
    let e = enc(E::Binary(Box::new(enc20::Binary {
        indices: Some(Box::new(flat(64, 0))),
        bytes: Some(Box::new(flat(8, 1))),
        null_adjustment,
    })));
    (idx, e)
}

#[test]
fn binary_with_nulls_from_the_middle_of_a_page() {
    // "abc", null, "de", "fghi"
    let (idx, e) = binary(&[3, 103, 5, 9], 100);
    let page = Page::new(&[&idx, b"abcdefghi"]);
    let got = page.read(&e, &[1..2, 3..4], &DataType::Utf8);
    let want = StringArray::from(vec![None, Some("fghi")]);
    assert_eq!(got.ok().map(|a| a.to_data()), Some(want.to_data()));
    let got = page.read(&e, &[0..4], &DataType::Utf8);
    let want = StringArray::from(vec![Some("abc"), None, Some("de"), Some("fghi")]);
    assert_eq!(got.ok().map(|a| a.to_data()), Some(want.to_data()));
    // Offsets going backwards are refused.
    let (idx, e) = binary(&[5, 3], 100);
    let page = Page::new(&[&idx, b"abcde"]);
    assert!(page.read(&e, &[0..2], &DataType::Utf8).is_err());
}

#[test]
fn writer_dictionary_maps_zero_to_null() {
    let (idx, items) = binary(&[1, 3], 10);
    let e = enc(E::Dictionary(Box::new(enc20::Dictionary {
        indices: Some(Box::new(flat(8, 2))),
        items: Some(Box::new(items)),
        num_dictionary_items: 2,
    })));
    let page = Page::new(&[&idx, b"xyy", &[1, 0, 2, 1, 3]]);
    let got = page.read(&e, &[0..4], &DataType::Utf8);
    let want = StringArray::from(vec![Some("x"), None, Some("yy"), Some("x")]);
    assert_eq!(got.ok().map(|a| a.to_data()), Some(want.to_data()));
    // Index 3 points past the two items.
    assert!(page.read(&e, &[4..5], &DataType::Utf8).is_err());
}

#[test]
fn fsst_strings() {
    // Symbols: 0 = "ab", 1 = "c"; strings "abc" = [0, 1] and "xab" = [255, 'x', 0].
    let mut table = ((0x4653_5354u64 << 32) | (1 << 24) | 2)
        .to_le_bytes()
        .to_vec();
    table.extend(u64::from_le_bytes(*b"ab\0\0\0\0\0\0").to_le_bytes());
    table.extend(u64::from_le_bytes(*b"c\0\0\0\0\0\0\0").to_le_bytes());
    table.extend([2u8, 1]);
    let (idx, inner) = binary(&[2, 5], 100);
    let e = enc(E::Fsst(Box::new(enc20::Fsst {
        binary: Some(Box::new(inner)),
        symbol_table: table,
    })));
    let page = Page::new(&[&idx, &[0, 1, 255, b'x', 0]]);
    let got = page.read(&e, &[0..2], &DataType::Utf8);
    let want = StringArray::from(vec!["abc", "xab"]);
    assert_eq!(got.ok().map(|a| a.to_data()), Some(want.to_data()));
}

#[test]
fn fixed_size_binary_constant_and_compressed_flat() {
    let e = enc(E::FixedSizeBinary(Box::new(enc20::FixedSizeBinary {
        bytes: Some(Box::new(flat(24, 0))),
        byte_width: 3,
    })));
    let page = Page::new(&[b"abcdefghi"]);
    let got = page.read(&e, &[1..3], &DataType::Utf8);
    let want = StringArray::from(vec!["def", "ghi"]);
    assert_eq!(got.ok().map(|a| a.to_data()), Some(want.to_data()));

    let e = enc(E::Constant(enc20::Constant {
        value: 7i32.to_le_bytes().to_vec(),
    }));
    let got = page.read(&e, &[0..2, 5..6], &DataType::Int32);
    assert_eq!(
        got.ok().map(|a| a.to_data()),
        Some(Int32Array::from(vec![7, 7, 7]).to_data())
    );

    let vals: Vec<i64> = (0..1000).map(|i| i * 3 - 500).collect();
    let raw: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut packed = (raw.len() as u64).to_le_bytes().to_vec();
    packed.extend(zstd::bulk::compress(&raw, 3).unwrap_or_default());
    let page = Page::new(&[&packed]);
    let e = enc(E::Flat(enc20::Flat {
        bits_per_value: 64,
        buffer: buf(0),
        compression: Some(enc20::Compression {
            scheme: "zstd".into(),
            level: None,
        }),
    }));
    let ranges = [10..12, 998..1000];
    let got = page.read(&e, &ranges, &DataType::Int64);
    let want: Int64Array = rows(&ranges).into_iter().map(|i| vals[i]).collect();
    assert_eq!(got.ok().map(|a| a.to_data()), Some(want.to_data()));
}

#[test]
fn nullable_bitmaps_at_odd_offsets() {
    let valid: Vec<bool> = (0..40).map(|i| i % 3 != 0).collect();
    let values: Vec<bool> = (0..40).map(|i| i % 5 < 2).collect();
    let pack = |b: &[bool]| {
        let mut out = vec![0u8; b.len().div_ceil(8)];
        for (i, &x) in b.iter().enumerate() {
            out[i / 8] |= u8::from(x) << (i % 8);
        }
        out
    };
    let page = Page::new(&[&pack(&valid), &pack(&values)]);
    let e = enc(E::Nullable(Box::new(enc20::Nullable {
        nullability: Some(enc20::nullable::Nullability::SomeNulls(Box::new(
            enc20::nullable::SomeNull {
                validity: Some(Box::new(flat(1, 0))),
                values: Some(Box::new(flat(1, 1))),
            },
        ))),
    })));
    let ranges = [3..11, 13..14, 30..40];
    let got = page.read(&e, &ranges, &DataType::Boolean);
    let want: BooleanArray = rows(&ranges)
        .into_iter()
        .map(|i| valid[i].then_some(values[i]))
        .collect();
    assert_eq!(got.ok().map(|a| a.to_data()), Some(want.to_data()));
}

#[test]
fn bad_references_are_errors() {
    let page = Page::new(&[&[0u8; 16]]);
    // Buffer 3 does not exist; rows past the buffer; a 12-bit flat; a missing child.
    assert!(page.read(&flat(64, 3), &[0..1], &DataType::Int64).is_err());
    assert!(page.read(&flat(64, 0), &[0..3], &DataType::Int64).is_err());
    assert!(page.read(&flat(12, 0), &[0..1], &DataType::Int16).is_err());
    let e = enc(E::FixedSizeList(Box::new(enc20::FixedSizeList {
        dimension: 2,
        has_validity: false,
        items: None,
    })));
    let dt = DataType::FixedSizeList(
        Arc::new(arrow_schema::Field::new("item", DataType::Int32, true)),
        2,
    );
    assert!(page.read(&e, &[0..1], &dt).is_err());
    let empty = ArrayEncoding {
        array_encoding: None,
    };
    assert!(page.read(&empty, &[0..1], &DataType::Int32).is_err());
}
