//! What every index kind shares about its segments (format guide, "Indices" → index
//! metadata, and the file format's global buffers): the header of a segment's manifest
//! entry ([`SegmentHeader`]: uuid, label, covered fragments, field), a global buffer of
//! an index file read with its bounds checked, and the error for damaged index bytes.
//! Vector, scalar and inverted segments all open through here.

use lancer_format::reader::FileReader;
use lancer_table::pb;
use roaring::RoaringBitmap;

use crate::{IndexError, Result};

/// The error for index bytes that are not what the format says (`index` names the
/// segment, `what` what is wrong).
pub(crate) fn corrupt(index: &str, what: impl Into<String>) -> IndexError {
    IndexError::Corrupt {
        index: index.to_string(),
        what: what.into(),
    }
}

/// What every index segment's manifest entry says: its uuid, a label for messages
/// (`name (uuid)`), the fragments it covers and its one indexed field.
pub(crate) struct SegmentHeader {
    pub(crate) uuid: Vec<u8>,
    pub(crate) label: String,
    pub(crate) fragments: RoaringBitmap,
    pub(crate) field_id: i32,
}

impl SegmentHeader {
    /// A segment's uuid, its `name (uuid)` label for messages and the fragments it
    /// covers (any index kind).
    pub(crate) fn identity(meta: &pb::IndexMetadata) -> Result<(Vec<u8>, String, RoaringBitmap)> {
        let uuid = meta
            .uuid
            .as_ref()
            .map(|u| u.uuid.clone())
            .ok_or_else(|| corrupt(&meta.name, "segment without uuid"))?;
        let label = format!(
            "{} ({})",
            meta.name,
            lancer_table::dataset::uuid_dir(&uuid).unwrap_or_default()
        );
        let fragments = RoaringBitmap::deserialize_from(meta.fragment_bitmap.as_slice())
            .map_err(|e| corrupt(&label, format!("fragment bitmap: {e}")))?;
        Ok((uuid, label, fragments))
    }

    /// Reads the header of `meta` (`kind` names the index kind in errors).
    pub(crate) fn of(meta: &pb::IndexMetadata, kind: &str) -> Result<Self> {
        let (uuid, label, fragments) = Self::identity(meta)?;
        let [field_id] = meta.fields[..] else {
            return Err(corrupt(
                &label,
                format!("{kind} on {} fields", meta.fields.len()),
            ));
        };
        Ok(Self {
            uuid,
            label,
            fragments,
            field_id,
        })
    }
}

/// Global buffer `pos` (a decimal position, as the index file's schema metadata writes it) of
/// the index file `r`, its range checked against the file size.
pub(crate) fn global_buffer(r: &FileReader, name: &str, pos: &str) -> Result<Vec<u8>> {
    let i: usize = pos
        .trim()
        .parse()
        .map_err(|_| corrupt(name, format!("global buffer position {pos:?}")))?;
    let range = r
        .metadata()
        .global_buffers
        .get(i)
        .cloned()
        .ok_or_else(|| corrupt(name, format!("global buffer {i} missing")))?;
    if range.end.saturating_sub(range.start) > r.metadata().file_size {
        return Err(corrupt(name, "global buffer larger than its file"));
    }
    Ok(r.io().read_range(range)?.to_vec())
}
