//! Lancer's side of the file-read benchmark (`bench/file_read.py` runs it beside
//! pylance on the same file and prints ratios).
//!
//! Usage: `lancer-bench file-read FILE ITERATIONS INDICES_FILE...` where each indices
//! file holds little-endian u64 row numbers. Prints one JSON object with the best and
//! median seconds of: opening the file, a full decode of every column, and one take per
//! indices file. Each measured operation opens a fresh reader (cold page metadata),
//! the same as pylance's `LanceFileReader(path)` + operation; the OS page cache is warm
//! for both.

use std::alloc::{GlobalAlloc, Layout};

use mimalloc::MiMalloc as System;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use lancer_format::read::RangeRead;
use lancer_format::reader::FileReader;
use lancer_io::MmapFile;
use serde_json::json;

/// The CLI's allocator (mimalloc), counting live and peak heap bytes while `COUNTING` is set (one
/// relaxed load per call otherwise), for the memory figures of `search-mem`.
struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded unchanged to mimalloc; only counters are added.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            let now = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        // SAFETY: same layout contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if COUNTING.load(Ordering::Relaxed) {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        // SAFETY: `ptr` came from `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            if new >= layout.size() {
                let now =
                    LIVE.fetch_add(new - layout.size(), Ordering::Relaxed) + new - layout.size();
                PEAK.fetch_max(now, Ordering::Relaxed);
            } else {
                LIVE.fetch_sub(layout.size() - new, Ordering::Relaxed);
            }
        }
        // SAFETY: forwarded as received.
        unsafe { System.realloc(ptr, layout, new) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn open(path: &str) -> Result<FileReader, Box<dyn std::error::Error>> {
    let io: Arc<dyn RangeRead> = Arc::new(MmapFile::open(path)?);
    Ok(FileReader::open(io)?)
}

fn stats(mut v: Vec<f64>) -> serde_json::Value {
    v.sort_by(|a, b| a.total_cmp(b));
    json!({"best": v.first().copied().unwrap_or(0.0), "median": v.get(v.len() / 2).copied().unwrap_or(0.0)})
}

/// `write IN.arrow OUT.lance VERSION`: writes the Arrow IPC file's batches as a Lance
/// file and prints the seconds taken (reading the input is not timed).
fn write(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let f = std::fs::File::open(&args[2])?;
    let r = arrow_ipc::reader::FileReader::try_new(f, None)?;
    let schema = r.schema();
    let batches = r.collect::<Result<Vec<_>, _>>()?;
    let version = lancer_format::container::FileVersion::parse(&args[4])?;
    let t = Instant::now();
    let opts = lancer_format::writer::WriteOptions {
        version,
        ..Default::default()
    };
    let mut w = lancer_format::writer::FileWriter::create(&args[3], schema, opts)?;
    for b in &batches {
        w.write_batch(b)?;
    }
    w.finish()?;
    println!("{}", json!({"write": t.elapsed().as_secs_f64()}));
    Ok(())
}

/// `dataset PATH ITERS`: open the latest version + count_rows, and append one row
/// ITERS times; prints best / median seconds of each.
fn dataset(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    use lancer_table::write::WriteParams;
    let path = &args[2];
    let iters: usize = args[3].parse()?;
    let mut t_open = Vec::new();
    let mut t_count = Vec::new();
    let mut rows = 0;
    for _ in 0..iters {
        let t = Instant::now();
        let ds = lancer_table::Dataset::open(path)?;
        t_open.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        rows = ds.count_rows();
        t_count.push(t.elapsed().as_secs_f64());
    }
    let mut t_append = Vec::new();
    for i in 0..iters {
        let ds = lancer_table::Dataset::open(path)?;
        let schema = ds.schema();
        let col: arrow_array::ArrayRef =
            std::sync::Arc::new(arrow_array::Int64Array::from(vec![i as i64]));
        let b = arrow_array::RecordBatch::try_new(schema, vec![col])?;
        let t = Instant::now();
        ds.append(&[b], &WriteParams::default())?;
        t_append.push(t.elapsed().as_secs_f64());
    }
    println!(
        "{}",
        json!({"open": stats(t_open), "count_rows": stats(t_count), "append": stats(t_append), "rows": rows})
    );
    Ok(())
}

/// `search PATH COLUMN QUERY_FILE K ITERS`: exact k-NN (l2) over a dataset; prints
/// best / median seconds, and the machine's memcpy rate for the bandwidth bound.
fn search(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let ds = lancer_table::Dataset::open(&args[2])?;
    let q: Vec<f32> = serde_json::from_str(&std::fs::read_to_string(&args[4])?)?;
    let k: usize = args[5].parse()?;
    let iters: usize = args[6].parse()?;
    let req = lancer::search::Nearest {
        column: &args[3],
        query: q,
        k,
        metric: lancer::search::Metric::L2,
    };
    let mut times = Vec::new();
    let mut ids = Vec::new();
    for _ in 0..iters {
        let t = Instant::now();
        let r = lancer::search::exact_nearest(&ds, &req, None, Some(&["id"]))?;
        times.push(t.elapsed().as_secs_f64());
        ids = r
            .column(0)
            .as_any()
            .downcast_ref::<arrow_array::Int64Array>()
            .map(|a| a.values().to_vec())
            .unwrap_or_default();
    }
    // memcpy rate over a buffer as large as the vectors.
    let bytes = ds.count_rows() as usize * 768 * 4;
    let src = vec![1u8; bytes];
    let mut dst = vec![0u8; bytes];
    let mut rates = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        dst.copy_from_slice(&src);
        rates.push(bytes as f64 / t.elapsed().as_secs_f64());
    }
    let rate = rates.iter().cloned().fold(0.0, f64::max);
    println!(
        "{}",
        json!({"search": stats(times), "ids": ids, "vector_bytes": bytes, "memcpy_bytes_per_s": rate, "check": dst[bytes / 2]})
    );
    Ok(())
}

/// `scan PATH ITERS [FILTER]`: a scan of a dataset's latest version through the public
/// Scanner (all columns, optionally filtered), batches collected as `to_table` does.
fn scan(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    use lancer::DatasetExt;
    let iters: usize = args[3].parse()?;
    let filter = args.get(4);
    let mut times = Vec::new();
    let mut rows = 0;
    for _ in 0..iters {
        let t = Instant::now();
        let ds = lancer::Dataset::open(&args[2])?;
        let mut scan = ds.scan();
        if let Some(f) = filter {
            scan = scan.filter(f);
        }
        let batches = scan.stream()?.collect::<Result<Vec<_>, _>>()?;
        rows = batches.iter().map(|b| b.num_rows()).sum();
        times.push(t.elapsed().as_secs_f64());
    }
    println!("{}", json!({"scan": stats(times), "rows": rows}));
    Ok(())
}

/// How many calls of one that took `first` seconds make a ~50 ms timed round (1 to
/// 10,000).
fn calls_per_round(first: f64) -> usize {
    ((0.05 / first.max(1e-7)) as usize).clamp(1, 10_000)
}

/// `api PATH ITERS FILTER VECTOR_COLUMN QUERY_FILE INDICES_FILE...`: the calls the Python
/// benchmark (`bench/python.py`) makes, through the Rust API on one opened dataset:
/// a full scan and a filtered scan (batches collected, as `to_table`), a take of all
/// columns per indices file, and an exact k=10 search returning `id` and `_distance`.
/// Prints the best and median seconds per call of each (JSON).
fn api(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    use lancer::search::{nearest, Filtering, Metric, Nearest, SearchOptions};
    use lancer::DatasetExt;
    let iters: usize = args[3].parse()?;
    let ds = lancer::Dataset::open(&args[2])?;
    let q: Vec<f32> = serde_json::from_str(&std::fs::read_to_string(&args[6])?)?;
    let mut out = serde_json::Map::new();
    let mut time = |name: String,
                    f: &mut dyn FnMut() -> Result<usize, Box<dyn std::error::Error>>|
     -> Result<(), Box<dyn std::error::Error>> {
        // Calls shorter than ~50 ms repeat within one timed round (the same rule as
        // bench/python.py's `per_call`): a round's time per call, best / median of
        // `iters` rounds, so microsecond calls are not timer noise.
        let t = Instant::now();
        let mut rows = f()?;
        let reps = calls_per_round(t.elapsed().as_secs_f64());
        let mut times = Vec::new();
        for _ in 0..iters {
            let t = Instant::now();
            for _ in 0..reps {
                rows = f()?;
            }
            times.push(t.elapsed().as_secs_f64() / reps as f64);
        }
        out.insert(name, json!({"t": stats(times), "rows": rows, "reps": reps}));
        Ok(())
    };
    time("scan".into(), &mut || {
        let b = ds.scan().stream()?.collect::<Result<Vec<_>, _>>()?;
        Ok(b.iter().map(|b| b.num_rows()).sum())
    })?;
    time("filtered".into(), &mut || {
        let b = ds
            .scan()
            .filter(&args[4])
            .stream()?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(b.iter().map(|b| b.num_rows()).sum())
    })?;
    for f in &args[7..] {
        let idx = read_indices(f)?;
        time(format!("take_{}", idx.len()), &mut || {
            Ok(ds.take(&idx, None)?.num_rows())
        })?;
    }
    let req = Nearest {
        column: &args[5],
        query: q.clone(),
        k: 10,
        metric: Metric::L2,
    };
    let params = lancer::search::AnnParams::default();
    time("nearest".into(), &mut || {
        Ok(nearest(
            &ds,
            &req,
            &SearchOptions {
                filtering: Filtering::None,
                columns: Some(&["id"]),
                ann: params.clone(),
                ..Default::default()
            },
        )?
        .num_rows())
    })?;
    println!("{}", serde_json::Value::Object(out));
    Ok(())
}

/// `stream PATH`: reads every batch of a full scan and drops it (for peak memory).
fn stream(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    use lancer::DatasetExt;
    let ds = lancer::Dataset::open(&args[2])?;
    let mut rows = 0;
    for b in ds.scan().stream()? {
        rows += b?.num_rows();
    }
    println!("{}", json!({"rows": rows}));
    Ok(())
}

/// `takes PATH ITERS COLUMNS INDICES_FILE...`: takes by row offset from an opened
/// dataset (the handle opened once, as a loader holds it) of the columns given (comma
/// separated); prints timings and the sum of the first column (int64) so the caller
/// can check both engines returned the same rows. `dataset-take PATH ITERS
/// INDICES_FILE...` is the same with the columns `id,text,vec`.
fn takes(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let iters: usize = args[3].parse()?;
    let cols: Vec<&str> = args[4].split(',').collect();
    let ds = lancer_table::Dataset::open(&args[2])?;
    let mut out = serde_json::Map::new();
    for f in &args[5..] {
        let idx = read_indices(f)?;
        let mut times = Vec::new();
        let mut sum = 0i64;
        for _ in 0..iters {
            let t = Instant::now();
            let b = ds.take(&idx, Some(&cols))?;
            times.push(t.elapsed().as_secs_f64());
            let ids = b
                .column(0)
                .as_any()
                .downcast_ref::<arrow_array::Int64Array>()
                .ok_or("the first column is not int64")?;
            sum = ids.values().iter().sum();
        }
        out.insert(
            format!("take_{}", idx.len()),
            json!({"t": stats(times), "id_sum": sum}),
        );
    }
    println!("{}", serde_json::Value::Object(out));
    Ok(())
}

/// `search-mem PATH COLUMN QUERY_FILE K [PREFILTER]`: exact searches (best of 3) through the
/// public streamed path (`nearest`, id column only); prints its seconds, the peak
/// heap bytes allocated during it (above what was live before), the scan's threads and
/// batch rows, and the memcpy rate over a buffer of `vector_bytes` (the column's bytes
/// over all physical rows, which a scan must read).
fn search_mem(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    use lancer::search::{nearest, Filtering, Metric, Nearest, SearchOptions};
    let ds = lancer::Dataset::open(&args[2])?;
    let q: Vec<f32> = serde_json::from_str(&std::fs::read_to_string(&args[4])?)?;
    let k: usize = args[5].parse()?;
    let req = Nearest {
        column: &args[3],
        query: q.clone(),
        k,
        metric: Metric::L2,
    };
    let filtering = match args.get(6) {
        Some(f) => Filtering::Pre(f),
        None => Filtering::None,
    };
    // Best of three runs on the opened dataset (as the other rows of bench/run), the
    // peak heap the highest of the three.
    let (mut secs, mut peak, mut r) = (f64::INFINITY, 0usize, None);
    for _ in 0..3 {
        let base = LIVE.load(Ordering::Relaxed);
        PEAK.store(base, Ordering::Relaxed);
        COUNTING.store(true, Ordering::SeqCst);
        let t = Instant::now();
        let got = nearest(
            &ds,
            &req,
            &SearchOptions {
                filtering,
                columns: Some(&["id"]),
                ..Default::default()
            },
        )?;
        secs = secs.min(t.elapsed().as_secs_f64());
        COUNTING.store(false, Ordering::SeqCst);
        peak = peak.max(PEAK.load(Ordering::Relaxed).saturating_sub(base));
        r = Some(got);
    }
    let r = r.ok_or("no search ran")?;
    // The process's resident memory after the search (kB lines of /proc/self/status).
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = |key: &str| -> u64 {
        status
            .lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
            * 1024
    };
    let (hwm, anon, file) = (kb("VmHWM:"), kb("RssAnon:"), kb("RssFile:"));
    let ids: Vec<i64> = r
        .column(0)
        .as_any()
        .downcast_ref::<arrow_array::Int64Array>()
        .map(|a| a.values().to_vec())
        .unwrap_or_default();
    let physical: u64 = ds
        .manifest()
        .pb
        .fragments
        .iter()
        .map(|f| f.physical_rows)
        .sum();
    let bytes = physical as usize * q.len() * 4;
    let src = vec![1u8; bytes];
    let mut dst = vec![0u8; bytes];
    let mut rate = 0.0f64;
    for _ in 0..3 {
        let t = Instant::now();
        dst.copy_from_slice(&src);
        rate = rate.max(bytes as f64 / t.elapsed().as_secs_f64());
    }
    // The page-cache read rate: every data file read through one reused 4 MiB buffer
    // on one thread (what an engine must at least do to get file bytes it has not
    // mapped or cached itself).
    let mut buf = vec![0u8; 4 << 20];
    let (mut file_bytes, t) = (0u64, Instant::now());
    for e in std::fs::read_dir(std::path::Path::new(&args[2]).join("data"))? {
        let mut f = std::fs::File::open(e?.path())?;
        loop {
            let n = std::io::Read::read(&mut f, &mut buf)?;
            if n == 0 {
                break;
            }
            file_bytes += n as u64;
        }
    }
    let page_cache_rate = file_bytes as f64 / t.elapsed().as_secs_f64();
    let threads = lancer_util::cores();
    println!(
        "{}",
        json!({"seconds": secs, "ids": ids, "peak_heap": peak, "vm_hwm": hwm, "rss_anon_after": anon, "rss_file_after": file, "threads": threads,
               "batch_rows": lancer::scan::DEFAULT_BATCH_SIZE, "dim": q.len(),
               "vector_bytes": bytes, "memcpy_bytes_per_s": rate, "page_cache_bytes_per_s": page_cache_rate, "check": dst[bytes / 2]})
    );
    Ok(())
}

/// `ann PATH COLUMN QUERIES_JSON K NPROBES REFINE(0 = none) USE_INDEX(0/1) [EF [FILTER]]`:
/// every query once through `nearest` (the dataset opened once, its index segments
/// cached after the first query), prefiltered by the SQL `FILTER` when given (an empty
/// `EF` / `FILTER`: none); prints total seconds of the timed pass (after a warm-up on
/// five queries), p50 / p99 latency and each query's `id`s; unfiltered, also the
/// search alone (row addresses) on one and on two threads.
fn ann(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    use lancer::search::AnnParams;
    use lancer::search::{nearest, Filtering, Metric, Nearest, SearchOptions};
    let ds = lancer::Dataset::open(&args[2])?;
    let queries: Vec<Vec<f32>> = serde_json::from_str(&std::fs::read_to_string(&args[4])?)?;
    let k: usize = args[5].parse()?;
    let nprobes: usize = args[6].parse()?;
    let refine: u32 = args[7].parse()?;
    let use_index = args[8] == "1";
    let metric = match lancer::search::column_index_metric(&ds, &args[3])? {
        Some(m) if use_index => m,
        _ => Metric::L2,
    };
    let params = AnnParams {
        use_index,
        nprobes: Some(nprobes),
        refine_factor: (refine > 0).then_some(refine),
        // HNSW indexes' beam width (other kinds ignore it)
        ef: args
            .get(9)
            .filter(|e| !e.is_empty())
            .map(|e| e.parse())
            .transpose()?,
        ..Default::default()
    };
    // an SQL prefilter (empty: none)
    let filter = args.get(10).filter(|f| !f.is_empty());
    let filtering = filter.map_or(Filtering::None, |f| Filtering::Pre(f));
    let run = |q: &Vec<f32>| -> Result<Vec<i64>, Box<dyn std::error::Error>> {
        let req = Nearest {
            column: &args[3],
            query: q.clone(),
            k,
            metric,
        };
        let b = nearest(
            &ds,
            &req,
            &SearchOptions {
                filtering,
                columns: Some(&["id"]),
                ann: params.clone(),
                ..Default::default()
            },
        )?;
        Ok(b.column(0)
            .as_any()
            .downcast_ref::<arrow_array::Int64Array>()
            .map(|a| a.values().to_vec())
            .unwrap_or_default())
    };
    for q in queries.iter().take(5) {
        run(q)?;
    }
    let t = Instant::now();
    let mut ids = Vec::with_capacity(queries.len());
    let mut latencies = Vec::with_capacity(queries.len());
    for q in &queries {
        let one = Instant::now();
        ids.push(run(q)?);
        latencies.push(one.elapsed().as_secs_f64());
    }
    let secs = t.elapsed().as_secs_f64();
    latencies.sort_by(f64::total_cmp);
    let pct = |p: f64| {
        latencies
            .get(((latencies.len() as f64 * p) as usize).min(latencies.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0.0)
    };
    // The search alone (row addresses, no column fetched), as an ANN library answers.
    // Every `step`-th query from `first`, searched for row addresses only.
    let search = |first: usize, step: usize| -> Result<(), String> {
        for q in queries.iter().skip(first).step_by(step) {
            let req = Nearest {
                column: &args[3],
                query: q.clone(),
                k,
                metric,
            };
            let hits = lancer::search::nearest_addresses(&ds, &req, None, &params);
            std::hint::black_box(hits.map_err(|e| e.to_string())?);
        }
        Ok(())
    };
    if filter.is_some() {
        // filtered searches are timed with their results fetched only
        println!(
            "{}",
            json!({"seconds": secs, "p50": pct(0.5), "p99": pct(0.99), "ids": ids})
        );
        return Ok(());
    }
    let t = Instant::now();
    search(0, 1)?;
    let search_secs = t.elapsed().as_secs_f64();
    // The search again with two queries in flight (each thread every other query).
    let t = Instant::now();
    std::thread::scope(|s| -> Result<(), String> {
        let other = s.spawn(|| search(1, 2));
        search(0, 2)?;
        other
            .join()
            .map_err(|_| "a search thread panicked".to_string())?
    })?;
    let search_secs_2 = t.elapsed().as_secs_f64();
    println!(
        "{}",
        json!({"seconds": secs, "search_seconds": search_secs,
               "search_seconds_2_threads": search_secs_2, "p50": pct(0.5), "p99": pct(0.99),
               "ids": ids})
    );
    Ok(())
}

fn read_indices(f: &str) -> Result<Vec<u64>, Box<dyn std::error::Error>> {
    let raw = std::fs::read(f)?;
    Ok(raw
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
        .collect())
}

/// `filter DATASET ITERS SCAN_ITERS FILTER...`: per filter, on one opened dataset, the
/// rows of `id` it keeps, the first, best and median of ITERS times through the scalar indexes,
/// and the best of SCAN_ITERS times without them; the same for counting the rows it
/// keeps (JSON lines).
fn filters(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    use lancer::DatasetExt;
    let ds = lancer::Dataset::open(&args[2])?;
    let iters: usize = args[3].parse()?;
    let scan_iters: usize = args[4].parse()?;
    for f in &args[5..] {
        let run = |index: bool| -> Result<(f64, usize), Box<dyn std::error::Error>> {
            // (batches collected, as pylance's `to_table` returns them: not concatenated)
            let t = Instant::now();
            let b = ds
                .scan()
                .columns(&["id"])
                .filter(f)
                .use_scalar_index(index)
                .stream()?
                .collect::<Result<Vec<_>, _>>()?;
            Ok((
                t.elapsed().as_secs_f64(),
                b.iter().map(|b| b.num_rows()).sum(),
            ))
        };
        let (first, rows) = run(true)?;
        let mut times = vec![first];
        for _ in 1..iters {
            times.push(run(true)?.0);
        }
        let best = times.iter().copied().fold(first, f64::min);
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        let mut scan = f64::INFINITY;
        let mut scan_rows = rows;
        for _ in 0..scan_iters {
            let (t, n) = run(false)?;
            scan = scan.min(t);
            scan_rows = n;
        }
        let count = |index: bool| -> Result<(f64, u64), Box<dyn std::error::Error>> {
            let t = Instant::now();
            let n = ds.scan().filter(f).use_scalar_index(index).count_rows()?;
            Ok((t.elapsed().as_secs_f64(), n))
        };
        let (mut count_best, counted) = count(true)?;
        for _ in 1..iters {
            count_best = count_best.min(count(true)?.0);
        }
        let mut count_scan = f64::INFINITY;
        for _ in 0..scan_iters {
            count_scan = count_scan.min(count(false)?.0);
        }
        let plan = ds.scan().filter(f).explain()?;
        let finite = |t: f64| if t.is_finite() { json!(t) } else { json!(null) };
        println!(
            "{}",
            json!({"filter": f, "rows": rows, "scan_rows": scan_rows, "first": first, "best": best,
                   "median": median, "scan": finite(scan), "counted": counted, "count_best": count_best,
                   "count_scan": finite(count_scan), "plan": plan})
        );
    }
    Ok(())
}

/// `fts DATASET ITERS QUERIES.json`: full-text queries on one opened dataset; per query
/// (`{"name", "text", "kind": match|and|phrase, "limit", "filter"}`) the rows, the first
/// run and p50 / p99 / mean of `ITERS` runs, and the answer (row ids and scores).
fn fts(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    use lancer::search::{full_text_addresses, FtsOptions};
    use lancer_index::inverted::search::FtsQuery;
    let ds = lancer::Dataset::open(&args[2])?;
    let iters: usize = args[3].parse()?;
    let queries: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(&args[4])?)?;
    for q in queries {
        let text = q["text"].as_str().unwrap_or_default().to_string();
        let query = match q["kind"].as_str() {
            Some("phrase") => FtsQuery::Phrase {
                column: Some("text".into()),
                text,
                slop: 0,
            },
            kind => FtsQuery::Match {
                column: Some("text".into()),
                text,
                and: kind == Some("and"),
                boost: 1.0,
                fuzziness: 0,
                prefix_length: 0,
                max_expansions: 50,
            },
        };
        let opts = FtsOptions {
            limit: q["limit"].as_u64().map(|l| l as usize),
            filter: q["filter"].as_str().map(str::to_string),
            prefilter: true,
            ..Default::default()
        };
        let t = Instant::now();
        let first_answer = full_text_addresses(&ds, &query, &opts)?;
        let first = t.elapsed().as_secs_f64();
        let mut times = Vec::with_capacity(iters);
        for _ in 0..iters {
            let t = Instant::now();
            let r = full_text_addresses(&ds, &query, &opts)?;
            times.push(t.elapsed().as_secs_f64());
            std::hint::black_box(r);
        }
        times.sort_by(f64::total_cmp);
        let pct = |p: f64| times[((times.len() - 1) as f64 * p).round() as usize];
        let mean = times.iter().sum::<f64>() / times.len().max(1) as f64;
        println!(
            "{}",
            json!({"name": q["name"], "rows": first_answer.len(), "first": first,
                   "p50": pct(0.5), "p99": pct(0.99), "mean": mean,
                   "addresses": first_answer.iter().map(|a| a.0).collect::<Vec<_>>(),
                   "scores": first_answer.iter().map(|a| a.1).collect::<Vec<_>>()})
        );
    }
    Ok(())
}

/// `scalar-build DATASET COLUMN KIND`: builds and commits one scalar index in-process
/// (the dataset opened, the index built, the version committed), printing the seconds of
/// that whole call as JSON: the in-process counterpart of pylance's `create_scalar_index`.
fn scalar_build(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let kind = lancer_index::scalar::ScalarKind::parse(&args[4])
        .ok_or_else(|| format!("unknown scalar index kind {:?}", args[4]))?;
    let t = Instant::now();
    let ds = lancer::Dataset::open(&args[2])?;
    let opts = lancer::index::ScalarIndexOptions::new(kind);
    let new = lancer::index::create_scalar_index(&ds, &args[3], &opts, None)?;
    let secs = t.elapsed().as_secs_f64();
    println!("{}", json!({"seconds": secs, "version": new.version()}));
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 5 && args[1] == "scalar-build" {
        return scalar_build(&args);
    }
    if args.len() == 5 && args[1] == "fts" {
        return fts(&args);
    }
    if args.len() >= 6 && args[1] == "filter" {
        return filters(&args);
    }
    if args.len() >= 5 && args[1] == "dataset-take" {
        let mut with_cols = args[..4].to_vec();
        with_cols.push("id,text,vec".into());
        with_cols.extend_from_slice(&args[4..]);
        return takes(&with_cols);
    }
    if (9..=11).contains(&args.len()) && args[1] == "ann" {
        return ann(&args);
    }
    if args.len() >= 6 && args[1] == "takes" {
        return takes(&args);
    }
    if (args.len() == 6 || args.len() == 7) && args[1] == "search-mem" {
        return search_mem(&args);
    }
    if (args.len() == 4 || args.len() == 5) && args[1] == "scan" {
        return scan(&args);
    }
    if args.len() >= 7 && args[1] == "api" {
        return api(&args);
    }
    if args.len() == 3 && args[1] == "stream" {
        return stream(&args);
    }
    if args.len() == 7 && args[1] == "search" {
        return search(&args);
    }
    if args.len() == 5 && args[1] == "write" {
        return write(&args);
    }
    if args.len() == 4 && args[1] == "dataset" {
        return dataset(&args);
    }
    if args.len() < 4 || args[1] != "file-read" {
        return Err("usage: lancer-bench file-read FILE ITERATIONS [INDICES_FILE...]".into());
    }
    let path = &args[2];
    let iters: usize = args[3].parse()?;
    let mut out = serde_json::Map::new();

    let mut t_open = Vec::new();
    let mut t_full = Vec::new();
    let mut rows = 0usize;
    let skip_full = std::env::var_os("LANCER_BENCH_SKIP_FULL").is_some();
    for _ in 0..if skip_full { 0 } else { iters } {
        let t = Instant::now();
        let r = open(path)?;
        t_open.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let b = r.read_all(None)?;
        t_full.push(t.elapsed().as_secs_f64());
        rows = b.num_rows();
    }
    out.insert("open".into(), stats(t_open));
    out.insert("full_decode".into(), stats(t_full));
    out.insert("rows".into(), json!(rows));

    for f in &args[4..] {
        let idx = read_indices(f)?;
        let mut times = Vec::new();
        for _ in 0..iters {
            let t = Instant::now();
            let r = open(path)?;
            let b = r.take(&idx, None)?;
            times.push(t.elapsed().as_secs_f64());
            if b.num_rows() != idx.len() {
                return Err("take returned the wrong number of rows".into());
            }
        }
        out.insert(format!("take_{}", idx.len()), stats(times));
    }
    println!("{}", serde_json::Value::Object(out));
    Ok(())
}
