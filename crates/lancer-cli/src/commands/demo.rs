//! `lancer demo`: the end-to-end tour on an embedded file written by pylance 14 (the
//! `vectors` golden file: 150 rows of 64-d float32/float16/float64 and uint8 vectors,
//! nullable vectors and vectors with null items, in Lance 2.1).

use std::time::Instant;

use arrow_array::{Array, FixedSizeListArray, Float32Array};

use super::{open_traced, CmdResult};
use lancer_format::inspect::{column_paths, describe_page};

const EMBEDDED: &[u8] =
    include_bytes!("../../../../tests/data/files/pylance-14/vectors.v2.1.lance");

/// Euclidean distance squared.
fn l2(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// Runs the demo.
pub fn run() -> CmdResult {
    let dir = std::env::temp_dir().join(format!("lancer-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("vectors.lance");
    std::fs::write(&path, EMBEDDED)?;
    println!(
        "1. wrote the embedded pylance-14 file to {}",
        path.display()
    );

    let t = Instant::now();
    let (reader, io) = open_traced(&path)?;
    let meta = reader.metadata().clone();
    println!(
        "2. opened it in {:?}: Lance {}, {} rows, {} columns; metadata cost {} read(s), {} bytes",
        t.elapsed(),
        meta.version,
        meta.num_rows,
        meta.columns.len(),
        io.ranges().len(),
        io.bytes_read()
    );
    let paths = column_paths(&meta);
    for (i, c) in meta.columns.iter().enumerate() {
        if let Some(p) = c.pages.first() {
            println!(
                "     {:<16} {}",
                paths.get(i).map(|s| s.as_str()).unwrap_or("?"),
                describe_page(p)
            );
        }
    }

    io.clear();
    let t = Instant::now();
    let all = reader.read_all(None)?;
    println!(
        "3. full scan: {} rows x {} columns in {:?}, {} bytes read",
        all.num_rows(),
        all.num_columns(),
        t.elapsed(),
        io.bytes_read()
    );

    io.clear();
    let rows = [3u64, 141, 77, 20, 99];
    let t = Instant::now();
    let taken = reader.take(&rows, Some(&["vec_f32"]))?;
    println!(
        "4. take rows {rows:?} of vec_f32 in {:?}: {} bytes read in {} range(s) (the file has {} bytes)",
        t.elapsed(),
        io.bytes_read(),
        io.ranges().len(),
        meta.file_size
    );
    println!("     {} rows back, {} floats each", taken.num_rows(), 64);

    let vecs = all
        .column_by_name("vec_f32")
        .and_then(|c| c.as_any().downcast_ref::<FixedSizeListArray>().cloned())
        .ok_or("vec_f32 is not a fixed-size list")?;
    let values = vecs
        .values()
        .as_any()
        .downcast_ref::<Float32Array>()
        .ok_or("vec_f32 items are not float32")?
        .clone();
    let dim = vecs.value_length() as usize;
    let q = 7usize;
    let query: Vec<f32> = values.values()[q * dim..(q + 1) * dim].to_vec();
    let t = Instant::now();
    let mut scored: Vec<(usize, f32)> = (0..vecs.len())
        .map(|i| (i, l2(&query, &values.values()[i * dim..(i + 1) * dim])))
        .collect();
    scored.sort_by(|a, b| a.1.total_cmp(&b.1));
    println!(
        "5. exact nearest neighbours of row {q} (L2, {} vectors) in {:?}:",
        vecs.len(),
        t.elapsed()
    );
    for (i, d) in scored.iter().take(5) {
        println!("     row {i:>4}  distance {d:.4}");
    }
    if scored.first().map(|s| s.0) != Some(q) {
        return Err("the query row is not its own nearest neighbour".into());
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!("done: every step read only what it needed; see `lancer inspect --row N FILE` for the byte-level walk.");
    Ok(())
}
