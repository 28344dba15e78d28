//! Helpers shared by the loader's test processes.
#![allow(dead_code, clippy::unwrap_used)]

use arrow_array::{Int64Array, RecordBatch};
use lancer_loader::Loader;

/// The `id` column of a batch.
pub fn ids(b: &RecordBatch) -> Vec<i64> {
    b.column_by_name("id")
        .unwrap()
        .as_any()
        .downcast_ref::<Int64Array>()
        .unwrap()
        .values()
        .to_vec()
}

/// Every `id` a loader delivers in `epoch`, in order.
pub fn read_all(loader: &Loader, epoch: u64) -> Vec<i64> {
    loader.epoch(epoch).flat_map(|b| ids(&b.unwrap())).collect()
}
