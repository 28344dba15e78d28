//! `merge_insert`: upserts keyed on columns, committed as pylance commits them
//! (docs/evolution-format.md §3.6; reference "Merge insert"): matched rows are written
//! again with the source's values, unmatched source rows inserted, and (optionally)
//! target rows no source row matched deleted. Matched and deleted target rows get
//! deletion vectors; the written rows form new fragments; one `Update` (REWRITE_ROWS)
//! commits it all. A target row matched by two source rows is pylance's "ambiguous
//! merge insert" error. Instead of updating them, matched target rows can be deleted
//! (pylance's `when_matched_delete`), or any match can stop the merge before it
//! commits (`when_matched_fail`).
//!
//! The join hashes the smaller side: a source that fits in [`SOURCE_IN_MEMORY`] bytes is
//! hashed and the target's key column streamed past it (a 100k-row upsert into 10M rows
//! builds a 100k-entry table); a larger source is streamed against a table of the
//! target's live keys instead, so it is never held whole.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::{new_null_array, Array, ArrayRef, BooleanArray, RecordBatch};
use arrow_row::{RowConverter, SortField};
use arrow_schema::{DataType, SchemaRef};
use roaring::{RoaringBitmap, RoaringTreemap};

use crate::dataset::Dataset;
use crate::pb;
use crate::pb::transaction::Operation;
use crate::{Result, TableError};

/// A target-row filter (a batch of target rows → which pass).
pub type RowFilter<'a> = &'a dyn Fn(&RecordBatch) -> Result<BooleanArray>;

/// What a merge does with matched and unmatched rows.
pub struct MergeInsert<'a> {
    /// The key columns (in both the dataset and the source).
    pub on: Vec<String>,
    /// Matched target rows take the source row's values.
    pub update_matched: bool,
    /// Matched target rows are deleted (and not written again); exclusive with
    /// `update_matched` and `fail_on_match`.
    pub delete_matched: bool,
    /// Any matched target row stops the merge with [`TableError::Refused`] naming its
    /// key: nothing is committed. Exclusive with `update_matched` and `delete_matched`.
    pub fail_on_match: bool,
    /// Source rows matching no target row are inserted.
    pub insert_unmatched: bool,
    /// Target rows no source row matched are deleted (those `delete_filter` passes,
    /// all without one).
    pub delete_unmatched_by_source: bool,
    /// Restricts `delete_unmatched_by_source`; sees every column of the target rows.
    pub delete_filter: Option<RowFilter<'a>>,
    /// Source bytes hashed in memory at most (None: [`SOURCE_IN_MEMORY`]); a larger
    /// source is streamed.
    pub source_in_memory: Option<usize>,
    /// With `update_matched`: only pairs this passes are updated (it sees the source
    /// rows and the matching dataset rows, all columns, aligned); the others stay as
    /// they are (pylance's `when_matched_update_all(condition)`).
    pub update_if: Option<PairFilter<'a>>,
    /// Looks source keys up in an index on a key column (pylance's indexed merge):
    /// fragments it covers are read only at the rows it leaves. Used when every key
    /// column has one, the source is held in memory and no unmatched target row is
    /// deleted (that needs every target row), as pylance decides.
    pub key_lookup: Option<KeyLookup<'a>>,
    /// Where the merge's new data files go, one in turn (pylance's
    /// `MergeInsertBuilder.target_bases`; see `WriteParams::target_bases`); deletion
    /// files stay in the dataset's location.
    pub target_bases: Vec<String>,
    /// Every registered base in turn (pylance's `target_all_bases(include_primary)`).
    pub target_all_bases: Option<bool>,
}

/// The rows an index on a key column leaves for a set of key values.
#[derive(Clone, Debug, Default)]
pub struct KeyCandidates {
    /// Fragments for which `rows` holds every row whose key is one of the values.
    pub covered: RoaringBitmap,
    /// Row addresses (a superset: the keys are compared again).
    pub rows: RoaringTreemap,
    /// Which index answered, for reports.
    pub index: String,
}

/// (key column, the source's values of it) → the index's candidate rows, or None
/// when no index on that column answers equality.
pub type KeyLookup<'a> = &'a (dyn Fn(&str, &ArrayRef) -> Result<Option<KeyCandidates>> + Sync);

/// A filter over matched pairs: (source rows, dataset rows) → which to update.
pub type PairFilter<'a> = &'a (dyn Fn(&RecordBatch, &RecordBatch) -> Result<BooleanArray> + Sync);

/// What a merge changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MergeStats {
    /// Source rows inserted.
    pub inserted: u64,
    /// Target rows rewritten with source values.
    pub updated: u64,
    /// Target rows deleted: those no source row matched (`delete_unmatched_by_source`)
    /// and the matched ones (`delete_matched`).
    pub deleted: u64,
    /// The indexes that located the matched rows (empty: the key columns were scanned).
    pub indexes: Vec<String>,
    /// Fragments whose key columns were read whole.
    pub fragments_scanned: u64,
}

/// Hashes integer keys with one multiplication (keys are not attacker-chosen here: a
/// slow, keyed hash cost more than reading the key column).
#[derive(Default, Clone, Copy)]
struct IntHash;

impl std::hash::BuildHasher for IntHash {
    type Hasher = IntHasher;
    fn build_hasher(&self) -> IntHasher {
        IntHasher(0)
    }
}

struct IntHasher(u64);

impl std::hash::Hasher for IntHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_i64(&mut self, v: i64) {
        self.0 = (v as u64 ^ self.0).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// The integer value of an integer key column's row (None for null or other types).
fn int_key(col: &ArrayRef, i: usize) -> Option<i64> {
    use arrow_array::types::*;
    if col.is_null(i) {
        return None;
    }
    Some(match col.data_type() {
        DataType::Int8 => i64::from(col.as_primitive::<Int8Type>().value(i)),
        DataType::Int16 => i64::from(col.as_primitive::<Int16Type>().value(i)),
        DataType::Int32 => i64::from(col.as_primitive::<Int32Type>().value(i)),
        DataType::Int64 => col.as_primitive::<Int64Type>().value(i),
        DataType::UInt8 => i64::from(col.as_primitive::<UInt8Type>().value(i)),
        DataType::UInt16 => i64::from(col.as_primitive::<UInt16Type>().value(i)),
        DataType::UInt32 => i64::from(col.as_primitive::<UInt32Type>().value(i)),
        DataType::UInt64 => col.as_primitive::<UInt64Type>().value(i) as i64,
        _ => return None,
    })
}

fn is_int(t: &DataType) -> bool {
    t.is_integer()
}

/// Keys of a batch's key columns, for lookups: per row None when a key is null.
enum Keys {
    Int(Vec<Option<i64>>),
    Bytes(Vec<Option<Box<[u8]>>>),
}

fn keys_of(cols: &[ArrayRef], conv: Option<&RowConverter>) -> Result<Keys> {
    let n = cols.first().map_or(0, |c| c.len());
    match conv {
        None => Ok(Keys::Int((0..n).map(|i| int_key(&cols[0], i)).collect())),
        Some(conv) => {
            let rows = conv.convert_columns(cols)?;
            Ok(Keys::Bytes(
                (0..n)
                    .map(|i| {
                        (!cols.iter().any(|c| c.is_null(i))).then(|| rows.row(i).as_ref().into())
                    })
                    .collect(),
            ))
        }
    }
}

/// A key as pylance's ambiguity error shows it: `(id = 7)`.
fn key_text(on: &[String], cols: &[ArrayRef], i: usize) -> String {
    let parts: Vec<String> = on
        .iter()
        .zip(cols)
        .map(|(name, c)| {
            let v = arrow_cast::display::array_value_to_string(c, i).unwrap_or_default();
            format!("{name} = {v}")
        })
        .collect();
    format!("({})", parts.join(" AND "))
}

/// Source bytes hashed in memory at most; a larger source is streamed.
pub const SOURCE_IN_MEMORY: usize = 256 << 20;

/// What a merge works from: how source columns map onto the dataset's, the keys.
struct Plan {
    schema: SchemaRef,
    /// Per dataset column: its source column, if the source has it.
    from_source: Vec<Option<usize>>,
    /// Source columns of the keys.
    key_src: Vec<usize>,
    /// Row encoder of the keys (None: one integer key).
    conv: Option<RowConverter>,
    need_target_values: bool,
    /// Where new data files go (empty: the dataset's location).
    targets: Vec<crate::write::Target>,
}

/// Hashes of one side's keys.
enum Side<V> {
    Int(HashMap<i64, V, IntHash>),
    Bytes(HashMap<Box<[u8]>, V>),
}

impl<V> Side<V> {
    fn new(int: bool, capacity: usize) -> Self {
        if int {
            Side::Int(HashMap::with_capacity_and_hasher(capacity, IntHash))
        } else {
            Side::Bytes(HashMap::with_capacity(capacity))
        }
    }

    /// The value of row `i`'s key (None for a null key).
    fn get(&self, keys: &Keys, i: usize) -> Option<&V> {
        match (self, keys) {
            (Side::Int(m), Keys::Int(k)) => k[i].and_then(|k| m.get(&k)),
            (Side::Bytes(m), Keys::Bytes(k)) => k[i].as_ref().and_then(|k| m.get(k)),
            _ => None,
        }
    }

    /// Inserts row `i`'s key (not a null one) with `v`, or hands the existing value to
    /// `dup`.
    fn put(&mut self, keys: &Keys, i: usize, v: V, dup: impl FnOnce(&mut V, V)) {
        use std::collections::hash_map::Entry;
        match (self, keys) {
            (Side::Int(m), Keys::Int(k)) => {
                if let Some(k) = k[i] {
                    match m.entry(k) {
                        Entry::Vacant(e) => {
                            e.insert(v);
                        }
                        Entry::Occupied(mut e) => dup(e.get_mut(), v),
                    }
                }
            }
            (Side::Bytes(m), Keys::Bytes(k)) => {
                if let Some(k) = &k[i] {
                    match m.entry(k.clone()) {
                        Entry::Vacant(e) => {
                            e.insert(v);
                        }
                        Entry::Occupied(mut e) => dup(e.get_mut(), v),
                    }
                }
            }
            _ => {}
        }
    }
}

/// What a join wrote: the new fragments, the dataset rows any source row matched, those
/// rewritten (their old copies to delete), and the counts.
type Merged = (
    Vec<pb::DataFragment>,
    RoaringTreemap,
    RoaringTreemap,
    MergeStats,
);

/// A source row (batch, row).
type SourceRow = (u32, u32);

/// A key's source rows: the first, and any more.
type SourceRows = (SourceRow, Vec<SourceRow>);

/// A match when the merge was asked to fail on one (pylance's wording, then the remedy).
fn matched_fails(on: &[String], kcols: &[ArrayRef], i: usize) -> TableError {
    // pylance's form: `id = 2, name = "a"`
    let key: Vec<String> = on
        .iter()
        .zip(kcols)
        .map(|(name, c)| {
            let v = arrow_cast::display::array_value_to_string(c, i).unwrap_or_default();
            match c.data_type() {
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
                    format!("{name} = \"{v}\"")
                }
                _ => format!("{name} = {v}"),
            }
        })
        .collect();
    let key = key.join(", ");
    TableError::Refused {
        what: format!(
            "Merge insert failed: found matching row with key values: {key} (when_matched_fail: \
             the source has a key the dataset already holds; nothing was committed: drop such \
             rows from the source or choose another action for matched rows)"
        ),
    }
}

fn ambiguous(on: &[String], kcols: &[ArrayRef], i: usize) -> TableError {
    TableError::invalid(format!(
        "Ambiguous merge inserts are prohibited: multiple source rows match the same target row on {}. Please ensure each target row is matched by at most one source row.",
        key_text(on, kcols, i)
    ))
}

impl Dataset {
    /// Merges `source` (batches of `source_schema`: the key columns and any of the
    /// dataset's columns, same types) into the dataset as `spec` says; see the module
    /// documentation. Missing columns of a matched row keep the target's values; of an
    /// inserted row are null.
    pub fn merge_insert(
        &self,
        spec: &MergeInsert<'_>,
        source_schema: SchemaRef,
        source: impl IntoIterator<Item = Result<RecordBatch>>,
    ) -> Result<(Dataset, MergeStats)> {
        let (op, stats) = self.merge_insert_uncommitted(spec, source_schema, source)?;
        Ok((self.commit_op(op)?, stats))
    }

    /// [`Dataset::merge_insert`] without the commit (pylance's
    /// `MergeInsertBuilder.execute_uncommitted`): the new data and deletion files are
    /// written and the `Update` operation that commits them returned, read at this
    /// version.
    pub fn merge_insert_uncommitted(
        &self,
        spec: &MergeInsert<'_>,
        source_schema: SchemaRef,
        source: impl IntoIterator<Item = Result<RecordBatch>>,
    ) -> Result<(Operation, MergeStats)> {
        self.check_writable("merge into")?;
        let matched_actions = [spec.update_matched, spec.delete_matched, spec.fail_on_match];
        if matched_actions.iter().filter(|&&a| a).count() > 1 {
            return Err(TableError::invalid(
                "a merge does one thing with matched rows: update them, delete them or fail; \
                 ask for one",
            ));
        }
        let plan = self.merge_plan(spec, &source_schema)?;
        // the source, hashed whole when it is small
        let mut source = source.into_iter();
        let mut held = Vec::new();
        let mut bytes = 0usize;
        let mut small = true;
        for b in source.by_ref() {
            let b = b?;
            bytes += b.get_array_memory_size();
            held.push(b);
            if bytes > spec.source_in_memory.unwrap_or(SOURCE_IN_MEMORY) {
                small = false;
                break;
            }
        }
        let (new_fragments, matched, mut rewritten, mut stats) = if small {
            self.merge_small_source(spec, &plan, &held)?
        } else {
            self.merge_streamed(spec, &plan, held.into_iter().map(Ok).chain(source))?
        };
        if spec.delete_matched {
            // deleted as the rewritten rows are, without a new copy
            rewritten |= &matched;
            stats.deleted += matched.len();
        }
        // deletion vectors: rewritten rows, and unmatched target rows when asked
        let by_frag: HashMap<u32, &RoaringBitmap> = matched.bitmaps().collect();
        let rewritten_by_frag: HashMap<u32, &RoaringBitmap> = rewritten.bitmaps().collect();
        let mut updated = Vec::new();
        let mut removed = Vec::new();
        for frag in self.fragments() {
            let fid = frag.id;
            let mut del: RoaringBitmap = self.deletions(frag)?;
            let before = del.len();
            let hit = u32::try_from(fid).ok().and_then(|f| by_frag.get(&f));
            if let Some(b) = u32::try_from(fid)
                .ok()
                .and_then(|f| rewritten_by_frag.get(&f))
            {
                del |= *b;
            }
            if spec.delete_unmatched_by_source {
                let runs = self.kept_runs(frag)?;
                let mask = match spec.delete_filter {
                    Some(f) => Some(f(&self.read_runs(frag, None, runs.runs())?)?),
                    None => None,
                };
                let mut k = 0usize;
                for r in runs.runs() {
                    for off in r.clone() {
                        let pass = mask.as_ref().is_none_or(|m| m.is_valid(k) && m.value(k));
                        if pass && !hit.is_some_and(|b| b.contains(off as u32)) {
                            del.insert(off as u32);
                            stats.deleted += 1;
                        }
                        k += 1;
                    }
                }
            }
            if del.len() == before {
                continue;
            }
            self.record_deletions(frag, &del, &mut updated, &mut removed)?;
        }
        let all_ids: Vec<u32> = self
            .manifest()
            .pb
            .fields
            .iter()
            .filter_map(|f| u32::try_from(f.id).ok())
            .collect();
        let op = Operation::Update(pb::transaction::Update {
            removed_fragment_ids: removed,
            updated_fragments: updated,
            new_fragments,
            fields_modified: vec![],
            fields_for_preserving_frag_bitmap: all_ids,
            update_mode: pb::transaction::UpdateMode::RewriteRows as i32,
        });
        Ok((op, stats))
    }

    /// Checks the source against the dataset and the keys; how columns map.
    fn merge_plan(&self, spec: &MergeInsert<'_>, source_schema: &SchemaRef) -> Result<Plan> {
        if spec.on.is_empty() {
            return Err(TableError::invalid(
                "merge_insert needs at least one key column (on)",
            ));
        }
        let schema = self.schema();
        let mut from_source: Vec<Option<usize>> = Vec::with_capacity(schema.fields().len());
        for f in schema.fields() {
            match source_schema.index_of(f.name()) {
                Ok(i) => {
                    let t = source_schema.field(i).data_type();
                    if t != f.data_type() {
                        return Err(TableError::invalid(format!(
                            "source column {:?} is {t}, the dataset's is {}",
                            f.name(),
                            f.data_type()
                        )));
                    }
                    from_source.push(Some(i));
                }
                Err(_) => from_source.push(None),
            }
        }
        for f in source_schema.fields() {
            if schema.index_of(f.name()).is_err() {
                return Err(TableError::invalid(format!(
                    "source column {:?} is not in the dataset",
                    f.name()
                )));
            }
        }
        let mut key_src = Vec::new();
        let mut key_types = Vec::new();
        for k in &spec.on {
            let t = schema.index_of(k).map_err(|_| {
                TableError::invalid(format!("key column {k:?} is not in the dataset"))
            })?;
            let s = source_schema.index_of(k).map_err(|_| {
                TableError::invalid(format!("key column {k:?} is missing from the source"))
            })?;
            key_src.push(s);
            key_types.push(schema.field(t).data_type().clone());
        }
        if spec.insert_unmatched {
            if let Some(f) = schema
                .fields()
                .iter()
                .zip(&from_source)
                .find(|(f, s)| s.is_none() && !f.is_nullable())
            {
                return Err(TableError::invalid(format!(
                    "inserted rows need column {:?} (not nullable), which the source lacks",
                    f.0.name()
                )));
            }
        }
        let conv = if key_types.len() == 1 && is_int(&key_types[0]) {
            None
        } else {
            Some(RowConverter::new(
                key_types
                    .iter()
                    .map(|t| SortField::new(t.clone()))
                    .collect(),
            )?)
        };
        let targets = self.write_targets(&crate::write::WriteParams {
            target_bases: spec.target_bases.clone(),
            target_all_bases: spec.target_all_bases,
            ..Default::default()
        })?;
        Ok(Plan {
            targets,
            need_target_values: from_source.iter().any(Option::is_none),
            schema,
            from_source,
            key_src,
            conv,
        })
    }

    /// The dataset's rows for `b`'s rows `update_rows` (matching the targets
    /// `update_targets`) then `insert_rows`: source values, target values for columns
    /// the source lacks (updates), nulls (inserts).
    fn merged_rows(
        &self,
        plan: &Plan,
        b: &RecordBatch,
        update_rows: &[u32],
        update_targets: &[u64],
        insert_rows: &[u32],
    ) -> Result<Option<RecordBatch>> {
        let rows: Vec<u32> = update_rows.iter().chain(insert_rows).copied().collect();
        if rows.is_empty() {
            return Ok(None);
        }
        let idx = arrow_array::UInt32Array::from(rows);
        let picked = arrow_select::take::take_record_batch(b, &idx)?;
        let target = if plan.need_target_values && !update_targets.is_empty() {
            Some(self.take_addresses_all(update_targets)?)
        } else {
            None
        };
        let mut cols: Vec<ArrayRef> = Vec::with_capacity(plan.schema.fields().len());
        for (fi, f) in plan.schema.fields().iter().enumerate() {
            let c = match plan.from_source[fi] {
                Some(si) => picked.column(si).clone(),
                None => {
                    let nulls = new_null_array(f.data_type(), insert_rows.len());
                    match &target {
                        Some(t) => {
                            crate::dataset::concat(&[t.column(fi).as_ref(), nulls.as_ref()])?
                        }
                        None => new_null_array(f.data_type(), picked.num_rows()),
                    }
                }
            };
            cols.push(c);
        }
        Ok(Some(RecordBatch::try_new(plan.schema.clone(), cols)?))
    }

    fn write_merged(
        &self,
        plan: &Plan,
        batches: impl IntoIterator<Item = Result<RecordBatch>>,
    ) -> Result<Vec<pb::DataFragment>> {
        let mut params = crate::write::WriteParams {
            storage: self.storage_version(),
            ..Default::default()
        };
        params.blobs.bases = self.blob_bases();
        let ids = crate::write::preorder_schema_ids(self);
        crate::write::write_fragments(
            self.store(),
            &plan.schema,
            batches,
            &params,
            Some(ids),
            &plan.targets,
        )
    }

    /// A source held in memory: its keys hashed, the target's key column streamed past.
    fn merge_small_source(
        &self,
        spec: &MergeInsert<'_>,
        plan: &Plan,
        source: &[RecordBatch],
    ) -> Result<Merged> {
        let rows: usize = source.iter().map(RecordBatch::num_rows).sum();
        // key → its source rows (batch, row), first one inline
        let mut side: Side<SourceRows> = Side::new(plan.conv.is_none(), rows);
        let mut kcols_of = Vec::with_capacity(source.len());
        for (bi, b) in source.iter().enumerate() {
            let kcols: Vec<ArrayRef> = plan.key_src.iter().map(|&i| b.column(i).clone()).collect();
            let keys = keys_of(&kcols, plan.conv.as_ref())?;
            for i in 0..b.num_rows() {
                side.put(&keys, i, ((bi as u32, i as u32), Vec::new()), |e, v| {
                    e.1.push(v.0)
                });
            }
            kcols_of.push(kcols);
        }
        // the target's live keys against it
        let on: Vec<&str> = spec.on.iter().map(String::as_str).collect();
        let mut matched = RoaringTreemap::new();
        let mut src_matched: Vec<Vec<bool>> =
            source.iter().map(|b| vec![false; b.num_rows()]).collect();
        // per source batch: (row, target) pairs of updates
        let mut pairs: Vec<Vec<(u32, u64)>> = vec![Vec::new(); source.len()];
        // fragments an index on the keys covers are read at its candidate rows only
        let candidates = self.key_candidates(spec, plan, source)?;
        let covers = |fid: u64| {
            candidates
                .as_ref()
                .is_some_and(|c| u32::try_from(fid).is_ok_and(|f| c.covered.contains(f)))
        };
        // each fragment's live keys probed on every core: (target row, its source rows)
        let hits = crate::par::try_map(self.fragments(), |frag| {
            let kept;
            let runs: std::borrow::Cow<'_, [std::ops::Range<u64>]> = match &candidates {
                Some(c) if covers(frag.id) => {
                    std::borrow::Cow::Owned(self.candidate_runs(frag, &c.rows)?)
                }
                _ => {
                    kept = self.kept_runs(frag)?;
                    std::borrow::Cow::Borrowed(kept.runs())
                }
            };
            let b = self.read_runs(frag, Some(&on), &runs)?;
            let mut offsets = runs.iter().flat_map(|r| r.clone());
            let mut out = Vec::new();
            // an int64 key probed straight from the column (no key vector: at 1M rows
            // a fragment it cost more in fresh pages than the probes)
            if let (Side::Int(m), Some(col)) = (
                &side,
                b.column(0)
                    .as_primitive_opt::<arrow_array::types::Int64Type>(),
            ) {
                for (i, &k) in col.values().iter().enumerate() {
                    let off = offsets
                        .next()
                        .ok_or_else(|| TableError::corrupt("a live row outside its fragment"))?;
                    if col.is_valid(i) {
                        if let Some(rows) = m.get(&k) {
                            out.push(((frag.id << 32) | off, rows));
                        }
                    }
                }
                return Ok(out);
            }
            let keys = keys_of(b.columns(), plan.conv.as_ref())?;
            for i in 0..b.num_rows() {
                let off = offsets
                    .next()
                    .ok_or_else(|| TableError::corrupt("a live row outside its fragment"))?;
                if let Some(rows) = side.get(&keys, i) {
                    out.push(((frag.id << 32) | off, rows));
                }
            }
            Ok(out)
        })?;
        let mut hits: Vec<_> = hits.into_iter().flatten().collect();
        if spec.fail_on_match {
            // the first matched row in dataset order
            hits.sort_unstable_by_key(|h| h.0);
            if let Some((_, (first, _))) = hits.first() {
                return Err(matched_fails(
                    &spec.on,
                    &kcols_of[first.0 as usize],
                    first.1 as usize,
                ));
            }
        }
        for (target, (first, more)) in hits {
            if (spec.update_matched || spec.delete_matched) && !more.is_empty() {
                return Err(ambiguous(
                    &spec.on,
                    &kcols_of[first.0 as usize],
                    first.1 as usize,
                ));
            }
            for &(bi, ri) in std::iter::once(first).chain(more) {
                src_matched[bi as usize][ri as usize] = true;
                if spec.update_matched {
                    pairs[bi as usize].push((ri, target));
                }
            }
            matched.insert(target);
        }
        let mut stats = MergeStats {
            fragments_scanned: self.fragments().iter().filter(|f| !covers(f.id)).count() as u64,
            indexes: candidates.map(|c| vec![c.index]).unwrap_or_default(),
            ..Default::default()
        };
        // updated rows first, then inserted ones: with stable row ids the updated rows
        // keep their ids (a prefix of the rows written) and inserts get fresh ones at
        // commit, as pylance writes them
        let stable = self.uses_stable_row_ids();
        let mut carried_ids: Vec<u64> = Vec::new();
        let mut carried_created: Vec<u64> = Vec::new();
        let mut known = RowIdCache::new();
        let mut out = Vec::new();
        let mut rewritten = RoaringTreemap::new();
        for (bi, b) in source.iter().enumerate() {
            let (mut update_rows, mut update_targets): (Vec<u32>, Vec<u64>) =
                pairs[bi].iter().copied().unzip();
            self.keep_updates(spec, b, &mut update_rows, &mut update_targets)?;
            rewritten.extend(update_targets.iter().copied());
            stats.updated += update_rows.len() as u64;
            if stable {
                for &t in &update_targets {
                    let (id, created) = self.row_id_of(t, &mut known)?;
                    carried_ids.push(id);
                    carried_created.push(created);
                }
            }
            if let Some(r) = self.merged_rows(plan, b, &update_rows, &update_targets, &[])? {
                out.push(Ok(r));
            }
        }
        for (bi, b) in source.iter().enumerate() {
            let insert_rows: Vec<u32> = if spec.insert_unmatched {
                (0..b.num_rows() as u32)
                    .filter(|&r| !src_matched[bi][r as usize])
                    .collect()
            } else {
                Vec::new()
            };
            stats.inserted += insert_rows.len() as u64;
            if let Some(r) = self.merged_rows(plan, b, &[], &[], &insert_rows)? {
                out.push(Ok(r));
            }
        }
        let mut frags = self.write_merged(plan, out)?;
        if stable {
            crate::evolution::carry_rows(&mut frags, &carried_ids, &carried_created);
        }
        Ok((frags, matched, rewritten, stats))
    }

    /// The rows indexes on the key columns leave for `source`'s keys (None: some key
    /// column has no index answering equality, or the merge deletes unmatched rows).
    fn key_candidates(
        &self,
        spec: &MergeInsert<'_>,
        plan: &Plan,
        source: &[RecordBatch],
    ) -> Result<Option<KeyCandidates>> {
        let Some(lookup) = spec.key_lookup else {
            return Ok(None);
        };
        if spec.delete_unmatched_by_source || source.iter().all(|b| b.num_rows() == 0) {
            return Ok(None);
        }
        let mut acc: Option<KeyCandidates> = None;
        for (k, &si) in spec.on.iter().zip(&plan.key_src) {
            let cols: Vec<&dyn Array> = source.iter().map(|b| b.column(si).as_ref()).collect();
            let values = crate::dataset::concat(&cols)?;
            let Some(c) = lookup(k, &values)? else {
                return Ok(None);
            };
            acc = Some(match acc {
                None => c,
                Some(a) => {
                    let covered = &a.covered & &c.covered;
                    let rows = RoaringTreemap::from_bitmaps(
                        (a.rows & c.rows)
                            .bitmaps()
                            .filter(|(hi, _)| covered.contains(*hi))
                            .map(|(hi, b)| (hi, b.clone())),
                    );
                    KeyCandidates {
                        covered,
                        rows,
                        index: format!("{}, {}", a.index, c.index),
                    }
                }
            });
        }
        Ok(acc)
    }

    /// The live rows of `frag` among `rows` (addresses), as ascending runs.
    fn candidate_runs(
        &self,
        frag: &pb::DataFragment,
        rows: &RoaringTreemap,
    ) -> Result<Vec<std::ops::Range<u64>>> {
        let Some(hi) = u32::try_from(frag.id).ok() else {
            return Ok(Vec::new());
        };
        let Some((_, mine)) = rows.bitmaps().find(|(h, _)| *h == hi) else {
            return Ok(Vec::new());
        };
        let del = self.deleted(frag)?;
        let mut out: Vec<std::ops::Range<u64>> = Vec::new();
        for o in mine.iter().map(u64::from) {
            if o >= frag.physical_rows || del.as_ref().is_some_and(|d| d.rows.contains(o as u32)) {
                continue;
            }
            match out.last_mut() {
                Some(r) if r.end == o => r.end = o + 1,
                _ => out.push(o..o + 1),
            }
        }
        Ok(out)
    }

    /// A source too large to hold: the target's live keys hashed, the source streamed
    /// against them (each batch's rows written as it comes).
    fn merge_streamed(
        &self,
        spec: &MergeInsert<'_>,
        plan: &Plan,
        source: impl Iterator<Item = Result<RecordBatch>>,
    ) -> Result<Merged> {
        let on: Vec<&str> = spec.on.iter().map(String::as_str).collect();
        let live_rows = usize::try_from(self.count_rows()).unwrap_or(0);
        // key → first target row; further target rows of a key under the first
        let mut side: Side<u64> = Side::new(plan.conv.is_none(), live_rows);
        let mut more: HashMap<u64, Vec<u64>> = HashMap::new();
        for frag in self.fragments() {
            let runs = self.kept_runs(frag)?;
            let b = self.read_runs(frag, Some(&on), runs.runs())?;
            let keys = keys_of(b.columns(), plan.conv.as_ref())?;
            let mut offsets = runs.runs().iter().flat_map(|r| r.clone());
            for i in 0..b.num_rows() {
                let off = offsets
                    .next()
                    .ok_or_else(|| TableError::corrupt("a live row outside its fragment"))?;
                side.put(&keys, i, (frag.id << 32) | off, |first, a| {
                    more.entry(*first).or_default().push(a)
                });
            }
        }
        let matched = RefCell::new(RoaringTreemap::new());
        let rewritten = RefCell::new(RoaringTreemap::new());
        let stats = RefCell::new(MergeStats::default());
        let failed = Cell::new(false);
        // With stable row ids, updated rows keep their ids and inserted rows get fresh
        // ones at commit: the updated rows are written as the source streams (their
        // ids and created-at versions gathered in order), the inserted ones spilled to
        // a scratch file and written after them.
        let stable = self.uses_stable_row_ids();
        let carried: RefCell<(Vec<u64>, Vec<u64>)> = RefCell::default();
        let known: RefCell<RowIdCache> = RefCell::default();
        let spill: RefCell<Option<Spill>> = RefCell::new(None);
        let process = |b: RecordBatch| -> Result<Option<RecordBatch>> {
            let kcols: Vec<ArrayRef> = plan.key_src.iter().map(|&i| b.column(i).clone()).collect();
            let keys = keys_of(&kcols, plan.conv.as_ref())?;
            let mut update_rows: Vec<u32> = Vec::new();
            let mut update_targets: Vec<u64> = Vec::new();
            let mut insert_rows: Vec<u32> = Vec::new();
            let mut m = matched.borrow_mut();
            for i in 0..b.num_rows() {
                match side.get(&keys, i) {
                    Some(&first) => {
                        let rest = more.get(&first).map_or(&[][..], Vec::as_slice);
                        if spec.fail_on_match {
                            return Err(matched_fails(&spec.on, &kcols, i));
                        }
                        for &t in std::iter::once(&first).chain(rest) {
                            if !m.insert(t) && (spec.update_matched || spec.delete_matched) {
                                return Err(ambiguous(&spec.on, &kcols, i));
                            }
                            if spec.update_matched {
                                update_rows.push(i as u32);
                                update_targets.push(t);
                            }
                        }
                    }
                    None if spec.insert_unmatched => insert_rows.push(i as u32),
                    None => {}
                }
            }
            drop(m);
            self.keep_updates(spec, &b, &mut update_rows, &mut update_targets)?;
            rewritten
                .borrow_mut()
                .extend(update_targets.iter().copied());
            let mut s = stats.borrow_mut();
            s.updated += update_rows.len() as u64;
            s.inserted += insert_rows.len() as u64;
            if !stable {
                return self.merged_rows(plan, &b, &update_rows, &update_targets, &insert_rows);
            }
            let mut c = carried.borrow_mut();
            let mut k = known.borrow_mut();
            for &t in &update_targets {
                let (id, created) = self.row_id_of(t, &mut k)?;
                c.0.push(id);
                c.1.push(created);
            }
            if let Some(ins) = self.merged_rows(plan, &b, &[], &[], &insert_rows)? {
                let mut sp = spill.borrow_mut();
                if sp.is_none() {
                    *sp = Some(Spill::new()?);
                }
                if let Some(sp) = sp.as_mut() {
                    sp.put(&ins)?;
                }
            }
            self.merged_rows(plan, &b, &update_rows, &update_targets, &[])
        };
        let outputs = source.filter_map(|b| {
            if failed.get() {
                return None;
            }
            match b.and_then(&process) {
                Ok(Some(out)) => Some(Ok(out)),
                Ok(None) => None,
                Err(e) => {
                    // the writer stops at the error and reports it
                    failed.set(true);
                    Some(Err(e))
                }
            }
        });
        let mut frags = self.write_merged(plan, outputs)?;
        if stable {
            let (ids, created) = carried.into_inner();
            crate::evolution::carry_rows(&mut frags, &ids, &created);
            if let Some(sp) = spill.into_inner() {
                frags.extend(self.write_merged(plan, sp.batches())?);
            }
        }
        let mut stats = stats.into_inner();
        stats.fragments_scanned = self.fragments().len() as u64;
        Ok((frags, matched.into_inner(), rewritten.into_inner(), stats))
    }

    /// The stable row id and created-at version of the row at address `t` (each
    /// fragment's sequences decoded once into `known`).
    fn row_id_of(&self, t: u64, known: &mut RowIdCache) -> Result<(u64, u64)> {
        let fid = t >> 32;
        if let std::collections::hash_map::Entry::Vacant(e) = known.entry(fid) {
            let frag = self
                .fragments()
                .iter()
                .find(|f| f.id == fid)
                .ok_or_else(|| TableError::corrupt(format!("no fragment {fid}")))?;
            e.insert(crate::evolution::row_ids_and_created(self, frag)?);
        }
        let (ids, created) = &known[&fid];
        let off = (t & 0xFFFF_FFFF) as usize;
        let id = ids
            .get(off)
            .copied()
            .ok_or_else(|| TableError::corrupt(format!("fragment {fid} lacks row ids")))?;
        Ok((id, created.get(off).copied().unwrap_or(0)))
    }

    /// Keeps the (source row, dataset row) pairs `spec.update_if` passes.
    fn keep_updates(
        &self,
        spec: &MergeInsert<'_>,
        b: &RecordBatch,
        rows: &mut Vec<u32>,
        targets: &mut Vec<u64>,
    ) -> Result<()> {
        let Some(cond) = spec.update_if else {
            return Ok(());
        };
        if rows.is_empty() {
            return Ok(());
        }
        let src = arrow_select::take::take_record_batch(
            b,
            &arrow_array::UInt32Array::from(rows.clone()),
        )?;
        let tgt = self.take_addresses_all(targets)?;
        let mask = cond(&src, &tgt)?;
        if mask.len() != rows.len() {
            return Err(TableError::corrupt(
                "the update condition returned the wrong number of rows",
            ));
        }
        let mut k = 0;
        rows.retain(|_| {
            k += 1;
            mask.is_valid(k - 1) && mask.value(k - 1)
        });
        let mut k = 0;
        targets.retain(|_| {
            k += 1;
            mask.is_valid(k - 1) && mask.value(k - 1)
        });
        Ok(())
    }

    /// Every column of the rows at `addrs` (row addresses), in that order: each
    /// fragment read once, for its rows in runs.
    fn take_addresses_all(&self, addrs: &[u64]) -> Result<RecordBatch> {
        let mut by_frag: std::collections::BTreeMap<u64, Vec<u64>> = Default::default();
        for &a in addrs {
            by_frag.entry(a >> 32).or_default().push(a & 0xFFFF_FFFF);
        }
        let mut parts = Vec::with_capacity(by_frag.len());
        // (part, row in part) of each address
        let mut at: HashMap<u64, (usize, usize)> = HashMap::with_capacity(addrs.len());
        for (fid, mut offs) in by_frag {
            let frag = self
                .fragments()
                .iter()
                .find(|f| f.id == fid)
                .ok_or_else(|| TableError::corrupt(format!("no fragment {fid}")))?;
            offs.sort_unstable();
            offs.dedup();
            let mut runs: Vec<std::ops::Range<u64>> = Vec::new();
            for (k, &o) in offs.iter().enumerate() {
                at.insert((fid << 32) | o, (parts.len(), k));
                match runs.last_mut() {
                    Some(r) if r.end == o => r.end = o + 1,
                    _ => runs.push(o..o + 1),
                }
            }
            parts.push(self.read_runs(frag, None, &runs)?);
        }
        let order: Vec<(usize, usize)> = addrs.iter().map(|a| at[a]).collect();
        let refs: Vec<&RecordBatch> = parts.iter().collect();
        Ok(arrow_select::interleave::interleave_record_batch(
            &refs, &order,
        )?)
    }
}

/// Per fragment id: its rows' stable ids and created-at versions.
type RowIdCache = HashMap<u64, (std::sync::Arc<Vec<u64>>, Vec<u64>)>;

/// Rows set aside on local scratch space (Arrow IPC, one stream per batch) while a
/// large merge streams, read back in order.
struct Spill {
    _dir: lancer_io::scratch::Scratch,
    file: lancer_io::scratch::ScratchFile,
    parts: Vec<(u64, usize)>,
}

impl Spill {
    fn new() -> Result<Spill> {
        let dir = lancer_io::scratch::Scratch::new("merge-inserts")?;
        let file = dir.file("inserted.arrows")?;
        Ok(Spill {
            _dir: dir,
            file,
            parts: Vec::new(),
        })
    }

    fn put(&mut self, b: &RecordBatch) -> Result<()> {
        let mut w = arrow_ipc::writer::StreamWriter::try_new(Vec::new(), &b.schema())?;
        w.write(b)?;
        w.finish()?;
        let bytes = w.into_inner()?;
        let at = self.file.append(&bytes)?;
        self.parts.push((at, bytes.len()));
        Ok(())
    }

    fn batches(&self) -> impl Iterator<Item = Result<RecordBatch>> + '_ {
        self.parts.iter().flat_map(move |&(at, len)| {
            let read = self
                .file
                .read_at(at, len)
                .map_err(TableError::from)
                .and_then(|bytes| {
                    arrow_ipc::reader::StreamReader::try_new(std::io::Cursor::new(bytes), None)?
                        .map(|b| b.map_err(TableError::from))
                        .collect::<Result<Vec<_>>>()
                });
            match read {
                Ok(v) => v.into_iter().map(Ok).collect::<Vec<_>>(),
                Err(e) => vec![Err(e)],
            }
        })
    }
}
