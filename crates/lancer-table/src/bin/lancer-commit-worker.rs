//! Test helper (not a user tool): one writer process of lancer-table's concurrency
//! and crash tests.
//!
//! `lancer-commit-worker ROOT WORKER N` makes N commits to the dataset at ROOT: appends of 10
//! rows (ids `WORKER * 1_000_000 + i * 10 + k`) and, every fifth commit, a delete of the
//! first row of its previous append. Conflicts are retried from the latest version.
//! With `LANCER_CRASH_AT=<point>` it aborts at that point of its first commit
//! (`after-data`, `after-txn`, `before-manifest`), as a killed writer would.
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{BooleanArray, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use lancer_table::write::WriteParams;
use lancer_table::{Dataset, TableError};

fn batch(ids: Vec<i64>) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, true)]));
    RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(ids))]).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    })
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let root = &args[1];
    let worker: i64 = args[2].parse().unwrap_or(0);
    let n: i64 = args[3].parse().unwrap_or(0);
    let params = WriteParams::default();
    let mut done = 0;
    let mut i = 0;
    while done < n {
        let result = (|| -> lancer_table::Result<()> {
            let ds = Dataset::open(root)?;
            if i % 5 == 4 {
                let target = worker * 1_000_000 + (i - 1) * 10;
                ds.delete_where(&format!("id = {target}"), |b: &RecordBatch| {
                    let ids = b.column(0).as_primitive::<Int64Type>();
                    Ok(BooleanArray::from_iter(
                        ids.values().iter().map(|&x| Some(x == target)),
                    ))
                })?;
            } else {
                let ids: Vec<i64> = (0..10).map(|k| worker * 1_000_000 + i * 10 + k).collect();
                ds.append(&[batch(ids)], &params)?;
            }
            Ok(())
        })();
        match result {
            Ok(()) => {
                done += 1;
                i += 1;
            }
            Err(TableError::Conflict { .. }) => continue,
            Err(e) => {
                eprintln!("worker {worker}: {e}");
                std::process::exit(1);
            }
        }
    }
}
