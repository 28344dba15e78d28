//! Lance 2.3 pages (`/lance.encodings23.PlanarLayout`), read only.
//!
//! Spec: "Lance File Format" → 2.3 ("Sparse Page Layout" and the planar page grammar).
//! The grammar is not published in any source available to Lancer; it was recovered
//! from pylance 14.0.2's output (see `protos/encodings23.proto` for how each field was
//! pinned). A planar page stores its *structure* and its *values* apart:
//!
//! * structure `Dense`: 2.1-style repetition / definition levels (layer meanings inner-most
//!   first); the values plane then carries the levels exactly as a 2.2 page would:
//!   `Chunked` = a 2.2 mini-block page (large chunks), `Zipped` = a full-zip page,
//!   `Constant` = a constant page, `None` = an all-null page. Those are converted to the
//!   equivalent 2.1 layout messages here and read by [`crate::structural`], bytes
//!   unchanged.
//! * structure `Sparse`: validity and list layers as position / count sets
//!   ([`sparse`]); the values plane holds only the leaf value slots, with no levels
//!   (mini-block chunks, full-zip values, a constant, or nothing). Buffers: the value
//!   plane's own (chunk metadata, chunks, dictionary; or zipped data and its offset
//!   index), then one buffer per explicit set in layer / field order.
//!
//! 2.3 also adds the `Range` and `Delta` compressions and variable-width mini-block
//! values with non-flat offsets ([`seq`]).
//!
//! Sparse binary / string leaves may also be `Indexed`: one index per leaf slot (null
//! slots included) into full-zip items. Sparse `Zipped` values, unlike chunks, leave
//! out every leaf slot that is null at any validity layer below the last list.
//!
//! Refused with a typed error (never observed from pylance 14.0.2, field numbers
//! unknown): sparse fixed-size-list layers (an unknown oneof), dense `Constant` values
//! under nullable or list layers, dense `Indexed` values; fixed-size lists of structs
//! (a sparse fixed-size-list layer, or dense item layers) — Lancer's structural layers
//! do not model them.

pub mod seq;
pub mod sparse;

use crate::pb::enc21::full_zip_layout::Details;
use crate::pb::enc21::CompressiveEncoding;
use crate::pb::enc21::{
    page_layout::Layout, ConstantLayout, FullZipLayout, MiniBlockLayout, PageLayout, RepDefLayer,
};
use crate::pb::enc23::{
    structural_plane::Codec as SCodec, value_plane::Codec as VCodec, zipped_values::Addressing,
    PlanarLayout, SparseStructure,
};
use crate::{FormatError, Result};

/// A 2.3 page, classified.
#[derive(Debug)]
pub enum Planar {
    /// Dense structure: the equivalent 2.1 / 2.2 page layout (same buffers).
    Dense(PageLayout),
    /// Sparse structure, and how its leaf value slots are stored.
    Sparse {
        /// The structural layers (outer-most first).
        structure: SparseStructure,
        /// The leaf values.
        values: SparseValues,
    },
}

/// The values of a sparse page, over its leaf value slots.
#[derive(Debug)]
pub enum SparseValues {
    /// A 2.1 layout over the leaf slots (no levels) using the page's first `buffers`.
    Layout {
        /// The layout.
        layout: Box<PageLayout>,
        /// Page buffers it uses (the structural buffers follow).
        buffers: usize,
        /// Values stored when the null leaf slots are left out (zipped values), else None.
        stored: Option<u64>,
    },
    /// Every leaf slot is null (no buffers).
    AllNull,
    /// One index per leaf slot, null slots included (buffer 0), into full-zip items (the next
    /// `buffers - 1` buffers).
    Indexed {
        /// How the indices are compressed.
        indices: CompressiveEncoding,
        /// The items, as a full-zip layout over `item_count` rows.
        items: Box<PageLayout>,
        /// Number of items.
        item_count: u64,
        /// Page buffers used (the structural buffers follow).
        buffers: usize,
    },
}

/// Refuses 2.3 files whose pages are not planar: pylance 11 and 12 write a pre-release
/// "2.3" with 2.1-grammar pages (and other level rules) that pylance 14 refuses too.
pub fn check_pages(meta: &crate::container::FileMetadata) -> Result<()> {
    if meta.version != crate::container::FileVersion::V2_3 {
        return Ok(());
    }
    let pre_release = meta
        .columns
        .iter()
        .flat_map(|c| &c.pages)
        .any(|p| !matches!(p.encoding, crate::container::PageEncoding::V23(_)));
    if pre_release {
        return Err(FormatError::unsupported(
            "pre-release 2.3 file (2.1-grammar pages, as pylance 11 / 12 wrote)",
            "2.3 pages are /lance.encodings23.PlanarLayout since pylance 14, which refuses these files too",
        ));
    }
    Ok(())
}

/// Refuses fields Lancer cannot assemble from 2.3 pages: fixed-size lists of structs or
/// lists (2.3 writes them as structure — dense item layers or a sparse fixed-size-list
/// layer — which Lancer's structural layers do not model).
pub fn check_field(f: &crate::schema::LanceField) -> Result<()> {
    use arrow_schema::DataType;
    fn walk(dt: &DataType) -> Result<()> {
        match dt {
            DataType::FixedSizeList(child, _) => match child.data_type() {
                DataType::Struct(_)
                | DataType::List(_)
                | DataType::LargeList(_)
                | DataType::Map(_, _)
                | DataType::FixedSizeList(_, _) => Err(FormatError::unsupported(
                    format!("2.3 fixed-size list of {}", child.data_type()),
                    "2.3 stores it as structural layers Lancer does not model",
                )),
                other => walk(other),
            },
            DataType::Struct(fs) => fs.iter().try_for_each(|f| walk(f.data_type())),
            DataType::List(f) | DataType::LargeList(f) | DataType::Map(f, _) => walk(f.data_type()),
            _ => Ok(()),
        }
    }
    walk(&f.data_type)?;
    f.children.iter().try_for_each(check_field)
}

fn unknown(what: &str) -> FormatError {
    FormatError::unsupported(
        format!("2.3 {what}"),
        "not written by pylance 14.0.2, so its wire form is unknown to Lancer",
    )
}

fn u32_of(v: u64, what: &str) -> Result<u32> {
    u32::try_from(v).map_err(|_| FormatError::corrupt(format!("2.3 {what} {v} exceeds u32")))
}

/// Classifies a planar page, converting dense pages to 2.1 layouts.
pub fn classify(p: &PlanarLayout) -> Result<Planar> {
    let structure = p
        .structure
        .as_ref()
        .and_then(|s| s.codec.as_ref())
        .ok_or_else(|| unknown("structural plane (missing, or of an unknown kind)"))?;
    let values = p
        .values
        .as_ref()
        .and_then(|v| v.codec.as_ref())
        .ok_or_else(|| unknown("value plane (missing, or of an unknown kind such as Indexed)"))?;
    match structure {
        SCodec::Dense(d) => {
            let layers = d.layers.clone();
            let layout = match values {
                VCodec::Chunked(c) => {
                    let levels = c.levels.clone().unwrap_or_default();
                    Layout::MiniBlockLayout(MiniBlockLayout {
                        rep_compression: levels.repetition,
                        def_compression: levels.definition,
                        value_compression: c.compression.clone(),
                        dictionary: c.dictionary.clone(),
                        num_dictionary_items: c.num_dictionary_items,
                        layers,
                        num_buffers: c.num_buffers,
                        repetition_index_depth: levels.repetition_index_depth,
                        num_items: c.num_items,
                        has_large_chunk: true,
                    })
                }
                VCodec::Zipped(z) => Layout::FullZipLayout(zipped(z, layers)?),
                VCodec::Constant(k) => {
                    let all_valid = layers
                        .iter()
                        .all(|&l| l == RepDefLayer::RepdefAllValidItem as i32);
                    if !all_valid {
                        return Err(unknown(
                            "dense constant values under nullable or list layers (levels location)",
                        ));
                    }
                    Layout::ConstantLayout(ConstantLayout {
                        layers,
                        inline_value: Some(k.scalar.clone()),
                        ..Default::default()
                    })
                }
                VCodec::None(_) => Layout::ConstantLayout(ConstantLayout {
                    layers,
                    ..Default::default()
                }),
                VCodec::Indexed(_) => {
                    return Err(unknown("indexed values on a dense page"));
                }
            };
            Ok(Planar::Dense(PageLayout {
                layout: Some(layout),
            }))
        }
        SCodec::Sparse(s) => {
            let leaf = vec![RepDefLayer::RepdefAllValidItem as i32];
            let values = match values {
                VCodec::Chunked(c) => {
                    if c.levels.is_some() {
                        return Err(FormatError::corrupt(
                            "sparse 2.3 page with dense levels in its chunks",
                        ));
                    }
                    let buffers = if c.dictionary.is_some() { 3 } else { 2 };
                    SparseValues::Layout {
                        layout: Box::new(PageLayout {
                            layout: Some(Layout::MiniBlockLayout(MiniBlockLayout {
                                value_compression: c.compression.clone(),
                                dictionary: c.dictionary.clone(),
                                num_dictionary_items: c.num_dictionary_items,
                                layers: leaf,
                                num_buffers: c.num_buffers,
                                has_large_chunk: true,
                                ..Default::default()
                            })),
                        }),
                        buffers,
                        stored: None,
                    }
                }
                VCodec::Zipped(z) => {
                    if z.levels
                        .as_ref()
                        .is_some_and(|l| l.bits_repetition != 0 || l.bits_definition != 0)
                    {
                        return Err(FormatError::corrupt(
                            "sparse 2.3 page with control words in its zipped values",
                        ));
                    }
                    let buffers = match z.addressing {
                        Some(Addressing::BitsPerOffset(_)) => 2,
                        _ => 1,
                    };
                    SparseValues::Layout {
                        layout: Box::new(PageLayout {
                            layout: Some(Layout::FullZipLayout(zipped(z, leaf)?)),
                        }),
                        buffers,
                        stored: Some(z.num_visible_items),
                    }
                }
                VCodec::Constant(k) => SparseValues::Layout {
                    layout: Box::new(PageLayout {
                        layout: Some(Layout::ConstantLayout(ConstantLayout {
                            layers: leaf,
                            inline_value: Some(k.scalar.clone()),
                            ..Default::default()
                        })),
                    }),
                    buffers: 0,
                    stored: None,
                },
                VCodec::None(_) => SparseValues::AllNull,
                VCodec::Indexed(x) => {
                    let items = x
                        .items
                        .as_ref()
                        .ok_or_else(|| FormatError::corrupt("2.3 indexed values without items"))?;
                    let indices = x.indices.clone().ok_or_else(|| {
                        FormatError::corrupt("2.3 indexed values without indices")
                    })?;
                    let item_buffers = match items.addressing {
                        Some(Addressing::BitsPerOffset(_)) => 2,
                        _ => 1,
                    };
                    SparseValues::Indexed {
                        indices,
                        items: Box::new(PageLayout {
                            layout: Some(Layout::FullZipLayout(zipped(items, leaf)?)),
                        }),
                        item_count: items.num_visible_items,
                        buffers: 1 + item_buffers,
                    }
                }
            };
            Ok(Planar::Sparse {
                structure: s.clone(),
                values,
            })
        }
    }
}

fn zipped(z: &crate::pb::enc23::ZippedValues, layers: Vec<i32>) -> Result<FullZipLayout> {
    let levels = z.levels.unwrap_or_default();
    Ok(FullZipLayout {
        bits_rep: levels.bits_repetition,
        bits_def: levels.bits_definition,
        details: match z.addressing {
            Some(Addressing::BitsPerValue(b)) => Some(Details::BitsPerValue(b)),
            Some(Addressing::BitsPerOffset(b)) => Some(Details::BitsPerOffset(b)),
            None => return Err(FormatError::corrupt("2.3 zipped values without addressing")),
        },
        num_items: u32_of(z.num_items, "zipped item count")?,
        num_visible_items: u32_of(z.num_visible_items, "zipped visible item count")?,
        value_compression: z.compression.clone(),
        layers,
    })
}
