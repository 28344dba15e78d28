//! `lancer demo`: the end-to-end tour. Part one writes a Lance file of 20,000 rows
//! (id, category, 64-d embedding) with Lancer, reads it back fully and by random takes,
//! and runs an exact nearest-neighbour search with a filter. Part two opens an embedded
//! file written by pylance 14 (the `vectors` golden file) and does the same walk.

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

/// Writes the demo table with Lancer and searches it.
fn own_file(dir: &std::path::Path) -> CmdResult {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
    use arrow_schema::{DataType, Field, Schema};
    use lancer_format::writer::{FileWriter, WriteOptions};

    let n = 20_000usize;
    let dim = 64usize;
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 11) as f64 / (1u64 << 53) as f64
    };
    let cats = ["news", "sports", "science", "art"];
    let ids: ArrayRef = Arc::new(Int64Array::from_iter_values(0..n as i64));
    let cat: ArrayRef = Arc::new(StringArray::from_iter_values((0..n).map(|i| cats[i % 4])));
    let vals: Vec<f32> = (0..n * dim).map(|_| (rnd() * 2.0 - 1.0) as f32).collect();
    let item = Arc::new(Field::new("item", DataType::Float32, true));
    let emb: ArrayRef = Arc::new(FixedSizeListArray::new(
        item.clone(),
        dim as i32,
        Arc::new(Float32Array::from(vals)),
        None,
    ));
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("category", DataType::Utf8, false),
        Field::new(
            "embedding",
            DataType::FixedSizeList(item, dim as i32),
            false,
        ),
    ]));
    let batch = RecordBatch::try_new(schema.clone(), vec![ids, cat, emb])?;
    let path = dir.join("demo.lance");
    let t = Instant::now();
    let mut w = FileWriter::create(&path, schema, WriteOptions::default())?;
    for s in (0..n).step_by(5000) {
        w.write_batch(&batch.slice(s, 5000.min(n - s)))?;
    }
    w.finish()?;
    let size = std::fs::metadata(&path)?.len();
    println!("1. wrote {n} rows (id, category, {dim}-d embedding) with Lancer in {:?}: {size} bytes, Lance 2.1", t.elapsed());
    let (reader, io) = open_traced(&path)?;
    let meta = reader.metadata().clone();
    let paths = column_paths(&meta);
    for (i, c) in meta.columns.iter().enumerate() {
        if let Some(p) = c.pages.first() {
            println!(
                "     {:<10} {}",
                paths.get(i).map(|s| s.as_str()).unwrap_or("?"),
                describe_page(p)
            );
        }
    }
    io.clear();
    let t = Instant::now();
    let all = reader.read_all(None)?;
    if all.columns() != batch.columns() {
        return Err("the file read back differs from what was written".into());
    }
    println!(
        "2. read it back in {:?} ({} bytes): identical to what was written",
        t.elapsed(),
        io.bytes_read()
    );
    io.clear();
    let t = Instant::now();
    let rows = [17u64, 19_999, 4_242, 8];
    let taken = reader.take(&rows, None)?;
    println!(
        "3. take rows {rows:?} in {:?}: {} bytes read in {} ranges of a {size}-byte file",
        t.elapsed(),
        io.bytes_read(),
        io.ranges().len()
    );
    let got_ids = taken
        .column(0)
        .as_any()
        .downcast_ref::<Int64Array>()
        .ok_or("id is not int64")?;
    if got_ids
        .values()
        .iter()
        .map(|&v| v as u64)
        .collect::<Vec<_>>()
        != rows
    {
        return Err("take returned the wrong rows".into());
    }
    // Exact search with a prefilter: category = 'science', query = row 4242's vector.
    let t = Instant::now();
    let cats_col = all
        .column(1)
        .as_any()
        .downcast_ref::<StringArray>()
        .ok_or("category is not utf8")?;
    let embs = all
        .column(2)
        .as_any()
        .downcast_ref::<FixedSizeListArray>()
        .ok_or("embedding is not a fixed-size list")?;
    let flat = embs
        .values()
        .as_any()
        .downcast_ref::<Float32Array>()
        .ok_or("embedding items are not float32")?;
    let q: Vec<f32> = flat.values()[4242 * dim..4243 * dim].to_vec();
    let mut hits: Vec<(usize, f32)> = (0..n)
        .filter(|&i| cats_col.value(i) == "science")
        .map(|i| (i, l2(&q, &flat.values()[i * dim..(i + 1) * dim])))
        .collect();
    hits.sort_by(|a, b| a.1.total_cmp(&b.1));
    println!(
        "4. exact k=3 search, filter category = 'science', query = row 4242, in {:?}:",
        t.elapsed()
    );
    for (i, d) in hits.iter().take(3) {
        println!("     id {i:>6}  distance {d:.4}");
    }
    if hits.first().map(|h| h.0) != Some(4242) {
        return Err("the query row is not its own nearest neighbour".into());
    }
    Ok(())
}

/// Runs the demo.
pub fn run() -> CmdResult {
    let dir = std::env::temp_dir().join(format!("lancer-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    println!("== Part one: a file Lancer writes");
    own_file(&dir)?;
    println!("== Part two: a file pylance 14 wrote");
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
