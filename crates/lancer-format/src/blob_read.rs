//! Legacy blob columns (binary fields marked `lance-encoding:blob` in 2.0 / 2.1 / 2.2
//! files; spec: "Blob Columns", the 2.0 `Blob` column encoding and the 2.1
//! `BlobLayout`) read either way the reference reads them: as **payloads** (the bytes,
//! fetched from where each row's description points) or as **descriptions**, a
//! `struct<position: uint64, size: uint64>` per row naming the payload's byte range in
//! the data file, without touching the payloads — pylance's default
//! (`blob_handling="blobs_descriptions"`).
//!
//! Descriptions come as stored, as pylance returns them: in a 2.0 file a null payload
//! is described `(1, 0)` and the description is not null; in a 2.1 file a null row's
//! description is null (its stored position carries the row's levels, not a place).

use std::ops::Range;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, StructArray, UInt64Array};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, Field, Fields};

use crate::read::RangeRead;
use crate::schema::LanceField;
use crate::structural::LeafRun;
use crate::{FormatError, Result};

/// How a read returns legacy blob columns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BlobRead {
    /// The payload bytes.
    #[default]
    Payloads,
    /// One `struct<position: uint64, size: uint64>` per row (see the module docs).
    Descriptions,
}

/// The fields of a legacy blob description as a read returns them (nullable, as the
/// reference's).
pub fn description_fields() -> Fields {
    vec![
        Field::new("position", DataType::UInt64, true),
        Field::new("size", DataType::UInt64, true),
    ]
    .into()
}

/// True if `lf` is a legacy blob leaf: blob-marked binary (blob v2 columns are
/// structs of their own and are read as stored).
pub fn is_legacy_blob(lf: &LanceField) -> bool {
    lf.is_blob()
        && !lf.is_blob_v2()
        && matches!(lf.data_type, DataType::Binary | DataType::LargeBinary)
}

/// `f` (the Arrow field of `lf`) as a read in `mode` returns it: legacy blob leaves,
/// at any depth, become their description struct with the field's name, nullability
/// and metadata; everything else is unchanged.
pub fn read_field_type(lf: &LanceField, f: &Field, mode: BlobRead) -> Field {
    if mode == BlobRead::Payloads {
        return f.clone();
    }
    if is_legacy_blob(lf) {
        return Field::new(
            f.name(),
            DataType::Struct(description_fields()),
            f.is_nullable(),
        )
        .with_metadata(f.metadata().clone());
    }
    let children = |fs: &Fields| -> Fields {
        fs.iter()
            .zip(&lf.children)
            .map(|(c, lc)| read_field_type(lc, c, mode))
            .collect()
    };
    let dt = match f.data_type() {
        DataType::Struct(fs) if !lf.is_packed_struct() => DataType::Struct(children(fs)),
        DataType::List(c) => DataType::List(Arc::new(read_field_type(
            lf.children.first().unwrap_or(lf),
            c,
            mode,
        ))),
        DataType::LargeList(c) => DataType::LargeList(Arc::new(read_field_type(
            lf.children.first().unwrap_or(lf),
            c,
            mode,
        ))),
        DataType::FixedSizeList(c, n) => DataType::FixedSizeList(
            Arc::new(read_field_type(lf.children.first().unwrap_or(lf), c, mode)),
            *n,
        ),
        DataType::Map(c, sorted) => DataType::Map(
            Arc::new(read_field_type(lf.children.first().unwrap_or(lf), c, mode)),
            *sorted,
        ),
        other => other.clone(),
    };
    Field::new(f.name(), dt, f.is_nullable()).with_metadata(f.metadata().clone())
}

/// The stored descriptions' two u64 columns.
fn positions_and_sizes<'a>(run: &'a LeafRun, what: &str) -> Result<(&'a [u64], &'a [u64])> {
    let desc = run
        .values
        .as_any()
        .downcast_ref::<StructArray>()
        .ok_or_else(|| FormatError::corrupt(format!("{what}: descriptions are not a struct")))?;
    let col = |i: usize| -> Result<&[u64]> {
        desc.columns()
            .get(i)
            .and_then(|c| c.as_any().downcast_ref::<UInt64Array>())
            .map(|a| a.values().as_ref())
            .ok_or_else(|| FormatError::corrupt(format!("{what}: descriptions are not u64 pairs")))
    };
    Ok((col(0)?, col(1)?))
}

/// A 2.1 blob page's rows split into levels: a row of size 0 carries
/// `def << 16 | rep` in its position (nulls, empty lists); others are payloads.
fn levels(pos: &[u64], size: &[u64]) -> (Vec<u16>, Vec<u16>) {
    let mut def = Vec::with_capacity(pos.len());
    let mut rep = Vec::with_capacity(pos.len());
    for (&p, &s) in pos.iter().zip(size) {
        if s == 0 {
            rep.push((p & 0xFFFF) as u16);
            def.push(((p >> 16) & 0xFFFF) as u16);
        } else {
            rep.push(0);
            def.push(0);
        }
    }
    (rep, def)
}

fn with_levels(run: &LeafRun, values: ArrayRef, rep: Vec<u16>, def: Vec<u16>) -> LeafRun {
    let has_nulls = def.iter().any(|&d| d != 0);
    let has_rep = rep.iter().any(|&r| r != 0);
    LeafRun {
        rep: if has_rep { Some(rep) } else { run.rep.clone() },
        def: has_nulls.then_some(def),
        num_rows: run.num_rows,
        values,
    }
}

/// A 2.1 blob page's run with its payloads fetched from `io` (a file of `file_size`
/// bytes) as values of `value_type`.
pub(crate) fn fetch(
    run: LeafRun,
    io: &dyn RangeRead,
    file_size: u64,
    value_type: &DataType,
) -> Result<LeafRun> {
    let (pos, size) = positions_and_sizes(&run, "blob page")?;
    let mut wanted: Vec<Range<u64>> = Vec::new();
    for (&p, &s) in pos.iter().zip(size) {
        if s > 0 {
            let end = p
                .checked_add(s)
                .filter(|&e| e <= file_size)
                .ok_or_else(|| {
                    FormatError::corrupt(format!("blob at {p}+{s} lies outside the file"))
                })?;
            wanted.push(p..end);
        }
    }
    let got = io.read_ranges(&wanted)?;
    if got.len() != wanted.len() {
        return Err(FormatError::corrupt(
            "blob page: blob reads came back short",
        ));
    }
    let mut got = got.into_iter();
    let mut offsets: Vec<u64> = Vec::with_capacity(size.len() + 1);
    offsets.push(0);
    let mut data: Vec<u8> = Vec::new();
    for &s in size {
        if s > 0 {
            let b = got.next().unwrap_or_default();
            data.extend_from_slice(&b);
        }
        offsets.push(data.len() as u64);
    }
    let block = crate::block::DataBlock::Variable {
        offsets: crate::block::Offsets::U64(offsets),
        data: arrow_buffer::Buffer::from_vec(data),
    };
    let values = crate::block::to_arrow(block, value_type, None)?;
    let (rep, def) = levels(pos, size);
    Ok(with_levels(&run, values, rep, def))
}

/// A 2.1 blob page's run as descriptions: rows with a value keep their stored
/// (position, size) — an empty value is `(0, 0)` —, null rows have null descriptions
/// (their stored position carries their levels, not a place).
pub(crate) fn describe(run: LeafRun) -> Result<LeafRun> {
    let (pos, size) = positions_and_sizes(&run, "blob page")?;
    let (rep, def) = levels(pos, size);
    let valid = NullBuffer::from(def.iter().map(|&d| d == 0).collect::<Vec<bool>>());
    let nulls = Some(valid).filter(|n| n.null_count() > 0);
    let positions: Vec<u64> = pos
        .iter()
        .zip(&def)
        .map(|(&p, &d)| if d == 0 { p } else { 0 })
        .collect();
    let children: Vec<ArrayRef> = vec![
        Arc::new(UInt64Array::new(positions.into(), nulls.clone())),
        Arc::new(UInt64Array::new(size.to_vec().into(), nulls)),
    ];
    let values = Arc::new(StructArray::try_new(description_fields(), children, None)?);
    Ok(with_levels(&run, values, rep, def))
}

/// A 2.0 blob column's stored descriptions as a read returns them: as stored, not
/// null (a null payload is described `(1, 0)`, as pylance returns it).
pub(crate) fn describe_v20(desc: &StructArray) -> Result<ArrayRef> {
    Ok(Arc::new(StructArray::try_new(
        description_fields(),
        desc.columns().to_vec(),
        None,
    )?))
}
