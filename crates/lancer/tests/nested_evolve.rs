//! Nested fields evolved by Lancer — renamed, made non-nullable, cast to wider types
//! (a nested cast writes the enclosing structs with only the cast field into new data
//! files, as pylance 14 does) — read back identically in Lancer and in pylance 14 / 12
//! / 11 at every version, on 2.1 and 2.2 data, with null structs, null fields, a struct
//! inside a struct, deletions, appends and compaction after the casts.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use arrow_array::builder::{Float32Builder, Int16Builder, Int32Builder, StringBuilder};
use arrow_array::{Array, ArrayRef, Int64Array, RecordBatch, StructArray};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, Field, Fields, Schema};
use lancer::{Dataset, DatasetExt};
use lancer_format::container::FileVersion;
use lancer_table::evolution::ColumnChange;
use lancer_table::write::WriteParams;

use crate::common::{pylance, TempDir};

fn inner_fields() -> Fields {
    vec![Field::new("x", DataType::Int16, true)].into()
}

fn s_fields() -> Fields {
    vec![
        Field::new("a", DataType::Int32, true),
        Field::new("b", DataType::Utf8, true),
        Field::new("c", DataType::Float32, true),
        Field::new("inner", DataType::Struct(inner_fields()), true),
    ]
    .into()
}

/// Rows `start..start+n`: `s` null every 7th row, `s.a` null every 4th, `s.inner`
/// null every 5th, `s.inner.x` null every 6th.
fn rows(start: i64, n: usize) -> RecordBatch {
    let ids: Vec<i64> = (start..start + n as i64).collect();
    let (mut a, mut b, mut c, mut x) = (
        Int32Builder::new(),
        StringBuilder::new(),
        Float32Builder::new(),
        Int16Builder::new(),
    );
    for &i in &ids {
        a.append_option((i % 4 != 3).then_some(i as i32 * 7 - 50));
        b.append_value(format!("b{i}"));
        c.append_value(i as f32 / 3.0);
        x.append_option((i % 6 != 1).then_some(i as i16 - 9));
    }
    let inner_valid = NullBuffer::from(ids.iter().map(|i| i % 5 != 2).collect::<Vec<_>>());
    let inner = StructArray::new(
        inner_fields(),
        vec![Arc::new(x.finish())],
        Some(inner_valid),
    );
    let s_valid = NullBuffer::from(ids.iter().map(|i| i % 7 != 4).collect::<Vec<_>>());
    let cols: Vec<ArrayRef> = vec![
        Arc::new(a.finish()),
        Arc::new(b.finish()),
        Arc::new(c.finish()),
        Arc::new(inner),
    ];
    let s = StructArray::new(s_fields(), cols, Some(s_valid));
    let schema = Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("s", DataType::Struct(s_fields()), true),
    ]);
    RecordBatch::try_new(
        Arc::new(schema),
        vec![Arc::new(Int64Array::from(ids)), Arc::new(s)],
    )
    .unwrap()
}

/// pylance's reads of `path` at `versions` (one interpreter for all), each as an
/// Arrow IPC file read back, or pylance's error.
fn pylance_reads(
    py: &Path,
    path: &Path,
    versions: u64,
    dir: &Path,
) -> Vec<Result<RecordBatch, String>> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).unwrap();
    let o = Command::new(py)
        .arg("-c")
        .arg(
            "import lance, pyarrow as pa, sys\n\
             for v in range(1, int(sys.argv[2]) + 1):\n\
             \x20   try:\n\
             \x20       t = lance.dataset(sys.argv[1], version=v).to_table()\n\
             \x20   except Exception as e:\n\
             \x20       open(f'{sys.argv[3]}/{v}.err', 'w').write(str(e))\n\
             \x20       continue\n\
             \x20   with pa.ipc.new_file(f'{sys.argv[3]}/{v}.arrow', t.schema) as w:\n\
             \x20       w.write_table(t)",
        )
        .arg(path)
        .arg(versions.to_string())
        .arg(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (1..=versions)
        .map(|v| {
            if let Ok(e) = std::fs::read_to_string(dir.join(format!("{v}.err"))) {
                return Err(e);
            }
            let f = std::fs::File::open(dir.join(format!("{v}.arrow"))).unwrap();
            let r = arrow_ipc::reader::FileReader::try_new(f, None).unwrap();
            let schema = r.schema();
            let b: Vec<RecordBatch> = r.map(|b| b.unwrap()).collect();
            Ok(arrow_select::concat::concat_batches(&schema, &b).unwrap())
        })
        .collect()
}

/// The array at child positions `path` below column 1 (`s`), and the validity of
/// every struct passed (as a list of bools per row, outermost first).
fn at(b: &RecordBatch, path: &[usize]) -> (ArrayRef, Vec<Vec<bool>>) {
    let mut a = b.column(1).clone();
    let mut valid = Vec::new();
    for &k in path {
        let s = a.as_any().downcast_ref::<StructArray>().unwrap().clone();
        valid.push((0..s.len()).map(|i| s.is_valid(i)).collect());
        a = s.column(k).clone();
    }
    (a, valid)
}

#[test]
fn nested_fields_evolve_and_read_alike_in_pylance() {
    for storage in [FileVersion::V2_1, FileVersion::V2_2] {
        let scratch = TempDir::new(&format!("nested-evolve-{storage}"));
        let root = scratch.join("ds");
        let params = WriteParams {
            storage,
            max_rows_per_file: 9,
            ..Default::default()
        };
        let ds = Dataset::write(&root, rows(0, 30).schema(), &[rows(0, 30)], &params).unwrap();
        let ds = ds.delete("id = 3 OR id = 20").unwrap();
        let before = ds.to_batch(None).unwrap();
        let rename = |path: &str, to: &str| ColumnChange {
            path: path.into(),
            rename: Some(to.into()),
            nullable: None,
        };
        let not_null = |path: &str| ColumnChange {
            path: path.into(),
            rename: None,
            nullable: Some(false),
        };
        let ds = lancer::write::alter_columns(&ds, &[rename("s.b", "bb")]).unwrap();
        let ds = lancer::write::alter_columns(&ds, &[not_null("s.bb")]).unwrap();
        // s.a holds nulls in valid structs: refused, nothing committed
        let v = ds.version();
        let err = lancer::write::alter_columns(&ds, &[not_null("s.a")]).unwrap_err();
        assert!(err.to_string().contains("holds nulls"), "{err}");
        let ds = Dataset::open(&root).unwrap();
        assert_eq!(ds.version(), v);
        let ds = lancer::write::cast_columns(&ds, &[("s.a", DataType::Int64)]).unwrap();
        let ds = lancer::write::cast_columns(
            &ds,
            &[("s.inner.x", DataType::Int32), ("s.c", DataType::Float64)],
        )
        .unwrap();
        let b = ds.to_batch(None).unwrap();
        let DataType::Struct(fs) = b.schema().field(1).data_type().clone() else {
            panic!("s is not a struct");
        };
        let names: Vec<String> = fs
            .iter()
            .map(|f| format!("{}:{}:{}", f.name(), f.data_type(), f.is_nullable()))
            .collect();
        assert_eq!(
            names,
            [
                "a:Int64:true",
                "bb:Utf8:false",
                "c:Float64:true",
                "inner:Struct(\"x\": Int32):true"
            ]
        );
        // the values as they were, widened
        assert_eq!(b.num_rows(), before.num_rows());
        assert_eq!(b.column(0), before.column(0));
        for (path, to) in [
            (vec![0], Some(DataType::Int64)),
            (vec![1], None),
            (vec![2], Some(DataType::Float64)),
            (vec![3, 0], Some(DataType::Int32)),
        ] {
            let (want, want_valid) = at(&before, &path);
            let (got, got_valid) = at(&b, &path);
            let want = match &to {
                Some(t) => arrow_cast::cast(&want, t).unwrap(),
                None => want,
            };
            assert_eq!(got_valid, want_valid, "{storage} {path:?}: struct validity");
            assert_eq!(&got, &want, "{storage} {path:?}");
        }
        // a cast keeps the struct's other fields in their files: one new file per
        // cast per fragment
        let frag = &ds.fragments()[0];
        assert_eq!(frag.files.len(), 4, "{frag:?}");
        // appends with the evolved schema, then compaction into one fragment
        let more = {
            let old = rows(100, 6);
            let s = old
                .column(1)
                .as_any()
                .downcast_ref::<StructArray>()
                .unwrap();
            let inner = s.column(3).as_any().downcast_ref::<StructArray>().unwrap();
            let x = arrow_cast::cast(inner.column(0), &DataType::Int32).unwrap();
            let DataType::Struct(ifs) = fs[3].data_type().clone() else {
                panic!()
            };
            let inner = StructArray::new(ifs, vec![x], inner.nulls().cloned());
            let cols: Vec<ArrayRef> = vec![
                arrow_cast::cast(s.column(0), &DataType::Int64).unwrap(),
                s.column(1).clone(),
                arrow_cast::cast(s.column(2), &DataType::Float64).unwrap(),
                Arc::new(inner),
            ];
            let s = StructArray::new(fs.clone(), cols, s.nulls().cloned());
            RecordBatch::try_new(b.schema(), vec![old.column(0).clone(), Arc::new(s)]).unwrap()
        };
        let ds = ds.append(&[more], &params).unwrap();
        let opts = lancer_table::evolution::CompactionOptions {
            target_rows_per_fragment: 1000,
            ..Default::default()
        };
        let (ds, _) = lancer::write::compact_files(&ds, &opts, &|_, _| {}).unwrap();
        assert_eq!(ds.fragments().len(), 1);
        assert_eq!(ds.count_rows(), 34);
        // every version reads alike in pylance 14 / 12 / 11
        let out = root.with_extension("pylance");
        let mut compared = 0;
        for py in ["14", "12", "11"].into_iter().filter_map(pylance) {
            let reads = pylance_reads(&py, &root, ds.version(), &out);
            for (v, read) in (1..=ds.version()).zip(reads) {
                let ours = Dataset::open_version(&root, v)
                    .unwrap()
                    .to_batch(None)
                    .unwrap();
                let theirs =
                    read.unwrap_or_else(|e| panic!("{py:?} cannot read {storage} v{v}: {e}"));
                assert_eq!(theirs.num_rows(), ours.num_rows(), "{storage} v{v}");
                assert_eq!(theirs.columns(), ours.columns(), "{storage} v{v}: {py:?}");
                compared += 1;
            }
        }
        if pylance("14").is_some() {
            assert!(compared >= 3 * 8, "{compared} versions compared");
        }
    }
}
