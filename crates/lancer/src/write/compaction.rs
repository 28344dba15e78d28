//! Distributed compaction (spec: "Distributed Write" / compaction, reference lines
//! ~7862–8438; the commit rules are "Transactions" / "Conflict resolution", ~3686–6486).
//!
//! Three steps, as pylance's `lance.optimize.Compaction`:
//!
//! 1. [`plan_compaction`] on a driver: the fragments the local compaction
//!    (`lancer_table::evolution`, same grouping rules, same code) would rewrite, cut into
//!    [`CompactionTask`]s, each naming the version read and the fragments as committed
//!    there.
//! 2. [`CompactionTask::execute`] anywhere (another process, another machine): the
//!    task's live rows (deletions materialized; with stable row ids each row keeps its id
//!    and versions) written as new data files; nothing is committed. Returns a
//!    [`RewriteResult`].
//! 3. [`commit_compaction`] on the driver: the results gathered become one `Rewrite`
//!    commit (one group per result) through [`crate::write::two_phase::commit`], so through the
//!    same optimistic-concurrency path a local write takes. Results left out (a task that
//!    failed or has not finished) leave their fragments untouched; an append committed
//!    since the plan is rebased over; a delete, update or rewrite of a planned fragment
//!    committed since is a conflict, as for pylance.
//!
//! All three types travel as JSON in the shape pylance 14 writes them (`json()`):
//! fragments in its `FragmentMetadata` shape ([`crate::write::fragment_json`]). A result is
//! checked before it is committed: its original fragments must be the committed ones at
//! the version read (same files, row count and deletion file), its new fragments must
//! hold exactly their live rows, and every new data file must exist with the recorded
//! size and row count (`two_phase`'s checks), so a tampered or foreign result is refused
//! with an error naming what does not match.
//!
//! Indexes are carried over as by the local compaction (`crate::write::evolve::compact_files`,
//! the same code): after the `Rewrite`, each index that covered a result's fragments
//! covers its new ones (with stable row ids its bitmap moves over; otherwise a segment
//! over the new fragments is added), one more version per index.

use lancer_table::evolution::CompactionOptions;
use lancer_table::Dataset;
use serde_json::{json, Map, Value};

use crate::write::fragment_json::{fragment_from_json, fragment_to_json};
use crate::write::two_phase::{self, CommitParams, Fragment, Operation, RewriteGroup};
use crate::{Error, Result, Store};

/// What a compaction (or part of one) removes and adds (pylance's
/// `CompactionMetrics`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompactionMetrics {
    /// Fragments rewritten.
    pub fragments_removed: usize,
    /// Fragments written.
    pub fragments_added: usize,
    /// Data and deletion files no longer used.
    pub files_removed: usize,
    /// Data files written.
    pub files_added: usize,
}

impl CompactionMetrics {
    fn of(old: &[Fragment], new: &[Fragment]) -> Self {
        Self {
            fragments_removed: old.len(),
            fragments_added: new.len(),
            files_removed: old
                .iter()
                .map(|f| f.files.len() + usize::from(f.deletion_file.is_some()))
                .sum(),
            files_added: new.iter().map(|f| f.files.len()).sum(),
        }
    }

    fn add(&mut self, o: &Self) {
        self.fragments_removed += o.fragments_removed;
        self.fragments_added += o.fragments_added;
        self.files_removed += o.files_removed;
        self.files_added += o.files_added;
    }

    /// As JSON (pylance's keys).
    pub fn to_json(&self) -> Value {
        json!({
            "fragments_removed": self.fragments_removed,
            "fragments_added": self.fragments_added,
            "files_removed": self.files_removed,
            "files_added": self.files_added,
        })
    }

    fn from_json(v: &Value) -> Result<Self> {
        let o = object(v, "metrics")?;
        let n = |k: &str| -> Result<usize> {
            Ok(usize::try_from(uint(o, k, "metrics")?).unwrap_or(usize::MAX))
        };
        Ok(Self {
            fragments_removed: n("fragments_removed")?,
            fragments_added: n("fragments_added")?,
            files_removed: n("files_removed")?,
            files_added: n("files_added")?,
        })
    }
}

/// One independent piece of a compaction: fragments of version `read_version`
/// rewritten into new ones.
#[derive(Debug, Clone)]
pub struct CompactionTask {
    /// The version planned on.
    pub read_version: u64,
    /// The fragments to rewrite, as committed at `read_version`, in dataset order.
    pub fragments: Vec<Fragment>,
    /// The compaction's options.
    pub options: CompactionOptions,
}

/// A compaction's tasks (see the module docs).
#[derive(Debug, Clone)]
pub struct CompactionPlan {
    /// The version planned on.
    pub read_version: u64,
    /// The tasks, in dataset order of their first fragment.
    pub tasks: Vec<CompactionTask>,
    /// The options planned with.
    pub options: CompactionOptions,
}

/// A task's outcome: new data files written, nothing committed.
#[derive(Debug, Clone)]
pub struct RewriteResult {
    /// The version the task read.
    pub read_version: u64,
    /// The fragments rewritten, as committed at `read_version`.
    pub original_fragments: Vec<Fragment>,
    /// The fragments holding their live rows now (id 0: assigned at commit).
    pub new_fragments: Vec<Fragment>,
    /// What the task removes and adds.
    pub metrics: CompactionMetrics,
}

/// Plans a compaction of `ds` (its version is the plan's `read_version`): the local
/// compaction's tasks (`Dataset::plan_compaction`), each with its fragments as
/// committed. No task when nothing is worth rewriting.
pub fn plan_compaction(ds: &Dataset, options: &CompactionOptions) -> Result<CompactionPlan> {
    ds.check_writable("compact")?;
    check_options(options)?;
    let tasks = ds
        .plan_compaction(options)?
        .into_iter()
        .map(|ids| {
            let fragments = ids
                .iter()
                .filter_map(|id| ds.fragments().iter().find(|f| f.id == *id).cloned())
                .collect();
            CompactionTask {
                read_version: ds.version(),
                fragments,
                options: options.clone(),
            }
        })
        .collect();
    Ok(CompactionPlan {
        read_version: ds.version(),
        tasks,
        options: options.clone(),
    })
}

fn check_options(o: &CompactionOptions) -> Result<()> {
    if o.target_rows_per_fragment == 0 {
        return Err(Error::InvalidArgument {
            what: "target_rows_per_fragment must be at least 1".into(),
        });
    }
    if !(0.0..=1.0).contains(&o.materialize_deletions_threshold) {
        return Err(Error::InvalidArgument {
            what: format!(
                "materialize_deletions_threshold must be between 0 and 1, not {}",
                o.materialize_deletions_threshold
            ),
        });
    }
    if o.max_bytes_per_file == Some(0) {
        return Err(Error::InvalidArgument {
            what: "max_bytes_per_file must be at least 1 (or None)".into(),
        });
    }
    Ok(())
}

impl CompactionPlan {
    /// The number of tasks.
    pub fn num_tasks(&self) -> usize {
        self.tasks.len()
    }

    /// As JSON, in pylance 14's `CompactionPlan.json()` shape.
    pub fn to_json(&self) -> Value {
        let tasks: Vec<Value> = self
            .tasks
            .iter()
            .map(|t| json!({"fragments": fragments_json(&t.fragments)}))
            .collect();
        json!({
            "tasks": tasks,
            "read_version": self.read_version,
            "options": options_json(&self.options),
        })
    }

    /// From [`CompactionPlan::to_json`]'s shape (pylance's too).
    pub fn from_json(v: &Value) -> Result<Self> {
        let o = object(v, "compaction plan")?;
        let read_version = uint(o, "read_version", "compaction plan")?;
        let options = options_from_json(o.get("options"))?;
        let tasks = array(o, "tasks", "compaction plan")?
            .iter()
            .map(|t| {
                let to = object(t, "compaction plan task")?;
                Ok(CompactionTask {
                    read_version,
                    fragments: fragments_from(to, "fragments", "compaction plan task")?,
                    options: options.clone(),
                })
            })
            .collect::<Result<_>>()?;
        Ok(Self {
            read_version,
            tasks,
            options,
        })
    }
}

impl CompactionTask {
    /// Runs the task against the dataset in `store`: its fragments' live rows are
    /// written as new data files there (see the module docs); nothing is committed.
    /// Fragments that are not the committed ones at `read_version` are an error.
    pub fn execute(&self, store: &Store) -> Result<RewriteResult> {
        check_options(&self.options)?;
        if self.fragments.is_empty() {
            return Err(Error::InvalidArgument {
                what: "the compaction task names no fragment: take the tasks from a plan".into(),
            });
        }
        let ds = Dataset::open_in(store.clone(), Some(self.read_version))?;
        ds.check_writable("compact")?;
        for f in &self.fragments {
            same_as_committed(&ds, f, "the compaction task")?;
        }
        let ids: Vec<u64> = self.fragments.iter().map(|f| f.id).collect();
        let g = ds.execute_compaction_task(&ids, &self.options)?;
        Ok(RewriteResult {
            read_version: self.read_version,
            metrics: CompactionMetrics::of(&g.old_fragments, &g.new_fragments),
            original_fragments: g.old_fragments,
            new_fragments: g.new_fragments,
        })
    }

    /// As JSON, in pylance 14's `CompactionTask.json()` shape.
    pub fn to_json(&self) -> Value {
        json!({
            "task": {"fragments": fragments_json(&self.fragments)},
            "read_version": self.read_version,
            "options": options_json(&self.options),
        })
    }

    /// From [`CompactionTask::to_json`]'s shape (pylance's too).
    pub fn from_json(v: &Value) -> Result<Self> {
        let o = object(v, "compaction task")?;
        let t = o
            .get("task")
            .ok_or_else(|| missing("task", "compaction task"))?;
        Ok(Self {
            read_version: uint(o, "read_version", "compaction task")?,
            fragments: fragments_from(object(t, "compaction task")?, "fragments", "task")?,
            options: options_from_json(o.get("options"))?,
        })
    }
}

impl RewriteResult {
    /// As JSON, in pylance 14's `RewriteResult.json()` shape.
    pub fn to_json(&self) -> Value {
        json!({
            "metrics": self.metrics.to_json(),
            "new_fragments": fragments_json(&self.new_fragments),
            "read_version": self.read_version,
            "original_fragments": fragments_json(&self.original_fragments),
            "row_addrs": null,
        })
    }

    /// From [`RewriteResult::to_json`]'s shape (pylance's too; a result carrying row
    /// address maps, which pylance's index remapping writes, is refused).
    pub fn from_json(v: &Value) -> Result<Self> {
        let o = object(v, "rewrite result")?;
        if o.get("row_addrs").is_some_and(|r| !r.is_null()) {
            return Err(Error::InvalidArgument {
                what: "rewrite result: row_addrs (deferred index remapping) is not supported; \
                       execute the task without defer_index_remap"
                    .into(),
            });
        }
        let original_fragments = fragments_from(o, "original_fragments", "rewrite result")?;
        let new_fragments = fragments_from(o, "new_fragments", "rewrite result")?;
        let metrics = match o.get("metrics") {
            Some(m) if !m.is_null() => CompactionMetrics::from_json(m)?,
            _ => CompactionMetrics::of(&original_fragments, &new_fragments),
        };
        Ok(Self {
            read_version: uint(o, "read_version", "rewrite result")?,
            original_fragments,
            new_fragments,
            metrics,
        })
    }
}

/// Commits `results` (tasks of one plan, read at `read_version`) as one `Rewrite`
/// through [`two_phase::commit`] (then the indexes, see the module docs): the new
/// version and the metrics of what it commits.
/// No result: nothing is committed (the latest version is returned). See the module
/// docs for the checks and the conflict rules.
pub fn commit_compaction(
    store: &Store,
    read_version: u64,
    results: &[RewriteResult],
    params: &CommitParams,
) -> Result<(Dataset, CompactionMetrics)> {
    let mut metrics = CompactionMetrics::default();
    if results.is_empty() {
        return Ok((Dataset::open_in(store.clone(), None)?, metrics));
    }
    let base = Dataset::open_in(store.clone(), Some(read_version))?;
    let mut seen = std::collections::HashSet::new();
    let mut groups = Vec::with_capacity(results.len());
    for (i, r) in results.iter().enumerate() {
        if r.read_version != read_version {
            return Err(Error::InvalidArgument {
                what: format!(
                    "rewrite result {i} was executed on version {}, the plan read version \
                     {read_version}: commit the results of one plan together",
                    r.read_version
                ),
            });
        }
        if r.original_fragments.is_empty() {
            return Err(Error::InvalidArgument {
                what: format!("rewrite result {i} names no original fragment"),
            });
        }
        let mut live = 0u64;
        for f in &r.original_fragments {
            if !seen.insert(f.id) {
                return Err(Error::InvalidArgument {
                    what: format!(
                        "fragment {} is rewritten by two results (rewrite result {i} and \
                         an earlier one): commit each task's result once",
                        f.id
                    ),
                });
            }
            same_as_committed(&base, f, &format!("rewrite result {i}"))?;
            live += f
                .physical_rows
                .saturating_sub(f.deletion_file.as_ref().map_or(0, |d| d.num_deleted_rows));
        }
        let written: u64 = r.new_fragments.iter().map(|f| f.physical_rows).sum();
        if written != live {
            return Err(Error::InvalidArgument {
                what: format!(
                    "rewrite result {i}: its new fragments hold {written} rows, its original \
                     fragments {live} live rows (an edited or foreign result): execute the \
                     task again"
                ),
            });
        }
        if let Some(f) = r.new_fragments.iter().find(|f| f.id != 0) {
            return Err(Error::InvalidArgument {
                what: format!(
                    "rewrite result {i}: new fragment has id {} (new fragments carry id 0 \
                     until committed): a committed fragment is not a task's output",
                    f.id
                ),
            });
        }
        metrics.add(&CompactionMetrics::of(
            &r.original_fragments,
            &r.new_fragments,
        ));
        groups.push(RewriteGroup {
            old_fragments: r.original_fragments.clone(),
            new_fragments: r.new_fragments.clone(),
        });
    }
    let after = two_phase::commit(
        store,
        Operation::Rewrite { groups },
        Some(read_version),
        params,
    )
    .map_err(|e| match e {
        Error::Table(lancer_table::TableError::Conflict { what }) => {
            Error::Table(lancer_table::TableError::Conflict {
                what: format!("{what}{}", changed_since(store, &base, results)),
            })
        }
        e => e,
    })?;
    // the ids the commit gave each result's new fragments (found by their data files)
    let id_of = |nf: &Fragment| {
        let path = nf.files.first().map(|f| f.path.as_str());
        after
            .fragments()
            .iter()
            .find(|f| f.files.first().map(|d| d.path.as_str()) == path)
            .map(|f| f.id)
    };
    let ids: Vec<(Vec<u64>, Vec<u64>)> = results
        .iter()
        .map(|r| {
            (
                r.original_fragments.iter().map(|f| f.id).collect(),
                r.new_fragments.iter().filter_map(id_of).collect(),
            )
        })
        .collect();
    let after = crate::write::evolve::reindex_compacted(&base, after, &ids)?;
    Ok((after, metrics))
}

/// For a conflict: the rewritten fragments a later commit changed or removed, named,
/// with the remedy.
fn changed_since(store: &Store, base: &Dataset, results: &[RewriteResult]) -> String {
    let Ok(latest) = Dataset::open_in(store.clone(), None) else {
        return String::new();
    };
    let mut changed = Vec::new();
    for (i, r) in results.iter().enumerate() {
        for f in &r.original_fragments {
            let now = latest.fragments().iter().find(|l| l.id == f.id);
            if now.is_none_or(|l| l.files != f.files || l.deletion_file != f.deletion_file) {
                changed.push(format!("fragment {} (rewrite result {i})", f.id));
            }
        }
    }
    if changed.is_empty() {
        return String::new();
    }
    format!(
        " (compaction planned on version {}: {} changed or removed since, by version {}); \
         plan the compaction again, or commit only the results of the other tasks",
        base.version(),
        changed.join(", "),
        latest.version()
    )
}

/// `f` must be fragment `f.id` of `ds` as committed (files, rows, deletion file).
fn same_as_committed(ds: &Dataset, f: &Fragment, what: &str) -> Result<()> {
    let c = ds.fragments().iter().find(|c| c.id == f.id);
    match c {
        Some(c)
            if c.files == f.files
                && c.physical_rows == f.physical_rows
                && c.deletion_file == f.deletion_file =>
        {
            Ok(())
        }
        Some(_) => Err(Error::InvalidArgument {
            what: format!(
                "{what}: fragment {} differs from the committed fragment {} of version {} \
                 (its files, rows or deletions; an edited or foreign description): plan the \
                 compaction again",
                f.id,
                f.id,
                ds.version()
            ),
        }),
        None => Err(Error::InvalidArgument {
            what: format!(
                "{what}: fragment {} is not in version {} (a plan of another dataset?): plan \
                 the compaction again",
                f.id,
                ds.version()
            ),
        }),
    }
}

fn fragments_json(frags: &[Fragment]) -> Vec<Value> {
    frags.iter().map(fragment_to_json).collect()
}

fn options_json(o: &CompactionOptions) -> Value {
    json!({
        "target_rows_per_fragment": o.target_rows_per_fragment,
        "max_bytes_per_file": o.max_bytes_per_file,
        "materialize_deletions": o.materialize_deletions,
        "materialize_deletions_threshold": o.materialize_deletions_threshold,
    })
}

/// Options from JSON: the keys [`options_json`] writes (defaults when absent); of
/// pylance's other keys, those that change what is written are refused when set.
fn options_from_json(v: Option<&Value>) -> Result<CompactionOptions> {
    let mut out = CompactionOptions::default();
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return Ok(out);
    };
    let o = object(v, "compaction options")?;
    if let Some(n) = o.get("target_rows_per_fragment").filter(|x| !x.is_null()) {
        out.target_rows_per_fragment = n.as_u64().ok_or_else(|| bad("target_rows_per_fragment"))?;
    }
    if let Some(n) = o.get("max_bytes_per_file").filter(|x| !x.is_null()) {
        out.max_bytes_per_file = Some(n.as_u64().ok_or_else(|| bad("max_bytes_per_file"))?);
    }
    if let Some(b) = o.get("materialize_deletions").filter(|x| !x.is_null()) {
        out.materialize_deletions = b.as_bool().ok_or_else(|| bad("materialize_deletions"))?;
    }
    if let Some(t) = o
        .get("materialize_deletions_threshold")
        .filter(|x| !x.is_null())
    {
        out.materialize_deletions_threshold = t
            .as_f64()
            .ok_or_else(|| bad("materialize_deletions_threshold"))?;
    }
    for key in [
        "defer_index_remap",
        "enable_binary_copy",
        "enable_binary_copy_force",
    ] {
        if o.get(key).and_then(Value::as_bool) == Some(true) {
            return Err(Error::InvalidArgument {
                what: format!("compaction option {key}=true is not supported"),
            });
        }
    }
    check_options(&out)?;
    Ok(out)
}

fn bad(key: &str) -> Error {
    Error::InvalidArgument {
        what: format!("compaction options: {key} has the wrong type"),
    }
}

fn missing(key: &str, what: &str) -> Error {
    Error::InvalidArgument {
        what: format!("{what}: no {key:?} member (not a {what} as json() writes it)"),
    }
}

fn object<'a>(v: &'a Value, what: &str) -> Result<&'a Map<String, Value>> {
    v.as_object().ok_or_else(|| Error::InvalidArgument {
        what: format!("{what}: expected a JSON object"),
    })
}

fn uint(o: &Map<String, Value>, key: &str, what: &str) -> Result<u64> {
    o.get(key)
        .ok_or_else(|| missing(key, what))?
        .as_u64()
        .ok_or_else(|| Error::InvalidArgument {
            what: format!("{what}: {key} is not a non-negative integer"),
        })
}

fn array<'a>(o: &'a Map<String, Value>, key: &str, what: &str) -> Result<&'a Vec<Value>> {
    o.get(key)
        .ok_or_else(|| missing(key, what))?
        .as_array()
        .ok_or_else(|| Error::InvalidArgument {
            what: format!("{what}: {key} is not a list"),
        })
}

fn fragments_from(o: &Map<String, Value>, key: &str, what: &str) -> Result<Vec<Fragment>> {
    array(o, key, what)?
        .iter()
        .map(fragment_from_json)
        .collect()
}

/// Parses JSON text (any of the three types' `to_json`).
pub fn parse_text(text: &str, what: &str) -> Result<Value> {
    serde_json::from_str(text).map_err(|e| Error::InvalidArgument {
        what: format!("{what}: not JSON ({e})"),
    })
}
