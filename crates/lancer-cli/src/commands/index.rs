//! `lancer index create | list | drop`: a dataset's vector indexes (built in the
//! reference's IVF format, so pylance uses them too).

use lancer::Session;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use lancer::index::{create_vector_index, drop_index, list_indices, VectorIndexOptions};
use lancer::progress::{Event, ProgressEvent};

use super::{report, CmdResult};
use crate::args::IndexAction;

/// Runs one `lancer index` action.
pub fn run(s: &Session, action: IndexAction, json: bool) -> CmdResult {
    match action {
        IndexAction::Create {
            path,
            column,
            index_type,
            zone_size,
            rows_per_zone,
            bloom_items,
            bloom_probability,
            metric,
            partitions,
            sub_vectors,
            bits,
            name,
            replace,
            sample_rate,
            max_iters,
            seed,
            memory_mb,
            m,
            ef_construction,
            max_level,
            json_path,
            target,
            fts,
        } => {
            let inverted = matches!(index_type.to_ascii_lowercase().as_str(), "inverted" | "fts");
            let params = lancer::IndexParams {
                name,
                replace,
                // the CLI's --metric has a default; it means something to vector kinds only
                metric: (!inverted
                    && lancer::ScalarKind::parse(&index_type).is_none()
                    && !index_type.eq_ignore_ascii_case("json"))
                .then_some(metric),
                num_partitions: partitions,
                num_sub_vectors: sub_vectors,
                num_bits: bits,
                sample_rate,
                max_iterations: max_iters,
                seed,
                memory_budget: memory_mb.map(|mb| mb.saturating_mul(1 << 20)),
                zone_size,
                rows_per_zone,
                bloom_items,
                bloom_probability,
                analyzer: inverted.then(|| analyzer(&fts)).transpose()?,
                m,
                ef_construction,
                max_level,
                json_path,
                target_index_type: target,
            };
            match lancer::IndexSpec::parse(&index_type, params)? {
                lancer::IndexSpec::Vector(opts) => create(s, &path, &column, opts, json),
                lancer::IndexSpec::Scalar(opts) => create_scalar(s, &path, &column, &opts, json),
                lancer::IndexSpec::FullText(opts) => create_inverted(s, &path, &column, opts, json),
            }
        }
        IndexAction::List { path } => list(s, &path, json),
        IndexAction::Describe { path, name } => describe(s, &path, &name, json),
        IndexAction::Optimize { path, name } => {
            let ds = s.open(&path)?;
            let t = Instant::now();
            let after = lancer::index::optimize_index(&ds, &name)?;
            let added = after.version() != ds.version();
            report(
                json,
                serde_json::json!({"index": name, "version": after.version(), "added_segment": added, "seconds": t.elapsed().as_secs_f64()}),
                || {
                    if added {
                        format!("index {name:?}: new fragments added as a segment in {:.1?}: version {}", t.elapsed(), after.version())
                    } else {
                        format!(
                            "index {name:?} already covers every fragment; version {} unchanged",
                            ds.version()
                        )
                    }
                },
            )
        }
        IndexAction::Drop { path, name } => {
            let ds = s.open(&path)?;
            let after = drop_index(&ds, &name)?;
            report(
                json,
                serde_json::json!({"dropped": name, "version": after.version()}),
                || format!("dropped index {name:?}: version {}", after.version()),
            )
        }
    }
}

fn create(
    s: &Session,
    path: &Path,
    column: &str,
    mut opts: VectorIndexOptions,
    json: bool,
) -> CmdResult {
    let ds = s.open(path)?;
    let bar = indicatif::ProgressBar::new_spinner();
    if let Ok(st) = indicatif::ProgressStyle::with_template("{spinner} {elapsed:>4} {msg}") {
        bar.set_style(st);
    }
    bar.enable_steady_tick(Duration::from_millis(200));
    let started = Instant::now();
    let shown = bar.clone();
    let last = Arc::new(std::sync::Mutex::new((String::new(), Instant::now())));
    let log = last.clone();
    opts.progress = Some(Arc::new(move |e: &ProgressEvent<'_>| {
        // Each finished stage stays on screen with its time; the current one counts.
        let mut l = log.lock().unwrap_or_else(|e| e.into_inner());
        match e.event {
            Event::Start => *l = (e.stage.to_string(), Instant::now()),
            Event::Complete => {
                shown.println(format!("  {} ({:.1?})", stage_text(e), l.1.elapsed()));
                l.0.clear();
            }
            Event::Progress => {}
        }
        shown.set_message(stage_text(e));
    }));
    let kind = opts.type_name();
    let after = create_vector_index(&ds, column, &opts)?;
    drop(last);
    bar.finish_and_clear();
    let info = list_indices(&after)?;
    let name = opts.name.clone().unwrap_or_else(|| format!("{column}_idx"));
    report(
        json,
        serde_json::json!({"name": name, "type": kind, "version": after.version(), "seconds": started.elapsed().as_secs_f64(),
                           "indices": info.len()}),
        || {
            format!(
                "built {kind} index {name:?} on {column:?} in {:.1?}: version {}",
                started.elapsed(),
                after.version()
            )
        },
    )
}

/// A stage as the spinner shows it: `shuffle 20000/20000 rows`.
fn stage_text(e: &ProgressEvent<'_>) -> String {
    match (e.total, e.unit) {
        (_, "") => e.stage.to_string(),
        (Some(t), u) => format!("{} {}/{t} {u}", e.stage, e.completed),
        (None, u) => format!("{} {} {u}", e.stage, e.completed),
    }
}

/// The analyzer the `--tokenizer` flags ask for, on pylance's defaults.
fn analyzer(
    a: &crate::args::FtsCreateArgs,
) -> Result<lancer::AnalyzerParams, Box<dyn std::error::Error>> {
    let mut p = lancer::AnalyzerParams::from_json(
        &serde_json::json!({"base_tokenizer": a.base_tokenizer}).to_string(),
    )?;
    p.language = a.language.clone();
    p.with_position = a.with_position;
    p.max_token_length = (a.max_token_length > 0).then_some(a.max_token_length);
    p.lower_case &= !a.no_lower_case;
    p.stem &= !a.no_stem;
    p.remove_stop_words &= !a.no_stop_words;
    p.ascii_folding &= !a.no_ascii_folding;
    p.min_ngram_length = a.ngram_min;
    p.max_ngram_length = a.ngram_max;
    p.prefix_only = a.prefix_only;
    p.check()?;
    Ok(p)
}

fn create_inverted(
    s: &Session,
    path: &Path,
    column: &str,
    opts: lancer::index::FtsIndexOptions,
    json: bool,
) -> CmdResult {
    let ds = s.open(path)?;
    let name = opts.name.clone();
    let bar = indicatif::ProgressBar::new_spinner();
    if let Ok(st) = indicatif::ProgressStyle::with_template("{spinner} {elapsed:>4} {msg}") {
        bar.set_style(st);
    }
    bar.enable_steady_tick(Duration::from_millis(200));
    bar.set_message(format!(
        "tokenizing {} rows of {column:?} into an INVERTED index",
        ds.count_rows()
    ));
    let started = Instant::now();
    let after = lancer::index::create_fts_index(&ds, column, &opts, None)?;
    bar.finish_and_clear();
    let name = name.unwrap_or_else(|| format!("{column}_idx"));
    let d = lancer::index::describe_index(&after, &name)?;
    let bytes: u64 = after
        .indices()?
        .iter()
        .filter(|m| m.name == name)
        .flat_map(|m| m.files.iter().map(|f| f.size_bytes))
        .sum();
    report(
        json,
        serde_json::json!({"name": name, "type": "INVERTED", "version": after.version(),
                           "seconds": started.elapsed().as_secs_f64(), "bytes": bytes,
                           "documents": d["rows_indexed"]}),
        || {
            format!(
                "built INVERTED index {name:?} on {column:?} in {:.1?}: {} documents, {bytes} bytes: version {}",
                started.elapsed(),
                d["rows_indexed"],
                after.version()
            )
        },
    )
}

fn create_scalar(
    s: &Session,
    path: &Path,
    column: &str,
    opts: &lancer::index::ScalarIndexOptions,
    json: bool,
) -> CmdResult {
    let ds = s.open(path)?;
    let kind = opts.params.kind.type_name();
    let bar = indicatif::ProgressBar::new_spinner();
    if let Ok(st) = indicatif::ProgressStyle::with_template("{spinner} {elapsed:>4} {msg}") {
        bar.set_style(st);
    }
    bar.enable_steady_tick(Duration::from_millis(200));
    bar.set_message(format!(
        "building {kind} on {column:?} ({} rows)",
        ds.count_rows()
    ));
    let started = Instant::now();
    let after = lancer::index::create_scalar_index(&ds, column, opts, None)?;
    bar.finish_and_clear();
    let name = opts.name.clone().unwrap_or_else(|| format!("{column}_idx"));
    let bytes: u64 = after
        .indices()?
        .iter()
        .filter(|m| m.name == name)
        .flat_map(|m| m.files.iter().map(|f| f.size_bytes))
        .sum();
    report(
        json,
        serde_json::json!({"name": name, "type": kind, "version": after.version(),
                           "seconds": started.elapsed().as_secs_f64(), "bytes": bytes}),
        || {
            format!(
                "built {kind} index {name:?} on {column:?} in {:.1?} ({bytes} bytes): version {}",
                started.elapsed(),
                after.version()
            )
        },
    )
}

fn describe(s: &Session, path: &Path, name: &str, json: bool) -> CmdResult {
    let ds = s.open(path)?;
    let d = lancer::index::describe_index(&ds, name)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&d)?);
        return Ok(());
    }
    let s = |v: &serde_json::Value| match v {
        serde_json::Value::String(x) => x.clone(),
        serde_json::Value::Null => "?".into(),
        other => other.to_string(),
    };
    println!(
        "index {:?} on {}: {} ({}), {} rows indexed in {} segment(s) at version {}",
        name,
        d["columns"].as_array().map_or(String::new(), |c| c
            .iter()
            .map(s)
            .collect::<Vec<_>>()
            .join(", ")),
        s(&d["type"]),
        s(&d["metric"]),
        s(&d["rows_indexed"]),
        d["segments"].as_array().map_or(0, Vec::len),
        s(&d["dataset_version"]),
    );
    let unindexed = d["unindexed_fragments"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if unindexed.is_empty() {
        println!("every fragment is indexed");
    } else {
        println!(
            "{} fragment(s) with {} live rows not indexed (searched exactly; `lancer index optimize` adds them): {}",
            unindexed.len(),
            s(&d["unindexed_rows"]),
            unindexed.iter().map(|f| s(&f["id"])).collect::<Vec<_>>().join(", ")
        );
    }
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header([
        "segment",
        "rows",
        "fragments",
        "partitions (min / median / max rows)",
        "quantizer",
        "built at version",
        "files",
    ]);
    for seg in d["segments"].as_array().cloned().unwrap_or_default() {
        let p = &seg["partition_rows"];
        let q = &seg["quantizer"];
        let quant = match q["kind"].as_str() {
            Some("pq") => format!("PQ {}x{} bits", s(&q["sub_vectors"]), s(&q["bits"])),
            Some("sq") => format!("SQ 8 bits, bounds {}", s(&q["bounds"])),
            Some("rabitq") => format!("RabitQ {} bits", s(&q["bits"])),
            Some("flat") => "flat".into(),
            _ => "?".into(),
        };
        let quant = match seg["type"].as_str() {
            Some(t) if t.starts_with("IVF_HNSW_") => format!("HNSW graphs over {quant}"),
            _ => quant,
        };
        let files = seg["files"]
            .as_array()
            .map(|fs| {
                fs.iter()
                    .map(|f| format!("{} ({} B)", s(&f["path"]), s(&f["bytes"])))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default();
        t.add_row([
            s(&seg["uuid"]),
            s(&seg["rows"]),
            seg["fragments"].as_array().map_or(0, Vec::len).to_string(),
            format!(
                "{} ({} / {} / {})",
                s(&seg["partitions"]),
                s(&p["min"]),
                s(&p["median"]),
                s(&p["max"])
            ),
            quant,
            s(&seg["dataset_version"]),
            files,
        ]);
    }
    println!("{t}");
    Ok(())
}

fn list(s: &Session, path: &Path, json: bool) -> CmdResult {
    let ds = s.open(path)?;
    let info = list_indices(&ds)?;
    if json {
        let v: Vec<_> = info
            .iter()
            .map(|i| {
                serde_json::json!({"name": i.name, "columns": i.columns, "type": i.index_type, "metric": i.metric,
                                   "segments": i.segments, "fragments": i.fragments, "unindexed_fragments": i.unindexed_fragments})
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header([
        "name",
        "columns",
        "type",
        "metric",
        "segments",
        "fragments",
        "unindexed fragments",
    ]);
    for i in &info {
        t.add_row([
            i.name.clone(),
            i.columns.join(", "),
            i.index_type.clone().unwrap_or_else(|| "?".into()),
            i.metric.clone().unwrap_or_else(|| "?".into()),
            i.segments.len().to_string(),
            i.fragments.len().to_string(),
            i.unindexed_fragments.len().to_string(),
        ]);
    }
    println!("{t}");
    Ok(())
}

/// `lancer inspect DATASET --index NAME [--query …]`: the index's segments and, for a
/// query, its probe path.
pub fn inspect(
    ds: &lancer::Dataset,
    name: &str,
    query: &[f32],
    k: usize,
    nprobes: Option<usize>,
    json: bool,
) -> CmdResult {
    let metas: Vec<_> = ds
        .indices()?
        .iter()
        .filter(|m| m.name == name)
        .cloned()
        .collect();
    if metas.is_empty() {
        return Err(format!("no index named {name:?} (see `lancer index list`)").into());
    }
    let segments = lancer::inspect::vector_index_segments(ds, &metas, query, k, nprobes)?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(
                &serde_json::json!({"index": name, "segments": segments})
            )?
        );
        return Ok(());
    }
    for v in &segments {
        if let Some(note) = v.get("note").and_then(|n| n.as_str()) {
            println!(
                "index {name:?} segment {}: {note}",
                v["uuid"].as_str().unwrap_or("")
            );
            continue;
        }
        println!(
            "index {name:?} segment {} ({} {}, dim {}, built from version {})",
            v["uuid"].as_str().unwrap_or(""),
            v["type"].as_str().unwrap_or(""),
            v["metric"].as_str().unwrap_or(""),
            v["dim"],
            v["dataset_version"]
        );
        println!("  fragments {}  rows {}", v["fragments"], v["rows"]);
        let pr = &v["partition_rows"];
        println!(
            "  {} partitions (centroids {}), rows per partition min {} / median {} / max {}, {} empty",
            v["partitions"], v["centroids_shape"], pr["min"], pr["median"], pr["max"], pr["empty"]
        );
        println!("  quantizer {}", v["quantizer"]);
        if let Some(h) = v.get("hnsw").filter(|h| !h.is_null()) {
            let d = &h["level0_degree"];
            println!(
                "  hnsw {} graphs, params {}, nodes per level {}",
                h["graphs"], h["params"], h["nodes_per_level"]
            );
            println!(
                "  hnsw level-0 degree min {} / median {} / max {} (mean {}), entry points {}, {} nodes unreachable from them",
                d["min"], d["median"], d["max"], d["mean"], h["entry_points"], h["unreachable_nodes"]
            );
        }
        for f in v["files"].as_array().into_iter().flatten() {
            println!(
                "  file {} ({} bytes)",
                f["path"].as_str().unwrap_or(""),
                f["bytes"]
            );
        }
        if let Some(p) = v.get("probe") {
            println!(
                "  probe path (k={}): {} partitions searched, {} candidates scored",
                p["k"], p["partitions_searched"], p["candidates_scored"]
            );
            for o in p["order"].as_array().into_iter().flatten().take(16) {
                println!(
                    "    #{:<3} partition {:<5} distance {:<12} rows {:<7} cumulative {:<8} {}",
                    o["rank"].to_string(),
                    o["partition"].to_string(),
                    o["centroid_distance"]
                        .as_f64()
                        .map_or_else(String::new, |d| format!("{d:.4}")),
                    o["rows"].to_string(),
                    o["cumulative_rows"].to_string(),
                    if o["searched"] == true {
                        "searched"
                    } else {
                        ""
                    }
                );
            }
            for w in p["graph_walks"].as_array().into_iter().flatten() {
                print_walk(w);
            }
        }
    }
    Ok(())
}

/// One partition's HNSW graph walk (`graph_walks` of a probe path): the greedy hops
/// per level, then the level-0 beam.
fn print_walk(w: &serde_json::Value) {
    println!(
        "    partition {} graph walk ({} nodes, entry point {}, {} distances computed):",
        w["partition"], w["nodes"], w["entry_point"], w["distances_computed"]
    );
    let hop = |h: &serde_json::Value| {
        format!(
            "{} ({})",
            h[0],
            h[1].as_f64()
                .map_or_else(String::new, |d| format!("{d:.4}"))
        )
    };
    for d in w["descent"].as_array().into_iter().flatten() {
        let hops: Vec<String> = d["hops"]
            .as_array()
            .into_iter()
            .flatten()
            .map(hop)
            .collect();
        println!(
            "      level {} ({} nodes): {}",
            d["level"],
            d["nodes"],
            hops.join(" -> ")
        );
    }
    let b = &w["beam"];
    let best: Vec<String> = b["best"]
        .as_array()
        .into_iter()
        .flatten()
        .map(hop)
        .collect();
    println!(
        "      level 0 beam of {} from {}: {} nodes expanded; best {}",
        b["ef"],
        b["start"],
        b["expanded"],
        best.join(", ")
    );
}
