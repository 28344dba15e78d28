//! Exact search equals an independent NumPy computation (ids and distances) for every
//! metric, with and without prefilter, across fragments and with deleted rows.

use std::process::Command;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::*;
use arrow_schema::{DataType, Field, Schema};
use lancer::search::{
    dot, exact_nearest, hamming, l2, nearest, Filtering, Metric, Nearest, SearchOptions,
};
use lancer::{Dataset, WriteParams};

use crate::common::{pylance, repo, TempDir};

fn data(n: usize, dim: usize, item: DataType) -> RecordBatch {
    let mut x = 0x1234_5678_9ABC_DEF1u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let f = Arc::new(Field::new("item", item.clone(), true));
    let values: ArrayRef = match item {
        DataType::UInt8 => Arc::new(UInt8Array::from_iter_values(
            (0..n * dim).map(|_| (next() % 256) as u8),
        )),
        _ => Arc::new(Float32Array::from_iter_values(
            (0..n * dim).map(|_| (next() % 20_000) as f32 / 10_000.0 - 1.0),
        )),
    };
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("vec", DataType::FixedSizeList(f.clone(), dim as i32), true),
    ]));
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from_iter_values(0..n as i64)),
            Arc::new(FixedSizeListArray::new(f, dim as i32, values, None)),
        ],
    )
    .unwrap()
}

#[test]
fn kernels_match_scalar_definitions() {
    let a: Vec<f32> = (0..37).map(|i| i as f32 * 0.25 - 3.0).collect();
    let b: Vec<f32> = (0..37).map(|i| (i * 7 % 11) as f32 - 5.0).collect();
    let l2s: f32 = a.iter().zip(&b).map(|(x, y)| (x - y) * (x - y)).sum();
    let dots: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
    assert!((l2(&a, &b) - l2s).abs() < 1e-3);
    assert!((dot(&a, &b) - dots).abs() < 1e-3);
    assert_eq!(hamming(&[0b1010, 255], &[0b0110, 0]), 10.0);
}

#[test]
fn exact_search_matches_numpy() {
    // NumPy from pylance 14's venv
    let Some(py) = pylance("14") else { return };
    let dir = TempDir::new("search");
    for (label, item, dim, metrics) in [
        (
            "f32",
            DataType::Float32,
            19usize,
            vec![Metric::L2, Metric::Cosine, Metric::Dot],
        ),
        (
            "u8",
            DataType::UInt8,
            16usize,
            vec![Metric::Hamming, Metric::L2],
        ),
    ] {
        let root = dir.join(label);
        let b = data(3000, dim, item);
        let params = WriteParams {
            max_rows_per_file: 700,
            ..Default::default()
        };
        let ds = Dataset::write(&root, b.schema(), &[b], &params).unwrap();
        let ds = ds
            .delete_where("id % 5 = 1", |b| {
                let ids = b.column(0).as_primitive::<Int64Type>();
                Ok(BooleanArray::from_iter(
                    ids.values().iter().map(|&i| Some(i % 5 == 1)),
                ))
            })
            .unwrap();
        assert!(ds.fragments().len() > 3);
        // What the search sees, for NumPy.
        let live = ds.to_batch(None).unwrap();
        let arrow = dir.join(format!("{label}.arrow"));
        let mut w = arrow_ipc::writer::FileWriter::try_new(
            std::fs::File::create(&arrow).unwrap(),
            &live.schema(),
        )
        .unwrap();
        w.write(&live).unwrap();
        w.finish().unwrap();
        let query: Vec<f32> = match label {
            "u8" => (0..dim).map(|i| (i * 37 % 256) as f32).collect(),
            _ => (0..dim).map(|i| (i as f32 * 0.1).sin()).collect(),
        };
        let qfile = dir.join(format!("{label}.query.json"));
        std::fs::write(&qfile, serde_json::to_string(&query).unwrap()).unwrap();
        for metric in metrics {
            for filter in [None, Some(3i64)] {
                let name = format!("{metric:?}").to_lowercase();
                let req = Nearest {
                    column: "vec",
                    query: query.clone(),
                    k: 10,
                    metric,
                };
                let pf = move |b: &RecordBatch| -> lancer::search::FilterResult {
                    let ids = b.column(0).as_primitive::<Int64Type>();
                    Ok(BooleanArray::from_iter(
                        ids.values()
                            .iter()
                            .map(|&i| Some(i % filter.unwrap_or(1) == 0)),
                    ))
                };
                let got = exact_nearest(
                    &ds,
                    &req,
                    filter.map(|_| &pf as &dyn Fn(&RecordBatch) -> lancer::search::FilterResult),
                    Some(&["id"]),
                )
                .unwrap();
                let mut cmd = Command::new(&py);
                cmd.arg(repo().join("scripts/numpy_knn.py"))
                    .arg(&arrow)
                    .arg("vec")
                    .arg(&qfile)
                    .arg("10")
                    .arg(&name);
                if let Some(m) = filter {
                    cmd.arg(m.to_string());
                }
                let out = cmd.output().unwrap();
                assert!(
                    out.status.success(),
                    "{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                let want: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
                let want_ids: Vec<i64> = want["ids"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_i64().unwrap())
                    .collect();
                let want_d: Vec<f64> = want["distances"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_f64().unwrap())
                    .collect();
                let got_ids: Vec<i64> = got.column(0).as_primitive::<Int64Type>().values().to_vec();
                let got_d: Vec<f32> = got
                    .column(1)
                    .as_primitive::<arrow_array::types::Float32Type>()
                    .values()
                    .to_vec();
                assert_eq!(got_ids, want_ids, "{label} {name} filter {filter:?}");
                for (g, w) in got_d.iter().zip(&want_d) {
                    assert!(
                        (f64::from(*g) - w).abs() <= 1e-3 * w.abs().max(1.0),
                        "{label} {name}: {g} vs {w}"
                    );
                }
                // The same prefilter as SQL gives the same answer.
                let sql = filter.map(|m| format!("id % {m} = 0"));
                let filtering = match &sql {
                    Some(s) => Filtering::Pre(s),
                    None => Filtering::None,
                };
                let by_sql = nearest(
                    &ds,
                    &req,
                    &SearchOptions {
                        filtering,
                        columns: Some(&["id"]),
                        ..Default::default()
                    },
                )
                .unwrap();
                assert_eq!(
                    by_sql.column(0).to_data(),
                    got.column(0).to_data(),
                    "{label} {name} sql"
                );
                assert_eq!(
                    by_sql.column(1).to_data(),
                    got.column(1).to_data(),
                    "{label} {name} sql"
                );
                // A postfilter keeps the unfiltered top-k rows that pass, in order.
                if let Some(s) = &sql {
                    let post = nearest(
                        &ds,
                        &req,
                        &SearchOptions {
                            filtering: Filtering::Post(s),
                            columns: Some(&["id"]),
                            ..Default::default()
                        },
                    )
                    .unwrap();
                    let all = nearest(
                        &ds,
                        &req,
                        &SearchOptions {
                            filtering: Filtering::None,
                            columns: Some(&["id"]),
                            ..Default::default()
                        },
                    )
                    .unwrap();
                    let m = filter.unwrap_or(1);
                    let expect: Vec<i64> = all
                        .column(0)
                        .as_primitive::<Int64Type>()
                        .values()
                        .iter()
                        .copied()
                        .filter(|i| i % m == 0)
                        .collect();
                    let post_ids = post.column(0).as_primitive::<Int64Type>().values().to_vec();
                    assert_eq!(post_ids, expect, "{label} {name} postfilter");
                }
            }
        }
    }
}
