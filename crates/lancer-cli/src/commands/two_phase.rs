//! `lancer write-fragments` and `lancer commit`: a two-phase (distributed) write from
//! the shell (spec: "Distributed Write"). Each worker runs `write-fragments`, which
//! writes data files and prints their fragments' descriptions as a JSON list in
//! pylance's `FragmentMetadata.to_json()` shape (so pylance's `FragmentMetadata.from_json`
//! takes each item); one driver concatenates the lists and runs `commit`, which commits
//! them as one version through the normal optimistic-concurrency path
//! (`lancer::write`).
//!
//! Distributed compaction likewise (`lancer::write`; spec: "Distributed Write" /
//! compaction): `lancer compact DS --plan > plan.json` on the driver, `lancer
//! compact-task plan.json N > result-N.json` on any worker, `lancer compact DS --commit
//! result-*.json` on the driver: one Rewrite commit.

use std::path::Path;
use std::time::Duration;

use lancer::file::FileReader;
use lancer::file::FileVersion;
use lancer::write::{self as two_phase, CommitParams, FragmentMode, Operation};
use lancer::write::{commit_compaction, plan_compaction, CompactionPlan, RewriteResult};
use lancer::write::{fragment_to_json, fragments_from_json_text, python_json_text};
use lancer::{Session, WriteParams};

use super::dataset::read_input;
use super::{report, CmdResult};
use crate::args::Mode;

/// `lancer write-fragments INPUT DATASET`: prints the fragments' JSON list on stdout.
pub fn write_fragments(
    s: &Session,
    input: &Path,
    dataset: &Path,
    mode: Mode,
    storage: &str,
    (max_rows_per_file, max_bytes): (usize, Option<u64>),
) -> CmdResult {
    let params = WriteParams {
        storage: FileVersion::parse(storage)?,
        max_rows_per_file: max_rows_per_file.max(1),
        max_bytes_per_file: max_bytes.unwrap_or(lancer::DEFAULT_MAX_BYTES_PER_FILE),
        ..Default::default()
    };
    let mode = match mode {
        Mode::Create => FragmentMode::Create,
        Mode::Append => FragmentMode::Append,
        Mode::Overwrite => FragmentMode::Overwrite,
    };
    let store = s.store(dataset)?;
    let bar = indicatif::ProgressBar::new(0);
    let (schema, batches, _) = read_input(input, &bar, None)?;
    bar.enable_steady_tick(Duration::from_millis(200));
    let batches = batches.map(|b| b.map_err(lancer::TableError::from));
    let frags = two_phase::write_fragments(&store, schema, batches, &params, mode)?;
    bar.finish_and_clear();
    // as Python's json.dumps([f.to_json() for f in fragments]) prints pylance's
    let list = serde_json::Value::Array(frags.iter().map(fragment_to_json).collect());
    println!("{}", python_json_text(&list));
    Ok(())
}

/// `lancer commit DATASET --append FILE | --overwrite FILE [--read-version N]`: FILE
/// (`-`: stdin) holds fragment descriptions, one JSON list or several (one per line,
/// as workers' outputs concatenated).
pub fn commit(
    s: &Session,
    dataset: &Path,
    (append, overwrite): (Option<&Path>, Option<&Path>),
    read_version: Option<u64>,
    json: bool,
) -> CmdResult {
    let (file, is_append) = match (append, overwrite) {
        (Some(f), None) => (f, true),
        (None, Some(f)) => (f, false),
        _ => return Err("give one of --append FILE or --overwrite FILE".into()),
    };
    let text = if file == Path::new("-") {
        std::io::read_to_string(std::io::stdin())?
    } else {
        std::fs::read_to_string(file)
            .map_err(|e| format!("cannot read fragment descriptions {}: {e}", file.display()))?
    };
    // one JSON document, else one per line (workers' outputs concatenated)
    let fragments = match fragments_from_json_text(&text) {
        Ok(f) => f,
        Err(_) => {
            let mut all = Vec::new();
            for (n, line) in text.lines().enumerate() {
                if !line.trim().is_empty() {
                    all.extend(
                        fragments_from_json_text(line)
                            .map_err(|e| format!("{} line {}: {e}", file.display(), n + 1))?,
                    );
                }
            }
            all
        }
    };
    let store = s.store(dataset)?;
    let count = fragments.len();
    let op = if is_append {
        Operation::Append { fragments }
    } else {
        // the schema the fragments were written with, from their first data file
        let first = fragments
            .iter()
            .flat_map(|f| &f.files)
            .next()
            .ok_or("--overwrite needs at least one fragment with a data file (its schema is the dataset's)")?;
        let rel = format!("data/{}", first.path);
        let reader =
            FileReader::open(store.reader(&rel, None).map_err(|e| {
                format!("data file {} of the fragments: {e}", store.display(&rel))
            })?)?;
        Operation::Overwrite {
            schema: reader.schema(),
            fragments,
            initial_bases: Vec::new(),
        }
    };
    let ds = two_phase::commit(&store, op, read_version, &CommitParams::default())?;
    let (version, rows) = (ds.version(), ds.count_rows());
    report(
        json,
        serde_json::json!({ "committed_fragments": count, "version": version, "rows": rows }),
        || {
            format!(
                "committed {count} fragments to {} (version {version}, {rows} rows in all)",
                dataset.display()
            )
        },
    )
}

fn read_text(file: &Path, what: &str) -> Result<String, String> {
    if file == Path::new("-") {
        std::io::read_to_string(std::io::stdin()).map_err(|e| format!("stdin: {e}"))
    } else {
        std::fs::read_to_string(file)
            .map_err(|e| format!("cannot read {what} {}: {e}", file.display()))
    }
}

/// `lancer compact DATASET --plan`: the plan's JSON on stdout, with the dataset's
/// location under `"dataset"` (for `lancer compact-task`).
pub fn compact_plan(s: &Session, path: &Path, opts: &lancer::CompactionOptions) -> CmdResult {
    let ds = s.open(path)?;
    let plan = plan_compaction(&ds, opts)?;
    let mut v = plan.to_json();
    if let Some(o) = v.as_object_mut() {
        o.insert(
            "dataset".into(),
            serde_json::Value::String(path.display().to_string()),
        );
    }
    println!("{v}");
    Ok(())
}

/// `lancer compact-task PLAN N [--dataset DS]`: task N's RewriteResult JSON on stdout.
pub fn compact_task(s: &Session, plan: &Path, index: usize, dataset: Option<&Path>) -> CmdResult {
    let text = read_text(plan, "compaction plan")?;
    let v = lancer::write::parse_text(&text, "compaction plan")?;
    let p = CompactionPlan::from_json(&v)?;
    let task = p.tasks.get(index).ok_or_else(|| {
        format!(
            "the plan has {} tasks (0 to {}), not task {index}",
            p.num_tasks(),
            p.num_tasks().saturating_sub(1)
        )
    })?;
    let recorded = v.get("dataset").and_then(|d| d.as_str()).map(Path::new);
    let ds = dataset
        .or(recorded)
        .ok_or("the plan records no dataset location: give it with --dataset DS")?;
    let store = s.store(ds)?;
    let r = task.execute(&store)?;
    println!("{}", r.to_json());
    Ok(())
}

/// `lancer compact DATASET --commit RESULT...`: one Rewrite commit of the results.
pub fn compact_commit(
    s: &Session,
    path: &Path,
    files: &[std::path::PathBuf],
    json: bool,
) -> CmdResult {
    let mut results = Vec::new();
    for f in files {
        let text = read_text(f, "rewrite result")?;
        let v = lancer::write::parse_text(&text, "rewrite result")
            .map_err(|e| format!("{}: {e}", f.display()))?;
        results.push(RewriteResult::from_json(&v).map_err(|e| format!("{}: {e}", f.display()))?);
    }
    let store = s.store(path)?;
    let read_version = results
        .first()
        .map(|r| r.read_version)
        .ok_or("give at least one result file")?;
    let (after, m) = commit_compaction(&store, read_version, &results, &CommitParams::default())?;
    report(
        json,
        serde_json::json!({
            "fragments_removed": m.fragments_removed,
            "fragments_added": m.fragments_added,
            "files_removed": m.files_removed,
            "files_added": m.files_added,
            "version": after.version(),
        }),
        || {
            format!(
                "{} fragments -> {}: version {}",
                m.fragments_removed,
                m.fragments_added,
                after.version()
            )
        },
    )
}
