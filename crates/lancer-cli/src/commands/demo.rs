//! `lancer demo`: the end-to-end tour. Part one writes a Lance file of 20,000 rows
//! (id, category, 64-d embedding) with Lancer, reads it back fully and by random takes,
//! and runs an exact nearest-neighbour search with a filter; then makes a dataset of the
//! same rows and appends, deletes by SQL, scans with a filter, searches with a SQL
//! prefilter (checked by brute force), takes and time-travels. Part two opens an embedded
//! file written by pylance 14 (the `vectors` golden file) and does the same walk.

use lancer::Session;
use std::time::Instant;

use arrow_array::{Array, FixedSizeListArray, Float32Array};

use super::{open_traced, CmdResult};
use lancer::file::inspect::{column_paths, describe_page};

const EMBEDDED: &[u8] =
    include_bytes!("../../../../tests/data/files/pylance-14/vectors.v2.1.lance");

/// Euclidean distance squared.
fn l2(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// Writes the demo table with Lancer and searches it.
fn own_file(s: &Session, dir: &std::path::Path) -> CmdResult {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
    use arrow_schema::{DataType, Field, Schema};
    use lancer::file::{FileWriter, WriteOptions};

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
    dataset_tour(s, dir, &batch)
}

/// The dataset tour: create, append, delete by SQL, filtered scan, filtered search
/// (checked against a brute-force pass), takes and time travel.
fn dataset_tour(s: &Session, dir: &std::path::Path, batch: &arrow_array::RecordBatch) -> CmdResult {
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use lancer::search::{nearest, Filtering, Metric, Nearest, SearchOptions};
    use lancer::{DatasetExt, WriteParams};

    let root = dir.join("demo_dataset");
    let n = batch.num_rows();
    let half = n / 2;
    let params = WriteParams {
        max_rows_per_file: 4_000,
        ..WriteParams::default()
    };
    let t = Instant::now();
    let v1 = s.write(&root, &[batch.slice(0, half)], &params)?;
    let v2 = v1.append(&[batch.slice(half, n - half)], &params)?;
    println!(
        "5. dataset: created with {half} rows, appended {}: version {}, {} fragments, in {:?}",
        n - half,
        v2.version(),
        v2.fragments().len(),
        t.elapsed()
    );
    let t = Instant::now();
    let v3 = v2.delete("id % 10 = 0 OR category = 'art' AND id < 1000")?;
    println!(
        "6. delete --where \"id % 10 = 0 OR category = 'art' AND id < 1000\": version {}, {} rows left, in {:?}",
        v3.version(),
        v3.count_rows(),
        t.elapsed()
    );
    let t = Instant::now();
    let filter = "category = 'science' AND id BETWEEN 4000 AND 4500";
    let page = v3
        .scan()
        .columns(&["id", "category"])
        .filter(filter)
        .with_row_address(true)
        .limit(Some(3))
        .to_batch()?;
    println!(
        "7. scan --filter \"{filter}\" --limit 3 in {:?}:",
        t.elapsed()
    );
    let ids = page.column(0).as_primitive::<Int64Type>();
    let addrs = page
        .column(2)
        .as_primitive::<arrow_array::types::UInt64Type>();
    for i in 0..page.num_rows() {
        let a = addrs.value(i);
        println!(
            "     id {:>6}  fragment {} row {}",
            ids.value(i),
            a >> 32,
            a & 0xFFFF_FFFF
        );
    }
    // Search with a prefilter; check against brute force over the rows that pass.
    let embs = batch.column(2).as_fixed_size_list();
    let dim = embs.value_length() as usize;
    let flat = embs
        .values()
        .as_primitive::<arrow_array::types::Float32Type>();
    let q: Vec<f32> = flat.values()[4243 * dim..4244 * dim].to_vec();
    let req = Nearest {
        column: "embedding",
        query: q.clone(),
        k: 3,
        metric: Metric::L2,
    };
    let sql = "category = 'sports' AND id % 10 != 0";
    let t = Instant::now();
    let hits = nearest(
        &v3,
        &req,
        &SearchOptions {
            filtering: Filtering::Pre(sql),
            columns: Some(&["id", "category"]),
            ..Default::default()
        },
    )?;
    println!(
        "8. search k=3 --filter \"{sql}\", query = row 4243, in {:?}:",
        t.elapsed()
    );
    let hit_ids = hits.column(0).as_primitive::<Int64Type>();
    let dists = hits
        .column(2)
        .as_primitive::<arrow_array::types::Float32Type>();
    for i in 0..hits.num_rows() {
        println!(
            "     id {:>6}  distance {:.4}",
            hit_ids.value(i),
            dists.value(i)
        );
    }
    let mut brute: Vec<(i64, f32)> = (0..n)
        .filter(|i| i % 4 == 1 && i % 10 != 0)
        .map(|i| (i as i64, l2(&q, &flat.values()[i * dim..(i + 1) * dim])))
        .collect();
    brute.sort_by(|a, b| a.1.total_cmp(&b.1));
    let want: Vec<i64> = brute.iter().take(3).map(|h| h.0).collect();
    if hit_ids.values().to_vec() != want {
        return Err(format!("filtered search returned {hit_ids:?}, brute force {want:?}").into());
    }
    // Build a vector index in the reference's format and search through it.
    let t = Instant::now();
    let mut opts =
        lancer::index::VectorIndexOptions::new(lancer::Quantizer::Sq, lancer::Metric::L2);
    opts.num_partitions = Some(16);
    let v4 = lancer::index::create_vector_index(&v3, "embedding", &opts)?;
    println!(
        "9. index create --type ivf_sq --partitions 16 on \"embedding\": version {}, in {:?} (pylance opens it too)",
        v4.version(),
        t.elapsed()
    );
    let ann = lancer::search::AnnParams {
        nprobes: Some(8),
        ..Default::default()
    };
    let exact = lancer::search::AnnParams {
        use_index: false,
        ..Default::default()
    };
    let (mut found, mut total) = (0usize, 0usize);
    let t = Instant::now();
    for row in (0..n).step_by(n / 20).take(20) {
        let req = Nearest {
            column: "embedding",
            query: flat.values()[row * dim..(row + 1) * dim].to_vec(),
            k: 10,
            metric: Metric::L2,
        };
        let got = lancer::search::nearest_addresses(&v4, &req, None, &ann)?;
        let want = lancer::search::nearest_addresses(&v4, &req, None, &exact)?;
        total += want.len();
        found += got
            .iter()
            .filter(|g| want.iter().any(|w| w.1 == g.1))
            .count();
    }
    println!(
        "    20 searches k=10 --nprobes 8 (of 16) through the index and exactly, in {:?}: recall@10 {:.2}",
        t.elapsed(),
        found as f64 / total.max(1) as f64
    );
    let t = Instant::now();
    let taken = v3.take(&[0, 1, 2], Some(&["id"]))?;
    println!(
        "10. take offsets 0,1,2 of version {} (deleted rows skipped): ids {:?} in {:?}",
        v3.version(),
        taken
            .column(0)
            .as_primitive::<Int64Type>()
            .values()
            .to_vec(),
        t.elapsed()
    );
    let old = s.open_version(&root, 1)?;
    println!(
        "11. time travel: version 1 still has {} rows; version {} has {}",
        old.count_rows(),
        v3.version(),
        v3.count_rows()
    );
    println!(
        "    (try: lancer cat {} --filter \"category = 'news'\" --limit 5)",
        root.display()
    );
    Ok(())
}

/// Runs the demo.
pub fn run() -> CmdResult {
    let s = &Session::new();
    let dir = std::env::temp_dir().join(format!("lancer-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    println!("== Part one: a file Lancer writes");
    own_file(s, &dir)?;
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
