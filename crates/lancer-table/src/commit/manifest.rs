//! Manifest files: `... [u32 length][Manifest protobuf][i64 position of the length]
//! [u16 major][u16 minor]["LANC"]` — the protobuf is found from the 16-byte trailer.

use prost::Message;

use crate::pb;
use crate::{Result, TableError};
use lancer_format::schema::LanceSchema;

/// Reader feature flags this build understands: deletion files, stable row ids, the
/// (deprecated) v2 flag, table config, base paths, no transaction file, data files of
/// several format versions (256: each data file is read at its own version).
pub const KNOWN_READER_FLAGS: u64 = 1 | 2 | 4 | 8 | 16 | 32 | 256;

/// Reader flag 64: data overlay files (docs `format/table/data_overlay_file.md`; in
/// pylance 14 an unstable feature behind `LANCE_ENABLE_UNSTABLE_DATA_OVERLAY_FILES`).
/// Lancer does not apply overlays; reading the base values alone would return cells a
/// later update replaced, so such datasets are refused (the spec's rule for readers
/// without overlay support).
pub const FLAG_DATA_OVERLAYS: u64 = 64;

/// Why a manifest with reader `flags` outside `known` is refused, and the remedy: the
/// flags this build can name (data overlays) get their own reason and remedy.
pub fn unsupported_flags(flags: u64, known: u64) -> [String; 2] {
    let unknown = flags & !known;
    if unknown == FLAG_DATA_OVERLAYS {
        return [
            "the dataset has data overlay files (reader feature flag 0x40, pylance's unstable \
             cell-level updates), which Lancer does not apply: reading the base files alone \
             would return values a later update replaced"
                .into(),
            "rewrite the dataset with pylance, which applies the overlays \
             (`lance.write_dataset(lance.dataset(src), dst)`), or compact the fragments that \
             carry them"
                .into(),
        ];
    }
    [
        format!(
            "the manifest sets reader feature flags {flags:#x} this Lancer does not know \
             (known: {known:#x}); an unknown flag may change how the data decodes"
        ),
        "upgrade Lancer to a version that reads them".into(),
    ]
}

/// A decoded manifest.
#[derive(Debug, Clone)]
pub struct Manifest {
    /// The protobuf.
    pub pb: pb::Manifest,
    /// The schema tree.
    pub schema: LanceSchema,
}

impl Manifest {
    /// Parses a whole manifest file.
    pub fn parse(bytes: &[u8]) -> Result<Self> {
        let n = bytes.len();
        if n < 16 || &bytes[n - 4..] != b"LANC" {
            return Err(TableError::corrupt(format!(
                "manifest of {n} bytes does not end with the LANC trailer"
            )));
        }
        let mut p = [0u8; 8];
        p.copy_from_slice(&bytes[n - 16..n - 8]);
        let pos = i64::from_le_bytes(p);
        let pos = usize::try_from(pos)
            .ok()
            .filter(|&p| p + 4 <= n - 16)
            .ok_or_else(|| {
                TableError::corrupt(format!("manifest position {pos} outside the {n}-byte file"))
            })?;
        let len = u32::from_le_bytes([bytes[pos], bytes[pos + 1], bytes[pos + 2], bytes[pos + 3]])
            as usize;
        let body = bytes
            .get(pos + 4..pos + 4 + len)
            .filter(|_| pos + 4 + len <= n - 16)
            .ok_or_else(|| {
                TableError::corrupt(format!("manifest of {len} bytes overruns the file"))
            })?;
        let pb = pb::Manifest::decode(body)?;
        if pb.reader_feature_flags & !KNOWN_READER_FLAGS != 0 {
            return Err(TableError::UnknownFeatures {
                flags: pb.reader_feature_flags,
                known: KNOWN_READER_FLAGS,
            });
        }
        let metadata = pb
            .schema_metadata
            .iter()
            .map(|(k, v)| (k.clone(), String::from_utf8_lossy(v).into_owned()))
            .collect();
        let schema = LanceSchema::from_pb_fields(&pb.fields, metadata)?;
        Ok(Self { pb, schema })
    }

    /// The version number.
    pub fn version(&self) -> u64 {
        self.pb.version
    }

    /// Rows in the version: physical rows minus deleted rows, from the manifest alone.
    pub fn count_rows(&self) -> u64 {
        self.pb
            .fragments
            .iter()
            .map(|f| {
                f.physical_rows
                    - f.deletion_file
                        .as_ref()
                        .map_or(0, |d| d.num_deleted_rows)
                        .min(f.physical_rows)
            })
            .sum()
    }
}
