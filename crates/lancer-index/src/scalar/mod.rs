//! Scalar indexes (reference: "Scalar Indices", lines ~1300–2165; byte layouts and query
//! semantics as pylance 11–14 write them in `docs/scalar-index-format.md`): BTREE,
//! BITMAP, LABEL_LIST, ZONEMAP, BLOOMFILTER and NGRAM segments opened from a dataset's
//! index section, asked [`Query`]s, answering with the row addresses (or stable row ids)
//! that match — exactly, or as a candidate superset the caller rechecks.
//!
//! Every comparison runs in the indexes' total order (nulls first, floats by IEEE total
//! order), which is also the order of arrow's comparison kernels that evaluate filters,
//! so an index never drops a row the filter keeps.

pub mod bitmap;
pub mod bloom;
pub mod btree;
pub mod build;
mod fold_table;
mod group;
pub mod merge;
pub mod ngram;
pub mod rowmap;
mod zoned;
pub mod zonemap;

use std::ops::Bound;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, BooleanArray, Datum, Scalar};
use lancer_format::reader::FileReader;
use lancer_table::{pb, Dataset};
use roaring::{RoaringBitmap, RoaringTreemap};

use crate::segment::SegmentHeader;
use crate::Result;

/// The scalar index kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScalarKind {
    /// Sorted pages of (value, row) with a page lookup: exact.
    BTree,
    /// One row bitmap per distinct value: exact.
    Bitmap,
    /// A bitmap per distinct list element: exact for `array_has_*`.
    LabelList,
    /// Min / max / null count per zone of rows: candidate zones.
    ZoneMap,
    /// A split-block bloom filter per zone: candidate zones for equality.
    BloomFilter,
    /// Trigram posting lists: candidate rows for `contains` / `LIKE '%x%'`.
    NGram,
}

impl ScalarKind {
    /// All kinds.
    pub const ALL: [ScalarKind; 6] = [
        Self::BTree,
        Self::Bitmap,
        Self::LabelList,
        Self::ZoneMap,
        Self::BloomFilter,
        Self::NGram,
    ];

    /// The `index_details` type URL pylance writes (leading `/` included).
    pub fn type_url(self) -> &'static str {
        match self {
            Self::BTree => "/lance.table.BTreeIndexDetails",
            Self::Bitmap => "/lance.table.BitmapIndexDetails",
            Self::LabelList => "/lance.table.LabelListIndexDetails",
            Self::ZoneMap => "/lance.table.ZoneMapIndexDetails",
            Self::BloomFilter => "/lance.index.pb.BloomFilterIndexDetails",
            Self::NGram => "/lance.table.NGramIndexDetails",
        }
    }

    /// The kind a type URL names (any prefix before the message name).
    pub fn from_type_url(url: &str) -> Option<Self> {
        let message = url.rsplit('/').next().unwrap_or(url);
        Self::ALL
            .into_iter()
            .find(|k| k.type_url().rsplit('/').next() == Some(message))
    }

    /// The name pylance's plans print (`BTree`, `Bitmap`, ...).
    pub fn plan_name(self) -> &'static str {
        match self {
            Self::BTree => "BTree",
            Self::Bitmap => "Bitmap",
            Self::LabelList => "LabelList",
            Self::ZoneMap => "ZoneMap",
            Self::BloomFilter => "BloomFilter",
            Self::NGram => "NGram",
        }
    }

    /// The type name of `list_indices` / the CLI (`BTREE`, `BITMAP`, ...).
    pub fn type_name(self) -> &'static str {
        match self {
            Self::BTree => "BTREE",
            Self::Bitmap => "BITMAP",
            Self::LabelList => "LABEL_LIST",
            Self::ZoneMap => "ZONEMAP",
            Self::BloomFilter => "BLOOMFILTER",
            Self::NGram => "NGRAM",
        }
    }

    /// Parses a type name in any case (`btree`, `label_list`, `bloomfilter`, ...).
    pub fn parse(name: &str) -> Option<Self> {
        let n = name.to_ascii_uppercase().replace('-', "_");
        Self::ALL
            .into_iter()
            .find(|k| k.type_name() == n || (n == "LABELLIST" && *k == Self::LabelList))
    }

    /// The highest `index_version` of this kind Lancer reads (newer ones are skipped, as
    /// pylance skips them).
    pub fn max_version(self) -> u32 {
        match self {
            Self::BTree | Self::LabelList => 1,
            _ => 0,
        }
    }

    /// Whether answers are exact (else candidates to recheck).
    pub fn exact(self) -> bool {
        matches!(self, Self::BTree | Self::Bitmap | Self::LabelList)
    }

    /// Whether this kind can answer `q` at all.
    pub fn answers(self, q: &Query) -> bool {
        use Query::*;
        match self {
            Self::BTree => matches!(q, In(_) | Range { .. } | IsNull | Prefix(_)),
            Self::Bitmap => matches!(q, In(_) | Range { .. } | IsNull),
            Self::LabelList => matches!(q, HasAny(_) | HasAll(_)),
            Self::ZoneMap => matches!(q, In(_) | Range { .. } | IsNull | Prefix(_)),
            Self::BloomFilter => matches!(q, In(_) | IsNull),
            Self::NGram => matches!(q, Contains(s) if s.chars().count() >= 3),
        }
    }
}

/// A question put to one index column. Values have the column's type (for
/// LABEL_LIST: the list's element type).
#[derive(Clone, Debug)]
pub enum Query {
    /// The value is one of these (null entries match nothing).
    In(ArrayRef),
    /// The value lies in this range (total order).
    Range {
        /// Lower bound (a one-value array).
        lower: Bound<ArrayRef>,
        /// Upper bound (a one-value array).
        upper: Bound<ArrayRef>,
    },
    /// The value is null.
    IsNull,
    /// The string value starts with this prefix.
    Prefix(String),
    /// The string value contains this text.
    Contains(String),
    /// The list holds any of these elements.
    HasAny(ArrayRef),
    /// The list holds all of these elements.
    HasAll(ArrayRef),
}

/// What an index says about a query: matching rows (addresses or stable row ids, see
/// [`ScalarSegment::row_ids`]) of the segment's fragments.
#[derive(Clone, Debug, Default)]
pub struct Answer {
    /// The rows.
    pub rows: RoaringTreemap,
    /// Exactly the matching rows (else a superset to recheck).
    pub exact: bool,
}

/// One opened scalar index segment.
pub struct ScalarSegment {
    /// Index name (shared by its segments).
    pub name: String,
    /// Name and uuid, for messages.
    pub label: String,
    /// The kind.
    pub kind: ScalarKind,
    /// Field id of the indexed column.
    pub field_id: i32,
    /// Fragments the segment covers (as recorded; some may be gone).
    pub fragments: RoaringBitmap,
    /// Whether stored rows are stable row ids rather than row addresses.
    pub row_ids: bool,
    /// For a JSON path index: the path whose values it holds.
    pub json_path: Option<String>,
    index: Kind,
}

enum Kind {
    BTree(btree::BTreeIndex),
    Bitmap(bitmap::BitmapIndex),
    ZoneMap(zonemap::ZoneMapIndex),
    Bloom(bloom::BloomIndex),
    NGram(ngram::NGramIndex),
}

impl std::fmt::Debug for ScalarSegment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScalarSegment")
            .field("label", &self.label)
            .field("kind", &self.kind)
            .finish()
    }
}

/// The `index_details` type URL of pylance 14's JSON path indexes (`index_type="json"`):
/// a scalar index over the values one JSON path selects, its own details inside.
pub const JSON_TYPE_URL: &str = "/lance.index.pb.JsonIndexDetails";

/// pylance's `JsonIndexDetails` (`protos/index.proto`): the indexed JSON path and the
/// details of the index over its values (a BTREE's, a BITMAP's).
#[derive(Clone, PartialEq, prost::Message)]
pub struct JsonIndexDetails {
    /// The JSONPath the values were selected with, as given (`x`, `$.a.b`).
    #[prost(string, tag = "1")]
    pub path: String,
    /// The details of the index over the selected values.
    #[prost(message, optional, tag = "2")]
    pub target_details: Option<prost_types::Any>,
}

/// `JsonIndexDetails` bytes of a JSON path index on `path` holding a `kind` index whose
/// own details are `target`.
pub fn json_details_bytes(path: &str, kind: ScalarKind, target: Vec<u8>) -> Vec<u8> {
    use prost::Message;
    JsonIndexDetails {
        path: path.to_string(),
        target_details: Some(prost_types::Any {
            type_url: kind.type_url().to_string(),
            value: target,
        }),
    }
    .encode_to_vec()
}

/// The JSON path details of a JSON path index's entry (None for other indexes, or
/// details that do not decode).
pub fn json_details(meta: &pb::IndexMetadata) -> Option<JsonIndexDetails> {
    use prost::Message;
    let any = meta.index_details.as_ref()?;
    if any.type_url.rsplit('/').next() != JSON_TYPE_URL.rsplit('/').next() {
        return None;
    }
    JsonIndexDetails::decode(any.value.as_slice()).ok()
}

/// The kind of a segment from its details (or, for legacy segments without details,
/// from its files as pylance decides), or None when it is not a scalar index.
pub fn kind_of(ds: &Dataset, meta: &pb::IndexMetadata) -> Option<ScalarKind> {
    // a JSON path index is of the kind it holds
    if let Some(d) = json_details(meta) {
        return d
            .target_details
            .and_then(|t| ScalarKind::from_type_url(&t.type_url));
    }
    match &meta.index_details {
        Some(any) => ScalarKind::from_type_url(&any.type_url),
        None => {
            let uuid = meta.uuid.as_ref()?.uuid.clone();
            if ds
                .open_index_file(&uuid, "bitmap_page_lookup.lance")
                .is_ok()
            {
                Some(ScalarKind::Bitmap)
            } else if ds.open_index_file(&uuid, "page_lookup.lance").is_ok() {
                Some(ScalarKind::BTree)
            } else {
                None
            }
        }
    }
}

impl ScalarSegment {
    /// Opens a scalar segment. `Ok(None)` when it is not a scalar index or of a newer
    /// version than Lancer reads (the planner then scans, as pylance does).
    pub fn open(ds: &Dataset, meta: &pb::IndexMetadata) -> Result<Option<Self>> {
        let Some(kind) = kind_of(ds, meta) else {
            return Ok(None);
        };
        let version = meta.index_version.unwrap_or(0).max(0) as u32;
        if version > kind.max_version() {
            return Ok(None);
        }
        let SegmentHeader {
            uuid,
            label,
            fragments,
            field_id,
        } = SegmentHeader::of(meta, "a scalar index")?;
        let open = |name: &str| -> Result<Arc<FileReader>> { Ok(ds.open_index_file(&uuid, name)?) };
        let index = match kind {
            ScalarKind::BTree => Kind::BTree(btree::BTreeIndex::open(
                &label,
                open("page_lookup.lance")?,
                open("page_data.lance")?,
            )?),
            ScalarKind::Bitmap | ScalarKind::LabelList => Kind::Bitmap(bitmap::BitmapIndex::open(
                &label,
                open("bitmap_page_lookup.lance")?,
                kind == ScalarKind::LabelList,
            )?),
            ScalarKind::ZoneMap => {
                Kind::ZoneMap(zonemap::ZoneMapIndex::open(&label, open("zonemap.lance")?)?)
            }
            ScalarKind::BloomFilter => {
                Kind::Bloom(bloom::BloomIndex::open(&label, open("bloomfilter.lance")?)?)
            }
            ScalarKind::NGram => Kind::NGram(ngram::NGramIndex::open(
                &label,
                open("ngram_postings.lance")?,
            )?),
        };
        let row_ids = ds.uses_stable_row_ids()
            && match kind {
                ScalarKind::BTree => version == 0,
                ScalarKind::Bitmap | ScalarKind::LabelList | ScalarKind::NGram => true,
                ScalarKind::ZoneMap | ScalarKind::BloomFilter => false,
            };
        Ok(Some(Self {
            name: meta.name.clone(),
            label,
            kind,
            field_id,
            fragments,
            row_ids,
            json_path: json_details(meta).map(|d| d.path),
            index,
        }))
    }

    /// The type of the indexed values (BTREE, BITMAP and ZONEMAP segments; None for
    /// others: a bloom filter does not record it).
    pub fn value_type(&self) -> Option<arrow_schema::DataType> {
        match &self.index {
            Kind::BTree(i) => Some(i.value_type()),
            Kind::Bitmap(i) => Some(i.value_type()),
            Kind::ZoneMap(i) => Some(i.value_type()),
            _ => None,
        }
    }

    /// pylance's per-segment statistics (`index_statistics`'s `indices` entries) of
    /// this segment's kind.
    pub fn statistics(&self) -> Result<serde_json::Value> {
        Ok(match &self.index {
            Kind::BTree(i) => i.statistics()?,
            Kind::Bitmap(i) => i.statistics(),
            Kind::ZoneMap(i) => i.statistics(),
            Kind::Bloom(i) => i.statistics(),
            Kind::NGram(i) => i.statistics(),
        })
    }

    /// What answering `q` would read: (index rows read, rows indexed), for a planner
    /// weighing the index against a scan. BTREE: the rows of the pages that can hold
    /// `q`'s values (read from the page lookup, nothing else); BITMAP / LABEL_LIST:
    /// nothing but the keys' bitmaps (0 rows); None for other kinds and queries.
    pub fn read_estimate(&self, q: &Query) -> Result<Option<(u64, u64)>> {
        if !self.kind.answers(q) {
            return Ok(None);
        }
        match (&self.index, q) {
            (Kind::BTree(i), Query::In(set)) => i.in_estimate(set).map(Some),
            (Kind::Bitmap(_), Query::In(_)) => Ok(Some((0, 0))),
            _ => Ok(None),
        }
    }

    /// The answer to `q`, or None when this kind cannot answer it.
    pub fn query(&self, q: &Query) -> Result<Option<Answer>> {
        if !self.kind.answers(q) {
            return Ok(None);
        }
        let exact = self.kind.exact()
            || (matches!(q, Query::IsNull)
                && matches!(self.kind, ScalarKind::ZoneMap | ScalarKind::BloomFilter));
        let rows = match &self.index {
            Kind::BTree(i) => i.query(q)?,
            Kind::Bitmap(i) => i.query(q)?,
            Kind::ZoneMap(i) => i.query(q)?,
            Kind::Bloom(i) => i.query(q)?,
            Kind::NGram(i) => i.query(q)?,
        };
        Ok(rows.map(|rows| Answer { rows, exact }))
    }
}

/// `values <op> bound` in total order; null results (null values) count as false
/// unless `null_true` (a null `min` of a BTREE page lies below everything).
pub(crate) fn compare(
    values: &dyn Array,
    bound: &Bound<ArrayRef>,
    upper: bool,
    null_true: bool,
) -> Result<BooleanArray> {
    use arrow_ord::cmp;
    let mask = match bound {
        Bound::Unbounded => return Ok(BooleanArray::from(vec![true; values.len()])),
        Bound::Included(b) | Bound::Excluded(b) => {
            let s = Scalar::new(b.clone());
            let d: &dyn Datum = &s;
            match (bound, upper) {
                (Bound::Included(_), true) => cmp::lt_eq(&values, d)?,
                (Bound::Excluded(_), true) => cmp::lt(&values, d)?,
                (Bound::Included(_), false) => cmp::gt_eq(&values, d)?,
                _ => cmp::gt(&values, d)?,
            }
        }
    };
    Ok(fill_nulls(&mask, null_true))
}

/// `values = v` for any `v` of `set` (null entries of `set` match nothing).
pub(crate) fn equals_any(values: &dyn Array, set: &dyn Array) -> Result<BooleanArray> {
    if set.len() > 16 && set.data_type() == values.data_type() {
        if let Some(m) = equals_any_hashed(values, set) {
            return Ok(m);
        }
    }
    let mut out = BooleanArray::from(vec![false; values.len()]);
    for i in 0..set.len() {
        if set.is_null(i) {
            continue;
        }
        let s = Scalar::new(set.slice(i, 1));
        let eq = fill_nulls(&arrow_ord::cmp::eq(&values, &s)?, false);
        out = BooleanArray::new(out.values() | eq.values(), None);
    }
    Ok(out)
}

/// [`equals_any`] for large sets: the set's values hashed in the row format, whose
/// byte equality is the comparison kernels' equality (floats by total order, strings by
/// bytes). None when the type has no row format.
fn equals_any_hashed(values: &dyn Array, set: &dyn Array) -> Option<BooleanArray> {
    use arrow_row::{RowConverter, SortField};
    let conv = RowConverter::new(vec![SortField::new(values.data_type().clone())]).ok()?;
    let set_rows = conv
        .convert_columns(&[arrow_array::make_array(set.to_data())])
        .ok()?;
    let keys: std::collections::HashSet<&[u8]> = (0..set.len())
        .filter(|&i| set.is_valid(i))
        .map(|i| set_rows.row(i).data())
        .collect();
    let rows = conv
        .convert_columns(&[arrow_array::make_array(values.to_data())])
        .ok()?;
    Some(BooleanArray::from(
        (0..values.len())
            .map(|i| values.is_valid(i) && keys.contains(rows.row(i).data()))
            .collect::<Vec<bool>>(),
    ))
}

/// A mask with its nulls replaced by `value`.
pub(crate) fn fill_nulls(mask: &BooleanArray, value: bool) -> BooleanArray {
    match mask.nulls() {
        Some(n) if n.null_count() > 0 => BooleanArray::from(
            (0..mask.len())
                .map(|i| if n.is_null(i) { value } else { mask.value(i) })
                .collect::<Vec<bool>>(),
        ),
        _ => mask.clone(),
    }
}

/// Whether the string at `i` of a utf8 / large utf8 array starts with `prefix` (false
/// for nulls and other types).
pub(crate) fn starts_with_at(values: &dyn Array, i: usize, prefix: &str) -> bool {
    use arrow_array::cast::AsArray;
    if values.is_null(i) {
        return false;
    }
    if let Some(a) = values.as_string_opt::<i32>() {
        return a.value(i).starts_with(prefix);
    }
    if let Some(a) = values.as_string_opt::<i64>() {
        return a.value(i).starts_with(prefix);
    }
    if let Some(a) = values.as_string_view_opt() {
        return a.value(i).starts_with(prefix);
    }
    false
}

/// The range of strings starting with `prefix`, for page / zone pruning: `[prefix,
/// prefix + U+10FFFF]` (every string with the prefix sorts inside it).
pub(crate) fn prefix_range(
    prefix: &str,
    like: &dyn Array,
) -> Result<(Bound<ArrayRef>, Bound<ArrayRef>)> {
    let hi = format!("{prefix}\u{10FFFF}");
    let cast = |s: &str| -> Result<ArrayRef> {
        let a: ArrayRef = Arc::new(arrow_array::StringArray::from(vec![s]));
        Ok(arrow_cast::cast(&a, like.data_type())?)
    };
    Ok((Bound::Included(cast(prefix)?), Bound::Included(cast(&hi)?)))
}

/// Row offsets `start..start+len` of fragment `frag` as addresses, into `out`.
pub(crate) fn insert_span(out: &mut RoaringTreemap, frag: u64, start: u64, len: u64) {
    let base = frag << 32;
    let end = start.saturating_add(len).min(1 << 32);
    if start < end {
        out.insert_range(base + start..base + end);
    }
}
