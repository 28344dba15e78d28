//! `lancer shards`: the loader's plan of a dataset (`lancer_loader`): the pinned
//! version's fragments as shards and every rank's share, from the manifest alone.

use lancer::Session;
use std::path::Path;

use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use lancer_loader::{discover, split, Pin, Tail};

use super::CmdResult;
use crate::args::VersionArgs;

/// How the rows are split.
pub struct Split<'a> {
    pub world_size: u64,
    pub workers: u64,
    pub tail: &'a str,
    pub seed: Option<u64>,
    pub epoch: u64,
}

/// Runs `lancer shards`.
pub fn run(
    s: &Session,
    path: &Path,
    how: Split<'_>,
    save: Option<&Path>,
    at: &VersionArgs,
    json: bool,
) -> CmdResult {
    if how.world_size == 0 || how.workers == 0 {
        return Err("--world-size and --workers must be at least 1".into());
    }
    let tail = match how.tail {
        "keep" => Tail::Keep,
        "drop-last" | "drop_last" => Tail::DropLast,
        "pad" => Tail::Pad,
        other => return Err(format!("unknown --tail {other:?}: keep, drop-last or pad").into()),
    };
    let pin = match (&at.version, &at.tag) {
        (Some(v), _) => Pin::Version(*v),
        (None, Some(t)) => Pin::Tag(t.clone()),
        (None, None) => Pin::Latest,
    };
    let options = s.storage_options().clone();
    let d = discover(&path.to_string_lossy(), &pin, &options)?;
    let plan = &d.plan;
    if let Some(p) = save {
        std::fs::write(p, plan.to_json())
            .map_err(|e| format!("cannot write {}: {e}", p.display()))?;
    }
    let order = split::shard_order(plan, how.seed.is_some(), how.seed.unwrap_or(0), how.epoch);
    let mut ranks = Vec::new();
    for rank in 0..how.world_size {
        let rr = split::rank_ranges(plan.rows, rank, how.world_size, tail);
        let mut workers = Vec::new();
        for w in 0..how.workers {
            let parts = split::parts(plan, &order, &split::worker_ranges(&rr, w, how.workers));
            let rows: u64 = parts.iter().map(|p| p.len()).sum();
            // bytes in proportion to the rows read of each shard
            let bytes: u64 = parts
                .iter()
                .filter_map(|p| plan.shards.get(p.shard).map(|s| (p, s)))
                .map(|(p, s)| (s.bytes as u128 * p.len() as u128 / s.rows.max(1) as u128) as u64)
                .sum();
            workers.push((w, parts, rows, bytes));
        }
        ranks.push((rank, workers));
    }
    if json {
        let v = serde_json::json!({
            "plan": plan,
            "discovery_requests": d.requests,
            "discovery_reads": d.reads,
            "data_files_opened": d.data_files_opened,
            "world_size": how.world_size,
            "workers": how.workers,
            "ranks": ranks.iter().map(|(r, ws)| serde_json::json!({
                "rank": r,
                "rows": ws.iter().map(|w| w.2).sum::<u64>(),
                "bytes": ws.iter().map(|w| w.3).sum::<u64>(),
                "workers": ws.iter().map(|(w, parts, rows, bytes)| serde_json::json!({
                    "worker": w, "rows": rows, "bytes": bytes, "parts": parts,
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    println!(
        "{}: version {} pinned, {} shards, {} rows, {} bytes (discovery: {} requests, {} of them reads; no data file opened)",
        plan.uri,
        plan.version,
        plan.shards.len(),
        plan.rows,
        plan.bytes,
        d.requests,
        d.reads
    );
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header([
        "rank",
        "worker",
        "shards (fragment: surviving rows)",
        "rows",
        "bytes",
    ]);
    for (rank, ws) in &ranks {
        for (w, parts, rows, bytes) in ws {
            let shown: Vec<String> = parts
                .iter()
                .take(6)
                .map(|p| {
                    let whole = plan
                        .shards
                        .get(p.shard)
                        .is_some_and(|s| p.start == 0 && p.end == s.rows);
                    if whole {
                        format!("{}", p.fragment_id)
                    } else {
                        format!("{}[{}..{}]", p.fragment_id, p.start, p.end)
                    }
                })
                .collect();
            let more = if parts.len() > 6 {
                format!(" … +{}", parts.len() - 6)
            } else {
                String::new()
            };
            t.add_row([
                rank.to_string(),
                w.to_string(),
                format!("{}{more}", shown.join(", ")),
                rows.to_string(),
                bytes.to_string(),
            ]);
        }
    }
    println!("{t}");
    if let Some(p) = save {
        println!("plan saved to {}", p.display());
    }
    Ok(())
}
