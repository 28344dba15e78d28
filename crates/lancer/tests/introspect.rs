//! Looking inside a dataset Lancer wrote (three fragments, deleted rows): a vector
//! index's partitions as stored (`index_reader`: every indexed row once, with its
//! vector; bad names and partitions refused), the debug texts (`debug`), one
//! fragment's validation (`verify::fragment_problems`) and tags with metadata
//! (`lancer_table::versions`). The Python suite (`test_introspect.py`) compares each
//! with pylance 14.

use std::collections::{BTreeMap, BTreeSet};

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, UInt64Type};
use lancer::index::{create_scalar_index, ScalarIndexOptions};
use lancer::index::{create_vector_index, VectorIndexOptions};
use lancer::{Dataset, DatasetExt, Error, ScalarKind, TableError};
use lancer_index::distance::Metric as IndexMetric;
use lancer_index::vector::ivf::Quantizer;
use lancer_table::versions;

use crate::common::TempDir;

const DIM: usize = 8;

/// 300 rows of `id` and an 8-d `vec` (row `i`'s values `i + j / 8`), 100 per
/// fragment, then every seventh row deleted.
fn dataset(root: &std::path::Path) -> Dataset {
    let (schema, b) =
        crate::common::id_vec_batch(300, DIM, |k| (k / DIM) as f32 + (k % DIM) as f32 / 8.0);
    let params = lancer::WriteParams {
        max_rows_per_file: 100,
        ..Default::default()
    };
    let ds = Dataset::write(root, schema, &[b], &params).unwrap();
    ds.delete("id % 7 = 0").unwrap()
}

/// Live rows: row address → id.
fn live(ds: &Dataset) -> BTreeMap<u64, i64> {
    let b = ds
        .scan()
        .columns(&["id"])
        .with_row_address(true)
        .to_batch()
        .unwrap();
    let ids = b
        .column_by_name("id")
        .unwrap()
        .as_primitive::<arrow_array::types::Int64Type>();
    let addr = b
        .column_by_name("_rowaddr")
        .unwrap()
        .as_primitive::<UInt64Type>();
    addr.values()
        .iter()
        .copied()
        .zip(ids.values().iter().copied())
        .collect()
}

#[test]
fn index_partitions_hold_every_indexed_row_once() {
    let tmp = TempDir::new("introspect-ivf");
    let mut ds = dataset(tmp.path());
    let rows = live(&ds);
    for quantizer in [Quantizer::Flat, Quantizer::Sq, Quantizer::Rq { bits: 5 }] {
        let mut opts = VectorIndexOptions::new(quantizer, IndexMetric::L2);
        opts.num_partitions = Some(4);
        opts.replace = true;
        ds = create_vector_index(&ds, "vec", &opts).unwrap();
        let mut seen = BTreeSet::new();
        for p in 0..4 {
            let ids = lancer::index::read_index_partition(&ds, "vec_idx", p, false).unwrap();
            assert_eq!(ids.num_columns(), 1);
            assert!(ids.schema().metadata().contains_key("lance:ivf"));
            let full = lancer::index::read_index_partition(&ds, "vec_idx", p, true).unwrap();
            assert_eq!(full.num_rows(), ids.num_rows());
            let addrs = ids.column(0).as_primitive::<UInt64Type>();
            for (i, &a) in addrs.values().iter().enumerate() {
                assert!(seen.insert(a), "{quantizer:?}: row {a} in two partitions");
                let id = *rows
                    .get(&a)
                    .unwrap_or_else(|| panic!("{quantizer:?}: {a} is not a live row"));
                if quantizer == Quantizer::Flat {
                    let flat = full.column_by_name("flat").unwrap().as_fixed_size_list();
                    let v = flat.value(i);
                    let v = v.as_primitive::<Float32Type>();
                    assert_eq!(
                        v.value(1),
                        id as f32 + 1.0 / 8.0,
                        "{quantizer:?}: the stored vector"
                    );
                }
            }
        }
        assert_eq!(
            seen.len(),
            rows.len(),
            "{quantizer:?}: every live row indexed"
        );
        let past = lancer::index::read_index_partition(&ds, "vec_idx", 4, false);
        assert!(
            matches!(&past, Err(Error::InvalidArgument { what }) if what.contains("4 partitions")),
            "{past:?}"
        );
    }
    let missing = lancer::index::read_index_partition(&ds, "nope", 0, false);
    assert!(
        matches!(missing, Err(Error::InvalidArgument { .. })),
        "{missing:?}"
    );
    let ds =
        create_scalar_index(&ds, "id", &ScalarIndexOptions::new(ScalarKind::BTree), None).unwrap();
    let scalar = lancer::index::read_index_partition(&ds, "id_idx", 0, false);
    assert!(
        matches!(&scalar, Err(Error::InvalidArgument { what }) if what.contains("not a vector index")),
        "{scalar:?}"
    );
}

#[test]
fn debug_texts_name_what_the_manifest_holds() {
    let tmp = TempDir::new("introspect-debug");
    let ds = dataset(tmp.path());
    let schema = lancer::inspect::format_schema(&ds);
    assert!(
        schema.contains("name: \"vec\"") && schema.contains("id: 1"),
        "{schema}"
    );
    let manifest = lancer::inspect::format_manifest(&ds);
    for f in ds.fragments() {
        for df in &f.files {
            assert!(manifest.contains(&df.path), "{manifest}");
        }
    }
    let frag = ds.fragments()[1].clone();
    let text = lancer::inspect::format_fragment(&ds, frag.id).unwrap();
    assert!(
        text.contains(&frag.files[0].path) && text.contains("DeletionFile"),
        "{text}"
    );
    assert!(matches!(
        lancer::inspect::format_fragment(&ds, 99),
        Err(Error::InvalidArgument { .. })
    ));
    // version 2 deleted, version 1 wrote: newest first
    let all = lancer::inspect::list_transactions(&ds, 10).unwrap();
    assert_eq!(all.len(), 2);
    assert!(
        all[0].contains("Delete") && all[1].contains("Overwrite"),
        "{all:?}"
    );
    assert_eq!(lancer::inspect::list_transactions(&ds, 1).unwrap().len(), 1);
}

#[test]
fn one_fragment_validates_alone() {
    let tmp = TempDir::new("introspect-validate");
    let ds = dataset(tmp.path());
    for f in ds.fragments() {
        assert_eq!(
            lancer::inspect::fragment_problems(&ds, f.id).unwrap(),
            Vec::<String>::new()
        );
    }
    let victim = ds.fragments()[1].files[0].path.clone();
    std::fs::remove_file(tmp.path().join("data").join(&victim)).unwrap();
    let ds = Dataset::open(tmp.path()).unwrap();
    assert!(
        lancer::inspect::fragment_problems(&ds, ds.fragments()[0].id)
            .unwrap()
            .is_empty()
    );
    let problems = lancer::inspect::fragment_problems(&ds, ds.fragments()[1].id).unwrap();
    assert!(
        problems
            .iter()
            .any(|p| p.contains(&victim) && p.contains("not found")),
        "{problems:?}"
    );
    assert!(matches!(
        lancer::inspect::fragment_problems(&ds, 99),
        Err(Error::InvalidArgument { .. })
    ));
}

#[test]
fn tags_keep_creation_time_and_metadata() {
    let tmp = TempDir::new("introspect-tags");
    let ds = dataset(tmp.path());
    let store = ds.store();
    versions::create_tag(store, "a", 1, 10).unwrap();
    versions::replace_tag_metadata(store, "a", BTreeMap::from([("k".into(), "v".into())])).unwrap();
    let first = versions::tag_record(store, "a").unwrap();
    assert_eq!(
        (first.version, first.manifest_size, first.branch.clone()),
        (1, 10, None)
    );
    assert_eq!(first.created_at, first.updated_at);
    std::thread::sleep(std::time::Duration::from_millis(5));
    versions::update_tag(store, "a", 2, 20).unwrap();
    let moved = versions::tag_record(store, "a").unwrap();
    assert_eq!((moved.version, moved.manifest_size), (2, 20));
    assert_eq!(moved.created_at, first.created_at);
    assert!(moved.updated_at > first.updated_at);
    assert_eq!(moved.metadata, first.metadata);
    assert_eq!(versions::tag_version(store, "a").unwrap(), 2);
    let text = std::fs::read_to_string(tmp.path().join("_refs/tags/a.json")).unwrap();
    let keys: Vec<&str> = [
        "branch",
        "version",
        "createdAt",
        "updatedAt",
        "manifestSize",
        "metadata",
    ]
    .into();
    let at: Vec<usize> = keys
        .iter()
        .map(|k| text.find(&format!("\"{k}\"")).unwrap())
        .collect();
    assert!(
        at.windows(2).all(|w| w[0] < w[1]),
        "pylance's key order: {text}"
    );
    assert!(matches!(
        versions::update_tag(store, "zz", 1, 0),
        Err(TableError::NotFound { .. })
    ));
    assert!(matches!(
        versions::replace_tag_metadata(store, "zz", BTreeMap::new()),
        Err(TableError::NotFound { .. })
    ));
    assert!(matches!(
        versions::update_tag(store, "a", 9, 0),
        Err(TableError::NotFound { .. })
    ));
}
