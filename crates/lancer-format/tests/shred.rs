//! Shredding every golden column into levels and rebuilding it through the reader's
//! unravelling gives back the same array (the writer's levels are the reader's).

use arrow_array::Array;
use lancer_format::container::FileMetadata;
use lancer_format::writer::reassemble;

use crate::golden::{expected, golden_files};

#[test]
fn shred_then_unravel_is_identity_on_golden_columns() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for (lance, arrow) in golden_files() {
        if !lance.to_string_lossy().contains("pylance-14")
            || lance.to_string_lossy().contains("v2.0")
        {
            continue;
        }
        let bytes = bytes::Bytes::from(std::fs::read(&lance).unwrap());
        let meta = FileMetadata::read(&bytes, 1 << 16).unwrap();
        let want = expected(&arrow);
        for (i, f) in want.schema().fields().iter().enumerate() {
            let Some(lf) = meta.schema.fields.iter().find(|x| &x.name == f.name()) else {
                continue;
            };
            let col = want.column(i);
            for (a, b) in [(0, col.len()), (col.len() / 3, col.len() / 2)] {
                let slice = col.slice(a, b - a);
                checked += 1;
                match reassemble(&lance_arrow_field(lf), lf, &slice) {
                    Ok(got) if got.to_data() == slice.to_data() => {}
                    Ok(got) => failures.push(format!(
                        "{}: {} [{a}..{b}] differs: {:?} vs {:?}",
                        lance.display(),
                        f.name(),
                        got.slice(0, got.len().min(3)),
                        slice.slice(0, slice.len().min(3))
                    )),
                    Err(e) => failures.push(format!("{}: {}: {e}", lance.display(), f.name())),
                }
            }
        }
    }
    for f in &failures {
        eprintln!("{f}");
    }
    assert!(checked > 100);
    assert!(
        failures.is_empty(),
        "{} of {checked} failed",
        failures.len()
    );
}

fn lance_arrow_field(lf: &lancer_format::schema::LanceField) -> arrow_schema::Field {
    lf.to_arrow()
}
