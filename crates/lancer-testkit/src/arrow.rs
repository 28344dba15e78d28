//! Arrow IPC in tests: the pylance oracles' answers are IPC files, the CLI streams IPC.

use std::path::Path;

use arrow_array::RecordBatch;

/// An Arrow IPC file as one batch (its batches concatenated).
pub fn read_file(p: &Path) -> RecordBatch {
    let f = std::fs::File::open(p).unwrap_or_else(|e| panic!("cannot open {}: {e}", p.display()));
    let r = arrow_ipc::reader::FileReader::try_new(f, None)
        .unwrap_or_else(|e| panic!("{} is not an Arrow IPC file: {e}", p.display()));
    let schema = r.schema();
    let batches: Vec<_> = r
        .map(|b| b.unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .collect();
    arrow_select::concat::concat_batches(&schema, &batches)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// An Arrow IPC stream (a process's output, say) as one batch.
pub fn read_stream(bytes: &[u8]) -> RecordBatch {
    let r = arrow_ipc::reader::StreamReader::try_new(std::io::Cursor::new(bytes), None)
        .unwrap_or_else(|e| panic!("not an Arrow IPC stream: {e}"));
    let schema = r.schema();
    let batches: Vec<_> = r
        .map(|b| b.unwrap_or_else(|e| panic!("Arrow IPC stream: {e}")))
        .collect();
    arrow_select::concat::concat_batches(&schema, &batches)
        .unwrap_or_else(|e| panic!("Arrow IPC stream: {e}"))
}

/// Writes `batch` as the Arrow IPC file `p`.
pub fn write_file(p: &Path, batch: &RecordBatch) {
    let f =
        std::fs::File::create(p).unwrap_or_else(|e| panic!("cannot create {}: {e}", p.display()));
    let mut w = arrow_ipc::writer::FileWriter::try_new(f, &batch.schema())
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    w.write(batch)
        .and_then(|()| w.finish())
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::Int64Array;

    use super::*;

    #[test]
    fn files_and_streams_round_trip() {
        let b = RecordBatch::try_from_iter([(
            "id",
            Arc::new(Int64Array::from(vec![1, 2, 3])) as arrow_array::ArrayRef,
        )])
        .unwrap();
        let dir = crate::TempDir::new("kit-arrow");
        let p = dir.join("b.arrow");
        write_file(&p, &b);
        assert_eq!(read_file(&p), b);
        let mut bytes = Vec::new();
        let mut w = arrow_ipc::writer::StreamWriter::try_new(&mut bytes, &b.schema()).unwrap();
        w.write(&b).unwrap();
        w.write(&b).unwrap();
        w.finish().unwrap();
        drop(w);
        assert_eq!(read_stream(&bytes).num_rows(), 6);
    }
}
