//! `merge_insert`: upserts keyed on columns, committed as pylance commits them
//! (docs/evolution-format.md §3.6; reference "Merge insert"): the target's live keys are
//! read into a hash table (the key columns only), the source is streamed against it —
//! matched rows are written again with the source's values, unmatched source rows
//! inserted, and (optionally) target rows no source row matched deleted. Matched and
//! deleted target rows get deletion vectors; the written rows form new fragments; one
//! `Update` (REWRITE_ROWS) commits it all. A target row matched by two source rows is
//! pylance's "ambiguous merge insert" error.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::{new_null_array, Array, ArrayRef, BooleanArray, RecordBatch};
use arrow_row::{RowConverter, SortField};
use arrow_schema::{DataType, SchemaRef};
use roaring::{RoaringBitmap, RoaringTreemap};

use crate::commit::{commit, Naming};
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
    /// Source rows matching no target row are inserted.
    pub insert_unmatched: bool,
    /// Target rows no source row matched are deleted (those `delete_filter` passes,
    /// all without one).
    pub delete_unmatched_by_source: bool,
    /// Restricts `delete_unmatched_by_source`; sees every column of the target rows.
    pub delete_filter: Option<RowFilter<'a>>,
}

/// What a merge changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MergeStats {
    /// Source rows inserted.
    pub inserted: u64,
    /// Target rows rewritten with source values.
    pub updated: u64,
    /// Target rows deleted because no source row matched them.
    pub deleted: u64,
}

fn invalid(what: impl Into<String>) -> TableError {
    TableError::InvalidInput { what: what.into() }
}

/// Target rows (addresses) by key: one integer key column, or any keys row-encoded.
enum KeyMap {
    Int(HashMap<i64, Vec<u64>>),
    Bytes(HashMap<Box<[u8]>, Vec<u64>>),
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
        self.check_writable("merge into")?;
        if self.uses_stable_row_ids() {
            return Err(invalid(
                "merging into a dataset with stable row ids is not supported yet (updated rows must keep their ids): merge with pylance",
            ));
        }
        if spec.on.is_empty() {
            return Err(invalid("merge_insert needs at least one key column (--on)"));
        }
        let schema = self.schema();
        // source columns: by name, the dataset's types
        let mut from_source: Vec<Option<usize>> = Vec::with_capacity(schema.fields().len());
        for f in schema.fields() {
            match source_schema.index_of(f.name()) {
                Ok(i) => {
                    let t = source_schema.field(i).data_type();
                    if t != f.data_type() {
                        return Err(invalid(format!(
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
                return Err(invalid(format!(
                    "source column {:?} is not in the dataset",
                    f.name()
                )));
            }
        }
        let mut key_src = Vec::new();
        let mut key_types = Vec::new();
        for k in &spec.on {
            let t = schema
                .index_of(k)
                .map_err(|_| invalid(format!("key column {k:?} is not in the dataset")))?;
            let s = source_schema
                .index_of(k)
                .map_err(|_| invalid(format!("key column {k:?} is missing from the source")))?;
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
                return Err(invalid(format!(
                    "inserted rows need column {:?} (not nullable), which the source lacks",
                    f.0.name()
                )));
            }
        }
        let int_keys = key_types.len() == 1 && is_int(&key_types[0]);
        let conv = if int_keys {
            None
        } else {
            Some(RowConverter::new(
                key_types
                    .iter()
                    .map(|t| SortField::new(t.clone()))
                    .collect(),
            )?)
        };
        // the target's live keys
        let on: Vec<&str> = spec.on.iter().map(String::as_str).collect();
        let mut map = if int_keys {
            KeyMap::Int(HashMap::new())
        } else {
            KeyMap::Bytes(HashMap::new())
        };
        for frag in self.fragments() {
            let runs = self.kept_runs(frag)?;
            let b = self.read_runs(frag, Some(&on), runs.runs())?;
            let cols: Vec<ArrayRef> = b.columns().to_vec();
            let keys = keys_of(&cols, conv.as_ref())?;
            let addr = |i: usize| -> Result<u64> {
                let off = runs
                    .locate(i as u64)
                    .ok_or_else(|| TableError::corrupt("a live row outside its fragment"))?;
                Ok((frag.id << 32) | off)
            };
            match (&mut map, keys) {
                (KeyMap::Int(m), Keys::Int(k)) => {
                    for (i, k) in k.into_iter().enumerate() {
                        if let Some(k) = k {
                            m.entry(k).or_default().push(addr(i)?);
                        }
                    }
                }
                (KeyMap::Bytes(m), Keys::Bytes(k)) => {
                    for (i, k) in k.into_iter().enumerate() {
                        if let Some(k) = k {
                            m.entry(k).or_default().push(addr(i)?);
                        }
                    }
                }
                _ => return Err(TableError::corrupt("merge keys of two kinds")),
            }
        }
        let matched = RefCell::new(RoaringTreemap::new());
        let stats = RefCell::new(MergeStats::default());
        let failed = Cell::new(false);
        let need_target_values = from_source.iter().any(Option::is_none);
        // each source batch → the rows it writes (updated, then inserted)
        let process = |b: RecordBatch| -> Result<Option<RecordBatch>> {
            let kcols: Vec<ArrayRef> = key_src.iter().map(|&i| b.column(i).clone()).collect();
            let keys = keys_of(&kcols, conv.as_ref())?;
            let n = b.num_rows();
            let mut update_rows: Vec<u32> = Vec::new();
            let mut update_targets: Vec<u64> = Vec::new();
            let mut insert_rows: Vec<u32> = Vec::new();
            let mut matched = matched.borrow_mut();
            for i in 0..n {
                let hits: Option<&Vec<u64>> = match (&map, &keys) {
                    (KeyMap::Int(m), Keys::Int(k)) => k[i].and_then(|k| m.get(&k)),
                    (KeyMap::Bytes(m), Keys::Bytes(k)) => k[i].as_ref().and_then(|k| m.get(k)),
                    _ => None,
                };
                match hits {
                    Some(targets) => {
                        for &t in targets {
                            if !matched.insert(t) && spec.update_matched {
                                return Err(invalid(format!(
                                    "Ambiguous merge inserts are prohibited: multiple source rows match the same target row on {}. Please ensure each target row is matched by at most one source row.",
                                    key_text(&spec.on, &kcols, i)
                                )));
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
            drop(matched);
            let rows: Vec<u32> = update_rows.iter().chain(&insert_rows).copied().collect();
            if rows.is_empty() {
                return Ok(None);
            }
            let idx = arrow_array::UInt32Array::from(rows);
            let picked = arrow_select::take::take_record_batch(&b, &idx)?;
            // target values of the matched rows, for columns the source lacks
            let target = if need_target_values && !update_targets.is_empty() {
                Some(self.take_addresses_all(&update_targets)?)
            } else {
                None
            };
            let nu = update_rows.len();
            let mut cols: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
            for (fi, f) in schema.fields().iter().enumerate() {
                let c = match from_source[fi] {
                    Some(si) => picked.column(si).clone(),
                    None => {
                        let nulls = new_null_array(f.data_type(), insert_rows.len());
                        match &target {
                            Some(t) => arrow_select::concat::concat(&[
                                t.column(fi).as_ref(),
                                nulls.as_ref(),
                            ])?,
                            None if nu == 0 => nulls,
                            None => new_null_array(f.data_type(), picked.num_rows()),
                        }
                    }
                };
                cols.push(c);
            }
            let mut s = stats.borrow_mut();
            s.updated += nu as u64;
            s.inserted += insert_rows.len() as u64;
            Ok(Some(RecordBatch::try_new(schema.clone(), cols)?))
        };
        let outputs = source.into_iter().filter_map(|b| {
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
        let params = crate::write::WriteParams {
            storage: self.storage_version(),
            ..Default::default()
        };
        let ids = crate::write::preorder_schema_ids(self);
        let new_fragments =
            crate::write::write_fragments(self.root(), &schema, outputs, &params, Some(ids))?;
        let matched = matched.into_inner();
        let mut stats = stats.into_inner();
        // deletion vectors: rewritten rows, and unmatched target rows when asked
        let by_frag: HashMap<u32, &RoaringBitmap> = matched.bitmaps().collect();
        let mut updated = Vec::new();
        let mut removed = Vec::new();
        for frag in self.fragments() {
            let fid = frag.id;
            let mut del: RoaringBitmap = self.deletions(frag)?;
            let before = del.len();
            if spec.update_matched {
                if let Some(b) = u32::try_from(fid).ok().and_then(|f| by_frag.get(&f)) {
                    del |= *b;
                }
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
                        if pass && !matched.contains((fid << 32) | off) {
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
            if del.len() == frag.physical_rows {
                removed.push(fid);
                continue;
            }
            let mut nf = frag.clone();
            nf.deletion_file = Some(self.write_deletion_file(fid, &del)?);
            updated.push(nf);
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
        let m = commit(
            self.root(),
            Some(self.version()),
            op,
            &self.storage_label(),
            Naming::detect(self.root()),
        )?;
        Ok((Dataset::open_version(self.root(), m.version())?, stats))
    }

    /// Every column of the rows at `addrs` (row addresses), in that order.
    fn take_addresses_all(&self, addrs: &[u64]) -> Result<RecordBatch> {
        let mut parts = Vec::with_capacity(addrs.len());
        for &a in addrs {
            let (fid, off) = (a >> 32, a & 0xFFFF_FFFF);
            let frag = self
                .fragments()
                .iter()
                .find(|f| f.id == fid)
                .ok_or_else(|| TableError::corrupt(format!("no fragment {fid}")))?;
            let row = off..off + 1;
            parts.push(self.read_runs(frag, None, std::slice::from_ref(&row))?);
        }
        let schema = self.schema();
        Ok(arrow_select::concat::concat_batches(&schema, &parts)?)
    }
}
