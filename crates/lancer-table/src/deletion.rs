//! Deletion files (spec: "Deletion files"): `_deletions/{fragment}-{read_version}-{id}`
//! `.arrow` (an Arrow IPC file with one u32 column of deleted row offsets) or `.bin`
//! (a serialized roaring bitmap).

use std::path::{Path, PathBuf};

use arrow_array::{Array, UInt32Array};
use roaring::RoaringBitmap;

use crate::pb::{deletion_file::DeletionFileType, DeletionFile};
use crate::{Result, TableError};

/// Path of a fragment's deletion file.
pub fn deletion_path(root: &Path, fragment_id: u64, d: &DeletionFile) -> PathBuf {
    let suffix = match DeletionFileType::try_from(d.file_type) {
        Ok(DeletionFileType::Bitmap) => "bin",
        _ => "arrow",
    };
    root.join("_deletions").join(format!(
        "{fragment_id}-{}-{}.{suffix}",
        d.read_version, d.id
    ))
}

/// Reads the deleted row offsets of a fragment.
pub fn read_deletions(
    root: &Path,
    fragment_id: u64,
    d: &DeletionFile,
    physical_rows: u64,
) -> Result<RoaringBitmap> {
    let p = deletion_path(root, fragment_id, d);
    let bytes = std::fs::read(&p).map_err(|e| TableError::io(&p, e))?;
    let bm = match DeletionFileType::try_from(d.file_type) {
        Ok(DeletionFileType::Bitmap) => RoaringBitmap::deserialize_from(bytes.as_slice())
            .map_err(|e| TableError::corrupt(format!("deletion bitmap {}: {e}", p.display())))?,
        _ => {
            let r = arrow_ipc::reader::FileReader::try_new(std::io::Cursor::new(bytes), None)?;
            let mut bm = RoaringBitmap::new();
            for b in r {
                let b = b?;
                let col = b
                    .columns()
                    .first()
                    .and_then(|c| c.as_any().downcast_ref::<UInt32Array>())
                    .ok_or_else(|| {
                        TableError::corrupt(format!(
                            "deletion file {} is not a u32 column",
                            p.display()
                        ))
                    })?;
                bm.extend(col.values().iter().copied());
            }
            bm
        }
    };
    if let Some(max) = bm.max() {
        if u64::from(max) >= physical_rows {
            return Err(TableError::corrupt(format!(
                "deletion file {} deletes row {max} of a {physical_rows}-row fragment",
                p.display()
            )));
        }
    }
    Ok(bm)
}
