//! Human- and machine-readable descriptions of a file's layers: pages, layouts,
//! compression trees and buffer byte ranges (what `lancer inspect` prints), and the
//! walk of one row to the bytes that hold it.

use std::fmt::Write as _;
use std::ops::Range;

use crate::compression;
use crate::container::{FileMetadata, PageEncoding, PageInfo};
use crate::pb::enc20::array_encoding::ArrayEncoding as A20;
use crate::pb::enc20::ArrayEncoding;
use crate::pb::enc21::compressive_encoding::Compression;
use crate::pb::enc21::page_layout::Layout;
use crate::pb::enc21::{CompressiveEncoding, PageLayout};
use crate::structural::Layer;

/// A one-line description of a compression tree, e.g. `general(zstd, flat(32))`.
pub fn describe_compression(c: Option<&CompressiveEncoding>) -> String {
    let Some(c) = c.and_then(|c| c.compression.as_ref()) else {
        return "none".into();
    };
    let inner = |e: &Option<Box<CompressiveEncoding>>| describe_compression(e.as_deref());
    match c {
        Compression::Flat(f) => match &f.data {
            Some(d) => format!("flat({}, {})", f.bits_per_value, scheme(d.scheme)),
            None => format!("flat({})", f.bits_per_value),
        },
        Compression::Variable(v) => format!("variable(offsets={})", inner(&v.offsets)),
        Compression::Constant(k) => match &k.value {
            Some(v) => format!("constant({} bytes)", v.len()),
            None => "constant(null)".into(),
        },
        Compression::OutOfLineBitpacking(b) => format!(
            "bitpack-out-of-line({} -> {})",
            b.uncompressed_bits_per_value,
            inner(&b.values)
        ),
        Compression::InlineBitpacking(b) => {
            format!("bitpack-inline({})", b.uncompressed_bits_per_value)
        }
        Compression::Fsst(f) => format!("fsst({})", inner(&f.values)),
        Compression::Dictionary(d) => format!(
            "dictionary({} items, indices={}, items={})",
            d.num_dictionary_items,
            inner(&d.indices),
            inner(&d.items)
        ),
        Compression::Rle(r) => format!(
            "rle(values={}, runs={})",
            inner(&r.values),
            inner(&r.run_lengths)
        ),
        Compression::ByteStreamSplit(b) => format!("byte-stream-split({})", inner(&b.values)),
        Compression::General(g) => format!(
            "general({}, {})",
            g.compression
                .as_ref()
                .map(|c| scheme(c.scheme))
                .unwrap_or("none"),
            inner(&g.values)
        ),
        Compression::FixedSizeList(f) => format!(
            "fixed-size-list({}{}, {})",
            f.items_per_value,
            if f.has_validity {
                ", nullable items"
            } else {
                ""
            },
            inner(&f.values)
        ),
        Compression::PackedStruct(p) => format!(
            "packed-struct({:?}, {})",
            p.bits_per_value,
            inner(&p.values)
        ),
        Compression::VariablePackedStruct(v) => {
            format!("variable-packed-struct({} fields)", v.fields.len())
        }
        Compression::Range(r) => format!(
            "range({}, start={}, step={})",
            r.uncompressed_bits_per_value, r.start, r.step
        ),
        Compression::Delta(d) => format!(
            "delta({}, base={}, {})",
            d.uncompressed_bits_per_value,
            d.base,
            inner(&d.deltas)
        ),
    }
}

/// Describes a 2.3 planar page.
fn describe_planar(p: &crate::pb::enc23::PlanarLayout) -> String {
    match crate::v23::classify(p) {
        Ok(crate::v23::Planar::Dense(l)) => format!("2.3 dense: {}", describe_layout(&l)),
        Ok(crate::v23::Planar::Sparse { structure, values }) => {
            use crate::pb::enc23::sparse_structural_layer::Layer as L;
            let layers: Vec<String> = structure
                .layers
                .iter()
                .map(|l| match &l.layer {
                    Some(L::Validity(v)) => format!(
                        "validity({} {})",
                        v.num_positions,
                        if v.meaning == 2 { "valid" } else { "null" }
                    ),
                    Some(L::List(l)) => format!(
                        "list({} non-empty, {} children, counts={})",
                        l.num_non_empty_positions,
                        l.num_child_slots,
                        describe_compression(l.counts.as_ref())
                    ),
                    Some(L::FixedSizeList(f)) => format!("fixed-size-list({})", f.dimension),
                    None => "unknown".into(),
                })
                .collect();
            let v = match values {
                crate::v23::SparseValues::Layout { layout, .. } => describe_layout(&layout),
                crate::v23::SparseValues::AllNull => "all null".into(),
                crate::v23::SparseValues::Indexed {
                    indices,
                    items,
                    item_count,
                    ..
                } => format!(
                    "indexed(indices={}, {item_count} items: {})",
                    describe_compression(Some(&indices)),
                    describe_layout(&items)
                ),
            };
            format!("2.3 sparse [{}]: {v}", layers.join(", "))
        }
        Err(e) => format!("2.3 (unreadable: {e})"),
    }
}

fn scheme(s: i32) -> &'static str {
    match s {
        1 => "lz4",
        2 => "zstd",
        _ => "none",
    }
}

fn layers(v: &[i32]) -> String {
    let names: Vec<&str> = v
        .iter()
        .map(|&l| match Layer::from_pb(l) {
            Ok(Layer::AllValidItem) => "item",
            Ok(Layer::NullableItem) => "nullable-item",
            Ok(Layer::AllValidList) => "list",
            Ok(Layer::NullableList) => "nullable-list",
            Ok(Layer::EmptyableList) => "emptyable-list",
            Ok(Layer::NullAndEmptyList) => "nullable-emptyable-list",
            Err(_) => "unknown",
        })
        .collect();
    format!("[{}]", names.join(", "))
}

/// Describes a 2.1+ page layout.
pub fn describe_layout(p: &PageLayout) -> String {
    match &p.layout {
        Some(Layout::MiniBlockLayout(m)) => {
            let mut s = format!(
                "mini-block values={} layers={}",
                describe_compression(m.value_compression.as_ref()),
                layers(&m.layers)
            );
            if m.rep_compression.is_some() {
                let _ = write!(
                    s,
                    " rep={}",
                    describe_compression(m.rep_compression.as_ref())
                );
            }
            if m.def_compression.is_some() {
                let _ = write!(
                    s,
                    " def={}",
                    describe_compression(m.def_compression.as_ref())
                );
            }
            if m.dictionary.is_some() {
                let _ = write!(
                    s,
                    " dictionary={} ({} items)",
                    describe_compression(m.dictionary.as_ref()),
                    m.num_dictionary_items
                );
            }
            if m.repetition_index_depth > 0 {
                let _ = write!(s, " repetition-index(depth {})", m.repetition_index_depth);
            }
            if m.has_large_chunk {
                s.push_str(" large-chunks");
            }
            s
        }
        Some(Layout::FullZipLayout(z)) => format!(
            "full-zip values={} rep-bits={} def-bits={} layers={}",
            describe_compression(z.value_compression.as_ref()),
            z.bits_rep,
            z.bits_def,
            layers(&z.layers)
        ),
        Some(Layout::ConstantLayout(c)) => format!(
            "constant({}) layers={}",
            match &c.inline_value {
                Some(v) => format!("{} bytes inline", v.len()),
                None => "null or buffered".into(),
            },
            layers(&c.layers)
        ),
        Some(Layout::BlobLayout(b)) => format!(
            "blob layers={} descriptions: {}",
            layers(&b.layers),
            b.inner_layout
                .as_deref()
                .map(describe_layout)
                .unwrap_or_else(|| "none".into())
        ),
        None => "unknown layout".into(),
    }
}

/// Describes a 2.0 encoding tree.
pub fn describe_v20(e: &ArrayEncoding) -> String {
    let inner = |e: &Option<Box<ArrayEncoding>>| match e {
        Some(e) => describe_v20(e),
        None => "none".into(),
    };
    match &e.array_encoding {
        Some(A20::Flat(f)) => format!("flat({})", f.bits_per_value),
        Some(A20::Nullable(n)) => {
            use crate::pb::enc20::nullable::Nullability;
            match &n.nullability {
                Some(Nullability::NoNulls(v)) => format!("no-nulls({})", inner(&v.values)),
                Some(Nullability::SomeNulls(v)) => format!(
                    "some-nulls(validity={}, values={})",
                    inner(&v.validity),
                    inner(&v.values)
                ),
                Some(Nullability::AllNulls(_)) => "all-nulls".into(),
                None => "nullable(?)".into(),
            }
        }
        Some(A20::FixedSizeList(f)) => {
            format!("fixed-size-list({}, {})", f.dimension, inner(&f.items))
        }
        Some(A20::List(l)) => format!("list(offsets={})", inner(&l.offsets)),
        Some(A20::Struct(_)) => "struct".into(),
        Some(A20::Binary(b)) => format!(
            "binary(offsets={}, bytes={})",
            inner(&b.indices),
            inner(&b.bytes)
        ),
        Some(A20::Dictionary(d)) => format!(
            "dictionary({} items, indices={}, items={})",
            d.num_dictionary_items,
            inner(&d.indices),
            inner(&d.items)
        ),
        Some(A20::Fsst(f)) => format!("fsst({})", inner(&f.binary)),
        Some(A20::PackedStruct(p)) => format!("packed-struct({} fields)", p.inner.len()),
        Some(A20::Bitpacked(b)) => format!(
            "bitpacked({} -> {}{})",
            b.uncompressed_bits_per_value,
            b.compressed_bits_per_value,
            if b.signed { ", signed" } else { "" }
        ),
        Some(A20::FixedSizeBinary(f)) => {
            format!("fixed-size-binary({}, {})", f.byte_width, inner(&f.bytes))
        }
        Some(A20::BitpackedForNonNeg(b)) => format!(
            "bitpacked-fastlanes({} -> {})",
            b.uncompressed_bits_per_value, b.compressed_bits_per_value
        ),
        Some(A20::Constant(c)) => format!("constant({} bytes)", c.value.len()),
        Some(other) => format!("{other:?}").chars().take(60).collect(),
        None => "unknown".into(),
    }
}

/// Describes any page encoding.
pub fn describe_page(p: &PageInfo) -> String {
    match &p.encoding {
        PageEncoding::V21(l) => describe_layout(l),
        PageEncoding::V20(e) => describe_v20(e),
        PageEncoding::V23(p) => describe_planar(p),
    }
}

/// Names of the compression techniques used anywhere in a page (for coverage tables).
pub fn techniques(p: &PageInfo) -> Vec<String> {
    let mut out = Vec::new();
    fn walk(c: Option<&CompressiveEncoding>, out: &mut Vec<String>) {
        let Some(c) = c.and_then(|c| c.compression.as_ref()) else {
            return;
        };
        out.push(compression::name(c).to_string());
        let kids: Vec<Option<&CompressiveEncoding>> = match c {
            Compression::Variable(v) => vec![v.offsets.as_deref()],
            Compression::OutOfLineBitpacking(b) => vec![b.values.as_deref()],
            Compression::Fsst(f) => vec![f.values.as_deref()],
            Compression::Dictionary(d) => vec![d.indices.as_deref(), d.items.as_deref()],
            Compression::Rle(r) => vec![r.values.as_deref(), r.run_lengths.as_deref()],
            Compression::ByteStreamSplit(b) => vec![b.values.as_deref()],
            Compression::General(g) => vec![g.values.as_deref()],
            Compression::FixedSizeList(f) => vec![f.values.as_deref()],
            Compression::PackedStruct(p) => vec![p.values.as_deref()],
            Compression::VariablePackedStruct(v) => {
                v.fields.iter().map(|f| f.value.as_ref()).collect()
            }
            _ => vec![],
        };
        for k in kids {
            walk(k, out);
        }
    }
    fn layout(l: &PageLayout, out: &mut Vec<String>) {
        match &l.layout {
            Some(Layout::MiniBlockLayout(m)) => {
                out.push("mini-block".into());
                if m.dictionary.is_some() {
                    out.push("dictionary".into());
                }
                if m.repetition_index_depth > 0 {
                    out.push("repetition-index".into());
                }
                if m.has_large_chunk {
                    out.push("large-chunks".into());
                }
                for c in [
                    &m.value_compression,
                    &m.rep_compression,
                    &m.def_compression,
                    &m.dictionary,
                ] {
                    walk(c.as_ref(), out);
                }
            }
            Some(Layout::FullZipLayout(z)) => {
                out.push("full-zip".into());
                walk(z.value_compression.as_ref(), out);
            }
            Some(Layout::ConstantLayout(c)) => {
                out.push(
                    if c.inline_value.is_some() {
                        "constant"
                    } else {
                        "constant/all-null"
                    }
                    .into(),
                );
                walk(c.rep_compression.as_ref(), out);
                walk(c.def_compression.as_ref(), out);
            }
            Some(Layout::BlobLayout(b)) => {
                out.push("blob".into());
                if let Some(i) = b.inner_layout.as_deref() {
                    layout(i, out);
                }
            }
            None => {}
        }
    }
    match &p.encoding {
        PageEncoding::V21(l) => layout(l, &mut out),
        PageEncoding::V20(e) => walk20(e, &mut out),
        PageEncoding::V23(p) => match crate::v23::classify(p) {
            Ok(crate::v23::Planar::Dense(l)) => {
                out.push("2.3:dense".into());
                layout(&l, &mut out);
            }
            Ok(crate::v23::Planar::Sparse { structure, values }) => {
                out.push("2.3:sparse".into());
                for l in &structure.layers {
                    use crate::pb::enc23::sparse_structural_layer::Layer as L;
                    match &l.layer {
                        Some(L::Validity(v)) => walk(v.positions.as_ref(), &mut out),
                        Some(L::FixedSizeList(f)) => {
                            out.push("2.3:sparse-fixed-size-list".into());
                            if let Some(v) = &f.validity {
                                walk(v.positions.as_ref(), &mut out);
                            }
                        }
                        Some(L::List(l)) => {
                            out.push("2.3:sparse-list".into());
                            walk(l.non_empty_positions.as_ref(), &mut out);
                            walk(l.counts.as_ref(), &mut out);
                            if let Some(v) = &l.validity {
                                walk(v.positions.as_ref(), &mut out);
                            }
                        }
                        None => {}
                    }
                }
                match values {
                    crate::v23::SparseValues::Layout { layout: l, .. } => layout(&l, &mut out),
                    crate::v23::SparseValues::AllNull => out.push("all-null".into()),
                    crate::v23::SparseValues::Indexed { indices, items, .. } => {
                        out.push("2.3:indexed".into());
                        walk(Some(&indices), &mut out);
                        layout(&items, &mut out);
                    }
                }
            }
            Err(_) => out.push("2.3:unknown".into()),
        },
    }
    out.sort();
    out.dedup();
    out
}

/// Names every node of a 2.0 encoding tree (prefixed `2.0:`).
fn walk20(e: &ArrayEncoding, out: &mut Vec<String>) {
    use crate::pb::enc20::nullable::Nullability;
    let mut kids: Vec<&ArrayEncoding> = Vec::new();
    let name = match &e.array_encoding {
        Some(A20::Flat(f)) => {
            if f.compression.is_some() {
                out.push("2.0:flat-compressed".into());
            }
            "flat"
        }
        Some(A20::Nullable(n)) => match &n.nullability {
            Some(Nullability::NoNulls(v)) => {
                kids.extend(v.values.as_deref());
                "no-nulls"
            }
            Some(Nullability::SomeNulls(v)) => {
                kids.extend(v.validity.as_deref());
                kids.extend(v.values.as_deref());
                "some-nulls"
            }
            Some(Nullability::AllNulls(_)) => "all-nulls",
            None => "nullable",
        },
        Some(A20::FixedSizeList(f)) => {
            kids.extend(f.items.as_deref());
            "fixed-size-list"
        }
        Some(A20::List(l)) => {
            kids.extend(l.offsets.as_deref());
            "list"
        }
        Some(A20::Struct(_)) => "struct",
        Some(A20::Binary(b)) => {
            kids.extend(b.indices.as_deref());
            kids.extend(b.bytes.as_deref());
            "binary"
        }
        Some(A20::Dictionary(d)) => {
            kids.extend(d.indices.as_deref());
            kids.extend(d.items.as_deref());
            "dictionary"
        }
        Some(A20::Fsst(f)) => {
            kids.extend(f.binary.as_deref());
            "fsst"
        }
        Some(A20::PackedStruct(p)) => {
            kids.extend(p.inner.iter());
            "packed-struct"
        }
        Some(A20::Bitpacked(_)) => "bitpacked",
        Some(A20::FixedSizeBinary(f)) => {
            kids.extend(f.bytes.as_deref());
            "fixed-size-binary"
        }
        Some(A20::BitpackedForNonNeg(_)) => "bitpacked-fastlanes",
        Some(A20::Constant(_)) => "constant",
        Some(A20::InlineBitpacking(_)) => "inline-bitpacking",
        Some(A20::OutOfLineBitpacking(_)) => "out-of-line-bitpacking",
        Some(A20::Variable(_)) => "variable",
        Some(A20::PackedStructFixedWidthMiniBlock(_)) => "packed-struct-mini-block",
        Some(A20::Block(_)) => "block",
        Some(A20::Rle(_)) => "rle",
        Some(A20::GeneralMiniBlock(_)) => "general-mini-block",
        Some(A20::ByteStreamSplit(_)) => "byte-stream-split",
        None => "unknown",
    };
    out.push(format!("2.0:{name}"));
    for k in kids {
        walk20(k, out);
    }
}

/// Where a row of a column lives.
#[derive(Debug, Clone)]
pub struct RowLocation {
    /// Page index within the column.
    pub page: usize,
    /// Row within the page.
    pub row_in_page: u64,
    /// The page's buffers.
    pub page_buffers: Vec<Range<u64>>,
    /// A description of the page encoding.
    pub encoding: String,
}

/// Finds the page of `column` that holds `row`.
pub fn locate_row(meta: &FileMetadata, column: usize, row: u64) -> Option<RowLocation> {
    let col = meta.columns.get(column)?;
    let mut start = 0u64;
    for (i, p) in col.pages.iter().enumerate() {
        if row < start + p.num_rows {
            return Some(RowLocation {
                page: i,
                row_in_page: row - start,
                page_buffers: p.buffers.clone(),
                encoding: describe_page(p),
            });
        }
        start += p.num_rows;
    }
    None
}

/// The field path each column holds (`a.b`, `l.item`), by column index.
pub fn column_paths(meta: &FileMetadata) -> Vec<String> {
    use arrow_schema::DataType;
    fn walk(f: &crate::schema::LanceField, prefix: &str, structural: bool, out: &mut Vec<String>) {
        let path = if prefix.is_empty() {
            f.name.clone()
        } else {
            format!("{prefix}.{}", f.name)
        };
        let nested = (matches!(
            f.data_type,
            DataType::Struct(_) | DataType::List(_) | DataType::LargeList(_) | DataType::Map(_, _)
        ) || (structural && crate::reader::is_struct_fsl(&f.data_type)))
            && !(structural && f.is_packed_struct());
        if !nested {
            out.push(path);
            return;
        }
        if !structural {
            out.push(path.clone());
        }
        for c in &f.children {
            walk(c, &path, structural, out);
        }
    }
    let mut out = Vec::new();
    for f in &meta.schema.fields {
        walk(f, "", meta.version.is_structural(), &mut out);
    }
    out
}
