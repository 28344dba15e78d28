//! Whether a dataset's manifest lacks what pylance fills in when it next writes: the
//! writer version, fragments' physical row counts, deletion files' deleted-row counts,
//! or index fragment bitmaps that are absent or may be wrong (lance writers before
//! 0.8.15 could write wrong ones). pylance's `lance.lance.manifest_needs_migration`
//! answers this before operations that need those fields; a write of any kind (pylance
//! suggests a `delete` that matches nothing) fills them in.
//!
//! Spec: "Table format" — the manifest, fragments and deletion files (lines ~3686–4130
//! of `lance-reference.txt`).

use lancer_table::pb;

/// The first lance release whose index fragment bitmaps are trusted.
const TRUSTED_BITMAPS: (u64, u64, u64) = (0, 8, 15);

/// Whether `manifest` (with its version's `indices`) needs the migration described in
/// the module docs.
pub fn manifest_needs_migration(manifest: &pb::Manifest, indices: &[pb::IndexMetadata]) -> bool {
    let writer = manifest.writer_version.as_ref();
    let fragment_fields_missing = manifest.fragments.iter().any(|f| {
        f.physical_rows == 0
            || f.deletion_file
                .as_ref()
                .is_some_and(|d| d.num_deleted_rows == 0)
    });
    writer.is_none()
        || fragment_fields_missing
        || indices.iter().any(|i| bitmap_untrusted(i, writer))
}

fn bitmap_untrusted(
    index: &pb::IndexMetadata,
    writer: Option<&pb::manifest::WriterVersion>,
) -> bool {
    if index.fragment_bitmap.is_empty() {
        return true;
    }
    match writer {
        None => true,
        Some(w) if w.library != "lance" => false,
        Some(w) => release(&w.version).is_none_or(|v| v < TRUSTED_BITMAPS),
    }
}

/// `major.minor.patch` of a release string (`0.8.14`, `1.0.0-beta.1`); None when it is
/// not one.
fn release(version: &str) -> Option<(u64, u64, u64)> {
    let core = version.split(['-', '+']).next()?;
    let mut parts = core.split('.').map(|p| p.parse::<u64>().ok());
    let v = (parts.next()??, parts.next()??, parts.next()??);
    parts.next().is_none().then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writer(library: &str, version: &str) -> Option<pb::manifest::WriterVersion> {
        Some(pb::manifest::WriterVersion {
            library: library.into(),
            version: version.into(),
            ..Default::default()
        })
    }

    #[test]
    fn each_missing_field_and_old_writers() {
        let fragment = pb::DataFragment {
            physical_rows: 10,
            ..Default::default()
        };
        let mut m = pb::Manifest {
            fragments: vec![fragment],
            writer_version: writer("lance", "0.39.0"),
            ..Default::default()
        };
        let index = pb::IndexMetadata {
            fragment_bitmap: vec![1, 2, 3],
            ..Default::default()
        };
        assert!(!manifest_needs_migration(&m, std::slice::from_ref(&index)));
        assert!(manifest_needs_migration(
            &m,
            &[pb::IndexMetadata::default()]
        ));
        for (lib, v, needs) in [
            ("lance", "0.8.14", true),
            ("lance", "0.8.15", false),
            ("lance", "1.0.0-beta.1", false),
            ("lance", "garbage", true),
            ("lancer", "0.0.1", false),
        ] {
            m.writer_version = writer(lib, v);
            assert_eq!(
                manifest_needs_migration(&m, std::slice::from_ref(&index)),
                needs,
                "{lib} {v}"
            );
        }
        m.writer_version = None;
        assert!(manifest_needs_migration(&m, &[]));
        m.writer_version = writer("lance", "0.39.0");
        m.fragments[0].physical_rows = 0;
        assert!(manifest_needs_migration(&m, &[]));
        m.fragments[0].physical_rows = 10;
        m.fragments[0].deletion_file = Some(pb::DeletionFile::default());
        assert!(manifest_needs_migration(&m, &[]));
        m.fragments[0].deletion_file = Some(pb::DeletionFile {
            num_deleted_rows: 2,
            ..Default::default()
        });
        assert!(!manifest_needs_migration(&m, &[]));
    }
}
