//! Deletion files (spec: "Deletion files"): `_deletions/{fragment}-{read_version}-{id}`
//! `.arrow` (an Arrow IPC file with one u32 column of deleted row offsets) or `.bin`
//! (a serialized roaring bitmap).

use arrow_array::{Array, UInt32Array};
use roaring::RoaringBitmap;

use crate::pb::{deletion_file::DeletionFileType, DeletionFile};
use crate::{Result, TableError};

/// A fragment's deletion file, relative to the dataset root.
pub fn deletion_path(fragment_id: u64, d: &DeletionFile) -> String {
    let suffix = match DeletionFileType::try_from(d.file_type) {
        Ok(DeletionFileType::Bitmap) => "bin",
        _ => "arrow",
    };
    format!(
        "_deletions/{fragment_id}-{}-{}.{suffix}",
        d.read_version, d.id
    )
}

/// Reads the deleted row offsets of a fragment.
pub fn read_deletions(
    store: &lancer_io::Store,
    fragment_id: u64,
    d: &DeletionFile,
    physical_rows: u64,
) -> Result<RoaringBitmap> {
    let p = deletion_path(fragment_id, d);
    let bytes = store.get(&p)?;
    let bitmap = matches!(
        DeletionFileType::try_from(d.file_type),
        Ok(DeletionFileType::Bitmap)
    );
    decode_deletions(&bytes, bitmap, physical_rows, &store.display(&p))
}

/// The error for a damaged deletion file `name`: what is wrong and what to do.
fn damaged(name: &str, what: impl std::fmt::Display) -> TableError {
    TableError::corrupt(format!(
        "deletion file {name} is damaged ({what}): restore it from a backup, or read an \
         earlier version of the dataset and restore that version"
    ))
}

/// Decodes the bytes of a deletion file (`bitmap`: a roaring bitmap `.bin`, else an
/// Arrow IPC file of one u32 column) into the deleted row offsets of a
/// `physical_rows`-row fragment. Hostile bytes end in an error naming `name`, never a
/// panic or an allocation beyond a small multiple of the input: the Arrow file goes
/// through [`lancer_format::ipc`], the bitmap through roaring's checked deserializer
/// (its containers are at most 8 KiB each), both with panics contained.
pub fn decode_deletions(
    bytes: &[u8],
    bitmap: bool,
    physical_rows: u64,
    name: &str,
) -> Result<RoaringBitmap> {
    let bm = if bitmap {
        match lancer_util::contain::contain(|| RoaringBitmap::deserialize_from(bytes)) {
            Ok(Ok(bm)) => bm,
            Ok(Err(e)) => return Err(damaged(name, format_args!("roaring bitmap: {e}"))),
            Err(_) => return Err(damaged(name, "roaring bitmap decoder failed")),
        }
    } else {
        let (schema, batches) =
            lancer_format::ipc::read_all(bytes).map_err(|e| damaged(name, e))?;
        if schema.fields().len() != 1
            || schema.field(0).data_type() != &arrow_schema::DataType::UInt32
        {
            return Err(damaged(
                name,
                format_args!("expected one u32 column, found {schema:?}"),
            ));
        }
        let mut bm = RoaringBitmap::new();
        for b in batches {
            let col = b
                .columns()
                .first()
                .and_then(|c| c.as_any().downcast_ref::<UInt32Array>())
                .ok_or_else(|| damaged(name, "not a u32 column"))?;
            bm.extend(col.values().iter().copied());
        }
        bm
    };
    if let Some(max) = bm.max() {
        if u64::from(max) >= physical_rows {
            return Err(damaged(
                name,
                format_args!("deletes row {max} of a {physical_rows}-row fragment"),
            ));
        }
    }
    Ok(bm)
}
