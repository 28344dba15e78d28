//! Joining arrays and batches read from several files or fragments, dictionaries by
//! value (see `lancer_format::concat`).

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::SchemaRef;

use crate::Result;

/// `parts` as one array ([`lancer_format::concat::concat`]: dictionaries joined by
/// value).
pub fn concat(parts: &[&dyn Array]) -> Result<ArrayRef> {
    Ok(lancer_format::concat::concat(parts)?)
}

/// `batches` (of `schema`) as one batch.
pub fn concat_batches(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<RecordBatch> {
    match arrow_select::concat::concat_batches(schema, batches) {
        Ok(b) => Ok(b),
        Err(_) => {
            let rows = batches.iter().map(|b| b.num_rows()).sum();
            let cols = (0..schema.fields().len())
                .map(|k| {
                    let parts: Vec<&dyn Array> =
                        batches.iter().map(|b| b.column(k).as_ref()).collect();
                    concat(&parts)
                })
                .collect::<Result<Vec<_>>>()?;
            let opts = arrow_array::RecordBatchOptions::new().with_row_count(Some(rows));
            Ok(RecordBatch::try_new_with_options(
                schema.clone(),
                cols,
                &opts,
            )?)
        }
    }
}
