//! Compaction: small fragments merged and deletions materialized, planned and committed
//! as pylance's `optimize.compact_files` (docs/evolution-format.md §3.8; reference
//! "Compaction"): fragments are walked in order; one whose deleted share exceeds the
//! threshold is rewritten (even alone), one smaller than the target joins its
//! neighbours; runs of candidates covered by the same indexes form bins, cut into tasks
//! of about the target's rows. Each task's live rows become one new fragment. The
//! commit is two versions, as pylance's: `ReserveFragments` (the new fragments' ids),
//! then `Rewrite` (one group per task).
//!
//! Indexes are not rewritten: their fragment bitmaps keep naming the old fragments
//! (which no longer exist, so their rows are skipped, as after deleting whole
//! fragments) and the new fragments are unindexed until the index is optimized.

use crate::commit::commit;
use crate::dataset::Dataset;
use crate::pb;
use crate::pb::transaction::Operation;
use crate::{Result, TableError};

/// How to compact.
#[derive(Clone, Debug)]
pub struct CompactionOptions {
    /// Rows a fragment should hold (pylance's default 1,048,576).
    pub target_rows_per_fragment: u64,
    /// Rewrite fragments whose deleted share exceeds `materialize_deletions_threshold`.
    pub materialize_deletions: bool,
    /// The deleted share above which a fragment is rewritten on its own (0.1).
    pub materialize_deletions_threshold: f64,
    /// Bytes per new data file at most, about (`None`: the writer's 90 GiB): a task
    /// whose rows exceed it writes several fragments.
    pub max_bytes_per_file: Option<u64>,
}

impl Default for CompactionOptions {
    fn default() -> Self {
        Self {
            target_rows_per_fragment: 1024 * 1024,
            materialize_deletions: true,
            materialize_deletions_threshold: 0.1,
            max_bytes_per_file: None,
        }
    }
}

/// What a compaction did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompactionStats {
    /// Fragments rewritten.
    pub fragments_removed: usize,
    /// Fragments written.
    pub fragments_added: usize,
    /// Data and deletion files the new version no longer uses.
    pub files_removed: usize,
    /// Data files written.
    pub files_added: usize,
    /// Live rows moved.
    pub rows: u64,
    /// Per task: the fragments rewritten and those written in their place.
    pub groups: Vec<(Vec<u64>, Vec<u64>)>,
}

impl CompactionStats {
    /// Counts what `groups` (old fragments, new fragments) remove and add (not
    /// `groups`, which the commit fills in once ids are assigned).
    pub fn add_groups(&mut self, groups: &[pb::transaction::rewrite::RewriteGroup]) {
        for g in groups {
            self.fragments_removed += g.old_fragments.len();
            self.fragments_added += g.new_fragments.len();
            self.files_removed += g
                .old_fragments
                .iter()
                .map(|f| f.files.len() + usize::from(f.deletion_file.is_some()))
                .sum::<usize>();
            self.files_added += g.new_fragments.iter().map(|f| f.files.len()).sum::<usize>();
            self.rows += g.new_fragments.iter().map(|f| f.physical_rows).sum::<u64>();
        }
    }
}

/// Whether index segment `meta` covers fragment `id` (an unreadable bitmap counts as
/// covering nothing).
fn covers(meta: &pb::IndexMetadata, id: u64) -> bool {
    u32::try_from(id).is_ok_and(|id| {
        roaring::RoaringBitmap::deserialize_from(meta.fragment_bitmap.as_slice())
            .is_ok_and(|b| b.contains(id))
    })
}

impl Dataset {
    /// The compaction tasks: each a list of fragment ids (in dataset order) to
    /// rewrite into one fragment. Empty when nothing is worth rewriting.
    pub fn plan_compaction(&self, opts: &CompactionOptions) -> Result<Vec<Vec<u64>>> {
        let indices = self.indices()?;
        let mut frags: Vec<&pb::DataFragment> = self.fragments().iter().collect();
        frags.sort_by_key(|f| f.id);
        // bins: runs of candidates with the same index coverage, with whether a
        // fragment must be rewritten on its own
        let mut bins: Vec<Vec<(&pb::DataFragment, bool)>> = Vec::new();
        let mut current: Vec<(&pb::DataFragment, bool)> = Vec::new();
        let mut current_cover: Option<Vec<Vec<u8>>> = None;
        for f in frags {
            let deleted = f.deletion_file.as_ref().map_or(0, |d| d.num_deleted_rows);
            let share = deleted as f64 / f.physical_rows.max(1) as f64;
            let itself = opts.materialize_deletions
                && opts.materialize_deletions_threshold < 1.0
                && share > opts.materialize_deletions_threshold;
            let neighbours = f.physical_rows < opts.target_rows_per_fragment;
            if !itself && !neighbours {
                bins.push(std::mem::take(&mut current));
                current_cover = None;
                continue;
            }
            let cover: Vec<Vec<u8>> = indices
                .iter()
                .filter(|i| covers(i, f.id))
                .map(|i| i.uuid.as_ref().map(|u| u.uuid.clone()).unwrap_or_default())
                .collect();
            if current_cover.as_ref().is_some_and(|c| *c != cover) {
                bins.push(std::mem::take(&mut current));
            }
            current_cover = Some(cover);
            current.push((f, itself));
        }
        bins.push(current);
        let mut tasks = Vec::new();
        for bin in bins {
            if bin.is_empty() || (bin.len() == 1 && !bin[0].1) {
                continue;
            }
            let live = |f: &pb::DataFragment| {
                f.physical_rows - f.deletion_file.as_ref().map_or(0, |d| d.num_deleted_rows)
            };
            let mut bin_tasks: Vec<Vec<u64>> = Vec::new();
            let mut task: Vec<u64> = Vec::new();
            let mut rows = 0u64;
            let mut rest: u64 = bin.iter().map(|(f, _)| live(f)).sum();
            for (f, _) in &bin {
                task.push(f.id);
                rows += live(f);
                rest -= live(f);
                if rows >= opts.target_rows_per_fragment {
                    if rest >= opts.target_rows_per_fragment {
                        bin_tasks.push(std::mem::take(&mut task));
                        rows = 0;
                    } else {
                        // the rest is too small for a fragment of its own: it joins
                        // this task
                        continue;
                    }
                }
            }
            if !task.is_empty() {
                bin_tasks.push(task);
            }
            tasks.extend(bin_tasks);
        }
        Ok(tasks)
    }

    /// The new data files of one compaction task (fragment ids of this version, in
    /// dataset order, as [`Dataset::plan_compaction`] lists them): the fragments' live
    /// rows (deletions materialized) written as new fragments (id 0), each carrying its
    /// rows' ids and versions when the dataset uses stable row ids. Commits nothing: the
    /// group is for a `Rewrite` commit. A fragment id this version lacks is an error.
    pub fn execute_compaction_task(
        &self,
        task: &[u64],
        opts: &CompactionOptions,
    ) -> Result<pb::transaction::rewrite::RewriteGroup> {
        let stable = self.uses_stable_row_ids();
        let schema = self.schema();
        let ids = crate::write::preorder_schema_ids(self);
        let params = crate::write::WriteParams {
            storage: self.storage_version(),
            max_rows_per_file: usize::try_from(opts.target_rows_per_fragment)
                .unwrap_or(usize::MAX)
                .max(crate::write::WriteParams::default().max_rows_per_file),
            max_bytes_per_file: opts
                .max_bytes_per_file
                .unwrap_or(crate::write::DEFAULT_MAX_BYTES_PER_FILE),
            blobs: crate::blob::BlobWriteOptions {
                bases: self.blob_bases(),
                ..Default::default()
            },
            ..Default::default()
        };
        let olds: Vec<&pb::DataFragment> = task
            .iter()
            .map(|id| {
                self.fragments()
                    .iter()
                    .find(|f| f.id == *id)
                    .ok_or_else(|| TableError::InvalidInput {
                        what: format!(
                            "compaction task names fragment {id}, which version {} does \
                             not have: plan the compaction again",
                            self.version()
                        ),
                    })
            })
            .collect::<Result<_>>()?;
        let batches = olds.iter().map(|f| {
            let runs = self.kept_runs(f)?;
            self.read_runs(f, None, runs.runs())
        });
        let mut new =
            crate::write::write_fragments(self.store(), &schema, batches, &params, Some(ids), &[])?;
        if stable {
            // the rows keep their ids and both versions
            let (mut rid, mut created, mut updated) = (Vec::new(), Vec::new(), Vec::new());
            for f in &olds {
                let (ids, c) = crate::evolution::row_ids_and_created(self, f)?;
                let u = match &f.last_updated_at_version_sequence {
                    Some(pb::data_fragment::LastUpdatedAtVersionSequence::InlineLastUpdatedAtVersions(b)) => {
                        crate::commit::decode_versions(b, f.physical_rows)?
                    }
                    _ => c.clone(),
                };
                for r in self.kept_runs(f)?.runs() {
                    for o in r.clone() {
                        let o = o as usize;
                        rid.push(ids.get(o).copied().ok_or_else(|| {
                            TableError::corrupt(format!("fragment {} lacks row ids", f.id))
                        })?);
                        created.push(c.get(o).copied().unwrap_or(0));
                        updated.push(u.get(o).copied().unwrap_or(0));
                    }
                }
            }
            let mut at = 0usize;
            for f in &mut new {
                let n = f.physical_rows as usize;
                let range = at..(at + n).min(rid.len());
                f.row_id_sequence = Some(pb::data_fragment::RowIdSequence::InlineRowIds(
                    crate::commit::encode_ids(&rid[range.clone()]),
                ));
                f.created_at_version_sequence = Some(
                    pb::data_fragment::CreatedAtVersionSequence::InlineCreatedAtVersions(
                        crate::commit::encode_versions(&created[range.clone()]),
                    ),
                );
                f.last_updated_at_version_sequence = Some(
                    pb::data_fragment::LastUpdatedAtVersionSequence::InlineLastUpdatedAtVersions(
                        crate::commit::encode_versions(&updated[range]),
                    ),
                );
                at += n;
            }
        }
        Ok(pb::transaction::rewrite::RewriteGroup {
            old_fragments: olds.into_iter().cloned().collect(),
            new_fragments: new,
        })
    }

    /// Compacts (see the module documentation): the version after, and what changed.
    /// With nothing to do, no version is committed. `progress(done, tasks)` is called
    /// from the worker threads as tasks finish.
    pub fn compact_files(
        &self,
        opts: &CompactionOptions,
        progress: &(dyn Fn(usize, usize) + Sync),
    ) -> Result<(Dataset, CompactionStats)> {
        self.check_writable("compact")?;
        let tasks = self.plan_compaction(opts)?;
        let mut stats = CompactionStats::default();
        if tasks.is_empty() {
            return Ok((self.at_version(self.version())?, stats));
        }
        // tasks on every core, each writing its own fragment
        let done = std::sync::atomic::AtomicUsize::new(0);
        progress(0, tasks.len());
        let groups = crate::par::try_map(&tasks, |task| {
            let g = self.execute_compaction_task(task, opts)?;
            let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            progress(n, tasks.len());
            Ok(g)
        })?;
        stats.add_groups(&groups);
        let mut groups = groups;
        crate::commit::crash_point("after-data");
        let naming = self.naming();
        let storage = self.storage_label();
        let n: usize = groups.iter().map(|g| g.new_fragments.len()).sum();
        let reserved = commit(
            self.store(),
            Some(self.version()),
            Operation::ReserveFragments(pb::transaction::ReserveFragments {
                num_fragments: u32::try_from(n).unwrap_or(u32::MAX),
            }),
            &storage,
            naming,
        )?;
        // the reserved ids: the ones after the previous highest
        let last = u64::from(reserved.pb.max_fragment_id.unwrap_or(0));
        let mut next = last + 1 - n as u64;
        for g in &mut groups {
            for f in &mut g.new_fragments {
                f.id = next;
                next += 1;
            }
        }
        stats.groups = groups
            .iter()
            .map(|g| {
                let ids = |f: &[pb::DataFragment]| f.iter().map(|x| x.id).collect();
                (ids(&g.old_fragments), ids(&g.new_fragments))
            })
            .collect();
        crate::commit::crash_point("after-reserve");
        let m = commit(
            self.store(),
            Some(self.version()),
            Operation::Rewrite(pb::transaction::Rewrite {
                old_fragments: vec![],
                new_fragments: vec![],
                groups,
                rewritten_indices: vec![],
            }),
            &storage,
            naming,
        )?;
        Ok((self.at_version(m.version())?, stats))
    }
}
