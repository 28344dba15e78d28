//! Run-length encoding (spec: "Compression" → "Run Length Encoding"): a buffer of run
//! values (fixed width) and a buffer of run lengths (u8 each; longer runs are split).

use arrow_buffer::{Buffer, MutableBuffer};

use crate::block::DataBlock;
use crate::pb::enc21::compressive_encoding::Compression;
use crate::pb::enc21::Rle;
use crate::{FormatError, Result};

fn widths(r: &Rle) -> Result<(u64, u64)> {
    let v = match super::compression_of(r.values.as_deref(), "rle values")? {
        Compression::Flat(f) => f.bits_per_value,
        // 2.3: run values bitpacked out of line or a range; their count is inferred
        // from the lengths.
        Compression::OutOfLineBitpacking(b) => b.uncompressed_bits_per_value,
        Compression::Range(r) => r.uncompressed_bits_per_value,
        other => {
            return Err(FormatError::unsupported(
                super::name(other),
                "rle values must be flat",
            ))
        }
    };
    let l = match super::compression_of(r.run_lengths.as_deref(), "rle run lengths")? {
        Compression::Flat(f) => f.bits_per_value,
        // 2.3: run lengths bitpacked out of line; their count is inferred from the values.
        Compression::OutOfLineBitpacking(b) => b.uncompressed_bits_per_value,
        other => {
            return Err(FormatError::unsupported(
                super::name(other),
                "rle run lengths must be flat or out-of-line bitpacked",
            ))
        }
    };
    if v % 8 != 0 || v == 0 || !(l == 8 || l == 16 || l == 32 || l == 64) {
        return Err(FormatError::corrupt(format!(
            "rle with {v}-bit values and {l}-bit run lengths"
        )));
    }
    Ok((v, l))
}

/// Expands runs to `num_values` values.
pub fn expand(
    values: &[u8],
    lengths: &[u8],
    value_bits: u64,
    len_bits: u64,
    num_values: u64,
) -> Result<DataBlock> {
    let vw = (value_bits / 8) as usize;
    let lw = (len_bits / 8) as usize;
    let runs = lengths.len() / lw;
    if values.len() < runs * vw {
        return Err(FormatError::corrupt(format!(
            "rle has {runs} run lengths but only {} value bytes",
            values.len()
        )));
    }
    let total = (num_values as usize)
        .checked_mul(vw)
        .ok_or_else(|| FormatError::corrupt("rle output size overflows"))?;
    let mut out = MutableBuffer::with_capacity(total);
    let mut produced = 0u64;
    let lens = super::read_uints(lengths, lw, runs)?;
    for (i, &len) in lens.iter().enumerate() {
        let take = len.min(num_values - produced);
        let v = &values[i * vw..(i + 1) * vw];
        for _ in 0..take {
            out.extend_from_slice(v);
        }
        produced += take;
        if produced == num_values {
            break;
        }
    }
    if produced != num_values {
        return Err(FormatError::corrupt(format!(
            "rle runs cover {produced} values, {num_values} expected"
        )));
    }
    Ok(DataBlock::Fixed {
        bits_per_value: value_bits,
        data: out.into(),
        num_values,
    })
}

/// Run values and lengths as plain little-endian integers: as stored when flat, else
/// (2.3, one of them out-of-line bitpacked) decoded, the run count taken from the
/// flat one.
fn plain(r: &Rle, values: &Buffer, vb: u64, lengths: &Buffer, lb: u64) -> Result<(Buffer, Buffer)> {
    let vc = super::compression_of(r.values.as_deref(), "rle values")?;
    let lc = super::compression_of(r.run_lengths.as_deref(), "rle run lengths")?;
    let unpack = |c: &Compression, b: &Buffer, runs: u64| -> Result<Buffer> {
        match super::block(c, b.clone(), runs)? {
            DataBlock::Fixed { data, .. } => Ok(data),
            _ => Err(FormatError::corrupt("rle runs are not fixed width")),
        }
    };
    match (vc, lc) {
        (Compression::Flat(_), Compression::Flat(_)) => Ok((values.clone(), lengths.clone())),
        (Compression::Flat(_), c) => {
            let runs = (values.len() as u64) / (vb / 8);
            Ok((values.clone(), unpack(c, lengths, runs)?))
        }
        (c, Compression::Flat(_)) => {
            let runs = (lengths.len() as u64) / (lb / 8);
            Ok((unpack(c, values, runs)?, lengths.clone()))
        }
        _ => Err(FormatError::unsupported(
            "rle",
            "run values and run lengths both bitpacked (the run count is unknown)",
        )),
    }
}

/// Mini-block: buffer 0 holds run values, buffer 1 run lengths.
pub fn decode_miniblock(r: &Rle, buffers: Vec<Buffer>, num_values: u64) -> Result<DataBlock> {
    let (vb, lb) = widths(r)?;
    let values_stored = super::compression_of(r.values.as_deref(), "rle values")
        .map(|c| !crate::v23::seq::metadata_only(c))?;
    let mut buffers = buffers;
    if !values_stored && buffers.len() == 1 {
        // Metadata-only run values (2.3 range): only the lengths are stored.
        buffers.insert(0, Buffer::from_vec(Vec::<u8>::new()));
    }
    let [values, lengths] = <[Buffer; 2]>::try_from(buffers).map_err(|b| {
        FormatError::corrupt(format!("rle chunk has {} buffers, expected 2", b.len()))
    })?;
    let (values, lengths) = plain(r, &values, vb, &lengths, lb)?;
    expand(values.as_slice(), lengths.as_slice(), vb, lb, num_values)
}

/// Block: `[values byte length: u64][values][lengths]`.
pub fn decode_block(r: &Rle, buf: &Buffer, num_values: u64) -> Result<DataBlock> {
    let (vb, lb) = widths(r)?;
    let b = buf.as_slice();
    let vlen = b
        .get(..8)
        .map(|h| u64::from_le_bytes([h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]]))
        .ok_or_else(|| FormatError::corrupt("rle block shorter than its header"))?;
    let vend = 8u64
        .checked_add(vlen)
        .filter(|&e| e <= b.len() as u64)
        .ok_or_else(|| FormatError::corrupt("rle block values overrun the buffer"))?
        as usize;
    let (values, lengths) = plain(
        r,
        &buf.slice_with_length(8, vend - 8),
        vb,
        &buf.slice(vend),
        lb,
    )?;
    expand(values.as_slice(), lengths.as_slice(), vb, lb, num_values)
}
