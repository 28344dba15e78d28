//! `lancer index create | list | drop`: a dataset's vector indexes (built in the
//! reference's IVF format, so pylance uses them too).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use lancer::index::{create_vector_index, drop_index, list_indices, VectorIndexOptions};
use lancer::Dataset;
use lancer_index::ivf::Metric;
use lancer_index::ivf_build::Quantizer;

use super::{report, CmdResult};
use crate::args::IndexAction;

/// Runs one `lancer index` action.
pub fn run(action: IndexAction, json: bool) -> CmdResult {
    match action {
        IndexAction::Create {
            path,
            column,
            index_type,
            metric,
            partitions,
            sub_vectors,
            bits,
            name,
            replace,
            sample_rate,
            max_iters,
        } => {
            let quantizer = match index_type.to_ascii_lowercase().as_str() {
                "ivf_flat" => Quantizer::Flat,
                "ivf_sq" => Quantizer::Sq,
                "ivf_pq" => Quantizer::Pq {
                    sub_vectors: sub_vectors.ok_or(
                        "IVF_PQ needs --sub-vectors (a divisor of the dimension, e.g. dim / 8)",
                    )?,
                    bits: bits.unwrap_or(8),
                },
                other => {
                    return Err(
                        format!("unknown index type {other:?}: ivf_flat, ivf_pq or ivf_sq").into(),
                    )
                }
            };
            let metric = Metric::parse(&metric)
                .ok_or_else(|| format!("unknown metric {metric:?}: l2, cosine or dot"))?;
            let mut opts = VectorIndexOptions::new(quantizer, metric);
            opts.name = name;
            opts.replace = replace;
            opts.num_partitions = partitions;
            opts.sample_rate = sample_rate;
            opts.max_iters = max_iters;
            create(&path, &column, opts, json)
        }
        IndexAction::List { path } => list(&path, json),
        IndexAction::Drop { path, name } => {
            let ds = Dataset::open(&path)?;
            let after = drop_index(&ds, &name)?;
            report(
                json,
                serde_json::json!({"dropped": name, "version": after.version()}),
                || format!("dropped index {name:?}: version {}", after.version()),
            )
        }
    }
}

fn create(path: &Path, column: &str, mut opts: VectorIndexOptions, json: bool) -> CmdResult {
    let ds = Dataset::open(path)?;
    let bar = indicatif::ProgressBar::new_spinner();
    if let Ok(st) = indicatif::ProgressStyle::with_template("{spinner} {elapsed:>4} {msg}") {
        bar.set_style(st);
    }
    bar.enable_steady_tick(Duration::from_millis(200));
    let started = Instant::now();
    let shown = bar.clone();
    let last = Arc::new(std::sync::Mutex::new((String::new(), Instant::now())));
    let log = last.clone();
    opts.progress = Some(Arc::new(move |phase: &str| {
        // Each finished phase stays on screen with its time.
        let mut l = log.lock().unwrap_or_else(|e| e.into_inner());
        if !l.0.is_empty() {
            shown.println(format!("  {} ({:.1?})", l.0, l.1.elapsed()));
        }
        *l = (phase.to_string(), Instant::now());
        shown.set_message(phase.to_string());
    }));
    let kind = opts.quantizer.type_name();
    let after = create_vector_index(&ds, column, &opts)?;
    {
        let l = last.lock().unwrap_or_else(|e| e.into_inner());
        bar.println(format!("  {} ({:.1?})", l.0, l.1.elapsed()));
    }
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

fn list(path: &Path, json: bool) -> CmdResult {
    let ds = Dataset::open(path)?;
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
