//! Helpers shared by this crate's integration tests (one test binary); temporary
//! directories, the pylance venvs and copying fixtures come from lancer-testkit.

use std::path::PathBuf;

pub use lancer_testkit::{copy_dir, pylance, repo, TempDir};

/// The checked-in golden directory `checked_in` (relative to the repository), then,
/// when the test script made them, the live `pylance-14/12/11` directories under the
/// path in `live_env` (with LANCER_REQUIRE_PYLANCE set, a missing one is a failure).
pub fn golden_roots(checked_in: &str, live_env: &str) -> Vec<PathBuf> {
    let mut out = vec![repo().join(checked_in)];
    if let Some(live) = lancer_testkit::oracle::live_dir(live_env) {
        for v in ["14", "12", "11"] {
            let d = live.join(format!("pylance-{v}"));
            assert!(d.exists(), "{} missing", d.display());
            out.push(d);
        }
    }
    out
}

/// The query vectors of a golden vector-index case (`queries[].query`).
pub fn case_queries(case: &serde_json::Value) -> Vec<Vec<f32>> {
    case["queries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| {
            q["query"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap() as f32)
                .collect()
        })
        .collect()
}

/// `n` rows of a non-null int64 `id` (0..n) and a nullable `dim`-d float32 `vec`
/// whose `k`-th value (row `k / dim`, item `k % dim`) is `value(k)`.
pub fn id_vec_batch(
    n: usize,
    dim: usize,
    value: impl FnMut(usize) -> f32,
) -> (arrow_schema::SchemaRef, arrow_array::RecordBatch) {
    use arrow_array::{FixedSizeListArray, Float32Array, Int64Array, RecordBatch};
    use arrow_schema::{DataType, Field, Schema};
    use std::sync::Arc;
    let item = Arc::new(Field::new("item", DataType::Float32, true));
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new(
            "vec",
            DataType::FixedSizeList(item.clone(), dim as i32),
            true,
        ),
    ]));
    let values = Float32Array::from_iter_values((0..n * dim).map(value));
    let b = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from_iter_values(0..n as i64)),
            Arc::new(FixedSizeListArray::new(
                item,
                dim as i32,
                Arc::new(values),
                None,
            )),
        ],
    )
    .unwrap();
    (schema, b)
}
